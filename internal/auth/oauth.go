package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// OAuth 2.0 client credentials grant (RFC 6749 4.4, SOL013 8.3).
//
// Token design: access tokens are opaque — "vnfm_at_" and 32 random bytes,
// base64url — and the database keeps their SHA-256 with the client, the
// granted scopes and the expiry (the database clock). Compared with a JWT
// signed by a server key: every replica on the database accepts a token
// without sharing or rotating a signing key; deleting a client revokes its
// tokens at once (ON DELETE CASCADE) instead of when they expire; a leaked
// database row is useless (SHA-256 of 256 random bits cannot be inverted,
// so no slow hash is needed). The price is one primary-key lookup per
// request, which the API already pays many times over.
//
// Client secrets are generated here (32 random bytes) and stored as SHA-256
// for the same reason: they have full entropy, unlike passwords.

// TokenRequest is a parsed request to the token endpoint.
type TokenRequest struct {
	GrantType    string
	ClientID     string
	ClientSecret string
	// Scope is the space-separated "scope" parameter (empty: all the client's scopes).
	Scope string
	// Addr is the client address (ClientAddr), for rate limiting.
	Addr string
}

// TokenResponse is the RFC 6749 5.1 answer.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// OAuthError is an RFC 6749 5.2 error.
type OAuthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	// RetryAfter is set with status 429.
	RetryAfter time.Duration `json:"-"`
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// ClientAuth reads client credentials from the Authorization header and the
// form: exactly one of the two methods may be used (RFC 6749 2.3).
func ClientAuth(authorization, formID, formSecret string) (id, secret string, oe *OAuthError) {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	switch {
	case authorization != "" && !strings.EqualFold(scheme, "Basic"):
		return "", "", &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client",
			Description: "authenticate the client with HTTP Basic (client_id:client_secret) or the form parameters client_id and client_secret"}
	case authorization != "" && (formID != "" || formSecret != ""):
		if formSecret != "" {
			return "", "", &OAuthError{Status: http.StatusBadRequest, Code: "invalid_request",
				Description: "the client authenticated twice (Authorization header and client_secret); use one method"}
		}
		fallthrough
	case authorization != "":
		id, secret, ok := basicClientCredentials(strings.TrimSpace(cred))
		if !ok {
			return "", "", &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "the Basic credentials are not base64 of client_id:client_secret"}
		}
		if formID != "" && formID != id {
			return "", "", &OAuthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: "client_id differs from the client in the Authorization header"}
		}
		return id, secret, nil
	case formID == "" || formSecret == "":
		return "", "", &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client",
			Description: "client authentication is missing: send HTTP Basic client_id:client_secret, or the form parameters client_id and client_secret"}
	}
	return formID, formSecret, nil
}

// IssueToken runs the client credentials grant.
func (a *Authenticator) IssueToken(ctx context.Context, req TokenRequest) (*TokenResponse, *OAuthError) {
	if a.store == nil {
		return nil, &OAuthError{Status: http.StatusBadRequest, Code: "unsupported_grant_type", Description: "this VNFM issues no access tokens"}
	}
	if blocked, wait := a.limiter.blocked(req.Addr); blocked {
		secs := int(wait.Seconds()) + 1
		return nil, &OAuthError{Status: http.StatusTooManyRequests, Code: "invalid_request", RetryAfter: time.Duration(secs) * time.Second,
			Description: fmt.Sprintf("too many failed client authentications from %s; retry in %d s", req.Addr, secs)}
	}
	switch req.GrantType {
	case "client_credentials":
	case "":
		return nil, &OAuthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: "grant_type is missing; send grant_type=client_credentials"}
	default:
		return nil, &OAuthError{Status: http.StatusBadRequest, Code: "unsupported_grant_type", Description: "only grant_type=client_credentials is supported"}
	}
	c, err := a.store.GetAuthClient(ctx, req.ClientID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.ErrorContext(ctx, "reading an OAuth client", "err", err)
		return nil, &OAuthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable", Description: "the client cannot be checked now (database unavailable); retry later"}
	}
	// Compare against a dummy hash for an unknown client: same work either way.
	want := make([]byte, 32)
	if c != nil {
		want = c.SecretSHA256
	}
	got := sha(req.ClientSecret)
	if subtle.ConstantTimeCompare(got[:], want) != 1 || c == nil {
		a.limiter.fail(req.Addr)
		known := "(unknown)" // an unknown "client id" may be a misplaced secret: not logged
		if c != nil {
			known = c.ID
		}
		a.log.InfoContext(ctx, "OAuth client authentication failed", "addr", req.Addr, "clientId", known)
		return nil, &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "unknown client or wrong client secret"}
	}
	have := Scopes{}
	for _, s := range c.Scopes {
		have[s] = true
	}
	granted := have
	if strings.TrimSpace(req.Scope) != "" {
		want, err := ParseScopes(req.Scope)
		if err != nil {
			return nil, &OAuthError{Status: http.StatusBadRequest, Code: "invalid_scope", Description: err.Error()}
		}
		for s := range want {
			if !have.Has(s) {
				return nil, &OAuthError{Status: http.StatusBadRequest, Code: "invalid_scope",
					Description: fmt.Sprintf("client %s may not have scope %s (its scopes: %s)", c.ID, s, have)}
			}
		}
		granted = want
	}
	tok := AccessTokenPrefix + randomString()
	sum := sha(tok)
	t, err := a.store.CreateAuthToken(ctx, sum[:], c.ID, granted.List(), a.ttl)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &OAuthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "the client was deleted"}
	}
	if err != nil {
		a.log.ErrorContext(ctx, "storing an access token", "err", err)
		return nil, &OAuthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable", Description: "no token can be issued now (database unavailable); retry later"}
	}
	a.log.InfoContext(ctx, "access token issued", "clientId", c.ID, "scopes", granted.String(), "expiresAt", t.ExpiresAt)
	return &TokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int64(t.ExpiresAt.Sub(t.IssuedAt).Seconds()), Scope: granted.String()}, nil
}

// randomString is 32 random bytes, base64url without padding.
func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ClientAdmin is the persistence client registration needs.
type ClientAdmin interface {
	CreateAuthClient(ctx context.Context, c *store.AuthClient) error
	ListAuthClients(ctx context.Context) ([]store.AuthClient, error)
	DeleteAuthClient(ctx context.Context, id string) error
}

var clientIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// RegisterClient creates an OAuth 2.0 client and returns its secret, which
// is shown this once: only its hash is kept.
func RegisterClient(ctx context.Context, st ClientAdmin, id, scopes, description string) (secret string, err error) {
	if !clientIDRe.MatchString(id) {
		return "", fmt.Errorf("client id %q: use 1 to 64 letters, digits, '.', '_' or '-'", id)
	}
	sc, err := ParseScopes(scopes)
	if err != nil {
		return "", err
	}
	secret = randomString()
	sum := sha(secret)
	if err := st.CreateAuthClient(ctx, &store.AuthClient{ID: id, SecretSHA256: sum[:], Scopes: sc.List(), Description: description}); err != nil {
		if errors.Is(err, store.ErrAuthClientExists) {
			return "", fmt.Errorf("client %s exists; delete it first (vnfm auth client delete %s) to issue a new secret", id, id)
		}
		return "", err
	}
	return secret, nil
}
