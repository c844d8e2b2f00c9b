package kubeadm

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
func checkHA(ctx context.Context, t *Topology, infra driverapi.Infra, pkg driverapi.Package, fl *model.Flavour, p *Params) error {
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
		if nd.IP == t.VIP || nd.SSHAddr == t.VIP {
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
		if err := checkVIPAllowed(ctx, infra, pkg, fl, p, t.VIP); err != nil {
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

// checkVIPAllowed asks the infra driver whether the VIM lets the VIP's
// traffic through every port named like the masters' nic_cp_name (else
// keepalived would move the VIP between the masters and nobody could reach
// it: Neutron's port security drops it unless the port's
// allowed_address_pairs list it). vip "" before instantiation: any address
// the VIP port may get.
func checkVIPAllowed(ctx context.Context, infra driverapi.Infra, pkg driverapi.Package, fl *model.Flavour, p *Params, vip string) error {
	if infra == nil || fl == nil {
		return nil
	}
	return infra.CheckVIP(ctx, driverapi.VIPCheck{Package: pkg, Flavour: fl, PortCpd: p.Master.NICCPName, VipCpd: p.Master.ClusterCPName, VIP: vip})
}

// checkHAPlan validates an HA control plane before the VMs exist
// (instantiate_start): cluster_cp_name a VipCp of the flavour, the master
// VDU's min_number_of_instances, the master ports' allowed_address_pairs.
func checkHAPlan(ctx context.Context, infra driverapi.Infra, pkg driverapi.Package, fl *model.Flavour, p *Params) error {
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
		if err := checkVIPAllowed(ctx, infra, pkg, fl, p, ""); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("HA control plane: %s", strings.Join(problems, "; "))
	}
	return nil
}
