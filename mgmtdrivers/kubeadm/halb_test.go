package kubeadm

import (
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func lbParamsMap(ha map[string]any, lbNode any) map[string]any {
	m := map[string]any{
		"master_node": map[string]any{"vdu_id": "masterNode", "ssh_cp_name": "masterNode_CP1", "username": "u", "password": "p",
			"cluster_cp_name": "vip_CP"},
		"worker_node": map[string]any{"vdu_id": "workerNode", "ssh_cp_name": "workerNode_CP1", "username": "u", "password": "p"},
	}
	if ha != nil {
		m["ha"] = ha
	}
	if lbNode != nil {
		m["lb_node"] = lbNode
	}
	return map[string]any{ParamKey: m}
}

func goodLBNode() map[string]any {
	return map[string]any{"ssh_cp_name": "lbNode_CP1", "username": "lb", "password": "pw"}
}

func TestLBParams(t *testing.T) {
	p, err := ParseParams(lbParamsMap(nil, nil))
	if err != nil || p.LB.Topology != LBColocated || p.LB.Dedicated() {
		t.Fatalf("default: %+v %v", p, err)
	}
	p, err = ParseParams(lbParamsMap(map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, goodLBNode()))
	if err != nil {
		t.Fatal(err)
	}
	if !p.LB.Dedicated() || p.LB.VduID != "lbNode" || p.LB.Node.VduID != "lbNode" || p.LB.Node.NICCPName != "lbNode_CP1" || p.LB.Node.Username != "lb" {
		t.Errorf("dedicated: %+v", p.LB)
	}
	// lb_node.vdu_id alone selects the VDU too.
	n := goodLBNode()
	n["vdu_id"] = "lbNode"
	if p, err = ParseParams(lbParamsMap(map[string]any{"lb_topology": "dedicated"}, n)); err != nil || p.LB.VduID != "lbNode" {
		t.Errorf("lb_node.vdu_id: %+v %v", p, err)
	}

	bad := []struct {
		name   string
		ha     map[string]any
		lbNode any
		want   []string
	}{
		{"unknown topology", map[string]any{"lb_topology": "external"}, nil, []string{"ha.lb_topology: \"external\" is not a load balancer topology"}},
		{"lb params without dedicated", map[string]any{"lb_vdu_id": "lbNode"}, goodLBNode(), []string{"ha.lb_vdu_id: is used only with ha.lb_topology dedicated", ".lb_node: is used only with ha.lb_topology dedicated"}},
		{"no lb_node", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, nil, []string{".lb_node: is required with ha.lb_topology dedicated"}},
		{"no VDU", map[string]any{"lb_topology": "dedicated"}, goodLBNode(), []string{"ha.lb_vdu_id: is required with ha.lb_topology dedicated"}},
		{"VDU of the masters", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "masterNode"}, goodLBNode(), []string{"masterNode is also master_node.vdu_id"}},
		{"vdu_id mismatch", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, map[string]any{"vdu_id": "other", "ssh_cp_name": "lbNode_CP1", "username": "lb", "password": "pw"}, []string{"lb_node.vdu_id: \"other\" differs from ha.lb_vdu_id \"lbNode\""}},
		{"masters' port", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, map[string]any{"ssh_cp_name": "masterNode_CP1", "username": "lb", "password": "pw"}, []string{"masterNode_CP1 is a port of the masters"}},
		{"no login", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, map[string]any{"ssh_cp_name": "lbNode_CP1"}, []string{"lb_node.username: is required", "lb_node.password: is required"}},
		{"lb_node not an object", map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, "x", []string{"lb_node: must be an object"}},
	}
	for _, tc := range bad {
		_, err := ParseParams(lbParamsMap(tc.ha, tc.lbNode))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", tc.name, err, w)
			}
		}
	}
}

func lbFlavour(minLBs int) *model.Flavour {
	fl := haFlavour(3)
	fl.VDUs["lbNode"] = &model.VDU{ID: "lbNode", MinInstances: minLBs, MaxInstances: 2, CPs: []model.VduCP{{ID: "lbNode_CP1"}}}
	fl.VipCPs["vip_CP"].Targets = []string{"lbNode_CP1"}
	return fl
}

func dedicatedParams(t *testing.T) *Params {
	t.Helper()
	p, err := ParseParams(lbParamsMap(map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, goodLBNode()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A valid dedicated topology passes; each invalid one is refused with what
// is wrong.
func TestCheckLBPlan(t *testing.T) {
	ctx := t.Context()
	if err := checkLBPlan(ctx, nil, nil, lbFlavour(2), haParamsFor(t, nil)); err != nil {
		t.Errorf("colocated: %v", err)
	}
	p := dedicatedParams(t)
	good := &testInfra{}
	if err := checkLBPlan(ctx, good, nil, lbFlavour(2), p); err != nil {
		t.Errorf("valid dedicated plan: %v", err)
	}
	if len(good.asked) != 1 || good.asked[0].PortCpd != "lbNode_CP1" || good.asked[0].VipCpd != "vip_CP" || good.asked[0].VIP != "" {
		t.Errorf("asked the infra driver %+v, want the LBs' port and the VIP port", good.asked)
	}
	// The masters' ports need not allow the VIP then, nor be the VipCp's targets.
	masterNoPairs := &testInfra{refuse: map[string]error{"masterNode_CP1": errors.New("port masterNode_CP1 in masterNode.yaml does not allow the VIP")}}
	if err := checkHAPlan(ctx, masterNoPairs, nil, lbFlavour(2), p); err != nil {
		t.Errorf("checkHAPlan with dedicated LBs: %v", err)
	}
	// Masters selected by an aspect the flavour lacks: the VDU is not
	// guessed from the VipCp's targets (the LBs' port) then.
	byAspect, err := ParseParams(map[string]any{ParamKey: map[string]any{
		"master_node": map[string]any{"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "username": "u", "password": "p", "cluster_cp_name": "vip_CP"},
		"worker_node": map[string]any{"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "u", "password": "p"},
		"ha":          map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"},
		"lb_node":     goodLBNode()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkHAPlan(ctx, masterNoPairs, nil, lbFlavour(2), byAspect); err != nil {
		t.Errorf("checkHAPlan, masters by aspect, dedicated LBs: %v", err)
	}

	noVDU := haFlavour(3)
	noVDU.VipCPs["vip_CP"].Targets = []string{"lbNode_CP1"}
	noPairs := &testInfra{refuse: map[string]error{"lbNode_CP1": errors.New("port lbNode_CP1 in lbNode.yaml does not allow the VIP")}}
	notVIP := lbFlavour(2)
	notVIP.VipCPs = map[string]*model.VipCP{}
	wrongTarget := lbFlavour(2)
	wrongTarget.VipCPs["vip_CP"].Targets = []string{"masterNode_CP1"}
	for _, tc := range []struct {
		name string
		fl   *model.Flavour
		pkg  *testInfra
		want string
	}{
		{"LB VDU missing", noVDU, good, "the load-balancer VDU lbNode (ha.lb_vdu_id) is not in flavour ha (VDUs: masterNode, workerNode)"},
		{"one LB", lbFlavour(1), good, "the load-balancer VDU lbNode has vdu_profile min_number_of_instances 1: dedicated load balancers need at least 2 instances"},
		{"VIP not allowed on the LB ports", lbFlavour(2), noPairs, "load-balancer ports: port lbNode_CP1 in lbNode.yaml does not allow the VIP"},
		{"not behind a VIP", notVIP, good, "master_node.cluster_cp_name vip_CP must be a VIP port"},
		{"VipCp targets the masters", wrongTarget, good, "the VipCp vip_CP targets masterNode_CP1, not the load balancers' nic_cp_name lbNode_CP1"},
	} {
		err := checkLBPlan(ctx, tc.pkg, nil, tc.fl, p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// ParseParams refuses it when the request is accepted, before any VM exists.
	d := New(Options{})
	req := &model.InstantiateVnfRequest{AdditionalParams: lbParamsMap(map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}, goodLBNode())}
	if _, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpInstantiate, Flavour: lbFlavour(1), Instance: &model.VnfInstance{ID: "i"},
		Request: driverapi.Request{Instantiate: req}, Infra: &testInfra{}}, nil); err == nil || !strings.Contains(err.Error(), "min_number_of_instances 1") {
		t.Errorf("ParseParams: %v", err)
	}
}

// The LBs get the masters' API servers as HAProxy backends and a VRRP
// instance among themselves only.
func TestDedicatedLBConfigs(t *testing.T) {
	p := dedicatedParams(t)
	p.HA.Unicast = true
	vip := netip.MustParsePrefix("10.0.0.80/24")
	masters := []lbMember{{"m3", "10.0.0.13"}, {"m1", "10.0.0.11"}, {"m2", "10.0.0.12"}}
	lbs := []lbHost{{"lb1", "10.0.0.31", "eth0", vip}, {"lb2", "10.0.0.32", "ens3", vip}}
	got, err := dedicatedLBConfigs("inst-1", p, "s3cret", masters, lbs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d configs", len(got))
	}
	for _, name := range []string{"lb1", "lb2"} {
		f := got[name]
		for _, m := range masters {
			if !strings.Contains(f.HAProxy, "server "+m.Name+" "+m.IP+":6443 check") {
				t.Errorf("%s: HAProxy lacks %s:\n%s", name, m.Name, f.HAProxy)
			}
		}
		if !strings.Contains(f.HAProxy, "bind *:16443") || !strings.Contains(f.Check, "/dev/tcp/127.0.0.1/16443") {
			t.Errorf("%s: LB port", name)
		}
		if !strings.Contains(f.Keepalived, "virtual_router_id "+strconv.Itoa(DeriveVRID("inst-1"))) || !strings.Contains(f.Keepalived, "auth_pass s3cret") {
			t.Errorf("%s: keepalived:\n%s", name, f.Keepalived)
		}
		if strings.Contains(f.Keepalived, "10.0.0.1") {
			t.Errorf("%s: a master is a VRRP peer:\n%s", name, f.Keepalived)
		}
	}
	k1, k2 := got["lb1"].Keepalived, got["lb2"].Keepalived
	for _, w := range []string{"state MASTER", "priority 102", "unicast_src_ip 10.0.0.31", "\t\t10.0.0.32\n", "10.0.0.80/24 dev eth0"} {
		if !strings.Contains(k1, w) {
			t.Errorf("lb1 lacks %q:\n%s", w, k1)
		}
	}
	for _, w := range []string{"state BACKUP", "priority 101", "unicast_src_ip 10.0.0.31"} {
		if w == "unicast_src_ip 10.0.0.31" {
			if strings.Contains(k2, w) {
				t.Errorf("lb2 has lb1's source address")
			}
			continue
		}
		if !strings.Contains(k2, w) {
			t.Errorf("lb2 lacks %q:\n%s", w, k2)
		}
	}
	if _, err := dedicatedLBConfigs("inst-1", p, "s", masters, lbs[:1]); err == nil || !strings.Contains(err.Error(), "1 load-balancer VNFC(s) of VDU lbNode: dedicated load balancers need at least 2") {
		t.Errorf("one LB: %v", err)
	}
	if _, err := dedicatedLBConfigs("inst-1", p, "s", masters, append(lbs, lbHost{"lb3", "10.0.0.12", "eth0", vip})); err == nil || !strings.Contains(err.Error(), "has the address 10.0.0.12 of a master") {
		t.Errorf("LB on a master: %v", err)
	}
}

// lbInfo: haInfo's 3 masters and 2 workers plus n load balancers.
func lbInfo(n int) *model.InstantiatedVnfInfo {
	info := haInfo(3)
	for i := n; i >= 1; i-- {
		info.VnfcResourceInfo = append(info.VnfcResourceInfo, vnfcOf("lbNode-l"+strconv.Itoa(i), "lbNode", "", "srv-l"+strconv.Itoa(i),
			map[string]string{"lbNode_CP1": "10.0.0." + strconv.Itoa(30+i)}))
	}
	return info
}

func TestClassifyDedicatedLBs(t *testing.T) {
	p := dedicatedParams(t)
	topo, err := classify(lbInfo(2), lbFlavour(2), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(topo.LBs); !slices.Equal(got, []string{"lbnode-l1", "lbnode-l2"}) || topo.LBs[0].Role != LB || topo.LBs[0].IP != "10.0.0.31" {
		t.Errorf("LBs %v", got)
	}
	if len(topo.Masters) != 3 || len(topo.Workers) != 2 || topo.Endpoint() != "https://10.0.0.80:16443" {
		t.Errorf("topology %+v", topo)
	}
	if w := topo.Without("masterNode-m1"); len(w.LBs) != 2 {
		t.Errorf("Without drops the LBs")
	}
	if plans := plansFor(p, topo.LBs, true); plans[0].Login.Username != "lb" {
		t.Errorf("LB login %+v", plans[0].Login)
	}
	if err := checkLBTopology(topo, p); err != nil {
		t.Errorf("checkLBTopology: %v", err)
	}
	if err := checkHA(t.Context(), topo, &testInfra{}, nil, lbFlavour(2), p); err != nil {
		t.Errorf("checkHA with dedicated LBs: %v", err)
	}
	one, err := classify(lbInfo(1), lbFlavour(2), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkLBTopology(one, p); err == nil || !strings.Contains(err.Error(), "1 load-balancer VNFC(s) of VDU lbNode (lbnode-l1): dedicated load balancers need at least 2") {
		t.Errorf("one LB: %v", err)
	}
	// A heal of an LB VNFC is refused, when the request is accepted too.
	if err := refuseLBHeal(lbInfo(2), p, []string{"lbNode-l1"}); err == nil || !strings.Contains(err.Error(), "VNFC lbNode-l1 is a dedicated load balancer") {
		t.Errorf("LB heal: %v", err)
	}
	if err := refuseLBHeal(lbInfo(2), p, []string{"masterNode-m1"}); err != nil {
		t.Errorf("master heal: %v", err)
	}
	in := &model.VnfInstance{ID: "i", InstantiatedVnfInfo: lbInfo(2)}
	if _, err := New(Options{}).ParseParams(t.Context(), &driverapi.Accept{Operation: model.OpHeal, Instance: in, Flavour: lbFlavour(2), Infra: &testInfra{},
		Request: driverapi.Request{Heal: &model.HealVnfRequest{VnfcInstanceID: []string{"lbNode-l1"}}}}, p); err == nil || !strings.Contains(err.Error(), "VNFC lbNode-l1 is a dedicated load balancer") {
		t.Errorf("LB heal at accept: %v", err)
	}
}

func TestCheckLBAspect(t *testing.T) {
	p := dedicatedParams(t)
	lbAspect := &model.ScalingAspect{VduDeltas: map[string]map[string]int{"lbNode": {"delta_1": 1}}}
	if err := checkLBAspect(lbAspect, "lb_instance", p); err == nil || !strings.Contains(err.Error(), "aspect lb_instance scales the load-balancer VDU lbNode") {
		t.Errorf("LB aspect: %v", err)
	}
	workers := &model.ScalingAspect{VduDeltas: map[string]map[string]int{"workerNode": {"delta_1": 1}}}
	if err := checkLBAspect(workers, "worker_instance", p); err != nil {
		t.Errorf("worker aspect: %v", err)
	}
	if err := checkLBAspect(lbAspect, "lb_instance", haParamsFor(t, nil)); err != nil {
		t.Errorf("colocated: %v", err)
	}
}
