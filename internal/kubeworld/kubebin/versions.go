package kubebin

// The pinned releases. They must match the build modules
// (internal/kubeworld/buildmod/{kubernetes,kwok}/go.mod);
// TestPinsMatchBuildModules checks it.
const (
	// KubernetesVersion is the k8s.io/kubernetes release the control plane,
	// kubeadm and kubectl are built from (staging modules at v0.<minor>.<patch>).
	KubernetesVersion = "v1.37.2"
	// KwokVersion is the sigs.k8s.io/kwok release.
	KwokVersion = "v0.8.0"
)

// The binaries in a cache directory's bin/.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kubeadm               = "kubeadm"
	Kubectl               = "kubectl"
	Kwok                  = "kwok"
)

// kubernetesCommands are built from the kubernetes build module.
var kubernetesCommands = []string{KubeAPIServer, KubeControllerManager, KubeScheduler, Kubeadm, Kubectl}

// cacheKey names one build: both pins and a format number, bumped when the
// layout or build flags change.
const cacheKey = "kubernetes-" + KubernetesVersion + "_kwok-" + KwokVersion + "_1"
