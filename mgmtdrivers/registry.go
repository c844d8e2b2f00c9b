// Package mgmtdrivers holds the registry of built-in management drivers and
// the hook interfaces they implement. A driver implements only the hooks it
// needs; the VNFD's interfaces.Vnflcm names which driver runs each hook.
//
// A driver declares its parameters as a Go type P. They are parsed once,
// when a request is accepted (Typed.ParseParams: any error refuses the
// request with 422, before an operation exists), persisted with the
// operation (sealed), and handed to every hook of that operation typed: the
// hooks are methods with a *P argument (InstantiateStarter[P], ...). New
// turns such a driver into the Driver the engine holds.
package mgmtdrivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Typed is a management driver with parameters of type P.
type Typed[P any] interface {
	// Name is the driver's name in VNFDs.
	Name() string
	// ParseParams reads and validates the driver's parameters for a request
	// being accepted, and refuses a request the driver cannot carry out. For
	// an instantiation it parses the request's additionalParams; for any
	// other operation stored holds what the instantiation parsed (persisted
	// with the instance; nil for an instance instantiated before parameters
	// were persisted) and the request may override parts of it. Every key
	// the driver does not use must be refused. The error's text is the
	// problem detail of the 422 answer: name the JSON path of each problem.
	ParseParams(ctx context.Context, a *driverapi.Accept, stored *P) (*P, error)
}

// Hook interfaces, one per interfaces.Vnflcm operation.
type (
	InstantiateStarter[P any] interface {
		InstantiateStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	InstantiateEnder[P any] interface {
		InstantiateEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
	TerminateStarter[P any] interface {
		TerminateStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	TerminateEnder[P any] interface {
		TerminateEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ScaleStarter[P any] interface {
		ScaleStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ScaleEnder[P any] interface {
		ScaleEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
	HealStarter[P any] interface {
		HealStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	HealEnder[P any] interface {
		HealEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ChangeExtConnStarter[P any] interface {
		ChangeExtConnStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ChangeExtConnEnder[P any] interface {
		ChangeExtConnEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ModifyInformationStarter[P any] interface {
		ModifyInformationStart(ctx context.Context, op *driverapi.Op, p *P) error
	}
	ModifyInformationEnder[P any] interface {
		ModifyInformationEnd(ctx context.Context, op *driverapi.Op, p *P) error
	}
)

// RollbackHandler undoes what a hook did when the operation is rolled back
// (e.g. remove half-joined nodes after a failed scale_end). Optional.
type RollbackHandler[P any] interface {
	Rollback(ctx context.Context, hook string, op *driverapi.Op, p *P) error
}

// HookFunc is a bound hook.
type HookFunc func(context.Context, *driverapi.Op) error

// Driver is a management driver as the engine holds it (New makes one).
type Driver interface {
	Name() string
	// Has reports whether the driver implements a Vnflcm hook.
	Has(hook string) bool
	// Accept parses the driver's parameters of a request being accepted
	// (Typed.ParseParams); the engine persists the result with the operation.
	Accept(ctx context.Context, a *driverapi.Accept, stored json.RawMessage) (json.RawMessage, error)
	// Bind decodes the persisted parameters for one run of an operation.
	Bind(params json.RawMessage) (Bound, error)
}

// Bound is a driver with an operation's parameters.
type Bound interface {
	// Hook returns the driver's implementation of a Vnflcm hook.
	Hook(hook string) (HookFunc, bool)
	// Rollback returns the undo of a hook, if the driver has one.
	Rollback(hook string) (HookFunc, bool)
}

// New returns the Driver of a typed management driver.
func New[P any](d Typed[P]) Driver { return typed[P]{d} }

// BaseParams are the parameters a driver's ParseParams starts from: an
// instantiation's own, parsed from its additionalParams by parse; for a
// later operation a copy of what the instantiation accepted (stored), to
// apply the request's overrides to; for an instance instantiated before
// parameters were kept with the operation, its instantiation's
// additionalParams, parsed.
func BaseParams[P any](a *driverapi.Accept, stored *P, parse func(additional map[string]any) (*P, error)) (*P, error) {
	switch {
	case a.Request.Instantiate != nil:
		return parse(a.Request.Instantiate.AdditionalParams)
	case stored != nil:
		cp := *stored
		return &cp, nil
	case a.Instance.InstantiatedVnfInfo != nil:
		return parse(a.Instance.InstantiatedVnfInfo.AdditionalParams)
	}
	return nil, errors.New("the VNF instance is not instantiated")
}

type typed[P any] struct{ d Typed[P] }

func (t typed[P]) Name() string { return t.d.Name() }

func (t typed[P]) Has(hook string) bool {
	_, ok := t.hook(hook, nil)
	return ok
}

func (t typed[P]) Accept(ctx context.Context, a *driverapi.Accept, stored json.RawMessage) (json.RawMessage, error) {
	var old *P
	if len(stored) > 0 && string(stored) != "null" {
		old = new(P)
		if err := json.Unmarshal(stored, old); err != nil {
			return nil, fmt.Errorf("the parameters stored with VNF instance for driver %s do not read: %w", t.d.Name(), err)
		}
	}
	p, err := t.d.ParseParams(ctx, a, old)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}

func (t typed[P]) Bind(params json.RawMessage) (Bound, error) {
	p := new(P)
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, p); err != nil {
			return nil, fmt.Errorf("the parameters of management driver %s persisted with the operation do not read: %w", t.d.Name(), err)
		}
	}
	return bound[P]{t, p}, nil
}

type bound[P any] struct {
	t typed[P]
	p *P
}

func (b bound[P]) Hook(hook string) (HookFunc, bool) { return b.t.hook(hook, b.p) }

func (b bound[P]) Rollback(hook string) (HookFunc, bool) {
	rb, ok := b.t.d.(RollbackHandler[P])
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, op *driverapi.Op) error { return rb.Rollback(ctx, hook, op, b.p) }, true
}

func (t typed[P]) hook(hook string, p *P) (HookFunc, bool) {
	bind := func(f func(context.Context, *driverapi.Op, *P) error) (HookFunc, bool) {
		return func(ctx context.Context, op *driverapi.Op) error { return f(ctx, op, p) }, true
	}
	d := t.d
	switch hook {
	case model.HookInstantiateStart:
		if h, ok := d.(InstantiateStarter[P]); ok {
			return bind(h.InstantiateStart)
		}
	case model.HookInstantiateEnd:
		if h, ok := d.(InstantiateEnder[P]); ok {
			return bind(h.InstantiateEnd)
		}
	case model.HookTerminateStart:
		if h, ok := d.(TerminateStarter[P]); ok {
			return bind(h.TerminateStart)
		}
	case model.HookTerminateEnd:
		if h, ok := d.(TerminateEnder[P]); ok {
			return bind(h.TerminateEnd)
		}
	case model.HookScaleStart:
		if h, ok := d.(ScaleStarter[P]); ok {
			return bind(h.ScaleStart)
		}
	case model.HookScaleEnd:
		if h, ok := d.(ScaleEnder[P]); ok {
			return bind(h.ScaleEnd)
		}
	case model.HookHealStart:
		if h, ok := d.(HealStarter[P]); ok {
			return bind(h.HealStart)
		}
	case model.HookHealEnd:
		if h, ok := d.(HealEnder[P]); ok {
			return bind(h.HealEnd)
		}
	case model.HookChangeExtConnStart:
		if h, ok := d.(ChangeExtConnStarter[P]); ok {
			return bind(h.ChangeExtConnStart)
		}
	case model.HookChangeExtConnEnd:
		if h, ok := d.(ChangeExtConnEnder[P]); ok {
			return bind(h.ChangeExtConnEnd)
		}
	case model.HookModifyInformationStart:
		if h, ok := d.(ModifyInformationStarter[P]); ok {
			return bind(h.ModifyInformationStart)
		}
	case model.HookModifyInformationEnd:
		if h, ok := d.(ModifyInformationEnder[P]); ok {
			return bind(h.ModifyInformationEnd)
		}
	}
	return nil, false
}

// Registry maps driver names (as written in VNFDs) to drivers.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Driver
}

// NewRegistry returns a registry holding ds.
func NewRegistry(ds ...Driver) *Registry {
	r := &Registry{m: map[string]Driver{}}
	for _, d := range ds {
		r.Register(d)
	}
	return r
}

// Register adds d; a duplicate name is a programming error.
func (r *Registry) Register(d Driver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[d.Name()]; dup {
		panic(fmt.Sprintf("mgmtdrivers: driver %q registered twice", d.Name()))
	}
	r.m[d.Name()] = d
}

// Lookup finds a driver by name.
func (r *Registry) Lookup(name string) (Driver, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.m[name]
	return d, ok
}

// Names lists the registered drivers, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
