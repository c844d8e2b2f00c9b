// Package hotgen generates the Heat templates of a deployment flavour whose
// VNF package has no base HOT (BaseHOT/<flavourId>/): the VDUs, connection
// points and virtual links of the SOL001 VNFD become Heat resources, as
// Tacker does with its TOSCA translation (heat-translator), in the layout the
// OpenStack infra driver already reads from hand-written base HOTs. It is a
// pure function of the flavour and the instantiate request.
//
// The templates:
//
//   - Top template: the parameter nfv (json), filled by the infra driver as
//     for a base HOT (nfv.VDU.<vdu>.{flavor,image} from the VNFD's
//     virtual_compute and sw_image_data or additionalParams.nfv, nfv.CP.<cp>
//     from extVirtualLinks / extManagedVirtualLinks); per internal virtual
//     link an OS::Neutron::Net named after it and one OS::Neutron::Subnet per
//     l3_protocol_data (<vl>_subnet, <vl>_subnet2, ...: cidr, ip_version,
//     gateway_ip, dhcp_enabled); per VipCp an OS::Neutron::Port named after
//     it; per VDU one OS::Heat::AutoScalingGroup (min_size/max_size from
//     vdu_profile, desired_capacity from the parameter <group>_desired_capacity
//     the driver sets from the scale levels). A group is named after its
//     scaling aspect when the aspect scales that VDU alone (Tacker's
//     convention; with <aspect>_scale_out/_scale_in policies whose adjustment
//     is the aspect's first step delta), else <vduId>_group.
//   - One nested template per VDU, <vduId>.yaml (a group member): the
//     OS::Nova::Server named after the VDU with one OS::Neutron::Port per
//     VduCp, named after the CP, in the CPs' order (NIC order); a port is on
//     its internal virtual link's network, or on the external network the
//     request gives its cpdId (nfv.CP.<cp>.network), with fixed_ips and
//     mac_address when the request sets them and allowed_address_pairs for
//     the VipCps that target it; one OS::Cinder::Volume per virtual block
//     storage the VDU requires (size rounded up to GiB; one with
//     sw_image_data is the boot volume), attached to the server.
//   - With Input.Login (additionalParams.node_password), a cloud-config on
//     every server creating node_username (top-level parameter, default
//     ubuntu) with the password node_password (hidden), with passwordless
//     sudo: the login the management drivers use, as the sample base HOTs do.
//
// What the VNFD does not say must come from the request; Check reports every
// gap at once, each naming its node (the API answers 422 with them before an
// operation exists): a VDU without an image or a compute flavour, a VduCp
// with neither a virtual link nor an external network, a virtual link
// without a CIDR, fixed addresses for a CP of a VDU that may have several
// instances, pre-created ports (linkPortId), names Heat cannot use or that
// collide, and more than MaxVDUInstances instances of a VDU.
package hotgen

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Limits.
const (
	// HeatTemplateVersion is the HOT version of the generated templates.
	HeatTemplateVersion = "2018-08-31"
	// MaxVDUInstances bounds a VDU's max_number_of_instances: one stack
	// group holds at most this many servers.
	MaxVDUInstances = 1000
	// DefaultNodeUsername is node_username's default with Input.Login.
	DefaultNodeUsername = "ubuntu"
)

// Input is what the templates are generated from: the flavour and the
// instantiate request's parts that shape them.
type Input struct {
	// VnfdID and the flavour's ID go into the description.
	VnfdID  string
	Flavour *model.Flavour
	// Levels are the aspect scale levels at instantiation (the instantiation
	// level's); they give the groups' default capacities.
	Levels                 map[string]int
	ExtVirtualLinks        []model.ExtVirtualLinkData
	ExtManagedVirtualLinks []model.ExtManagedVirtualLinkData
	// AdditionalParams of the instantiate request: nfv overrides (flavor,
	// image, CP network), node_password / node_username.
	AdditionalParams map[string]any
}

// Template is a generated Heat template set.
type Template struct {
	// Top is the top template (YAML).
	Top string `json:"top"`
	// Files are the nested templates by the name the top template uses
	// (Heat's `files`): "<vduId>.yaml".
	Files map[string]string `json:"files"`
	// Groups maps each VDU to its AutoScalingGroup resource.
	Groups map[string]string `json:"groups"`
}

// Problem is one reason the templates cannot be generated, about one node
// of the VNFD (or request field).
type Problem struct {
	Node   string `json:"node"`
	Detail string `json:"detail"`
}

// Error lists every problem found.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("the VNFD flavour has no Heat template (BaseHOT) and one cannot be generated: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Node + ": " + p.Detail)
	}
	return b.String()
}

// Check reports what keeps Generate from working, without generating.
func Check(in Input) error {
	_, err := Generate(in)
	return err
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

type gen struct {
	in       Input
	fl       *model.Flavour
	problems []Problem
	// top-level resource names → the node that claims it
	topNames map[string]string
	// external CP networks the request (or nfv overrides) gives, by cpdId
	extNet map[string]bool
	// cpdIds with fixed_ips / mac_address in the request or overrides
	fixedIPs, macs map[string]bool
	// managed: internal VLs given by extManagedVirtualLinks
	managed map[string]bool
	// vlExtCP: internal VLs exposed by a VnfExtCp the request connects
	vlExtCP map[string]string
	// subnets of each generated VL
	subnets map[string][]string
}

func (g *gen) addf(node, format string, args ...any) {
	g.problems = append(g.problems, Problem{Node: node, Detail: fmt.Sprintf(format, args...)})
}

// claim reserves a top-level resource name for node.
func (g *gen) claim(name, node string) {
	if other, ok := g.topNames[name]; ok && other != node {
		g.addf(node, "its Heat resource %q collides with the one generated for %s; rename one of the nodes", name, other)
		return
	}
	g.topNames[name] = node
}

// Generate builds the templates, or returns an *Error listing every problem.
func Generate(in Input) (*Template, error) {
	fl := in.Flavour
	if fl == nil {
		return nil, errors.New("hotgen: no flavour")
	}
	g := &gen{in: in, fl: fl, topNames: map[string]string{}, extNet: map[string]bool{}, fixedIPs: map[string]bool{},
		macs: map[string]bool{}, managed: map[string]bool{}, vlExtCP: map[string]string{}, subnets: map[string][]string{}}
	if len(fl.VDUs) == 0 {
		g.addf("flavour "+fl.ID, "has no VDU (tosca.nodes.nfv.Vdu.Compute): there is nothing to deploy")
	}
	for _, name := range slices.Sorted(maps.Keys(fl.Untranslated)) {
		g.addf(name, "is a %s, which the VNFM does not translate into Heat; describe it in a base HOT (BaseHOT/%s/) or remove it", fl.Untranslated[name], fl.ID)
	}
	g.readRequest()
	g.checkNames()
	top := newMap()
	top.set("heat_template_version", HeatTemplateVersion)
	top.set("description", fmt.Sprintf("Generated by mini-VNFM from VNFD %s, flavour %s (the package has no BaseHOT/%s/). Do not edit: it is generated again for every operation.", in.VnfdID, fl.ID, fl.ID))
	params := top.sub("parameters")
	params.set("nfv", newMap().set("type", "json").set("description", "{VDU: {<vdu>: {flavor, image}}, CP: {<cp>: {network, fixed_ips, mac_address}}}, filled by the VNFM"))
	res := newMap()
	g.virtualLinks(res)
	g.vips(res)
	t := &Template{Files: map[string]string{}, Groups: map[string]string{}}
	login := g.login()
	if login {
		params.set("node_username", newMap().set("type", "string").set("default", DefaultNodeUsername).
			set("description", "login created on every server (additionalParams.node_username)"))
		params.set("node_password", newMap().set("type", "string").set("hidden", true).
			set("description", "password of node_username (additionalParams.node_password)"))
	}
	for _, id := range slices.Sorted(maps.Keys(fl.VDUs)) {
		v := fl.VDUs[id]
		group, capParam, policy := g.groupOf(v)
		t.Groups[id] = group
		nested, props := g.member(v, login)
		if nested == nil {
			continue
		}
		file := id + ".yaml"
		src, err := render(nested)
		if err != nil {
			return nil, err
		}
		t.Files[file] = src
		params.set(capParam, newMap().set("type", "number").set("default", min(fl.Instances(id, g.in.Levels), v.MaxInstances)).
			set("description", fmt.Sprintf("%s count, set by the VNFM from the scale levels", id)))
		asg := newMap().set("type", "OS::Heat::AutoScalingGroup")
		if deps := g.dependsOn(v); len(deps) > 0 {
			asg.set("depends_on", deps)
		}
		asg.sub("properties").
			set("min_size", v.MinInstances).
			set("max_size", v.MaxInstances).
			set("desired_capacity", getParam(capParam)).
			set("resource", newMap().set("type", file).set("properties", props))
		res.set(group, asg)
		if policy != 0 {
			for _, dir := range []struct {
				suffix string
				sign   int
			}{{"_scale_out", 1}, {"_scale_in", -1}} {
				res.set(group+dir.suffix, newMap().set("type", "OS::Heat::ScalingPolicy").set("properties", newMap().
					set("scaling_adjustment", dir.sign*policy).
					set("auto_scaling_group_id", getResource(group)).
					set("adjustment_type", "change_in_capacity")))
			}
		}
	}
	if len(g.problems) > 0 {
		slices.SortStableFunc(g.problems, func(a, b Problem) int { return strings.Compare(a.Node, b.Node) })
		return nil, &Error{Problems: g.problems}
	}
	top.set("resources", res)
	top.set("outputs", newMap())
	src, err := render(top)
	if err != nil {
		return nil, err
	}
	t.Top = src
	return t, nil
}

// readRequest notes what the request connects: external CP networks, fixed
// addresses, MACs, managed VLs, VnfExtCps.
func (g *gen) readRequest() {
	for _, l := range g.in.ExtVirtualLinks {
		for _, c := range l.ExtCps {
			if c.CpdID == "" {
				continue
			}
			g.extNet[c.CpdID] = l.ResourceID != ""
			for _, cfg := range c.CpConfig {
				if id, _ := cfg["linkPortId"].(string); id != "" {
					g.addf(c.CpdID, "cpConfig.linkPortId (a pre-created port) is not supported for a flavour without BaseHOT: the generated template creates the CP's port; give cpProtocolData instead")
				}
				pds, _ := cfg["cpProtocolData"].([]any)
				for _, pd := range pds {
					ipoe, _ := pd.(map[string]any)["ipOverEthernet"].(map[string]any)
					if mac, _ := ipoe["macAddress"].(string); mac != "" {
						g.macs[c.CpdID] = true
					}
					addrs, _ := ipoe["ipAddresses"].([]any)
					for _, a := range addrs {
						am, _ := a.(map[string]any)
						if f, _ := am["fixedAddresses"].([]any); len(f) > 0 {
							g.fixedIPs[c.CpdID] = true
						}
						if s, _ := am["subnetId"].(string); s != "" {
							g.fixedIPs[c.CpdID] = true
						}
					}
				}
			}
			if ext := g.fl.ExtCPs[c.CpdID]; ext != nil && ext.Kind == "VnfExtCp" && ext.VirtualLink != "" {
				g.vlExtCP[ext.VirtualLink] = c.CpdID
			}
		}
	}
	for _, m := range g.in.ExtManagedVirtualLinks {
		vl := cmp.Or(m.VnfVirtualLinkDescID, m.VirtualLinkDescID)
		if vl != "" {
			g.managed[vl] = true
		}
	}
	nfv, _ := g.in.AdditionalParams["nfv"].(map[string]any)
	cps, _ := nfv["CP"].(map[string]any)
	for id, raw := range cps {
		c, _ := raw.(map[string]any)
		if n, _ := c["network"].(string); n != "" {
			g.extNet[id] = true
		}
		if _, ok := c["fixed_ips"]; ok {
			g.fixedIPs[id] = true
		}
		if _, ok := c["mac_address"]; ok {
			g.macs[id] = true
		}
	}
}

func (g *gen) login() bool {
	_, ok := g.in.AdditionalParams["node_password"]
	return ok
}

// checkNames refuses names Heat cannot take as resource or file names.
func (g *gen) checkNames() {
	check := func(kind, id string) {
		if !nameRE.MatchString(id) {
			g.addf(fmt.Sprintf("%q", truncate(id, 60)), "the %s name must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit, to name its Heat resources", kind)
		}
	}
	fl := g.fl
	for id, v := range fl.VDUs {
		check("VDU", id)
		for _, cp := range v.CPs {
			check("VduCp", cp.ID)
		}
		if v.MaxInstances > MaxVDUInstances {
			g.addf(id, "max_number_of_instances %d is more than one generated Heat group holds (%d)", v.MaxInstances, MaxVDUInstances)
		}
		if n := fl.Instances(id, g.in.Levels); n > v.MaxInstances {
			g.addf(id, "the instantiation level gives %d instances, more than max_number_of_instances %d", n, v.MaxInstances)
		}
	}
	for id := range fl.VirtualLinks {
		check("virtual link", id)
	}
	for id := range fl.VipCPs {
		check("VipCp", id)
	}
	for id := range fl.Storages {
		check("virtual storage", id)
	}
	for id := range fl.ScalingAspects {
		check("scaling aspect", id)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// usedVLs lists the internal virtual links some CP or VipCp attaches to.
func (g *gen) usedVLs() map[string]bool {
	used := map[string]bool{}
	for _, v := range g.fl.VDUs {
		for _, cp := range v.CPs {
			if cp.VirtualLink != "" {
				used[cp.VirtualLink] = true
			}
		}
	}
	for _, vip := range g.fl.VipCPs {
		if vip.VirtualLink != "" {
			used[vip.VirtualLink] = true
		}
	}
	return used
}

// generated reports whether the VNFM creates the VL's network (not given
// by extManagedVirtualLinks or an external network through a VnfExtCp).
func (g *gen) generated(vl string) bool {
	return !g.managed[vl] && g.vlExtCP[vl] == ""
}

// virtualLinks adds a network and its subnets per internal virtual link.
func (g *gen) virtualLinks(res *omap) {
	used := g.usedVLs()
	for _, id := range slices.Sorted(maps.Keys(g.fl.VirtualLinks)) {
		vl := g.fl.VirtualLinks[id]
		if !used[id] || !g.generated(id) {
			continue
		}
		g.claim(id, id)
		res.set(id, newMap().set("type", "OS::Neutron::Net").set("properties", newMap().set("name", id)))
		n := 0
		for _, p := range vl.Protocols {
			if p.CIDR == "" {
				continue
			}
			pfx, err := netip.ParsePrefix(p.CIDR)
			if err != nil || pfx.Masked() != pfx {
				g.addf(id, "l3_protocol_data.cidr %q is not a network address such as 10.10.0.0/24", p.CIDR)
				continue
			}
			ver := 4
			if pfx.Addr().Is6() {
				ver = 6
			}
			if want := strings.ToLower(p.IPVersion); want != "" && want != fmt.Sprintf("ipv%d", ver) {
				g.addf(id, "l3_protocol_data.ip_version %s does not match the cidr %s", p.IPVersion, p.CIDR)
			}
			name := id + "_subnet"
			if n > 0 {
				name = fmt.Sprintf("%s_subnet%d", id, n+1)
			}
			n++
			g.claim(name, id)
			props := newMap().set("network", getResource(id)).set("cidr", p.CIDR).set("ip_version", ver)
			if p.GatewayIP != "" {
				gw, err := netip.ParseAddr(p.GatewayIP)
				if err != nil || !pfx.Contains(gw) {
					g.addf(id, "l3_protocol_data.gateway_ip %q is not an address of %s", p.GatewayIP, p.CIDR)
				}
				props.set("gateway_ip", p.GatewayIP)
			}
			if p.DHCPEnabled != nil {
				props.set("enable_dhcp", *p.DHCPEnabled)
			}
			res.set(name, newMap().set("type", "OS::Neutron::Subnet").set("properties", props))
			g.subnets[id] = append(g.subnets[id], name)
		}
		if n == 0 {
			g.addf(id, "has no vl_profile.virtual_link_protocol_data[].l3_protocol_data.cidr, so its subnet cannot be created; add one (e.g. cidr: 10.10.0.0/24) or give the network in extManagedVirtualLinks")
		}
	}
}

// network is the Heat value of a port's network for a CP (or VipCp) id on
// virtual link vl ("" for an external CP); ok false when there is none.
func (g *gen) network(cp, vl string) (any, bool) {
	switch {
	case vl == "":
		if g.extNet[cp] {
			return getParam("nfv", "CP", cp, "network"), true
		}
		return nil, false
	case g.managed[vl]:
		return getParam("nfv", "CP", cp, "network"), true
	case g.vlExtCP[vl] != "":
		return getParam("nfv", "CP", g.vlExtCP[vl], "network"), true
	default:
		return getResource(vl), true
	}
}

// vips adds a port per VipCp: the address its targets share.
func (g *gen) vips(res *omap) {
	for _, id := range slices.Sorted(maps.Keys(g.fl.VipCPs)) {
		vip := g.fl.VipCPs[id]
		net, ok := g.network(id, vip.VirtualLink)
		if !ok {
			g.addf(id, "the VipCp has no virtual_link and the request's extVirtualLinks give cpdId %s no network; add an extCps entry for it (or additionalParams.nfv.CP.%s.network)", id, id)
			continue
		}
		g.claim(id, id)
		props := newMap().set("network", net)
		if g.fixedIPs[id] {
			props.set("fixed_ips", getParam("nfv", "CP", id, "fixed_ips"))
		}
		p := newMap().set("type", "OS::Neutron::Port")
		if vip.VirtualLink != "" && len(g.subnets[vip.VirtualLink]) > 0 {
			p.set("depends_on", g.subnets[vip.VirtualLink])
		}
		res.set(id, p.set("properties", props))
	}
}

// Group is a VDU's AutoScalingGroup in a generated template.
type Group struct {
	// Name is the group resource; CapacityParam the top-level parameter its
	// desired_capacity reads.
	Name, CapacityParam string
}

// Layout names each VDU's group and capacity parameter, as Generate makes
// them: a function of the flavour alone, so a later operation (scale,
// heal) knows the template's groups without the instantiation's request.
func Layout(fl *model.Flavour) map[string]Group {
	g := &gen{fl: fl, topNames: map[string]string{}}
	out := map[string]Group{}
	for _, id := range slices.Sorted(maps.Keys(fl.VDUs)) {
		name, capParam, _ := g.groupOf(fl.VDUs[id])
		out[id] = Group{Name: name, CapacityParam: capParam}
	}
	return out
}

// groupOf names a VDU's group, its capacity parameter and the scaling
// policies' adjustment (0: no policies).
func (g *gen) groupOf(v *model.VDU) (group, capParam string, policy int) {
	var aspects []string
	for id, a := range g.fl.ScalingAspects {
		if _, ok := a.VduDeltas[v.ID]; ok {
			aspects = append(aspects, id)
		}
	}
	if len(aspects) == 1 && len(g.fl.ScalingAspects[aspects[0]].VduDeltas) == 1 {
		a := aspects[0]
		group, policy = a, g.fl.ScalingAspects[a].StepDelta(v.ID, 0)
		g.claim(group+"_scale_out", "aspect "+a)
		g.claim(group+"_scale_in", "aspect "+a)
	} else {
		group = v.ID + "_group"
	}
	g.claim(group, v.ID)
	return group, group + "_desired_capacity", policy
}

// dependsOn lists the subnets a VDU's ports need before they get addresses.
func (g *gen) dependsOn(v *model.VDU) []string {
	seen := map[string]bool{}
	var out []string
	for _, cp := range v.CPs {
		for _, s := range g.subnets[cp.VirtualLink] {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// member builds a VDU's nested template and the group's member properties.
func (g *gen) member(v *model.VDU, login bool) (*omap, *omap) {
	fl := g.fl
	id := v.ID
	type owner struct{ kind, node string }
	local := map[string]owner{}
	claim := func(name, kind, node string) {
		if other, ok := local[name]; ok && other != (owner{kind, node}) {
			g.addf(node, "its Heat resource %q in the template of VDU %s collides with the one for %s %s; rename one of the nodes", name, id, other.kind, other.node)
		}
		local[name] = owner{kind, node}
	}
	claim(id, "VDU", id)
	nested := newMap()
	nested.set("heat_template_version", HeatTemplateVersion)
	nested.set("description", fmt.Sprintf("One %s instance (VDU %s of flavour %s): generated by mini-VNFM", cmp.Or(v.Name, id), id, fl.ID))
	np := nested.sub("parameters")
	nr := newMap()
	props := newMap()
	server := newMap()
	var bootVolume string
	for _, sid := range v.Storages {
		st := fl.Storages[sid]
		if st == nil {
			g.addf(id, "requires the virtual storage %s, which the flavour does not define", sid)
			continue
		}
		claim(sid, "virtual storage", sid)
		gib := (st.Size + (1<<30 - 1)) >> 30
		vol := newMap().set("size", max(gib, 1))
		if st.SwImage != nil && st.SwImage.Name != "" {
			vol.set("image", st.SwImage.Name)
			if bootVolume == "" {
				bootVolume = sid
			}
		}
		nr.set(sid, newMap().set("type", "OS::Cinder::Volume").set("properties", vol))
	}
	// compute flavour and image
	nfv, _ := g.in.AdditionalParams["nfv"].(map[string]any)
	vdus, _ := nfv["VDU"].(map[string]any)
	over, _ := vdus[id].(map[string]any)
	if v.Flavor == "" && over["flavor"] == nil {
		g.addf(id, "has no compute flavour: the VNFD gives no virtual_compute requested_additional_capability_name; give one, or additionalParams.nfv.VDU.%s.flavor (a Nova flavor name) in the request", id)
	}
	np.set("flavor", newMap().set("type", "string"))
	props.set("flavor", getParam("nfv", "VDU", id, "flavor"))
	server.set("name", cmp.Or(v.Name, id))
	server.set("flavor", getParam("flavor"))
	if bootVolume == "" {
		if (v.SwImage == nil || v.SwImage.Name == "") && over["image"] == nil {
			g.addf(id, "has no image: the VNFD gives no sw_image_data (and no virtual storage with one); give sw_image_data.name, or additionalParams.nfv.VDU.%s.image (a Glance image name) in the request", id)
		}
		np.set("image", newMap().set("type", "string"))
		props.set("image", getParam("nfv", "VDU", id, "image"))
		server.set("image", getParam("image"))
	} else {
		server.set("block_device_mapping_v2", []any{newMap().set("volume_id", getResource(bootVolume)).set("boot_index", 0).set("delete_on_termination", false)})
	}
	// ports, in NIC order
	var nets []any
	for _, cp := range v.CPs {
		claim(cp.ID, "VduCp", cp.ID)
		net, ok := g.network(cp.ID, cp.VirtualLink)
		if !ok {
			g.addf(cp.ID, "the VduCp of %s has no virtual_link and the request's extVirtualLinks give cpdId %s no network; add an extCps entry for it (or additionalParams.nfv.CP.%s.network)", id, cp.ID, cp.ID)
			continue
		}
		pp := newMap()
		pn := cp.ID + "_network"
		np.set(pn, newMap().set("type", "string"))
		props.set(pn, net)
		pp.set("network", getParam(pn))
		if g.fixedIPs[cp.ID] {
			if v.MaxInstances > 1 {
				g.addf(cp.ID, "the request gives fixed addresses or a subnet for it, but its VDU %s may have up to %d instances, which cannot share them; leave cpProtocolData's addresses dynamic", id, v.MaxInstances)
			}
			fp := cp.ID + "_fixed_ips"
			np.set(fp, newMap().set("type", "json"))
			props.set(fp, getParam("nfv", "CP", cp.ID, "fixed_ips"))
			pp.set("fixed_ips", getParam(fp))
		}
		if g.macs[cp.ID] {
			if v.MaxInstances > 1 {
				g.addf(cp.ID, "the request gives a MAC address for it, but its VDU %s may have up to %d instances, which cannot share one", id, v.MaxInstances)
			}
			mp := cp.ID + "_mac_address"
			np.set(mp, newMap().set("type", "string"))
			props.set(mp, getParam("nfv", "CP", cp.ID, "mac_address"))
			pp.set("mac_address", getParam(mp))
		}
		var pairs []any
		for _, vid := range slices.Sorted(maps.Keys(fl.VipCPs)) {
			if slices.Contains(fl.VipCPs[vid].Targets, cp.ID) {
				ap := vid + "_address"
				np.set(ap, newMap().set("type", "string"))
				props.set(ap, getAttr(vid, "fixed_ips", 0, "ip_address"))
				pairs = append(pairs, newMap().set("ip_address", getParam(ap)))
			}
		}
		if len(pairs) > 0 {
			pp.set("allowed_address_pairs", pairs)
		}
		nr.set(cp.ID, newMap().set("type", "OS::Neutron::Port").set("properties", pp))
		nets = append(nets, newMap().set("port", getResource(cp.ID)))
	}
	if len(v.CPs) == 0 {
		g.addf(id, "has no VduCp: its servers would have no network interface; bind at least one tosca.nodes.nfv.VduCp to it (virtual_binding)")
	}
	server.set("networks", nets)
	if login {
		claim("cloud_config", "login", "(login)")
		np.set("username", newMap().set("type", "string"))
		np.set("password", newMap().set("type", "string").set("hidden", true))
		props.set("username", getParam("node_username"))
		props.set("password", getParam("node_password"))
		server.set("user_data_format", "RAW")
		server.set("user_data", getResource("cloud_config"))
	}
	// the server first, then its ports, volumes, attachments, cloud-config
	body := newMap()
	body.set(id, newMap().set("type", "OS::Nova::Server").set("properties", server))
	for _, k := range nr.keys {
		if _, isVol := fl.Storages[k]; !isVol {
			body.set(k, nr.vals[k])
		}
	}
	for _, sid := range v.Storages {
		if vol, ok := nr.vals[sid]; ok {
			body.set(sid, vol)
			if sid != bootVolume {
				an := sid + "_attachment"
				claim(an, "volume attachment", sid)
				body.set(an, newMap().set("type", "OS::Cinder::VolumeAttachment").set("properties", newMap().
					set("instance_uuid", getResource(id)).set("volume_id", getResource(sid))))
			}
		}
	}
	if login {
		body.set("cloud_config", cloudConfig())
	}
	nested.set("resources", body)
	return nested, props
}

// cloudConfig creates the login the management drivers use, like the
// sample base HOTs.
func cloudConfig() *omap {
	user := newMap().set("name", getParam("username")).set("shell", "/bin/bash").
		set("sudo", "ALL=(ALL) NOPASSWD:ALL").set("lock_passwd", false)
	cc := newMap().set("ssh_pwauth", true).set("users", []any{"default", user}).
		set("chpasswd", newMap().set("expire", false).set("users", []any{newMap().
			set("name", getParam("username")).set("password", getParam("password")).set("type", "text")}))
	return newMap().set("type", "OS::Heat::CloudConfig").set("properties", newMap().set("cloud_config", cc))
}
