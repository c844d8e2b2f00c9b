// Package k8sstandin is a small, test-only stand-in for the parts of
// Kubernetes the mini-VNFM's management drivers touch, for hosts where real
// kubeadm and kubelet cannot run (internal/testhosts). One static binary
// (cmd/k8s-standin) acts as kubeadm, kubectl, kubelet and kube-apiserver
// depending on the name it is called by; Install puts it into a test host as
// /usr/bin/{kubeadm,kubectl,kubelet} with the marker file /etc/k8s-standin,
// which scripts/install_k8s_cluster.sh detects to skip package installation.
//
// Node layout (the same paths as kubeadm): /etc/kubernetes/{admin,kubelet}.conf,
// /etc/kubernetes/pki (a real CA, RSA-2048, so the usual CA-hash recipes
// work), /etc/kubernetes/manifests (static pod manifests shaped like
// kubeadm's), /var/lib/kubelet, /var/lib/etcd. Logs: /var/log/k8s-standin/.
// kubeadm init/join write the manifests and restart the kubelet (through
// systemctl when that works — the testhosts shim or a real systemd — else
// directly); the kubelet starts the static pods as daemons in their own
// session (pid files in /run/k8s-standin/pods), restarts them when they die,
// and posts the node's heartbeat every 10 s.
//
// State sharing across masters: the API servers keep their objects in a real
// etcd cluster (Debian's etcd-server 3.4), one stacked member per
// control-plane node exactly as kubeadm lays it out (https on the node's
// address :2379/:2380, certificates under /etc/kubernetes/pki/etcd), spoken
// to through etcd's JSON gateway, so no client library is needed. A
// control-plane join adds the member through the existing ones (found from
// the etcd mirror pods' annotations, like kubeadm) after the TLS bootstrap,
// then starts it with --initial-cluster-state=existing. Quorum, leader
// election, member list/add/remove and health are etcd's own: a 3-master
// cluster keeps serving, with all its state, when one master dies, and
// etcdctl (etcd-client) works on the masters for heal flows. All traffic
// stays on the hosts' private network. Without an etcd binary (or with
// K8S_STANDIN_NO_ETCD=1 in kubeadm's environment) the API server keeps its
// state in /var/lib/k8s-standin/store.json: single control-plane node only.
//
// The API server (APIServer, an http.Handler) serves /version, /healthz,
// /api, /apis and, with Kubernetes' JSON shapes and Status errors:
// nodes (incl. /status), namespaces, pods (fieldSelector/labelSelector,
// pods/eviction), secrets (service-account-token Secrets get data.token,
// ca.crt and namespace from the token controller), serviceaccounts
// (+ /token TokenRequest), configmaps, RBAC (cluster)roles and
// (cluster)rolebindings, and certificatesigningrequests (kubelet client
// CSRs are approved and signed at once). Authentication: client
// certificates of the cluster CA, bootstrap tokens, service account JWTs
// (RS256 with sa.key; a Secret-bound token dies with its Secret).
// Authorization: system:masters, built-in bootstrapper and node rules, then
// RBAC with the built-in cluster-admin, admin, edit and view roles.
// Test knobs on pods: AnnotationEvictionBlocked (evictions fail with 429 as
// if a PodDisruptionBudget forbade them) and AnnotationTerminationSeconds.
// Services, Endpoints, Deployments, DaemonSets and CustomResourceDefinitions
// are stored as given (add-on manifests apply). The kuryr-controller
// personality (kuryr.go) stands in for Kuryr-Kubernetes' controller, run as
// a static pod by the install script's --cni kuryr: pods get Neutron ports,
// Services of type LoadBalancer Octavia load balancers, through the
// application credential in its kuryr.conf.
// Not modelled: watch, scheduling, controllers beyond the kube-proxy
// "DaemonSet" pod per node, real containers.
package k8sstandin
