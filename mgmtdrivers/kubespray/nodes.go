package kubespray

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Role of a VNFC in the cluster.
type Role string

// Roles.
const (
	RoleMaster Role = "master"
	RoleWorker Role = "worker"
	RoleLB     Role = "externalLB"
)

// Node is a VNFC the driver works with.
type Node struct {
	// Name is the Kubernetes node name and the inventory host name: the
	// VNFC id in lower case ("workernode-ab3xq6rfl2vc"). VNFC ids are unique
	// in the VNF and survive a heal, unlike addresses (Tacker's
	// master<last octet> collides across /16 networks).
	Name   string
	VnfcID string
	VduID  string
	Role   Role
	// ServerID is the Nova server id (host keys are pinned per server).
	ServerID string
	// SSHAddr is where the driver and Ansible log in; IP the Kubernetes
	// node address (ip= in the inventory).
	SSHAddr string
	IP      string
	// Fingerprints the cloud published for the server's host keys.
	Fingerprints []string
	User         string
	Password     string
	PrivateKey   string
}

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

var nodeNameRE = regexp.MustCompile(`[^a-z0-9-]+`)

// nodeName makes a DNS-1123 label from a VNFC id.
func nodeName(vnfcID string) string {
	n := nodeNameRE.ReplaceAllString(strings.ToLower(vnfcID), "-")
	n = strings.Trim(n, "-")
	if len(n) > 63 {
		n = strings.Trim(n[:63], "-")
	}
	if n == "" {
		n = "node"
	}
	return n
}

// cpAddress returns the address of a VNFC's CP: its floating IP when it
// has one, else its first fixed IPv4 address.
func cpAddress(v model.VnfcResourceInfo, cpd string, floating bool) (string, bool) {
	for _, cp := range v.VnfcCpInfo {
		if cp.CpdID != cpd {
			continue
		}
		if floating {
			if f, _ := cp.Metadata["floatingIpAddress"].(string); f != "" {
				return f, true
			}
		}
		for _, pi := range cp.CpProtocolInfo {
			ipoe, _ := pi["ipOverEthernet"].(map[string]any)
			addrs, _ := ipoe["ipAddresses"].([]any)
			for _, a := range addrs {
				am, _ := a.(map[string]any)
				list, _ := am["addresses"].([]any)
				for _, x := range list {
					if s, _ := x.(string); s != "" {
						if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
							return s, true
						}
					}
				}
			}
		}
		return "", true
	}
	return "", false
}

func hasCP(v model.VnfcResourceInfo, cpd string) bool {
	for _, cp := range v.VnfcCpInfo {
		if cp.CpdID == cpd {
			return true
		}
	}
	return false
}

// matches tells whether a VNFC belongs to master_node or worker_node.
func (np *NodeParams) matches(v model.VnfcResourceInfo) bool {
	switch {
	case np.VduID != "":
		return v.VduID == np.VduID
	case np.AspectID != "":
		g, _ := v.Metadata["scaleGroup"].(string)
		return g == np.AspectID
	}
	return hasCP(v, np.SSHCPName)
}

func metaStrings(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// RoleOf classifies one VNFC (for request validation).
func (p *Params) RoleOf(v model.VnfcResourceInfo) Role {
	switch {
	case p.Master.matches(v):
		return RoleMaster
	case p.Worker.matches(v):
		return RoleWorker
	case hasCP(v, p.ExternalLB.SSHCPName):
		return RoleLB
	}
	return ""
}

// BuildCluster classifies the VNFCs into masters, workers and the load
// balancer and resolves their addresses and logins. VNFCs that are none of
// them are ignored; exclude leaves VNFCs out (e.g. scale-in victims when
// the inventory is written without them).
func BuildCluster(vnfcs []model.VnfcResourceInfo, p *Params) (*Cluster, error) {
	c := &Cluster{}
	var problems []string
	names := map[string]string{}
	for _, v := range vnfcs {
		role := p.RoleOf(v)
		if role == "" {
			continue
		}
		n := &Node{Name: nodeName(v.ID), VnfcID: v.ID, VduID: v.VduID, Role: role, ServerID: v.ComputeResource.ResourceID,
			Fingerprints: metaStrings(v.Metadata["sshHostKeyFingerprints"])}
		var sshCP, nicCP string
		switch role {
		case RoleMaster:
			sshCP, nicCP, n.User, n.Password, n.PrivateKey = p.Master.SSHCPName, p.Master.NicCPName, p.Master.Username, p.Master.Password, p.Master.PrivateKey
		case RoleWorker:
			sshCP, nicCP, n.User, n.Password, n.PrivateKey = p.Worker.SSHCPName, p.Worker.NicCPName, p.Worker.Username, p.Worker.Password, p.Worker.PrivateKey
		case RoleLB:
			sshCP, nicCP, n.User, n.Password, n.PrivateKey = p.ExternalLB.SSHCPName, p.ExternalLB.SSHCPName, p.ExternalLB.SSHUsername, p.ExternalLB.SSHPassword, p.ExternalLB.SSHPrivateKey
		}
		var ok bool
		if n.SSHAddr, ok = cpAddress(v, sshCP, true); !ok || n.SSHAddr == "" {
			problems = append(problems, fmt.Sprintf("VNFC %s (%s) has no IPv4 address on CP %s", v.ID, role, sshCP))
			continue
		}
		if n.IP, ok = cpAddress(v, nicCP, false); !ok || n.IP == "" {
			problems = append(problems, fmt.Sprintf("VNFC %s (%s) has no IPv4 address on CP %s (nic_cp_name)", v.ID, role, nicCP))
			continue
		}
		if other, dup := names[n.Name]; dup {
			problems = append(problems, fmt.Sprintf("VNFCs %s and %s map to the same node name %s", other, v.ID, n.Name))
			continue
		}
		names[n.Name] = v.ID
		switch role {
		case RoleMaster:
			c.Masters = append(c.Masters, n)
		case RoleWorker:
			c.Workers = append(c.Workers, n)
		case RoleLB:
			if c.LB != nil {
				problems = append(problems, fmt.Sprintf("both %s and %s have CP %s (external_lb_param.ssh_cp_name): there must be one load balancer", c.LB.VnfcID, v.ID, p.ExternalLB.SSHCPName))
				continue
			}
			c.LB = n
		}
	}
	if len(c.Masters) == 0 {
		problems = append(problems, "no VNFC matches master_node ("+p.Master.describe()+")")
	}
	if c.LB == nil {
		problems = append(problems, "no VNFC has CP "+p.ExternalLB.SSHCPName+" (external_lb_param.ssh_cp_name)")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("kubespray: %s", strings.Join(problems, "; "))
	}
	// The VNFC list keeps a stable order (VDU, then age); keep it, so that
	// kube_control_plane[0] stays the same node from one operation to the next.
	return c, nil
}

func (np *NodeParams) describe() string {
	switch {
	case np.VduID != "":
		return "vdu_id " + np.VduID
	case np.AspectID != "":
		return "aspect_id " + np.AspectID
	}
	return "ssh_cp_name " + np.SSHCPName
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
