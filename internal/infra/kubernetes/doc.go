// Package kubernetes is the Kubernetes infra driver: it deploys CNFs — the
// Kubernetes manifests of a VNF package — on a Kubernetes VIM (such as the
// cluster a kubeadm or kubespray VNF built and registered), as Tacker v1's
// Kubernetes infra driver does, on the driverapi contract.
//
// Requests are Tacker v1's: vimConnectionInfo names a Kubernetes VIM
// (vimType "kubernetes" or ETSINFV.KUBERNETES.V_1), and additionalParams
// give lcm-kubernetes-def-files (manifest paths in the package,
// Files/kubernetes/*.yaml, several documents per file allowed), namespace and
// vdu_mapping. The whole set of manifests is read and checked when the
// request is accepted (kinds, API versions, names, scope, namespaces,
// duplicates, the VDU ↔ workload mapping, sizes, YAML anchors): a request
// that cannot deploy is refused (422) before anything is created.
//
// Objects are created in dependency order (namespaces, classes and volumes,
// RBAC, configuration, services, then workloads, then autoscalers) through
// the dynamic client, with a static REST mapping of the kinds Tacker
// supports; each carries the instance id as an annotation, so a retry or a
// resumed run adopts what it made and nothing it did not make is changed or
// deleted; for the same reason a request whose connection breaks before any
// answer (a cluster VIP that moved) is sent again on a new one. A VDU is backed by the workload (Pod, Deployment, StatefulSet,
// ReplicaSet, DaemonSet) whose metadata.name is the VDU's properties.name;
// its pods, found by their owner chain, are the VNFCs (computeResource
// resourceId = pod name, vimLevelResourceType = the workload's kind, as
// Tacker). The replicas of a scaled VDU's workload follow its scale level
// (initial delta + deltas), overriding the manifest, as Tacker does.
//
// Scale patches replicas and waits for exactly that many ready pods; a
// scale-in's victims (highest StatefulSet ordinals, else the newest pods)
// get the lowest pod-deletion-cost, so the ReplicaSet controller removes
// them. A VNFC heal deletes its pod and records the replacement under the
// same VNFC id (a bare Pod is created again from its manifest); an entire
// heal deletes everything and deploys again. Terminate and rollback delete in
// the reverse creation order and wait (FORCEFUL: grace period 0; GRACEFUL:
// the pods' own grace, pods left after gracefulTerminationTimeout are deleted
// at once). Every wait is bounded and reports per object in the operation's
// progress.
//
// Tests run against a real control plane (internal/kubeworld).
package kubernetes
