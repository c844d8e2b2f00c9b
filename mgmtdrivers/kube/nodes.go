package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Role is a node's part in the cluster; drivers may add their own.
type Role string

// Roles of Kubernetes nodes.
const (
	Master Role = "master"
	Worker Role = "worker"
)

// Node is a compute resource a driver works with: a Kubernetes node, or a
// load balancer in front of them.
type Node struct {
	VnfcID string
	// Name is the Kubernetes node name (and inventory host name): the VNFC
	// id made a valid DNS label (NodeName), unique in the VNF and stable
	// across a VNFC heal — unlike addresses.
	Name  string
	Role  Role
	VduID string
	// ServerID is the VIM's id of the compute resource: host key pins are
	// per resource id and address.
	ServerID   string
	ServerName string
	// SSHAddr is where SSH goes; IP is the node address (nic_cp_name).
	SSHAddr string
	IP      string
	// Fingerprints are the host key fingerprints the VIM published.
	Fingerprints []string
	Login        Login
	// Removing is set on the victims of the running scale-in.
	Removing bool
}

func (n *Node) String() string {
	return fmt.Sprintf("%s %s (VNFC %s, %s)", n.Role, n.Name, n.VnfcID, n.SSHAddr)
}

// Plan is how to open a session to the node (keyed by VNFC id).
func (n *Node) Plan(fresh bool) Plan {
	return Plan{Key: n.VnfcID, Name: n.String(), ServerID: n.ServerID, Addr: n.SSHAddr, Fingerprints: n.Fingerprints,
		Login: n.Login, Fresh: fresh}
}

// RoleSpec says which compute resources hold a role's nodes.
type RoleSpec struct {
	Role Role
	// Key is the parameter object's path, for messages
	// ("additionalParams.k8s_cluster_installation_param.master_node").
	Key    string
	Params NodeParams
	// First roles claim their resources before the others are tried (a
	// dedicated load balancer VDU); among the others, a resource matching
	// two roles is an error.
	First bool
}

// Matches tells whether a compute resource belongs to the role: by VDU when
// vdu_id is given; else by aspect_id, naming its scaling group or an aspect
// of the flavour that scales its VDU; else by having a connection point
// named ssh_cp_name or nic_cp_name.
func (s RoleSpec) Matches(r *driverapi.ComputeResource, fl *model.Flavour) bool {
	np := s.Params
	if np.VduID != "" {
		return r.VduID == np.VduID
	}
	if np.AspectID != "" {
		if r.Group == np.AspectID {
			return true
		}
		if fl != nil {
			if a := fl.ScalingAspects[np.AspectID]; a != nil {
				if _, ok := a.VduDeltas[r.VduID]; ok {
					return true
				}
			}
		}
		return false
	}
	return r.CP(np.SSHCPName) != nil || r.CP(np.NICCPName) != nil
}

// Describe says how the role selects its resources, for messages.
func (s RoleSpec) Describe() string {
	np := s.Params
	switch {
	case np.VduID != "":
		return "vdu_id " + np.VduID
	case np.AspectID != "":
		return "aspect_id " + np.AspectID
	}
	return "ssh_cp_name " + np.SSHCPName
}

// Classify finds the nodes of each role among the compute resources (in
// their order) and resolves their addresses and logins. Resources of no
// role are not nodes. Every problem is reported at once.
func Classify(rs []driverapi.ComputeResource, fl *model.Flavour, specs ...RoleSpec) (map[Role][]*Node, error) {
	out := map[Role][]*Node{}
	var problems []string
	names := map[string]string{}
	for i := range rs {
		r := &rs[i]
		var spec *RoleSpec
		for j := range specs {
			if specs[j].First && specs[j].Matches(r, fl) {
				spec = &specs[j]
				break
			}
		}
		if spec == nil {
			var matched []string
			for j := range specs {
				if !specs[j].First && specs[j].Matches(r, fl) {
					if spec == nil {
						spec = &specs[j]
					}
					matched = append(matched, lastKey(specs[j].Key))
				}
			}
			if len(matched) > 1 {
				problems = append(problems, fmt.Sprintf("VNFC %s (VDU %s) matches both %s; set their vdu_id or aspect_id apart", r.VnfcID, r.VduID, strings.Join(matched, " and ")))
				continue
			}
		}
		if spec == nil {
			continue
		}
		n, err := newNode(r, spec)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if other, dup := names[n.Name]; dup {
			problems = append(problems, fmt.Sprintf("VNFCs %s and %s get the same node name %s", other, r.VnfcID, n.Name))
			continue
		}
		names[n.Name] = r.VnfcID
		out[spec.Role] = append(out[spec.Role], n)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("cannot find the cluster nodes: %s", strings.Join(problems, "; "))
	}
	return out, nil
}

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// newNode resolves a resource's addresses: the node address is nic_cp_name's;
// SSH goes to ssh_cp_name's address, or, when no connection point is named
// so (Tacker names the floating IP resource there), to nic_cp_name's
// floating IP.
func newNode(r *driverapi.ComputeResource, s *RoleSpec) (*Node, error) {
	np := s.Params
	n := &Node{VnfcID: r.VnfcID, Name: NodeName(r.VnfcID), Role: s.Role, VduID: r.VduID, ServerID: r.ResourceID, ServerName: r.Name,
		Fingerprints: r.HostKeyFingerprints, Login: np.Login, Removing: r.Removing}
	if cp := r.CP(np.NICCPName); cp != nil {
		n.IP = cp.Address()
	}
	if n.IP == "" {
		return nil, fmt.Errorf("%s VNFC %s has no address on %s.nic_cp_name %q (its connection points: %s)",
			s.Role, r.VnfcID, s.Key, np.NICCPName, cpNames(r))
	}
	if cp := r.CP(np.SSHCPName); cp != nil {
		n.SSHAddr = cp.Address()
	} else if cp := r.CP(np.NICCPName); cp != nil {
		n.SSHAddr = cp.FloatingAddress
	}
	if n.SSHAddr == "" {
		return nil, fmt.Errorf("%s VNFC %s has no address on %s.ssh_cp_name %q (its connection points: %s)",
			s.Role, r.VnfcID, s.Key, np.SSHCPName, cpNames(r))
	}
	if n.ServerID == "" {
		return nil, fmt.Errorf("%s VNFC %s has no compute resource id", s.Role, r.VnfcID)
	}
	return n, nil
}

func cpNames(r *driverapi.ComputeResource) string {
	var out []string
	for _, cp := range r.CPs {
		out = append(out, cp.CpdID)
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Describe lists the compute resources for messages.
func Describe(rs []driverapi.ComputeResource) string {
	var out []string
	for i := range rs {
		r := &rs[i]
		var cps []string
		for _, cp := range r.CPs {
			cps = append(cps, cp.CpdID)
		}
		out = append(out, fmt.Sprintf("%s (VDU %s, group %q, CPs %s)", r.VnfcID, r.VduID, r.Group, strings.Join(cps, "/")))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// NodeName makes a Kubernetes node name (an RFC 1123 label, lower case, at
// most 63 characters) of a VNFC id; when characters had to be replaced or
// cut, a hash of the id keeps names distinct.
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
	sum := sha256.Sum256([]byte(vnfcID))
	if len(s) > 54 {
		s = strings.Trim(s[:54], "-")
	}
	if s == "" {
		s = "node"
	}
	return s + "-" + hex.EncodeToString(sum[:4])
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// knownCPs are the connection points of a flavour: its VDUs', external and
// VIP CPs.
func knownCPs(fl *model.Flavour) map[string]bool {
	known := map[string]bool{}
	for _, v := range fl.VDUs {
		for _, cp := range v.CPs {
			known[cp.ID] = true
		}
	}
	for id := range fl.ExtCPs {
		known[id] = true
	}
	for id := range fl.VipCPs {
		known[id] = true
	}
	return known
}

// CheckCP refuses a connection point name (at path) that is not one of the
// flavour's, before anything is created: a typo would otherwise show only
// after the VMs exist. A flavour that declares no CPs is not checked.
func CheckCP(r *Reader, fl *model.Flavour, path, name string) {
	if fl == nil || name == "" {
		return
	}
	known := knownCPs(fl)
	if len(known) > 0 && !known[name] {
		r.Addf(path, "%q is not a connection point of flavour %s (its connection points: %s)", name, fl.ID, strings.Join(sortedSet(known), ", "))
	}
}

// CheckNodeCPs checks a role's ssh_cp_name and nic_cp_name (at path) against
// the flavour. ssh_cp_name may name something else than a CP only in
// Tacker's layout, where it names the floating IP of the nic_cp_name port.
func CheckNodeCPs(r *Reader, fl *model.Flavour, path string, np NodeParams) {
	if fl == nil {
		return
	}
	known := knownCPs(fl)
	if len(known) == 0 {
		return
	}
	CheckCP(r, fl, path+".nic_cp_name", np.NICCPName)
	if np.SSHCPName != "" && !known[np.SSHCPName] && (np.NICCPName == np.SSHCPName || !known[np.NICCPName]) {
		r.Addf(path+".ssh_cp_name", "%q is not a connection point of flavour %s (its connection points: %s); it may name a floating IP only when nic_cp_name names the port it is on",
			np.SSHCPName, fl.ID, strings.Join(sortedSet(known), ", "))
	}
}

// CheckVimUsers refuses an operation that removes the cluster's Kubernetes
// VIM (names: terminate, entire heal) while other instances — the CNFs
// deployed on the cluster — or operations refer to it: they would be left
// with a VIM that is gone, and the VMs would be deleted before the removal
// failed. The refusal is a *driverapi.ConflictError (409) naming them;
// force (additionalParams.force) lets the operation run anyway.
func CheckVimUsers(ctx context.Context, a *driverapi.Accept, force bool, names ...string) error {
	if a.Vims == nil || force {
		return nil
	}
	return vimInUse(ctx, a, names, "this operation removes it (the cluster is deleted or rebuilt)", "they are left with a VIM whose cluster is gone")
}

// vimInUse is the ConflictError naming the users of the first of names
// that has any; why says what the operation would do to them.
func vimInUse(ctx context.Context, a *driverapi.Accept, names []string, why, forced string) error {
	for _, name := range names {
		users, err := a.Vims.VimUsers(ctx, name, a.Instance.ID)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return &driverapi.ConflictError{Detail: fmt.Sprintf("the cluster's Kubernetes VIM %s is in use by %s: %s; terminate those first, give them another VIM, or send additionalParams.force: true to go ahead anyway (%s)",
				name, strings.Join(users, ", "), why, forced)}
		}
	}
	return nil
}

// CheckWorkerScaleIn refuses a SCALE_IN that would leave the cluster
// without a worker node while other instances (the CNFs deployed on it) use
// its Kubernetes VIM (names): their pods would have nowhere to go when the
// last workers are drained. workers are the cluster's worker nodes now; the
// scale-in removes the instances its steps' deltas give for their VDUs. The
// refusal is a *driverapi.ConflictError (409) naming the users; force
// (additionalParams.force) lets it run anyway. A scale-in that leaves a
// worker is not refused: the victims are drained, so the pods move.
func CheckWorkerScaleIn(ctx context.Context, a *driverapi.Accept, force bool, workers []*Node, names ...string) error {
	req := a.Request.Scale
	if req == nil || req.Type != model.ScaleIn || force || a.Vims == nil || a.Flavour == nil || a.Instance.InstantiatedVnfInfo == nil {
		return nil
	}
	asp := a.Flavour.ScalingAspects[req.AspectID]
	if asp == nil {
		return nil
	}
	level := 0
	for _, st := range a.Instance.InstantiatedVnfInfo.ScaleStatus {
		if st.AspectID == req.AspectID {
			level = st.ScaleLevel
		}
	}
	vdus := map[string]bool{}
	for _, w := range workers {
		vdus[w.VduID] = true
	}
	removed := 0
	for step := level - 1; step >= 0 && step >= level-req.Steps(); step-- {
		for vdu := range vdus {
			removed += asp.StepDelta(vdu, step)
		}
	}
	if removed == 0 || removed < len(workers) {
		return nil
	}
	return vimInUse(ctx, a, names, fmt.Sprintf("scaling in aspect %s by %d step(s) removes %d worker node(s) of %d, leaving no worker for their pods", req.AspectID, req.Steps(), removed, len(workers)),
		"their pods are left without a node")
}

// ForceParam reads additionalParams.force (a boolean, or "true"/"false").
func ForceParam(additional map[string]any) (bool, error) {
	r := &Reader{}
	o := r.Object("additionalParams", additional, false)
	if o == nil {
		return false, r.Err()
	}
	f := o.Bool("force")
	return f, r.Err()
}
