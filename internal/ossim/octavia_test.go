package ossim_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

func (e *env) octavia() *gophercloud.ServiceClient {
	e.t.Helper()
	c, err := openstack.NewLoadBalancerV2(e.provider, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) subnetOf(netName string) *subnets.Subnet {
	e.t.Helper()
	pages, err := subnets.List(e.neutron, subnets.ListOpts{Name: netName + "-subnet"}).AllPages(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	l, _ := subnets.ExtractSubnets(pages)
	if len(l) != 1 {
		e.t.Fatalf("subnets of %s: %+v", netName, l)
	}
	return &l[0]
}

func (e *env) networkID(name string) string {
	e.t.Helper()
	pages, err := networks.List(e.neutron, networks.ListOpts{Name: name}).AllPages(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	l, _ := networks.ExtractNetworks(pages)
	if len(l) != 1 {
		e.t.Fatalf("networks named %s: %d", name, len(l))
	}
	return l[0].ID
}

// Routers through gophercloud: a gateway port on the external network, an
// interface per subnet holding its gateway address, Neutron's refusals.
func TestRouters(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	public, net1 := e.networkID("public"), e.subnetOf("net1")
	up := true
	rt, err := routers.Create(ctx, e.neutron, routers.CreateOpts{Name: "r1", AdminStateUp: &up,
		GatewayInfo: &routers.GatewayInfo{NetworkID: public}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if rt.Status != "ACTIVE" || rt.GatewayInfo.NetworkID != public || len(rt.GatewayInfo.ExternalFixedIPs) != 1 ||
		!strings.HasPrefix(rt.GatewayInfo.ExternalFixedIPs[0].IPAddress, "10.77.100.") {
		t.Fatalf("router %+v", rt)
	}
	if _, err := routers.Create(ctx, e.neutron, routers.CreateOpts{Name: "r2", GatewayInfo: &routers.GatewayInfo{NetworkID: net1.NetworkID}}).Extract(); errCode(err) != 400 {
		t.Errorf("gateway on an internal network: %v", err)
	}
	ifc, err := routers.AddInterface(ctx, e.neutron, rt.ID, routers.AddInterfaceOpts{SubnetID: net1.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ports.Get(ctx, e.neutron, ifc.PortID).Extract()
	if err != nil || p.DeviceOwner != "network:router_interface" || p.DeviceID != rt.ID || p.FixedIPs[0].IPAddress != net1.GatewayIP {
		t.Fatalf("interface port %+v %v", p, err)
	}
	if _, err := routers.AddInterface(ctx, e.neutron, rt.ID, routers.AddInterfaceOpts{SubnetID: net1.ID}).Extract(); errCode(err) != 400 {
		t.Errorf("second interface on the subnet: %v", err)
	}
	if err := ports.Delete(ctx, e.neutron, ifc.PortID).ExtractErr(); errCode(err) != 409 {
		t.Errorf("deleting a router interface port through the port API: %v", err)
	}
	if err := routers.Delete(ctx, e.neutron, rt.ID).ExtractErr(); errCode(err) != 409 {
		t.Errorf("deleting a router with an interface: %v", err)
	}
	if err := subnets.Delete(ctx, e.neutron, net1.ID).ExtractErr(); errCode(err) != 409 {
		t.Errorf("deleting a subnet a router is on: %v", err)
	}
	// A port of our own as an interface, then both removed.
	own, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: e.networkID("net0")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routers.AddInterface(ctx, e.neutron, rt.ID, routers.AddInterfaceOpts{PortID: own.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	if _, err := routers.RemoveInterface(ctx, e.neutron, rt.ID, routers.RemoveInterfaceOpts{SubnetID: net1.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	if _, err := ports.Get(ctx, e.neutron, ifc.PortID).Extract(); errCode(err) != 404 {
		t.Errorf("the subnet interface's port survived its removal: %v", err)
	}
	if _, err := routers.RemoveInterface(ctx, e.neutron, rt.ID, routers.RemoveInterfaceOpts{PortID: own.ID}).Extract(); err != nil {
		t.Fatal(err)
	}
	if _, err := routers.RemoveInterface(ctx, e.neutron, rt.ID, routers.RemoveInterfaceOpts{SubnetID: net1.ID}).Extract(); errCode(err) != 404 {
		t.Errorf("removing a missing interface: %v", err)
	}
	gw := rt.GatewayInfo.ExternalFixedIPs[0].IPAddress
	if err := routers.Delete(ctx, e.neutron, rt.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	pages, _ := ports.List(e.neutron, ports.ListOpts{DeviceID: rt.ID}).AllPages(ctx)
	if l, _ := ports.ExtractPorts(pages); len(l) != 0 {
		t.Errorf("ports of the deleted router (gateway %s): %+v", gw, l)
	}
	if _, err := routers.Get(ctx, e.neutron, rt.ID).Extract(); errCode(err) != 404 {
		t.Errorf("get deleted router: %v", err)
	}
}

// waitLB polls a load balancer until its provisioning status is want.
func (e *env) waitLB(c *gophercloud.ServiceClient, id, want string) *loadbalancers.LoadBalancer {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lb, err := loadbalancers.Get(context.Background(), c, id).Extract()
		if want == "GONE" && errCode(err) == 404 {
			return nil
		}
		if err != nil {
			e.t.Fatal(err)
		}
		if lb.ProvisioningStatus == want {
			return lb
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("load balancer %s: %s, want %s", id, lb.ProvisioningStatus, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Octavia through gophercloud: PENDING_CREATE → ACTIVE, immutable while
// pending, listener → pool → members → health monitor, the status tree,
// deletes with and without cascade.
func TestOctaviaAPI(t *testing.T) {
	e := newEnv(t, ossim.Options{Latency: 60 * time.Millisecond, ResourceLatency: 20 * time.Millisecond})
	ctx := context.Background()
	c := e.octavia()
	net0 := e.subnetOf("net0")
	lb, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{Name: "kube-api", VipSubnetID: net0.ID, VipAddress: "10.77.0.200"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb.ProvisioningStatus != "PENDING_CREATE" || lb.OperatingStatus != "OFFLINE" || lb.VipAddress != "10.77.0.200" || lb.VipPortID == "" || lb.VipNetworkID != net0.NetworkID {
		t.Fatalf("new load balancer %+v", lb)
	}
	if _, err := listeners.Create(ctx, c, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 6443}).Extract(); errCode(err) != 409 {
		t.Errorf("listener on a PENDING_CREATE load balancer: %v", err)
	}
	lb = e.waitLB(c, lb.ID, "ACTIVE")
	if lb.OperatingStatus != "ONLINE" {
		t.Errorf("active load balancer %+v", lb)
	}
	vip, err := ports.Get(ctx, e.neutron, lb.VipPortID).Extract()
	if err != nil || vip.FixedIPs[0].IPAddress != "10.77.0.200" {
		t.Fatalf("VIP port %+v %v", vip, err)
	}
	if _, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{Name: "x", VipSubnetID: net0.ID, VipAddress: "10.77.0.200"}).Extract(); errCode(err) != 409 {
		t.Errorf("second load balancer on the same VIP address: %v", err)
	}
	if _, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{Name: "x"}).Extract(); errCode(err) != 400 {
		t.Errorf("load balancer without a VIP: %v", err)
	}

	l, err := listeners.Create(ctx, c, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 6443, Name: "api"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if l.ProvisioningStatus != "PENDING_CREATE" {
		t.Errorf("new listener %+v", l)
	}
	if got := e.waitLB(c, lb.ID, "PENDING_UPDATE"); got == nil {
		t.Fatal("no PENDING_UPDATE")
	}
	e.waitLB(c, lb.ID, "ACTIVE")
	if _, err := listeners.Create(ctx, c, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 6443}).Extract(); errCode(err) != 409 {
		t.Errorf("a second listener on port 6443: %v", err)
	}
	if _, err := pools.Create(ctx, c, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.ProtocolUDP, LBMethod: pools.LBMethodRoundRobin}).Extract(); errCode(err) != 400 {
		t.Errorf("a UDP pool for a TCP listener: %v", err)
	}
	pl, err := pools.Create(ctx, c, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, lb.ID, "ACTIVE")
	for _, addr := range []string{"10.77.0.11", "10.77.0.12"} {
		if _, err := pools.CreateMember(ctx, c, pl.ID, pools.CreateMemberOpts{Address: addr, ProtocolPort: 6443, SubnetID: net0.ID}).Extract(); err != nil {
			t.Fatal(err)
		}
		e.waitLB(c, lb.ID, "ACTIVE")
	}
	if _, err := pools.CreateMember(ctx, c, pl.ID, pools.CreateMemberOpts{Address: "10.77.0.11", ProtocolPort: 6443}).Extract(); errCode(err) != 409 {
		t.Errorf("duplicate member: %v", err)
	}
	hm, err := monitors.Create(ctx, c, monitors.CreateOpts{PoolID: pl.ID, Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 3}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, lb.ID, "ACTIVE")
	if _, err := monitors.Create(ctx, c, monitors.CreateOpts{PoolID: pl.ID, Type: monitors.TypeTCP, Delay: 5, Timeout: 3, MaxRetries: 3}).Extract(); errCode(err) != 409 {
		t.Errorf("a second health monitor: %v", err)
	}
	if _, err := monitors.Create(ctx, c, monitors.CreateOpts{PoolID: pl.ID, Type: monitors.TypeTCP, Delay: 1, Timeout: 3, MaxRetries: 3}).Extract(); errCode(err) != 400 {
		t.Errorf("timeout above delay: %v", err)
	}
	got, err := pools.Get(ctx, c, pl.ID).Extract()
	if err != nil || got.MonitorID != hm.ID || len(got.Members) != 2 || got.ProvisioningStatus != "ACTIVE" || len(got.Listeners) != 1 || got.Listeners[0].ID != l.ID {
		t.Fatalf("pool %+v %v", got, err)
	}
	pages, err := pools.ListMembers(c, pl.ID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := pools.ExtractMembers(pages)
	if len(ms) != 2 || ms[0].OperatingStatus != "ONLINE" || ms[0].ProvisioningStatus != "ACTIVE" {
		t.Errorf("members %+v", ms)
	}
	if lst, err := listeners.Get(ctx, c, l.ID).Extract(); err != nil || lst.DefaultPoolID != pl.ID {
		t.Errorf("listener default pool: %+v %v", lst, err)
	}
	// Listeners and pools are listed per load balancer (loadbalancer_id),
	// not all of the project's: a second load balancer has its own.
	other, err := loadbalancers.Create(ctx, c, loadbalancers.CreateOpts{Name: "other", VipSubnetID: net0.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, other.ID, "ACTIVE")
	ol, err := listeners.Create(ctx, c, listeners.CreateOpts{LoadbalancerID: other.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, other.ID, "ACTIVE")
	for lbID, want := range map[string]string{lb.ID: l.ID, other.ID: ol.ID} {
		lp, err := listeners.List(c, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := listeners.ExtractListeners(lp); len(got) != 1 || got[0].ID != want {
			t.Errorf("the listeners of load balancer %s: %+v, want %s alone", lbID, got, want)
		}
	}
	pp, err := pools.List(c, pools.ListOpts{LoadbalancerID: other.ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := pools.ExtractPools(pp); len(got) != 0 {
		t.Errorf("the pools of load balancer %s (none): %+v", other.ID, got)
	}
	if err := loadbalancers.Delete(ctx, c, other.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, other.ID, "GONE")
	var tree struct {
		Statuses struct {
			Loadbalancer struct {
				ProvisioningStatus string `json:"provisioning_status"`
				Listeners          []struct {
					ID    string `json:"id"`
					Pools []struct {
						ID            string `json:"id"`
						HealthMonitor struct {
							ID   string `json:"id"`
							Type string `json:"type"`
						} `json:"health_monitor"`
						Members []struct {
							Address         string `json:"address"`
							OperatingStatus string `json:"operating_status"`
						} `json:"members"`
					} `json:"pools"`
				} `json:"listeners"`
			} `json:"loadbalancer"`
		} `json:"statuses"`
	}
	if _, err := c.Get(ctx, c.ServiceURL("lbaas", "loadbalancers", lb.ID, "status"), &tree, nil); err != nil {
		t.Fatal(err)
	}
	if ls := tree.Statuses.Loadbalancer.Listeners; len(ls) != 1 || ls[0].ID != l.ID || len(ls[0].Pools) != 1 || len(ls[0].Pools[0].Members) != 2 ||
		ls[0].Pools[0].HealthMonitor.ID != hm.ID || ls[0].Pools[0].HealthMonitor.Type != "TCP" || ls[0].Pools[0].Members[0].OperatingStatus != "ONLINE" {
		t.Errorf("status tree %+v", tree)
	}
	// Updates go through PENDING_UPDATE too.
	name := "api-2"
	if _, err := listeners.Update(ctx, c, l.ID, listeners.UpdateOpts{Name: &name}).Extract(); err != nil {
		t.Fatal(err)
	}
	if _, err := listeners.Update(ctx, c, l.ID, listeners.UpdateOpts{Name: &name}).Extract(); errCode(err) != 409 {
		t.Errorf("update while pending: %v", err)
	}
	e.waitLB(c, lb.ID, "ACTIVE")
	// Deletes: children first, or cascade.
	if err := loadbalancers.Delete(ctx, c, lb.ID, loadbalancers.DeleteOpts{}).ExtractErr(); errCode(err) != 400 {
		t.Errorf("delete with children: %v", err)
	}
	if err := pools.DeleteMember(ctx, c, pl.ID, ms[0].ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, lb.ID, "ACTIVE")
	if _, err := pools.GetMember(ctx, c, pl.ID, ms[0].ID).Extract(); errCode(err) != 404 {
		t.Errorf("deleted member: %v", err)
	}
	if err := loadbalancers.Delete(ctx, c, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.waitLB(c, lb.ID, "GONE")
	for _, err := range []error{
		listeners.Get(ctx, c, l.ID).Err, pools.Get(ctx, c, pl.ID).Err, monitors.Get(ctx, c, hm.ID).Err,
		ports.Get(ctx, e.neutron, lb.VipPortID).Err,
	} {
		if errCode(err) != 404 {
			t.Errorf("after the cascade delete: %v", err)
		}
	}
}

// A base HOT with a Router, RouterInterfaces and an Octavia load balancer
// (listener, pool, health monitor, members) deploys, exposes the VIP, and
// goes away entirely with the stack.
func TestKuryrStyleStack(t *testing.T) {
	e := newEnv(t, ossim.Options{Latency: 30 * time.Millisecond})
	ctx := context.Background()
	top, files := readTestdata(t, "kuryr")
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "kuryr", Template: top, Files: files, Params: map[string]any{"masters": 3}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := e.wait("kuryr", cs.ID, "CREATE_COMPLETE")
	var vip string
	for _, o := range st.Outputs {
		if o["output_key"] == "api_vip" {
			vip, _ = o["output_value"].(string)
		}
	}
	if !strings.HasPrefix(vip, "10.77.0.") {
		t.Fatalf("outputs %v", st.Outputs)
	}
	rs := e.resources("kuryr", cs.ID, 2)
	for typ, n := range map[string]int{"OS::Neutron::Router": 1, "OS::Neutron::RouterInterface": 2, "OS::Octavia::LoadBalancer": 1,
		"OS::Octavia::Listener": 1, "OS::Octavia::Pool": 1, "OS::Octavia::HealthMonitor": 1, "OS::Octavia::PoolMember": 3} {
		got := byType(rs, typ)
		if len(got) != n {
			t.Errorf("%d %s, want %d", len(got), typ, n)
		}
		for _, r := range got {
			if r.Status != "CREATE_COMPLETE" || r.PhysicalID == "" {
				t.Errorf("%s %s: %s %q", typ, r.Name, r.Status, r.PhysicalID)
			}
		}
	}
	c := e.octavia()
	lbID := byType(rs, "OS::Octavia::LoadBalancer")[0].PhysicalID
	lb, err := loadbalancers.Get(ctx, c, lbID).Extract()
	if err != nil || lb.ProvisioningStatus != "ACTIVE" || lb.VipAddress != vip || len(lb.Listeners) != 1 || len(lb.Pools) != 1 {
		t.Fatalf("load balancer %+v %v", lb, err)
	}
	pl, _ := pools.Get(ctx, c, lb.Pools[0].ID).Extract()
	var addrs []string
	for _, m := range pl.Members {
		mm, err := pools.GetMember(ctx, c, pl.ID, m.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, mm.Address)
	}
	slices.Sort(addrs)
	if !slices.Equal(addrs, []string{"10.77.0.10", "10.77.0.11", "10.77.0.12"}) {
		t.Errorf("members %v", addrs)
	}
	rtID := byType(rs, "OS::Neutron::Router")[0].PhysicalID
	rt, err := routers.Get(ctx, e.neutron, rtID).Extract()
	if err != nil || rt.GatewayInfo.NetworkID != e.networkID("public") {
		t.Fatalf("router %+v %v", rt, err)
	}
	pages, _ := ports.List(e.neutron, ports.ListOpts{DeviceID: rtID, DeviceOwner: "network:router_interface"}).AllPages(ctx)
	if l, _ := ports.ExtractPorts(pages); len(l) != 2 {
		t.Errorf("router interface ports %d", len(l))
	}

	if err := stacks.Delete(ctx, e.heat, "kuryr", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("kuryr", cs.ID, "DELETE_COMPLETE")
	if _, err := loadbalancers.Get(ctx, c, lbID).Extract(); errCode(err) != 404 {
		t.Errorf("load balancer after stack delete: %v", err)
	}
	if _, err := routers.Get(ctx, e.neutron, rtID).Extract(); errCode(err) != 404 {
		t.Errorf("router after stack delete: %v", err)
	}
	pages, _ = ports.List(e.neutron, ports.ListOpts{}).AllPages(ctx)
	if l, _ := ports.ExtractPorts(pages); len(l) != 0 {
		t.Errorf("ports left: %d", len(l))
	}
	// The catalog names the load-balancer service.
	req, _ := http.NewRequest("GET", e.srv.URL+"/load-balancer", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Errorf("version document: %v %v", res, err)
	}
}

// Neutron's tag extension on ports, as Kuryr uses it: replace, add,
// remove, and the list filters (tags: all of, tags-any, not-tags,
// not-tags-any); Octavia load balancers filter by tags too.
func TestPortTags(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	net1 := e.networkID("net1")
	mk := func(name string) string {
		p, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: net1, Name: name}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	if _, err := attributestags.ReplaceAll(ctx, e.neutron, "ports", a, attributestags.ReplaceAllOpts{Tags: []string{"x", "y"}}).Extract(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Add(ctx, e.neutron, "ports", b, "x").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Add(ctx, e.neutron, "ports", c, "gone").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if err := attributestags.Delete(ctx, e.neutron, "ports", c, "gone").ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if tags, err := attributestags.List(ctx, e.neutron, "ports", a).Extract(); err != nil || strings.Join(tags, ",") != "x,y" {
		t.Fatalf("tags of a: %v %v", tags, err)
	}
	names := func(o ports.ListOpts) string {
		pages, err := ports.List(e.neutron, o).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := ports.ExtractPorts(pages)
		var n []string
		for _, p := range l {
			if p.NetworkID == net1 {
				n = append(n, p.Name)
			}
		}
		slices.Sort(n)
		return strings.Join(n, ",")
	}
	for _, tc := range []struct {
		o    ports.ListOpts
		want string
	}{
		{ports.ListOpts{Tags: "x"}, "a,b"},
		{ports.ListOpts{Tags: "x,y"}, "a"},
		{ports.ListOpts{TagsAny: "y,z"}, "a"},
		{ports.ListOpts{NotTags: "x,y"}, "b,c"},
		{ports.ListOpts{NotTagsAny: "x"}, "c"},
	} {
		if got := names(tc.o); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.o, got, tc.want)
		}
	}
	oct := e.octavia()
	sn := e.subnetOf("net1")
	for _, tags := range [][]string{{"kuryr", "x"}, {"kuryr"}} {
		if _, err := loadbalancers.Create(ctx, oct, loadbalancers.CreateOpts{VipSubnetID: sn.ID, Tags: tags}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := loadbalancers.List(oct, loadbalancers.ListOpts{Tags: []string{"kuryr", "x"}}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := loadbalancers.ExtractLoadBalancers(pages); len(l) != 1 || !slices.Contains(l[0].Tags, "x") {
		t.Errorf("load balancers tagged kuryr and x: %+v", l)
	}
}
