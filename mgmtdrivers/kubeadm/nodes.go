package kubeadm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// VNFC metadata the infra driver publishes (internal/infra/openstack).
const (
	metaScaleGroup   = openstack.MetaScaleGroup
	metaFingerprints = openstack.MetaFingerprints
	metaServerName   = openstack.MetaServerName
	metaFloatingIP   = "floatingIpAddress" // vnfcCpInfo[].metadata: the port's floating IP
)

// Role is a node's part in the cluster.
type Role string

// Roles.
const (
	Master Role = "master"
	Worker Role = "worker"
	// LB is a dedicated load balancer (ha.lb_topology dedicated): not a
	// Kubernetes node.
	LB Role = "lb"
)

// Node is a VNFC that is a Kubernetes node.
type Node struct {
	VnfcID string
	// Name is the Kubernetes node name: the VNFC id made a valid DNS label
	// (lower case), unique in the cluster and stable across a VNFC heal.
	Name  string
	Role  Role
	VduID string
	// ServerID is the VIM's id of the server (host key pins are per server
	// id and address).
	ServerID string
	// SSHAddr is where SSH goes; NodeIP is the Kubernetes node address.
	SSHAddr string
	NodeIP  string
	// Fingerprints are the host key fingerprints the cloud published.
	Fingerprints []string
	// ServerName is the VIM's server name (for messages).
	ServerName string
}

func (n *Node) String() string {
	return fmt.Sprintf("%s %s (VNFC %s, %s)", n.Role, n.Name, n.VnfcID, n.SSHAddr)
}

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

// Classify finds the masters and workers among the instance's VNFCs.
//
// A VNFC belongs to a role when, in this order of precedence, the role's
// vdu_id equals its VDU; else the role's aspect_id equals its scaling
// group (metadata.scaleGroup, Tacker's AutoScalingGroup named after the
// aspect) or names a scaling aspect of the flavour that scales its VDU;
// else it has a connection point named ssh_cp_name or nic_cp_name. A VNFC
// matching both roles is an error; VNFCs matching neither are not nodes.
func Classify(info *model.InstantiatedVnfInfo, fl *model.Flavour, p *Params) (*Topology, error) {
	if info == nil {
		return nil, fmt.Errorf("the VNF instance has no instantiatedVnfInfo")
	}
	t := &Topology{EndpointPort: APIPort}
	var problems []string
	names := map[string]string{}
	for i := range info.VnfcResourceInfo {
		v := &info.VnfcResourceInfo[i]
		if p.LB.Dedicated() && v.VduID == p.LB.VduID {
			continue // a load balancer (lbNodes)
		}
		isM, isW := matches(v, fl, &p.Master), matches(v, fl, &p.Worker)
		if isM && isW {
			problems = append(problems, fmt.Sprintf("VNFC %s (VDU %s) matches both master_node and worker_node; set their vdu_id or aspect_id apart", v.ID, v.VduID))
			continue
		}
		if !isM && !isW {
			continue
		}
		role, np, key := Master, &p.Master, "master_node"
		if isW {
			role, np, key = Worker, &p.Worker, "worker_node"
		}
		n, err := newNode(v, role, np, key)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if other, dup := names[n.Name]; dup {
			problems = append(problems, fmt.Sprintf("VNFCs %s and %s get the same node name %s", other, v.ID, n.Name))
			continue
		}
		names[n.Name] = v.ID
		if role == Master {
			t.Masters = append(t.Masters, n)
		} else {
			t.Workers = append(t.Workers, n)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("cannot find the cluster nodes: %s", strings.Join(problems, "; "))
	}
	if len(t.Masters) == 0 {
		return nil, fmt.Errorf("no VNFC matches %s.master_node (aspect_id %q, vdu_id %q, ssh_cp_name %q); VNFCs: %s",
			ParamKey, p.Master.AspectID, p.Master.VduID, p.Master.SSHCPName, describeVnfcs(info))
	}
	// Masters in a stable order (VNFC ids survive a heal): the first runs
	// kubeadm init and gets the highest VRRP priority.
	slices.SortFunc(t.Masters, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	// The API address: cluster_cp_name on a master (one master), or a port
	// of its own holding the VIP (an HA control plane).
	for _, m := range t.Masters {
		v := vnfcByID(info, m.VnfcID)
		if ip := cpAddress(v, p.Master.ClusterCPName); ip != "" {
			t.EndpointIP = ip
			break
		}
	}
	if t.EndpointIP == "" {
		for _, e := range info.ExtCpInfo {
			if e.CpdID == p.Master.ClusterCPName && e.AssociatedVnfcCpID == "" {
				t.VIP = protocolAddress(e.CpProtocolInfo)
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
		lbs, err := lbNodes(info, p)
		if err != nil {
			return nil, err
		}
		t.LBs = lbs
	}
	if !t.HA() && len(t.Masters) > 1 {
		return nil, fmt.Errorf("%d master VNFCs but %s.master_node.cluster_cp_name %q is a master's own port: several masters need a virtual IP, a port of its own (Tacker's vip_CP) that every master port allows in allowed_address_pairs; name it in cluster_cp_name",
			len(t.Masters), ParamKey, p.Master.ClusterCPName)
	}
	return t, nil
}

func matches(v *model.VnfcResourceInfo, fl *model.Flavour, np *NodeParams) bool {
	if np.VduID != "" {
		return v.VduID == np.VduID
	}
	if np.AspectID != "" {
		if g, _ := v.Metadata[metaScaleGroup].(string); g == np.AspectID {
			return true
		}
		if fl != nil {
			if a := fl.ScalingAspects[np.AspectID]; a != nil {
				if _, ok := a.VduDeltas[v.VduID]; ok {
					return true
				}
			}
		}
		return false
	}
	return hasCP(v, np.SSHCPName) || hasCP(v, np.NICCPName)
}

func newNode(v *model.VnfcResourceInfo, role Role, np *NodeParams, key string) (*Node, error) {
	n := &Node{VnfcID: v.ID, Name: NodeName(v.ID), Role: role, VduID: v.VduID, ServerID: v.ComputeResource.ResourceID}
	n.ServerName, _ = v.Metadata[metaServerName].(string)
	n.Fingerprints = strList(v.Metadata[metaFingerprints])
	n.NodeIP = cpAddress(v, np.NICCPName)
	if n.NodeIP == "" {
		return nil, fmt.Errorf("%s VNFC %s has no address on %s.%s.nic_cp_name %q (its connection points: %s)",
			role, v.ID, ParamKey, key, np.NICCPName, strings.Join(cpNames(v), ", "))
	}
	n.SSHAddr = cpAddress(v, np.SSHCPName)
	if n.SSHAddr == "" {
		// Tacker's layout: ssh_cp_name names the floating IP resource of
		// the node port; the port then carries the floating address.
		if cp := findCP(v, np.NICCPName); cp != nil {
			n.SSHAddr, _ = cp.Metadata[metaFloatingIP].(string)
		}
	}
	if n.SSHAddr == "" {
		return nil, fmt.Errorf("%s VNFC %s has no address on %s.%s.ssh_cp_name %q (its connection points: %s)",
			role, v.ID, ParamKey, key, np.SSHCPName, strings.Join(cpNames(v), ", "))
	}
	if n.ServerID == "" {
		return nil, fmt.Errorf("%s VNFC %s has no computeResource.resourceId", role, v.ID)
	}
	return n, nil
}

// NodeName makes a Kubernetes node name (an RFC 1123 subdomain label,
// lower case, at most 63 characters) of a VNFC id.
func NodeName(vnfcID string) string {
	lower := strings.ToLower(vnfcID)
	var b strings.Builder
	for _, r := range lower {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == lower && s != "" && len(s) <= 63 {
		return s
	}
	// Characters were replaced or cut: a hash of the id keeps names distinct.
	sum := sha256.Sum256([]byte(vnfcID))
	if len(s) > 54 {
		s = strings.Trim(s[:54], "-")
	}
	if s == "" {
		s = "node"
	}
	return s + "-" + hex.EncodeToString(sum[:4])
}

func vnfcByID(info *model.InstantiatedVnfInfo, id string) *model.VnfcResourceInfo {
	for i := range info.VnfcResourceInfo {
		if info.VnfcResourceInfo[i].ID == id {
			return &info.VnfcResourceInfo[i]
		}
	}
	return nil
}

func findCP(v *model.VnfcResourceInfo, cpd string) *model.VnfcCpInfo {
	if v == nil || cpd == "" {
		return nil
	}
	for i := range v.VnfcCpInfo {
		if v.VnfcCpInfo[i].CpdID == cpd {
			return &v.VnfcCpInfo[i]
		}
	}
	return nil
}

func hasCP(v *model.VnfcResourceInfo, cpd string) bool { return findCP(v, cpd) != nil }

func cpNames(v *model.VnfcResourceInfo) []string {
	var out []string
	for _, cp := range v.VnfcCpInfo {
		out = append(out, cp.CpdID)
	}
	if len(out) == 0 {
		out = []string{"none"}
	}
	return out
}

// cpAddress returns the CP's first IPv4 address (else its first address).
func cpAddress(v *model.VnfcResourceInfo, cpd string) string {
	cp := findCP(v, cpd)
	if cp == nil {
		return ""
	}
	return protocolAddress(cp.CpProtocolInfo)
}

// protocolAddress returns the first IPv4 address of a CpProtocolInfo (else
// its first address).
func protocolAddress(info []map[string]any) string {
	var first string
	for _, pi := range info {
		ipoe, _ := pi["ipOverEthernet"].(map[string]any)
		for _, a := range anyList(ipoe["ipAddresses"]) {
			am, _ := a.(map[string]any)
			for _, s := range strList(am["addresses"]) {
				ip, err := netip.ParseAddr(s)
				if err != nil {
					continue
				}
				if ip.Is4() {
					return ip.String()
				}
				if first == "" {
					first = ip.String()
				}
			}
		}
	}
	return first
}

func describeVnfcs(info *model.InstantiatedVnfInfo) string {
	var out []string
	for _, v := range info.VnfcResourceInfo {
		g, _ := v.Metadata[metaScaleGroup].(string)
		out = append(out, fmt.Sprintf("%s (VDU %s, group %q, CPs %s)", v.ID, v.VduID, g, strings.Join(cpNames(&v), "/")))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func anyList(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case []map[string]any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = t[i]
		}
		return out
	}
	return nil
}

// strList reads a []string kept in metadata (a []any after a JSON round trip).
func strList(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
