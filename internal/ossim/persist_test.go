package ossim_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"
	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// restartable is a simulator that can be stopped and started again on the
// same state file, like `make run` restarted.
type restartable struct {
	t    *testing.T
	opts ossim.Options
	e    *env
}

func (r *restartable) start() *env {
	r.t.Helper()
	sim, err := ossim.New(r.opts)
	if err != nil {
		r.t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	r.e = &env{t: r.t, sim: sim, srv: srv}
	r.e.login("admin", "secret")
	return r.e
}

func (r *restartable) stop() {
	r.t.Helper()
	r.e.srv.Close()
	if err := r.e.sim.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.e = nil
}

func serverNames(t *testing.T, e *env) map[string]string {
	t.Helper()
	pages, err := servers.List(e.nova, servers.ListOpts{}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	svs, _ := servers.ExtractServers(pages)
	out := map[string]string{}
	for _, sv := range svs {
		addrs, _ := sv.Addresses["net0"].([]any)
		ip := ""
		if len(addrs) > 0 {
			ip, _ = addrs[0].(map[string]any)["addr"].(string)
		}
		out[sv.ID] = sv.Name + " " + sv.Status + " " + ip
	}
	return out
}

// The whole state survives a restart: ids, stacks with their resources and
// parameters, servers and addresses, networks, tokens; and the restored
// stack can be updated and deleted like any other.
func TestPersistStateAcrossRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	r := &restartable{t: t, opts: ossim.Options{StateFile: file, Latency: 5 * time.Millisecond, SaveInterval: 20 * time.Millisecond}}
	e := r.start()
	ctx := context.Background()
	id := e.createTacker("vnflcm_persist", 1, 2)
	before := serverNames(t, e)
	resBefore := e.resources("vnflcm_persist", id, 2)
	nets, _ := networks.List(e.neutron, networks.ListOpts{Name: "net0"}).AllPages(ctx)
	nl, _ := networks.ExtractNetworks(nets)
	oldToken := e.provider.Token()
	project := e.sim.Accounts()[0].ProjectID
	r.stop()
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}

	e = r.start()
	if got := e.sim.Accounts()[0].ProjectID; got != project {
		t.Fatalf("project id %s after restart, was %s", got, project)
	}
	if after := serverNames(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("servers after restart:\n%v\nbefore:\n%v", after, before)
	}
	st, err := stacks.Get(ctx, e.heat, "vnflcm_persist", id).Extract()
	if err != nil || st.Status != "CREATE_COMPLETE" || !strings.Contains(st.Parameters["nfv"], `"masterNode"`) {
		t.Fatalf("stack after restart: %+v %v", st, err)
	}
	resAfter := e.resources("vnflcm_persist", id, 2)
	summary := func(rs []stackresources.Resource) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name+" "+r.Type+" "+r.PhysicalID+" "+r.Status+" "+r.ParentResource)
		}
		slices.Sort(out)
		return out
	}
	if a, b := summary(resAfter), summary(resBefore); !slices.Equal(a, b) {
		t.Fatalf("resources after restart:\n%s\nbefore:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	nets, _ = networks.List(e.neutron, networks.ListOpts{Name: "net0"}).AllPages(ctx)
	if nl2, _ := networks.ExtractNetworks(nets); len(nl2) != 1 || nl2[0].ID != nl[0].ID {
		t.Fatalf("net0 after restart: %v, was %v", nl2, nl)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v3/auth/tokens", nil)
	req.Header.Set("X-Auth-Token", oldToken)
	req.Header.Set("X-Subject-Token", oldToken)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("a token issued before the restart: %v %v", res, err)
	}
	// The restored stack works: scale out by PATCH, then delete.
	if err := stacks.UpdatePatch(ctx, e.heat, "vnflcm_persist", id, rawPatch{"worker_instance_desired_capacity": 3}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("vnflcm_persist", id, "UPDATE_COMPLETE")
	if n := len(serverNames(t, e)); n != 4 {
		t.Fatalf("%d servers after scaling the restored stack, want 4", n)
	}
	if err := stacks.Delete(ctx, e.heat, "vnflcm_persist", id).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("vnflcm_persist", id, "DELETE_COMPLETE")
	r.stop()
	e = r.start()
	defer r.stop()
	if n := len(serverNames(t, e)); n != 0 {
		t.Fatalf("%d servers after deleting the stack and restarting", n)
	}
}

// A stack action in progress when the process is killed is FAILED
// afterwards, as Heat marks it when its engine restarts; the client retries
// from there. (The kill is the state file as saved while the create ran.)
func TestPersistInProgressBecomesFailed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	r := &restartable{t: t, opts: ossim.Options{StateFile: file, Latency: 5 * time.Millisecond, SaveInterval: 20 * time.Millisecond,
		Faults: ossim.Faults{SlowStacks: []ossim.StackDelay{{Stack: "slow*", Delay: ossim.Duration(time.Minute)}}}}}
	e := r.start()
	ctx := context.Background()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "slow-persist", Template: fmt.Sprintf(simpleTemplate, "")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	killed := filepath.Join(t.TempDir(), "killed.json")
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "IN_PROGRESS") {
		t.Fatalf("state while creating: %v %s", err, b)
	}
	if err := os.WriteFile(killed, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.stop()
	r.opts.Faults = ossim.Faults{}
	r.opts.StateFile = killed
	e = r.start()
	defer r.stop()
	st, err := stacks.Get(ctx, e.heat, "slow-persist", cs.ID).Extract()
	if err != nil || st.Status != "CREATE_FAILED" || !strings.Contains(st.StatusReason, "Engine went down") {
		t.Fatalf("stack after restart: %+v %v", st, err)
	}
	if err := stacks.Delete(ctx, e.heat, "slow-persist", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("slow-persist", cs.ID, "DELETE_COMPLETE")
}

// A corrupt state file stops the start with a message that says how to
// get going again, instead of an empty cloud that forgot everything.
func TestPersistCorruptFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ossim.New(ossim.Options{StateFile: file})
	if err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("corrupt state: %v", err)
	}
}

// Servers that are real hosts get them back after a restart: same address,
// same host key (as pinned by a client), same disk; deleting the stack
// afterwards removes the hosts and their disks.
func TestPersistHosts(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: needs root to create network namespaces")
	}
	dir := t.TempDir()
	hopts := testhosts.Options{Prefix: "ospers", Subnet: "10.77.0.0/24", StateDir: filepath.Join(dir, "hosts"), Persist: true, Logf: t.Logf}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hn, err := testhosts.NewNetwork(ctx, hopts)
	if err != nil {
		t.Fatal(err)
	}
	r := &restartable{t: t, opts: ossim.Options{StateFile: filepath.Join(dir, "cloud.json"), Hosts: hn, Latency: 5 * time.Millisecond,
		SaveInterval: 20 * time.Millisecond, Logf: t.Logf}}
	e := r.start()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "hosts-persist", Template: twoServers}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.wait("hosts-persist", cs.ID, "CREATE_COMPLETE")
	var vm2 string
	for id, s := range serverNames(t, e) {
		if strings.HasPrefix(s, "VM_Two ") {
			vm2 = id
		}
	}
	ip := serverIP(t, e, vm2)
	key := login(t, e, hn, vm2, ip, "ops", "opspass", "vm-two")
	if out, err := e.sim.Host(vm2).Exec(ctx, "sh", "-c", "echo kept > /home/ops/f && echo 10.1.1.1 ep >> /etc/hosts"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	r.stop()
	if err := hn.Close(); err != nil {
		t.Fatal(err)
	}

	hn, err = testhosts.NewNetwork(ctx, hopts)
	if err != nil {
		t.Fatal(err)
	}
	defer hn.Close()
	r.opts.Hosts = hn
	e = r.start()
	if got := serverIP(t, e, vm2); got != ip {
		t.Fatalf("address after restart %s, was %s", got, ip)
	}
	var seen ssh.PublicKey
	c, err := hn.SSH(ctx, ip+":22", testhosts.PasswordConfig("ops", "opspass", &seen))
	if err != nil {
		t.Fatal(err)
	}
	out, err := testhosts.Run(c, "cat /home/ops/f; grep ep /etc/hosts; hostname")
	c.Close()
	if err != nil || out != "kept\n10.1.1.1 ep\nvm-two\n" {
		t.Fatalf("after restart: %v %q", err, out)
	}
	if ssh.FingerprintSHA256(seen) != ssh.FingerprintSHA256(key) {
		t.Fatalf("host key changed across the restart")
	}
	login(t, e, hn, vm2, ip, "ops", "opspass", "vm-two") // console log still publishes it
	if err := stacks.Delete(ctx, e.heat, "hosts-persist", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("hosts-persist", cs.ID, "DELETE_COMPLETE")
	r.stop()
	if saved, err := hn.Saved(); err != nil || len(saved) != 0 || !slices.Equal(saved, nil) {
		t.Fatalf("saved hosts after the stack's deletion: %v %v", saved, err)
	}
}

// Routers, Octavia objects, port tags and application credentials (with
// their tokens' access rules) survive a restart; a load balancer pending
// when the simulator stopped is ACTIVE afterwards; the restored stack with
// them deletes cleanly.
func TestPersistRoutersOctaviaAppCreds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cloud.json")
	r := &restartable{t: t, opts: ossim.Options{StateFile: file, Latency: 5 * time.Millisecond, SaveInterval: 20 * time.Millisecond}}
	e := r.start()
	ctx := context.Background()
	top, files := readTestdata(t, "kuryr")
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "kuryr", Template: top, Files: files, Params: map[string]any{"masters": 2}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.wait("kuryr", cs.ID, "CREATE_COMPLETE")
	summary := func(e *env) string {
		t.Helper()
		var out []string
		rp, err := routers.List(e.neutron, routers.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rl, _ := routers.ExtractRouters(rp)
		for _, x := range rl {
			out = append(out, "router "+x.ID+" "+x.Name+" gw "+x.GatewayInfo.NetworkID)
		}
		lp, err := loadbalancers.List(e.octavia(), loadbalancers.ListOpts{}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ll, _ := loadbalancers.ExtractLoadBalancers(lp)
		for _, x := range ll {
			out = append(out, fmt.Sprintf("lb %s %s %s %s listeners %d pools %d tags %v", x.ID, x.VipAddress, x.ProvisioningStatus,
				x.OperatingStatus, len(x.Listeners), len(x.Pools), x.Tags))
			for _, p := range x.Pools {
				mp, _ := pools.ListMembers(e.octavia(), p.ID, pools.ListMembersOpts{}).AllPages(ctx)
				ml, _ := pools.ExtractMembers(mp)
				for _, m := range ml {
					out = append(out, "member "+m.ID+" "+m.Address+" "+m.ProvisioningStatus)
				}
			}
		}
		mp, _ := monitors.List(e.octavia(), monitors.ListOpts{}).AllPages(ctx)
		ml, _ := monitors.ExtractMonitors(mp)
		for _, m := range ml {
			out = append(out, "monitor "+m.ID+" "+m.Type+" "+m.ProvisioningStatus)
		}
		pp, _ := ports.List(e.neutron, ports.ListOpts{Tags: "kuryr"}).AllPages(ctx)
		pl, _ := ports.ExtractPorts(pp)
		for _, p := range pl {
			out = append(out, fmt.Sprintf("tagged port %s %v", p.ID, p.Tags))
		}
		slices.Sort(out)
		return strings.Join(out, "\n")
	}
	// A port Kuryr tagged.
	p, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: e.networkID("net1"), Name: "default/web-1"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attributestags.ReplaceAll(ctx, e.neutron, "ports", p.ID, attributestags.ReplaceAllOpts{Tags: []string{"kuryr", "cluster-a"}}).Extract(); err != nil {
		t.Fatal(err)
	}
	// An application credential restricted to Neutron, and a token of it.
	ident, _ := openstack.NewIdentityV3(e.provider, gophercloud.EndpointOpts{})
	user, err := tokens.Get(ctx, ident, e.provider.Token()).ExtractUser()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "kuryr-a",
		AccessRules: []applicationcredentials.AccessRule{{Service: "network", Method: "*", Path: "/**"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	acp, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret})
	if err != nil {
		t.Fatal(err)
	}
	acToken := acp.Token()
	// A load balancer still PENDING_CREATE when the simulator stops (its
	// amphora takes a minute to boot).
	r.stop()
	r.opts.Latency = time.Minute
	e = r.start()
	sn := e.subnetOf("net1")
	lb, err := loadbalancers.Create(ctx, e.octavia(), loadbalancers.CreateOpts{Name: "late", VipSubnetID: sn.ID, Tags: []string{"kuryr"}}).Extract()
	if err != nil || lb.ProvisioningStatus != "PENDING_CREATE" {
		t.Fatalf("load balancer %+v %v", lb, err)
	}
	r.stop()
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), `"PENDING_CREATE"`) {
		t.Fatalf("the state file does not hold the pending load balancer: %v", err)
	}
	r.opts.Latency = 5 * time.Millisecond
	e = r.start()
	before := summary(e)
	if !strings.Contains(before, "router ") || !strings.Contains(before, "lb "+lb.ID) || !strings.Contains(before, "tagged port "+p.ID) ||
		strings.Contains(before, "PENDING") || strings.Count(before, "member ") != 2 || !strings.Contains(before, "monitor ") {
		t.Fatalf("after a restart:\n%s", before)
	}
	r.stop()
	e = r.start()
	if after := summary(e); after != before {
		t.Fatalf("after another restart:\n%s\nbefore:\n%s", after, before)
	}
	// The application credential: logs in, keeps its access rules, and so
	// does the token issued before the restarts.
	acp, err = openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret})
	if err != nil {
		t.Fatalf("the application credential after restarts: %v", err)
	}
	for _, tok := range []string{acp.Token(), acToken} {
		for path, want := range map[string]int{"/networking/v2.0/networks": 200, "/v1/" + e.sim.Accounts()[0].ProjectID + "/stacks": 401} {
			req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
			req.Header.Set("X-Auth-Token", tok)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != want {
				t.Errorf("GET %s with the application credential's token: %d, want %d", path, res.StatusCode, want)
			}
		}
	}
	// The restored stack deletes, routers and load balancer with it.
	if err := loadbalancers.Delete(ctx, e.octavia(), lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := ports.Delete(ctx, e.neutron, p.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := stacks.Delete(ctx, e.heat, "kuryr", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("kuryr", cs.ID, "DELETE_COMPLETE")
	if s := summary(e); strings.Contains(s, "router ") || strings.Contains(s, "lb ") {
		t.Errorf("after deleting the restored stack:\n%s", s)
	}
	r.stop()
}
