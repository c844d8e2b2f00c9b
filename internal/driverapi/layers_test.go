package driverapi

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mini-vnfm/mini-vnfm/"

// moduleGraph reads the module's packages (non-test files, this platform's
// build constraints) and returns each package's imports inside the module,
// by path relative to the module root ("internal/lcm").
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	g := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		var in []string
		for _, imp := range p.Imports {
			if s, ok := strings.CutPrefix(imp, module); ok {
				in = append(in, s)
			}
		}
		g[rel] = in
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"internal/driverapi", "internal/lcm", "internal/store", "mgmtdrivers/kubeadm"} {
		if _, ok := g[must]; !ok {
			t.Fatalf("package %s not found: the walk of %s is wrong", must, root)
		}
	}
	return g
}

// deps returns every module package pkg depends on, with the import chain
// that reaches each (for the message).
func deps(g map[string][]string, pkg string) map[string][]string {
	chains := map[string][]string{}
	queue := []string{pkg}
	chains[pkg] = []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, seen := chains[q]; !seen {
				chains[q] = append(slices.Clone(chains[p]), q)
				queue = append(queue, q)
			}
		}
	}
	delete(chains, pkg)
	return chains
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// The layers of docs/architecture.md hold: imports run one way, management
// drivers know the contract and no infra driver or other management driver,
// persistence knows no SSH, services below the engine do not import it.
func TestLayersHold(t *testing.T) {
	g := moduleGraph(t)
	rules := []struct {
		from      string // the package and those under it
		forbidden []string
		why       string
	}{
		{"mgmtdrivers", []string{"internal/infra", "internal/lcm", "internal/store", "internal/vims", "internal/server", "api"},
			"management drivers depend on the driverapi contract, never on an infra driver or the engine"},
		{"internal/infra", []string{"mgmtdrivers", "internal/lcm", "internal/store", "internal/vims", "internal/server", "api"},
			"infra drivers depend on the driverapi contract, never on management drivers or the engine"},
		{"internal/store", []string{"internal/remote", "internal/driverapi", "mgmtdrivers", "internal/infra", "internal/lcm"},
			"persistence knows SQL, not SSH or drivers (host key pins use internal/sshpin)"},
		{"internal/packages", []string{"internal/lcm", "internal/server", "api"}, "the package service does not import the engine"},
		{"internal/vims", []string{"internal/lcm", "internal/server", "api", "mgmtdrivers", "internal/infra"}, "the VIM registry does not import the engine or drivers"},
		{"internal/notify", []string{"internal/lcm", "internal/server", "api"}, "notifications do not import the engine"},
		{"internal/lcm", []string{"internal/infra", "internal/server", "api", "internal/remote"},
			"the engine reaches infra drivers only through driverapi, wired by internal/server"},
		{"internal/model", []string{""}, "model is a leaf"},
	}
	for _, r := range rules {
		for pkg := range g {
			if !under(pkg, r.from) {
				continue
			}
			for dep, chain := range deps(g, pkg) {
				for _, f := range r.forbidden {
					if f == "" || under(dep, f) {
						t.Errorf("%s depends on %s (%s): %s", pkg, dep, strings.Join(chain, " → "), r.why)
					}
				}
			}
		}
	}

	// The contract holds types only: it imports model alone.
	for _, imp := range g["internal/driverapi"] {
		if imp != "internal/model" {
			t.Errorf("internal/driverapi imports %s: the contract imports internal/model only", imp)
		}
	}

	// A management driver imports the contract, SSH, the model and the
	// shared Kubernetes parts (mgmtdrivers/kube and its packages, such as
	// kube/kuryr) — never another management driver.
	allowed := []string{"internal/driverapi", "internal/model", "internal/remote", "mgmtdrivers", "mgmtdrivers/kube"}
	for pkg, imps := range g {
		if !under(pkg, "mgmtdrivers") {
			continue
		}
		for _, imp := range imps {
			if !slices.Contains(allowed, imp) && !under(imp, "mgmtdrivers/kube") {
				t.Errorf("%s imports %s: a management driver imports only %s", pkg, imp, strings.Join(allowed, ", "))
			}
		}
	}
}

// The contract's types have no field of type any: requests and everything
// a driver is handed are typed.
func TestContractFieldsAreTyped(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			checked++
			for _, fld := range st.Fields.List {
				if untyped(fld.Type) {
					t.Errorf("%s: %s.%v is of type any: give the contract a typed field", fset.Position(fld.Pos()), ts.Name.Name, fieldNames(fld))
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("only %d struct types found in driverapi: the check reads the wrong files", checked)
	}
}

func untyped(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "any"
	case *ast.InterfaceType:
		return len(t.Methods.List) == 0
	case *ast.StarExpr:
		return untyped(t.X)
	}
	return false
}

func fieldNames(f *ast.Field) []string {
	var out []string
	for _, n := range f.Names {
		out = append(out, n.Name)
	}
	return out
}
