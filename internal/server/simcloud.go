package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/deps"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/simcloud"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

// SimVimName is the name the embedded simulator is registered under.
const SimVimName = "simulator"

// provisionSimCloud registers the embedded simulator as the default VIM and
// onboards the sample packages, idempotently: on every start of make run
// (a sample whose files changed since replaces its older package when no VNF
// instance uses it).
func provisionSimCloud(ctx context.Context, log *slog.Logger, svc *lcm.Service, pkgs *packages.Service, c *simcloud.Cloud) error {
	vims, err := svc.Vims().List(ctx, store.VimFilter{Names: []string{SimVimName}})
	if err != nil {
		return err
	}
	if len(vims) == 1 && vims[0].AuthURL != c.AuthURL {
		// The simulator came up on another port: replace the registration.
		if err := svc.Vims().Delete(ctx, vims[0].ID); err != nil {
			log.Error("the embedded cloud could not get its old address back, and VNF instances use the VIM registered with it: "+
				"stop what listens there, then restart make run (or set VNFM_SIMULATOR_LISTEN to it)",
				"vim", SimVimName, "registered", vims[0].AuthURL, "now", c.AuthURL, "err", err)
		} else {
			vims = nil
		}
	}
	if len(vims) == 0 {
		if _, err := svc.Vims().Register(ctx, c.VimRegistration(SimVimName), true); err != nil {
			return fmt.Errorf("registering the simulator as a VIM: %w", err)
		}
		log.Info("registered the OpenStack simulator as the default VIM", "name", SimVimName, "authUrl", c.AuthURL)
	}
	for _, name := range append(slices.Clone(samples.Names), samples.CNFNames...) {
		tree, err := samples.Tree(name)
		if err != nil {
			return err
		}
		csar, err := vnfpkg.BuildCSAR(tree)
		if err != nil {
			return fmt.Errorf("sample %s: %w", name, err)
		}
		p, err := vnfpkg.Open(bytes.NewReader(csar), int64(len(csar)), vnfpkg.Options{})
		if err != nil {
			return fmt.Errorf("sample %s: %w", name, err)
		}
		res, detail, err := pkgs.OnboardSample(ctx, name, p.Summary().ID, csar)
		if err != nil {
			var le *lcm.Error
			if errors.As(err, &le) {
				return fmt.Errorf("onboarding sample %s: %s", name, le.Detail)
			}
			return fmt.Errorf("onboarding sample %s: %w", name, err)
		}
		switch res {
		case packages.SampleOnboarded:
			log.Info("onboarding sample package", "sample", name, "vnfdId", p.Summary().ID)
		case packages.SampleReplaced:
			log.Info("onboarding the current version of a sample package in place of the older one no VNF instance used",
				"sample", name, "vnfdId", p.Summary().ID)
		case packages.SampleInUse:
			log.Warn("an older version of a sample package stays onboarded because VNF instances use it; "+
				"terminate and delete them, then restart make run to get the current one",
				"sample", name, "vnfdId", p.Summary().ID, "detail", detail)
		case packages.SampleForeign:
			log.Warn("a sample package is not onboarded: a package of yours carries its vnfdId", "sample", name, "detail", detail)
		}
	}
	return nil
}

// printWelcome tells a newcomer what to do next.
func printWelcome(w io.Writer, endpoint string, c *simcloud.Cloud) {
	var missing string
	if m := c.MissingPackages(); len(m) > 0 {
		missing = "\n  !! " + strings.ReplaceAll(deps.Report(m, os.Geteuid() == 0), "\n", "\n     ") + "\n"
	}
	fmt.Fprintf(w, `
What you can do now (the VNFM brought its own cloud):
  OpenStack simulator  %[2]s/v3 (registered as default VIM %[3]q)
                       %[4]s
  sample packages      onboarded: %[5]s
%[6]s
  make demo                          # the whole lifecycle of the HA cluster, with live progress
  make demo PACKAGE=<sample>         # another sample (make demo PACKAGE=list: what each builds)
  curl -s %[1]s/vnfpkgm/v1/vnf_packages | jq '.[] | {id, vnfdId, onboardingState}'

  Tacker CLI:  export OS_AUTH_TYPE=none OS_ENDPOINT=%[1]s
               openstack vnf package list; openstack vim list; openstack vnflcm list
`, endpoint, c.URL, SimVimName, c.Summary(), strings.Join(append(slices.Clone(samples.Names), samples.CNFNames...), ", "), missing)
}

// standinSetup installs the Kubernetes stand-in into every simulator host, so
// clusters are built with the real kubeadm and control plane (the kubelet is
// the stand-in): the stand-in binary is $K8S_STANDIN_BIN or k8s-standin next to
// the running vnfm (make run builds both), the real Kubernetes binaries come
// from the kubebin cache (make run builds them once; built here if missing).
func standinSetup(log *slog.Logger) func(ctx context.Context, h *testhosts.Host) error {
	bin := os.Getenv(k8sstandin.BinaryEnv)
	if bin == "" {
		if exe, err := os.Executable(); err == nil {
			bin = filepath.Join(filepath.Dir(exe), "k8s-standin")
		}
	}
	if _, err := os.Stat(bin); err != nil {
		log.Warn("no Kubernetes stand-in binary: simulator hosts boot without kubeadm/kubectl (build it with make build)", "looked", bin)
		return nil
	}
	kb, err := kubebin.Ensure(context.Background(), kubebin.BuildOptions{Progress: os.Stderr})
	if err != nil {
		log.Warn("no Kubernetes binaries: simulator hosts boot without kubeadm/kubectl (build them with make kube)", "err", err)
		return nil
	}
	return func(ctx context.Context, h *testhosts.Host) error { return k8sstandin.InstallWith(ctx, h, bin, kb) }
}
