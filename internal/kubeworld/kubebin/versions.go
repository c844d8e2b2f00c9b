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

// APIServerFeatureGates are the kube-apiserver feature gates the test world
// runs it with, because its etcd is Debian's 3.4.23: the API server serves
// watch-list requests (a watch with sendInitialEvents, which kwok's and
// the controllers' client-go send by default) only when etcd supports
// progress requests (3.4.31+/3.5.13+). Otherwise it answers each with an
// error, and the clients' informers restart their list and watch with a
// back-off: pods took 2-50 s to become Running or to go instead of 0.1-0.3 s.
// With WatchList off, the clients fall back to LIST + WATCH at once.
const APIServerFeatureGates = "WatchList=false"
