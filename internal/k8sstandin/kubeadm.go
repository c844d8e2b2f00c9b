package k8sstandin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// env is a command's world.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// PreflightErrorsIgnored are the kubeadm preflight checks about what the test
// hosts do not have: a container runtime (and so its images and socket),
// the kernel set-up a CNI needs, swap off. The wrapper adds them to every
// `kubeadm init` and `kubeadm join`; every other check stays (ports in use,
// files already present, root, ...).
var PreflightErrorsIgnored = []string{
	"CRI", "ContainerRuntimeVersion", "ImagePull", "SystemVerification", "Swap",
	"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
	"FileExisting-crictl", "FileExisting-conntrack", "FileExisting-socat", "FileExisting-ip", "FileExisting-iptables",
	"FileExisting-mount", "FileExisting-nsenter", "FileExisting-ebtables", "FileExisting-ethtool", "FileExisting-tc", "FileExisting-touch",
	"NumCPU", "Mem",
}

// kubeadmMain runs the real kubeadm. What it adds is what a host without a
// container runtime needs: the preflight checks above are ignored, the fixed
// install-step delay of make bench applies to init and join, and `kubeadm
// reset` ends with stopping the static pod processes (a real reset removes
// the containers through the runtime).
func kubeadmMain(e *env, args []string) int {
	bin, err := realBinary("kubeadm")
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return 1
	}
	verb := ""
	if len(args) > 0 {
		verb = args[0]
	}
	phase := len(args) > 1 && args[1] == "phase"
	preflight := false
	switch {
	case (verb == "init" || verb == "join") && !phase:
		stepDelay(e)
		preflight = true
	case verb == "join" && phase && len(args) > 2 && args[2] == "preflight":
		preflight = true
	}
	var quiet *warningFilter
	if preflight {
		quiet = newWarningFilter(e.stderr, args)
		args = withIgnoredPreflight(args)
		re := *e
		re.stderr = quiet
		e = &re
	}
	rc := run(e, bin, args)
	if quiet != nil {
		quiet.Flush()
	}
	if verb == "init" && !phase && rc == 0 && !hasFlag(args, "dry-run") {
		if err := grantKwok(e); err != nil {
			fmt.Fprintf(e.stderr, "k8s-standin: %v\n", err)
			return 1
		}
	}
	forced := hasFlag(args, "force") || hasFlag(args, "f") || slices.Contains(args, "-f")
	if verb == "reset" && !phase && !hasFlag(args, "dry-run") && (rc == 0 || forced) {
		stopStaticPods()
		stopKubelet()
		fmt.Fprintln(e.stdout, "[reset] k8s-standin: stopped the static pod processes (there is no container runtime to remove their containers)")
	}
	return rc
}

// kwokRBAC lets each node's kwok (running with its kubelet's credentials)
// list and watch nodes, pods and node leases cluster-wide, which kwok does and the Node
// authorizer does not allow; everything it writes stays within what the
// Node authorizer gives a kubelet.
const kwokRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "k8s-standin:kwok", labels: {app.kubernetes.io/managed-by: k8s-standin}}
rules:
- apiGroups: [""]
  resources: [nodes, pods]
  verbs: [get, list, watch]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "k8s-standin:kwok", labels: {app.kubernetes.io/managed-by: k8s-standin}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "k8s-standin:kwok"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}
`

// grantKwok applies kwokRBAC after kubeadm init, as cluster admin.
func grantKwok(e *env) error {
	bin, err := realBinary("kubectl")
	if err != nil {
		return err
	}
	var last []byte
	for i := 0; i < 30; i++ {
		cmd := exec.CommandContext(e.ctx, bin, "--kubeconfig", adminConf, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(kwokRBAC)
		if last, err = cmd.CombinedOutput(); err == nil {
			fmt.Fprintln(e.stdout, "[k8s-standin] Granted the nodes' kwok (the kubelet stand-in) list/watch on nodes, pods and leases")
			return nil
		}
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("granting kwok its RBAC rules: %v: %s", err, strings.TrimSpace(string(last)))
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

// withIgnoredPreflight merges PreflightErrorsIgnored into the command's
// --ignore-preflight-errors.
func withIgnoredPreflight(args []string) []string {
	out, callers := splitIgnoredPreflight(args)
	return append(out, "--ignore-preflight-errors="+strings.Join(append(slices.Clone(PreflightErrorsIgnored), callers...), ","))
}

// splitIgnoredPreflight separates the --ignore-preflight-errors lists from
// the other arguments.
func splitIgnoredPreflight(args []string) (rest, ignored []string) {
	rest = make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--ignore-preflight-errors" && i+1 < len(args):
			ignored = append(ignored, strings.Split(args[i+1], ",")...)
			i++
		case strings.HasPrefix(a, "--ignore-preflight-errors="):
			ignored = append(ignored, strings.Split(strings.TrimPrefix(a, "--ignore-preflight-errors="), ",")...)
		default:
			rest = append(rest, a)
		}
	}
	return rest, ignored
}

// warningFilter drops kubeadm's "[WARNING <check>]" lines for the checks
// the wrapper ignores on its own (a host with a container runtime prints
// none), so that a failing init or join says what failed first rather than
// after a screen of CRI warnings; checks the caller ignored still warn.
type warningFilter struct {
	w       io.Writer
	checks  []string
	partial []byte
}

func newWarningFilter(w io.Writer, callerArgs []string) *warningFilter {
	var own []string
	_, callers := splitIgnoredPreflight(callerArgs)
	for _, c := range PreflightErrorsIgnored {
		if !slices.ContainsFunc(callers, func(x string) bool { return strings.EqualFold(x, c) || strings.EqualFold(x, "all") }) {
			own = append(own, c)
		}
	}
	return &warningFilter{w: w, checks: own}
}

func (f *warningFilter) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.partial[:i+1]
		if !f.drop(line) {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.partial = f.partial[i+1:]
	}
}

func (f *warningFilter) drop(line []byte) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "[WARNING ")
	if !ok {
		return false
	}
	check, _, ok := strings.Cut(rest, "]")
	return ok && slices.Contains(f.checks, check)
}

// Flush writes what is left of an unterminated last line.
func (f *warningFilter) Flush() {
	if len(f.partial) > 0 && !f.drop(f.partial) {
		_, _ = f.w.Write(f.partial)
	}
	f.partial = nil
}

// run runs bin with the caller's streams and returns its exit code.
func run(e *env, bin string, args []string) int {
	cmd := exec.CommandContext(e.ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		fmt.Fprintf(e.stderr, "k8s-standin: %s: %v\n", filepath.Base(bin), err)
		return 1
	}
}

// BinariesEnv names the directory of the real binaries, overriding the
// marker file's "binaries" line.
const BinariesEnv = "K8S_STANDIN_BINARIES"

// binariesDir is where the real Kubernetes binaries are on this host.
func binariesDir() (string, error) {
	if d := os.Getenv(BinariesEnv); d != "" {
		return d, nil
	}
	b, err := os.ReadFile(MarkerFile)
	if err != nil {
		return "", fmt.Errorf("k8s-standin: %s: %w (install the stand-in with k8sstandin.Install, or set %s)", MarkerFile, err, BinariesEnv)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "binaries "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("k8s-standin: %s names no binaries directory (reinstall the stand-in)", MarkerFile)
}

// realBinary is the path of a real Kubernetes binary on this host.
func realBinary(name string) (string, error) {
	d, err := binariesDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("k8s-standin: the real %s is missing: %w", name, err)
	}
	return p, nil
}
