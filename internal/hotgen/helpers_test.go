package hotgen

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"
	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
)

// vnfdOf onboards a package tree (a sample, or a variant of one).
func vnfdOf(t *testing.T, tree fs.FS) (*model.Vnfd, error) {
	t.Helper()
	b, err := vnfpkg.BuildCSAR(tree)
	if err != nil {
		t.Fatal(err)
	}
	p, err := vnfpkg.Open(bytes.NewReader(b), int64(len(b)), vnfpkg.Options{})
	if err != nil {
		return nil, err
	}
	return p.Summary(), nil
}

func sample(t *testing.T, name, flavour string) *model.Flavour {
	t.Helper()
	v, err := vnfdOf(t, os.DirFS("../../samples/"+name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	fl := v.Flavours[flavour]
	if fl == nil {
		t.Fatalf("%s has no flavour %s", name, flavour)
	}
	return fl
}

// heatDoc is a parsed template.
type heatDoc struct {
	Parameters map[string]map[string]any `yaml:"parameters"`
	Resources  map[string]struct {
		Type       string         `yaml:"type"`
		DependsOn  []string       `yaml:"depends_on"`
		Properties map[string]any `yaml:"properties"`
	} `yaml:"resources"`
}

func parseDoc(t *testing.T, name, src string) heatDoc {
	t.Helper()
	var d heatDoc
	if err := yaml.Unmarshal([]byte(src), &d); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, src)
	}
	return d
}

// refs walks a value for Heat function references.
func refs(v any, f func(fn string, arg any)) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 1 {
			for k, a := range t {
				if k == "get_param" || k == "get_resource" || k == "get_attr" {
					f(k, a)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			refs(t[k], f)
		}
	case []any:
		for _, e := range t {
			refs(e, f)
		}
	}
}

// checkTemplate checks what Heat would refuse: every get_param names a
// declared parameter, every get_resource/get_attr/depends_on an existing
// resource, no dependency cycle, every nested type is a given file whose
// parameters the group member supplies (all of them, none more).
func checkTemplate(t *testing.T, tpl *Template) heatDoc {
	t.Helper()
	top := parseDoc(t, "top", tpl.Top)
	check := func(name string, d heatDoc) {
		deps := map[string][]string{}
		for rn, r := range d.Resources {
			deps[rn] = append(deps[rn], r.DependsOn...)
			refs(r.Properties, func(fn string, arg any) {
				switch fn {
				case "get_param":
					p := fmt.Sprint(arg)
					if l, ok := arg.([]any); ok {
						p = fmt.Sprint(l[0])
					}
					if _, ok := d.Parameters[p]; !ok {
						t.Errorf("%s: %s reads undeclared parameter %q", name, rn, p)
					}
				case "get_resource":
					deps[rn] = append(deps[rn], fmt.Sprint(arg))
				case "get_attr":
					deps[rn] = append(deps[rn], fmt.Sprint(arg.([]any)[0]))
				}
			})
		}
		for rn, ds := range deps {
			for _, x := range ds {
				if _, ok := d.Resources[x]; !ok {
					t.Errorf("%s: %s refers to missing resource %q", name, rn, x)
				}
			}
		}
		// Kahn: every resource can be ordered.
		indeg := map[string]int{}
		users := map[string][]string{}
		for rn, ds := range deps {
			indeg[rn] += len(ds)
			for _, d := range ds {
				users[d] = append(users[d], rn)
			}
		}
		var ready []string
		for rn := range d.Resources {
			if indeg[rn] == 0 {
				ready = append(ready, rn)
			}
		}
		done := 0
		for len(ready) > 0 {
			x := ready[len(ready)-1]
			ready = ready[:len(ready)-1]
			done++
			for _, u := range users[x] {
				if indeg[u]--; indeg[u] == 0 {
					ready = append(ready, u)
				}
			}
		}
		if done != len(d.Resources) {
			t.Errorf("%s: dependency cycle among resources %v", name, indeg)
		}
	}
	check("top", top)
	for rn, r := range top.Resources {
		if r.Type != "OS::Heat::AutoScalingGroup" {
			continue
		}
		member, _ := r.Properties["resource"].(map[string]any)
		file, _ := member["type"].(string)
		src, ok := tpl.Files[file]
		if !ok {
			t.Errorf("group %s: member type %q is not among the files %v", rn, file, slices.Sorted(maps.Keys(tpl.Files)))
			continue
		}
		nd := parseDoc(t, file, src)
		check(file, nd)
		props, _ := member["properties"].(map[string]any)
		for p, spec := range nd.Parameters {
			if _, ok := props[p]; !ok && spec["default"] == nil {
				t.Errorf("group %s does not give %s its parameter %s", rn, file, p)
			}
		}
		for p := range props {
			if _, ok := nd.Parameters[p]; !ok {
				t.Errorf("group %s gives %s the undeclared parameter %s", rn, file, p)
			}
		}
	}
	return top
}

// cloud is an OpenStack simulator with a Heat client.
type cloud struct {
	t       *testing.T
	sim     *ossim.Sim
	heat    *gophercloud.ServiceClient
	neutron *gophercloud.ServiceClient
}

const (
	net0ID   = "11111111-0000-4000-8000-000000000000"
	publicID = "22222222-0000-4000-8000-000000000000"
)

func newCloud(t *testing.T) *cloud {
	t.Helper()
	sim, err := ossim.New(ossim.Options{Latency: 2 * time.Millisecond, Networks: []ossim.NetworkSpec{
		{Name: "net0", ID: net0ID, CIDR: "10.77.0.0/24", Shared: true},
		{Name: "public", ID: publicID, CIDR: "10.77.100.0/24", External: true, Shared: true}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	ctx := context.Background()
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: srv.URL + "/v3", Username: "admin", Password: "secret",
		DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &cloud{t: t, sim: sim}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	if c.heat, err = openstack.NewOrchestrationV1(p, eo); err != nil {
		t.Fatal(err)
	}
	if c.neutron, err = openstack.NewNetworkV2(p, eo); err != nil {
		t.Fatal(err)
	}
	return c
}

type rawBody map[string]any

func (r rawBody) ToStackCreateMap() (map[string]any, error)      { return r, nil }
func (r rawBody) ToStackUpdatePatchMap() (map[string]any, error) { return r, nil }

// deploy creates a stack from the templates and waits for CREATE_COMPLETE.
func (c *cloud) deploy(name string, tpl *Template, params map[string]any) string {
	c.t.Helper()
	ctx := context.Background()
	cs, err := stacks.Create(ctx, c.heat, rawBody{"stack_name": name, "template": tpl.Top, "files": tpl.Files, "parameters": params,
		"disable_rollback": true}).Extract()
	if err != nil {
		c.t.Fatalf("create stack: %v", err)
	}
	c.wait(name, cs.ID, "CREATE_COMPLETE")
	return cs.ID
}

func (c *cloud) wait(name, id, want string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := stacks.Get(context.Background(), c.heat, name, id).Extract()
		if err != nil {
			c.t.Fatal(err)
		}
		if st.Status == want {
			return
		}
		if !strings.HasSuffix(st.Status, "IN_PROGRESS") || time.Now().After(deadline) {
			c.t.Fatalf("stack %s: %s (%s), want %s", name, st.Status, st.StatusReason, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *cloud) patch(name, id string, params map[string]any) {
	c.t.Helper()
	if err := stacks.UpdatePatch(context.Background(), c.heat, name, id, rawBody{"parameters": params}).ExtractErr(); err != nil {
		c.t.Fatal(err)
	}
	c.wait(name, id, "UPDATE_COMPLETE")
}

func (c *cloud) resources(name, id string) []stackresources.Resource {
	c.t.Helper()
	pages, err := stackresources.List(c.heat, name, id, stackresources.ListOpts{Depth: 3}).AllPages(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	rs, err := stackresources.ExtractResources(pages)
	if err != nil {
		c.t.Fatal(err)
	}
	return rs
}

func (c *cloud) port(id string) *ports.Port {
	c.t.Helper()
	p, err := ports.Get(context.Background(), c.neutron, id).Extract()
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *cloud) subnet(id string) *subnets.Subnet {
	c.t.Helper()
	s, err := subnets.Get(context.Background(), c.neutron, id).Extract()
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// count counts resources of a type (and name, if given).
func count(rs []stackresources.Resource, typ, name string) int {
	n := 0
	for _, r := range rs {
		if r.Type == typ && (name == "" || r.Name == name) {
			n++
		}
	}
	return n
}

func problemsOf(t *testing.T, err error) map[string][]string {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("want *hotgen.Error, got %T %v", err, err)
	}
	out := map[string][]string{}
	for _, p := range e.Problems {
		out[p.Node] = append(out[p.Node], p.Detail)
	}
	return out
}

// wantProblem checks that node has a problem containing text.
func wantProblem(t *testing.T, probs map[string][]string, node, text string) {
	t.Helper()
	for _, d := range probs[node] {
		if strings.Contains(d, text) {
			return
		}
	}
	t.Errorf("no problem %q for %s; problems: %v", text, node, probs)
}
