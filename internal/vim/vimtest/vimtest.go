// Package vimtest provides stand-ins for the services a VIM registration
// talks to, on 127.0.0.1: a Keystone v3 that issues tokens with the real
// response shape (X-Subject-Token header, token body with a catalog) or
// answers 401, and a TLS Kubernetes API server that checks a bearer token.
package vimtest

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/oidc/oidctest"
)

// Keystone is a Keystone v3 stub with one user in one project, both in the
// domain "Default".
type Keystone struct {
	Server   *httptest.Server
	User     string
	UserID   string
	Password string
	Project  string
	Region   string
	// Tokens counts the tokens issued; Rejected the 401 answers.
	Tokens, Rejected atomic.Int64

	mu   sync.Mutex
	last map[string]any
}

// NewKeystone starts a Keystone stub (plain HTTP) that accepts user/password
// scoped to project; it stops when the test ends.
func NewKeystone(t testing.TB, user, password, project string) *Keystone {
	k := &Keystone{User: user, UserID: "uid-" + user, Password: password, Project: project, Region: "RegionOne"}
	k.Server = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.Server.Close)
	return k
}

// URL is the versioned identity URL (…/v3), as VIMs are registered with.
func (k *Keystone) URL() string { return k.Server.URL + "/v3" }

// LastRequest returns the last token request body, decoded.
func (k *Keystone) LastRequest() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

func (k *Keystone) serve(w http.ResponseWriter, r *http.Request) {
	base := k.Server.URL
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == ""):
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{
			map[string]any{"id": "v3.14", "status": "stable", "links": []any{map[string]any{"rel": "self", "href": base + "/v3/"}}},
		}}})
	case r.Method == http.MethodGet && (r.URL.Path == "/v3" || r.URL.Path == "/v3/"):
		writeJSON(w, http.StatusOK, map[string]any{"version": map[string]any{"id": "v3.14", "status": "stable",
			"links": []any{map[string]any{"rel": "self", "href": base + "/v3/"}}}})
	case r.Method == http.MethodPost && r.URL.Path == "/v3/auth/tokens":
		k.token(w, r)
	default:
		writeJSON(w, http.StatusNotFound, keystoneError(http.StatusNotFound, "Not Found", "The resource could not be found."))
	}
}

func keystoneError(code int, title, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "title": title, "message": msg}}
}

func (k *Keystone) token(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	k.mu.Lock()
	k.last = body
	k.mu.Unlock()
	auth, _ := body["auth"].(map[string]any)
	identity, _ := auth["identity"].(map[string]any)
	pw, _ := identity["password"].(map[string]any)
	user, _ := pw["user"].(map[string]any)
	scope, _ := auth["scope"].(map[string]any)
	project, _ := scope["project"].(map[string]any)
	domainOK := func(m map[string]any) bool {
		d, _ := m["domain"].(map[string]any)
		return d["name"] == "Default" || d["id"] == "default"
	}
	userOK := (user["name"] == k.User && domainOK(user)) || user["id"] == k.UserID
	if !userOK || user["password"] != k.Password {
		k.Rejected.Add(1)
		writeJSON(w, http.StatusUnauthorized, keystoneError(http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication."))
		return
	}
	if !((project["name"] == k.Project && domainOK(project)) || project["id"] == "pid-"+k.Project) {
		k.Rejected.Add(1)
		writeJSON(w, http.StatusUnauthorized, keystoneError(http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication."))
		return
	}
	k.Tokens.Add(1)
	w.Header().Set("X-Subject-Token", "gAAAAA-stub-token")
	ep := func(iface, url string) map[string]any {
		return map[string]any{"id": iface, "interface": iface, "region": k.Region, "region_id": k.Region, "url": url}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods":    []string{"password"},
		"expires_at": "2099-01-01T00:00:00.000000Z",
		"issued_at":  "2024-01-01T00:00:00.000000Z",
		"user":       map[string]any{"id": k.UserID, "name": k.User, "domain": map[string]any{"id": "default", "name": "Default"}},
		"project":    map[string]any{"id": "pid-" + k.Project, "name": k.Project, "domain": map[string]any{"id": "default", "name": "Default"}},
		"roles":      []any{map[string]any{"id": "r1", "name": "member"}},
		"catalog": []any{
			map[string]any{"id": "c1", "type": "identity", "name": "keystone", "endpoints": []any{ep("public", k.Server.URL+"/v3")}},
			map[string]any{"id": "c2", "type": "orchestration", "name": "heat", "endpoints": []any{ep("public", k.Server.URL+"/heat/v1/pid-"+k.Project)}},
		},
	}})
}

// Kubernetes is a TLS stand-in for a Kubernetes API server that accepts one
// bearer token (and, if set, one username/password by basic auth).
type Kubernetes struct {
	Server     *httptest.Server
	Token      string
	Username   string
	Password   string
	Namespaces []string
	// Accept, when set, also accepts the bearer tokens it approves (the
	// ID tokens of an OpenID provider); set it before the first request.
	Accept func(token string) bool
	// Calls counts authenticated requests; Rejected the 401 answers.
	Calls, Rejected atomic.Int64
}

// NewKubernetes starts the stand-in; it stops when the test ends.
func NewKubernetes(t testing.TB, token string) *Kubernetes {
	k := &Kubernetes{Token: token, Namespaces: []string{"default", "kube-system"}}
	k.Server = httptest.NewTLSServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.Server.Close)
	return k
}

// NewOIDCKubernetes starts an OpenID provider for client "vnfm" (with
// clientSecret) where user "alice" logs in with password, and the stand-in
// accepting the ID tokens it issues to alice, as an API server started with
// --oidc-issuer-url would; both stop when the test ends.
func NewOIDCKubernetes(t testing.TB, clientSecret, password string) (*oidctest.Provider, *Kubernetes) {
	t.Helper()
	idp, err := oidctest.Start("vnfm", clientSecret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(idp.Close)
	idp.AddUser("alice", password)
	k := NewKubernetes(t, "")
	k.Accept = func(tok string) bool { u, ok := idp.Holder(tok); return ok && u == "alice" }
	return idp, k
}

// URL is the API server URL.
func (k *Kubernetes) URL() string { return k.Server.URL }

// CAPEM is the PEM of the certificate the server presents (self-signed, so
// it is its own CA), as a VIM's ssl_ca_cert.
func (k *Kubernetes) CAPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.Server.Certificate().Raw}))
}

func (k *Kubernetes) serve(w http.ResponseWriter, r *http.Request) {
	bearer, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	ok := isBearer && ((bearer == k.Token && k.Token != "") || (k.Accept != nil && k.Accept(bearer)))
	if u, p, basic := r.BasicAuth(); basic && k.Username != "" {
		ok = u == k.Username && p == k.Password
	}
	if !ok {
		k.Rejected.Add(1)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"message": "Unauthorized", "reason": "Unauthorized", "code": 401})
		return
	}
	k.Calls.Add(1)
	switch r.URL.Path {
	case "/api":
		writeJSON(w, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []any{map[string]any{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
	case "/version":
		writeJSON(w, http.StatusOK, map[string]any{"major": "1", "minor": "30", "gitVersion": "v1.30.0"})
	case "/api/v1/namespaces":
		items := []any{}
		for _, n := range k.Namespaces {
			items = append(items, map[string]any{"metadata": map[string]any{"name": n}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"kind": "NamespaceList", "apiVersion": "v1", "items": items})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
