package ossim_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// rawCreate is a stacks.CreateOptsBuilder sending the template, files and
// parameters as they are (go-libraries.md §4.3).
type rawCreate struct {
	Name     string
	Template any
	Files    map[string]string
	Params   map[string]any
	Rollback bool
}

func (o rawCreate) ToStackCreateMap() (map[string]any, error) {
	return map[string]any{"stack_name": o.Name, "template": o.Template, "files": o.Files,
		"parameters": o.Params, "disable_rollback": !o.Rollback, "timeout_mins": 60}, nil
}

// rawPatch is a PATCH update with parameters only.
type rawPatch map[string]any

func (p rawPatch) ToStackUpdatePatchMap() (map[string]any, error) {
	return map[string]any{"parameters": map[string]any(p)}, nil
}

// tickingClock returns a clock that advances one second per call, so that
// every timestamp is distinct (Heat reports whole seconds).
func tickingClock() func() time.Time {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Second) }
}

type env struct {
	t        *testing.T
	sim      *ossim.Sim
	srv      *httptest.Server
	provider *gophercloud.ProviderClient
	heat     *gophercloud.ServiceClient
	nova     *gophercloud.ServiceClient
	neutron  *gophercloud.ServiceClient
}

func newEnv(t *testing.T, opts ossim.Options) *env {
	t.Helper()
	if opts.Latency == 0 {
		opts.Latency = 5 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = tickingClock()
	}
	sim, err := ossim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim) // 127.0.0.1
	t.Cleanup(func() {
		srv.Close()
		if err := sim.Close(); err != nil {
			t.Errorf("sim close: %v", err)
		}
	})
	e := &env{t: t, sim: sim, srv: srv}
	e.login("admin", "secret")
	return e
}

func (e *env) authURL() string { return e.srv.URL + "/v3" }

func (e *env) login(user, pass string) {
	e.t.Helper()
	ctx := context.Background()
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: e.authURL(), Username: user, Password: pass, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"}, AllowReauth: true})
	if err != nil {
		e.t.Fatalf("auth: %v", err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	e.provider = p
	if e.heat, err = openstack.NewOrchestrationV1(p, eo); err != nil {
		e.t.Fatal(err)
	}
	if e.nova, err = openstack.NewComputeV2(p, eo); err != nil {
		e.t.Fatal(err)
	}
	if e.neutron, err = openstack.NewNetworkV2(p, eo); err != nil {
		e.t.Fatal(err)
	}
}

func readTestdata(t *testing.T, dir string) (string, map[string]string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata", dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	top := files["top.yaml"]
	delete(files, "top.yaml")
	return top, files
}

// nfv is the Tacker "nfv" parameter for the sample HOT.
func nfv(masters int, network string) map[string]any {
	return map[string]any{
		"VDU": map[string]any{
			"masterNode": map[string]any{"flavor": "m1.medium", "image": "ubuntu-20.04", "desired_capacity": masters},
			"workerNode": map[string]any{"flavor": "m1.small", "image": "ubuntu-20.04"},
		},
		"CP": map[string]any{
			"masterNode_CP1": map[string]any{"network": network},
			"workerNode_CP1": map[string]any{"network": network},
			"vip_CP":         map[string]any{"network": network, "fixed_ips": []any{map[string]any{"ip_address": "10.77.0.80"}}},
		},
	}
}

// createTacker creates the Tacker-style stack and waits for it.
func (e *env) createTacker(name string, masters, workers int) (id string) {
	e.t.Helper()
	top, files := readTestdata(e.t, "tacker")
	cs, err := stacks.Create(context.Background(), e.heat, rawCreate{Name: name, Template: top, Files: files,
		Params: map[string]any{"nfv": nfv(masters, "net0"), "worker_instance_desired_capacity": workers}}).Extract()
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	e.wait(name, cs.ID, "CREATE_COMPLETE")
	return cs.ID
}

// wait polls the stack until it leaves *_IN_PROGRESS and checks the status.
func (e *env) wait(name, id, want string) *stacks.RetrievedStack {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := stacks.Get(context.Background(), e.heat, name, id).Extract()
		if err != nil {
			if want == "GONE" && gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				return nil
			}
			e.t.Fatalf("get stack: %v", err)
		}
		if !strings.HasSuffix(st.Status, "_IN_PROGRESS") {
			if st.Status != want {
				e.t.Fatalf("stack %s: status %s (%s), want %s", name, st.Status, st.StatusReason, want)
			}
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("stack %s still %s", name, st.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) resources(name, id string, depth int) []stackresources.Resource {
	e.t.Helper()
	pages, err := stackresources.List(e.heat, name, id, stackresources.ListOpts{Depth: depth}).AllPages(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	rs, err := stackresources.ExtractResources(pages)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func byType(rs []stackresources.Resource, typ string) []stackresources.Resource {
	var out []stackresources.Resource
	for _, r := range rs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

func find(rs []stackresources.Resource, name string) *stackresources.Resource {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

// members returns the member resources of a group (by the group's physical
// id = its nested stack), oldest first as Heat orders them.
func members(rs []stackresources.Resource, group *stackresources.Resource) []stackresources.Resource {
	var out []stackresources.Resource
	for _, r := range rs {
		if r.ParentResource == group.Name && stackIDOf(r) == group.PhysicalID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTime.Equal(out[j].CreationTime) {
			return out[i].CreationTime.Before(out[j].CreationTime)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// stackIDOf returns the id of the stack a listed resource belongs to (from
// its "stack" link).
func stackIDOf(r stackresources.Resource) string {
	for _, l := range r.Links {
		if l.Rel == "stack" {
			return l.Href[strings.LastIndex(l.Href, "/")+1:]
		}
	}
	return ""
}

func stackNameOf(r stackresources.Resource) string {
	for _, l := range r.Links {
		if l.Rel == "stack" {
			parts := strings.Split(l.Href, "/")
			return parts[len(parts)-2]
		}
	}
	return ""
}

func errCode(err error) int {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return e.Actual
	}
	return 0
}

func httpPostJSON(url, body string) (string, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
