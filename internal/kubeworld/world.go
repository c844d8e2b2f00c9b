package kubeworld

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KwokNodeAnnotation marks the nodes kwok manages in a loopback world.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// Options configure [Start].
type Options struct {
	// Nodes is how many kwok nodes (kwok-node-1, ...) exist when Start
	// returns, Ready. More can be added with [World.AddNode].
	Nodes int
	// Dir holds the certificates, kubeconfigs, etcd data and logs. Default: a
	// new temporary directory, removed by Stop.
	Dir string
	// Binaries to run. Default: [kubebin.Ensure] (builds on first use).
	Binaries *kubebin.Binaries
	// StartTimeout bounds the wait for the control plane. Default 3 min
	// (a busy 2-core machine needs ~10-30 s).
	StartTimeout time.Duration
	// Logf receives progress lines. Default: none.
	Logf func(format string, args ...any)
	// OIDC, when set, makes the API server accept the ID tokens of an
	// OpenID provider (its --oidc-* flags): the user is OIDCUserPrefix
	// followed by the token's sub, with no rights until RBAC grants some.
	OIDC *OIDC
}

// OIDC is an OpenID provider the API server trusts.
type OIDC struct {
	IssuerURL string // https://…, the tokens' iss; the API server reads its discovery
	ClientID  string // the tokens' aud
	CAPEM     []byte // verifies the provider's TLS
}

// OIDCUserPrefix prefixes the user names of OIDC tokens.
const OIDCUserPrefix = "oidc:"

// World is a running control plane on 127.0.0.1.
type World struct {
	// Dir is the state directory: pki/, *.conf, etcd/, logs/.
	Dir string
	// Server is the API server URL (https://127.0.0.1:<port>).
	Server string
	// Kubeconfig is the path of the cluster-admin kubeconfig (admin.conf).
	Kubeconfig string
	// Binaries are the binaries it runs.
	Binaries kubebin.Binaries

	ownDir bool
	logf   func(string, ...any)
	ports  map[string]int
	oidc   *OIDC

	mu      sync.Mutex
	procs   []*process
	stopped bool
}

type process struct {
	name string
	argv []string
	log  string
	// restarts is how many more times the process is started again after it
	// exits on its own (the kubelet restarts a static pod; kcm and the
	// scheduler exit when the API server is slow to answer at their start).
	restarts int
	cmd      *exec.Cmd     // the current run; guarded by World.mu
	done     chan struct{} // closed when it has exited for good
	err      error         // why, once done is closed
}

// restartable are the processes started again when they exit on their own.
var restartable = map[string]bool{kubebin.KubeControllerManager: true, kubebin.KubeScheduler: true, kubebin.Kwok: true}

// maxRestarts bounds the restarts of each restartable process.
const maxRestarts = 3

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok on 127.0.0.1 and returns when the API server is ready, the
// controllers and scheduler are healthy, the default ServiceAccount exists and
// the requested nodes are Ready. On error everything started is stopped.
func Start(ctx context.Context, o Options) (w *World, err error) {
	t0 := time.Now()
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var bins kubebin.Binaries
	if o.Binaries != nil {
		bins = *o.Binaries
	} else if bins, err = kubebin.Ensure(ctx, kubebin.BuildOptions{}); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return nil, errors.New("kubeworld: etcd is not installed (Debian: apt-get install etcd-server; scripts/ensure-deps.sh installs it)")
	}
	w = &World{Dir: o.Dir, Binaries: bins, logf: o.Logf, ports: map[string]int{}, oidc: o.OIDC}
	if w.Dir == "" {
		if w.Dir, err = os.MkdirTemp("", "kubeworld-"); err != nil {
			return nil, err
		}
		w.ownDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, w.logTails())
			_ = w.Stop()
		}
	}()
	for _, p := range []string{"api", "etcd", "etcdpeer", "kcm", "sched"} {
		if w.ports[p], err = freePort(); err != nil {
			return w, err
		}
	}
	w.Server = "https://127.0.0.1:" + strconv.Itoa(w.ports["api"])
	w.Kubeconfig = filepath.Join(w.Dir, "admin.conf")
	if err := w.kubeadmPhases(ctx); err != nil {
		return w, err
	}
	o.Logf("kubeworld: certificates and kubeconfigs from kubeadm in %s", time.Since(t0).Round(time.Millisecond))
	if err := w.startProcesses(); err != nil {
		return w, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	cs, err := w.Clientset()
	if err != nil {
		return w, err
	}
	if err := w.waitReady(ctx, cs); err != nil {
		return w, err
	}
	o.Logf("kubeworld: API server ready in %s", time.Since(t0).Round(time.Millisecond))
	for i := 1; i <= o.Nodes; i++ {
		if err := w.AddNode(ctx, fmt.Sprintf("kwok-node-%d", i), nil); err != nil {
			return w, err
		}
	}
	for i := 1; i <= o.Nodes; i++ {
		if err := WaitNodeReady(ctx, cs, fmt.Sprintf("kwok-node-%d", i)); err != nil {
			return w, err
		}
	}
	o.Logf("kubeworld: control plane with %d kwok node(s) ready in %s (%s)", o.Nodes, time.Since(t0).Round(time.Millisecond), w.Server)
	return w, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// kubeadmConfig is what the real kubeadm makes the PKI and kubeconfigs from.
func (w *World) kubeadmConfig() string {
	api := strconv.Itoa(w.ports["api"])
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ` + placeholderAdvertise + `
  bindPort: ` + api + `
nodeRegistration:
  name: kubeworld
  criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: kubeworld
kubernetesVersion: ` + kubebin.KubernetesVersion + `
certificatesDir: ` + filepath.Join(w.Dir, "pki") + `
controlPlaneEndpoint: 127.0.0.1:` + api + `
apiServer:
  certSANs: [127.0.0.1, localhost]
networking:
  serviceSubnet: ` + ServiceSubnet + `
  podSubnet: ` + PodSubnet + `
  dnsDomain: cluster.local
etcd:
  local:
    dataDir: ` + filepath.Join(w.Dir, "etcd") + `
`
}

// placeholderAdvertise stands for the node address kubeadm insists on (it
// refuses a loopback one): it only lands in certificate SANs and in
// kubeconfigs, which are rewritten to 127.0.0.1 before anything runs, so
// nothing ever connects to it (TEST-NET-2, RFC 5737).
const placeholderAdvertise = "198.51.100.1"

// The loopback world's networks (nothing routes them: no pod network).
const (
	ServiceSubnet = "10.96.0.0/12"
	PodSubnet     = "10.244.0.0/16"
)

func (w *World) kubeadmPhases(ctx context.Context) error {
	cfg := filepath.Join(w.Dir, "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte(w.kubeadmConfig()), 0o600); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "phase", "certs", "all", "--config", cfg},
		{"init", "phase", "kubeconfig", "all", "--config", cfg, "--kubeconfig-dir", w.Dir},
	} {
		cmd := exec.CommandContext(ctx, w.Binaries.Path(kubebin.Kubeadm), args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("kubeworld: kubeadm %s: %v: %s", strings.Join(args[:4], " "), err, tail(out))
		}
	}
	confs, _ := filepath.Glob(filepath.Join(w.Dir, "*.conf"))
	for _, f := range confs {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		b = bytes.ReplaceAll(b, []byte("https://"+placeholderAdvertise+":"), []byte("https://127.0.0.1:"))
		if bytes.Contains(b, []byte(placeholderAdvertise)) {
			return fmt.Errorf("kubeworld: %s still names %s", f, placeholderAdvertise)
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startProcesses starts etcd and kube-apiserver; the controllers follow once
// the API server is ready (startControllers).
func (w *World) startProcesses() error {
	pki := func(f string) string { return filepath.Join(w.Dir, "pki", f) }
	conf := func(f string) string { return filepath.Join(w.Dir, f) }
	p := func(n string) string { return strconv.Itoa(w.ports[n]) }
	etcdURL := "https://127.0.0.1:" + p("etcd")
	peerURL := "https://127.0.0.1:" + p("etcdpeer")
	if err := os.MkdirAll(filepath.Join(w.Dir, "etcd"), 0o700); err != nil {
		return err
	}
	steps := []struct {
		name string
		argv []string
	}{
		{"etcd", []string{"etcd", "--name=kubeworld", "--data-dir=" + conf("etcd"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubeworld=" + peerURL,
			"--cert-file=" + pki("etcd/server.crt"), "--key-file=" + pki("etcd/server.key"),
			"--trusted-ca-file=" + pki("etcd/ca.crt"), "--client-cert-auth=true",
			"--peer-cert-file=" + pki("etcd/peer.crt"), "--peer-key-file=" + pki("etcd/peer.key"),
			"--peer-trusted-ca-file=" + pki("etcd/ca.crt"), "--peer-client-cert-auth=true",
			"--snapshot-count=10000"}},
		{kubebin.KubeAPIServer, []string{w.Binaries.Path(kubebin.KubeAPIServer),
			"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + p("api"),
			// a loopback advertise address: no endpoints for the kubernetes Service
			"--endpoint-reconciler-type=none",
			"--allow-privileged=true", "--authorization-mode=Node,RBAC",
			"--client-ca-file=" + pki("ca.crt"), "--enable-admission-plugins=NodeRestriction",
			"--enable-bootstrap-token-auth=true",
			"--etcd-servers=" + etcdURL, "--etcd-cafile=" + pki("etcd/ca.crt"),
			"--etcd-certfile=" + pki("apiserver-etcd-client.crt"), "--etcd-keyfile=" + pki("apiserver-etcd-client.key"),
			"--kubelet-client-certificate=" + pki("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + pki("apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
			"--proxy-client-cert-file=" + pki("front-proxy-client.crt"), "--proxy-client-key-file=" + pki("front-proxy-client.key"),
			"--requestheader-allowed-names=front-proxy-client", "--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
			"--requestheader-extra-headers-prefix=X-Remote-Extra-", "--requestheader-group-headers=X-Remote-Group",
			"--requestheader-username-headers=X-Remote-User",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
			"--service-cluster-ip-range=" + ServiceSubnet,
			"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
			"--feature-gates=" + kubebin.APIServerFeatureGates}},
	}
	if o := w.oidc; o != nil {
		ca := pki("oidc-ca.crt")
		if err := os.WriteFile(ca, o.CAPEM, 0o600); err != nil {
			return err
		}
		api := &steps[1] // kube-apiserver
		api.argv = append(api.argv, "--oidc-issuer-url="+o.IssuerURL, "--oidc-client-id="+o.ClientID,
			"--oidc-ca-file="+ca, "--oidc-username-claim=sub", "--oidc-username-prefix="+OIDCUserPrefix)
	}
	for _, s := range steps {
		if err := w.start(s.name, s.argv); err != nil {
			return err
		}
	}
	return nil
}

// startControllers starts kube-controller-manager and kube-scheduler, once:
// started before the API server answers, they give up waiting for it on a
// busy machine and exit.
func (w *World) startControllers() error {
	if w.running(kubebin.KubeControllerManager) {
		return nil
	}
	pki := func(f string) string { return filepath.Join(w.Dir, "pki", f) }
	conf := func(f string) string { return filepath.Join(w.Dir, f) }
	p := func(n string) string { return strconv.Itoa(w.ports[n]) }
	steps := []struct {
		name string
		argv []string
	}{
		{kubebin.KubeControllerManager, []string{w.Binaries.Path(kubebin.KubeControllerManager),
			"--kubeconfig=" + conf("controller-manager.conf"),
			"--authentication-kubeconfig=" + conf("controller-manager.conf"), "--authorization-kubeconfig=" + conf("controller-manager.conf"),
			"--bind-address=127.0.0.1", "--secure-port=" + p("kcm"), "--leader-elect=false",
			"--client-ca-file=" + pki("ca.crt"), "--cluster-name=kubeworld",
			"--cluster-signing-cert-file=" + pki("ca.crt"), "--cluster-signing-key-file=" + pki("ca.key"),
			"--controllers=*,bootstrapsigner,tokencleaner",
			"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"), "--root-ca-file=" + pki("ca.crt"),
			"--service-account-private-key-file=" + pki("sa.key"), "--use-service-account-credentials=true",
			"--allocate-node-cidrs=true", "--cluster-cidr=" + PodSubnet, "--service-cluster-ip-range=" + ServiceSubnet,
			// kwok's node heartbeats lag on a loaded machine; past the grace
			// period the node lifecycle controller marks the node's pods
			// NotReady, and kwok's stages never make them Ready again (a
			// StatefulSet stayed at 1/3 in a test). Simulated nodes do not
			// fail: give them five minutes.
			"--node-monitor-grace-period=5m"}},
		{kubebin.KubeScheduler, []string{w.Binaries.Path(kubebin.KubeScheduler),
			"--kubeconfig=" + conf("scheduler.conf"),
			"--authentication-kubeconfig=" + conf("scheduler.conf"), "--authorization-kubeconfig=" + conf("scheduler.conf"),
			"--bind-address=127.0.0.1", "--secure-port=" + p("sched"), "--leader-elect=false"}},
	}
	for _, s := range steps {
		if err := w.start(s.name, s.argv); err != nil {
			return err
		}
	}
	return nil
}

// startKwok runs kwok for the nodes annotated KwokNodeAnnotation=fake.
func (w *World) startKwok() error {
	return w.start(kubebin.Kwok, []string{w.Binaries.Path(kubebin.Kwok),
		"--kubeconfig=" + w.Kubeconfig, "--config=" + w.Binaries.KwokStages(),
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--cidr=10.244.0.0/16", "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40"})
}

func (w *World) start(name string, argv []string) error {
	if err := os.MkdirAll(filepath.Join(w.Dir, "logs"), 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(w.Dir, "logs", name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p := &process{name: name, argv: argv, log: logPath, done: make(chan struct{})}
	if restartable[name] {
		p.restarts = maxRestarts
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.run(p, lf); err != nil {
		lf.Close()
		return err
	}
	w.procs = append(w.procs, p)
	go w.supervise(p, lf)
	return nil
}

// run starts p's next run; w.mu is held.
func (w *World) run(p *process, lf *os.File) error {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = w.Dir
	// Its own process group (Stop signals the group); killed if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kubeworld: starting %s: %w", p.name, err)
	}
	p.cmd = cmd
	return nil
}

// supervise waits for p's runs and starts a restartable process again (after
// a second, at most maxRestarts times) unless the world is stopping.
func (w *World) supervise(p *process, lf *os.File) {
	defer lf.Close()
	w.mu.Lock()
	cmd := p.cmd
	w.mu.Unlock()
	for {
		err := cmd.Wait()
		w.mu.Lock()
		if w.stopped || p.restarts == 0 {
			p.err = err
			close(p.done)
			w.mu.Unlock()
			return
		}
		p.restarts--
		left := p.restarts
		w.mu.Unlock()
		fmt.Fprintf(lf, "\n=== kubeworld: %s exited (%v); starting it again in 1 s (%d restarts left)\n", p.name, err, left)
		w.logf("kubeworld: %s exited (%v); starting it again (%d restarts left; log %s)", p.name, err, left, p.log)
		time.Sleep(time.Second)
		w.mu.Lock()
		if w.stopped {
			p.err = err
			close(p.done)
			w.mu.Unlock()
			return
		}
		if rerr := w.run(p, lf); rerr != nil {
			p.err = rerr
			close(p.done)
			w.mu.Unlock()
			return
		}
		cmd = p.cmd
		w.mu.Unlock()
	}
}

// running reports whether a process of that name was started.
func (w *World) running(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		if p.name == name {
			return true
		}
	}
	return false
}

// exited names a process that is gone while it should run.
func (w *World) exited() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		select {
		case <-p.done:
			return fmt.Errorf("kubeworld: %s exited: %v (log %s)", p.name, p.err, p.log)
		default:
		}
	}
	return nil
}

func (w *World) waitReady(ctx context.Context, cs kubernetes.Interface) error {
	insecure := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- health probes of our own loopback components
	checks := []struct {
		what string
		ok   func() error
	}{
		{"kube-apiserver /readyz", func() error {
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err
		}},
		{"the cluster-admins binding (as kubeadm init makes it)", func() error { return w.bindClusterAdmins(ctx) }},
		{"kube-controller-manager and kube-scheduler to start", w.startControllers},
		{"kwok", func() error {
			if w.running(kubebin.Kwok) {
				return nil
			}
			return w.startKwok()
		}},
		{"kube-controller-manager /healthz", func() error { return probe(ctx, insecure, w.ports["kcm"]) }},
		{"kube-scheduler /healthz", func() error { return probe(ctx, insecure, w.ports["sched"]) }},
		{"the default ServiceAccount", func() error {
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err
		}},
	}
	for _, c := range checks {
		var last error
		for {
			if last = c.ok(); last == nil {
				break
			}
			if err := w.exited(); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("kubeworld: waiting for %s: %w (last error: %v)", c.what, ctx.Err(), last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func probe(ctx context.Context, c *http.Client, port int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// bindClusterAdmins gives admin.conf's group kubeadm:cluster-admins the
// cluster-admin role, with super-admin.conf (system:masters), as kubeadm init
// does.
func (w *World) bindClusterAdmins(ctx context.Context) error {
	b, err := os.ReadFile(filepath.Join(w.Dir, "super-admin.conf"))
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "kubeadm:cluster-admins", APIGroup: "rbac.authorization.k8s.io"}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// RESTConfig is a cluster-admin client configuration.
func (w *World) RESTConfig() (*rest.Config, error) {
	b, err := os.ReadFile(w.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return clientcmd.RESTConfigFromKubeConfig(b)
}

// KubeconfigBytes is the cluster-admin kubeconfig.
func (w *World) KubeconfigBytes() ([]byte, error) { return os.ReadFile(w.Kubeconfig) }

// Clientset is a cluster-admin clientset.
func (w *World) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := w.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Kubectl runs the real kubectl as cluster admin and returns its stdout; an
// error carries stderr.
func (w *World) Kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, w.Binaries.Path(kubebin.Kubectl), append([]string{"--kubeconfig", w.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// AddNode registers a Node that kwok manages: it becomes Ready and runs the
// pods scheduled to it.
func (w *World) AddNode(ctx context.Context, name string, labels map[string]string) error {
	cs, err := w.Clientset()
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Create(ctx, KwokNode(name, labels), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubeworld: creating node %s: %w", name, err)
	}
	return nil
}

// KwokNode is a Node object kwok manages (annotation KwokNodeAnnotation=fake),
// with the capacity of a small VM.
func KwokNode(name string, labels map[string]string) *corev1.Node {
	l := map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}
	for k, v := range labels {
		l[k] = v
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Status:     corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

// WaitNodeReady waits until the node's Ready condition is True.
func WaitNodeReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubeworld: node %s not Ready: %w (last error: %v)", name, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops every process (SIGTERM, then SIGKILL after 10 s) and removes
// the state directory when Start made it. It may be called more than once.
func (w *World) Stop() error {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return nil
	}
	w.stopped = true
	procs := w.procs
	w.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		w.stopProcess(procs[i])
	}
	if w.ownDir {
		return os.RemoveAll(w.Dir)
	}
	return nil
}

func (w *World) stopProcess(p *process) {
	w.mu.Lock()
	pid := p.cmd.Process.Pid
	w.mu.Unlock()
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // anything left in its group
}

// logTails is the end of every log, for errors.
func (w *World) logTails() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, p := range w.procs {
		data, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		fmt.Fprintf(&b, "\n--- %s (last lines of %s):\n%s", p.name, p.log, strings.Join(lines, "\n"))
	}
	return b.String()
}

// ProcessIDs returns the pids of the processes the world runs, by name.
func (w *World) ProcessIDs() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]int{}
	for _, p := range w.procs {
		m[p.name] = p.cmd.Process.Pid
	}
	return m
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
