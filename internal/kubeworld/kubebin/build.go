// Package kubebin builds and caches the real Kubernetes binaries of the test
// world (see package kubeworld): kube-apiserver, kube-controller-manager,
// kube-scheduler, kubeadm and kubectl from k8s.io/kubernetes at one pinned
// release, and kwok, from the nested build modules under
// internal/kubeworld/buildmod. It has no Kubernetes dependencies itself, so
// the k8s-standin binary can use it.
package kubebin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// CacheEnv overrides the cache root (see [CacheRoot]).
const CacheEnv = "VNFM_KUBE_CACHE"

// CacheRoot is where built binaries are kept, one directory per pinned
// version set: $VNFM_KUBE_CACHE when set; else, for root,
// /var/cache/mini-vnfm (a path the test hosts see through their /var
// overlay, so they run the same files without a copy); else the user's cache
// directory ($XDG_CACHE_HOME or ~/.cache) /mini-vnfm.
func CacheRoot() (string, error) {
	if v := os.Getenv(CacheEnv); v != "" {
		return filepath.Abs(v)
	}
	if os.Geteuid() == 0 {
		return "/var/cache/mini-vnfm", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kubebin: no cache directory (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(d, "mini-vnfm"), nil
}

// Binaries is one complete cache directory.
type Binaries struct {
	// Dir is <cache root>/kubernetes-<version>_kwok-<version>_<n>.
	Dir string
}

// Path is the path of one binary (KubeAPIServer, Kwok, ...).
func (b Binaries) Path(name string) string { return filepath.Join(b.Dir, "bin", name) }

// BinDir holds every binary.
func (b Binaries) BinDir() string { return filepath.Join(b.Dir, "bin") }

// KwokStages is the kwok configuration with its node-initialize,
// node-heartbeat-with-lease and pod "fast" stages, taken from the kwok module.
func (b Binaries) KwokStages() string { return filepath.Join(b.Dir, "kwok-stages.yaml") }

func (b Binaries) complete() error {
	for _, n := range append([]string{Kwok}, kubernetesCommands...) {
		if _, err := os.Stat(b.Path(n)); err != nil {
			return err
		}
	}
	_, err := os.Stat(b.KwokStages())
	return err
}

// ErrNotBuilt is returned by [Cached] when the binaries are not built yet.
var ErrNotBuilt = errors.New("kubebin: the Kubernetes binaries are not built yet")

// Cached returns the cached binaries without building anything.
func Cached() (Binaries, error) {
	root, err := CacheRoot()
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Dir: filepath.Join(root, cacheKey)}
	if err := b.complete(); err != nil {
		return Binaries{}, fmt.Errorf("%w in %s (run `make kube`, or any test that needs them): %v", ErrNotBuilt, b.Dir, err)
	}
	return b, nil
}

// BuildOptions tune [Ensure].
type BuildOptions struct {
	// SourceDir is the repository checkout holding internal/kubeworld/buildmod.
	// Default: found by walking up from the working directory.
	SourceDir string
	// Progress receives the build's progress lines. Default os.Stderr.
	Progress io.Writer
	// Go is the go command. Default: go from $PATH, else $GOROOT/bin/go.
	Go string
}

// Ensure returns the cached binaries, building them first when missing.
// Builders in several processes take turns on a lock; each builds into a
// temporary directory renamed into place when complete.
func Ensure(ctx context.Context, o BuildOptions) (Binaries, error) {
	if b, err := Cached(); err == nil {
		return b, nil
	}
	root, err := CacheRoot()
	if err != nil {
		return Binaries{}, err
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("kubebin: cache: %w", err)
	}
	unlock, err := lockWait(ctx, filepath.Join(root, "."+cacheKey+".lock"), o.Progress)
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	b := Binaries{Dir: filepath.Join(root, cacheKey)}
	if b.complete() == nil { // another process built it while we waited
		return b, nil
	}
	if err := build(ctx, o, root, b); err != nil {
		return Binaries{}, err
	}
	return b, nil
}

// lockWait takes an exclusive flock on path, telling the user while another
// builder holds it.
func lockWait(ctx context.Context, path string, progress io.Writer) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubebin: cache lock: %w", err)
	}
	told := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("kubebin: cache lock %s: %w", path, err)
		}
		if !told {
			fmt.Fprintf(progress, "[kubeworld] another process is building the Kubernetes binaries (lock %s); waiting for it\n", path)
			told = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// FindSourceDir walks up from dir to the checkout that holds the build
// modules.
func FindSourceDir(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "internal/kubeworld/buildmod/kubernetes/go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("kubebin: the Kubernetes binaries are not built and no mini-VNFM checkout (internal/kubeworld/buildmod) was found above %s to build them from: run `make kube` in a checkout, or set %s to a cache that has them", dir, CacheEnv)
		}
		d = parent
	}
}

func goCommand(o BuildOptions) string {
	if o.Go != "" {
		return o.Go
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func build(ctx context.Context, o BuildOptions, root string, b Binaries) error {
	src := o.SourceDir
	if src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if src, err = FindSourceDir(wd); err != nil {
			return err
		}
	} else if _, err := os.Stat(filepath.Join(src, "internal/kubeworld/buildmod/kubernetes/go.mod")); err != nil {
		return fmt.Errorf("kubebin: %s is not a mini-VNFM checkout to build the Kubernetes binaries from (run `make kube` in one, or set %s to a cache that has them): %w", src, CacheEnv, err)
	}
	kmod := filepath.Join(src, "internal/kubeworld/buildmod/kubernetes")
	wmod := filepath.Join(src, "internal/kubeworld/buildmod/kwok")
	tmp, err := os.MkdirTemp(root, "."+cacheKey+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	gobin := goCommand(o)
	t0 := time.Now()
	fmt.Fprintf(o.Progress, "[kubeworld] one-time build of Kubernetes %s (kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubectl) and kwok %s into %s: about 30 CPU-minutes: some 15 min on an idle 2-core machine, then cached\n",
		KubernetesVersion, KwokVersion, b.Dir)
	// Downloads first, in one place: nothing later (e.g. a go command inside
	// a network namespace without network) has to reach the proxy.
	for _, m := range []string{kmod, wmod} {
		if out, err := goCmd(ctx, gobin, m, "mod", "download").CombinedOutput(); err != nil {
			return fmt.Errorf("kubebin: go mod download in %s: %v: %s", m, err, tail(out))
		}
	}
	fmt.Fprintf(o.Progress, "[kubeworld] modules downloaded (%s)\n", time.Since(t0).Round(time.Second))

	pkgs := make([]string, len(kubernetesCommands))
	for i, c := range kubernetesCommands {
		pkgs[i] = "k8s.io/kubernetes/cmd/" + c
	}
	total := 0
	if out, err := goCmd(ctx, gobin, kmod, append([]string{"list", "-deps"}, pkgs...)...).Output(); err == nil {
		total = strings.Count(string(out), "\n")
	}
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	var ld []string
	ld = append(ld, "-s", "-w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X", pkg+".gitVersion="+KubernetesVersion, "-X", pkg+".gitMajor="+minor[0], "-X", pkg+".gitMinor="+minor[1],
			"-X", pkg+".gitTreeState=clean", "-X", pkg+".buildDate="+t0.UTC().Format("2006-01-02T15:04:05Z"))
	}
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	args := append([]string{"build", "-v", "-trimpath", "-ldflags", strings.Join(ld, " "), "-o", bin + "/"}, pkgs...)
	if err := runWithProgress(ctx, goCmd(ctx, gobin, kmod, args...), o.Progress, "Kubernetes "+KubernetesVersion, total, t0); err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "[kubeworld] Kubernetes binaries built (%s); building kwok %s\n", time.Since(t0).Round(time.Second), KwokVersion)
	if out, err := goCmd(ctx, gobin, wmod, "build", "-trimpath", "-ldflags", "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version="+strings.TrimPrefix(KwokVersion, "v"),
		"-o", filepath.Join(bin, Kwok), "sigs.k8s.io/kwok/cmd/kwok").CombinedOutput(); err != nil {
		return fmt.Errorf("kubebin: building kwok: %v: %s", err, tail(out))
	}
	out, err := goCmd(ctx, gobin, wmod, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok").Output()
	if err != nil {
		return fmt.Errorf("kubebin: locating the kwok module: %w", err)
	}
	if err := writeStages(strings.TrimSpace(string(out)), filepath.Join(tmp, "kwok-stages.yaml")); err != nil {
		return err
	}
	info := fmt.Sprintf("kubernetes %s\nkwok %s\nbuilt %s in %s by %s\n", KubernetesVersion, KwokVersion, time.Now().UTC().Format(time.RFC3339),
		time.Since(t0).Round(time.Second), runtime.Version())
	if err := os.WriteFile(filepath.Join(tmp, "BUILD-INFO"), []byte(info), 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(b.Dir) // an incomplete directory from an older layout
	if err := os.Rename(tmp, b.Dir); err != nil {
		return fmt.Errorf("kubebin: cache: %w", err)
	}
	fmt.Fprintf(o.Progress, "[kubeworld] done in %s: %s\n", time.Since(t0).Round(time.Second), b.Dir)
	return nil
}

// kwokStageFiles are the stages kwok runs with, from its module's
// kustomize/stage directory: nodes become Ready and keep a lease, pods become
// Running (or Succeeded) at once and are removed when deleted.
var kwokStageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

func writeStages(moduleDir, dst string) error {
	var docs []string
	for _, f := range kwokStageFiles {
		b, err := os.ReadFile(filepath.Join(moduleDir, "kustomize/stage", f))
		if err != nil {
			return fmt.Errorf("kubebin: kwok stage: %w", err)
		}
		docs = append(docs, strings.TrimSpace(strings.TrimPrefix(string(b), "---")))
	}
	return os.WriteFile(dst, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644)
}

func goCmd(ctx context.Context, gobin, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	return cmd
}

// runWithProgress runs a `go build -v`, counting the packages it compiles
// against total and printing a line every 20 s.
func runWithProgress(ctx context.Context, cmd *exec.Cmd, w io.Writer, what string, total int, t0 time.Time) error {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	var errTail []string
	var done atomic.Int64
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				n := done.Load()
				if n == 0 {
					fmt.Fprintf(w, "[kubeworld] building %s: linking (packages from the Go build cache), %s elapsed\n", what, time.Since(t0).Round(time.Second))
					continue
				}
				pct := ""
				if total > 0 {
					pct = " (" + strconv.Itoa(int(min(99, 100*n/int64(total)))) + "%)"
				}
				fmt.Fprintf(w, "[kubeworld] building %s: %d packages compiled%s, %s elapsed\n", what, n, pct, time.Since(t0).Round(time.Second))
			}
		}
	}()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, " ") || strings.Contains(line, ":") {
			errTail = append(errTail, line)
			if len(errTail) > 30 {
				errTail = errTail[1:]
			}
			continue
		}
		done.Add(1)
	}
	err = cmd.Wait()
	close(stop)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kubebin: building %s: %v\n%s", what, err, strings.Join(errTail, "\n"))
	}
	return nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
