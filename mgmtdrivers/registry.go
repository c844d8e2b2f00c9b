// Package mgmtdrivers holds the registry of built-in management drivers and
// the hook interfaces they implement. A driver implements only the hooks it
// needs; the VNFD's interfaces.Vnflcm names which driver runs each hook.
package mgmtdrivers

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Driver is a management driver. Hooks are optional interfaces below.
type Driver interface {
	Name() string
}

// Hook interfaces, one per interfaces.Vnflcm operation.
type (
	InstantiateStarter interface {
		InstantiateStart(context.Context, *driverapi.Op) error
	}
	InstantiateEnder interface {
		InstantiateEnd(context.Context, *driverapi.Op) error
	}
	TerminateStarter interface {
		TerminateStart(context.Context, *driverapi.Op) error
	}
	TerminateEnder interface {
		TerminateEnd(context.Context, *driverapi.Op) error
	}
	ScaleStarter interface {
		ScaleStart(context.Context, *driverapi.Op) error
	}
	ScaleEnder interface {
		ScaleEnd(context.Context, *driverapi.Op) error
	}
	HealStarter interface {
		HealStart(context.Context, *driverapi.Op) error
	}
	HealEnder interface {
		HealEnd(context.Context, *driverapi.Op) error
	}
	ChangeExtConnStarter interface {
		ChangeExtConnStart(context.Context, *driverapi.Op) error
	}
	ChangeExtConnEnder interface {
		ChangeExtConnEnd(context.Context, *driverapi.Op) error
	}
	ModifyInformationStarter interface {
		ModifyInformationStart(context.Context, *driverapi.Op) error
	}
	ModifyInformationEnder interface {
		ModifyInformationEnd(context.Context, *driverapi.Op) error
	}
)

// RollbackHandler undoes what a hook did when the operation is rolled back
// (e.g. remove half-joined nodes after a failed scale_end). Optional.
type RollbackHandler interface {
	Rollback(ctx context.Context, hook string, op *driverapi.Op) error
}

// Request is an LCM request as a RequestValidator sees it.
type Request struct {
	Operation string // model.OpInstantiate, model.OpHeal
	// Instance is the VNF instance as stored: secret values are sealed.
	Instance *model.VnfInstance
	Flavour  *model.Flavour
	// Body is the typed request: *model.InstantiateVnfRequest or
	// *model.HealVnfRequest (additionalParams in the clear).
	Body any
}

// RequestValidator refuses requests a driver cannot carry out (bad
// parameters, VNFCs it cannot heal) when the API receives them, before an
// operation exists and anything changes; the API answers 422 with the
// error. Optional.
type RequestValidator interface {
	ValidateRequest(ctx context.Context, r Request) error
}

// HookFunc is a bound hook.
type HookFunc func(context.Context, *driverapi.Op) error

// Hook returns d's implementation of a Vnflcm hook, if it has one.
func Hook(d Driver, hook string) (HookFunc, bool) {
	switch hook {
	case model.HookInstantiateStart:
		if h, ok := d.(InstantiateStarter); ok {
			return h.InstantiateStart, true
		}
	case model.HookInstantiateEnd:
		if h, ok := d.(InstantiateEnder); ok {
			return h.InstantiateEnd, true
		}
	case model.HookTerminateStart:
		if h, ok := d.(TerminateStarter); ok {
			return h.TerminateStart, true
		}
	case model.HookTerminateEnd:
		if h, ok := d.(TerminateEnder); ok {
			return h.TerminateEnd, true
		}
	case model.HookScaleStart:
		if h, ok := d.(ScaleStarter); ok {
			return h.ScaleStart, true
		}
	case model.HookScaleEnd:
		if h, ok := d.(ScaleEnder); ok {
			return h.ScaleEnd, true
		}
	case model.HookHealStart:
		if h, ok := d.(HealStarter); ok {
			return h.HealStart, true
		}
	case model.HookHealEnd:
		if h, ok := d.(HealEnder); ok {
			return h.HealEnd, true
		}
	case model.HookChangeExtConnStart:
		if h, ok := d.(ChangeExtConnStarter); ok {
			return h.ChangeExtConnStart, true
		}
	case model.HookChangeExtConnEnd:
		if h, ok := d.(ChangeExtConnEnder); ok {
			return h.ChangeExtConnEnd, true
		}
	case model.HookModifyInformationStart:
		if h, ok := d.(ModifyInformationStarter); ok {
			return h.ModifyInformationStart, true
		}
	case model.HookModifyInformationEnd:
		if h, ok := d.(ModifyInformationEnder); ok {
			return h.ModifyInformationEnd, true
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
