package kubeadm

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Role is a node's part in the cluster.
type Role = kube.Role

// Roles.
const (
	Master = kube.Master
	Worker = kube.Worker
	// LB is a dedicated load balancer (ha.lb_topology dedicated): not a
	// Kubernetes node.
	LB Role = "lb"
)

// Node is a VNFC the driver works with (kube.Node).
type Node = kube.Node

// Topology is the cluster the VNF's VNFCs make.
type Topology struct {
	// Masters in a stable order; the first is the one kubeadm init runs on.
	Masters []*Node
	Workers []*Node
	// EndpointIP and EndpointPort are where the API server is reached
	// (cluster_cp_name's address; APIPort on a single master, HAProxy's
	// ha.lb_port on the VIP of an HA control plane).
	EndpointIP   string
	EndpointPort int
	// VIP is set for an HA control plane: the address of cluster_cp_name,
	// a port of its own (Tacker's vip_CP) that keepalived moves between the
	// masters.
	VIP string
	// LBs are the dedicated load balancers (ha.lb_topology dedicated), in
	// a stable order; nil when HAProxy and keepalived run on the masters.
	LBs []*Node
}

// HA reports whether the control plane sits behind a VIP.
func (t *Topology) HA() bool { return t.VIP != "" }

// Endpoint is the API server URL.
func (t *Topology) Endpoint() string {
	return "https://" + net.JoinHostPort(t.EndpointIP, strconv.Itoa(t.EndpointPort))
}

// All lists masters then workers.
func (t *Topology) All() []*Node { return append(slices.Clone(t.Masters), t.Workers...) }

// ByVnfc finds a node by VNFC id.
func (t *Topology) ByVnfc(id string) *Node {
	for _, n := range t.All() {
		if n.VnfcID == id {
			return n
		}
	}
	return nil
}

// Without returns the topology minus the nodes of the given VNFC ids.
func (t *Topology) Without(vnfcIDs ...string) *Topology {
	keep := func(ns []*Node) []*Node {
		return slices.DeleteFunc(slices.Clone(ns), func(n *Node) bool { return slices.Contains(vnfcIDs, n.VnfcID) })
	}
	return &Topology{Masters: keep(t.Masters), Workers: keep(t.Workers), EndpointIP: t.EndpointIP, EndpointPort: t.EndpointPort, VIP: t.VIP, LBs: t.LBs}
}

// Classify finds the masters, workers and dedicated load balancers among
// the VNF's compute resources (kube.Classify: by vdu_id, else aspect_id,
// else by having a CP named ssh_cp_name or nic_cp_name; a VNFC matching
// both master_node and worker_node is an error) and where the API server
// is reached: cluster_cp_name's address on a master, or a port of its own
// among extCPs (the VIP of an HA control plane).
func Classify(rs []driverapi.ComputeResource, extCPs []model.ExtCpInfo, fl *model.Flavour, p *Params) (*Topology, error) {
	specs := []kube.RoleSpec{
		{Role: Master, Key: root + ".master_node", Params: p.Master.NodeParams},
		{Role: Worker, Key: root + ".worker_node", Params: p.Worker.NodeParams},
	}
	if p.LB.Dedicated() {
		specs = append(specs, kube.RoleSpec{Role: LB, Key: root + ".lb_node", Params: p.LB.Node.NodeParams, First: true})
	}
	byRole, err := kube.Classify(rs, fl, specs...)
	if err != nil {
		return nil, err
	}
	t := &Topology{EndpointPort: APIPort, Masters: byRole[Master], Workers: byRole[Worker]}
	if len(t.Masters) == 0 {
		return nil, fmt.Errorf("no VNFC matches %s.master_node (aspect_id %q, vdu_id %q, ssh_cp_name %q); VNFCs: %s",
			ParamKey, p.Master.AspectID, p.Master.VduID, p.Master.SSHCPName, kube.Describe(rs))
	}
	// Masters in a stable order (VNFC ids survive a heal): the first runs
	// kubeadm init and gets the highest VRRP priority.
	slices.SortFunc(t.Masters, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	// The API address: cluster_cp_name on a master (one master), or a port
	// of its own holding the VIP (an HA control plane).
	for _, m := range t.Masters {
		if r := resourceOf(rs, m.VnfcID); r != nil {
			if cp := r.CP(p.Master.ClusterCPName); cp != nil && cp.Address() != "" {
				t.EndpointIP = cp.Address()
				break
			}
		}
	}
	if t.EndpointIP == "" {
		for _, e := range extCPs {
			if e.CpdID == p.Master.ClusterCPName && e.AssociatedVnfcCpID == "" {
				t.VIP = (&driverapi.ConnectionPoint{Addresses: driverapi.ProtocolAddresses(e.CpProtocolInfo)}).Address()
				if t.VIP == "" {
					return nil, fmt.Errorf("%s.master_node.cluster_cp_name %q is a port of its own (the VIP) but has no IP address", ParamKey, p.Master.ClusterCPName)
				}
				t.EndpointIP, t.EndpointPort = t.VIP, p.HA.LBPort
				break
			}
		}
	}
	if t.EndpointIP == "" {
		return nil, fmt.Errorf("%s.master_node.cluster_cp_name %q is neither a connection point with an address on the master VNFC %s nor a port of its own (a VIP such as vip_CP)",
			ParamKey, p.Master.ClusterCPName, t.Masters[0].VnfcID)
	}
	if p.LB.Dedicated() {
		t.LBs = byRole[LB]
		slices.SortFunc(t.LBs, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	}
	if !t.HA() && len(t.Masters) > 1 {
		return nil, fmt.Errorf("%d master VNFCs but %s.master_node.cluster_cp_name %q is a master's own port: several masters need a virtual IP, a port of its own (Tacker's vip_CP) that every master port allows in allowed_address_pairs; name it in cluster_cp_name",
			len(t.Masters), ParamKey, p.Master.ClusterCPName)
	}
	return t, nil
}

func resourceOf(rs []driverapi.ComputeResource, vnfcID string) *driverapi.ComputeResource {
	for i := range rs {
		if rs[i].VnfcID == vnfcID {
			return &rs[i]
		}
	}
	return nil
}

// NodeName makes a Kubernetes node name of a VNFC id (kube.NodeName).
func NodeName(vnfcID string) string { return kube.NodeName(vnfcID) }
