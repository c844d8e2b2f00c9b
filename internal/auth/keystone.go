package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// keystone validates tokens with Keystone v3 as Tacker deployments do:
// GET /v3/auth/tokens with the token as both X-Auth-Token and
// X-Subject-Token (Keystone's default policy lets a token validate itself, so
// no service account is needed). Roles map to scopes; results are cached
// briefly by the token's SHA-256.
type keystone struct {
	base     string // without /v3
	roles    map[string]Scopes
	projects []string // accepted project names or ids; nil with anyProject
	anyProj  bool
	cacheTTL time.Duration
	client   *http.Client

	mu    sync.Mutex
	cache map[[32]byte]ksEntry
	now   func() time.Time
}

type ksEntry struct {
	p     *Principal
	err   *Error
	until time.Time
}

// negativeTTL bounds how long a rejected token stays rejected in the cache.
const negativeTTL = 5 * time.Second

func newKeystone(s Settings, client *http.Client) (*keystone, error) {
	u, err := url.Parse(s.KeystoneURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("VNFM_AUTH_KEYSTONE_URL %q: want http(s)://host:port[/v3]", s.KeystoneURL)
	}
	if err := s.CheckKeystone(); err != nil {
		return nil, err
	}
	roles, err := s.keystoneRoles()
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	base := strings.TrimSuffix(strings.TrimRight(s.KeystoneURL, "/"), "/v3")
	return &keystone{base: base, roles: roles, projects: s.keystoneProjects(), anyProj: s.KeystoneAnyProject, cacheTTL: s.KeystoneCacheTTL,
		client: client, cache: map[[32]byte]ksEntry{}, now: time.Now}, nil
}

func (k *keystone) validate(ctx context.Context, token string, sum [32]byte) (*Principal, *Error) {
	now := k.now()
	k.mu.Lock()
	e, ok := k.cache[sum]
	k.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.p, e.err
	}
	p, err, until := k.fetch(ctx, token, now)
	if err == nil || err.Status == http.StatusUnauthorized {
		k.mu.Lock()
		if len(k.cache) > 10_000 {
			for key, old := range k.cache {
				if !now.Before(old.until) {
					delete(k.cache, key)
				}
			}
			if len(k.cache) > 10_000 {
				clear(k.cache)
			}
		}
		k.cache[sum] = ksEntry{p: p, err: err, until: until}
		k.mu.Unlock()
	}
	return p, err
}

type ksToken struct {
	Token struct {
		ExpiresAt time.Time `json:"expires_at"`
		User      struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Domain struct {
				Name string `json:"name"`
			} `json:"domain"`
		} `json:"user"`
		Project *ksProject `json:"project"`
		Roles   []struct {
			Name string `json:"name"`
		} `json:"roles"`
	} `json:"token"`
}

type ksProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// projectAllowed: the token is scoped to one of the configured projects.
func (k *keystone) projectAllowed(p *ksProject) bool {
	if p == nil {
		return false
	}
	for _, want := range k.projects {
		if (p.ID != "" && p.ID == want) || (p.Name != "" && p.Name == want) {
			return true
		}
	}
	return false
}

// fetch asks Keystone; a 401 result is cacheable until the returned time.
func (k *keystone) fetch(ctx context.Context, token string, now time.Time) (*Principal, *Error, time.Time) {
	unavailable := func(why string) (*Principal, *Error, time.Time) {
		return nil, &Error{Status: http.StatusServiceUnavailable, Detail: "the token cannot be validated now: Keystone " + why + "; retry later"}, now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.base+"/v3/auth/tokens", nil)
	if err != nil {
		return unavailable("URL is not valid")
	}
	req.Header.Set("X-Auth-Token", token)
	req.Header.Set("X-Subject-Token", token)
	req.Header.Set("Accept", "application/json")
	res, err := k.client.Do(req)
	if err != nil {
		return unavailable("at " + k.base + " does not answer")
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusNotFound:
		return nil, invalidToken("Keystone does not accept the token (unknown or expired)"), now.Add(min(negativeTTL, k.cacheTTL))
	case res.StatusCode != http.StatusOK:
		return unavailable(fmt.Sprintf("answered %d", res.StatusCode))
	}
	var t ksToken
	if err := json.Unmarshal(body, &t); err != nil || t.Token.ExpiresAt.IsZero() {
		return unavailable("sent a token body that cannot be read")
	}
	if !now.Before(t.Token.ExpiresAt) {
		return nil, invalidToken("the Keystone token has expired"), now.Add(min(negativeTTL, k.cacheTTL))
	}
	if !k.anyProj && !k.projectAllowed(t.Token.Project) {
		return nil, invalidToken("the Keystone token is not scoped to an accepted project (" + strings.Join(k.projects, ", ") + ")"), now.Add(min(negativeTTL, k.cacheTTL))
	}
	scopes := Scopes{}
	for _, r := range t.Token.Roles {
		for s := range k.roles[strings.ToLower(r.Name)] {
			scopes[s] = true
		}
	}
	name := t.Token.User.Name
	if name == "" {
		name = t.Token.User.ID
	}
	until := now.Add(k.cacheTTL)
	if t.Token.ExpiresAt.Before(until) {
		until = t.Token.ExpiresAt
	}
	return &Principal{Name: "keystone:" + name, Method: MethodKeystone, Scopes: scopes}, nil, until
}
