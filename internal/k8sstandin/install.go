package k8sstandin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// BinaryEnv names a prebuilt stand-in binary to install instead of building
// one with `go build`.
const BinaryEnv = "K8S_STANDIN_BIN"

// Paths of the stand-in inside a host.
const (
	InstalledBinary = "/usr/local/bin/k8s-standin"
	kubeletUnit     = "/usr/lib/systemd/system/kubelet.service"
	// hostBinDir receives the real binaries in a host that cannot see the
	// cache (one under /root, /home or /tmp, which every host has its own of).
	hostBinDir = "/usr/local/lib/k8s-standin/bin"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of a static k8s-standin binary: $K8S_STANDIN_BIN
// when set, else one built once per process with `go build` (the caller's
// working directory must be inside this module, as in `go test`).
func Binary(ctx context.Context) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("k8sstandin: %s=%s: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	build.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		dir, err := os.MkdirTemp("", "k8s-standin-bin-")
		if err != nil {
			build.err = err
			return
		}
		out := filepath.Join(dir, "k8s-standin")
		cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", out, "github.com/mini-vnfm/mini-vnfm/cmd/k8s-standin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("k8sstandin: go build: %v: %s", err, strings.TrimSpace(string(b)))
			return
		}
		build.path = out
	})
	return build.path, build.err
}

// installScript runs in the host after the binary was copied in; $3 is the
// directory of the real binaries as the host sees it.
const installScript = `set -e
ln -sf ` + InstalledBinary + ` /usr/bin/kubeadm
ln -sf ` + InstalledBinary + ` /usr/bin/kubelet
ln -sf "$3/kubectl" /usr/bin/kubectl
mkdir -p /usr/lib/systemd/system /etc/kubernetes/manifests /var/lib/kubelet
cat > ` + kubeletUnit + ` <<'UNIT'
[Unit]
Description=kubelet: The Kubernetes Node Agent (k8s-standin: static pods as processes, kwok for the node)
Documentation=https://kubernetes.io/docs/

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=2
KillMode=process

[Install]
WantedBy=multi-user.target
UNIT
# Enabled, as the kubelet package's postinst does: a node that boots again
# (its cloud restarted) starts its kubelet, which starts the static pods.
systemctl enable kubelet >/dev/null 2>&1 || true
printf 'k8s-standin %s\nkubernetes %s\nbinary %s\nbinaries %s\n' "$1" "$2" ` + InstalledBinary + ` "$3" > ` + MarkerFile + `
`

// Install puts the stand-in into a test host: the binary at
// /usr/local/bin/k8s-standin, with /usr/bin/kubeadm (the real kubeadm through
// the stand-in's wrapper) and /usr/bin/kubelet (the stand-in's kubelet)
// linking to it, /usr/bin/kubectl linking to the real kubectl, a
// kubelet.service unit (for the systemctl shim or a real systemd) and the
// marker file /etc/k8s-standin, which names the directory of the real
// binaries and which scripts/install_k8s_cluster.sh looks for. The real
// binaries are built first if needed (kubebin.Ensure). Only that host's
// filesystem layers change.
func Install(ctx context.Context, h *testhosts.Host) error {
	bin, err := Binary(ctx)
	if err != nil {
		return err
	}
	return InstallBinary(ctx, h, bin)
}

// InstallBinary is Install with an explicit stand-in binary.
func InstallBinary(ctx context.Context, h *testhosts.Host, bin string) error {
	kb, err := kubebin.Ensure(ctx, kubebin.BuildOptions{})
	if err != nil {
		return err
	}
	return InstallWith(ctx, h, bin, kb)
}

// InstallWith is Install with an explicit stand-in binary and real binaries.
func InstallWith(ctx context.Context, h *testhosts.Host, bin string, kb kubebin.Binaries) error {
	if err := copyInto(ctx, h, bin, InstalledBinary); err != nil {
		return err
	}
	dir := kb.BinDir()
	if _, err := h.Exec(ctx, "test", "-x", kb.Path(kubebin.KubeAPIServer), "-a", "-f", kb.KwokStages()); err != nil {
		// The host cannot see the cache: copy the binaries in (~500 MB).
		if dir, err = copyBinaries(ctx, h, kb); err != nil {
			return err
		}
	}
	if _, err := h.Exec(ctx, "sh", "-c", installScript, "sh", Version, KubernetesVersion, dir); err != nil {
		return fmt.Errorf("k8sstandin: install into %s: %w", h.Name, err)
	}
	if d := os.Getenv(StepDelayEnv); d != "" {
		if _, err := time.ParseDuration(d); err != nil {
			return fmt.Errorf("k8sstandin: %s=%q: %w", StepDelayEnv, d, err)
		}
		if _, err := h.Exec(ctx, "sh", "-c", `printf '%s\n' "$1" > "$2"`, "sh", d, StepDelayFile); err != nil {
			return fmt.Errorf("k8sstandin: step delay in %s: %w", h.Name, err)
		}
	}
	return nil
}

func copyInto(ctx context.Context, h *testhosts.Host, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := h.Command(ctx, "sh", "-c", `set -e; mkdir -p "$(dirname "$1")"; cat > "$1.new"; chmod 755 "$1.new"; mv -f "$1.new" "$1"`, "sh", dst)
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("k8sstandin: copy %s into %s: %v: %s", src, h.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func copyBinaries(ctx context.Context, h *testhosts.Host, kb kubebin.Binaries) (string, error) {
	if err := copyInto(ctx, h, kb.KwokStages(), filepath.Join(filepath.Dir(hostBinDir), "kwok-stages.yaml")); err != nil {
		return "", err
	}
	for _, n := range []string{kubebin.KubeAPIServer, kubebin.KubeControllerManager, kubebin.KubeScheduler, kubebin.Kubeadm, kubebin.Kubectl, kubebin.Kwok} {
		if err := copyInto(ctx, h, kb.Path(n), filepath.Join(hostBinDir, n)); err != nil {
			return "", err
		}
	}
	return hostBinDir, nil
}

// The fixed-time install step (make bench): when the installing process has
// K8S_STANDIN_STEP_DELAY (a Go duration), InstallBinary writes it to
// /etc/k8s-standin-step-delay in the host, and there `kubeadm init` and
// `kubeadm join` sleep that long before doing their work. The variable also
// works when set in the stand-in's own environment.
const (
	StepDelayEnv  = "K8S_STANDIN_STEP_DELAY"
	StepDelayFile = "/etc/k8s-standin-step-delay"
)

// stepDelay sleeps the configured install-step time, if any (see StepDelayEnv).
func stepDelay(e *env) {
	v := os.Getenv(StepDelayEnv)
	if v == "" {
		b, err := os.ReadFile(StepDelayFile)
		if err != nil {
			return
		}
		v = strings.TrimSpace(string(b))
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-e.ctx.Done():
	}
}

// InstallAll installs into several hosts in parallel.
func InstallAll(ctx context.Context, hosts ...*testhosts.Host) error {
	bin, err := Binary(ctx)
	if err != nil {
		return err
	}
	kb, err := kubebin.Ensure(ctx, kubebin.BuildOptions{})
	if err != nil {
		return err
	}
	errc := make(chan error, len(hosts))
	for _, h := range hosts {
		go func() { errc <- InstallWith(ctx, h, bin, kb) }()
	}
	var first error
	for range hosts {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}
