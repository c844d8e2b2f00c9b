package auth

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// Scopes, one read and one write scope per API family. A write scope implies
// the read scope of its family; Admin (alias "admin") grants everything.
const (
	VnflcmRead   = "vnflcm:read"
	VnflcmWrite  = "vnflcm:write"
	VnfpkgmRead  = "vnfpkgm:read"
	VnfpkgmWrite = "vnfpkgm:write"
	VimRead      = "vim:read"
	VimWrite     = "vim:write"
	// VimKubeconfig fetches a Kubernetes VIM's kubeconfig — its stored
	// credentials in the clear — and nothing else; vim:write does not imply
	// it (GET /v1.0/vims/{id}/kubeconfig).
	VimKubeconfig = "vim:kubeconfig"
	MetricsRead   = "metrics:read"
	Admin         = "*"
	adminAlias    = "admin"
)

// KnownScopes lists every scope a credential may carry.
var KnownScopes = []string{VnflcmRead, VnflcmWrite, VnfpkgmRead, VnfpkgmWrite, VimRead, VimWrite, VimKubeconfig, MetricsRead, Admin, adminAlias}

// implied maps a scope to the scopes it also grants.
var implied = map[string][]string{
	VnflcmWrite:  {VnflcmRead},
	VnfpkgmWrite: {VnfpkgmRead},
	VimWrite:     {VimRead},
}

// Scopes is a set of granted scopes.
type Scopes map[string]bool

// ParseScopes reads a list of scopes separated by commas or spaces and
// rejects unknown ones (a typo must not silently grant nothing).
func ParseScopes(s string) (Scopes, error) {
	out := Scopes{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if !slices.Contains(KnownScopes, f) {
			return nil, fmt.Errorf("unknown scope %q (known: %s)", f, strings.Join(KnownScopes, ", "))
		}
		if f == adminAlias {
			f = Admin
		}
		out[f] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scope given (known: %s)", strings.Join(KnownScopes, ", "))
	}
	return out, nil
}

// Has reports whether the set grants scope.
func (s Scopes) Has(scope string) bool {
	if s[Admin] || s[scope] {
		return true
	}
	for have, imp := range implied {
		if s[have] && slices.Contains(imp, scope) {
			return true
		}
	}
	return false
}

// List returns the scopes sorted.
func (s Scopes) List() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String renders the set space separated (the OAuth 2.0 "scope" format).
func (s Scopes) String() string { return strings.Join(s.List(), " ") }

// Requirement is what a request needs: nothing (Open), or a scope.
type Requirement struct {
	Open  bool
	Scope string
}

// Policy decides what a request needs from its method and (cleaned) path.
// It fails closed: a path outside every known API family needs Admin, so an
// API added later is never reachable with a narrower scope by accident.
type Policy struct {
	// MetricsOpen serves /metrics without credentials.
	MetricsOpen bool
}

// families maps path prefixes to their read and write scopes. A prefix
// matches the path itself, or the path continued by '/' or '.' (the legacy
// Tacker client requests /v1.0/vims.json).
var families = []struct{ prefix, read, write string }{
	{"/vnflcm", VnflcmRead, VnflcmWrite},
	{"/vnfpkgm", VnfpkgmRead, VnfpkgmWrite},
	{"/v1.0/vims", VimRead, VimWrite},
}

// Require returns what a request with this method and path needs.
func (p Policy) Require(method, path string) Requirement {
	switch path {
	case "/healthz", "/readyz", TokenPath:
		return Requirement{Open: true}
	case "/metrics":
		if p.MetricsOpen {
			return Requirement{Open: true}
		}
		return Requirement{Scope: MetricsRead}
	}
	if IsKubeconfigPath(path) {
		return Requirement{Scope: VimKubeconfig}
	}
	read := method == http.MethodGet || method == http.MethodHead
	for _, f := range families {
		if rest, ok := strings.CutPrefix(path, f.prefix); ok && (rest == "" || rest[0] == '/' || rest[0] == '.') {
			if read {
				return Requirement{Scope: f.read}
			}
			return Requirement{Scope: f.write}
		}
	}
	return Requirement{Scope: Admin}
}

// IsKubeconfigPath reports whether path is a VIM's kubeconfig
// (/v1.0/vims/{id}/kubeconfig), which needs VimKubeconfig.
func IsKubeconfigPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1.0/vims/")
	id, tail, _ := strings.Cut(rest, "/")
	return ok && id != "" && strings.TrimSuffix(tail, "/") == "kubeconfig"
}

// TokenPath is the OAuth 2.0 token endpoint.
const TokenPath = "/oauth2/token"
