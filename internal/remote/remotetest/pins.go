package remotetest

import (
	"context"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Pins is an in-memory remote.PinStore with the semantics of the store's.
type Pins struct {
	mu sync.Mutex
	m  map[string][]remote.Pin
}

var _ remote.PinStore = (*Pins)(nil)

func pinKey(s, a string) string { return s + "|" + a }

// Get implements remote.PinStore.
func (p *Pins) Get(_ context.Context, s, a string) ([]remote.Pin, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]remote.Pin(nil), p.m[pinKey(s, a)]...), nil
}

// Put implements remote.PinStore.
func (p *Pins) Put(_ context.Context, s, a string, pin remote.Pin) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string][]remote.Pin{}
	}
	for _, have := range p.m[pinKey(s, a)] {
		if have.KeyType == pin.KeyType {
			if have.Fingerprint != pin.Fingerprint {
				return remote.ErrPinConflict
			}
			return nil
		}
	}
	p.m[pinKey(s, a)] = append(p.m[pinKey(s, a)], pin)
	return nil
}

// Replace implements remote.PinStore.
func (p *Pins) Replace(_ context.Context, s, a string, pins []remote.Pin) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string][]remote.Pin{}
	}
	if len(pins) == 0 {
		delete(p.m, pinKey(s, a))
	} else {
		p.m[pinKey(s, a)] = pins
	}
	return nil
}

// Len is the number of pinned keys.
func (p *Pins) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.m {
		n += len(l)
	}
	return n
}
