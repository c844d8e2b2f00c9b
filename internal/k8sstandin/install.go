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

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// BinaryEnv names a prebuilt stand-in binary to install instead of building
// one with `go build`.
const BinaryEnv = "K8S_STANDIN_BIN"

// Paths of the stand-in inside a host.
const (
	InstalledBinary = "/usr/local/bin/k8s-standin"
	kubeletUnit     = "/usr/lib/systemd/system/kubelet.service"
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

// installScript runs in the host after the binary was copied in.
const installScript = `set -e
for n in kubeadm kubectl kubelet; do ln -sf ` + InstalledBinary + ` /usr/bin/$n; done
mkdir -p /usr/lib/systemd/system /etc/kubernetes/manifests /var/lib/kubelet
cat > ` + kubeletUnit + ` <<'EOF'
[Unit]
Description=kubelet: The Kubernetes Node Agent (k8s-standin)
Documentation=https://kubernetes.io/docs/

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=2
KillMode=process

[Install]
WantedBy=multi-user.target
EOF
# Enabled, as the kubelet package's postinst does: a node that boots again
# (its cloud restarted) starts its kubelet, which starts the static pods.
systemctl enable kubelet >/dev/null 2>&1 || true
printf 'k8s-standin %s\nkubernetes %s\nbinary %s\n' "$1" "$2" ` + InstalledBinary + ` > ` + MarkerFile + `
`

// Install puts the stand-in into a test host: the binary at
// /usr/local/bin/k8s-standin, symlinks /usr/bin/{kubeadm,kubectl,kubelet}, a
// kubelet.service unit (for the systemctl shim or a real systemd) and the
// marker file /etc/k8s-standin that scripts/install_k8s_cluster.sh looks for.
// Only that host's filesystem layers change.
func Install(ctx context.Context, h *testhosts.Host) error {
	bin, err := Binary(ctx)
	if err != nil {
		return err
	}
	return InstallBinary(ctx, h, bin)
}

// InstallBinary is Install with an explicit binary.
func InstallBinary(ctx context.Context, h *testhosts.Host, bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	copyCmd := h.Command(ctx, "sh", "-c", `set -e; mkdir -p "$(dirname "$1")"; cat > "$1.new"; chmod 755 "$1.new"; mv -f "$1.new" "$1"`, "sh", InstalledBinary)
	copyCmd.Stdin = f
	if out, err := copyCmd.CombinedOutput(); err != nil {
		return fmt.Errorf("k8sstandin: copy into %s: %v: %s", h.Name, err, strings.TrimSpace(string(out)))
	}
	if _, err := h.Exec(ctx, "sh", "-c", installScript, "sh", Version, KubernetesVersion); err != nil {
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
	errc := make(chan error, len(hosts))
	for _, h := range hosts {
		go func() { errc <- InstallBinary(ctx, h, bin) }()
	}
	var first error
	for range hosts {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}
