// Package oidctest is an OpenID provider for tests, on 127.0.0.1 over
// HTTPS: discovery, a JWKS, and a token endpoint serving the resource owner
// password grant to its users (and the refresh_token grant of the refresh
// tokens it hands out with them) with RS256-signed ID tokens — what a
// kube-apiserver started with --oidc-issuer-url verifies, and what a Tacker
// OIDC Kubernetes VIM's oidc_token_url names.
package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Provider is a running OpenID provider.
type Provider struct {
	// URL is the issuer (https://127.0.0.1:<port>), the iss of its tokens.
	URL string
	// CAPEM is the certificate its TLS is verified with (self-signed).
	CAPEM []byte
	// ClientID is the aud of its tokens; ClientSecret, when not empty,
	// must come with every grant.
	ClientID, ClientSecret string

	srv *httptest.Server
	key *rsa.PrivateKey

	mu        sync.Mutex
	users     map[string]string // name → password
	lifetime  time.Duration
	issued    map[string]string // token → user
	refresh   map[string]string // refresh token → user
	refreshed int
}

// KeyID is the kid of the provider's one signing key.
const KeyID = "oidctest-1"

// Start starts a provider issuing tokens for clientID.
func Start(clientID, clientSecret string) (*Provider, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, key: key, users: map[string]string{},
		lifetime: time.Hour, issued: map[string]string{}, refresh: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewTLSServer(mux) // 127.0.0.1, a certificate for 127.0.0.1 signed by itself
	p.URL = p.srv.URL
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	return p, nil
}

// TokenURL is the token endpoint.
func (p *Provider) TokenURL() string { return p.URL + "/token" }

// AddUser lets name log in with password.
func (p *Provider) AddUser(name, password string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[name] = password
}

// SetLifetime sets how long the tokens issued from now on are valid.
func (p *Provider) SetLifetime(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lifetime = d
}

// Issued is how many tokens the provider has issued.
func (p *Provider) Issued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.issued)
}

// Refreshed is how many tokens the provider has issued by the
// refresh_token grant.
func (p *Provider) Refreshed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshed
}

// Holder is the user the provider issued tok to ("", false: not one of its
// tokens; its expiry is not checked).
func (p *Provider) Holder(tok string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.issued[tok]
	return u, ok
}

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": p.URL, "jwks_uri": p.URL + "/keys", "token_endpoint": p.TokenURL(),
		"authorization_endpoint": p.URL + "/auth", "response_types_supported": []string{"id_token"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		"grant_types_supported": []string{"password", "refresh_token"}})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (p *Provider) keys(w http.ResponseWriter, _ *http.Request) {
	pub := p.key.PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KeyID,
		"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}}})
}

// token serves the password grant (RFC 6749 4.3), the refresh_token grant
// (6) of the refresh tokens it issued, and their errors (5.2).
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	grant := f.Get("grant_type")
	if grant != "password" && grant != "refresh_token" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	// client_secret_post or client_secret_basic (the refresh of a
	// kubeconfig's oidc auth provider sends the latter).
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	if id != p.ClientID || (p.ClientSecret != "" && secret != p.ClientSecret) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	p.mu.Lock()
	var user string
	ok := false
	if grant == "password" {
		user = f.Get("username")
		pw, known := p.users[user]
		ok = known && pw == f.Get("password")
	} else {
		user, ok = p.refresh[f.Get("refresh_token")]
	}
	lifetime := p.lifetime
	p.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_grant", "error_description": "Invalid user credentials"})
		return
	}
	now := time.Now()
	tok, err := p.sign(map[string]any{"iss": p.URL, "sub": user, "aud": p.ClientID, "iat": now.Unix(),
		"exp": now.Add(lifetime).Unix(), "jti": random(), "preferred_username": user})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
		return
	}
	refresh := random()
	p.mu.Lock()
	p.issued[tok] = user
	p.refresh[refresh] = user
	if grant == "refresh_token" {
		p.refreshed++
	}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "id_token": tok, "token_type": "Bearer",
		"expires_in": int(lifetime / time.Second), "refresh_token": refresh})
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return b64(b)
}

// sign makes an RS256 JWT of claims.
func (p *Provider) sign(claims map[string]any) (string, error) {
	h, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": KeyID})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + b64(sig), nil
}
