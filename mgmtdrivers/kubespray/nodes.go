package kubespray

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Role of a VNFC in the cluster.
type Role = kube.Role

// Roles.
const (
	RoleMaster      = kube.Master
	RoleWorker      = kube.Worker
	RoleLB     Role = "externalLB"
)

// Node is a VNFC the driver works with (kube.Node): its Name is the
// Kubernetes node name and the inventory host name.
type Node = kube.Node

// Cluster is the VNF's nodes, classified.
type Cluster struct {
	Masters []*Node // in a stable order: the first is kube_control_plane[0]
	Workers []*Node
	LB      *Node
}

// All returns the Kubernetes nodes (masters, then workers).
func (c *Cluster) All() []*Node { return append(slices.Clone(c.Masters), c.Workers...) }

// ByVnfc finds a node by VNFC id.
func (c *Cluster) ByVnfc(id string) *Node {
	for _, n := range append(c.All(), c.LB) {
		if n != nil && n.VnfcID == id {
			return n
		}
	}
	return nil
}

// specs are the roles the driver classifies compute resources into.
func (p *Params) specs() []kube.RoleSpec {
	lb := kube.NodeParams{SSHCPName: p.ExternalLB.SSHCPName, NICCPName: p.ExternalLB.SSHCPName, Login: p.ExternalLB.Login}
	return []kube.RoleSpec{
		{Role: RoleMaster, Key: root + ".master_node", Params: p.Master.NodeParams},
		{Role: RoleWorker, Key: root + ".worker_node", Params: p.Worker.NodeParams},
		{Role: RoleLB, Key: root + ".external_lb_param", Params: lb},
	}
}

// BuildCluster classifies the compute resources into masters, workers and
// the load balancer (kube.Classify) and resolves their addresses and
// logins. Resources of none of the roles are ignored. The resources keep a
// stable order (VDU, then age), so kube_control_plane[0] stays the same node
// from one operation to the next.
func BuildCluster(rs []driverapi.ComputeResource, fl *model.Flavour, p *Params) (*Cluster, error) {
	byRole, err := kube.Classify(rs, fl, p.specs()...)
	if err != nil {
		return nil, fmt.Errorf("kubespray: %w", err)
	}
	c := &Cluster{Masters: byRole[RoleMaster], Workers: byRole[RoleWorker]}
	var problems []string
	switch lbs := byRole[RoleLB]; len(lbs) {
	case 0:
		problems = append(problems, "no VNFC has CP "+p.ExternalLB.SSHCPName+" (external_lb_param.ssh_cp_name)")
	case 1:
		c.LB = lbs[0]
	default:
		problems = append(problems, fmt.Sprintf("both %s and %s have CP %s (external_lb_param.ssh_cp_name): there must be one load balancer", lbs[0].VnfcID, lbs[1].VnfcID, p.ExternalLB.SSHCPName))
	}
	if len(c.Masters) == 0 {
		problems = append(problems, "no VNFC matches master_node ("+p.specs()[0].Describe()+")")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("kubespray: %s", strings.Join(problems, "; "))
	}
	return c, nil
}

// without returns the nodes not among the VNFC ids.
func without(nodes []*Node, vnfcIDs []string) []*Node {
	var out []*Node
	for _, n := range nodes {
		if !slices.Contains(vnfcIDs, n.VnfcID) {
			out = append(out, n)
		}
	}
	return out
}
