package osworld_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

// baseHOTs finds every BaseHOT flavour directory of a package tree: its
// top templates (*.yaml directly inside) with the nested templates
// (nested/*.yaml, by base name, as the driver sends them in "files").
func baseHOTs(t *testing.T, tree fs.FS) map[string]struct {
	top   string
	files map[string]string
} {
	t.Helper()
	out := map[string]struct {
		top   string
		files map[string]string
	}{}
	flavours, err := fs.Glob(tree, "BaseHOT/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range flavours {
		files := map[string]string{}
		nested, _ := fs.Glob(tree, fl+"/nested/*.yaml")
		for _, n := range nested {
			b, err := fs.ReadFile(tree, n)
			if err != nil {
				t.Fatal(err)
			}
			files[path.Base(n)] = string(b)
		}
		tops, _ := fs.Glob(tree, fl+"/*.yaml")
		for _, top := range tops {
			b, err := fs.ReadFile(tree, top)
			if err != nil {
				t.Fatal(err)
			}
			out[top] = struct {
				top   string
				files map[string]string
			}{string(b), files}
		}
	}
	return out
}

// validate asks real Heat to validate a template. A group's member
// template is not validated with the top template (Heat instantiates it
// only on create), so every nested template is validated on its own too.
func validate(t *testing.T, w *osworld.World, tn osworld.Tenant, name, top string, files map[string]string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := w.ValidateTemplate(ctx, tn, top, files)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, ok := out["Parameters"]; !ok {
		t.Fatalf("%s: validate answered without Parameters: %v", name, out)
	}
	for n, body := range files {
		if _, err := w.ValidateTemplate(ctx, tn, body, files); err != nil {
			return fmt.Errorf("%s: nested %s: %w", name, n, err)
		}
	}
	return nil
}

func validateAll(t *testing.T, w *osworld.World, tn osworld.Tenant, name string, tree fs.FS) int {
	t.Helper()
	n := 0
	for top, h := range baseHOTs(t, tree) {
		n++
		t.Run(name+"/"+top, func(t *testing.T) {
			if err := validate(t, w, tn, top, h.top, h.files); err != nil {
				t.Fatalf("real Heat refuses it: %v", err)
			}
		})
	}
	return n
}

// TestRealHeatValidatesSampleBaseHOTs: every BaseHOT of our sample packages
// passes real Heat's template-validate, as do the shapes of Tacker's sample
// BaseHOTs (testdata/tacker-shapes: the constructs Tacker's samples use —
// nested VDU templates with volumes and volume types, nfv json parameter
// paths, networks, subnets, routers, floating IPs, server groups, flavors,
// scaling policies — written for this test).
func TestRealHeatValidatesSampleBaseHOTs(t *testing.T) {
	w := osworld.Shared(t, pgtest.Cluster())
	tn := w.Tenant(t)
	sim, err := ossim.New(w.SimOptions(tn, ossim.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	w.Serve(tn.ProjectID, sim)
	total := 0
	// Every package under samples/ (not only those make run onboards).
	pkgs, err := filepath.Glob("../../samples/*/BaseHOT")
	if err != nil || len(pkgs) == 0 {
		t.Fatalf("no sample BaseHOT found (%v)", err)
	}
	for _, dir := range pkgs {
		name := filepath.Base(filepath.Dir(dir))
		got := validateAll(t, w, tn, name, os.DirFS(filepath.Dir(dir)))
		if got == 0 {
			t.Errorf("sample %s has no BaseHOT", name)
		}
		total += got
	}
	total += validateAll(t, w, tn, "tacker-shapes", os.DirFS("testdata/tacker-shapes"))
	// TACKER_SAMPLES names a checkout of openstack/tacker: every BaseHOT of
	// its samples is validated too (not vendored here: Tacker's code is not
	// ours to commit).
	if dir := os.Getenv("TACKER_SAMPLES"); dir != "" {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() != "BaseHOT" {
				return err
			}
			pkg := filepath.Dir(p)
			rel, _ := filepath.Rel(dir, pkg)
			total += validateAll(t, w, tn, "tacker/"+strings.ReplaceAll(rel, "/", "_"), os.DirFS(pkg))
			return filepath.SkipDir
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d BaseHOTs validated by real Heat", total)

	// The check can fail: a misspelt property in a member template, which
	// the simulator's Heat would have ignored.
	tree, _ := samples.Tree("kubeadm-ha")
	for top, h := range baseHOTs(t, tree) {
		files := map[string]string{}
		for k, v := range h.files {
			files[k] = strings.Replace(v, "allowed_address_pairs:", "allowed_adress_pairs:", 1)
		}
		err := validate(t, w, tn, top, h.top, files)
		if err == nil || !strings.Contains(err.Error(), "Unknown Property allowed_adress_pairs") {
			t.Errorf("a misspelt property in a member template: %v, want Heat's Unknown Property", err)
		}
	}
}
