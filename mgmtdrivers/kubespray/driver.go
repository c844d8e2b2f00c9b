package kubespray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
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

var (
	_ mgmtdrivers.InstantiateEnder = (*Driver)(nil)
	_ mgmtdrivers.TerminateEnder   = (*Driver)(nil)
	_ mgmtdrivers.ScaleStarter     = (*Driver)(nil)
	_ mgmtdrivers.ScaleEnder       = (*Driver)(nil)
	_ mgmtdrivers.HealStarter      = (*Driver)(nil)
	_ mgmtdrivers.HealEnder        = (*Driver)(nil)
	_ mgmtdrivers.RequestValidator = (*Driver)(nil)
)

func (d *Driver) check() error {
	if d.o.Pins == nil {
		return errors.New("kubespray: the driver has no host key pin store (Options.Pins)")
	}
	return nil
}

func (d *Driver) with(ctx context.Context, op *driverapi.Op, needCluster bool, fn func(*session) error) error {
	if err := d.check(); err != nil {
		return err
	}
	s, err := d.newSession(op, needCluster)
	if err != nil {
		return err
	}
	defer s.close()
	return fn(s)
}

// InstantiateEnd builds the cluster: inventory, external load balancer,
// cluster.yml, Kubernetes VIM.
func (d *Driver) InstantiateEnd(ctx context.Context, op *driverapi.Op) error {
	return d.with(ctx, op, true, func(s *session) error { return s.install(ctx) })
}

// TerminateEnd deletes the VIM and the cluster's inventory directory.
func (d *Driver) TerminateEnd(ctx context.Context, op *driverapi.Op) error {
	return d.with(ctx, op, false, func(s *session) error { return s.teardown(ctx) })
}

// ScaleStart removes the SCALE_IN victims from the load balancer and the
// cluster before the infra driver deletes their VMs.
func (d *Driver) ScaleStart(ctx context.Context, op *driverapi.Op) error {
	req, ok := op.Request.(*model.ScaleVnfRequest)
	if !ok || req.Type != model.ScaleIn {
		return nil
	}
	victims, err := openstack.ScaleInVictims(op)
	if err != nil {
		return err
	}
	return d.with(ctx, op, true, func(s *session) error {
		workers, err := s.targets(victims, "scale in")
		if err != nil {
			return err
		}
		return s.removeWorkers(ctx, workers)
	})
}

// ScaleEnd joins the workers a SCALE_OUT added.
func (d *Driver) ScaleEnd(ctx context.Context, op *driverapi.Op) error {
	req, ok := op.Request.(*model.ScaleVnfRequest)
	if !ok || req.Type != model.ScaleOut {
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
	return d.with(ctx, op, true, func(s *session) error {
		workers, err := s.targets(added, "scale out")
		if err != nil {
			return err
		}
		return s.addWorkers(ctx, workers)
	})
}

func healRequest(op *driverapi.Op) (*model.HealVnfRequest, error) {
	req, ok := op.Request.(*model.HealVnfRequest)
	if !ok {
		return nil, fmt.Errorf("kubespray: heal: unexpected request %T", op.Request)
	}
	return req, nil
}

// HealStart: for an entire heal, terminate_end (the VIM and inventory go);
// for worker VNFCs, their scale-in removal.
func (d *Driver) HealStart(ctx context.Context, op *driverapi.Op) error {
	req, err := healRequest(op)
	if err != nil {
		return err
	}
	if len(req.VnfcInstanceID) == 0 {
		return d.with(ctx, op, false, func(s *session) error { return s.teardown(ctx) })
	}
	return d.with(ctx, op, true, func(s *session) error {
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
func (d *Driver) HealEnd(ctx context.Context, op *driverapi.Op) error {
	req, err := healRequest(op)
	if err != nil {
		return err
	}
	if len(req.VnfcInstanceID) == 0 {
		return d.with(ctx, op, true, func(s *session) error { return s.install(ctx) })
	}
	return d.with(ctx, op, true, func(s *session) error {
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
func (d *Driver) Rollback(ctx context.Context, hook string, op *driverapi.Op) error {
	switch hook {
	case model.HookInstantiateEnd:
		return d.with(ctx, op, false, func(s *session) error { return s.teardown(ctx) })
	case model.HookScaleEnd:
		req, ok := op.Request.(*model.ScaleVnfRequest)
		if !ok || req.Type != model.ScaleOut || op.ResourceChanges == nil {
			return nil
		}
		var added []string
		for _, a := range op.ResourceChanges.AffectedVnfcs {
			if a.ChangeType == "ADDED" {
				added = append(added, a.ID)
			}
		}
		return d.with(ctx, op, true, func(s *session) error {
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

// ValidateRequest checks an instantiate request's parameters and refuses
// heal requests that name control-plane VNFCs, before the operation is
// accepted (nothing has changed yet).
func (d *Driver) ValidateRequest(_ context.Context, r mgmtdrivers.Request) error {
	switch req := r.Body.(type) {
	case *model.InstantiateVnfRequest:
		_, err := ParseParams(req.AdditionalParams)
		return err
	case *model.HealVnfRequest:
		if len(req.VnfcInstanceID) == 0 || r.Instance == nil || r.Instance.InstantiatedVnfInfo == nil {
			return nil
		}
		info := r.Instance.InstantiatedVnfInfo
		p, err := ParseParams(mergeParams(info.AdditionalParams, req.AdditionalParams))
		if err != nil {
			return err
		}
		var masters []string
		for _, v := range info.VnfcResourceInfo {
			if slices.Contains(req.VnfcInstanceID, v.ID) && p.RoleOf(v) == RoleMaster {
				masters = append(masters, v.ID)
			}
		}
		if len(masters) > 0 {
			return fmt.Errorf("healing control-plane VNFCs (%s) is not supported: kubespray has no playbook to replace a control-plane/etcd member; heal worker VNFCs, or the entire VNF (no vnfcInstanceId)", strings.Join(masters, ", "))
		}
	}
	return nil
}
