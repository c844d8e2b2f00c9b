package kubernetes

import (
	"net/http"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
)

// oidcIdle is how long an ID token source is kept without being asked for:
// longer than any ID token lives, so a source dropped had nothing left to
// reuse.
const oidcIdle = time.Hour

// oidcSources keeps one ID token source per distinct set of OIDC credentials
// and drops the ones no connection asked for in oidcIdle, closing their
// idle connections to the provider: a VIM whose credentials changed, or that
// was deleted, leaves nothing behind. A source dropped while a connection
// still uses it keeps working for that connection.
type oidcSources struct {
	mu      sync.Mutex
	now     func() time.Time // time.Now; tests set it
	entries map[string]*oidcEntry
	swept   time.Time
}

type oidcEntry struct {
	src    *oidc.Source
	client *http.Client
	used   time.Time
}

// get returns the source kept under key, or the one newSource makes
// (kept when newSource succeeds).
func (c *oidcSources) get(key string, newSource func() (*oidc.Source, *http.Client, error)) (*oidc.Source, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	if now.Sub(c.swept) >= oidcIdle/4 {
		for k, e := range c.entries {
			if now.Sub(e.used) >= oidcIdle {
				delete(c.entries, k)
				e.client.CloseIdleConnections()
			}
		}
		c.swept = now
	}
	if e, ok := c.entries[key]; ok {
		e.used = now
		return e.src, nil
	}
	src, client, err := newSource()
	if err != nil {
		return nil, err
	}
	if c.entries == nil {
		c.entries = map[string]*oidcEntry{}
	}
	c.entries[key] = &oidcEntry{src: src, client: client, used: now}
	return src, nil
}

// len is the number of sources kept.
func (c *oidcSources) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
