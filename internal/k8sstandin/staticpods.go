package k8sstandin

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
)

// Paths on a node (the same as kubeadm's and the kubelet's).
const (
	kubernetesDir      = "/etc/kubernetes"
	manifestsDir       = "/etc/kubernetes/manifests"
	kubeletConf        = "/etc/kubernetes/kubelet.conf"
	adminConf          = "/etc/kubernetes/admin.conf"
	bootstrapConf      = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeletDir         = "/var/lib/kubelet"
	kubeletFlagsEnv    = "/var/lib/kubelet/kubeadm-flags.env"
	kubeletClientPEM   = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	standinRunDir      = "/run/k8s-standin"
	standinLogDir      = "/var/log/k8s-standin"
	kubeletHealthzAddr = "127.0.0.1:10248"
	// MarkerFile tells installers that the stand-in is installed in place of
	// the real packages, and where the real binaries are.
	MarkerFile = "/etc/k8s-standin"
)

// staticPod is a manifest of /etc/kubernetes/manifests.
type staticPod struct {
	Name    string // metadata.name
	Path    string
	Hash    string // of the file's content
	Command []string
	Pod     Obj // the whole manifest, for the mirror pod
}

func readManifests() ([]staticPod, error) {
	files, _ := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	var out []staticPod
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var pod Obj
		if err := yaml.Unmarshal(b, &pod); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		sum := sha256.Sum256(b)
		sp := staticPod{Name: getStr(pod, "metadata", "name"), Path: f, Hash: hex.EncodeToString(sum[:16]), Pod: pod}
		if cs, _ := getMap(pod, "spec")["containers"].([]any); len(cs) > 0 {
			c, _ := cs[0].(map[string]any)
			for _, k := range []string{"command", "args"} {
				xs, _ := c[k].([]any)
				for _, x := range xs {
					sp.Command = append(sp.Command, fmt.Sprint(x))
				}
			}
		}
		if sp.Name == "" || len(sp.Command) == 0 {
			continue
		}
		out = append(out, sp)
	}
	return out, nil
}

// resolveCommand maps a manifest's command to a program here: the control
// plane is the real binaries, etcd is Debian's etcd (3.4), whose names for
// two flags of kubeadm's etcd 3.6 manifest differ.
func resolveCommand(cmd []string) ([]string, error) {
	switch cmd[0] {
	case "kube-apiserver":
		p, err := realBinary(cmd[0])
		if err != nil {
			return nil, err
		}
		return append([]string{p}, withFeatureGates(cmd[1:], kubebin.APIServerFeatureGates)...), nil
	case "kube-controller-manager", "kube-scheduler":
		p, err := realBinary(cmd[0])
		if err != nil {
			return nil, err
		}
		return append([]string{p}, cmd[1:]...), nil
	case "kuryr-controller": // the stand-in's own personality (kuryr.go)
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return append([]string{self, "kuryr-controller"}, cmd[1:]...), nil
	case "etcd":
		p, err := exec.LookPath("etcd")
		if err != nil {
			return nil, fmt.Errorf("etcd is not installed (Debian: etcd-server): %w", err)
		}
		return append([]string{p}, etcd34Flags(cmd[1:])...), nil
	default:
		p, err := exec.LookPath(cmd[0])
		if err != nil {
			return nil, err
		}
		return append([]string{p}, cmd[1:]...), nil
	}
}

// withFeatureGates adds gates ("A=false,B=true") to the command's
// --feature-gates, keeping the manifest's own gates that it does not name.
func withFeatureGates(args []string, gates string) []string {
	var mine []string
	for _, g := range strings.Split(gates, ",") {
		mine = append(mine, strings.SplitN(g, "=", 2)[0])
	}
	var kept []string
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--feature-gates=")
		if !ok {
			out = append(out, a)
			continue
		}
		for _, g := range strings.Split(v, ",") {
			if g != "" && !slices.Contains(mine, strings.SplitN(g, "=", 2)[0]) {
				kept = append(kept, g)
			}
		}
	}
	return append(out, "--feature-gates="+strings.Join(append(kept, gates), ","))
}

// etcd34Flags translates what etcd 3.4 calls differently.
func etcd34Flags(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == "--feature-gates=InitialCorruptCheck=true":
			out = append(out, "--experimental-initial-corrupt-check=true")
		case strings.HasPrefix(a, "--watch-progress-notify-interval="):
			out = append(out, "--experimental-"+strings.TrimPrefix(a, "--"))
		default:
			out = append(out, a)
		}
	}
	return out
}

func podPidFile(name string) string  { return filepath.Join(standinRunDir, "pods", name+".pid") }
func podHashFile(name string) string { return filepath.Join(standinRunDir, "pods", name+".hash") }

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

// syncStaticPods runs the static pods whose manifests exist: starts those not
// running, restarts those whose manifest changed, and stops those whose
// manifest is gone (the kubelet's job; a process stands for the container).
func syncStaticPods(reap bool, logf func(string, ...any)) ([]staticPod, error) {
	unlock, err := lockFile(filepath.Join(standinRunDir, "pods.lock"), 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer unlock()
	pods, err := readManifests()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	var errs []error
	for _, p := range pods {
		want[p.Name] = true
		pid := readPid(podPidFile(p.Name))
		hash, _ := os.ReadFile(podHashFile(p.Name))
		if pidAlive(pid) {
			if string(hash) == p.Hash {
				continue
			}
			stopPid(pid)
			if logf != nil {
				logf("static pod %s: manifest changed, restarting", p.Name)
			}
		}
		argv, err := resolveCommand(p.Command)
		if err != nil {
			errs = append(errs, fmt.Errorf("static pod %s: %w", p.Name, err))
			continue
		}
		pid, err = spawn(argv, filepath.Join(standinLogDir, p.Name+".log"), podPidFile(p.Name), reap)
		if err != nil {
			errs = append(errs, fmt.Errorf("static pod %s: %w", p.Name, err))
			continue
		}
		_ = writeFile(podHashFile(p.Name), []byte(p.Hash), 0o644)
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
			_ = os.Remove(podHashFile(name))
			if logf != nil {
				logf("stopped static pod %s", name)
			}
		}
	}
	return pods, errors.Join(errs...)
}

// stopStaticPods kills every static pod process (after kubeadm reset).
func stopStaticPods() {
	running, _ := filepath.Glob(filepath.Join(standinRunDir, "pods", "*.pid"))
	for _, pf := range running {
		stopPid(readPid(pf))
		_ = os.Remove(pf)
		_ = os.Remove(strings.TrimSuffix(pf, ".pid") + ".hash")
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
	return "", errors.New("unable to find a default route IPv4 address")
}
