package openstack

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Heat resource types the driver understands.
const (
	typeServer      = "OS::Nova::Server"
	typePort        = "OS::Neutron::Port"
	typeNet         = "OS::Neutron::Net"
	typeFloatingIP  = "OS::Neutron::FloatingIP"
	typeVolume      = "OS::Cinder::Volume"
	typeASG         = "OS::Heat::AutoScalingGroup"
	typeResourceGrp = "OS::Heat::ResourceGroup"
)

// hot is the part of a Heat template the driver reads.
type hot struct {
	Parameters map[string]hotParam    `yaml:"parameters"`
	Resources  map[string]hotResource `yaml:"resources"`
}

type hotParam struct {
	Type    string `yaml:"type"`
	Default any    `yaml:"default"`
}

type hotResource struct {
	Type       string         `yaml:"type"`
	Properties map[string]any `yaml:"properties"`
}

func parseHOT(name string, b []byte) (*hot, error) {
	var h hot
	if err := yaml.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("Heat template %s: %w", name, err)
	}
	return &h, nil
}

// group is a scaling group (OS::Heat::AutoScalingGroup) of the top template.
type group struct {
	Name string // resource name; by Tacker's convention the aspect id
	// VDUs are the VDUs one member holds (its OS::Nova::Server resources
	// named after VDUs).
	VDUs []string
	// CapacityParam is the top-level parameter desired_capacity reads
	// ({get_param: <name>}); "" when it reads nfv or is a literal.
	CapacityParam string
	// CapacityNfv is true for desired_capacity: {get_param: [nfv, VDU, <vdu>, desired_capacity]}.
	CapacityNfv bool
}

// layout is what the driver learns from a flavour's Heat templates.
type layout struct {
	params map[string]hotParam
	groups map[string]*group // by resource name
}

// analyze reads the top template (and the member templates of its groups).
func analyze(top []byte, files map[string]string, fl *model.Flavour) (*layout, error) {
	h, err := parseHOT("(top)", top)
	if err != nil {
		return nil, err
	}
	l := &layout{params: h.Parameters, groups: map[string]*group{}}
	if l.params == nil {
		l.params = map[string]hotParam{}
	}
	for name, r := range h.Resources {
		if r.Type != typeASG {
			continue
		}
		g := &group{Name: name}
		member, _ := r.Properties["resource"].(map[string]any)
		// 1. The member template's servers named after VDUs.
		if t, _ := member["type"].(string); t != "" {
			if src, ok := files[t]; ok {
				mh, err := parseHOT(t, []byte(src))
				if err != nil {
					return nil, err
				}
				for _, rn := range slices.Sorted(maps.Keys(mh.Resources)) {
					if mh.Resources[rn].Type == typeServer && fl.VDUs[rn] != nil {
						g.VDUs = append(g.VDUs, rn)
					}
				}
			}
		}
		// 2. The VDUs whose nfv entries the member properties read.
		if len(g.VDUs) == 0 {
			seen := map[string]bool{}
			walk(member["properties"], func(v any) {
				if p, ok := getParam(v); ok && len(p) >= 3 && p[0] == "nfv" && p[1] == "VDU" && fl.VDUs[p[2]] != nil && !seen[p[2]] {
					seen[p[2]] = true
					g.VDUs = append(g.VDUs, p[2])
				}
			})
			slices.Sort(g.VDUs)
		}
		// 3. The aspect of the same name.
		if len(g.VDUs) == 0 {
			if a := fl.ScalingAspects[name]; a != nil {
				g.VDUs = slices.Sorted(maps.Keys(a.VduDeltas))
			}
		}
		if p, ok := getParam(r.Properties["desired_capacity"]); ok {
			switch {
			case len(p) == 1:
				g.CapacityParam = p[0]
			case len(p) == 4 && p[0] == "nfv" && p[1] == "VDU" && p[3] == "desired_capacity":
				g.CapacityNfv = true
				if len(g.VDUs) == 0 && fl.VDUs[p[2]] != nil {
					g.VDUs = []string{p[2]}
				}
			}
		}
		l.groups[name] = g
	}
	return l, nil
}

// getParam returns the path of {get_param: name} or {get_param: [a, b, ...]}.
func getParam(v any) ([]string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	switch p := m["get_param"].(type) {
	case string:
		return []string{p}, true
	case []any:
		out := make([]string, 0, len(p))
		for _, e := range p {
			out = append(out, fmt.Sprint(e))
		}
		return out, len(out) > 0
	}
	return nil, false
}

func walk(v any, f func(any)) {
	f(v)
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			walk(t[k], f)
		}
	case []any:
		for _, e := range t {
			walk(e, f)
		}
	}
}

// levelsOf returns the aspect scale levels of an instance.
func levelsOf(info *model.InstantiatedVnfInfo) map[string]int {
	out := map[string]int{}
	if info != nil {
		for _, s := range info.ScaleStatus {
			out[s.AspectID] = s.ScaleLevel
		}
	}
	return out
}

// paramInput is what the stack parameters are built from.
type paramInput struct {
	Flavour *model.Flavour
	// Levels are the aspect scale levels the stack is to have.
	Levels                 map[string]int
	ExtVirtualLinks        []model.ExtVirtualLinkData
	ExtManagedVirtualLinks []model.ExtManagedVirtualLinkData
	// AdditionalParams of the instantiate request: keys equal to a
	// top-level template parameter are passed through.
	AdditionalParams map[string]any
	// NfvBase is an nfv value to start from (e.g. the running stack's).
	NfvBase map[string]any
}

// count returns the number of instances of a VDU at the input's levels.
func (in paramInput) count(vdu string) int {
	return in.Flavour.Instances(vdu, in.Levels)
}

// parameters builds the full parameter set of a stack create:
//
//   - nfv (when the template declares it): {VDU: {<vdu>: {flavor, image,
//     computeFlavourId, vcImageId, desired_capacity}}, CP: {<cpdId>:
//     {network, fixed_ips, port, mac_address}}}: flavor is the VDU's
//     requested_additional_capability_name, image its sw_image_data name,
//     each external CP's network the resourceId of the extVirtualLink whose
//     extCps name it (fixed addresses, subnets and MAC from cpConfig
//     cpProtocolData), and each CP on an externally managed internal VL that
//     VL's resourceId. An additionalParams.nfv object is merged on top
//     (to override a flavor or an image); desired capacities are always the
//     VNFM's.
//   - <param> for every additionalParams key equal to a template parameter.
//   - desired capacities: the parameter an AutoScalingGroup's
//     desired_capacity reads, and any declared <aspectId>_desired_capacity
//     (Tacker's convention) or <vduId>_desired_capacity parameter, set to
//     VduInitialDelta + the aspect deltas up to its scale level.
//
// Only parameters the template declares are set: Heat rejects others.
func (l *layout) parameters(in paramInput) map[string]any {
	out := map[string]any{}
	for k, v := range in.AdditionalParams {
		if _, ok := l.params[k]; ok && k != "nfv" {
			out[k] = v
		}
	}
	if _, ok := l.params["nfv"]; ok {
		out["nfv"] = buildNfv(in)
	}
	maps.Copy(out, l.capacities(in))
	return out
}

// updateParameters is the parameter set of a stack update (PATCH: other
// parameters keep their values): the desired capacities, and nfv when a
// group reads its capacity from nfv.
func (l *layout) updateParameters(in paramInput) map[string]any {
	out := l.capacities(in)
	if _, ok := l.params["nfv"]; ok && l.nfvCapacity() {
		out["nfv"] = buildNfv(in)
	}
	return out
}

func (l *layout) nfvCapacity() bool {
	for _, g := range l.groups {
		if g.CapacityNfv {
			return true
		}
	}
	return false
}

// capacities returns the desired-capacity parameters.
func (l *layout) capacities(in paramInput) map[string]any {
	out := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(l.groups)) {
		g := l.groups[name]
		if _, ok := l.params[g.CapacityParam]; ok && g.CapacityParam != "" && len(g.VDUs) > 0 {
			out[g.CapacityParam] = in.count(g.VDUs[0])
		}
	}
	fl := in.Flavour
	for _, id := range slices.Sorted(maps.Keys(fl.ScalingAspects)) {
		p := id + "_desired_capacity"
		if _, ok := l.params[p]; !ok {
			continue
		}
		if _, set := out[p]; set {
			continue
		}
		vdus := slices.Sorted(maps.Keys(fl.ScalingAspects[id].VduDeltas))
		if g := l.groups[id]; g != nil && len(g.VDUs) > 0 {
			vdus = g.VDUs
		}
		if len(vdus) > 0 {
			out[p] = in.count(vdus[0])
		}
	}
	for _, v := range slices.Sorted(maps.Keys(fl.VDUs)) {
		p := v + "_desired_capacity"
		if _, ok := l.params[p]; ok {
			if _, set := out[p]; !set {
				out[p] = in.count(v)
			}
		}
	}
	return out
}

// buildNfv builds the nfv parameter (see parameters).
func buildNfv(in paramInput) map[string]any {
	nfv := deepCopy(in.NfvBase)
	if nfv == nil {
		nfv = map[string]any{}
	}
	vdus := subMap(nfv, "VDU")
	cps := subMap(nfv, "CP")
	fl := in.Flavour
	for _, id := range slices.Sorted(maps.Keys(fl.VDUs)) {
		v := fl.VDUs[id]
		e := subMap(vdus, id)
		if v.Flavor != "" {
			e["flavor"], e["computeFlavourId"] = v.Flavor, v.Flavor
		}
		if v.SwImage != nil && v.SwImage.Name != "" {
			e["image"], e["vcImageId"] = v.SwImage.Name, v.SwImage.Name
		}
	}
	for _, l := range in.ExtVirtualLinks {
		for _, c := range l.ExtCps {
			if c.CpdID == "" {
				continue
			}
			cp := map[string]any{"network": l.ResourceID}
			for _, cfg := range c.CpConfig {
				cpConfigInto(cp, cfg, l)
			}
			cps[c.CpdID] = cp
		}
	}
	for _, m := range in.ExtManagedVirtualLinks {
		vl := m.VnfVirtualLinkDescID
		if vl == "" {
			vl = m.VirtualLinkDescID
		}
		for _, id := range slices.Sorted(maps.Keys(fl.VDUs)) {
			for _, c := range fl.VDUs[id].CPs {
				if c.VirtualLink == vl && vl != "" {
					if _, set := cps[c.ID]; !set {
						cps[c.ID] = map[string]any{"network": m.ResourceID}
					}
				}
			}
		}
	}
	if user, ok := in.AdditionalParams["nfv"].(map[string]any); ok {
		mergeInto(nfv, user)
	}
	for _, id := range slices.Sorted(maps.Keys(fl.VDUs)) {
		subMap(vdus, id)["desired_capacity"] = in.count(id)
	}
	return nfv
}

// cpConfigInto adds what one SOL003 cpConfig entry asks for to an nfv CP entry.
func cpConfigInto(cp map[string]any, cfg map[string]any, l model.ExtVirtualLinkData) {
	if id, _ := cfg["linkPortId"].(string); id != "" {
		for _, p := range l.ExtLinkPorts {
			if p.ID == id && p.ResourceHandle.ResourceID != "" {
				cp["port"] = p.ResourceHandle.ResourceID
			}
		}
	}
	pds, _ := cfg["cpProtocolData"].([]any)
	for _, pd := range pds {
		pdm, _ := pd.(map[string]any)
		ipoe, _ := pdm["ipOverEthernet"].(map[string]any)
		if ipoe == nil {
			continue
		}
		if mac, _ := ipoe["macAddress"].(string); mac != "" {
			cp["mac_address"] = mac
		}
		addrs, _ := ipoe["ipAddresses"].([]any)
		for _, a := range addrs {
			am, _ := a.(map[string]any)
			subnet, _ := am["subnetId"].(string)
			fixed, _ := am["fixedAddresses"].([]any)
			var entries []any
			for _, f := range fixed {
				if s, _ := f.(string); s != "" {
					e := map[string]any{"ip_address": s}
					if subnet != "" {
						e["subnet"] = subnet
					}
					entries = append(entries, e)
				}
			}
			if len(entries) == 0 && subnet != "" {
				entries = append(entries, map[string]any{"subnet": subnet})
			}
			if len(entries) > 0 {
				prev, _ := cp["fixed_ips"].([]any)
				cp["fixed_ips"] = append(prev, entries...)
			}
		}
	}
}

func subMap(m map[string]any, k string) map[string]any {
	if s, ok := m[k].(map[string]any); ok {
		return s
	}
	s := map[string]any{}
	m[k] = s
	return s
}

// mergeInto deep-merges src into dst (objects merge, other values replace).
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
			dst[k] = deepCopy(sm)
			continue
		}
		dst[k] = v
	}
}

func deepCopy(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// nfvFromStack decodes the running stack's nfv parameter (Heat shows json
// parameters as JSON text).
func nfvFromStack(params map[string]string) map[string]any {
	s := strings.TrimSpace(params["nfv"])
	if s == "" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}
