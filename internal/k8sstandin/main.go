package k8sstandin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// Main is the multi-call entry point: it behaves as kubeadm (the real one,
// wrapped), kubelet (the stand-in) or kubectl (the real one) depending on the
// name it was called by (argv[0], e.g. the /usr/bin/kubelet symlink), or on
// its first argument when called as k8s-standin.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	name := filepath.Base(args[0])
	rest := args[1:]
	if strings.HasPrefix(name, "k8s-standin") {
		if len(rest) == 0 {
			fmt.Fprintf(stderr, "k8s-standin %s (Kubernetes %s): the kubelet stand-in of the test hosts, and the wrapper of the real kubeadm\n"+
				"usage: k8s-standin {kubeadm|kubelet|kubectl|kuryr-controller|version} [args...]\n", Version, KubernetesVersion)
			return 2
		}
		name, rest = rest[0], rest[1:]
	}
	switch name {
	case "kubeadm":
		return kubeadmMain(e, rest)
	case "kubectl":
		bin, err := realBinary("kubectl")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return run(e, bin, rest)
	case "kubelet":
		if len(rest) > 0 && (rest[0] == "--version" || rest[0] == "version") {
			fmt.Fprintf(stdout, "Kubernetes %s\n", KubernetesVersion)
			return 0
		}
		return runKubelet(ctx, stderr)
	case "kuryr-controller":
		return runKuryrController(ctx, rest, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "k8s-standin %s (Kubernetes %s)\n", Version, KubernetesVersion)
		return 0
	default:
		fmt.Fprintf(stderr, "k8s-standin: unknown personality %q\n", name)
		return 2
	}
}

// Run is Main with the process's own arguments and standard streams.
func Run() int { return Main(os.Args, os.Stdin, os.Stdout, os.Stderr) }
