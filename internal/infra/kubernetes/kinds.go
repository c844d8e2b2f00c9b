package kubernetes

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is one Kubernetes resource kind a CNF's manifests may hold.
type kind struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
	// rank orders creation (ascending) and deletion (descending): what
	// others refer to comes first — namespaces, classes and volumes, RBAC,
	// configuration, services — then the workloads, then what targets them.
	rank int
	// workload kinds make pods and may back a VDU; scalable ones have a
	// scale subresource.
	workload, scalable bool
	// review kinds are questions to the API server: created, answered, never
	// stored, so never waited for or deleted.
	review bool
}

// kinds are the kinds Tacker v1's Kubernetes infra driver creates (its
// Transformer's table) in the API versions it speaks, less the ones a VNF
// has no business making (Node, Binding, APIService, VolumeAttachment: they
// belong to the cluster's operator).
var kinds = []kind{
	{gvk: v("", "v1", "Namespace"), resource: "namespaces", rank: 10},
	{gvk: v("scheduling.k8s.io", "v1", "PriorityClass"), resource: "priorityclasses", rank: 20},
	{gvk: v("storage.k8s.io", "v1", "StorageClass"), resource: "storageclasses", rank: 30},
	{gvk: v("", "v1", "PersistentVolume"), resource: "persistentvolumes", rank: 40},
	{gvk: v("", "v1", "ServiceAccount"), resource: "serviceaccounts", namespaced: true, rank: 50},
	{gvk: v("rbac.authorization.k8s.io", "v1", "ClusterRole"), resource: "clusterroles", rank: 60},
	{gvk: v("rbac.authorization.k8s.io", "v1", "Role"), resource: "roles", namespaced: true, rank: 61},
	{gvk: v("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"), resource: "clusterrolebindings", rank: 62},
	{gvk: v("rbac.authorization.k8s.io", "v1", "RoleBinding"), resource: "rolebindings", namespaced: true, rank: 63},
	{gvk: v("", "v1", "LimitRange"), resource: "limitranges", namespaced: true, rank: 70},
	{gvk: v("", "v1", "ResourceQuota"), resource: "resourcequotas", namespaced: true, rank: 71},
	{gvk: v("networking.k8s.io", "v1", "NetworkPolicy"), resource: "networkpolicies", namespaced: true, rank: 80},
	{gvk: v("", "v1", "ConfigMap"), resource: "configmaps", namespaced: true, rank: 90},
	{gvk: v("", "v1", "Secret"), resource: "secrets", namespaced: true, rank: 91},
	{gvk: v("", "v1", "PersistentVolumeClaim"), resource: "persistentvolumeclaims", namespaced: true, rank: 100},
	{gvk: v("", "v1", "Service"), resource: "services", namespaced: true, rank: 110},
	{gvk: v("", "v1", "PodTemplate"), resource: "podtemplates", namespaced: true, rank: 120},
	{gvk: v("coordination.k8s.io", "v1", "Lease"), resource: "leases", namespaced: true, rank: 121},
	{gvk: v("apps", "v1", "ControllerRevision"), resource: "controllerrevisions", namespaced: true, rank: 122},
	{gvk: v("authorization.k8s.io", "v1", "SubjectAccessReview"), resource: "subjectaccessreviews", rank: 130, review: true},
	{gvk: v("authorization.k8s.io", "v1", "SelfSubjectAccessReview"), resource: "selfsubjectaccessreviews", rank: 130, review: true},
	{gvk: v("authorization.k8s.io", "v1", "SelfSubjectRulesReview"), resource: "selfsubjectrulesreviews", rank: 130, review: true},
	{gvk: v("authorization.k8s.io", "v1", "LocalSubjectAccessReview"), resource: "localsubjectaccessreviews", namespaced: true, rank: 130, review: true},
	{gvk: v("authentication.k8s.io", "v1", "TokenReview"), resource: "tokenreviews", rank: 130, review: true},
	{gvk: v("apps", "v1", "StatefulSet"), resource: "statefulsets", namespaced: true, rank: 200, workload: true, scalable: true},
	{gvk: v("batch", "v1", "Job"), resource: "jobs", namespaced: true, rank: 210},
	{gvk: v("apps", "v1", "Deployment"), resource: "deployments", namespaced: true, rank: 220, workload: true, scalable: true},
	{gvk: v("apps", "v1", "ReplicaSet"), resource: "replicasets", namespaced: true, rank: 230, workload: true, scalable: true},
	{gvk: v("apps", "v1", "DaemonSet"), resource: "daemonsets", namespaced: true, rank: 240, workload: true},
	{gvk: v("", "v1", "Pod"), resource: "pods", namespaced: true, rank: 250, workload: true},
	{gvk: v("autoscaling", "v1", "HorizontalPodAutoscaler"), resource: "horizontalpodautoscalers", namespaced: true, rank: 300},
}

// refusedKinds say why a kind Tacker would create is not accepted.
var refusedKinds = map[string]string{
	"Node":             "nodes belong to the cluster, not to a VNF (they are joined by the cluster's management driver)",
	"Binding":          "a Binding assigns a pod to a node, which the scheduler does; use nodeName or nodeSelector in the pod spec",
	"APIService":       "API services extend the cluster's API and belong to its operator",
	"VolumeAttachment": "volume attachments are made by the attach/detach controller",
}

func v(group, version, k string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: k}
}

var (
	kindByGVK  = map[schema.GroupVersionKind]*kind{}
	kindByName = map[string][]*kind{}
	// mapper maps the kinds to their resources, without discovery: the set
	// is fixed, so a request is validated without asking the cluster.
	mapper = meta.NewDefaultRESTMapper(nil)
)

func init() {
	for i := range kinds {
		k := &kinds[i]
		kindByGVK[k.gvk] = k
		kindByName[k.gvk.Kind] = append(kindByName[k.gvk.Kind], k)
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(k.gvk, k.gvk.GroupVersion().WithResource(k.resource),
			k.gvk.GroupVersion().WithResource(k.gvk.Kind), scope)
	}
}

// kindOf returns the kind of gvk, if accepted.
func kindOf(gvk schema.GroupVersionKind) *kind { return kindByGVK[gvk] }

func (k *kind) gvr() schema.GroupVersionResource {
	m, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
	if err != nil {
		panic("kubernetes: kind table: " + err.Error()) // the table maps every kind
	}
	return m.Resource
}
