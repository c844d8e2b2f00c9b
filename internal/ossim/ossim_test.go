package ossim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, ossim.Options{
		TokenTTL: time.Hour,
		Accounts: []ossim.Account{
			{UserName: "admin", Password: "secret", ProjectName: "admin", ProjectID: "p-admin"},
			{UserName: "demo", Password: "demo", ProjectName: "demo", DomainName: "Users", DomainID: "users"},
		},
	})
	ctx := context.Background()
	cases := []struct {
		name string
		opts gophercloud.AuthOptions
		ok   bool
	}{
		{"names", gophercloud.AuthOptions{Username: "admin", Password: "secret", DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"}}, true},
		{"project id", gophercloud.AuthOptions{Username: "admin", Password: "secret", DomainID: "default",
			Scope: &gophercloud.AuthScope{ProjectID: "p-admin"}}, true},
		{"user domain", gophercloud.AuthOptions{Username: "demo", Password: "demo", DomainName: "Users",
			Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainID: "default"}}, true},
		{"wrong password", gophercloud.AuthOptions{Username: "admin", Password: "nope", DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"}}, false},
		{"wrong domain", gophercloud.AuthOptions{Username: "demo", Password: "demo", DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainID: "default"}}, false},
		{"other project", gophercloud.AuthOptions{Username: "admin", Password: "secret", DomainName: "Default",
			Scope: &gophercloud.AuthScope{ProjectName: "demo", DomainName: "Default"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.IdentityEndpoint = e.authURL()
			p, err := openstack.AuthenticatedClient(ctx, c.opts)
			if c.ok != (err == nil) {
				t.Fatalf("auth err = %v, want ok=%v", err, c.ok)
			}
			if !c.ok {
				if errCode(err) != 401 {
					t.Errorf("error code %d (%v), want 401", errCode(err), err)
				}
				return
			}
			// The catalog points back at this listener.
			for _, f := range []func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error){
				openstack.NewOrchestrationV1, openstack.NewComputeV2, openstack.NewNetworkV2} {
				sc, err := f(p, gophercloud.EndpointOpts{Region: "RegionOne"})
				if err != nil || !strings.HasPrefix(sc.Endpoint, e.srv.URL) {
					t.Errorf("endpoint %v %v", sc, err)
				}
			}
		})
	}

	// Unversioned auth URL: discovery through GET / (300 Multiple Choices).
	if _, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.srv.URL + "/",
		Username: "admin", Password: "secret", DomainName: "Default", TenantName: "admin"}); err != nil {
		t.Errorf("unversioned endpoint: %v", err)
	}

	// Every service request needs a valid token.
	for _, u := range []string{"/v1/p-admin/stacks", "/compute/v2.1/servers", "/networking/v2.0/ports"} {
		resp, err := http.Get(e.srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("GET %s without token: %d", u, resp.StatusCode)
		}
		req, _ := http.NewRequest("GET", e.srv.URL+u, nil)
		req.Header.Set("X-Auth-Token", "bogus")
		resp, _ = http.DefaultClient.Do(req)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("GET %s with bogus token: %d", u, resp.StatusCode)
		}
	}

	// Token validation through the identity client.
	idc, err := openstack.NewIdentityV3(e.provider, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := tokens.Get(ctx, idc, e.provider.Token()).ExtractUser()
	if err != nil || u.Name != "admin" {
		t.Errorf("tokens.Get: %+v %v", u, err)
	}
	if _, err := tokens.Get(ctx, idc, "nope").ExtractUser(); errCode(err) != 404 {
		t.Errorf("tokens.Get of a bogus token: %v", err)
	}

	// Revoked tokens: gophercloud re-authenticates on the 401.
	if _, err := networks.List(e.neutron, nil).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
	before := e.provider.Token()
	e.sim.RevokeTokens()
	if _, err := networks.List(e.neutron, nil).AllPages(ctx); err != nil {
		t.Fatalf("request after revoke (reauth expected): %v", err)
	}
	if e.provider.Token() == before {
		t.Error("token did not change after reauth")
	}
	// Refused auth: the reauth fails too.
	e.sim.SetFaults(ossim.Faults{RefuseAuth: true})
	e.sim.RevokeTokens()
	if _, err := networks.List(e.neutron, nil).AllPages(ctx); err == nil {
		t.Error("request succeeded while auth is refused")
	}
	e.sim.SetFaults(ossim.Faults{})
}

func TestTokenExpiry(t *testing.T) {
	e := newEnv(t, ossim.Options{TokenTTL: time.Second})
	ctx := context.Background()
	tok := e.provider.Token()
	time.Sleep(1100 * time.Millisecond)
	if _, err := networks.List(e.neutron, nil).AllPages(ctx); err != nil {
		t.Fatalf("reauth after expiry: %v", err)
	}
	if e.provider.Token() == tok {
		t.Error("expired token still in use")
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/networking/v2.0/networks", nil)
	req.Header.Set("X-Auth-Token", tok)
	resp, _ := http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("expired token: %d", resp.StatusCode)
	}
}

func TestTackerStack(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	id := e.createTacker("vnflcm_tacker1", 1, 2)

	// Find by name: 302 to /stacks/{name}/{id}, followed by the client.
	st, err := stacks.Find(ctx, e.heat, "vnflcm_tacker1").Extract()
	if err != nil || st.ID != id || st.Status != "CREATE_COMPLETE" {
		t.Fatalf("find: %+v %v", st, err)
	}
	if st, err := stacks.Find(ctx, e.heat, id).Extract(); err != nil || st.Name != "vnflcm_tacker1" {
		t.Fatalf("find by id: %v", err)
	}
	req, _ := http.NewRequest("GET", e.heat.ServiceURL("stacks", "vnflcm_tacker1"), nil)
	req.Header.Set("X-Auth-Token", e.provider.Token())
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || resp.Header.Get("Location") != e.heat.ServiceURL("stacks", "vnflcm_tacker1", id) {
		t.Errorf("find redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if st.Parameters["worker_instance_desired_capacity"] != "2" || st.Parameters["login_password"] != "******" ||
		!strings.Contains(st.Parameters["nfv"], `"masterNode"`) || st.Parameters["OS::stack_id"] != id {
		t.Errorf("parameters: %v", st.Parameters)
	}
	if _, err := stacks.Find(ctx, e.heat, "nope").Extract(); errCode(err) != 404 {
		t.Errorf("find missing: %v", err)
	}

	// Resources: depth 0 = top stack only; depth 2 reaches the servers.
	top := e.resources("vnflcm_tacker1", id, 0)
	if len(top) != 6 {
		t.Errorf("top-level resources: %d", len(top))
	}
	all := e.resources("vnflcm_tacker1", id, 2)
	srvs := byType(all, "OS::Nova::Server")
	if len(srvs) != 3 {
		t.Fatalf("servers at depth 2: %d", len(srvs))
	}
	wg := find(all, "worker_instance")
	if wg == nil || wg.Status != "CREATE_COMPLETE" || wg.PhysicalID == "" {
		t.Fatalf("worker group: %+v", wg)
	}
	wm := members(all, wg)
	if len(wm) != 2 {
		t.Fatalf("worker members: %d", len(wm))
	}
	for _, m := range wm {
		if len(m.Name) != 12 || !strings.HasSuffix(m.Type, "workerNode.yaml") || m.ParentResource != "worker_instance" {
			t.Errorf("member: %+v", m)
		}
	}
	for _, s := range srvs {
		if s.Status != "CREATE_COMPLETE" || s.PhysicalID == "" || s.ParentResource == "" {
			t.Errorf("server resource: %+v", s)
		}
	}

	// Nova: servers with addresses on net0, metadata, ACTIVE.
	pages, err := servers.List(e.nova, servers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svs, err := servers.ExtractServers(pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(svs) != 3 {
		t.Fatalf("nova servers: %d", len(svs))
	}
	ips := map[string]bool{}
	for _, sv := range svs {
		addrs, _ := sv.Addresses["net0"].([]any)
		if sv.Status != "ACTIVE" || len(addrs) != 1 {
			t.Errorf("server %s: %s %v", sv.Name, sv.Status, sv.Addresses)
			continue
		}
		ip := addrs[0].(map[string]any)["addr"].(string)
		ips[ip] = true
		if sv.Name == "masterNode" && (sv.Metadata["role"] != "master" || sv.Flavor["id"] != "3") {
			t.Errorf("master: %+v", sv)
		}
	}
	// Outputs list the same addresses.
	outs := map[string]any{}
	for _, o := range st.Outputs {
		outs[o["output_key"].(string)] = o["output_value"]
	}
	if outs["vip"] != "10.77.0.80" || len(outs["worker_ips"].([]any)) != 2 {
		t.Errorf("outputs: %v", outs)
	}
	for _, ip := range append(outs["worker_ips"].([]any), outs["master_ips"].([]any)...) {
		if !ips[ip.(string)] {
			t.Errorf("output ip %v is no server's", ip)
		}
	}

	// Neutron: the master's port carries the VIP in allowed_address_pairs.
	master := find(all, "masterNode")
	pp, err := ports.List(e.neutron, ports.ListOpts{DeviceID: master.PhysicalID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := ports.ExtractPorts(pp)
	if len(pl) != 1 || len(pl[0].AllowedAddressPairs) != 1 || pl[0].AllowedAddressPairs[0].IPAddress != "10.77.0.80" ||
		pl[0].DeviceOwner != "compute:nova" || pl[0].Status != "ACTIVE" || !strings.HasPrefix(pl[0].MACAddress, "fa:16:3e:") {
		t.Errorf("master port: %+v", pl)
	}

	// Server show and the console log with the host keys.
	sv, err := servers.Get(ctx, e.nova, master.PhysicalID).Extract()
	if err != nil || sv.Name != "masterNode" {
		t.Fatalf("server get: %v", err)
	}
	out, err := servers.ShowConsoleOutput(ctx, e.nova, sv.ID, servers.ShowConsoleOutputOpts{Length: 200}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fps, keys := ossim.ConsoleHostKeys(out)
	info := e.sim.Servers()
	var si ossim.ServerInfo
	for _, x := range info {
		if x.ID == sv.ID {
			si = x
		}
	}
	if len(fps) != 2 || len(keys) != 2 || !slices.Contains(fps, si.HostKeyFingerprints[0]) || !strings.Contains(out, "-----BEGIN SSH HOST KEY FINGERPRINTS-----") {
		t.Errorf("console host keys %v %v vs %v\n%s", fps, keys, si.HostKeyFingerprints, out)
	}

	// Resource show: a port's attributes and a nested server's.
	mstack := stackNameOf(*master)
	r, err := stackresources.Get(ctx, e.heat, mstack, stackIDOf(*master), "masterNode_CP1").Extract()
	if err != nil {
		t.Fatal(err)
	}
	if fixed, _ := r.Attributes["fixed_ips"].([]any); len(fixed) != 1 || r.ParentResource == "" {
		t.Errorf("port resource: %+v", r)
	}
	r, err = stackresources.Get(ctx, e.heat, mstack, stackIDOf(*master), "masterNode").Extract()
	if err != nil || r.Attributes["first_address"] == "" || r.PhysicalID != sv.ID {
		t.Errorf("server resource: %+v %v", r, err)
	}
	// Stack list shows only the top-level stack; events exist.
	lp, _ := stacks.List(e.heat, nil).AllPages(ctx)
	ls, _ := stacks.ExtractStacks(lp)
	if len(ls) != 1 || ls[0].Name != "vnflcm_tacker1" {
		t.Errorf("stack list: %+v", ls)
	}
}

func TestScaleOldestFirst(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	name := "vnflcm_scale"
	id := e.createTacker(name, 1, 2)
	grp := func() (*stackresources.Resource, []stackresources.Resource) {
		all := e.resources(name, id, 2)
		g := find(all, "worker_instance")
		return g, members(all, g)
	}
	_, before := grp()

	// Scale out 2 → 3: the two members stay, one is added.
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 3}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	_, after := grp()
	if len(after) != 3 || after[0].Name != before[0].Name || after[1].Name != before[1].Name {
		t.Fatalf("scale out: before %v after %v", names(before), names(after))
	}
	if after[2].Status != "CREATE_COMPLETE" {
		t.Errorf("new member %+v", after[2])
	}

	// Scale in 3 → 1: the two oldest go.
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 1}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	st := e.wait(name, id, "UPDATE_COMPLETE")
	_, left := grp()
	if len(left) != 1 || left[0].Name != after[2].Name {
		t.Errorf("scale in kept %v, want the newest %s", names(left), after[2].Name)
	}
	if st.Parameters["worker_instance_desired_capacity"] != "1" || !strings.Contains(st.Parameters["nfv"], "masterNode") {
		t.Errorf("PATCH must merge parameters: %v", st.Parameters)
	}
	pages, _ := servers.List(e.nova, nil).AllPages(ctx)
	svs, _ := servers.ExtractServers(pages)
	if len(svs) != 2 {
		t.Errorf("servers after scale in: %d", len(svs))
	}

	// Reverse scale-in the Tacker way: mark the newest member unhealthy and
	// lower the capacity; the marked one goes although it is the newest.
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 3}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	g, three := grp()
	newest := three[2]
	if err := stackresources.MarkUnhealthy(ctx, e.heat, stackNameOf(newest), g.PhysicalID, newest.Name,
		stackresources.MarkUnhealthyOpts{MarkUnhealthy: true, ResourceStatusReason: "Scale"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 2}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	_, two := grp()
	if len(two) != 2 || slices.Contains(names(two), newest.Name) {
		t.Errorf("reverse scale in kept %v; marked %s", names(two), newest.Name)
	}

	// Out of bounds → the update fails with Heat's reason.
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 9}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	st = e.wait(name, id, "UPDATE_FAILED")
	if !strings.Contains(st.StatusReason, "desired_capacity must be between min_size and max_size") {
		t.Errorf("reason: %s", st.StatusReason)
	}
}

func names(rs []stackresources.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestHealReplacesServerKeepsPort(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	name := "vnflcm_heal"
	id := e.createTacker(name, 2, 1)
	all := e.resources(name, id, 2)
	var m stackresources.Resource
	for _, r := range byType(all, "OS::Nova::Server") {
		if r.Name == "masterNode" {
			m = r
			break
		}
	}
	oldID := m.PhysicalID
	oldSv, _ := servers.Get(ctx, e.nova, oldID).Extract()
	oldAddr := oldSv.Addresses["net0"].([]any)[0].(map[string]any)["addr"]
	memberStack, memberID := stackNameOf(m), stackIDOf(m)

	if err := stackresources.MarkUnhealthy(ctx, e.heat, memberStack, memberID, "masterNode",
		stackresources.MarkUnhealthyOpts{MarkUnhealthy: true, ResourceStatusReason: "Healing"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	r, _ := stackresources.Get(ctx, e.heat, memberStack, memberID, "masterNode").Extract()
	if r.Status != "CHECK_FAILED" || r.StatusReason != "Healing" {
		t.Errorf("marked: %s %s", r.Status, r.StatusReason)
	}
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	r, err := stackresources.Get(ctx, e.heat, memberStack, memberID, "masterNode").Extract()
	if err != nil || r.PhysicalID == oldID || r.Status != "CREATE_COMPLETE" {
		t.Fatalf("after heal: %+v %v", r, err)
	}
	sv, err := servers.Get(ctx, e.nova, r.PhysicalID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if addr := sv.Addresses["net0"].([]any)[0].(map[string]any)["addr"]; addr != oldAddr {
		t.Errorf("address changed %v → %v", oldAddr, addr)
	}
	if _, err := servers.Get(ctx, e.nova, oldID).Extract(); errCode(err) != 404 {
		t.Errorf("old server still there: %v", err)
	}
	// The other master and the workers were left alone.
	after := e.resources(name, id, 2)
	for _, x := range byType(all, "OS::Nova::Server") {
		if x.PhysicalID != oldID && find(after, x.Name) == nil {
			t.Errorf("%s vanished", x.Name)
		}
	}
	n := 0
	for _, x := range byType(after, "OS::Nova::Server") {
		if x.PhysicalID == oldID {
			t.Error("old server id still listed")
		}
		n++
	}
	if n != 3 {
		t.Errorf("servers after heal: %d", n)
	}
}

func TestDeleteStack(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	id := e.createTacker("vnflcm_del", 1, 1)
	if err := stacks.Delete(ctx, e.heat, "vnflcm_del", id).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	st, _ := stacks.Get(ctx, e.heat, "vnflcm_del", id).Extract()
	if st == nil || (st.Status != "DELETE_IN_PROGRESS" && st.Status != "DELETE_COMPLETE") {
		t.Errorf("right after delete: %+v", st)
	}
	e.wait("vnflcm_del", id, "DELETE_COMPLETE")
	if _, err := stacks.Find(ctx, e.heat, "vnflcm_del").Extract(); errCode(err) != 404 {
		t.Errorf("find after delete: %v", err)
	}
	if rs := e.resources("vnflcm_del", id, 2); len(rs) != 0 {
		t.Errorf("resources after delete: %d", len(rs))
	}
	pages, _ := servers.List(e.nova, nil).AllPages(ctx)
	if svs, _ := servers.ExtractServers(pages); len(svs) != 0 {
		t.Errorf("servers after delete: %d", len(svs))
	}
	pp, _ := ports.List(e.neutron, nil).AllPages(ctx)
	if pl, _ := ports.ExtractPorts(pp); len(pl) != 0 {
		t.Errorf("ports after delete: %d", len(pl))
	}
	if err := stacks.Delete(ctx, e.heat, "vnflcm_del", id).ExtractErr(); errCode(err) != 404 {
		t.Errorf("second delete: %v", err)
	}
	// The name can be used again.
	e.createTacker("vnflcm_del", 1, 1)
}

const simpleTemplate = `
heat_template_version: 2018-08-31
parameters:
  count: {type: number, default: 1}
resources:
  port:
    type: OS::Neutron::Port
    properties: {network: net0}
  server:
    type: OS::Nova::Server
    properties:
      flavor: m1.tiny
      image: cirros
      networks: [{port: {get_resource: port}}]
  %s
outputs:
  ip: {value: {get_attr: [server, first_address]}}
`

func TestFailures(t *testing.T) {
	cases := []struct {
		name     string
		extra    string
		faults   ossim.Faults
		rollback bool
		status   string
		reason   string
	}{
		{name: "unknown type", extra: "bad: {type: OS::Foo::Bar}", status: "CREATE_FAILED",
			reason: "Resource CREATE failed: ResourceTypeNotFound: resources.bad: The Resource Type (OS::Foo::Bar) could not be found."},
		{name: "missing nested template", extra: "bad: {type: nowhere.yaml}", status: "CREATE_FAILED",
			reason: `Resource CREATE failed: NotFound: resources.bad: Could not fetch remote template "nowhere.yaml"`},
		{name: "server fault", faults: ossim.Faults{FailResources: []ossim.ResourceFault{{Type: "OS::Nova::Server"}}}, status: "CREATE_FAILED",
			reason: `Resource CREATE failed: ResourceInError: resources.server: Went to status ERROR due to "Message: No valid host was found. There are not enough hosts available., Code: 500"`},
		{name: "port fault by name", faults: ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "port", Message: "boom"}}}, status: "CREATE_FAILED",
			reason: "Resource CREATE failed: InternalServerError: resources.port: boom"},
		{name: "quota", faults: ossim.Faults{MaxServers: 1}, extra: "server2: {type: OS::Nova::Server, properties: {flavor: m1.tiny, image: x, networks: [{network: net1}]}}",
			status: "CREATE_FAILED", reason: "Forbidden: resources.server"},
		{name: "bad flavor", extra: "s3: {type: OS::Nova::Server, properties: {flavor: m9.huge, image: x}}", status: "CREATE_FAILED",
			reason: "Resource CREATE failed: BadRequest: resources.s3: Flavor m9.huge could not be found. (HTTP 400)"},
		{name: "ip taken", extra: "p2: {type: OS::Neutron::Port, properties: {network: net0, fixed_ips: [{ip_address: 10.77.0.1}]}}", status: "CREATE_FAILED",
			reason: "IpAddressAlreadyAllocated: resources.p2: IP address 10.77.0.1 already allocated"},
		{name: "unknown property", extra: "p3: {type: OS::Neutron::Port, properties: {network: net0, colour: blue}}", status: "CREATE_FAILED",
			reason: "StackValidationFailed: resources.p3: Property error: OS::Neutron::Port.properties: Unknown Property colour"},
		{name: "rollback", rollback: true, faults: ossim.Faults{FailResources: []ossim.ResourceFault{{Type: "OS::Nova::Server", Message: "nope"}}},
			status: "ROLLBACK_COMPLETE", reason: "Stack ROLLBACK completed successfully"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, ossim.Options{Faults: c.faults})
			ctx := context.Background()
			cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "s1", Template: fmt.Sprintf(simpleTemplate, c.extra), Rollback: c.rollback}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			var st *stacks.RetrievedStack
			for {
				st, err = stacks.Get(ctx, e.heat, "s1", cs.ID).Extract()
				if err != nil {
					t.Fatal(err)
				}
				if st.Status == c.status || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if st.Status != c.status || !strings.Contains(st.StatusReason, c.reason) {
				t.Errorf("status %s reason %q; want %s, %q", st.Status, st.StatusReason, c.status, c.reason)
			}
			if c.rollback {
				pages, _ := servers.List(e.nova, nil).AllPages(ctx)
				if svs, _ := servers.ExtractServers(pages); len(svs) != 0 {
					t.Errorf("servers left after rollback: %d", len(svs))
				}
			}
		})
	}
}

func TestFailureInNestedMember(t *testing.T) {
	// Six failures: Heat retries a server that went to ERROR five times.
	e := newEnv(t, ossim.Options{Faults: ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "workerNode", Times: 6}}}})
	ctx := context.Background()
	top, files := readTestdata(t, "tacker")
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "vnflcm_fail", Template: top, Files: files,
		Params: map[string]any{"nfv": nfv(1, "net0"), "worker_instance_desired_capacity": 1}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := e.wait("vnflcm_fail", cs.ID, "CREATE_FAILED")
	want := `Resource CREATE failed: ResourceInError: resources.worker_instance.resources.`
	if !strings.HasPrefix(st.StatusReason, want) || !strings.Contains(st.StatusReason, ".resources.workerNode: Went to status ERROR") {
		t.Errorf("reason: %s", st.StatusReason)
	}
	all := e.resources("vnflcm_fail", cs.ID, 2)
	if r := find(all, "workerNode"); r == nil || r.Status != "CREATE_FAILED" {
		t.Errorf("workerNode: %+v", r)
	}
	if f := e.sim.Faults(); f.FailResources[0].Fired != 6 {
		t.Errorf("fault fired %d times", f.FailResources[0].Fired)
	}
	// The fault is used up: an update replaces the failed server.
	if err := stacks.UpdatePatch(ctx, e.heat, "vnflcm_fail", cs.ID, rawPatch{}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("vnflcm_fail", cs.ID, "UPDATE_COMPLETE")
	all = e.resources("vnflcm_fail", cs.ID, 2)
	if r := find(all, "workerNode"); r == nil || r.Status != "CREATE_COMPLETE" {
		t.Errorf("workerNode after update: %+v", r)
	}
}

func TestValidationErrors(t *testing.T) {
	e := newEnv(t, ossim.Options{Latency: 300 * time.Millisecond})
	ctx := context.Background()
	cases := []struct {
		name   string
		opts   rawCreate
		code   int
		errSub string
	}{
		{"missing parameter", rawCreate{Name: "v1", Template: "heat_template_version: 2018-08-31\nparameters: {x: {type: string}}\nresources: {}\n"}, 400, "The Parameter (x) was not provided."},
		{"unknown parameter", rawCreate{Name: "v2", Template: "heat_template_version: 2018-08-31\nresources: {}\n", Params: map[string]any{"y": 1}}, 400, "The Parameter (y) was not defined in template."},
		{"bad number", rawCreate{Name: "v3", Template: "heat_template_version: 2018-08-31\nparameters: {n: {type: number}}\nresources: {}\n", Params: map[string]any{"n": "abc"}}, 400, "not an integer"},
		{"bad json", rawCreate{Name: "v4", Template: "heat_template_version: 2018-08-31\nparameters: {n: {type: json}}\nresources: {}\n", Params: map[string]any{"n": "{"}}, 400, "valid JSON"},
		{"bad reference", rawCreate{Name: "v5", Template: "heat_template_version: 2018-08-31\nresources: {a: {type: OS::Heat::None, properties: {x: {get_resource: b}}}}\n"}, 400, `(in a) is incorrect.`},
		{"cycle", rawCreate{Name: "v6", Template: "heat_template_version: 2018-08-31\nresources: {a: {type: OS::Heat::None, depends_on: b}, b: {type: OS::Heat::None, depends_on: a}}\n"}, 400, "Circular Dependency Found"},
		{"no version", rawCreate{Name: "v7", Template: "resources: {}\n"}, 400, "Template format version not found"},
		{"bad name", rawCreate{Name: "1bad", Template: "heat_template_version: 2018-08-31\n"}, 400, "Invalid stack name"},
		{"bad yaml", rawCreate{Name: "v8", Template: "heat_template_version: [\n"}, 400, "Error parsing template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := stacks.Create(ctx, e.heat, c.opts).Extract()
			if errCode(err) != c.code || !strings.Contains(err.Error(), c.errSub) {
				t.Errorf("err = %v (code %d), want %d containing %q", err, errCode(err), c.code, c.errSub)
			}
		})
	}
	// Template as an object, comma_delimited_list and boolean parameters.
	tmpl := map[string]any{"heat_template_version": "2018-08-31",
		"parameters": map[string]any{"l": map[string]any{"type": "comma_delimited_list"}, "b": map[string]any{"type": "boolean", "default": false}},
		"resources": map[string]any{"v": map[string]any{"type": "OS::Heat::Value", "properties": map[string]any{
			"value": map[string]any{"list_join": []any{"+", map[string]any{"get_param": "l"}}}}}},
		"outputs": map[string]any{"joined": map[string]any{"value": map[string]any{"get_attr": []any{"v", "value"}}},
			"second": map[string]any{"value": map[string]any{"get_param": []any{"l", 1}}},
			"flag":   map[string]any{"value": map[string]any{"get_param": "b"}}}}
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "obj", Template: tmpl, Params: map[string]any{"l": "a, b,c", "b": "yes"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// Duplicate names and concurrent updates are refused.
	if _, err := stacks.Create(ctx, e.heat, rawCreate{Name: "obj", Template: tmpl, Params: map[string]any{"l": "x"}}).Extract(); errCode(err) != 409 {
		t.Errorf("duplicate: %v", err)
	}
	st := e.wait("obj", cs.ID, "CREATE_COMPLETE")
	outs := map[string]any{}
	for _, o := range st.Outputs {
		outs[o["output_key"].(string)] = o["output_value"]
	}
	if outs["joined"] != "a+b+c" || outs["second"] != "b" || outs["flag"] != true || st.Parameters["l"] != "a,b,c" || st.Parameters["b"] != "True" {
		t.Errorf("outputs %v params %v", outs, st.Parameters)
	}
	slow := fmt.Sprintf(simpleTemplate, "")
	cs2, err := stacks.Create(ctx, e.heat, rawCreate{Name: "busy", Template: slow}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := stacks.UpdatePatch(ctx, e.heat, "busy", cs2.ID, rawPatch{}).ExtractErr(); errCode(err) != 409 {
		t.Errorf("update while creating: %v", err)
	}
	// Marking a resource unhealthy takes the stack's lock, as in real Heat.
	err = stackresources.MarkUnhealthy(ctx, e.heat, "busy", cs2.ID, "port",
		stackresources.MarkUnhealthyOpts{MarkUnhealthy: true, ResourceStatusReason: "x"}).ExtractErr()
	if errCode(err) != 409 || !strings.Contains(err.Error(), "already has an action (CREATE) in progress") {
		t.Errorf("mark unhealthy while creating: %v", err)
	}
	e.wait("busy", cs2.ID, "CREATE_COMPLETE")
}

func TestSlowStackAndDeleteWhileCreating(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	// Through the admin endpoint, as the CLI would.
	body := `{"slow_stacks": [{"stack": "slow*", "delay": "1s"}]}`
	req, _ := http.NewRequest("PUT", e.srv.URL+"/_sim/faults", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT faults: %v %v", resp, err)
	}
	resp.Body.Close()
	if f := e.sim.Faults(); len(f.SlowStacks) != 1 || f.SlowStacks[0].Delay.D() != time.Second {
		t.Fatalf("faults: %+v", f)
	}
	t0 := time.Now()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "slow1", Template: fmt.Sprintf(simpleTemplate, "")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	st, _ := stacks.Get(ctx, e.heat, "slow1", cs.ID).Extract()
	if st.Status != "CREATE_IN_PROGRESS" {
		t.Errorf("slow stack after 100ms: %s", st.Status)
	}
	e.wait("slow1", cs.ID, "CREATE_COMPLETE")
	if d := time.Since(t0); d < time.Second {
		t.Errorf("slow stack done in %v", d)
	}
	// Deleting a stack that is being created cancels the create.
	req, _ = http.NewRequest("DELETE", e.srv.URL+"/_sim/faults", nil)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	e.sim.SetFaults(ossim.Faults{SlowStacks: []ossim.StackDelay{{Stack: "slow2", Delay: ossim.Duration(5 * time.Second), Actions: []string{"CREATE"}}}})
	cs, err = stacks.Create(ctx, e.heat, rawCreate{Name: "slow2", Template: fmt.Sprintf(simpleTemplate, "")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := stacks.Delete(ctx, e.heat, "slow2", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	e.wait("slow2", cs.ID, "DELETE_COMPLETE")
	if time.Since(t0) > 3*time.Second {
		t.Errorf("delete waited for the slow create")
	}
}

func TestAdminAndNeutronAPI(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	np, _ := networks.List(e.neutron, networks.ListOpts{Name: "net0"}).AllPages(ctx)
	nl, _ := networks.ExtractNetworks(np)
	if len(nl) != 1 || len(nl[0].Subnets) != 1 {
		t.Fatalf("net0: %+v", nl)
	}
	// Ports through the API: fixed IPs and allowed address pairs, update, conflicts.
	p, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: nl[0].ID, Name: "vip",
		FixedIPs: []ports.IP{{IPAddress: "10.77.0.90"}}}).Extract()
	if err != nil || p.FixedIPs[0].IPAddress != "10.77.0.90" || p.FixedIPs[0].SubnetID != nl[0].Subnets[0] {
		t.Fatalf("create port: %+v %v", p, err)
	}
	if _, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: nl[0].ID, FixedIPs: []ports.IP{{IPAddress: "10.77.0.90"}}}).Extract(); errCode(err) != 409 {
		t.Errorf("duplicate ip: %v", err)
	}
	pairs := []ports.AddressPair{{IPAddress: "10.77.0.80"}}
	p, err = ports.Update(ctx, e.neutron, p.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	if err != nil || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != p.MACAddress {
		t.Errorf("update pairs: %+v %v", p, err)
	}
	pp, _ := ports.List(e.neutron, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: "10.77.0.90"}}}).AllPages(ctx)
	if pl, _ := ports.ExtractPorts(pp); len(pl) != 1 {
		t.Errorf("filter by fixed ip: %d", len(pl))
	}
	if err := ports.Delete(ctx, e.neutron, p.ID).ExtractErr(); err != nil {
		t.Error(err)
	}
	// Admin endpoint.
	resp, err := http.Get(e.srv.URL + "/_sim")
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&sum)
	resp.Body.Close()
	if sum["auth_url"] != e.srv.URL+"/v3" || sum["region"] != "RegionOne" {
		t.Errorf("summary: %v", sum)
	}
	resp, _ = http.Post(e.srv.URL+"/_sim/servers/nope/exec", "application/json", bytes.NewReader([]byte(`{"command":["true"]}`)))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("exec on missing server: %d %s", resp.StatusCode, b)
	}
}

// rawUpdate is a PUT update with a template.
type rawUpdate struct {
	Template any
	Params   map[string]any
}

func (u rawUpdate) ToStackUpdateMap() (map[string]any, error) {
	return map[string]any{"template": u.Template, "parameters": u.Params}, nil
}

const groupsTemplate = `
heat_template_version: 2018-08-31
parameters:
  n: {type: number, default: 2}
  flavor: {type: string, default: m1.tiny}
resources:
  asg:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 0
      max_size: 5
      desired_capacity: {get_param: n}
      resource:
        type: OS::Nova::Server
        properties: {flavor: {get_param: flavor}, image: cirros, networks: [{network: net1}]}
  out:
    type: OS::Heat::ScalingPolicy
    properties: {auto_scaling_group_id: {get_resource: asg}, adjustment_type: change_in_capacity, scaling_adjustment: 2}
  rg:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: OS::Heat::Value
        properties: {value: "member-%index%"}
outputs:
  size: {value: {get_attr: [asg, current_size]}}
  values: {value: {get_attr: [rg, value]}}
  signal: {value: {get_attr: [out, signal_url]}}
`

func TestGroupsPolicyAndPut(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "groups", Template: groupsTemplate}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := e.wait("groups", cs.ID, "CREATE_COMPLETE")
	outs := map[string]any{}
	for _, o := range st.Outputs {
		outs[o["output_key"].(string)] = o["output_value"]
	}
	if outs["size"] != 2.0 || fmt.Sprint(outs["values"]) != "[member-0 member-1]" || !strings.HasSuffix(outs["signal"].(string), "/resources/out/signal") {
		t.Fatalf("outputs: %v", outs)
	}
	// Inline members are servers straight in the group's nested stack.
	all := e.resources("groups", cs.ID, 1)
	g := find(all, "asg")
	if ms := members(all, g); len(ms) != 2 || ms[0].Type != "OS::Nova::Server" {
		t.Fatalf("asg members: %+v", ms)
	}
	// A signal resizes the group; a later update that leaves
	// desired_capacity alone keeps the size, like Heat.
	req, _ := http.NewRequest("POST", outs["signal"].(string), strings.NewReader("{}"))
	req.Header.Set("X-Auth-Token", e.provider.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("signal: %v %v", resp, err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g = find(e.resources("groups", cs.ID, 0), "asg")
		if g.Status == "UPDATE_COMPLETE" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ms := members(e.resources("groups", cs.ID, 1), g); len(ms) != 4 {
		t.Fatalf("after signal: %d members (%s)", len(ms), g.Status)
	}
	if err := stacks.UpdatePatch(ctx, e.heat, "groups", cs.ID, rawPatch{"flavor": "m1.small"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("groups", cs.ID, "UPDATE_COMPLETE")
	all = e.resources("groups", cs.ID, 1)
	ms := members(all, find(all, "asg"))
	if len(ms) != 4 {
		t.Errorf("update without capacity change resized the group to %d", len(ms))
	}
	for _, m := range ms {
		sv, err := servers.Get(ctx, e.nova, m.PhysicalID).Extract()
		if err != nil || sv.Flavor["id"] != "2" || sv.Status != "ACTIVE" {
			t.Errorf("member %s after flavor change: %+v %v", m.Name, sv, err)
		}
	}
	// PUT with a new template: the groups go, a port comes; parameters reset.
	tmpl := "heat_template_version: 2018-08-31\nresources:\n  p: {type: OS::Neutron::Port, properties: {network: net1}}\n"
	if err := stacks.Update(ctx, e.heat, "groups", cs.ID, rawUpdate{Template: tmpl}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	st = e.wait("groups", cs.ID, "UPDATE_COMPLETE")
	all = e.resources("groups", cs.ID, 2)
	if len(all) != 1 || all[0].Name != "p" || st.Parameters["n"] != "" {
		t.Errorf("after PUT: %v %v", names(all), st.Parameters)
	}
	pages, _ := servers.List(e.nova, nil).AllPages(ctx)
	if svs, _ := servers.ExtractServers(pages); len(svs) != 0 {
		t.Errorf("servers after PUT: %d", len(svs))
	}
	ev, err := http.NewRequest("GET", e.heat.ServiceURL("stacks", "groups", cs.ID, "events"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ev.Header.Set("X-Auth-Token", e.provider.Token())
	resp, err = http.DefaultClient.Do(ev)
	if err != nil {
		t.Fatal(err)
	}
	var events struct {
		Events []map[string]any `json:"events"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&events)
	resp.Body.Close()
	if len(events.Events) < 10 {
		t.Errorf("events: %d", len(events.Events))
	}
}

func TestNovaAPI(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	np, _ := networks.List(e.neutron, networks.ListOpts{Name: "net1"}).AllPages(ctx)
	nl, _ := networks.ExtractNetworks(np)
	sv, err := servers.Create(ctx, e.nova, servers.CreateOpts{Name: "api-vm", FlavorRef: "1", ImageRef: "cirros",
		Networks: []servers.Network{{UUID: nl[0].ID, FixedIP: "10.77.1.50"}}, Metadata: map[string]string{"k": "v"},
		UserData: []byte("#cloud-config\npassword: x\n")}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		sv, err = servers.Get(ctx, e.nova, sv.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if sv.Status == "ACTIVE" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if sv.Status != "ACTIVE" || sv.Addresses["net1"].([]any)[0].(map[string]any)["addr"] != "10.77.1.50" || sv.Metadata["k"] != "v" ||
		sv.LaunchedAt.IsZero() || sv.Created.IsZero() {
		t.Fatalf("server: %+v", sv)
	}
	pages, _ := servers.List(e.nova, servers.ListOpts{Name: "^api"}).AllPages(ctx)
	if svs, _ := servers.ExtractServers(pages); len(svs) != 1 {
		t.Errorf("list by name: %d", len(svs))
	}
	if _, err := servers.Create(ctx, e.nova, servers.CreateOpts{Name: "x", FlavorRef: "m9", ImageRef: "cirros"}, nil).Extract(); errCode(err) != 400 {
		t.Errorf("bad flavor: %v", err)
	}
	if err := servers.Stop(ctx, e.nova, sv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	waitStatus := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if s, _ := servers.Get(ctx, e.nova, sv.ID).Extract(); s != nil && s.Status == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("server never %s", want)
	}
	waitStatus("SHUTOFF")
	if err := servers.Start(ctx, e.nova, sv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	waitStatus("ACTIVE")
	out, _ := servers.ShowConsoleOutput(ctx, e.nova, sv.ID, servers.ShowConsoleOutputOpts{Length: 5}).Extract()
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("console length 5 gave %d lines", n+1)
	}
	if err := servers.Delete(ctx, e.nova, sv.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		_, err := servers.Get(ctx, e.nova, sv.ID).Extract()
		if errCode(err) == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pp, _ := ports.List(e.neutron, nil).AllPages(ctx)
	if pl, _ := ports.ExtractPorts(pp); len(pl) != 0 {
		t.Errorf("nova-made port left: %d", len(pl))
	}
}

// TestStockCreateOpts uses gophercloud's own CreateOpts (template and
// environment as text, parameters, tags).
func TestStockCreateOpts(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	tmpl := new(stacks.Template)
	tmpl.Bin = []byte(fmt.Sprintf(simpleTemplate, ""))
	env := new(stacks.Environment)
	env.Bin = []byte("parameter_defaults:\n  count: 3\n")
	cs, err := stacks.Create(ctx, e.heat, stacks.CreateOpts{Name: "stock", TemplateOpts: tmpl, EnvironmentOpts: env,
		Parameters: map[string]any{}, Timeout: 5, Tags: []string{"a", "b"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := e.wait("stock", cs.ID, "CREATE_COMPLETE")
	if st.Parameters["count"] != "3" || !slices.Equal(st.Tags, []string{"a", "b"}) || st.Timeout != 5 {
		t.Errorf("stack: params %v tags %v timeout %d", st.Parameters, st.Tags, st.Timeout)
	}
	if ip, _ := st.Outputs[0]["output_value"].(string); !strings.HasPrefix(ip, "10.77.0.") {
		t.Errorf("outputs: %v", st.Outputs)
	}
}
