// Package auth authenticates API requests and decides what they may do.
//
// Credentials, tried in this order:
//   - static bearer tokens (VNFM_AUTH_TOKENS), as "Authorization: Bearer T" or
//     "X-Auth-Token: T" (the Tacker CLI's --os-auth-type admin_token);
//   - HTTP Basic users (VNFM_AUTH_BASIC_USERS) with PBKDF2 password hashes
//     (the Tacker CLI's --os-auth-type http_basic);
//   - OAuth 2.0 access tokens from the client credentials grant (SOL013
//     8.3; POST /oauth2/token): opaque random tokens whose SHA-256 is stored
//     in PostgreSQL, so every replica on the database accepts them and
//     deleting a client revokes them at once;
//   - optionally Keystone tokens, validated with GET /v3/auth/tokens.
//
// Every credential carries scopes (scopes.go); Policy says which scope a
// request needs. Comparisons of secrets are constant time, no credential is
// logged or echoed, and failed attempts are rate limited per client address.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Store is the persistence OAuth 2.0 needs (internal/store implements it).
type Store interface {
	GetAuthClient(ctx context.Context, id string) (*store.AuthClient, error)
	CreateAuthToken(ctx context.Context, sum []byte, clientID string, scopes []string, ttl time.Duration) (*store.AuthToken, error)
	GetAuthToken(ctx context.Context, sum []byte) (*store.AuthToken, error)
}

// Options are the parts of an Authenticator that are not configuration.
type Options struct {
	// Listen decides the default mode (off on loopback).
	Listen string
	// Store keeps OAuth clients and tokens (nil: no OAuth 2.0).
	Store  Store
	Logger *slog.Logger
	// HTTPClient talks to Keystone (default: 10 s timeout).
	HTTPClient *http.Client
}

// Principal is an authenticated caller.
type Principal struct {
	// Name identifies the caller in logs: a Basic user name, an OAuth client
	// id, a Keystone user, or static-token-N (never the token).
	Name string
	// Method is how it authenticated: token, basic, oauth2 or keystone.
	Method string
	Scopes Scopes
}

// Method names.
const (
	MethodToken    = "token"
	MethodBasic    = "basic"
	MethodOAuth2   = "oauth2"
	MethodKeystone = "keystone"
)

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the caller of a request (nil when auth is off).
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// Error is a failed authentication: 401 (BearerError set for a bad bearer
// token, RFC 6750), 429 (RetryAfter) or 503 (Keystone or database down).
type Error struct {
	Status      int
	Detail      string
	BearerError string
	RetryAfter  time.Duration
}

func (e *Error) Error() string { return e.Detail }

// AccessTokenPrefix starts every OAuth 2.0 access token (and tells them from
// static and Keystone tokens without a database round trip).
const AccessTokenPrefix = "vnfm_at_"

// verifiedTTL is how long a successful Basic check is remembered.
const verifiedTTL = 5 * time.Minute

// Authenticator checks credentials. A nil *Authenticator means auth is off.
type Authenticator struct {
	Policy   Policy
	realm    string
	tokens   []staticToken
	users    map[string]*basicUser
	dummy    *passwordHash // verified for unknown users: same time as a known one
	store    Store
	ttl      time.Duration
	limiter  *failureLimiter
	keystone *keystone
	log      *slog.Logger

	// hashing bounds concurrent PBKDF2 checks to the CPUs.
	hashing chan struct{}
	// verified remembers HMAC(macKey, user, password) of recent good Basic logins.
	macKey   []byte
	mu       sync.Mutex
	verified map[string]verifiedLogin
	now      func() time.Time
}

type verifiedLogin struct {
	mac   []byte
	until time.Time
}

// New builds the Authenticator, or returns nil when authentication is off.
func New(s Settings, o Options) (*Authenticator, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "auth")
	on, err := s.Enabled(o.Listen)
	if err != nil {
		return nil, err
	}
	if !on {
		if IsLoopback(o.Listen) {
			log.Info("authentication is off: the API answers anyone who can reach " + o.Listen + " (loopback); set VNFM_AUTH=on to require credentials")
		} else {
			log.Warn("authentication is OFF (VNFM_AUTH=off) although the API listens on " + o.Listen + ": anyone who can reach it can create clusters and read VIM credentials")
		}
		return nil, nil
	}
	a := &Authenticator{Policy: Policy{MetricsOpen: s.MetricsOpen}, realm: s.Realm, store: o.Store, ttl: s.TokenTTL,
		limiter: newFailureLimiter(s.MaxFailures), log: log, users: map[string]*basicUser{},
		hashing: make(chan struct{}, runtime.GOMAXPROCS(0)), macKey: make([]byte, 32), verified: map[string]verifiedLogin{}, now: time.Now}
	_, _ = rand.Read(a.macKey)
	if a.realm == "" || strings.ContainsAny(a.realm, `"\`) {
		return nil, fmt.Errorf("VNFM_AUTH_REALM %q: give a name without quotes or backslashes", s.Realm)
	}
	if a.ttl < time.Second {
		return nil, fmt.Errorf("VNFM_AUTH_TOKEN_TTL %s: must be at least 1s", s.TokenTTL)
	}
	if a.tokens, err = s.staticTokens(); err != nil {
		return nil, err
	}
	users, err := s.basicUsers()
	if err != nil {
		return nil, err
	}
	dummyIter := 0
	for i := range users {
		u := &users[i]
		a.users[u.name] = u
		dummyIter = max(dummyIter, u.hash.iter)
		if u.hash.iter < MinRecommendedIterations {
			log.Warn("weak password hash: re-hash it with vnfm auth hash-password", "user", u.name, "iterations", u.hash.iter)
		}
	}
	if dummyIter > 0 {
		salt := make([]byte, saltLen)
		_, _ = rand.Read(salt)
		a.dummy = &passwordHash{iter: dummyIter, salt: salt, key: make([]byte, keyLen)}
	}
	if err := s.CheckKeystone(); err != nil {
		return nil, err
	}
	if s.KeystoneURL != "" {
		if a.keystone, err = newKeystone(s, o.HTTPClient); err != nil {
			return nil, err
		}
	}
	methods := []string{}
	if len(a.tokens) > 0 {
		methods = append(methods, fmt.Sprintf("%d static tokens", len(a.tokens)))
	}
	if len(a.users) > 0 {
		methods = append(methods, fmt.Sprintf("%d Basic users", len(a.users)))
	}
	if a.store != nil {
		methods = append(methods, "OAuth 2.0 clients (vnfm auth client add)")
	}
	if a.keystone != nil {
		methods = append(methods, "Keystone tokens from "+a.keystone.base)
	}
	log.Info("authentication is on", "methods", strings.Join(methods, ", "), "metricsOpen", s.MetricsOpen)
	if len(a.tokens) == 0 && len(a.users) == 0 && a.keystone == nil {
		log.Warn("authentication is on but no static token, Basic user or Keystone is configured: only OAuth 2.0 clients registered with `vnfm auth client add` can call the API")
	}
	return a, nil
}

// BasicEnabled reports whether Basic users are configured.
func (a *Authenticator) BasicEnabled() bool { return len(a.users) > 0 }

// OAuthEnabled reports whether the token endpoint is served.
func (a *Authenticator) OAuthEnabled() bool { return a.store != nil }

// Realm is the protection space named in challenges.
func (a *Authenticator) Realm() string { return a.realm }

// Challenges returns the WWW-Authenticate values for a 401 (or, with
// bearerError "insufficient_scope" and scope, a 403; RFC 6750 3).
func (a *Authenticator) Challenges(bearerError, description, scope string) []string {
	b := fmt.Sprintf("Bearer realm=%q", a.realm)
	if bearerError != "" {
		b += fmt.Sprintf(", error=%q", bearerError)
	}
	if description != "" {
		b += fmt.Sprintf(", error_description=%q", strings.ReplaceAll(description, `"`, "'"))
	}
	if scope != "" {
		b += fmt.Sprintf(", scope=%q", scope)
	}
	out := []string{b}
	if a.BasicEnabled() && bearerError != "insufficient_scope" {
		out = append(out, fmt.Sprintf("Basic realm=%q, charset=\"UTF-8\"", a.realm))
	}
	return out
}

// ClientAddr is the rate-limiting key of a request: the peer's IP address.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func sha(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// Authenticate checks the credentials of a request: the Authorization header
// (Bearer or Basic) or, without one, X-Auth-Token. addr is ClientAddr.
func (a *Authenticator) Authenticate(ctx context.Context, authorization, xAuthToken, addr string) (*Principal, *Error) {
	if authorization == "" && xAuthToken == "" {
		return nil, &Error{Status: http.StatusUnauthorized, Detail: a.missingDetail()}
	}
	if blocked, wait := a.limiter.blocked(addr); blocked {
		secs := int(wait.Seconds()) + 1
		return nil, &Error{Status: http.StatusTooManyRequests, RetryAfter: time.Duration(secs) * time.Second,
			Detail: fmt.Sprintf("too many failed authentications from %s; retry in %d s with valid credentials", addr, secs)}
	}
	var (
		p   *Principal
		err *Error
	)
	scheme, cred, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	cred = strings.TrimSpace(cred)
	switch {
	case authorization == "":
		p, err = a.bearer(ctx, strings.TrimSpace(xAuthToken), "X-Auth-Token")
	case strings.EqualFold(scheme, "Bearer"):
		p, err = a.bearer(ctx, cred, "bearer token")
	case strings.EqualFold(scheme, "Basic"):
		p, err = a.basic(ctx, cred)
	default:
		// The "scheme" may be a bare token: never echo it.
		err = &Error{Status: http.StatusUnauthorized, BearerError: "invalid_request",
			Detail: "the Authorization header must be \"Bearer <token>\" or \"Basic <base64 user:password>\""}
	}
	if err != nil {
		if err.Status == http.StatusUnauthorized {
			a.limiter.fail(addr)
			a.log.InfoContext(ctx, "authentication failed", "addr", addr, "reason", err.Detail)
		}
		return nil, err
	}
	return p, nil
}

func (a *Authenticator) missingDetail() string {
	ways := []string{"Authorization: Bearer <token>", "X-Auth-Token: <token> (openstack --os-auth-type admin_token --os-token <token>)"}
	if a.BasicEnabled() {
		ways = append(ways, "Authorization: Basic (openstack --os-auth-type http_basic --os-username .. --os-password ..)")
	}
	d := "this API requires credentials: send " + strings.Join(ways, ", or ")
	if a.OAuthEnabled() {
		d += "; OAuth 2.0 clients get a token from POST " + TokenPath + " (grant_type=client_credentials)"
	}
	return d
}

func invalidToken(detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, BearerError: "invalid_token", Detail: detail}
}

// bearer checks a token from Authorization: Bearer or X-Auth-Token.
func (a *Authenticator) bearer(ctx context.Context, token, what string) (*Principal, *Error) {
	if token == "" {
		return nil, invalidToken("the " + what + " is empty")
	}
	sum := sha(token)
	// Compare against every static token, without an early exit.
	match := -1
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 {
			match = i
		}
	}
	if match >= 0 {
		t := a.tokens[match]
		return &Principal{Name: t.name, Method: MethodToken, Scopes: t.scopes}, nil
	}
	if strings.HasPrefix(token, AccessTokenPrefix) && a.store != nil {
		t, err := a.store.GetAuthToken(ctx, sum[:])
		if errors.Is(err, store.ErrNotFound) {
			return nil, invalidToken("the access token is unknown, expired or revoked; get a new one from POST " + TokenPath)
		}
		if err != nil {
			a.log.ErrorContext(ctx, "checking an access token", "err", err)
			return nil, &Error{Status: http.StatusServiceUnavailable, Detail: "the access token cannot be checked now (database unavailable); retry later"}
		}
		scopes := Scopes{}
		for _, s := range t.Scopes {
			scopes[s] = true
		}
		return &Principal{Name: t.ClientID, Method: MethodOAuth2, Scopes: scopes}, nil
	}
	if token == "notused" {
		return nil, invalidToken("X-Auth-Token \"notused\" is what the Tacker CLI sends with --os-auth-type none, but this VNFM requires credentials: use --os-auth-type admin_token --os-token <token> or --os-auth-type http_basic")
	}
	if a.keystone != nil && !strings.HasPrefix(token, AccessTokenPrefix) {
		return a.keystone.validate(ctx, token, sum)
	}
	return nil, invalidToken("the " + what + " is not valid")
}

// ParseBasic decodes the credentials of "Authorization: Basic <cred>".
func ParseBasic(cred string) (user, password string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}

// basic checks a Basic user in constant time: an unknown user costs the
// same PBKDF2 check as a wrong password.
func (a *Authenticator) basic(ctx context.Context, cred string) (*Principal, *Error) {
	bad := &Error{Status: http.StatusUnauthorized, Detail: "the Basic user name or password is wrong"}
	user, password, ok := ParseBasic(cred)
	if !ok {
		return nil, &Error{Status: http.StatusUnauthorized, Detail: "the Basic credentials are not base64 of user:password"}
	}
	u := a.users[user]
	if u == nil && a.dummy == nil {
		return nil, bad // no Basic users at all: nothing to time
	}
	mac := hmac.New(sha256.New, a.macKey)
	mac.Write([]byte(user))
	mac.Write([]byte{0})
	mac.Write([]byte(password))
	sum := mac.Sum(nil)
	if u != nil && a.recentlyVerified(user, sum) {
		return &Principal{Name: u.name, Method: MethodBasic, Scopes: u.scopes}, nil
	}
	select {
	case a.hashing <- struct{}{}:
	case <-ctx.Done():
		return nil, bad
	}
	var good bool
	if u != nil {
		good = u.hash.verify(password)
	} else {
		a.dummy.verify(password)
	}
	<-a.hashing
	if !good {
		return nil, bad
	}
	a.mu.Lock()
	if len(a.verified) > 10_000 {
		clear(a.verified)
	}
	a.verified[user] = verifiedLogin{mac: sum, until: a.now().Add(verifiedTTL)}
	a.mu.Unlock()
	return &Principal{Name: u.name, Method: MethodBasic, Scopes: u.scopes}, nil
}

func (a *Authenticator) recentlyVerified(user string, mac []byte) bool {
	a.mu.Lock()
	v, ok := a.verified[user]
	a.mu.Unlock()
	return ok && a.now().Before(v.until) && hmac.Equal(v.mac, mac)
}

// basicClientCredentials decodes client credentials sent with Basic: RFC
// 6749 2.3.1 form-encodes the id and secret before base64.
func basicClientCredentials(cred string) (id, secret string, ok bool) {
	id, secret, ok = ParseBasic(cred)
	if !ok {
		return "", "", false
	}
	if v, err := url.QueryUnescape(id); err == nil {
		id = v
	}
	if v, err := url.QueryUnescape(secret); err == nil {
		secret = v
	}
	return id, secret, true
}
