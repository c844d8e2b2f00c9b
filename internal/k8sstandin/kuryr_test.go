package k8sstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// kuryrCloud is a simulator with a member-role application credential
// restricted to Neutron and Octavia, as the VNFM hands out, and the
// subnets and security group of a Kuryr cluster.
type kuryrCloud struct {
	url                      string
	credID, credSecret       string
	podSubnet, svcSubnet, sg string
	admin                    *gophercloud.ProviderClient
}

func newKuryrCloud(t *testing.T) *kuryrCloud {
	t.Helper()
	sim, err := ossim.New(ossim.Options{Latency: 20 * time.Millisecond, ResourceLatency: 5 * time.Millisecond})
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
	ident, _ := openstack.NewIdentityV3(p, gophercloud.EndpointOpts{})
	user, err := tokens.Get(ctx, ident, p.Token()).ExtractUser()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "kuryr", Roles: []applicationcredentials.Role{{Name: "member"}},
		AccessRules: []applicationcredentials.AccessRule{{Service: "network", Method: "*", Path: "/v2.0/**"}, {Service: "load-balancer", Method: "*", Path: "/v2.0/**"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	nw, _ := openstack.NewNetworkV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	c := &kuryrCloud{url: srv.URL, credID: ac.ID, credSecret: ac.Secret, admin: p}
	for name, dst := range map[string]*string{"net1-subnet": &c.podSubnet, "net0-subnet": &c.svcSubnet} {
		pages, err := subnets.List(nw, subnets.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := subnets.ExtractSubnets(pages)
		*dst = l[0].ID
	}
	sg, err := groups.Create(ctx, nw, groups.CreateOpts{Name: "pods"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	c.sg = sg.ID
	return c
}

func (c *kuryrCloud) conf(tags string) kuryrConf {
	conf, _ := parseKuryrConf(strings.NewReader(`[DEFAULT]
debug = false
[neutron]
auth_type = v3applicationcredential
auth_url = ` + c.url + `
application_credential_id = ` + c.credID + `
application_credential_secret = ` + c.credSecret + `
[neutron_defaults]
pod_subnet = ` + c.podSubnet + `
pod_security_groups = ` + c.sg + `
service_subnet = ` + c.svcSubnet + `
resource_tags = ` + tags + `
[octavia_defaults]
member_mode = L3
`))
	return conf
}

// The kuryr-controller stand-in against the simulator and a real API
// server: a pod gets a Neutron port on the pod subnet (its podIP), a Service
// of type LoadBalancer gets an Octavia load balancer with a member per
// selected pod and its VIP as ingress; both are cleaned up when their
// Kubernetes objects go, and another cluster's controller leaves them alone.
func TestKuryrControllerStandIn(t *testing.T) {
	f := newAPIFixture(t)
	cloud := newKuryrCloud(t)
	ctx := context.Background()
	var logs []string
	logf := func(format string, a ...any) { logs = append(logs, fmt.Sprintf(format, a...)) }
	k, err := newKuryrController(ctx, cloud.conf("cluster-a"), f.admin, logf)
	if err != nil {
		t.Fatal(err)
	}
	pod := Obj{"apiVersion": "v1", "kind": "Pod", "metadata": Obj{"name": "web-1", "namespace": "default", "labels": Obj{"app": "web"}},
		"spec": Obj{"containers": []any{Obj{"name": "web", "image": "nginx"}}}}
	if _, err := f.admin.Create(ctx, resPods, "default", pod); err != nil {
		t.Fatal(err)
	}
	// kwok, the stand-in kubelet's pod status, gives the pod an address
	// from the node's pod CIDR before Kuryr's port exists: Kuryr's wins.
	kwokIP := Obj{"status": Obj{"podIP": "10.244.3.9", "podIPs": []any{Obj{"ip": "10.244.3.9"}}}}
	if err := f.admin.DoCT(ctx, "PATCH", objPath(resPods, "default", "web-1")+"/status", "application/merge-patch+json", kwokIP, nil); err != nil {
		t.Fatal(err)
	}
	hostPod := Obj{"apiVersion": "v1", "kind": "Pod", "metadata": Obj{"name": "agent", "namespace": "default", "labels": Obj{"app": "web"}},
		"spec": Obj{"hostNetwork": true, "containers": []any{Obj{"name": "a", "image": "x"}}}}
	if _, err := f.admin.Create(ctx, resPods, "default", hostPod); err != nil {
		t.Fatal(err)
	}
	svc := Obj{"apiVersion": "v1", "kind": "Service", "metadata": Obj{"name": "web", "namespace": "default"},
		"spec": Obj{"type": "LoadBalancer", "selector": Obj{"app": "web"}, "ports": []any{Obj{"protocol": "TCP", "port": 80, "targetPort": 8080}}}}
	if _, err := f.admin.Create(ctx, resServices, "default", svc); err != nil {
		t.Fatal(err)
	}
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	// The pod network.
	got, err := f.admin.Get(ctx, resPods, "default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	var vif struct {
		PortID, Address, SubnetID string
	}
	_ = json.Unmarshal([]byte(getStr(got, "metadata", "annotations", kuryrVifAnnotation)), &struct {
		PortID   *string `json:"port_id"`
		Address  *string `json:"address"`
		SubnetID *string `json:"subnet_id"`
	}{&vif.PortID, &vif.Address, &vif.SubnetID})
	if vif.SubnetID != cloud.podSubnet || !strings.HasPrefix(vif.Address, "10.77.1.") || getStr(got, "status", "podIP") != vif.Address {
		t.Fatalf("pod vif %+v, podIP %q", vif, getStr(got, "status", "podIP"))
	}
	nw, _ := openstack.NewNetworkV2(cloud.admin, gophercloud.EndpointOpts{Region: "RegionOne"})
	port, err := ports.Get(ctx, nw, vif.PortID).Extract()
	if err != nil || port.Name != "default/web-1" || port.DeviceOwner != "compute:kuryr" || len(port.SecurityGroups) != 1 || port.SecurityGroups[0] != cloud.sg {
		t.Fatalf("pod port %+v %v", port, err)
	}
	tp, err := ports.List(nw, ports.ListOpts{Tags: "cluster-a"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tagged, _ := ports.ExtractPorts(tp); len(tagged) != 1 || tagged[0].ID != port.ID {
		t.Fatalf("the ports tagged with cluster-a's resource tag: %+v (the pod port has tags %v)", tagged, port.Tags)
	}
	if h, _ := f.admin.Get(ctx, resPods, "default", "agent"); getStr(h, "metadata", "annotations", kuryrVifAnnotation) != "" {
		t.Error("a host-network pod got a port")
	}

	// The Service's load balancer.
	s, _ := f.admin.Get(ctx, resServices, "default", "web")
	ingress := getSlice(s, "status", "loadBalancer", "ingress")
	if len(ingress) != 1 {
		t.Fatalf("service status %v", getMap(s, "status"))
	}
	vip := ingress[0].(map[string]any)["ip"].(string)
	oct, _ := openstack.NewLoadBalancerV2(cloud.admin, gophercloud.EndpointOpts{Region: "RegionOne"})
	lbs, _ := loadbalancers.List(oct, loadbalancers.ListOpts{}).AllPages(ctx)
	all, _ := loadbalancers.ExtractLoadBalancers(lbs)
	if len(all) != 1 || all[0].Name != "default/web" || all[0].VipAddress != vip || all[0].VipSubnetID != cloud.svcSubnet {
		t.Fatalf("load balancers %+v (VIP %s)", all, vip)
	}
	lbID := all[0].ID
	lp, _ := listeners.List(oct, listeners.ListOpts{LoadbalancerID: lbID}).AllPages(ctx)
	ls, _ := listeners.ExtractListeners(lp)
	if len(ls) != 1 || ls[0].ProtocolPort != 80 || ls[0].Protocol != "TCP" || ls[0].DefaultPoolID == "" {
		t.Fatalf("listeners %+v", ls)
	}
	members := func() []pools.Member {
		mp, _ := pools.ListMembers(oct, ls[0].DefaultPoolID, pools.ListMembersOpts{}).AllPages(ctx)
		m, _ := pools.ExtractMembers(mp)
		return m
	}
	if m := members(); len(m) != 1 || m[0].Address != vif.Address || m[0].ProtocolPort != 8080 {
		t.Fatalf("members %+v", m)
	}
	// Idempotent: a second pass changes nothing.
	n := len(logs)
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(logs) != n {
		t.Errorf("a second pass acted: %v", logs[n:])
	}
	// kwok sets its address again (a pod becoming ready): the next pass
	// gives the pod its port's address back, the member stays.
	if err := f.admin.DoCT(ctx, "PATCH", objPath(resPods, "default", "web-1")+"/status", "application/merge-patch+json", kwokIP, nil); err != nil {
		t.Fatal(err)
	}
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.admin.Get(ctx, resPods, "default", "web-1"); getStr(got, "status", "podIP") != vif.Address {
		t.Errorf("podIP after kwok set it again: %q, want the port's %s", getStr(got, "status", "podIP"), vif.Address)
	}
	if m := members(); len(m) != 1 || m[0].Address != vif.Address {
		t.Errorf("members after kwok set the pod's address again: %+v", m)
	}

	// Another cluster sharing the project (its own API server, without
	// that Service or pod) leaves cluster-a's load balancer and port alone.
	other, err := newKuryrController(ctx, cloud.conf("cluster-b"), newAPIFixture(t).admin, logf)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.Get(ctx, oct, lbID).Extract(); err != nil {
		t.Errorf("cluster-b's controller deleted cluster-a's load balancer: %v", err)
	}
	if _, err := ports.Get(ctx, nw, vif.PortID).Extract(); err != nil {
		t.Errorf("cluster-b's controller deleted cluster-a's pod port: %v", err)
	}

	// The pod goes: its port and its member go.
	if err := f.admin.Delete(ctx, resPods, "default", "web-1"); err != nil {
		t.Fatal(err)
	}
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ports.Get(ctx, nw, vif.PortID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("the deleted pod's port: %v", err)
	}
	if m := members(); len(m) != 0 {
		t.Errorf("members after the pod went: %+v", m)
	}
	// The Service goes: its load balancer goes (cascade).
	if err := f.admin.Delete(ctx, resServices, "default", "web"); err != nil {
		t.Fatal(err)
	}
	if err := k.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := loadbalancers.Get(ctx, oct, lbID).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load balancer of the deleted Service: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestKuryrConf(t *testing.T) {
	c, err := parseKuryrConf(strings.NewReader("# comment\n[neutron]\nauth_url = http://x:5000/v3\n; other\n[neutron_defaults]\npod_security_groups = a, b,\n"))
	if err != nil || c.get("neutron", "auth_url") != "http://x:5000/v3" || strings.Join(splitCSV(c.get("neutron_defaults", "pod_security_groups")), "|") != "a|b" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := parseKuryrConf(strings.NewReader("[neutron]\nno value here\n")); err == nil {
		t.Error("a line without = accepted")
	}
	if _, err := newKuryrController(context.Background(), kuryrConf{sections: map[string]map[string]string{"neutron": {"auth_type": "password"}}}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "application credential only") {
		t.Errorf("password auth: %v", err)
	}
}
