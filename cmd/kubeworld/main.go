// Command kubeworld builds the real Kubernetes binaries of the test world
// (internal/kubeworld/kubebin) once per machine:
//
//	kubeworld build   build the pinned binaries into the cache if missing (make kube)
//	kubeworld path    print the cache directory of the pinned binaries
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubeworld build | path")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kubeworld:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string) error {
	switch cmd {
	case "build":
		b, err := kubebin.Ensure(ctx, kubebin.BuildOptions{Progress: os.Stderr})
		if err != nil {
			return err
		}
		fmt.Printf("Kubernetes %s and kwok %s binaries: %s\n", kubebin.KubernetesVersion, kubebin.KwokVersion, b.BinDir())
		return nil
	case "path":
		b, err := kubebin.Cached()
		if err != nil {
			return err
		}
		fmt.Println(b.Dir)
		return nil
	default:
		return fmt.Errorf("unknown command %q (build, path)", cmd)
	}
}
