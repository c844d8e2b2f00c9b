package kubeadm

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// MinHAMasters is the smallest HA control plane: with stacked etcd, n
// members keep quorum while a majority (n/2+1) lives, so 3 masters survive
// one failure and 2 masters none.
const MinHAMasters = 3

// checkHA validates an HA control plane: enough masters, an odd number,
// the VNFD's master VDU never going below 3, the VIP apart from the node
// addresses and the master ports allowing the VIP.
func checkHA(t *Topology, fl *model.Flavour, p *Params, pkg driverapi.Package) error {
	var problems []string
	n := len(t.Masters)
	switch {
	case n < MinHAMasters:
		problems = append(problems, fmt.Sprintf("%d master VNFC(s) behind the VIP %s: an HA control plane needs at least %d masters (stacked etcd keeps working only while a majority of its members lives: 2 masters stop when either fails)", n, t.VIP, MinHAMasters))
	case n%2 == 0:
		problems = append(problems, fmt.Sprintf("%d masters: use an odd number (3, 5): %d masters tolerate no more failures than %d (etcd quorum %d) and cost one more member to keep in step", n, n, n-1, n/2+1))
	}
	vdus := map[string]bool{}
	for _, m := range t.Masters {
		vdus[m.VduID] = true
	}
	for _, vdu := range slices.Sorted(mapKeys(vdus)) {
		if fl == nil || fl.VDUs[vdu] == nil {
			continue
		}
		if min := fl.VDUs[vdu].MinInstances; min > 0 && (min < MinHAMasters || min%2 == 0) {
			problems = append(problems, fmt.Sprintf("the master VDU %s has vdu_profile min_number_of_instances %d: an HA control plane needs an odd number of at least %d", vdu, min, MinHAMasters))
		}
	}
	for _, nd := range t.All() {
		if nd.NodeIP == t.VIP || nd.SSHAddr == t.VIP {
			problems = append(problems, fmt.Sprintf("the VIP %s (cluster_cp_name %s) is the address of node %s", t.VIP, p.Master.ClusterCPName, nd.Name))
		}
	}
	// With dedicated load balancers the VIP is on their ports (checkLBPlan).
	if fl != nil && !p.LB.Dedicated() {
		if vc := fl.VipCPs[p.Master.ClusterCPName]; vc != nil && len(vc.Targets) > 0 && !slices.Contains(vc.Targets, p.Master.NICCPName) {
			problems = append(problems, fmt.Sprintf("the VipCp %s targets %s, not the masters' nic_cp_name %s", vc.ID, strings.Join(vc.Targets, ", "), p.Master.NICCPName))
		}
	}
	if !p.LB.Dedicated() {
		if err := checkVIPAllowed(pkg, fl, p, t.VIP); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("HA control plane: %s", strings.Join(problems, "; "))
	}
	return nil
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkVIPAllowed checks, in the flavour's Heat templates, that every port
// named like the masters' nic_cp_name allows the VIP in its
// allowed_address_pairs (else Neutron's port security drops the VIP's
// traffic and VRRP "works" with nobody reaching it). The VIP may be given
// as the VIP port's address (get_attr: [<cluster_cp_name>, fixed_ips, 0,
// ip_address]) in the top template, through a nested template's parameter
// that its group or resource sets so, or literally (vip empty: any literal
// is accepted, the VIP is not known yet).
func checkVIPAllowed(pkg driverapi.Package, fl *model.Flavour, p *Params, vip string) error {
	if pkg == nil || fl == nil {
		return nil
	}
	top, raw, files, err := pkg.HeatTemplate(fl.ID)
	if err != nil || len(raw) == 0 {
		return nil // no HOT: another infra driver; nothing to check
	}
	return checkHOTAllowsVIP(top, raw, files, p.Master.NICCPName, p.Master.ClusterCPName, vip)
}

type hotTemplate struct {
	Parameters map[string]any         `yaml:"parameters"`
	Resources  map[string]hotResource `yaml:"resources"`
}

type hotResource struct {
	Type       string         `yaml:"type"`
	Properties map[string]any `yaml:"properties"`
}

func checkHOTAllowsVIP(topPath string, topRaw []byte, files map[string]string, nicCP, vipCP, vip string) error {
	var top hotTemplate
	if err := yaml.Unmarshal(topRaw, &top); err != nil {
		return fmt.Errorf("cannot check the VIP's allowed_address_pairs: %s: %v", topPath, err)
	}
	if r, ok := top.Resources[vipCP]; !ok || r.Type != "OS::Neutron::Port" {
		return fmt.Errorf("cluster_cp_name %s is not an OS::Neutron::Port of %s: the VIP needs a port of its own, so that Neutron reserves its address", vipCP, path.Base(topPath))
	}
	var isVIP func(v any, params func(name string) []any) bool
	isVIP = func(v any, params func(name string) []any) bool {
		switch t := v.(type) {
		case string:
			if vip == "" {
				return true
			}
			if pfx, err := netip.ParsePrefix(t); err == nil {
				if a, err := netip.ParseAddr(vip); err == nil && pfx.Contains(a) {
					return true
				}
			}
			return t == vip
		case map[string]any:
			if ga, ok := t["get_attr"].([]any); ok && len(ga) > 0 {
				return ga[0] == vipCP
			}
			if gp, ok := t["get_param"]; ok && params != nil {
				name, _ := gp.(string)
				if l, ok := gp.([]any); ok && len(l) == 1 {
					name, _ = l[0].(string)
				}
				vals := params(name)
				if len(vals) == 0 {
					return false
				}
				for _, pv := range vals {
					if !isVIP(pv, nil) {
						return false
					}
				}
				return true
			}
		}
		return false
	}
	allows := func(r hotResource, params func(string) []any) bool {
		pairs, _ := r.Properties["allowed_address_pairs"].([]any)
		for _, x := range pairs {
			if m, ok := x.(map[string]any); ok && isVIP(m["ip_address"], params) {
				return true
			}
		}
		return false
	}
	var problems []string
	found := 0
	if r, ok := top.Resources[nicCP]; ok && r.Type == "OS::Neutron::Port" {
		found++
		if !allows(r, nil) {
			problems = append(problems, fmt.Sprintf("port %s in %s", nicCP, path.Base(topPath)))
		}
	}
	for _, name := range slices.Sorted(mapKeys(files)) {
		var nt hotTemplate
		if err := yaml.Unmarshal([]byte(files[name]), &nt); err != nil {
			continue
		}
		r, ok := nt.Resources[nicCP]
		if !ok || r.Type != "OS::Neutron::Port" {
			continue
		}
		found++
		// The values the parent gives this template's parameters.
		params := func(param string) []any {
			var out []any
			for _, pr := range top.Resources {
				props := pr.Properties
				if pr.Type != name {
					def, _ := pr.Properties["resource"].(map[string]any)
					if def == nil {
						def, _ = pr.Properties["resource_def"].(map[string]any)
					}
					if def == nil || def["type"] != name {
						continue
					}
					props, _ = def["properties"].(map[string]any)
				}
				if v, ok := props[param]; ok {
					out = append(out, v)
				}
			}
			return out
		}
		if !allows(r, params) {
			problems = append(problems, fmt.Sprintf("port %s in %s", nicCP, name))
		}
	}
	if found == 0 {
		return nil // the masters' port is not in the templates (made elsewhere): nothing to check
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s does not allow the VIP: keepalived would move the VIP between the masters but Neutron's port security drops its traffic; give the masters' port allowed_address_pairs: [{ip_address: {get_attr: [%s, fixed_ips, 0, ip_address]}}] (through a parameter of the nested template, as the kubeadm-ha sample does)",
			strings.Join(problems, ", "), vipCP)
	}
	return nil
}

// checkHAPlan validates an HA control plane before the VMs exist
// (instantiate_start): cluster_cp_name a VipCp of the flavour, the master
// VDU's min_number_of_instances, the master ports' allowed_address_pairs.
func checkHAPlan(fl *model.Flavour, p *Params, pkg driverapi.Package) error {
	if fl == nil {
		return nil
	}
	cp := p.Master.ClusterCPName
	_, vip := fl.VipCPs[cp]
	if e := fl.ExtCPs[cp]; e != nil && e.Kind == "VipCp" {
		vip = true
	}
	if !vip {
		return nil
	}
	var problems []string
	vdus := map[string]bool{}
	if p.Master.VduID != "" {
		vdus[p.Master.VduID] = true
	} else if a := fl.ScalingAspects[p.Master.AspectID]; a != nil {
		for v := range a.VduDeltas {
			vdus[v] = true
		}
	}
	if len(vdus) == 0 {
		// The VDUs whose CPs the VIP targets.
		targets := []string{p.Master.NICCPName}
		if vc := fl.VipCPs[cp]; vc != nil && !p.LB.Dedicated() { // dedicated: the VIP targets the LBs
			targets = append(targets, vc.Targets...)
		}
		for id, v := range fl.VDUs {
			for _, c := range v.CPs {
				if slices.Contains(targets, c.ID) {
					vdus[id] = true
				}
			}
		}
	}
	for _, id := range slices.Sorted(mapKeys(vdus)) {
		v := fl.VDUs[id]
		if v == nil {
			continue
		}
		if v.MinInstances < MinHAMasters || v.MinInstances%2 == 0 {
			problems = append(problems, fmt.Sprintf("the master VDU %s has vdu_profile min_number_of_instances %d: an HA control plane (cluster_cp_name %s is a VIP) needs an odd number of at least %d masters, as etcd keeps quorum only while a majority lives", id, v.MinInstances, cp, MinHAMasters))
		}
	}
	if !p.LB.Dedicated() {
		if err := checkVIPAllowed(pkg, fl, p, ""); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("HA control plane: %s", strings.Join(problems, "; "))
	}
	return nil
}
