package auth

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

// Settings is the authentication part of the server configuration
// (internal/config embeds it; README "Authentication" documents it).
type Settings struct {
	// Mode is on, off, or empty: off when the listen address is loopback, on otherwise.
	Mode string `env:"VNFM_AUTH"`
	// Tokens are static bearer tokens, "token:scope,scope" separated by
	// whitespace or ';'; TokensFile holds more, one a line ('#' comments).
	Tokens     string `env:"VNFM_AUTH_TOKENS"`
	TokensFile string `env:"VNFM_AUTH_TOKENS_FILE"`
	// BasicUsers are HTTP Basic users, "user:<hash>:scope,scope" (hash from
	// `vnfm auth hash-password`), separated like Tokens; BasicUsersFile holds more.
	BasicUsers     string `env:"VNFM_AUTH_BASIC_USERS"`
	BasicUsersFile string `env:"VNFM_AUTH_BASIC_USERS_FILE"`
	// TokenTTL is the lifetime of OAuth 2.0 access tokens from /oauth2/token.
	TokenTTL time.Duration `env:"VNFM_AUTH_TOKEN_TTL" envDefault:"30m"`
	// MetricsOpen serves /metrics without credentials (scope metrics:read otherwise).
	MetricsOpen bool `env:"VNFM_AUTH_METRICS_OPEN" envDefault:"false"`
	// MaxFailures is the number of failed authentications per minute allowed
	// from one client address (a burst of as many); beyond it 429. 0: no limit.
	MaxFailures int `env:"VNFM_AUTH_MAX_FAILURES" envDefault:"30"`
	// Realm names the protection space in WWW-Authenticate.
	Realm string `env:"VNFM_AUTH_REALM" envDefault:"mini-vnfm"`
	// KeystoneURL, if set, validates other X-Auth-Token values with Keystone
	// (GET /v3/auth/tokens). Keystone mode must then say which tokens it
	// accepts: KeystoneProject lists the projects (names or ids, comma
	// separated) whose tokens are accepted, or KeystoneAnyProject accepts
	// every project explicitly; KeystoneRoles maps roles to scopes and has
	// no default (which Keystone roles may write is the operator's call).
	KeystoneURL        string        `env:"VNFM_AUTH_KEYSTONE_URL"`
	KeystoneRoles      string        `env:"VNFM_AUTH_KEYSTONE_ROLES"`
	KeystoneProject    string        `env:"VNFM_AUTH_KEYSTONE_PROJECT"`
	KeystoneAnyProject bool          `env:"VNFM_AUTH_KEYSTONE_ANY_PROJECT" envDefault:"false"`
	KeystoneCacheTTL   time.Duration `env:"VNFM_AUTH_KEYSTONE_CACHE_TTL" envDefault:"60s"`
}

// CheckKeystone refuses a half-configured Keystone mode, so that the
// server does not start accepting more (any project's tokens, default role
// mappings) than the operator meant: with VNFM_AUTH_KEYSTONE_URL, the
// projects (or VNFM_AUTH_KEYSTONE_ANY_PROJECT=true) and the role mapping
// are required; without it, the other Keystone settings mean nothing and
// are refused too.
func (s Settings) CheckKeystone() error {
	projects := s.keystoneProjects()
	if s.KeystoneURL == "" {
		var set []string
		if s.KeystoneRoles != "" {
			set = append(set, "VNFM_AUTH_KEYSTONE_ROLES")
		}
		if len(projects) > 0 {
			set = append(set, "VNFM_AUTH_KEYSTONE_PROJECT")
		}
		if s.KeystoneAnyProject {
			set = append(set, "VNFM_AUTH_KEYSTONE_ANY_PROJECT")
		}
		if len(set) > 0 {
			return fmt.Errorf("%s set without VNFM_AUTH_KEYSTONE_URL: give the Keystone URL (http://keystone:5000/v3) or unset them", strings.Join(set, ", "))
		}
		return nil
	}
	switch {
	case len(projects) == 0 && !s.KeystoneAnyProject:
		return errors.New("VNFM_AUTH_KEYSTONE_URL is set but no project is: list the projects whose tokens are accepted in VNFM_AUTH_KEYSTONE_PROJECT " +
			"(ids or names, comma separated), or set VNFM_AUTH_KEYSTONE_ANY_PROJECT=true to accept tokens of every project")
	case len(projects) > 0 && s.KeystoneAnyProject:
		return errors.New("VNFM_AUTH_KEYSTONE_PROJECT and VNFM_AUTH_KEYSTONE_ANY_PROJECT=true contradict each other: set one of them")
	case strings.TrimSpace(s.KeystoneRoles) == "":
		return errors.New("VNFM_AUTH_KEYSTONE_URL is set but VNFM_AUTH_KEYSTONE_ROLES is not: map Keystone roles to scopes, " +
			"e.g. admin=*;member=vnflcm:read,vnfpkgm:read (roles not listed get no scope)")
	}
	_, err := s.keystoneRoles()
	return err
}

// keystoneProjects lists VNFM_AUTH_KEYSTONE_PROJECT's projects.
func (s Settings) keystoneProjects() []string {
	var out []string
	for _, p := range strings.FieldsFunc(s.KeystoneProject, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		out = append(out, p)
	}
	return out
}

// Enabled resolves Mode against the listen address.
func (s Settings) Enabled(listen string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s.Mode)) {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	case "":
		return !IsLoopback(listen), nil
	}
	return false, fmt.Errorf("VNFM_AUTH=%q: say on or off (unset: off on a loopback VNFM_LISTEN, on otherwise)", s.Mode)
}

// IsLoopback reports whether a listen address (host:port) accepts only local
// connections. An empty host (":9890") or 0.0.0.0 listens everywhere.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// staticToken is one configured bearer token.
type staticToken struct {
	name   string
	sum    [32]byte // SHA-256 of the token: compared in constant time
	scopes Scopes
}

// basicUser is one configured Basic user.
type basicUser struct {
	name   string
	hash   *passwordHash
	scopes Scopes
}

// entries splits an inline list (whitespace or ';') or a file (lines; '#'
// starts a comment) into entries, each tagged with where it came from.
func entries(inline, envName, file, fileEnv string) ([][2]string, error) {
	var out [][2]string
	for i, e := range strings.FieldsFunc(inline, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		out = append(out, [2]string{e, fmt.Sprintf("%s entry %d", envName, i+1)})
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileEnv, err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			out = append(out, [2]string{line, fmt.Sprintf("%s line %d", file, i+1)})
		}
	}
	return out, nil
}

// MinTokenLength bounds static tokens from below: they are passwords.
const MinTokenLength = 16

func (s Settings) staticTokens() ([]staticToken, error) {
	es, err := entries(s.Tokens, "VNFM_AUTH_TOKENS", s.TokensFile, "VNFM_AUTH_TOKENS_FILE")
	if err != nil {
		return nil, err
	}
	var out []staticToken
	seen := map[[32]byte]bool{}
	for i, e := range es {
		// The error messages name the entry, never its token.
		tok, sc, ok := strings.Cut(e[0], ":")
		if !ok {
			return nil, fmt.Errorf("%s: want token:scope,scope (scopes: %s)", e[1], strings.Join(KnownScopes, ", "))
		}
		if len(tok) < MinTokenLength {
			return nil, fmt.Errorf("%s: the token is shorter than %d characters (make one with: head -c24 /dev/urandom | base64)", e[1], MinTokenLength)
		}
		scopes, err := ParseScopes(sc)
		if err != nil {
			// Not %w: a misplaced token could sit in the scope list.
			return nil, fmt.Errorf("%s: the scope list is not valid: scopes are %s, separated by commas", e[1], strings.Join(KnownScopes, ", "))
		}
		t := staticToken{name: fmt.Sprintf("static-token-%d", i+1), sum: sha(tok), scopes: scopes}
		if seen[t.sum] {
			return nil, fmt.Errorf("%s: the same token is configured twice", e[1])
		}
		seen[t.sum] = true
		out = append(out, t)
	}
	return out, nil
}

func (s Settings) basicUsers() ([]basicUser, error) {
	es, err := entries(s.BasicUsers, "VNFM_AUTH_BASIC_USERS", s.BasicUsersFile, "VNFM_AUTH_BASIC_USERS_FILE")
	if err != nil {
		return nil, err
	}
	var out []basicUser
	seen := map[string]bool{}
	for _, e := range es {
		user, rest, ok1 := strings.Cut(e[0], ":")
		hash, sc, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || user == "" {
			return nil, fmt.Errorf("%s: want user:<hash>:scope,scope (hash from: vnfm auth hash-password)", e[1])
		}
		h, err := parsePasswordHash(hash)
		if err != nil {
			return nil, fmt.Errorf("%s (user %s): %w", e[1], user, err)
		}
		scopes, err := ParseScopes(sc)
		if err != nil {
			return nil, fmt.Errorf("%s (user %s): %w", e[1], user, err)
		}
		if seen[user] {
			return nil, fmt.Errorf("%s: user %s is configured twice", e[1], user)
		}
		seen[user] = true
		out = append(out, basicUser{name: user, hash: h, scopes: scopes})
	}
	return out, nil
}

// keystoneRoles parses "role=scope,scope;role=scope".
func (s Settings) keystoneRoles() (map[string]Scopes, error) {
	out := map[string]Scopes{}
	for _, e := range strings.FieldsFunc(s.KeystoneRoles, func(r rune) bool { return r == ';' || r == ' ' || r == '\n' }) {
		role, sc, ok := strings.Cut(e, "=")
		if !ok || role == "" {
			return nil, fmt.Errorf("VNFM_AUTH_KEYSTONE_ROLES: %q: want role=scope,scope", e)
		}
		scopes, err := ParseScopes(sc)
		if err != nil {
			return nil, fmt.Errorf("VNFM_AUTH_KEYSTONE_ROLES: role %s: %w", role, err)
		}
		out[strings.ToLower(role)] = scopes
	}
	if len(out) == 0 {
		return nil, errors.New("VNFM_AUTH_KEYSTONE_ROLES maps no role to scopes (e.g. admin=*;reader=vnflcm:read)")
	}
	return out, nil
}
