package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
)

// CheckVIP implements driverapi.Infra: in the flavour's Heat templates, every
// port named like c.PortCpd must allow the VIP (the address of the port
// c.VipCpd) in its allowed_address_pairs, else Neutron's port security drops
// the VIP's traffic. The VIP may be given as the VIP port's address
// (get_attr: [<VipCpd>, fixed_ips, 0, ip_address]) in the top template,
// through a nested template's parameter that its group or resource sets so,
// or literally (c.VIP empty: any literal is accepted, the VIP is not known
// yet). Ports not in the templates are not checked.
func (d *Driver) CheckVIP(ctx context.Context, c driverapi.VIPCheck) error {
	if c.Flavour != nil && c.Flavour.HOT == nil {
		// A generated template lets a VipCp's address through the ports of
		// its targets (hotgen), and only those.
		vip := c.Flavour.VipCPs[c.VipCpd]
		if vip == nil {
			return fmt.Errorf("%s is not a VipCp of flavour %s: without a base HOT the VIP's port is generated from a tosca.nodes.nfv.VipCp", c.VipCpd, c.Flavour.ID)
		}
		if !slices.Contains(vip.Targets, c.PortCpd) {
			return fmt.Errorf("the VipCp %s does not target %s, so the generated Heat template does not let the VIP through %s's ports (allowed_address_pairs); add `- target: %s` to its requirements", c.VipCpd, c.PortCpd, c.PortCpd, c.PortCpd)
		}
		return nil
	}
	if c.Package == nil || c.Flavour == nil {
		return nil
	}
	top, files, err := heatTemplate(ctx, c.Package, c.Flavour)
	if err != nil || len(top) == 0 {
		return nil
	}
	return checkHOTAllowsVIP(c.Flavour.HOT.Top, top, files, c.PortCpd, c.VipCpd, c.VIP)
}

// hotTemplate is what the VIP check reads of a Heat template.
type hotTemplate struct {
	Parameters map[string]any         `yaml:"parameters"`
	Resources  map[string]hotResource `yaml:"resources"`
}

func checkHOTAllowsVIP(topPath string, topRaw []byte, files map[string]string, nicCP, vipCP, vip string) error {
	var top hotTemplate
	if err := yaml.Unmarshal(topRaw, &top); err != nil {
		return fmt.Errorf("cannot check the VIP's allowed_address_pairs: %s: %v", topPath, err)
	}
	if r, ok := top.Resources[vipCP]; !ok || r.Type != "OS::Neutron::Port" {
		return fmt.Errorf("the VIP's connection point %s is not an OS::Neutron::Port of %s: the VIP needs a port of its own, so that Neutron reserves its address", vipCP, path.Base(topPath))
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
	for _, name := range slices.Sorted(maps.Keys(files)) {
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
		return fmt.Errorf("%s does not allow the VIP: keepalived would move the VIP between the hosts but Neutron's port security drops its traffic; give the port allowed_address_pairs: [{ip_address: {get_attr: [%s, fixed_ips, 0, ip_address]}}] (through a parameter of the nested template, as the kubeadm-ha sample does)",
			strings.Join(problems, ", "), vipCP)
	}
	return nil
}
