package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// tackerCNFDir is Tacker's own CNF test package (helloworld3, the v1
// functional tests' test_cnf), unchanged; see its README.
const tackerCNFDir = "../testdata/tacker/test_cnf"

// tackerCNFCases are the instantiations of Tacker's v1 Kubernetes
// functional tests (tacker/tests/functional/sol_kubernetes/vnflcm/
// test_kubernetes.py): each test's lcm-kubernetes-def-files, one VNF
// instance each. The Deployment's instance (deployment.yaml) is
// tackerDeploymentCase, which also scales and heals; limit-range.yaml and
// resource-quota.yaml are tackerQuotaCases: while a LimitRange gives pods in
// namespace default a CPU request, the ResourceQuota refuses every pod
// without a memory request, so they run when no other CNF makes pods (as
// Tacker's tests run one after another).
var tackerCNFCases = []struct {
	name  string
	files []string
}{
	{"clusterrole_clusterrolebinding_SA", []string{"clusterrole_clusterrolebinding_SA.yaml"}},
	{"config_map", []string{"config-map.yaml"}},
	{"controller_revision", []string{"controller-revision.yaml"}},
	{"daemon_set", []string{"daemon-set.yaml"}},
	{"horizontal_pod_autoscaler", []string{"horizontal-pod-autoscaler.yaml"}},
	{"job", []string{"job.yaml"}},
	{"namespace", []string{"namespace.yaml"}},
	{"pod", []string{"pod.yaml"}},
	{"pod_template", []string{"pod-template.yaml"}},
	{"role_rolebinding_SA", []string{"role_rolebinding_SA.yaml"}},
	{"subject_access_review", []string{"subject-access-review.yaml"}},
	{"token_review", []string{"token-review.yaml"}},
	{"multiple_yaml_with_single_resource", []string{"replicaset_service_secret.yaml"}},
	{"single_yaml_with_multiple_resources", []string{"multiple_yaml_priority-class.yaml", "multiple_yaml_lease.yaml", "multiple_yaml_network-policy.yaml"}},
	{"multi_yaml_and_resources_no_dep", []string{"local-subject-access-review.yaml", "self-subject-access-review_and_self-subject-rule-review.yaml"}},
	{"multi_yaml_and_resources_dep_and_sort", []string{"storage-class.yaml", "persistent-volume-0.yaml", "persistent-volume-1.yaml", "statefulset.yaml", "storage-class_pv_pvc.yaml"}},
}

var (
	tackerDeploymentCase = []string{"deployment.yaml"}
	tackerQuotaCases     = map[string][]string{"limit_range": {"limit-range.yaml"}, "resource_quota": {"resource-quota.yaml"}}
)

// tackerCSAR zips Tacker's package directory as a Tacker user does
// (`zip -r`): its TOSCA.meta and hashes as they are.
func tackerCSAR(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(tackerCNFDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tackerCNFDir, p)
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// kubeObj is an object a manifest of the package declares.
type kubeObj struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	// selector is a workload's spec.selector.matchLabels, as "k=v,...".
	selector string
}

func (o kubeObj) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + "/" + o.name
	}
	return o.gvk.Kind + "/" + o.namespace + "/" + o.name
}

// cluster is a Kubernetes cluster as a CNF's user sees it: through the
// kubeconfig its VIM's owner fetches from the VNFM.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// clusterOf fetches the VIM's kubeconfig (GET /v1.0/vims/{id}/kubeconfig)
// and connects with it (into the hosts' network namespace).
func (e *k8sEnv) clusterOf(vimID string) *cluster {
	e.t.Helper()
	r := harness.Send(e.t, "GET", e.vnfm.Base+"/v1.0/vims/"+vimID+"/kubeconfig", nil)
	if r.Status != http.StatusOK {
		e.t.Fatalf("GET the VIM's kubeconfig: %d %s", r.Status, r.Body)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(r.Body)
	if err != nil {
		e.t.Fatalf("the VIM's kubeconfig: %v\n%s", err, r.Body)
	}
	cfg.Dial, cfg.Timeout = e.hn.Dial, 20*time.Second
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// objects reads the objects the package's manifests declare (reviews, which
// are answered and never stored, are left out), in namespace default unless
// they name theirs.
func (c *cluster) objects(t *testing.T, files []string) []kubeObj {
	t.Helper()
	var out []kubeObj
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(tackerCNFDir, "Files", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 || strings.HasSuffix(u.GetKind(), "Review") {
				continue
			}
			o := kubeObj{gvk: u.GroupVersionKind(), name: u.GetName(), namespace: u.GetNamespace()}
			if sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels"); len(sel) > 0 {
				var kv []string
				for k, v := range sel {
					kv = append(kv, k+"="+v)
				}
				slices.Sort(kv)
				o.selector = strings.Join(kv, ",")
			}
			m := c.mapping(t, o)
			if m.Scope.Name() == meta.RESTScopeNameNamespace && o.namespace == "" {
				o.namespace = "default"
			}
			out = append(out, o)
		}
	}
	return out
}

func (c *cluster) mapping(t *testing.T, o kubeObj) *meta.RESTMapping {
	t.Helper()
	m, err := c.mapper.RESTMapping(o.gvk.GroupKind(), o.gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", o, err)
	}
	return m
}

// get reads an object; nil when it does not exist or is being deleted.
func (c *cluster) get(t *testing.T, o kubeObj) *unstructured.Unstructured {
	t.Helper()
	var r dynamic.ResourceInterface = c.dyn.Resource(c.mapping(t, o).Resource)
	if o.namespace != "" {
		r = c.dyn.Resource(c.mapping(t, o).Resource).Namespace(o.namespace)
	}
	u, err := r.Get(context.Background(), o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading %s: %v", o, err)
	}
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	return u
}

func (c *cluster) pod(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	return c.get(t, kubeObj{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, namespace: "default", name: name})
}

// cnfVnfc is a VNFC of a CNF: a pod.
type cnfVnfc struct{ ID, VduID, Pod, Kind string }

func (e *k8sEnv) cnfVnfcs(inst string) []cnfVnfc {
	e.t.Helper()
	info, _ := e.get("/vnflcm/v1/vnf_instances/" + inst)["instantiatedVnfInfo"].(map[string]any)
	list, _ := info["vnfcResourceInfo"].([]any)
	var out []cnfVnfc
	for _, x := range list {
		v := x.(map[string]any)
		cr, _ := v["computeResource"].(map[string]any)
		c := cnfVnfc{}
		c.ID, _ = v["id"].(string)
		c.VduID, _ = v["vduId"].(string)
		c.Pod, _ = cr["resourceId"].(string)
		c.Kind, _ = cr["vimLevelResourceType"].(string)
		out = append(out, c)
	}
	return out
}

// with is the environment seen from another (sub)test.
func (e *k8sEnv) with(t *testing.T) *k8sEnv {
	o := *e.osEnv
	o.t = t
	return &k8sEnv{osEnv: &o, hn: e.hn, bin: e.bin}
}

// cnf creates a VNF instance of Tacker's package and instantiates it on the
// cluster's VIM with these manifests (flavour simple), as Tacker's
// functional tests do.
func (e *k8sEnv) cnf(vnfdID, vimID string, files []string) string {
	return e.cnfWith(vnfdID, vimID, "simple", files, nil)
}

// cnfWith is cnf with another flavour and more additionalParams.
func (e *k8sEnv) cnfWith(vnfdID, vimID, flavour string, files []string, more map[string]any) string {
	e.t.Helper()
	_, doc := e.post("/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": vnfdID, "vnfInstanceName": "cnf-" + e.t.Name()}, http.StatusCreated)
	inst := doc["id"].(string)
	var defs []any
	for _, f := range files {
		defs = append(defs, "Files/kubernetes/"+f)
	}
	params := map[string]any{"lcm-kubernetes-def-files": defs}
	maps.Copy(params, more)
	e.lcmLong(inst, "instantiate", map[string]any{"flavourId": flavour,
		"vimConnectionInfo": []any{map[string]any{"id": uuid.NewString(), "vimId": vimID, "vimType": "kubernetes"}},
		"additionalParams":  params}, "COMPLETED")
	return inst
}

// checkWorkloads checks that the instance's VNFCs are the running pods of
// its workloads, as many as the workloads want.
func (e *k8sEnv) checkWorkloads(c *cluster, inst string, objs []kubeObj) []cnfVnfc {
	e.t.Helper()
	vs := e.cnfVnfcs(inst)
	want := 0
	kinds := map[string]bool{}
	for _, o := range objs {
		u := c.get(e.t, o)
		if u == nil {
			continue // checked by the caller
		}
		switch o.gvk.Kind {
		case "Pod":
			want++
		case "Deployment", "ReplicaSet", "StatefulSet":
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			want += int(n)
		case "DaemonSet":
			n, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredNumberScheduled")
			if n == 0 {
				e.t.Errorf("%s is scheduled on no node", o)
			}
			want += int(n)
		default:
			continue
		}
		kinds[o.gvk.Kind] = true
	}
	if len(vs) != want {
		e.t.Errorf("%d VNFCs %+v, want %d (the pods of the workloads)", len(vs), vs, want)
	}
	for _, v := range vs {
		p := c.pod(e.t, v.Pod)
		if p == nil || !kinds[v.Kind] {
			e.t.Errorf("VNFC %+v: no pod %s on the cluster (or not one of a %v)", v, v.Pod, slices.Sorted(maps.Keys(kinds)))
			continue
		}
		if ph, _, _ := unstructured.NestedString(p.Object, "status", "phase"); ph != "Running" {
			e.t.Errorf("VNFC %s: pod %s is %s, want Running", v.ID, v.Pod, ph)
		}
	}
	return vs
}

// cnfKind instantiates one instance with the manifests, checks its objects
// and pods on the cluster, terminates it and checks they are gone.
func (e *k8sEnv) cnfKind(c *cluster, vnfdID, vimID string, files []string) {
	e.t.Helper()
	objs := c.objects(e.t, files)
	inst := e.cnf(vnfdID, vimID, files)
	for _, o := range objs {
		u := c.get(e.t, o)
		switch {
		case u == nil:
			e.t.Errorf("%s does not exist after instantiate", o)
		case u.GetAnnotations()[kdrv.AnnotationInstance] != inst:
			e.t.Errorf("%s is annotated %s=%q, want the instance %s", o, kdrv.AnnotationInstance, u.GetAnnotations()[kdrv.AnnotationInstance], inst)
		case o.gvk.Kind == "Job":
			done, _, _ := unstructured.NestedInt64(u.Object, "status", "succeeded")
			want, _, _ := unstructured.NestedInt64(u.Object, "spec", "completions")
			if done < want {
				e.t.Errorf("%s: %d of %d completions when the instantiation completed", o, done, want)
			}
		}
	}
	vs := e.checkWorkloads(c, inst, objs)
	e.lcmLong(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	e.checkGone(c, objs, vs)
	e.t.Logf("%v: %d objects, %d pods: instantiated and terminated", files, len(objs), len(vs))
}

func (e *k8sEnv) checkGone(c *cluster, objs []kubeObj, vs []cnfVnfc) {
	e.t.Helper()
	for _, o := range objs {
		if c.get(e.t, o) != nil {
			e.t.Errorf("%s still exists after terminate", o)
		}
	}
	for _, v := range vs {
		if c.pod(e.t, v.Pod) != nil {
			e.t.Errorf("pod %s (VNFC %s) still exists after terminate", v.Pod, v.ID)
		}
	}
}

// TestTackerCNFsOnBuiltCluster is issue 16's "Done when", over HTTP only: a
// single-master kubeadm cluster (VNF-A) is built on the embedded cloud and
// registers its Kubernetes VIM; Tacker's own CNF test package, unchanged,
// is onboarded; one VNF instance per kind of Tacker's v1 CNF functional
// tests is instantiated on that VIM and terminated, its objects seen on the
// cluster (through the VIM's kubeconfig) and gone after; the Deployment CNF
// (VNF-B) scales out by one and heals a pod. A scale-in of VNF-A that leaves
// workers is accepted while VNF-B runs (the victim is drained: none of
// VNF-B's pods stays on it; VNF-B's next scale-in records its pods as they
// are); terminating VNF-A is 409 naming VNF-B, before any operation;
// Tacker's vdu_mapping test runs on the same VIM; terminating VNF-B, then
// VNF-A, completes and the VIM is gone.
func TestTackerCNFsOnBuiltCluster(t *testing.T) {
	began := time.Now()
	// Refresh passes every 2 s: VNF-B's records follow the drain below
	// without an operation (default 300 s, as Tacker's sync_db).
	e := newK8sEnv(t, "VNFM_CNF_SYNC_INTERVAL=2s")
	vnfA := e.createInstance()
	e.lcmLong(vnfA, "instantiate", e.instantiateBody(), "COMPLETED")
	vc := e.k8sVim(vnfA)
	if vc == nil {
		t.Fatalf("the cluster registered no Kubernetes VIM: %v", e.get("/vnflcm/v1/vnf_instances/" + vnfA)["vimConnectionInfo"])
	}
	vimID, _ := vc["vimId"].(string)
	c := e.clusterOf(vimID)
	t.Logf("VNF-A built with VIM %s in %v", vimID, time.Since(began).Round(time.Second))
	vnfd := e.onboardCSAR(tackerCSAR(t))

	// Every kind in its own instance, a few at a time, beside VNF-B.
	slots := make(chan struct{}, 4)
	var vnfB string
	t.Run("kinds", func(t *testing.T) {
		for _, tc := range tackerCNFCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				e.with(t).cnfKind(c, vnfd, vimID, tc.files)
			})
		}
		t.Run("deployment", func(t *testing.T) {
			t.Parallel()
			vnfB = e.with(t).deploymentCNF(c, vnfd, vimID)
		})
	})
	t.Run("quota", func(t *testing.T) {
		for name, files := range tackerQuotaCases {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e.with(t).cnfKind(c, vnfd, vimID, files)
			})
		}
	})
	if vnfB == "" {
		t.Fatal("VNF-B (the Deployment CNF) did not come up")
	}
	deployment := c.objects(t, tackerDeploymentCase)

	// A scale-in of VNF-A that leaves workers is accepted although VNF-B
	// uses its VIM: the victim is drained, VNF-B's pods run elsewhere.
	e.lcmLong(vnfA, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance"}, "COMPLETED")
	_, before := e.vnfcs(vnfA)
	vnfcsBefore, opsBeforeDrain := e.cnfVnfcs(vnfB), e.opsOf(vnfB)
	podsBefore := map[string]string{}
	for _, p := range c.podsOf(t, deployment) {
		podsBefore[p.GetName()], _, _ = unstructured.NestedString(p.Object, "spec", "nodeName")
	}
	op := e.lcmLong(vnfA, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance"}, "COMPLETED")
	var removed []string
	for id, ch := range affected(op) {
		if ch == "REMOVED" {
			removed = append(removed, id)
		}
	}
	if len(removed) != 1 {
		t.Fatalf("VNF-A's scale-in removed %v, want one worker", removed)
	}
	var victim string
	for _, v := range before {
		if v.ID == removed[0] {
			victim = nodeNameOf(v)
		}
	}
	podsAfter := map[string]string{}
	for _, p := range c.podsOf(t, deployment) {
		n, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
		podsAfter[p.GetName()] = n
		if n == victim || n == "" {
			t.Errorf("VNF-B's pod %s is on node %q after VNF-A's scale-in removed node %s", p.GetName(), n, victim)
		}
	}
	t.Logf("VNF-A's scale-in removed node %s; VNF-B's pods (pod: node) before %v, after %v; VNF-B's VNFCs %+v",
		victim, podsBefore, podsAfter, e.cnfVnfcs(vnfB))
	// The drained pod's replacement becomes ready on its own time (a drain
	// waits for the eviction, not for the replacement).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		u := c.get(t, deployment[0])
		if u == nil {
			t.Fatal("VNF-B's Deployment is gone after VNF-A's scale-in")
		}
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			var why []string
			for _, p := range c.podsOf(t, deployment) {
				st, _, _ := unstructured.NestedMap(p.Object, "status")
				node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
				nst := c.get(t, kubeObj{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, name: node})
				var conds any
				if nst != nil {
					conds, _, _ = unstructured.NestedSlice(nst.Object, "status", "conditions")
				}
				why = append(why, fmt.Sprintf("pod %s on %s: %v; node conditions %v", p.GetName(), node, st, conds))
			}
			t.Fatalf("VNF-B's Deployment has %d ready pods a minute after VNF-A's scale-in, want 2:\n%s", n, strings.Join(why, "\n"))
		}
	}

	// Without an operation, the refresh pass records VNF-B's pods as they
	// are after the drain: the same VNFCs, on the live pods.
	var live, recorded, ids, idsBefore []string
	for _, v := range vnfcsBefore {
		idsBefore = append(idsBefore, v.ID)
	}
	slices.Sort(idsBefore)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		live, recorded, ids = nil, nil, nil
		for _, p := range c.podsOf(t, deployment) {
			live = append(live, p.GetName())
		}
		for _, v := range e.cnfVnfcs(vnfB) {
			recorded, ids = append(recorded, v.Pod), append(ids, v.ID)
		}
		slices.Sort(live)
		slices.Sort(recorded)
		slices.Sort(ids)
		if slices.Equal(live, recorded) && slices.Equal(ids, idsBefore) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("VNF-B's VNFCs %v on pods %v 30 s after the drain; want VNFCs %v on the live pods %v (VNFM_CNF_SYNC_INTERVAL=2s)",
				ids, recorded, idsBefore, live)
		}
	}
	drained := false
	for _, v := range vnfcsBefore {
		drained = drained || podsBefore[v.Pod] == victim
	}
	t.Logf("VNF-B had a pod on the drained node: %v; its VNFCs after the refresh: %v on %v", drained, ids, recorded)
	if opsB := e.opsOf(vnfB); opsB != opsBeforeDrain {
		t.Errorf("VNF-B's op occurrences changed across the refresh: %s, before %s; a refresh makes none", opsB, opsBeforeDrain)
	}

	// VNF-B's next operation records its pods as they are after the drain
	// (a scale-in by one: one VNFC, on a live pod).
	e.lcmLong(vnfB, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "vdu2_aspect"}, "COMPLETED")
	if vs := e.checkWorkloads(c, vnfB, deployment); len(vs) != 1 || len(c.podsOf(t, deployment)) != 1 {
		t.Errorf("VNF-B after its scale-in: VNFCs %+v, pods on the cluster %d, want one", vs, len(c.podsOf(t, deployment)))
	}

	// VNF-A cannot go while VNF-B uses its VIM: 409 naming VNF-B (and only
	// VNF-B: the CNFs terminated above do not count), VNF-A stays as it
	// was, without a new op occurrence.
	opsBefore := e.opsOf(vnfA)
	code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+vnfA+"/terminate", "application/json", []byte(`{"terminationType": "FORCEFUL"}`))
	raw, _ := doc["_raw"].(string)
	if code != http.StatusConflict || !strings.Contains(raw, "is in use by VNF instance "+vnfB+":") {
		t.Errorf("terminate VNF-A while VNF-B (%s) runs on it: %d %s, want 409 naming VNF-B alone", vnfB, code, raw)
	} else {
		t.Logf("terminate VNF-A first: %d %s", code, raw)
	}
	if st := e.get("/vnflcm/v1/vnf_instances/" + vnfA)["instantiationState"]; st != "INSTANTIATED" {
		t.Errorf("VNF-A is %v after the refused terminate, want INSTANTIATED", st)
	}
	if after := e.opsOf(vnfA); after != opsBefore {
		t.Errorf("the refused terminate changed VNF-A's op occurrences:\n%s\nwas\n%s", after, opsBefore)
	}

	// Tacker's test_cnf_with_vdu_mapping: two instances of flavour vdumap,
	// each Deployment backing VDU1 through vdu_mapping (their pods share
	// labels with VNF-B's, so they come when VNF-B is done with them).
	t.Run("vdu_mapping", func(t *testing.T) {
		for _, name := range []string{"vdumap1", "vdumap2"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e.with(t).vduMapCNF(c, vnfd, vimID, name)
			})
		}
	})

	// VNF-B, then VNF-A: both complete, and the VIM is gone.
	vs := e.cnfVnfcs(vnfB)
	e.lcmLong(vnfB, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	e.checkGone(c, deployment, vs)
	if len(c.podsOf(t, deployment)) != 0 {
		t.Errorf("VNF-B's pods are left after its terminate")
	}
	e.lcmLong(vnfA, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	if code, _, _ := e.do("GET", "/v1.0/vims/"+vimID, "", nil); code != http.StatusNotFound {
		t.Errorf("GET the cluster's VIM after VNF-A's terminate: %d, want 404", code)
	}
	t.Logf("wall time: %v", time.Since(began).Round(time.Second))
}

// deploymentCNF is VNF-B, Tacker's Deployment CNF: instantiated, scaled out
// by one (two pods), one pod healed (the VNFC on a new pod, still two).
func (e *k8sEnv) deploymentCNF(c *cluster, vnfdID, vimID string) string {
	t := e.t
	objs := c.objects(t, tackerDeploymentCase)
	inst := e.cnf(vnfdID, vimID, tackerDeploymentCase)
	vs := e.checkWorkloads(c, inst, objs)
	if len(vs) != 1 || vs[0].Kind != "Deployment" || vs[0].VduID != "VDU2" {
		t.Fatalf("VNF-B's VNFCs %+v, want one pod of Deployment vdu2 (VDU2)", vs)
	}

	e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "vdu2_aspect", "numberOfSteps": 1}, "COMPLETED")
	vs = e.checkWorkloads(c, inst, objs)
	if len(vs) != 2 || len(c.podsOf(t, objs)) != 2 {
		t.Fatalf("after scaling out by one: VNFCs %+v, pods on the cluster %d, want two", vs, len(c.podsOf(t, objs)))
	}

	victim := vs[0]
	e.lcmLong(inst, "heal", map[string]any{"vnfcInstanceId": []string{victim.ID}, "cause": "e2e"}, "COMPLETED")
	after := e.checkWorkloads(c, inst, objs)
	i := slices.IndexFunc(after, func(v cnfVnfc) bool { return v.ID == victim.ID })
	switch {
	case len(after) != 2 || len(c.podsOf(t, objs)) != 2:
		t.Errorf("after the heal: VNFCs %+v, pods on the cluster %d, want two", after, len(c.podsOf(t, objs)))
	case i < 0 || after[i].Pod == victim.Pod:
		t.Errorf("after the heal of VNFC %s (pod %s): VNFCs %+v, want the VNFC on a new pod", victim.ID, victim.Pod, after)
	}
	if c.pod(t, victim.Pod) != nil {
		t.Errorf("the healed pod %s still exists", victim.Pod)
	}
	return inst
}

// podsOf lists the live pods the Deployment of objs selects.
func (c *cluster) podsOf(t *testing.T, objs []kubeObj) []unstructured.Unstructured {
	t.Helper()
	i := slices.IndexFunc(objs, func(o kubeObj) bool { return o.gvk.Kind == "Deployment" })
	if i < 0 || objs[i].selector == "" {
		t.Fatalf("no Deployment with a selector in %v", objs)
	}
	l, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(objs[i].namespace).
		List(context.Background(), metav1.ListOptions{LabelSelector: objs[i].selector})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return slices.DeleteFunc(l.Items, func(u unstructured.Unstructured) bool { return u.GetDeletionTimestamp() != nil })
}

// vduMapCNF is one instance of Tacker's test_cnf_with_vdu_mapping: flavour
// vdumap, Deployment <name> mapped to VDU1; it scales out and in, heals a
// VNFC (same VNFC, new pod), scales out and heals entirely (new VNFCs, the
// scale level kept), then terminates.
func (e *k8sEnv) vduMapCNF(c *cluster, vnfdID, vimID, name string) {
	t := e.t
	files := []string{"deployment_" + name + ".yaml"}
	objs := c.objects(t, files)
	inst := e.cnfWith(vnfdID, vimID, "vdumap", files, map[string]any{"vdu_mapping": map[string]any{"VDU1": map[string]any{"kind": "Deployment", "name": name}}})
	vs := e.checkWorkloads(c, inst, objs)
	if len(vs) != 1 || vs[0].VduID != "VDU1" || !strings.HasPrefix(vs[0].Pod, name+"-") {
		t.Fatalf("VNFCs %+v, want one pod of Deployment %s (VDU1)", vs, name)
	}
	scale := func(typ string, want int) []cnfVnfc {
		e.lcmLong(inst, "scale", map[string]any{"type": typ, "aspectId": "vdu1_aspect", "numberOfSteps": 1}, "COMPLETED")
		vs := e.checkWorkloads(c, inst, objs)
		if len(vs) != want {
			t.Fatalf("after %s: VNFCs %+v, want %d", typ, vs, want)
		}
		return vs
	}
	scale("SCALE_OUT", 2)
	vs = scale("SCALE_IN", 1)
	e.lcmLong(inst, "heal", map[string]any{"vnfcInstanceId": []string{vs[0].ID}}, "COMPLETED")
	if after := e.checkWorkloads(c, inst, objs); len(after) != 1 || after[0].ID != vs[0].ID || after[0].Pod == vs[0].Pod {
		t.Errorf("after the heal of VNFC %s (pod %s): %+v, want the same VNFC on a new pod", vs[0].ID, vs[0].Pod, after)
	}
	vs = scale("SCALE_OUT", 2)
	e.lcmLong(inst, "heal", map[string]any{}, "COMPLETED")
	after := e.checkWorkloads(c, inst, objs)
	for _, v := range after {
		if slices.ContainsFunc(vs, func(o cnfVnfc) bool { return o.ID == v.ID || o.Pod == v.Pod }) {
			t.Errorf("after the entire heal VNFC %+v is an old one (before: %+v)", v, vs)
		}
	}
	if len(after) != 2 {
		t.Errorf("after the entire heal: VNFCs %+v, want two (the scale level kept)", after)
	}
	e.lcmLong(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	e.checkGone(c, objs, after)
}
