package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
)

var testGVR = map[string]schema.GroupVersionResource{
	"Namespace":               {Version: "v1", Resource: "namespaces"},
	"PriorityClass":           {Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
	"StorageClass":            {Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	"PersistentVolume":        {Version: "v1", Resource: "persistentvolumes"},
	"PersistentVolumeClaim":   {Version: "v1", Resource: "persistentvolumeclaims"},
	"ServiceAccount":          {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding":      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":                    {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"LimitRange":              {Version: "v1", Resource: "limitranges"},
	"ResourceQuota":           {Version: "v1", Resource: "resourcequotas"},
	"NetworkPolicy":           {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"ConfigMap":               {Version: "v1", Resource: "configmaps"},
	"Secret":                  {Version: "v1", Resource: "secrets"},
	"Service":                 {Version: "v1", Resource: "services"},
	"PodTemplate":             {Version: "v1", Resource: "podtemplates"},
	"Lease":                   {Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	"ControllerRevision":      {Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	"StatefulSet":             {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"Job":                     {Group: "batch", Version: "v1", Resource: "jobs"},
	"Deployment":              {Group: "apps", Version: "v1", Resource: "deployments"},
	"ReplicaSet":              {Group: "apps", Version: "v1", Resource: "replicasets"},
	"DaemonSet":               {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"Pod":                     {Version: "v1", Resource: "pods"},
	"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"},
}

var clusterScoped = map[string]bool{"Namespace": true, "PriorityClass": true, "StorageClass": true, "PersistentVolume": true, "ClusterRole": true, "ClusterRoleBinding": true}

func dyn(t *testing.T) dynamic.Interface {
	t.Helper()
	world(t)
	cfg, err := shared.w.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// exists reports whether Kind/name (in ns unless cluster-scoped) exists and
// was made by instance.
func exists(t *testing.T, d dynamic.Interface, ns, kindName, instance string) bool {
	t.Helper()
	kind, name, _ := strings.Cut(kindName, "/")
	var r dynamic.ResourceInterface = d.Resource(testGVR[kind])
	if !clusterScoped[kind] {
		r = d.Resource(testGVR[kind]).Namespace(ns)
	}
	u, err := r.Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", kindName, err)
	}
	if u.GetDeletionTimestamp() != nil {
		return false
	}
	if got := u.GetAnnotations()[kdrv.AnnotationInstance]; instance != "" && got != instance {
		t.Errorf("%s: annotation %s = %q, want %q", kindName, kdrv.AnnotationInstance, got, instance)
	}
	return true
}

// TestTackerKinds instantiates and terminates one CNF per case of Tacker's
// v1 Kubernetes functional tests (test_kubernetes.py), with Tacker's own
// manifests, on a real API server, controllers and scheduler: every object
// is created, ready, owned by the instance, its pods are the VNFCs, and
// terminate removes it all.
func TestTackerKinds(t *testing.T) {
	t.Parallel() // its cases take the slots
	cs, _ := world(t)
	d := dyn(t)
	drv := kdrv.New(kdrv.Options{ReadyTimeout: 4 * time.Minute, PollMax: 500 * time.Millisecond})
	cases := []struct {
		name    string
		files   []string
		objects []string // Kind/name that must exist while instantiated
		vnfcs   map[string]int
		kind    map[string]string // vduId → vimLevelResourceType
		ownNS   bool              // manifests create their own namespace: no namespace param
	}{
		{name: "clusterrole_clusterrolebinding_SA", files: []string{"clusterrole_clusterrolebinding_SA.yaml"},
			objects: []string{"ClusterRole/curry-cluster-role", "ServiceAccount/curry-cluster-sa", "ClusterRoleBinding/curry-cluster-rolebinding"}},
		{name: "config_map", files: []string{"config-map.yaml"}, objects: []string{"ConfigMap/curry-test001"}},
		{name: "controller_revision", files: []string{"controller-revision.yaml"}, objects: []string{"ControllerRevision/curry-test001"}},
		{name: "daemon_set", files: []string{"daemon-set.yaml"}, objects: []string{"DaemonSet/vdu1"},
			vnfcs: map[string]int{"VDU1": 2}, kind: map[string]string{"VDU1": "DaemonSet"}},
		{name: "deployment", files: []string{"deployment.yaml"}, objects: []string{"Deployment/vdu2"},
			vnfcs: map[string]int{"VDU2": 1}, kind: map[string]string{"VDU2": "Deployment"}},
		{name: "horizontal_pod_autoscaler", files: []string{"horizontal-pod-autoscaler.yaml"}, objects: []string{"HorizontalPodAutoscaler/curry-hpa-vdu001"}},
		{name: "job", files: []string{"job.yaml"}, objects: []string{"Job/curryjob"}},
		{name: "limit_range", files: []string{"limit-range.yaml"}, objects: []string{"LimitRange/limits"}},
		{name: "namespace", files: []string{"namespace.yaml"}, objects: []string{"Namespace/curry"}, ownNS: true},
		{name: "pod", files: []string{"pod.yaml"}, objects: []string{"Pod/vdu1"},
			vnfcs: map[string]int{"VDU1": 1}, kind: map[string]string{"VDU1": "Pod"}},
		{name: "pod_template", files: []string{"pod-template.yaml"}, objects: []string{"PodTemplate/curry-test001"}},
		{name: "resource_quota", files: []string{"resource-quota.yaml"}, objects: []string{"ResourceQuota/curry-rq"}},
		{name: "role_rolebinding_SA", files: []string{"role_rolebinding_SA.yaml"},
			objects: []string{"Role/curry-role", "ServiceAccount/curry-sa", "RoleBinding/curry-rolebinding"}},
		// The reviews are answered, never stored; LocalSubjectAccessReview
		// asks about namespace default, in namespace default.
		{name: "subject_access_review", files: []string{"subject-access-review.yaml"}, ownNS: true},
		{name: "token_review", files: []string{"token-review.yaml"}, ownNS: true},
		{name: "multi_yaml_and_resources_no_dep", files: []string{"local-subject-access-review.yaml", "self-subject-access-review_and_self-subject-rule-review.yaml"}, ownNS: true},
		{name: "multiple_yaml_with_single_resource", files: []string{"replicaset_service_secret.yaml"},
			objects: []string{"Service/curry-svc-vdu001-multiple", "Secret/curry-sc-multiple", "ReplicaSet/vdu2"},
			vnfcs:   map[string]int{"VDU2": 1}, kind: map[string]string{"VDU2": "ReplicaSet"}},
		{name: "single_yaml_with_multiple_resources", files: []string{"multiple_yaml_priority-class.yaml", "multiple_yaml_lease.yaml", "multiple_yaml_network-policy.yaml"},
			objects: []string{"PriorityClass/high-priority", "Lease/curry-lease", "NetworkPolicy/all-deny"}},
		{name: "multi_yaml_and_resources_dep_and_sort", files: []string{"storage-class.yaml", "persistent-volume-0.yaml", "persistent-volume-1.yaml", "statefulset.yaml", "storage-class_pv_pvc.yaml"},
			objects: []string{"StorageClass/curry-sc-local", "PersistentVolume/curry-sc-pv", "PersistentVolume/curry-sc-pv-0", "StatefulSet/vdu2",
				"StorageClass/my-storage-class", "PersistentVolume/curry-sc-pv-1", "PersistentVolumeClaim/curry-sc-pvc"},
			vnfcs: map[string]int{"VDU2": 1}, kind: map[string]string{"VDU2": "StatefulSet"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parallel(t) // each case has its own namespace and cluster-scoped names
			ns := fmt.Sprintf("kinds-%d", i)
			p := params(ns, tc.files...)
			if tc.ownNS {
				p = params("", tc.files...)
				ns = "default"
			} else {
				namespace(t, cs, ns)
			}
			c := newCNF(t, drv, testPackage, p)
			c.mustInstantiate()
			for _, o := range tc.objects {
				if !exists(t, d, ns, o, c.in.ID) {
					t.Errorf("%s does not exist after instantiate", o)
				}
			}
			if got := c.in.Metadata["namespace"]; got != ns {
				t.Errorf("instance metadata.namespace = %v, want %s", got, ns)
			}
			total := 0
			for vdu, n := range tc.vnfcs {
				vs := c.vnfcs(vdu)
				total += n
				if len(vs) != n {
					t.Errorf("%s: %d VNFCs, want %d: %+v", vdu, len(vs), n, vs)
				}
				for _, v := range vs {
					if v.ComputeResource.VimLevelResourceType != tc.kind[vdu] || v.ComputeResource.ResourceID == "" || v.Metadata[kdrv.MetaNode] == "" || v.Metadata[kdrv.MetaReady] != true {
						t.Errorf("VNFC %+v: want a ready pod of a %s on a node", v, tc.kind[vdu])
					}
					pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), v.ComputeResource.ResourceID, metav1.GetOptions{})
					if err != nil || string(pod.UID) != v.Metadata[kdrv.MetaPodUID] {
						t.Errorf("VNFC %s: pod %s: %v", v.ID, v.ComputeResource.ResourceID, err)
					}
				}
			}
			if got := len(c.vnfcs("")); got != total {
				t.Errorf("%d VNFCs, want %d", got, total)
			}
			if n := len(c.last.ResourceChanges.AffectedVnfcs); n != total {
				t.Errorf("%d affected VNFCs, want %d ADDED", n, total)
			}
			c.mustTerminate()
			for _, o := range tc.objects {
				if exists(t, d, ns, o, "") {
					t.Errorf("%s still exists after terminate", o)
				}
			}
			if len(c.vnfcs("")) != 0 {
				t.Errorf("VNFCs left after terminate: %+v", c.vnfcs(""))
			}
			if tc.name == "multi_yaml_and_resources_dep_and_sort" {
				if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "www-vdu2-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("the StatefulSet's claim www-vdu2-0 after terminate: %v, want NotFound", err)
				}
			}
		})
	}
}
