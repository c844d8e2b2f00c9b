package kubespray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Name is the driver's name in the registry (VNFDs bind it with Tacker's
// artifact key mgmt-drivers-kubespray or `builtin:kubespray`).
const Name = "kubespray"

// Options are the driver's dependencies and limits.
type Options struct {
	// Pins keeps the SSH host keys of the Ansible server and the VNFCs
	// (the store's host_keys). Required.
	Pins remote.PinStore
	// Dial opens TCP connections to the VNFCs, the Ansible server and the
	// load balancer's API frontend (nil: the default dialer). Tests on a
	// private network pass testhosts' dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PlaybookTimeout bounds one ansible-playbook run unless the request
	// sets ansible.playbook_timeout (0: 20 min + 5 min per node).
	PlaybookTimeout time.Duration
	// DrainTimeout bounds the drain of a node before its removal
	// (default 5 min).
	DrainTimeout time.Duration
	// NodeWait is how long a VNFC's SSH may take to come up (default 5 min).
	NodeWait time.Duration
	// AnsibleWait is how long the Ansible server may take to answer
	// (default 1 min).
	AnsibleWait time.Duration
	// VimWait is how long the API may take to answer through the load
	// balancer (default 2 min).
	VimWait time.Duration
	// FingerprintWait bounds the wait for a new VNFC's published SSH host
	// key fingerprints under the policy published (default 3 min).
	FingerprintWait time.Duration
	// Logger is used when the operation has none.
	Logger *slog.Logger
}

// Driver is the kubespray management driver.
type Driver struct{ o Options }

// New returns the driver.
func New(o Options) *Driver {
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Minute
	}
	if o.NodeWait <= 0 {
		o.NodeWait = 5 * time.Minute
	}
	if o.AnsibleWait <= 0 {
		o.AnsibleWait = time.Minute
	}
	if o.VimWait <= 0 {
		o.VimWait = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Driver{o: o}
}

// Name implements mgmtdrivers.Driver.
func (d *Driver) Name() string { return Name }

// The hooks the driver implements, with its Params.
var (
	_ mgmtdrivers.Typed[Params]            = (*Driver)(nil)
	_ mgmtdrivers.InstantiateEnder[Params] = (*Driver)(nil)
	_ mgmtdrivers.TerminateEnder[Params]   = (*Driver)(nil)
	_ mgmtdrivers.ScaleStarter[Params]     = (*Driver)(nil)
	_ mgmtdrivers.ScaleEnder[Params]       = (*Driver)(nil)
	_ mgmtdrivers.HealStarter[Params]      = (*Driver)(nil)
	_ mgmtdrivers.HealEnder[Params]        = (*Driver)(nil)
	_ mgmtdrivers.RollbackHandler[Params]  = (*Driver)(nil)
)

// Driver returns the driver as the engine holds it.
func (d *Driver) Driver() mgmtdrivers.Driver { return mgmtdrivers.New[Params](d) }

func (d *Driver) check() error {
	if d.o.Pins == nil {
		return errors.New("kubespray: the driver has no host key pin store (Options.Pins)")
	}
	return nil
}

func (d *Driver) with(ctx context.Context, op *driverapi.Op, p *Params, needCluster bool, fn func(*session) error) error {
	if err := d.check(); err != nil {
		return err
	}
	s, err := d.newSession(op, p, needCluster)
	if err != nil {
		return err
	}
	defer s.close()
	return fn(s)
}

// InstantiateEnd builds the cluster: inventory, external load balancer,
// cluster.yml, Kubernetes VIM.
func (d *Driver) InstantiateEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	return d.with(ctx, op, p, true, func(s *session) error { return s.install(ctx) })
}

// TerminateEnd deletes the VIM and the cluster's inventory directory.
func (d *Driver) TerminateEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	return d.with(ctx, op, p, false, func(s *session) error { return s.teardown(ctx) })
}

// ScaleStart removes the SCALE_IN victims from the load balancer and the
// cluster before the infra driver deletes their VMs.
func (d *Driver) ScaleStart(ctx context.Context, op *driverapi.Op, p *Params) error {
	if !op.Request.ScaleIn() {
		return nil
	}
	return d.with(ctx, op, p, true, func(s *session) error {
		workers, err := s.targets(op.Victims, "scale in")
		if err != nil {
			return err
		}
		return s.removeWorkers(ctx, workers)
	})
}

// ScaleEnd joins the workers a SCALE_OUT added.
func (d *Driver) ScaleEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	if !op.Request.ScaleOut() {
		return nil
	}
	var added []string
	if op.ResourceChanges != nil {
		for _, a := range op.ResourceChanges.AffectedVnfcs {
			if a.ChangeType == "ADDED" {
				added = append(added, a.ID)
			}
		}
	}
	return d.with(ctx, op, p, true, func(s *session) error {
		workers, err := s.targets(added, "scale out")
		if err != nil {
			return err
		}
		return s.addWorkers(ctx, workers)
	})
}

func healRequest(op *driverapi.Op) (*model.HealVnfRequest, error) {
	if op.Request.Heal == nil {
		return nil, errors.New("kubespray: heal: the operation has no HealVnfRequest")
	}
	return op.Request.Heal, nil
}

// HealStart: for an entire heal, terminate_end (the VIM and inventory go);
// for worker VNFCs, their scale-in removal.
func (d *Driver) HealStart(ctx context.Context, op *driverapi.Op, p *Params) error {
	req, err := healRequest(op)
	if err != nil {
		return err
	}
	if len(req.VnfcInstanceID) == 0 {
		return d.with(ctx, op, p, false, func(s *session) error { return s.teardown(ctx) })
	}
	return d.with(ctx, op, p, true, func(s *session) error {
		workers, err := s.targets(req.VnfcInstanceID, "heal")
		if err != nil {
			return err
		}
		return s.removeWorkers(ctx, workers)
	})
}

// HealEnd: for an entire heal, instantiate_end on the new VMs; for worker
// VNFCs, the scale-out join of their replacements; a healed load balancer
// gets its configuration again.
func (d *Driver) HealEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	req, err := healRequest(op)
	if err != nil {
		return err
	}
	if len(req.VnfcInstanceID) == 0 {
		return d.with(ctx, op, p, true, func(s *session) error { return s.install(ctx) })
	}
	return d.with(ctx, op, p, true, func(s *session) error {
		workers, err := s.targets(req.VnfcInstanceID, "heal")
		if err != nil {
			return err
		}
		if err := s.addWorkers(ctx, workers); err != nil {
			return err
		}
		if slices.Contains(req.VnfcInstanceID, s.c.LB.VnfcID) && len(workers) == 0 {
			return s.step(ctx, "external-lb", "configure the replaced load balancer", func() error { return s.configureLB(ctx, s.c.Workers) })
		}
		return nil
	})
}

// Rollback undoes a hook of an operation being rolled back: a failed
// instantiation loses its VIM and inventory (the infra rollback then deletes
// the VMs); a failed scale-out takes the added workers, joined or half
// joined, out of the cluster, the inventory and the load balancer before
// their VMs go.
func (d *Driver) Rollback(ctx context.Context, hook string, op *driverapi.Op, p *Params) error {
	switch hook {
	case model.HookInstantiateEnd:
		return d.with(ctx, op, p, false, func(s *session) error { return s.teardown(ctx) })
	case model.HookScaleEnd:
		if !op.Request.ScaleOut() || op.ResourceChanges == nil {
			return nil
		}
		var added []string
		for _, a := range op.ResourceChanges.AffectedVnfcs {
			if a.ChangeType == "ADDED" {
				added = append(added, a.ID)
			}
		}
		return d.with(ctx, op, p, true, func(s *session) error {
			workers, err := s.targets(added, "roll back the scale out of")
			if err != nil || len(workers) == 0 {
				return err
			}
			// Nodes the cluster's Ansible key never reached are removed
			// without a reset.
			if err := s.prepareNodes(ctx, workers); err != nil {
				s.log.Warn("some added workers cannot be prepared; they are removed without a reset", "err", err)
			}
			return s.removeWorkers(ctx, workers)
		})
	}
	return nil
}

// targets picks the worker nodes among VNFC ids; masters are refused (no
// kubespray playbook replaces a control-plane/etcd member), the load
// balancer and VNFCs outside the cluster are left to the caller.
func (s *session) targets(vnfcIDs []string, what string) ([]*Node, error) {
	var workers []*Node
	for _, id := range vnfcIDs {
		n := s.c.ByVnfc(id)
		if n == nil {
			continue
		}
		switch n.Role {
		case RoleMaster:
			return nil, fmt.Errorf("kubespray: cannot %s control-plane node %s (VNFC %s): kubespray has no playbook to replace a control-plane/etcd member; heal the entire VNF instead", what, n.Name, id)
		case RoleWorker:
			workers = append(workers, n)
		}
	}
	return workers, nil
}

// ParseParams (mgmtdrivers.Typed) reads k8s_cluster_installation_param
// once, when the request is accepted, and refuses what can be known then,
// before anything is created or deleted: for an instantiation the
// connection point names against the VNFD and the load balancer's script in
// the package; for a scale an aspect that scales the control plane or the
// load balancer (kubespray has no playbook to add or replace a
// control-plane/etcd member) and a scale-in that leaves no worker while
// other instances depend on the cluster VIM; for a heal control-plane
// VNFCs; for a termination or an entire heal a cluster VIM other instances
// depend on. A
// scale or heal request may replace whole objects of the parameters
// (worker_node, ansible, external_lb_param, ...).
func (d *Driver) ParseParams(ctx context.Context, a *driverapi.Accept, stored *Params) (*Params, error) {
	p, err := mgmtdrivers.BaseParams(a, stored, ParseParams)
	if err != nil {
		return nil, err
	}
	if a.Request.Instantiate != nil {
		return p, checkPlan(ctx, a, p)
	}
	if err := p.override(a.Request.AdditionalParams()); err != nil {
		return nil, err
	}
	var c *Cluster
	if info := a.Instance.InstantiatedVnfInfo; info != nil && len(info.VnfcResourceInfo) > 0 {
		c, _ = BuildCluster(a.ComputeResources(), a.Flavour, p) // the hooks report a failure with the whole picture
	}
	switch req := a.Request; {
	case req.Scale != nil:
		if err := checkAspect(a.Flavour, c, p, req.Scale.AspectID); err != nil || c == nil {
			return p, err
		}
		force, err := kube.ForceParam(req.AdditionalParams())
		if err != nil {
			return nil, err
		}
		return p, kube.CheckWorkerScaleIn(ctx, a, force, c.Workers, p.vimName(a.Instance.ID))
	case req.Heal != nil && len(req.Heal.VnfcInstanceID) == 0, req.Terminate != nil:
		force, err := kube.ForceParam(req.AdditionalParams())
		if err != nil {
			return nil, err
		}
		p.Force = force
		return p, kube.CheckVimUsers(ctx, a, force, p.vimName(a.Instance.ID))
	case req.Heal != nil && c != nil:
		var masters []string
		for _, id := range req.Heal.VnfcInstanceID {
			if n := c.ByVnfc(id); n != nil && n.Role == RoleMaster {
				masters = append(masters, id)
			}
		}
		if len(masters) > 0 {
			return nil, fmt.Errorf("healing control-plane VNFCs (%s) is not supported: kubespray has no playbook to replace a control-plane/etcd member; heal worker VNFCs, or the entire VNF (no vnfcInstanceId)", strings.Join(masters, ", "))
		}
	}
	return p, nil
}

// checkPlan validates an instantiation's parameters against the VNFD and
// the package before anything exists.
func checkPlan(ctx context.Context, a *driverapi.Accept, p *Params) error {
	r := &kube.Reader{Docs: DocsURL}
	kube.CheckNodeCPs(r, a.Flavour, root+".master_node", p.Master.NodeParams)
	kube.CheckNodeCPs(r, a.Flavour, root+".worker_node", p.Worker.NodeParams)
	kube.CheckCP(r, a.Flavour, root+".external_lb_param.ssh_cp_name", p.ExternalLB.SSHCPName)
	if a.Package != nil {
		if _, err := a.Package.ReadFile(ctx, p.ExternalLB.ScriptPath); err != nil {
			r.Addf(root+".external_lb_param.script_path", "%s is not in the VNF package: %v", p.ExternalLB.ScriptPath, err)
		}
	}
	return r.Err()
}

// checkAspect refuses scaling the control plane or the load balancer.
func checkAspect(fl *model.Flavour, c *Cluster, p *Params, aspectID string) error {
	if fl == nil || fl.ScalingAspects[aspectID] == nil {
		return nil
	}
	a := fl.ScalingAspects[aspectID]
	vdus := map[string]string{}
	if p.Master.VduID != "" {
		vdus[p.Master.VduID] = "control-plane"
	}
	if c != nil {
		for _, m := range c.Masters {
			vdus[m.VduID] = "control-plane"
		}
		if c.LB != nil {
			vdus[c.LB.VduID] = "load balancer"
		}
	}
	for _, vdu := range slices.Sorted(maps.Keys(a.VduDeltas)) {
		if what, ok := vdus[vdu]; ok {
			return fmt.Errorf("aspect %s scales the %s VDU %s: kubespray has no playbook to add or remove a control-plane/etcd member or the load balancer; scale the workers' aspect", aspectID, what, vdu)
		}
	}
	return nil
}
