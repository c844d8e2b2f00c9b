package k8sstandin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Paths on a node (the same as kubeadm's).
const (
	kubernetesDir   = "/etc/kubernetes"
	pkiDir          = "/etc/kubernetes/pki"
	etcdPKIDir      = "/etc/kubernetes/pki/etcd"
	manifestsDir    = "/etc/kubernetes/manifests"
	adminConf       = "/etc/kubernetes/admin.conf"
	kubeletConf     = "/etc/kubernetes/kubelet.conf"
	kubeletDir      = "/var/lib/kubelet"
	kubeletFlagsEnv = "/var/lib/kubelet/kubeadm-flags.env"
	etcdDataDir     = "/var/lib/etcd"
	standinDataDir  = "/var/lib/k8s-standin"
	standinRunDir   = "/run/k8s-standin"
	standinLogDir   = "/var/log/k8s-standin"
	// MarkerFile tells installers that the stand-in is installed in place of
	// the real packages.
	MarkerFile = "/etc/k8s-standin"
)

// staticPod is what the stand-in's kubelet reads from a manifest.
type staticPod struct {
	Name    string
	Command []string
	Path    string
}

type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	} `yaml:"metadata"`
	Spec struct {
		HostNetwork bool `yaml:"hostNetwork"`
		Containers  []struct {
			Name    string   `yaml:"name"`
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
		} `yaml:"containers"`
	} `yaml:"spec"`
}

// writeManifest writes a static pod manifest shaped like kubeadm's.
func writeManifest(name string, command []string, annotations map[string]string) error {
	var m manifest
	m.APIVersion, m.Kind = "v1", "Pod"
	m.Metadata.Name, m.Metadata.Namespace = name, "kube-system"
	m.Metadata.Labels = map[string]string{"component": name, "tier": "control-plane"}
	m.Metadata.Annotations = annotations
	m.Spec.HostNetwork = true
	image := "registry.k8s.io/" + name + ":" + KubernetesVersion
	if name == "etcd" {
		image = "registry.k8s.io/etcd:3.5.15-0"
	}
	m.Spec.Containers = append(m.Spec.Containers, struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
	}{Name: name, Image: image, Command: command})
	b, err := yaml.Marshal(&m)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(manifestsDir, name+".yaml"), b, 0o600)
}

func readManifests() ([]staticPod, error) {
	files, _ := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	var out []staticPod
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var m manifest
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(m.Spec.Containers) == 0 || len(m.Spec.Containers[0].Command) == 0 {
			continue
		}
		out = append(out, staticPod{Name: m.Metadata.Name, Command: m.Spec.Containers[0].Command, Path: f})
	}
	return out, nil
}

// resolveCommand maps a manifest command to a program on this node: the
// control-plane components are the stand-in binary itself, etcd is the real
// etcd from $PATH.
func resolveCommand(cmd []string) ([]string, error) {
	switch cmd[0] {
	case "kube-apiserver", "kuryr-controller":
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		personality := cmd[0]
		if personality == "kube-apiserver" {
			personality = "apiserver"
		}
		return append([]string{self, personality}, cmd[1:]...), nil
	default:
		p, err := exec.LookPath(cmd[0])
		if err != nil {
			return nil, err
		}
		return append([]string{p}, cmd[1:]...), nil
	}
}

func podPidFile(name string) string { return filepath.Join(standinRunDir, "pods", name+".pid") }

// pidAlive reports whether pid runs and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// spawn starts argv as a daemon in its own session with output appended to
// logPath and records its pid. When reap is set the caller (a long-lived
// kubelet) waits for it in the background so it never lingers as a zombie;
// otherwise the process is released and re-parented when the caller exits.
func spawn(argv []string, logPath, pidPath string, reap bool) (int, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(pidPath), 0o755); err != nil {
		return 0, err
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, lf, lf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	fmt.Fprintf(lf, "--- %s starting: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	if err := writeFile(pidPath, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return 0, err
	}
	if reap {
		go func() { _ = cmd.Wait() }()
	} else {
		_ = cmd.Process.Release()
	}
	return pid, nil
}

// stopPid sends SIGTERM, waits up to 10 s, then SIGKILL.
func stopPid(pid int) {
	if !pidAlive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100 && pidAlive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if pidAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 20 && pidAlive(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// lockFile takes an exclusive flock, waiting up to timeout.
func lockFile(path string, timeout time.Duration) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s is locked by another process", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// syncStaticPods starts the static pods whose manifests exist and are not
// running, and stops those whose manifests are gone (the kubelet's job).
func syncStaticPods(reap bool, logf func(string, ...any)) error {
	unlock, err := lockFile(filepath.Join(standinRunDir, "pods.lock"), 30*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	pods, err := readManifests()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	var errs []error
	for _, p := range pods {
		want[p.Name] = true
		if pidAlive(readPid(podPidFile(p.Name))) {
			continue
		}
		argv, err := resolveCommand(p.Command)
		if err != nil {
			errs = append(errs, fmt.Errorf("static pod %s: %w", p.Name, err))
			continue
		}
		pid, err := spawn(argv, filepath.Join(standinLogDir, p.Name+".log"), podPidFile(p.Name), reap)
		if err != nil {
			errs = append(errs, fmt.Errorf("static pod %s: %w", p.Name, err))
			continue
		}
		if logf != nil {
			logf("started static pod %s (pid %d)", p.Name, pid)
		}
	}
	running, _ := filepath.Glob(filepath.Join(standinRunDir, "pods", "*.pid"))
	for _, pf := range running {
		name := strings.TrimSuffix(filepath.Base(pf), ".pid")
		if !want[name] {
			stopPid(readPid(pf))
			_ = os.Remove(pf)
			if logf != nil {
				logf("stopped static pod %s", name)
			}
		}
	}
	return errors.Join(errs...)
}

// stopStaticPods kills every static pod process (kubeadm reset).
func stopStaticPods() {
	running, _ := filepath.Glob(filepath.Join(standinRunDir, "pods", "*.pid"))
	for _, pf := range running {
		stopPid(readPid(pf))
		_ = os.Remove(pf)
	}
}

// defaultRouteIP is the IPv4 address of the interface holding the default
// route (what kubeadm and the kubelet pick when not told).
func defaultRouteIP() (string, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	iface := ""
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 2 && fields[1] == "00000000" {
			iface = fields[0]
			break
		}
	}
	var ifaces []net.Interface
	if iface != "" {
		if i, err := net.InterfaceByName(iface); err == nil {
			ifaces = []net.Interface{*i}
		}
	}
	if len(ifaces) == 0 {
		ifaces, _ = net.Interfaces()
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("unable to find a default route IPv4 address; use --apiserver-advertise-address")
}

func nodeHostname() string {
	h, _ := os.Hostname()
	return strings.ToLower(h)
}

func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func kernelVersion() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// nodeObject is the Node the kubelet registers.
func nodeObject(name, ip string, controlPlane bool) Obj {
	labels := Obj{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
	}
	spec := Obj{}
	if controlPlane {
		labels["node-role.kubernetes.io/control-plane"] = ""
		labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		spec["taints"] = []any{Obj{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}}
	}
	mid, _ := os.ReadFile("/etc/machine-id")
	now := rfc3339(time.Now())
	capacity := Obj{"cpu": "2", "memory": "4019852Ki", "pods": "110", "ephemeral-storage": "20134592Ki"}
	return Obj{
		"apiVersion": "v1", "kind": "Node",
		"metadata": Obj{"name": name, "labels": labels, "annotations": Obj{
			"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
			"node.alpha.kubernetes.io/ttl":                           "0",
			"volumes.kubernetes.io/controller-managed-attach-detach": "true",
		}},
		"spec": spec,
		"status": Obj{
			"addresses":   []any{Obj{"type": "InternalIP", "address": ip}, Obj{"type": "Hostname", "address": name}},
			"capacity":    capacity,
			"allocatable": capacity,
			"conditions": []any{Obj{"type": "Ready", "status": "True", "reason": "KubeletReady",
				"message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}},
			"nodeInfo": Obj{
				"architecture": "amd64", "bootID": newUID(), "containerRuntimeVersion": "containerd://1.7.24",
				"kernelVersion": kernelVersion(), "kubeProxyVersion": KubernetesVersion, "kubeletVersion": KubernetesVersion,
				"machineID": strings.TrimSpace(string(mid)), "operatingSystem": "linux", "osImage": osImage(), "systemUUID": newUID(),
			},
		},
	}
}

// readyCondition is what the kubelet's heartbeat patches in.
func readyPatch() Obj {
	now := rfc3339(time.Now())
	return Obj{"status": Obj{"conditions": []any{Obj{"type": "Ready", "status": "True", "reason": "KubeletReady",
		"message": "kubelet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}}}}
}

// kubeletNodeName reads the node name kubeadm recorded for the kubelet.
func kubeletNodeName() string {
	b, err := os.ReadFile(kubeletFlagsEnv)
	if err == nil {
		for _, f := range strings.Fields(strings.Trim(strings.TrimPrefix(strings.TrimSpace(string(b)), "KUBELET_KUBEADM_ARGS="), `"`)) {
			if v, ok := strings.CutPrefix(f, "--hostname-override="); ok {
				return v
			}
		}
	}
	return nodeHostname()
}

// runKubelet is the kubelet daemon: it runs the static pods and posts the
// node's heartbeat. It does not re-register a deleted Node.
func runKubelet(ctx context.Context, stderr io.Writer) int {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s kubelet: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
	unlock, err := lockFile(filepath.Join(standinRunDir, "kubelet.lock"), 10*time.Second)
	if err != nil {
		logf("another kubelet is running: %v", err)
		return 1
	}
	defer unlock()
	_ = writeFile(filepath.Join(standinRunDir, "kubelet.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	logf("k8s-standin kubelet %s starting", KubernetesVersion)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	var lastBeat time.Time
	for {
		if err := syncStaticPods(true, logf); err != nil {
			logf("static pods: %v", err)
		}
		if time.Since(lastBeat) >= 10*time.Second {
			if err := heartbeat(ctx); err != nil {
				logf("heartbeat: %v", err)
			} else {
				lastBeat = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			logf("stopping (static pods keep running)")
			return 0
		case <-tick.C:
		}
	}
}

func heartbeat(ctx context.Context) error {
	kc, err := LoadKubeconfig(kubeletConf)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	c, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		return err
	}
	c.HTTP.Timeout = 5 * time.Second
	name := kubeletNodeName()
	err = c.DoCT(ctx, "PATCH", "/api/v1/nodes/"+name+"/status", "application/merge-patch+json", readyPatch(), nil)
	if IsNotFound(err) {
		return nil // deleted: the stand-in does not re-register
	}
	return err
}

// restartKubelet restarts the kubelet through systemctl when that works (the
// unit from Install, or a real one), else starts it directly.
func restartKubelet(out io.Writer) error {
	if _, err := exec.LookPath("systemctl"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if o, err := exec.CommandContext(ctx, "systemctl", "restart", "kubelet").CombinedOutput(); err == nil {
			return nil
		} else if out != nil {
			fmt.Fprintf(out, "[kubelet-start] systemctl restart kubelet failed (%v: %s); starting the kubelet directly\n", err, strings.TrimSpace(string(o)))
		}
	}
	stopPid(readPid(filepath.Join(standinRunDir, "kubelet.pid")))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = spawn([]string{self, "kubelet"}, filepath.Join(standinLogDir, "kubelet.log"), filepath.Join(standinRunDir, "kubelet.pid"), false)
	return err
}

// stopKubelet stops the kubelet (systemctl, then its pid file).
func stopKubelet() {
	if _, err := exec.LookPath("systemctl"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_ = exec.CommandContext(ctx, "systemctl", "stop", "kubelet").Run()
		cancel()
	}
	stopPid(readPid(filepath.Join(standinRunDir, "kubelet.pid")))
}
