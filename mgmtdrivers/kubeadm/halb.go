package kubeadm

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Load balancer topologies of an HA control plane (ha.lb_topology).
const (
	// LBColocated (the default) runs HAProxy and keepalived on every master.
	LBColocated = "colocated"
	// LBDedicated runs them on load-balancer VNFCs of their own (a VDU named
	// by ha.lb_vdu_id, logged in to with lb_node); the masters run only
	// Kubernetes and sit behind them as HAProxy's backends.
	LBDedicated = "dedicated"
	// MinLBNodes is the smallest set of dedicated load balancers: one would
	// be a single point of failure in front of an HA control plane.
	MinLBNodes = 2
)

// LBParams select the load balancers of an HA control plane.
type LBParams struct {
	// Topology is colocated (default) or dedicated.
	Topology string `json:"lb_topology"`
	// VduID is the load balancers' VDU (ha.lb_vdu_id, or lb_node.vdu_id).
	VduID string `json:"lb_vdu_id,omitempty"`
	// Node is lb_node: the CPs and the login of the load-balancer VNFCs
	// (dedicated only).
	Node NodeParams `json:"lb_node"`
}

// Dedicated reports whether HAProxy and keepalived run on VNFCs of their own.
func (l LBParams) Dedicated() bool { return l.Topology == LBDedicated }

// lbParams reads ha.lb_topology, ha.lb_vdu_id and lb_node from
// k8s_cluster_installation_param (top; ha its ha object).
func lbParams(top, ha *kube.Obj, p *Params) LBParams {
	l := LBParams{Topology: LBColocated}
	if t := ha.String("lb_topology", false); t != "" {
		switch t {
		case LBColocated, LBDedicated:
			l.Topology = t
		default:
			ha.Addf("lb_topology", "%q is not a load balancer topology: colocated (HAProxy and keepalived on the masters) or dedicated (on the VDU ha.lb_vdu_id)", t)
		}
	}
	l.VduID = ha.String("lb_vdu_id", false)
	hasNode := top.Has("lb_node")
	if !l.Dedicated() {
		if l.VduID != "" {
			ha.Addf("lb_vdu_id", "is used only with ha.lb_topology dedicated")
		}
		if hasNode {
			top.Addf("lb_node", "is used only with ha.lb_topology dedicated")
		}
		return l
	}
	if !hasNode {
		top.Addf("lb_node", "is required with ha.lb_topology dedicated: ssh_cp_name (and nic_cp_name), username and password or ssh_private_key of the load-balancer VNFCs")
		return l
	}
	n := top.Child("lb_node", false)
	if n == nil {
		return l
	}
	l.Node = readNode(n, false)
	if l.Node.AspectID != "" {
		n.Addf("aspect_id", "is not used: the load balancers are selected by ha.lb_vdu_id (or lb_node.vdu_id)")
	}
	switch {
	case l.VduID == "" && l.Node.VduID == "":
		top.Addf("ha.lb_vdu_id", "is required with ha.lb_topology dedicated: the VDU of the load-balancer VNFCs")
	case l.VduID == "":
		l.VduID = l.Node.VduID
	case l.Node.VduID != "" && l.Node.VduID != l.VduID:
		n.Addf("vdu_id", "%q differs from ha.lb_vdu_id %q", l.Node.VduID, l.VduID)
	}
	l.Node.VduID = l.VduID
	if l.VduID != "" {
		for _, r := range []struct {
			name string
			np   NodeParams
		}{{"master_node", p.Master}, {"worker_node", p.Worker}} {
			if r.np.VduID == l.VduID {
				top.Addf("ha.lb_vdu_id", "%s is also %s.vdu_id: the load balancers need a VDU of their own", l.VduID, r.name)
			}
		}
	}
	if l.Node.SSHCPName != "" && (l.Node.SSHCPName == p.Master.SSHCPName || l.Node.NICCPName == p.Master.NICCPName) {
		n.Addf("nic_cp_name", "%s is a port of the masters: give the load-balancer VDU's own port", l.Node.NICCPName)
	}
	return l
}

// checkLBPlan validates a dedicated load balancer topology against the
// flavour before the VMs exist: the control plane is behind a VIP port, the
// LB VDU exists with at least MinLBNodes instances and its port, the VipCp
// targets that port and the Heat templates let the VIP through it
// (allowed_address_pairs). Nil for the colocated topology.
func checkLBPlan(ctx context.Context, infra driverapi.Infra, pkg driverapi.Package, fl *model.Flavour, p *Params) error {
	if !p.LB.Dedicated() {
		return nil
	}
	var problems []string
	cp := p.Master.ClusterCPName
	if fl != nil {
		_, vip := fl.VipCPs[cp]
		if e := fl.ExtCPs[cp]; e != nil && e.Kind == "VipCp" {
			vip = true
		}
		if !vip {
			problems = append(problems, fmt.Sprintf("ha.lb_topology dedicated needs an HA control plane: master_node.cluster_cp_name %s must be a VIP port (VipCp) of flavour %s, the address keepalived moves between the load balancers", cp, fl.ID))
		}
		nic := p.LB.Node.NICCPName
		if v := fl.VDUs[p.LB.VduID]; v == nil {
			problems = append(problems, fmt.Sprintf("the load-balancer VDU %s (ha.lb_vdu_id) is not in flavour %s (VDUs: %s)", p.LB.VduID, fl.ID, strings.Join(slices.Sorted(mapKeys(fl.VDUs)), ", ")))
		} else {
			if v.MinInstances < MinLBNodes {
				problems = append(problems, fmt.Sprintf("the load-balancer VDU %s has vdu_profile min_number_of_instances %d: dedicated load balancers need at least %d instances (one is a single point of failure in front of the HA control plane)", v.ID, v.MinInstances, MinLBNodes))
			}
			if !slices.ContainsFunc(v.CPs, func(c model.VduCP) bool { return c.ID == nic }) {
				var ids []string
				for _, c := range v.CPs {
					ids = append(ids, c.ID)
				}
				problems = append(problems, fmt.Sprintf("lb_node.nic_cp_name %s is not a port of the load-balancer VDU %s (its ports: %s)", nic, v.ID, orNoneStr(ids)))
			}
		}
		if vc := fl.VipCPs[cp]; vc != nil && len(vc.Targets) > 0 && !slices.Contains(vc.Targets, nic) {
			problems = append(problems, fmt.Sprintf("the VipCp %s targets %s, not the load balancers' nic_cp_name %s", vc.ID, strings.Join(vc.Targets, ", "), nic))
		}
		if err := checkLBVIPAllowed(ctx, infra, pkg, fl, p); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("HA control plane with dedicated load balancers: %s", strings.Join(problems, "; "))
	}
	return nil
}

// checkLBVIPAllowed asks the infra driver whether the load balancers'
// ports let the VIP through.
func checkLBVIPAllowed(ctx context.Context, infra driverapi.Infra, pkg driverapi.Package, fl *model.Flavour, p *Params) error {
	if infra == nil || fl == nil {
		return nil
	}
	if err := infra.CheckVIP(ctx, driverapi.VIPCheck{Package: pkg, Flavour: fl, PortCpd: p.LB.Node.NICCPName, VipCpd: p.Master.ClusterCPName}); err != nil {
		return fmt.Errorf("load-balancer ports: %w", err)
	}
	return nil
}

// lbHost is one dedicated load balancer as configureLB would see it: its
// node address, VRRP interface and the VIP with its subnet's prefix length
// (from vrrpPlacement).
type lbHost struct {
	Name      string
	IP        string
	Interface string
	VIP       netip.Prefix
}

// lbFiles are the files of one load balancer.
type lbFiles struct {
	HAProxy    string
	Keepalived string
	Check      string
}

// dedicatedLBConfigs renders HAProxy (backends: the masters' API servers)
// and keepalived (VRRP among the load balancers only, priorities in LB
// order, unicast peers the LBs' addresses) for each dedicated load
// balancer: the same files as the colocated topology, placed on other hosts.
func dedicatedLBConfigs(instanceID string, p *Params, secret string, masters []lbMember, lbs []lbHost) (map[string]lbFiles, error) {
	if len(lbs) < MinLBNodes {
		return nil, fmt.Errorf("%d load-balancer VNFC(s) of VDU %s: dedicated load balancers need at least %d", len(lbs), p.LB.VduID, MinLBNodes)
	}
	if len(masters) == 0 {
		return nil, fmt.Errorf("no master behind the load balancers")
	}
	var peers []string
	if p.HA.Unicast {
		for _, l := range lbs {
			peers = append(peers, l.IP)
		}
	}
	hcfg := haproxyConfig(instanceID, p.HA.LBPort, masters, nil)
	out := map[string]lbFiles{}
	for i, l := range lbs {
		if slices.ContainsFunc(masters, func(m lbMember) bool { return m.IP == l.IP }) {
			return nil, fmt.Errorf("load balancer %s has the address %s of a master", l.Name, l.IP)
		}
		out[l.Name] = lbFiles{
			HAProxy: hcfg,
			Keepalived: keepalivedConfig(vrrpConfig{ClusterID: instanceID, VRID: p.vrid(instanceID), VIP: l.VIP, Secret: secret,
				AdvertInt: p.HA.AdvertInt, LBPort: p.HA.LBPort, Peers: peers},
				vrrpNode{Name: l.Name, IP: l.IP, Interface: l.Interface, Priority: priorityOf(i, len(lbs)), Master: i == 0}),
			Check: lbCheckScript(p.HA.LBPort),
		}
	}
	return out, nil
}

// lbNodes finds the dedicated load balancers: the VNFCs of ha.lb_vdu_id,

// checkLBTopology checks the dedicated load balancers found: behind a VIP,
// at least MinLBNodes of them, none holding the VIP as its own address.
func checkLBTopology(t *Topology, p *Params) error {
	if !p.LB.Dedicated() {
		return nil
	}
	var problems []string
	if !t.HA() {
		problems = append(problems, fmt.Sprintf("master_node.cluster_cp_name %s is not a VIP port of its own: dedicated load balancers share a VIP", p.Master.ClusterCPName))
	}
	if len(t.LBs) < MinLBNodes {
		problems = append(problems, fmt.Sprintf("%d load-balancer VNFC(s) of VDU %s (%s): dedicated load balancers need at least %d", len(t.LBs), p.LB.VduID, orNoneStr(sortedNames(t.LBs)), MinLBNodes))
	}
	for _, l := range t.LBs {
		if t.VIP != "" && (l.IP == t.VIP || l.SSHAddr == t.VIP) {
			problems = append(problems, fmt.Sprintf("the VIP %s is the address of load balancer %s", t.VIP, l.Name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("HA control plane with dedicated load balancers: %s", strings.Join(problems, "; "))
	}
	return nil
}

// refuseLBHeal refuses a VNFC heal of a dedicated load balancer (its
// replacement would come up without HAProxy and keepalived: not
// implemented; heal the entire VNF, or leave the other LB holding the VIP).
func refuseLBHeal(info *model.InstantiatedVnfInfo, p *Params, ids []string) error {
	if info == nil || !p.LB.Dedicated() || p.LB.VduID == "" {
		return nil
	}
	for _, id := range ids {
		if i := slices.IndexFunc(info.VnfcResourceInfo, func(v model.VnfcResourceInfo) bool { return v.ID == id }); i >= 0 && info.VnfcResourceInfo[i].VduID == p.LB.VduID {
			return fmt.Errorf("VNFC %s is a dedicated load balancer (VDU %s): healing a load balancer on its own is not supported; the other load balancers keep the VIP; heal the entire VNF to rebuild it", id, p.LB.VduID)
		}
	}
	return nil
}

// setupDedicatedLBs configures HAProxy (backends: all masters) and
// keepalived on every dedicated load balancer and waits for the VIP on the
// first one (the highest priority).
func (h *hook) setupDedicatedLBs(ctx context.Context) error {
	t := h.topo
	h.note(ctx, "HA control plane with dedicated load balancers: HAProxy on :%d and keepalived (virtual_router_id %d, VIP %s) on %s; %d masters behind them",
		h.p.HA.LBPort, h.p.vrid(h.op.Instance.ID), t.VIP, strings.Join(sortedNames(t.LBs), ", "), len(t.Masters))
	ss, err := h.d.connect(ctx, h, plansFor(h.p, t.LBs, true))
	if err != nil {
		return err
	}
	defer ss.Close()
	if _, err := h.configureLB(ctx, ss, t.LBs, t.Masters, t.LBs, true); err != nil {
		return err
	}
	holder, err := h.waitVIP(ctx, ss, t.LBs, t.LBs[:1], vipWait)
	if err != nil {
		return err
	}
	h.note(ctx, "the VIP %s is held by load balancer %s", t.VIP, holder.Name)
	return nil
}

// reloadDedicatedLBs rewrites HAProxy's API servers (backends) on every
// reachable load balancer and reloads it; gone are the masters leaving
// (for the message).
func (h *hook) reloadDedicatedLBs(ctx context.Context, backends, gone []*Node) error {
	t := h.topo
	ss, failed, err := h.d.connectSome(ctx, h, plansFor(h.p, t.LBs, false), deadMasterWait)
	if err != nil {
		return err
	}
	defer ss.Close()
	live := reachable(ss, t.LBs)
	if len(live) == 0 {
		return fmt.Errorf("no load balancer is reachable (%s): HAProxy's API servers cannot be updated", describeFailures(failed))
	}
	if len(failed) > 0 {
		h.note(ctx, "load balancers not reachable, HAProxy not updated there: %s", describeFailures(failed))
	}
	what := "API servers " + strings.Join(sortedNames(backends), ", ")
	if len(gone) > 0 {
		what = "taking " + strings.Join(sortedNames(gone), ", ") + " out: " + what
	}
	h.note(ctx, "HAProxy on the load balancers %s: %s", strings.Join(sortedNames(live), ", "), what)
	_, err = h.configureLB(ctx, ss, live, backends, t.LBs, false)
	return err
}

// checkLBAspect refuses scaling the dedicated load balancers' VDU: a new
// LB would come up without HAProxy and keepalived, a removed one could be
// the VIP holder.
func checkLBAspect(a *model.ScalingAspect, aspectID string, p *Params) error {
	if a == nil || !p.LB.Dedicated() {
		return nil
	}
	if _, ok := a.VduDeltas[p.LB.VduID]; ok {
		return fmt.Errorf("aspect %s scales the load-balancer VDU %s: scaling the dedicated load balancers is not supported; scale the workers' aspect", aspectID, p.LB.VduID)
	}
	return nil
}
