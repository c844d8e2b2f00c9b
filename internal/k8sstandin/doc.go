// Package k8sstandin makes the test hosts (internal/testhosts, the
// simulator's VMs) run a real Kubernetes: the real kubeadm, kube-apiserver,
// kube-controller-manager, kube-scheduler and kubectl of the pinned release
// (built and cached by internal/kubeworld/kubebin) with Debian's etcd, and a
// small stand-in only for what needs a container runtime: the kubelet.
//
// One static binary (cmd/k8s-standin), installed by [Install] as
// /usr/local/bin/k8s-standin, is two things depending on the name it is
// called by:
//
//   - kubeadm (/usr/bin/kubeadm): the real kubeadm, run with the preflight
//     checks of the missing container runtime ignored ([PreflightErrorsIgnored]);
//     `kubeadm reset` ends by stopping the static pod processes, the fixed
//     install-step delay of make bench (K8S_STANDIN_STEP_DELAY) applies to
//     init and join. Everything else — certificates, kubeconfigs, static pod
//     manifests, the etcd member add/promote/remove of stacked HA control
//     planes, bootstrap tokens, cluster-info, upload-certs, the addons — is
//     the real kubeadm's work against the real API server.
//   - kubelet (/usr/bin/kubelet, started by kubeadm through systemctl): runs
//     the static pods of /etc/kubernetes/manifests as processes (the real
//     binaries, and Debian's etcd 3.4 with two flags of kubeadm's etcd 3.6
//     manifest renamed), does the TLS bootstrap with a real CSR that the real
//     controller manager approves and signs, registers the Node and the mirror
//     pods, answers /healthz on 127.0.0.1:10248, and runs kwok for its own node
//     (--manage-single-node), which keeps the Node Ready with a lease and makes
//     the pods bound to it Running. No container runs: pods get an address from
//     the node's pod CIDR and nothing routes to it (no CNI).
//
// A third personality, kuryr-controller (kuryr.go), stands in for
// Kuryr-Kubernetes' controller, run as a static pod by the install script's
// --cni kuryr: pods get Neutron ports, Services of type LoadBalancer Octavia
// load balancers, through the application credential in its kuryr.conf.
//
// /usr/bin/kubectl is the real kubectl. Install writes the marker file
// /etc/k8s-standin (the directory of the real binaries; install_k8s_cluster.sh
// skips package installation when it exists) and a kubelet.service unit.
//
// Layout on a node is kubeadm's: /etc/kubernetes/{admin,kubelet}.conf, pki/,
// manifests/, /var/lib/kubelet, /var/lib/etcd. The stand-in's own logs:
// /var/log/k8s-standin/<static pod>.log, kwok.log; the kubelet's is
// /var/log/kubelet.log (systemctl shim).
package k8sstandin
