package hotgen

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func extLink(id, net string, cps ...string) model.ExtVirtualLinkData {
	l := model.ExtVirtualLinkData{ID: id, ResourceID: net}
	for _, c := range cps {
		l.ExtCps = append(l.ExtCps, model.VnfExtCpData{CpdID: c, CpConfig: []map[string]any{{"cpProtocolData": []any{map[string]any{"layerProtocol": "IP_OVER_ETHERNET"}}}}})
	}
	return l
}

func images(vdus ...string) map[string]any {
	m := map[string]any{}
	for _, v := range vdus {
		m[v] = map[string]any{"image": "ubuntu-22.04", "flavor": "m1.small"}
	}
	return map[string]any{"VDU": m}
}

// seedInput is an instantiate request for the seed's TOSCA VNFD
// (samples/kubeadm-tosca): image and flavor in additionalParams, the
// external CPs on net0, a login.
func seedInput(fl *model.Flavour) Input {
	return Input{VnfdID: "seed", Flavour: fl,
		ExtVirtualLinks:  []model.ExtVirtualLinkData{extLink("ext", net0ID, "masterNodeExternalCP", "workerNodeExternalCP")},
		AdditionalParams: map[string]any{"nfv": images("masterNode", "workerNode"), "node_password": "pw"}}
}

// nfvOf is the nfv parameter the infra driver would pass for the input.
func nfvOf(in Input) map[string]any {
	nfv := map[string]any{"VDU": map[string]any{}, "CP": map[string]any{}}
	for id, v := range in.Flavour.VDUs {
		e := map[string]any{"flavor": v.Flavor, "image": ""}
		if v.SwImage != nil {
			e["image"] = v.SwImage.Name
		}
		nfvp, _ := in.AdditionalParams["nfv"].(map[string]any)
		vdus, _ := nfvp["VDU"].(map[string]any)
		if o, ok := vdus[id].(map[string]any); ok {
			maps.Copy(e, o)
		}
		if e["flavor"] == "" {
			e["flavor"] = "m1.small"
		}
		nfv["VDU"].(map[string]any)[id] = e
	}
	for _, l := range in.ExtVirtualLinks {
		for _, c := range l.ExtCps {
			nfv["CP"].(map[string]any)[c.CpdID] = map[string]any{"network": l.ResourceID}
		}
	}
	return nfv
}

// The seed's TOSCA VNFD (seed 001, "VNFD for Kube-adm with TOSCA template"):
// what the request must add is named node by node; with it, the templates
// deploy on the simulator's Heat — the internal VL as a network with its
// subnet, each VDU a group of servers whose ports are in the CPs' order —
// and scale by the group's capacity parameter.
func TestSeedTOSCAVNFD(t *testing.T) {
	fl := sample(t, "kubeadm-tosca", "cluster_install")
	if fl.HOT != nil {
		t.Fatal("the sample has a BaseHOT")
	}
	_, err := Generate(Input{VnfdID: "seed", Flavour: fl})
	probs := problemsOf(t, err)
	for _, vdu := range []string{"masterNode", "workerNode"} {
		wantProblem(t, probs, vdu, "has no compute flavour")
		wantProblem(t, probs, vdu, "additionalParams.nfv.VDU."+vdu+".flavor")
		wantProblem(t, probs, vdu, "has no image")
		wantProblem(t, probs, vdu+"ExternalCP", "no virtual_link and the request's extVirtualLinks give cpdId "+vdu+"ExternalCP no network")
	}
	if len(probs) != 4 {
		t.Errorf("problems about %v, want the 2 VDUs and the 2 external CPs", slices.Sorted(maps.Keys(probs)))
	}
	if !strings.Contains(err.Error(), "no Heat template (BaseHOT)") {
		t.Errorf("error text: %v", err)
	}

	in := seedInput(fl)
	tpl, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Generate(in)
	if again.Top != tpl.Top || !maps.Equal(again.Files, tpl.Files) {
		t.Error("two generations of the same input differ")
	}
	top := checkTemplate(t, tpl)
	if !maps.Equal(tpl.Groups, map[string]string{"masterNode": "masterNode_group", "workerNode": "worker_instance"}) {
		t.Errorf("groups %v", tpl.Groups)
	}
	if l := Layout(fl); !maps.Equal(l, map[string]Group{"masterNode": {"masterNode_group", "masterNode_group_desired_capacity"},
		"workerNode": {"worker_instance", "worker_instance_desired_capacity"}}) {
		t.Errorf("layout %v", l)
	}
	for name, typ := range map[string]string{"internalVL": "OS::Neutron::Net", "internalVL_subnet": "OS::Neutron::Subnet",
		"masterNode_group": "OS::Heat::AutoScalingGroup", "worker_instance": "OS::Heat::AutoScalingGroup",
		"worker_instance_scale_out": "OS::Heat::ScalingPolicy", "worker_instance_scale_in": "OS::Heat::ScalingPolicy"} {
		if top.Resources[name].Type != typ {
			t.Errorf("top resource %s: %q, want %s", name, top.Resources[name].Type, typ)
		}
	}
	if len(top.Resources) != 6 {
		t.Errorf("top resources %v", slices.Sorted(maps.Keys(top.Resources)))
	}
	if p := top.Resources["worker_instance_scale_in"].Properties; p["scaling_adjustment"] != -1 {
		t.Errorf("scale-in policy %v", p)
	}
	if p := top.Resources["worker_instance"].Properties; p["min_size"] != 1 || p["max_size"] != 3 {
		t.Errorf("worker group sizes %v", p)
	}
	for _, want := range []string{"cidr: 10.10.0.0/24", "ip_version: 4", "get_param: [nfv, CP, masterNodeExternalCP, network]",
		"masterNodeInternalCP_network: get_resource: internalVL", "depends_on: - internalVL_subnet"} {
		if !strings.Contains(flowish(tpl.Top), want) {
			t.Errorf("top template lacks %q:\n%s", want, tpl.Top)
		}
	}
	// NIC order: the CPs' order property.
	master := parseDoc(t, "masterNode.yaml", tpl.Files["masterNode.yaml"])
	nets := master.Resources["masterNode"].Properties["networks"].([]any)
	var order []string
	for _, n := range nets {
		order = append(order, n.(map[string]any)["port"].(map[string]any)["get_resource"].(string))
	}
	if !slices.Equal(order, []string{"masterNodeInternalCP", "masterNodeExternalCP"}) {
		t.Errorf("NIC order %v", order)
	}
	if !strings.Contains(tpl.Files["masterNode.yaml"], "chpasswd:") || !strings.Contains(tpl.Top, "node_password:\n    type: string\n    hidden: true") {
		t.Errorf("login: cloud-config or hidden node_password missing:\n%s", tpl.Files["masterNode.yaml"])
	}

	c := newCloud(t)
	params := map[string]any{"nfv": nfvOf(in), "node_password": "pw", "masterNode_group_desired_capacity": 1, "worker_instance_desired_capacity": 1}
	id := c.deploy("vnflcm_seed", tpl, params)
	rs := c.resources("vnflcm_seed", id)
	if n := count(rs, "OS::Nova::Server", "masterNode"); n != 1 {
		t.Errorf("%d masterNode servers", n)
	}
	if n := count(rs, "OS::Nova::Server", "workerNode"); n != 1 {
		t.Errorf("%d workerNode servers", n)
	}
	var internal []string
	for _, r := range rs {
		if r.Name == "internalVL_subnet" {
			if s := c.subnet(r.PhysicalID); s.CIDR != "10.10.0.0/24" || s.IPVersion != 4 {
				t.Errorf("subnet %+v", s)
			}
		}
		if r.Type == "OS::Neutron::Port" {
			p := c.port(r.PhysicalID)
			switch {
			case strings.HasSuffix(r.Name, "ExternalCP"):
				if p.NetworkID != net0ID {
					t.Errorf("external port %s on %s, want net0", r.Name, p.NetworkID)
				}
			case strings.HasSuffix(r.Name, "InternalCP"):
				if len(p.FixedIPs) != 1 || !strings.HasPrefix(p.FixedIPs[0].IPAddress, "10.10.0.") {
					t.Errorf("internal port %s: %+v", r.Name, p.FixedIPs)
				}
				internal = append(internal, p.FixedIPs[0].IPAddress)
			}
		}
	}
	if len(internal) != 2 {
		t.Errorf("internal addresses %v", internal)
	}
	// Scale the workers to 3 by the group's capacity parameter.
	c.patch("vnflcm_seed", id, map[string]any{"worker_instance_desired_capacity": 3})
	rs = c.resources("vnflcm_seed", id)
	if n := count(rs, "OS::Nova::Server", "workerNode"); n != 3 {
		t.Errorf("after scale-out: %d workerNode servers", n)
	}
	if n := count(rs, "OS::Neutron::Port", "workerNodeInternalCP"); n != 3 {
		t.Errorf("after scale-out: %d internal worker ports", n)
	}
}

// The other samples, as if they had no BaseHOT: their VNFDs alone give
// deployable templates; the HA sample's VipCp becomes a port whose address
// the masters' ports allow.
func TestSamplesWithoutBaseHOT(t *testing.T) {
	c := newCloud(t)
	for _, tc := range []struct {
		pkg, flavour string
		cps          []string
		servers      map[string]int
	}{
		{"kubeadm-single", "simple", []string{"masterNode_CP1", "workerNode_CP1"}, map[string]int{"masterNode": 1, "workerNode": 2}},
		{"kubeadm-ha", "ha", []string{"masterNode_CP1", "workerNode_CP1", "vip_CP"}, map[string]int{"masterNode": 3, "workerNode": 2}},
		{"kubeadm-ha-lb", "ha", []string{"masterNode_CP1", "workerNode_CP1", "lbNode_CP1", "vip_CP"}, map[string]int{"masterNode": 3, "workerNode": 2, "lbNode": 2}},
		{"kubespray", "simple", nil, nil},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			fl := sample(t, tc.pkg, tc.flavour)
			fl.HOT = nil
			cps := tc.cps
			if cps == nil {
				for id := range fl.ExtCPs {
					cps = append(cps, id)
				}
				slices.Sort(cps)
			}
			in := Input{VnfdID: tc.pkg, Flavour: fl, ExtVirtualLinks: []model.ExtVirtualLinkData{extLink("ext", net0ID, cps...)},
				AdditionalParams: map[string]any{"node_password": "pw"}}
			tpl, err := Generate(in)
			if err != nil {
				t.Fatal(err)
			}
			checkTemplate(t, tpl)
			params := map[string]any{"nfv": nfvOf(in), "node_password": "pw"}
			for vdu, g := range tpl.Groups {
				params[g+"_desired_capacity"] = fl.Instances(vdu, nil)
			}
			id := c.deploy("vnflcm_"+tc.pkg, tpl, params)
			rs := c.resources("vnflcm_"+tc.pkg, id)
			for vdu, n := range tc.servers {
				if got := count(rs, "OS::Nova::Server", vdu); got != n {
					t.Errorf("%d %s servers, want %d", got, vdu, n)
				}
			}
			if tc.pkg != "kubeadm-ha" && tc.pkg != "kubeadm-ha-lb" {
				return
			}
			var vip string
			for _, r := range rs {
				if r.Name == "vip_CP" {
					vip = c.port(r.PhysicalID).FixedIPs[0].IPAddress
				}
			}
			target := fl.VipCPs["vip_CP"].Targets[0]
			allowed := 0
			for _, r := range rs {
				if r.Name != target {
					continue
				}
				p := c.port(r.PhysicalID)
				if len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].IPAddress != vip {
					t.Errorf("%s port %s: allowed_address_pairs %+v, want the VIP %s", target, r.PhysicalID, p.AllowedAddressPairs, vip)
				}
				allowed++
			}
			if vip == "" || allowed == 0 {
				t.Errorf("VIP %q, %d target ports", vip, allowed)
			}
		})
	}
}

// flavour builds a small flavour for the problem cases: VDU a with CP a_cp
// on VL vl (10.0.0.0/24), max 3 instances, image and flavor.
func flavour() *model.Flavour {
	return &model.Flavour{ID: "f",
		VDUs: map[string]*model.VDU{"a": {ID: "a", MinInstances: 1, MaxInstances: 3, InitialInstances: 1, Flavor: "m1.small",
			SwImage: &model.SwImage{Name: "img"}, CPs: []model.VduCP{{ID: "a_cp", VirtualLink: "vl"}}}},
		VirtualLinks: map[string]*model.VirtualLink{"vl": {ID: "vl", Protocols: []model.VirtualLinkProtocol{{IPVersion: "ipv4", CIDR: "10.0.0.0/24"}}}},
	}
}

// Hostile and incomplete VNFDs and requests: every problem is reported at
// once, each naming its node; nothing is generated.
func TestProblems(t *testing.T) {
	if _, err := Generate(Input{Flavour: flavour()}); err != nil {
		t.Fatalf("the base case: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(fl *model.Flavour, in *Input)
		node   string
		text   string
	}{
		{"no VDU", func(fl *model.Flavour, in *Input) { fl.VDUs = nil }, "flavour f", "has no VDU"},
		{"bad VDU name", func(fl *model.Flavour, in *Input) {
			fl.VDUs["../etc/x"] = fl.VDUs["a"]
			fl.VDUs["../etc/x"].ID = "../etc/x"
			delete(fl.VDUs, "a")
		}, `"../etc/x"`, "the VDU name must be 1-128 letters"},
		{"bad CP name", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].CPs[0].ID = "a cp" }, `"a cp"`, "the VduCp name must"},
		{"long name", func(fl *model.Flavour, in *Input) {
			long := strings.Repeat("v", 200)
			fl.VirtualLinks[long] = &model.VirtualLink{ID: long, Protocols: fl.VirtualLinks["vl"].Protocols}
			fl.VDUs["a"].CPs[0].VirtualLink = long
			delete(fl.VirtualLinks, "vl")
		}, "", ""},
		{"VL collides with a group", func(fl *model.Flavour, in *Input) {
			fl.VirtualLinks["a_group"] = &model.VirtualLink{ID: "a_group", Protocols: []model.VirtualLinkProtocol{{CIDR: "10.1.0.0/24"}}}
			fl.VDUs["a"].CPs = append(fl.VDUs["a"].CPs, model.VduCP{ID: "a_cp2", VirtualLink: "a_group"})
		}, "a", `its Heat resource "a_group" collides with the one generated for a_group`},
		{"CP named like its VDU", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].CPs[0].ID = "a" }, "a", `its Heat resource "a" in the template of VDU a collides with the one for VDU a`},
		{"CP named like the login config", func(fl *model.Flavour, in *Input) {
			fl.VDUs["a"].CPs[0].ID = "cloud_config"
			in.AdditionalParams = map[string]any{"node_password": "x"}
		}, "(login)", "collides with the one for VduCp cloud_config"},
		{"huge max", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].MaxInstances = 1 << 30 }, "a", "max_number_of_instances 1073741824 is more than one generated Heat group holds (1000)"},
		{"level beyond max", func(fl *model.Flavour, in *Input) {
			fl.ScalingAspects = map[string]*model.ScalingAspect{"s": {MaxScaleLevel: 100, VduDeltas: map[string]map[string]int{"a": {"d": 50}}}}
			in.Levels = map[string]int{"s": 100}
		}, "a", "the instantiation level gives 5001 instances, more than max_number_of_instances 3"},
		{"no image", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].SwImage = nil }, "a", "has no image"},
		{"no flavour", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].Flavor = "" }, "a", "has no compute flavour"},
		{"no CP", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].CPs = nil }, "a", "has no VduCp"},
		{"unknown storage", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].Storages = []string{"disk"} }, "a", "requires the virtual storage disk, which the flavour does not define"},
		{"external CP without a network", func(fl *model.Flavour, in *Input) { fl.VDUs["a"].CPs[0].VirtualLink = "" }, "a_cp", "give cpdId a_cp no network"},
		{"external CP on an empty resourceId", func(fl *model.Flavour, in *Input) {
			fl.VDUs["a"].CPs[0].VirtualLink = ""
			in.ExtVirtualLinks = []model.ExtVirtualLinkData{extLink("x", "", "a_cp")}
		}, "a_cp", "no network"},
		{"VL without CIDR", func(fl *model.Flavour, in *Input) { fl.VirtualLinks["vl"].Protocols = nil }, "vl", "has no vl_profile.virtual_link_protocol_data[].l3_protocol_data.cidr"},
		{"CIDR with host bits", func(fl *model.Flavour, in *Input) { fl.VirtualLinks["vl"].Protocols[0].CIDR = "10.0.0.1/24" }, "vl", `cidr "10.0.0.1/24" is not a network address`},
		{"ip_version mismatch", func(fl *model.Flavour, in *Input) { fl.VirtualLinks["vl"].Protocols[0].IPVersion = "ipv6" }, "vl", "ip_version ipv6 does not match the cidr 10.0.0.0/24"},
		{"gateway outside", func(fl *model.Flavour, in *Input) { fl.VirtualLinks["vl"].Protocols[0].GatewayIP = "10.9.9.1" }, "vl", `gateway_ip "10.9.9.1" is not an address of 10.0.0.0/24`},
		{"fixed address on a scalable VDU", func(fl *model.Flavour, in *Input) {
			fl.VDUs["a"].CPs[0].VirtualLink = ""
			in.ExtVirtualLinks = []model.ExtVirtualLinkData{{ID: "x", ResourceID: "n", ExtCps: []model.VnfExtCpData{{CpdID: "a_cp", CpConfig: []map[string]any{{"cpProtocolData": []any{map[string]any{
				"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "fixedAddresses": []any{"10.0.0.5"}}}}}}}}}}}}
		}, "a_cp", "may have up to 3 instances, which cannot share them"},
		{"MAC on a scalable VDU", func(fl *model.Flavour, in *Input) {
			in.AdditionalParams = map[string]any{"nfv": map[string]any{"CP": map[string]any{"a_cp": map[string]any{"mac_address": "fa:16:3e:00:00:01"}}}}
		}, "a_cp", "cannot share one"},
		{"pre-created port", func(fl *model.Flavour, in *Input) {
			fl.VDUs["a"].CPs[0].VirtualLink = ""
			in.ExtVirtualLinks = []model.ExtVirtualLinkData{{ID: "x", ResourceID: "n", ExtCps: []model.VnfExtCpData{{CpdID: "a_cp", CpConfig: []map[string]any{{"linkPortId": "p1"}}}}}}
		}, "a_cp", "linkPortId (a pre-created port) is not supported"},
		{"VipCp without a network", func(fl *model.Flavour, in *Input) {
			fl.VipCPs = map[string]*model.VipCP{"vip": {ID: "vip", Targets: []string{"a_cp"}}}
		}, "vip", "the VipCp has no virtual_link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := flavour()
			in := Input{Flavour: fl}
			tc.mutate(fl, &in)
			_, err := Generate(in)
			if tc.node == "" { // names up to 128 characters; longer ones are refused
				if err == nil || !strings.Contains(err.Error(), "the virtual link name must be 1-128") {
					t.Errorf("200-character VL name: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("generated")
			}
			wantProblem(t, problemsOf(t, err), tc.node, tc.text)
		})
	}
}

// Fixed addresses and a MAC for the one instance of a VDU; a VL given by
// extManagedVirtualLinks is not created; a VL exposed by a VnfExtCp the
// request connects takes that external network.
func TestRequestShapedPorts(t *testing.T) {
	fl := flavour()
	fl.VDUs["a"].MaxInstances = 1
	fl.VDUs["a"].CPs = append(fl.VDUs["a"].CPs, model.VduCP{ID: "a_ext"})
	fl.VirtualLinks["vl2"] = &model.VirtualLink{ID: "vl2"}
	fl.VDUs["a"].CPs = append(fl.VDUs["a"].CPs, model.VduCP{ID: "a_cp2", VirtualLink: "vl2"})
	fl.ExtCPs = map[string]*model.ExtCP{"vl2_ext": {ID: "vl2_ext", Kind: "VnfExtCp", VirtualLink: "vl2"}}
	fixed := map[string]any{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": map[string]any{"macAddress": "fa:16:3e:00:00:01",
		"ipAddresses": []any{map[string]any{"type": "IPV4", "fixedAddresses": []any{"10.77.0.50"}}}}}
	in := Input{Flavour: fl,
		ExtVirtualLinks: []model.ExtVirtualLinkData{
			{ID: "e", ResourceID: net0ID, ExtCps: []model.VnfExtCpData{{CpdID: "a_ext", CpConfig: []map[string]any{{"cpProtocolData": []any{fixed}}}}}},
			extLink("e2", publicID, "vl2_ext")},
		ExtManagedVirtualLinks: []model.ExtManagedVirtualLinkData{{ID: "m", VnfVirtualLinkDescID: "vl", ResourceID: net0ID}}}
	tpl, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	top := checkTemplate(t, tpl)
	if _, ok := top.Resources["vl"]; ok {
		t.Error("the externally managed VL was created")
	}
	if _, ok := top.Resources["vl2"]; ok {
		t.Error("the VL exposed by a connected VnfExtCp was created")
	}
	for _, want := range []string{"a_cp_network: get_param: [nfv, CP, a_cp, network]", "a_cp2_network: get_param: [nfv, CP, vl2_ext, network]",
		"a_ext_fixed_ips: get_param: [nfv, CP, a_ext, fixed_ips]", "a_ext_mac_address: get_param: [nfv, CP, a_ext, mac_address]"} {
		if !strings.Contains(flowish(tpl.Top), want) {
			t.Errorf("top template lacks %q:\n%s", want, tpl.Top)
		}
	}
	a := parseDoc(t, "a.yaml", tpl.Files["a.yaml"])
	if p := a.Resources["a_ext"].Properties; p["fixed_ips"] == nil || p["mac_address"] == nil {
		t.Errorf("a_ext port %v", p)
	}
	c := newCloud(t)
	nfv := map[string]any{"VDU": map[string]any{"a": map[string]any{"flavor": "m1.small", "image": "img"}}, "CP": map[string]any{
		"a_cp": map[string]any{"network": net0ID}, "vl2_ext": map[string]any{"network": publicID},
		"a_ext": map[string]any{"network": net0ID, "fixed_ips": []any{map[string]any{"ip_address": "10.77.0.50"}}, "mac_address": "fa:16:3e:00:00:01"}}}
	id := c.deploy("shaped", tpl, map[string]any{"nfv": nfv, "a_group_desired_capacity": 1})
	for _, r := range c.resources("shaped", id) {
		if r.Name == "a_ext" {
			if p := c.port(r.PhysicalID); p.FixedIPs[0].IPAddress != "10.77.0.50" || p.MACAddress != "fa:16:3e:00:00:01" {
				t.Errorf("a_ext port %+v", p)
			}
		}
	}
}

// flowish joins YAML lines so that "key:\n  {…}" and "key: {…}" compare equal.
func flowish(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(strings.TrimSpace(l))
		if strings.HasSuffix(l, ":") {
			b.WriteString(" ")
		} else {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Virtual block storage: a volume per storage, the one with an image the
// boot volume (no image parameter then), the others attached.
func TestStorage(t *testing.T) {
	fl := flavour()
	fl.Storages = map[string]*model.VirtualStorage{
		"root": {ID: "root", Size: 20e9, SwImage: &model.SwImage{Name: "boot-img"}},
		"data": {ID: "data", Size: 1},
	}
	fl.VDUs["a"].Storages = []string{"root", "data"}
	tpl, err := Generate(Input{Flavour: fl})
	if err != nil {
		t.Fatal(err)
	}
	checkTemplate(t, tpl)
	a := parseDoc(t, "a.yaml", tpl.Files["a.yaml"])
	if r := a.Resources["root"]; r.Type != "OS::Cinder::Volume" || r.Properties["size"] != 19 || r.Properties["image"] != "boot-img" {
		t.Errorf("root volume %+v (20 GB = 18.6 GiB, rounded up to 19)", r)
	}
	if r := a.Resources["data"]; r.Properties["size"] != 1 {
		t.Errorf("data volume %+v", r)
	}
	if r := a.Resources["data_attachment"]; r.Type != "OS::Cinder::VolumeAttachment" {
		t.Errorf("data attachment %+v", r)
	}
	srv := a.Resources["a"].Properties
	if srv["image"] != nil || srv["block_device_mapping_v2"] == nil {
		t.Errorf("server %v: boots from the root volume", srv)
	}
	if _, ok := a.Parameters["image"]; ok {
		t.Error("an image parameter for a server that boots from a volume")
	}
}

// A large VNFD (2000 VDUs on one VL) generates one group each, in linear
// work (no timing asserted: make bench owns performance).
func TestManyVDUs(t *testing.T) {
	fl := flavour()
	for i := range 2000 {
		id := fmt.Sprintf("vdu%04d", i)
		fl.VDUs[id] = &model.VDU{ID: id, MinInstances: 1, MaxInstances: 1, InitialInstances: 1, Flavor: "f", SwImage: &model.SwImage{Name: "i"},
			CPs: []model.VduCP{{ID: id + "_cp", VirtualLink: "vl"}}}
	}
	tpl, err := Generate(Input{Flavour: fl})
	if err != nil {
		t.Fatal(err)
	}
	top := checkTemplate(t, tpl)
	if len(tpl.Files) != 2001 || len(top.Resources) != 2003 {
		t.Errorf("%d files, %d top resources", len(tpl.Files), len(top.Resources))
	}
}
