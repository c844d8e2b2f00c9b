package lcm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// operation is everything the engine knows of one LCM operation: how its
// request is accepted, what it does to a fresh working copy, its steps and
// whether it can be rolled back. Each lives in its own op_<name>.go file;
// a new operation is a new file here, its request type in model, its member
// in driverapi.Request, its route in api.
type operation struct {
	name string // model.OpInstantiate, ...
	// requireState is the instantiation state the instance must be in ("" = any).
	requireState string
	// verb names the task in conflict messages ("instantiated", ...).
	verb string
	// start and end are the Vnflcm hooks around the work ("" = none).
	start, end string
	// decode reads the request body into its member of driverapi.Request.
	decode func(raw []byte) (driverapi.Request, error)
	// validate checks what the body alone tells, before the instance is
	// read. Optional.
	validate func(req driverapi.Request) error
	// check validates the request against the instance and its VNFD before
	// any driver sees it; it sets a.Flavour for an instantiation.
	check func(ctx context.Context, s *Service, a *accepting) error
	// infra is the infra driver's step between the hooks (nil: local runs
	// in the engine instead).
	infra func(d driverapi.InfraDriver) step
	local *step
	// prepare applies the request's immediate effects to a fresh working
	// copy, so that every step (and every resumed attempt) sees the same
	// target state. Optional.
	prepare func(ctx context.Context, r *run, dop *driverapi.Op) error
	// cannotRollBack says why the operation cannot be rolled back ("" = it can).
	cannotRollBack func(req driverapi.Request) string
	// finish gives the instance its state after completion. Optional.
	finish func(in *model.VnfInstance)
}

// operations by name (model.Op*), filled by the op_*.go files.
var operations = map[string]*operation{}

func register(o *operation) *operation {
	if _, dup := operations[o.name]; dup {
		panic("lcm: operation " + o.name + " registered twice")
	}
	operations[o.name] = o
	return o
}

func operationOf(name string) (*operation, error) {
	o, ok := operations[name]
	if !ok {
		return nil, fmt.Errorf("operation %s is not supported by this VNFM", name)
	}
	return o, nil
}

// decodeInto decodes a request body into a typed view. Unknown members are
// allowed (Tacker compatibility); type errors are reported for people.
func decodeInto(raw []byte, v any) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errorf(KindInvalid, "request body: %q must be of type %s", te.Field, te.Type)
		}
		return errorf(KindInvalid, "request body is not valid JSON: %v", err)
	}
	return nil
}

// accepting is a request on its way to becoming an op occurrence.
type accepting struct {
	driverapi.Accept
	stored *store.Instance // the instance as read (its secrets open, as in Accept.Instance)
	// instantiation is what the instance's last completed instantiation
	// left, read with it (nil: none, or an instantiation).
	instantiation *store.Instantiation
	// vims is the request's vimConnectionInfo, resolved (instantiate).
	vims []model.VimConnectionInfo
}

// accept turns an LCM request into an op occurrence: the operation's own
// checks, the infra driver's (CheckRequest), the management drivers'
// parameters — parsed here, once, and persisted with the op — and only then
// the op row. Whatever refuses the request leaves nothing behind.
func (s *Service) accept(ctx context.Context, o *operation, instID string, raw []byte, ifVersion int64) (*store.OpOcc, error) {
	req, err := o.decode(raw)
	if err != nil {
		return nil, err
	}
	if o.validate != nil {
		if err := o.validate(req); err != nil {
			return nil, err
		}
	}
	kept := &secrets.Kept{}
	// An operation after the instantiation starts from the drivers'
	// parameters the instantiation accepted: read with the instance.
	read, vnfd, err := s.instanceAndVnfd(ctx, instID, kept, o.name != model.OpInstantiate)
	if err != nil {
		return nil, err
	}
	in, opened := read.Instance, &read.VnfInstance
	// The checks see a copy: opened stays as read, for the run (handoff).
	view := *opened
	a := &accepting{stored: in, instantiation: read.Instantiation, Accept: driverapi.Accept{Operation: o.name, Request: req, Instance: &view, Vnfd: vnfd,
		Flavour: flavourOf(in, vnfd), Package: &pkgFiles{st: s.st, pkgID: in.VnfPkgID}, Vims: s.vims}}
	if o.check != nil {
		if err := o.check(ctx, s, a); err != nil {
			return nil, err
		}
	}
	if o.infra != nil && (a.Flavour != nil || o.name == model.OpInstantiate) {
		vimType := ""
		if len(a.vims) > 0 {
			vimType = a.vims[0].VimType
		} else if len(opened.VimConnectionInfo) > 0 {
			vimType = opened.VimConnectionInfo[0].VimType
		}
		d, ok := s.infra(vimType)
		if !ok {
			if vimType == "" {
				return nil, errorf(KindInvalid, "no VIM to instantiate on: give vimConnectionInfo in the request, or register a default VIM (openstack vim register --is-default ...)")
			}
			return nil, errorf(KindInvalid, "vimConnectionInfo: vimType %q is not supported by this VNFM", vimType)
		}
		a.Infra = d
		if err := d.CheckRequest(ctx, &a.Accept); err != nil {
			if _, ok := reqerr.As(err); ok {
				return nil, err
			}
			return nil, errorf(KindUnprocessable, "%v", err)
		}
	}
	params, err := s.driverParams(ctx, o, a)
	if err != nil {
		return nil, err
	}
	// With a free worker slot here, the operation is created leased to
	// the run that will execute it in this process: no claim.
	var self *selfRun
	if e := s.runner.Load(); e != nil {
		self = e.reserveRun(ctx)
	}
	op, err := s.createOp(ctx, instID, o, raw, params, ifVersion, read, self)
	if err != nil {
		if self != nil {
			self.e.free()
		}
		return nil, err
	}
	// The instance and VNFD were read before the op's transaction: an
	// operation that completed meanwhile may have changed them.
	var h *handed
	if locked := op.CreatedFrom(); locked != nil && locked.Version == in.Version && vnfd != nil && locked.VnfdID == vnfd.ID {
		h = &handed{in: opened, docs: read.Docs, vnfd: vnfd, params: params, kept: kept, req: &req}
	}
	switch {
	case self != nil:
		if h != nil && o.name == model.OpInstantiate {
			h.vims, h.resolved = a.vims, true
		}
		self.e.start(self.ctx, op, self.owner, h)
	case h != nil:
		s.handed.put(op.ID, *h)
	}
	return op, nil
}

// driverParams checks that every hook of the operation the flavour names has
// a driver, and lets each driver parse its parameters (mgmtdrivers.Typed):
// {driver name: parameters}, nil when no driver takes part.
func (s *Service) driverParams(ctx context.Context, o *operation, a *accepting) (map[string]json.RawMessage, error) {
	fl := a.Flavour
	if fl == nil {
		return nil, nil
	}
	var stored map[string]json.RawMessage
	storedOpen := false
	out := map[string]json.RawMessage{}
	for _, h := range []string{o.start, o.end} {
		name, ok := fl.Interfaces[h]
		if h == "" || !ok {
			continue
		}
		d, ok := s.mgmt.Lookup(name)
		if !ok {
			return nil, errorf(KindUnprocessable, "the VNFD names management driver %q for interfaces.Vnflcm.%s, which this VNFM does not provide (available: %s)",
				name, h, strings.Join(s.mgmt.Names(), ", "))
		}
		if !d.Has(h) {
			return nil, errorf(KindUnprocessable, "management driver %q does not implement interfaces.Vnflcm.%s named in the VNFD", name, h)
		}
		if _, done := out[name]; done {
			continue
		}
		if !storedOpen && o.name != model.OpInstantiate {
			storedOpen = true
			var err error
			if stored, err = s.instantiationParams(a.stored.ID, a.instantiation); err != nil {
				return nil, err
			}
		}
		p, err := d.Accept(ctx, &a.Accept, stored[name])
		if err != nil {
			if le, ok := reqerr.As(err); ok {
				return nil, le
			}
			var ce *driverapi.ConflictError
			if errors.As(err, &ce) {
				return nil, errorf(KindConflict, "%s", ce.Detail)
			}
			return nil, errorf(KindUnprocessable, "management driver %s: %v", name, err)
		}
		out[name] = p
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// instantiationParams are the drivers' parameters of the instance's last
// completed instantiation, read with the instance (inst; nil: none).
func (s *Service) instantiationParams(instID string, inst *store.Instantiation) (map[string]json.RawMessage, error) {
	if inst == nil || len(inst.DriverParams) == 0 {
		return nil, nil
	}
	plain, err := s.box.OpenJSON(inst.DriverParams, store.OpPlace(inst.OpID, "driver_params"))
	if err != nil {
		return nil, fmt.Errorf("cannot decrypt the drivers' parameters of VNF instance %s: %w", instID, err)
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(plain, &m)
}

func (s *Service) createOp(ctx context.Context, instID string, o *operation, raw []byte, params map[string]json.RawMessage, ifVersion int64,
	read *store.InstancePackage, self *selfRun) (*store.OpOcc, error) {
	opID := uuid.NewString()
	sealed, err := s.seal(raw, store.OpPlace(opID, "operation_params"))
	if err != nil {
		return nil, err
	}
	var sealedParams []byte
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		if sealedParams, err = s.box.SealJSON(b, store.OpPlace(opID, "driver_params")); err != nil {
			return nil, err
		}
	}
	n := store.NewOp{ID: opID, VnfInstanceID: instID, Operation: o.name, OperationParams: sealed, DriverParams: sealedParams,
		RequireState: o.requireState, IfVersion: ifVersion, Verb: o.verb, From: read}
	if self != nil {
		n.LeaseOwner, n.Lease = self.owner, self.e.cfg.Lease
	}
	op, err := s.st.CreateOpOcc(ctx, n)
	if err != nil {
		return nil, fromStore(err, notFoundInstance(instID).Detail)
	}
	s.log.Info("lcm operation accepted", "opOccId", op.ID, "vnfInstanceId", instID, "operation", o.name)
	return op, nil
}

// plan lists an operation's steps: the management driver's *_start hook, the
// infra driver's (or the engine's) work, the *_end hook. Step names are
// stable: the journal refers to them across restarts and versions.
func (r *run) plan(dop *driverapi.Op) ([]step, error) {
	o, err := operationOf(dop.Operation)
	if err != nil {
		return nil, err
	}
	var steps []step
	add := func(hook string) error {
		if hook == "" {
			return nil
		}
		s, ok, err := r.mgmtStep(dop, hook)
		if err != nil {
			return err
		}
		if ok {
			steps = append(steps, s)
		}
		return nil
	}
	var work step
	if o.infra != nil {
		d, err := r.infraDriver(dop)
		if err != nil {
			return nil, err
		}
		work = o.infra(d)
	} else {
		work = *o.local
	}
	if err := add(o.start); err != nil {
		return nil, err
	}
	steps = append(steps, work)
	if err := add(o.end); err != nil {
		return nil, err
	}
	return steps, nil
}

// infraDriver is the infra driver of the operation's VIM.
func (r *run) infraDriver(dop *driverapi.Op) (driverapi.InfraDriver, error) {
	vimType := ""
	if dop.Vim != nil {
		vimType = dop.Vim.VimType
	}
	d, ok := r.e.svc.infra(vimType)
	if !ok {
		return nil, fmt.Errorf("no infra driver for VIM type %q; give a supported vimConnectionInfo", vimType)
	}
	return d, nil
}

// mgmtStep binds a Vnflcm hook to the driver the flavour names for it, with
// the operation's parameters of that driver.
func (r *run) mgmtStep(dop *driverapi.Op, hook string) (step, bool, error) {
	if dop.Flavour == nil {
		return step{}, false, nil
	}
	name, ok := dop.Flavour.Interfaces[hook]
	if !ok {
		return step{}, false, nil
	}
	s := step{name: "mgmt." + hook}
	d, ok := r.e.svc.mgmt.Lookup(name)
	if !ok {
		s.do = func(context.Context, *driverapi.Op) error {
			return fmt.Errorf("management driver %q named for %s is not available in this VNFM", name, hook)
		}
		return s, true, nil
	}
	if !d.Has(hook) {
		return step{}, false, nil
	}
	b, err := d.Bind(r.params[name])
	if err != nil {
		return step{}, false, err
	}
	f, _ := b.Hook(hook)
	s.do = f
	if undo, ok := b.Rollback(hook); ok {
		s.undo = undo
	}
	return s, true, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// flavourOf is the instance's flavour (nil before instantiation).
func flavourOf(in *store.Instance, vnfd *model.Vnfd) *model.Flavour {
	if in.InstantiatedVnfInfo == nil || vnfd == nil {
		return nil
	}
	return vnfd.Flavours[in.InstantiatedVnfInfo.FlavourID]
}
