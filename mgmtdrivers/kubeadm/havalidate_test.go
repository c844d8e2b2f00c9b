package kubeadm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// haInfo: n masters (VNFC ids in reverse creation order), two workers and
// the VIP port vip_CP (10.0.0.80) as the OpenStack driver reports them.
func haInfo(n int) *model.InstantiatedVnfInfo {
	info := &model.InstantiatedVnfInfo{}
	for i := n; i >= 1; i-- {
		info.VnfcResourceInfo = append(info.VnfcResourceInfo, vnfcOf(fmt.Sprintf("masterNode-m%d", i), "masterNode", "master_instance", fmt.Sprintf("srv-m%d", i),
			map[string]string{"masterNode_CP1": fmt.Sprintf("10.0.0.%d", 10+i)}))
	}
	info.VnfcResourceInfo = append(info.VnfcResourceInfo,
		vnfcOf("workerNode-w1", "workerNode", "worker_instance", "srv-w1", map[string]string{"workerNode_CP1": "10.0.0.21"}),
		vnfcOf("workerNode-w2", "workerNode", "worker_instance", "srv-w2", map[string]string{"workerNode_CP1": "10.0.0.22"}))
	info.ExtCpInfo = []model.ExtCpInfo{{ID: "vip_CP-0", CpdID: "vip_CP", CpProtocolInfo: []map[string]any{{"layerProtocol": "IP_OVER_ETHERNET",
		"ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "addresses": []any{"10.0.0.80"}, "subnetId": "sub"}}}}}}}
	return info
}

func haParamsFor(t *testing.T, ha map[string]any) *Params {
	t.Helper()
	m := map[string]any{
		"master_node": map[string]any{"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "username": "u", "password": "p",
			"cluster_cp_name": "vip_CP"},
		"worker_node": map[string]any{"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "u", "password": "p"},
	}
	if ha != nil {
		m["ha"] = ha
	}
	p, err := ParseParams(map[string]any{ParamKey: m})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func haFlavour(minMasters int) *model.Flavour {
	fl := sampleFlavour()
	fl.ID = "ha"
	fl.VDUs = map[string]*model.VDU{
		"masterNode": {ID: "masterNode", MinInstances: minMasters, MaxInstances: 5, CPs: []model.VduCP{{ID: "masterNode_CP1"}}},
		"workerNode": {ID: "workerNode", MinInstances: 2, MaxInstances: 5, CPs: []model.VduCP{{ID: "workerNode_CP1"}}},
	}
	fl.VipCPs = map[string]*model.VipCP{"vip_CP": {ID: "vip_CP", VipFunction: "high_availability", Targets: []string{"masterNode_CP1"}}}
	return fl
}

// The VIP port makes the control plane HA: the endpoint is HAProxy's port
// on the VIP, masters are in a stable (name) order whatever their age.
func TestClassifyHA(t *testing.T) {
	topo, err := classify(haInfo(3), haFlavour(3), haParamsFor(t, map[string]any{"lb_port": 6440}))
	if err != nil {
		t.Fatal(err)
	}
	if !topo.HA() || topo.VIP != "10.0.0.80" || topo.Endpoint() != "https://10.0.0.80:6440" {
		t.Errorf("HA endpoint %+v %s", topo, topo.Endpoint())
	}
	if got := names(topo.Masters); !slices.Equal(got, []string{"masternode-m1", "masternode-m2", "masternode-m3"}) {
		t.Errorf("masters %v", got)
	}
	if masterIPs(topo.Masters) != "10.0.0.11,10.0.0.12,10.0.0.13" {
		t.Errorf("master IPs %s", masterIPs(topo.Masters))
	}
	if w := topo.Without("masterNode-m1"); !w.HA() || len(w.Masters) != 2 {
		t.Errorf("Without keeps the VIP: %+v", w)
	}
	if err := checkHA(t.Context(), topo, &testInfra{}, nil, haFlavour(3), haParamsFor(t, nil)); err != nil {
		t.Errorf("checkHA of a good cluster: %v", err)
	}
}

func TestCheckHA(t *testing.T) {
	p := haParamsFor(t, nil)
	check := func(n, minMasters int) error {
		topo, err := classify(haInfo(n), haFlavour(minMasters), p)
		if err != nil {
			t.Fatal(err)
		}
		return checkHA(t.Context(), topo, &testInfra{}, nil, haFlavour(minMasters), p)
	}
	for _, c := range []struct {
		n, min int
		want   string
	}{
		{1, 1, "1 master VNFC(s) behind the VIP 10.0.0.80: an HA control plane needs at least 3 masters"},
		{2, 2, "2 masters stop when either fails"},
		{4, 3, "4 masters: use an odd number"},
		{3, 1, "min_number_of_instances 1: an HA control plane needs an odd number of at least 3"},
		{5, 4, "min_number_of_instances 4"},
	} {
		if err := check(c.n, c.min); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d masters, min %d: %v, want %q", c.n, c.min, err, c.want)
		}
	}
	if err := check(5, 3); err != nil {
		t.Errorf("5 masters: %v", err)
	}
	// The VIP on a node, a VipCp not targeting the masters' port.
	info := haInfo(3)
	info.VnfcResourceInfo[4] = vnfcOf("workerNode-w2", "workerNode", "worker_instance", "srv-w2", map[string]string{"workerNode_CP1": "10.0.0.80"})
	topo, err := classify(info, haFlavour(3), p)
	if err != nil {
		t.Fatal(err)
	}
	fl := haFlavour(3)
	fl.VipCPs["vip_CP"].Targets = []string{"workerNode_CP1"}
	err = checkHA(t.Context(), topo, &testInfra{}, nil, fl, p)
	for _, want := range []string{"the VIP 10.0.0.80 (cluster_cp_name vip_CP) is the address of node workernode-w2", "targets workerNode_CP1, not the masters' nic_cp_name masterNode_CP1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
}

// The VIP check is the infra driver's (it knows the VIM's port security):
// the driver asks it about the masters' port and the VIP port, and reports
// its refusal in the plan.
func TestCheckVIPAsksTheInfraDriver(t *testing.T) {
	ctx := t.Context()
	p := haParamsFor(t, nil)
	fl := haFlavour(3)
	ok := &testInfra{}
	if err := checkVIPAllowed(ctx, ok, nil, fl, p, "10.0.0.80"); err != nil {
		t.Errorf("allowed: %v", err)
	}
	if len(ok.asked) != 1 || ok.asked[0].PortCpd != "masterNode_CP1" || ok.asked[0].VipCpd != "vip_CP" || ok.asked[0].VIP != "10.0.0.80" || ok.asked[0].Flavour != fl {
		t.Errorf("asked %+v", ok.asked)
	}
	noPairs := &testInfra{refuse: map[string]error{"masterNode_CP1": errors.New("port masterNode_CP1 in masterNode.yaml does not allow the VIP")}}
	// checkHAPlan (accept, instantiate_start): the VDU's minimum and the VIP.
	if err := checkHAPlan(ctx, ok, nil, fl, p); err != nil {
		t.Errorf("plan: %v", err)
	}
	err := checkHAPlan(ctx, noPairs, nil, haFlavour(2), p)
	for _, want := range []string{"the master VDU masterNode has vdu_profile min_number_of_instances 2", "does not allow the VIP"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("plan: %v, want %q", err, want)
		}
	}
	single := sampleParams(t)
	if err := checkHAPlan(ctx, noPairs, nil, haFlavour(1), single); err != nil {
		t.Errorf("a single master's plan is no HA plan: %v", err)
	}
}

func TestQuorum(t *testing.T) {
	m := func(id uint64, name, ip string) etcdMember {
		return etcdMember{ID: id, Name: name, PeerURLs: []string{etcdPeerURL(ip)}, ClientURLs: []string{etcdClientURL(ip)}}
	}
	nodes := []*Node{{Name: "m1", IP: "10.0.0.11"}, {Name: "m2", IP: "10.0.0.12"}, {Name: "m3", IP: "10.0.0.13"}}
	v := &etcdView{Members: []etcdMember{m(1, "m1", "10.0.0.11"), m(2, "m2", "10.0.0.12"), m(3, "", "10.0.0.13")}, Healthy: map[uint64]bool{2: true, 3: true}}
	// m1 dead: healing it leaves 2 of 2 healthy, 2 of 3 while m1's replacement joins.
	if ok, rem, h := quorumCheck(v, nodes[:1]); !ok || rem != 2 || h != 2 {
		t.Errorf("heal of the dead m1: %v %d %d", ok, rem, h)
	}
	// The member of m3 found by its peer URL (it never started: no name).
	if mem, ok := v.member(nodes[2]); !ok || mem.ID != 3 {
		t.Errorf("member by peer URL: %v %v", mem, ok)
	}
	// m1 and m2 dead: healing m1 leaves 1 healthy of 2: refused.
	v.Healthy = map[uint64]bool{3: true}
	if ok, rem, h := quorumCheck(v, nodes[:1]); ok || rem != 2 || h != 1 {
		t.Errorf("heal with 2 of 3 down: %v %d %d", ok, rem, h)
	}
	// Healing a healthy master while another is dead loses quorum too.
	v.Healthy = map[uint64]bool{1: true, 2: true}
	if ok, _, _ := quorumCheck(v, nodes[1:2]); ok {
		t.Error("heal of a healthy m2 with m3 dead was allowed")
	}
	if quorum(3) != 2 || quorum(4) != 3 || quorum(5) != 3 {
		t.Error("quorum")
	}
	if p := etcdWholeProblem(v, nodes); !strings.Contains(p, "m3 has not started its member") {
		t.Errorf("whole: %q", p)
	}
	v.Members[2].Name = "m3"
	v.Healthy[3] = true
	if p := etcdWholeProblem(v, nodes); p != "" {
		t.Errorf("whole: %q", p)
	}
	v.Members = append(v.Members, m(9, "old", "10.0.0.99"))
	v.Healthy[9] = true
	if p := etcdWholeProblem(v, nodes); !strings.Contains(p, "member old 9 is no master of this VNF") {
		t.Errorf("whole with a stranger: %q", p)
	}
}

// Healing more masters at once than etcd can lose is refused when the
// request is accepted; one master of an HA control plane is fine.
func TestParseParamsHA(t *testing.T) {
	d := New(Options{})
	in := &model.VnfInstance{ID: "i", InstantiatedVnfInfo: haInfo(3)}
	stored := haParamsFor(t, nil)
	heal := func(extra map[string]any, ids ...string) error {
		_, err := d.ParseParams(t.Context(), &driverapi.Accept{Operation: model.OpHeal, Instance: in, Flavour: haFlavour(3), Infra: &testInfra{},
			Request: driverapi.Request{Heal: &model.HealVnfRequest{VnfcInstanceID: ids, AdditionalParams: extra}}}, stored)
		return err
	}
	if err := heal(nil, "masterNode-m1"); err != nil {
		t.Errorf("one master: %v", err)
	}
	if err := heal(nil, "masterNode-m1", "masterNode-m2"); err == nil || !strings.Contains(err.Error(), "healing 2 of 3 masters at once") {
		t.Errorf("two masters: %v", err)
	}
	if err := heal(map[string]any{"force": true}, "masterNode-m1", "masterNode-m2"); err != nil {
		t.Errorf("two masters with force: %v", err)
	}
	// Instantiate: a VIP with a master VDU that may shrink below 3 is refused.
	inst := func(minMasters int) error {
		_, err := d.ParseParams(t.Context(), &driverapi.Accept{Operation: model.OpInstantiate, Flavour: haFlavour(minMasters), Infra: &testInfra{},
			Instance: &model.VnfInstance{ID: "i"},
			Request: driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "ha", AdditionalParams: map[string]any{ParamKey: map[string]any{
				"master_node": map[string]any{"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "cluster_cp_name": "vip_CP", "username": "u", "password": "p"},
				"worker_node": map[string]any{"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "u", "password": "p"}}}}}}, nil)
		return err
	}
	if err := inst(3); err != nil {
		t.Errorf("instantiate with 3 masters: %v", err)
	}
	if err := inst(2); err == nil || !strings.Contains(err.Error(), "min_number_of_instances 2") {
		t.Errorf("instantiate with 2 masters: %v", err)
	}
}

func readSample(p string) (string, error) {
	b, err := os.ReadFile("../../samples/kubeadm-ha/" + p)
	return string(b), err
}
