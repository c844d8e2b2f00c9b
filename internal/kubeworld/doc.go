// Package kubeworld runs the real Kubernetes control plane of the test world:
// kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm and kubectl
// built from k8s.io/kubernetes at one pinned release, kwok (sigs.k8s.io/kwok)
// standing in for the kubelets, and Debian's etcd.
//
// The binaries are built from the nested build modules under buildmod/ (each
// excluded from the main module) once per machine and kept in a cache shared
// by the tests and `make run` (see [CacheRoot]): [Ensure] builds what is
// missing, under a lock, into a temporary directory renamed into place, so
// concurrent builders never see half a cache. The cold build takes about
// 6–8 minutes on 2 cores and prints its progress.
//
// [Start] runs a whole control plane on 127.0.0.1 (free ports, certificates
// and kubeconfigs from the real `kubeadm init phase certs/kubeconfig`), with
// kwok making the nodes it is given Ready and their pods Running, and stops
// every process it started. internal/k8sstandin runs the same binaries inside
// the test hosts (the simulator's VMs), driven by the real kubeadm.
//
// What is real: etcd, the API server (authentication, RBAC, admission, the
// ServiceAccount token issuer), the controllers (Deployments, ReplicaSets,
// garbage collection, node lifecycle, CSR signing and approval, the bootstrap
// signer), the scheduler, kubeadm and kubectl. What is not: the kubelet and
// the container runtime (kwok sets node and pod status instead; no container
// runs), and the pod network (pods get addresses from kwok, nothing routes).
package kubeworld
