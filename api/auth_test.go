package api_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/api"
	"github.com/mini-vnfm/mini-vnfm/internal/apitest"
	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

// Ways a request can carry credentials.
const (
	viaBearer   = "Authorization: Bearer (static)"
	viaXAuth    = "X-Auth-Token (static)"
	viaBasic    = "Authorization: Basic"
	viaOAuth    = "OAuth 2.0 access token"
	viaKeystone = "X-Auth-Token (Keystone)"
)

var allVia = []string{viaBearer, viaXAuth, viaBasic, viaOAuth, viaKeystone}

// scopesUnderTest: one credential of each kind is made per scope.
var scopesUnderTest = []string{auth.VnflcmRead, auth.VnflcmWrite, auth.VnfpkgmRead, auth.VnfpkgmWrite,
	auth.VimRead, auth.VimWrite, auth.MetricsRead, auth.Admin}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func slug(scope string) string {
	if scope == auth.Admin {
		return "admin"
	}
	return strings.ReplaceAll(scope, ":", "-")
}

func basicAuth(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// authEnv is the API with authentication on, on a real database, with a
// credential of every kind for every scope.
type authEnv struct {
	*env
	st        *store.Store
	au        *auth.Authenticator
	settings  auth.Settings
	tokens    map[string]string // scope → static token
	passwords map[string]string // scope → password of user "user-<scope>"
	access    map[string]string // scope → OAuth access token
	keystone  map[string]string // scope → Keystone token
	clientID  string
	secret    string
	// secrets lists every credential used, for the log check.
	secrets []string
}

func newAuthEnv(t *testing.T, tune func(*auth.Settings)) *authEnv {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	e := &authEnv{st: st, tokens: map[string]string{}, passwords: map[string]string{}, access: map[string]string{}, keystone: map[string]string{}}

	// A Keystone that knows one token per scope, each with a role mapped to that scope.
	var roles []string
	ksRole := map[string]string{}
	for _, sc := range scopesUnderTest {
		tok := "ks-" + randHex(12)
		e.keystone[sc] = tok
		ksRole[tok] = "role-" + slug(sc)
		roles = append(roles, "role-"+slug(sc)+"="+sc)
	}
	ks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("X-Subject-Token")
		role, ok := ksRole[tok]
		if r.URL.Path != "/v3/auth/tokens" || !ok || r.Header.Get("X-Auth-Token") != tok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("X-Subject-Token", tok)
		_ = json.NewEncoder(w).Encode(map[string]any{"token": map[string]any{
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "user": map[string]any{"name": "ks-" + role},
			"roles": []map[string]any{{"name": role}}}})
	}))
	t.Cleanup(ks.Close)

	var tokens, users []string
	for _, sc := range scopesUnderTest {
		tok := "tok-" + slug(sc) + "-" + randHex(12)
		pw := "pw-" + randHex(8)
		h, err := auth.HashPasswordIter(pw, 1000)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[sc], e.passwords[sc] = tok, pw
		tokens = append(tokens, tok+":"+sc)
		users = append(users, "user-"+slug(sc)+":"+h+":"+sc)
		e.secrets = append(e.secrets, tok, pw, h, e.keystone[sc], base64.StdEncoding.EncodeToString([]byte("user-"+slug(sc)+":"+pw)))
	}
	e.settings = auth.Settings{Mode: "on", Tokens: strings.Join(tokens, " "), BasicUsers: strings.Join(users, ";"),
		TokenTTL: 10 * time.Minute, Realm: "mini-vnfm", KeystoneURL: ks.URL + "/v3", KeystoneRoles: strings.Join(roles, ";"),
		KeystoneAnyProject: true, KeystoneCacheTTL: time.Minute}
	if tune != nil {
		tune(&e.settings)
	}
	e.env = newAuthAPI(t, st, e.settings, func(a *auth.Authenticator) { e.au = a })

	// One OAuth client with every scope; access tokens narrowed to each scope.
	e.clientID = "nfvo-" + randHex(3)
	var err error
	if e.secret, err = auth.RegisterClient(ctx, st, e.clientID, "*", "test NFVO"); err != nil {
		t.Fatal(err)
	}
	e.secrets = append(e.secrets, e.secret, base64.StdEncoding.EncodeToString([]byte(e.clientID+":"+e.secret)))
	for _, sc := range scopesUnderTest {
		e.access[sc] = e.token(url.Values{"grant_type": {"client_credentials"}, "scope": {sc}}, basicAuth(e.clientID, e.secret))
	}
	return e
}

// newAuthAPI builds the HTTP API (LCM, packages, VIMs, metrics) over st
// with authentication from s (nil Authenticator when s says off).
func newAuthAPI(t *testing.T, st *store.Store, s auth.Settings, got func(*auth.Authenticator)) *env {
	t.Helper()
	ctx := context.Background()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	box := storetest.NewBox(t)
	svc := lcm.NewService(lcm.Config{Store: st, Box: box, Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Infra: lcmtest.Resolver(&lcmtest.Infra{}), Logger: log})
	pk := packages.New(packages.Config{Store: st, Box: box, Parse: stubParse, Logger: log, MaxBytes: 1 << 20, Lease: 2 * time.Second,
		Outbound: outboundtest.Policy(0)})
	t.Cleanup(pk.Wait)
	au, err := auth.New(s, auth.Options{Listen: "0.0.0.0:9890", Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if got != nil {
		got(au)
	}
	e := &env{t: t, st: st, logs: logs, checker: apitest.NewChecker(t)}
	var handler atomic.Value
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	h, err := api.New(ctx, api.Config{Service: svc, Packages: pk, EndpointURL: e.srv.URL, Logger: log,
		Metrics: metrics.New(svc.Stats, log), PageSize: 10, Auth: au})
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(h)
	return e
}

// post sends a raw request (no conformance checks: the token endpoint is not SOL003).
func (e *env) post(path, contentType, body string, hdr ...string) resp {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return resp{res, b}
}

const formType = "application/x-www-form-urlencoded"

// token gets an access token from the token endpoint.
func (e *authEnv) token(form url.Values, authorization string) string {
	e.t.Helper()
	r := e.post(auth.TokenPath, formType, form.Encode(), "Authorization", authorization)
	if r.StatusCode != http.StatusOK {
		e.t.Fatalf("token endpoint: %d %s", r.StatusCode, r.body)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
		Scope       string `json:"scope"`
	}
	if err := json.Unmarshal(r.body, &tr); err != nil || tr.TokenType != "Bearer" || !strings.HasPrefix(tr.AccessToken, auth.AccessTokenPrefix) ||
		tr.ExpiresIn != int(e.settings.TokenTTL.Seconds()) {
		e.t.Fatalf("token response: %v %s", err, r.body)
	}
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" || r.Header.Get("Content-Type") != "application/json" {
		e.t.Errorf("token response headers: %v", r.Header)
	}
	if want := form.Get("scope"); want != "" && tr.Scope != want {
		e.t.Errorf("granted scope %q, asked for %q", tr.Scope, want)
	}
	e.secrets = append(e.secrets, tr.AccessToken)
	return tr.AccessToken
}

// creds returns the headers presenting a credential for scope, or a wrong one.
func (e *authEnv) creds(via, scope string, wrong bool) []string {
	switch via {
	case viaBearer:
		if wrong {
			return []string{"Authorization", "Bearer tok-wrong-" + randHex(8)}
		}
		return []string{"Authorization", "Bearer " + e.tokens[scope]}
	case viaXAuth:
		if wrong {
			return []string{"X-Auth-Token", "notused"} // what --os-auth-type none sends
		}
		return []string{"X-Auth-Token", e.tokens[scope]}
	case viaBasic:
		if wrong {
			return []string{"Authorization", basicAuth("user-"+slug(scope), e.passwords[scope]+"x")}
		}
		return []string{"Authorization", basicAuth("user-"+slug(scope), e.passwords[scope])}
	case viaOAuth:
		if wrong {
			return []string{"Authorization", "Bearer " + auth.AccessTokenPrefix + randHex(32)}
		}
		return []string{"Authorization", "Bearer " + e.access[scope]}
	case viaKeystone:
		if wrong {
			return []string{"X-Auth-Token", "ks-" + randHex(12)}
		}
		return []string{"X-Auth-Token", e.keystone[scope]}
	}
	panic(via)
}

// want401 checks a 401: ProblemDetails (env.do), Bearer and Basic challenges.
func want401(t *testing.T, r resp, bearerError string) {
	t.Helper()
	if r.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s %s: %d, want 401: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.body)
		return
	}
	ch := r.Header.Values("WWW-Authenticate")
	bearer := `Bearer realm="mini-vnfm"`
	if bearerError != "" {
		bearer += `, error="` + bearerError + `"`
	}
	if len(ch) != 2 || ch[0] != bearer || ch[1] != `Basic realm="mini-vnfm", charset="UTF-8"` {
		t.Errorf("%s %s: WWW-Authenticate %q, want [%s, Basic realm=...]", r.Request.Method, r.Request.URL.Path, ch, bearer)
	}
}

func granted(t *testing.T, r resp) {
	t.Helper()
	if r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden || r.StatusCode >= 500 {
		t.Errorf("%s %s: %d, want the request let through: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.body)
	}
}

// Every API family, every way to authenticate: missing and wrong credentials
// get 401, a credential without the scope 403, the right scope (or a write
// scope of the family for reads, or admin) gets through.
func TestAuthEveryFamilyEveryMethod(t *testing.T) {
	e := newAuthEnv(t, nil)
	create := `{"vnfdId":"` + lcmtest.VnfdID + `","vnfInstanceName":"authz"}`
	rows := []struct {
		method, path, body string
		scope, alsoOK      string // needed scope; a wider one that also works
		wrongScope         string
	}{
		{"GET", "/vnflcm/v1/vnf_instances", "", auth.VnflcmRead, auth.VnflcmWrite, auth.VnfpkgmRead},
		{"GET", "/vnflcm/v1/vnf_lcm_op_occs", "", auth.VnflcmRead, auth.VnflcmWrite, auth.VimWrite},
		{"GET", "/vnflcm/v1/api_versions", "", auth.VnflcmRead, auth.VnflcmWrite, auth.MetricsRead},
		{"POST", "/vnflcm/v1/vnf_instances", create, auth.VnflcmWrite, "", auth.VnflcmRead},
		{"DELETE", "/vnflcm/v1/vnf_instances/" + uuid.NewString(), "", auth.VnflcmWrite, "", auth.VnflcmRead},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/" + uuid.NewString() + "/retry", "", auth.VnflcmWrite, "", auth.VnflcmRead},
		{"GET", "/vnfpkgm/v1/vnf_packages", "", auth.VnfpkgmRead, auth.VnfpkgmWrite, auth.VnflcmWrite},
		{"POST", "/vnfpkgm/v1/vnf_packages", `{}`, auth.VnfpkgmWrite, "", auth.VnfpkgmRead},
		{"GET", "/v1.0/vims.json", "", auth.VimRead, auth.VimWrite, auth.VnflcmRead},
		{"GET", "/v1.0/vims/" + uuid.NewString(), "", auth.VimRead, auth.VimWrite, auth.VnfpkgmWrite},
		{"POST", "/v1.0/vims.json", `{}`, auth.VimWrite, "", auth.VimRead},
		{"GET", "/metrics", "", auth.MetricsRead, "", auth.VnflcmRead},
	}
	for _, row := range rows {
		t.Run(row.method+" "+row.path, func(t *testing.T) {
			e.t = t
			want401(t, e.do(row.method, row.path, row.body), "")
			for _, via := range allVia {
				bearerErr := "invalid_token"
				if via == viaBasic {
					bearerErr = ""
				}
				want401(t, e.do(row.method, row.path, row.body, e.creds(via, row.scope, true)...), bearerErr)

				r := e.do(row.method, row.path, row.body, e.creds(via, row.wrongScope, false)...)
				if r.StatusCode != http.StatusForbidden {
					t.Errorf("%s with scope %s: %d, want 403: %s", via, row.wrongScope, r.StatusCode, r.body)
				} else if d := r.json(t)["detail"].(string); !strings.Contains(d, "scope "+row.scope+" is missing") {
					t.Errorf("%s: the 403 does not name the missing scope: %s", via, d)
				} else if ch := r.Header.Get("WWW-Authenticate"); via != viaBasic && ch != `Bearer realm="mini-vnfm", error="insufficient_scope", scope="`+row.scope+`"` {
					t.Errorf("%s: 403 challenge %q", via, ch)
				}

				granted(t, e.do(row.method, row.path, row.body, e.creds(via, row.scope, false)...))
				granted(t, e.do(row.method, row.path, row.body, e.creds(via, auth.Admin, false)...))
				if row.alsoOK != "" {
					granted(t, e.do(row.method, row.path, row.body, e.creds(via, row.alsoOK, false)...))
				}
			}
		})
	}
	e.t = t

	// A path outside every family needs admin: fail closed.
	r := e.do("GET", "/nothing-here", "", e.creds(viaBearer, auth.VnflcmWrite, false)...)
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("unknown path with vnflcm:write: %d", r.StatusCode)
	}
	e.expect(e.do("GET", "/nothing-here", "", e.creds(viaBearer, auth.Admin, false)...), http.StatusNotFound)

	// The X-Auth-Token "notused" of --os-auth-type none gets an explanation.
	r = e.do("GET", "/vnflcm/v1/vnf_instances", "", "X-Auth-Token", "notused")
	if d, _ := r.json(t)["detail"].(string); r.StatusCode != 401 || !strings.Contains(d, "--os-auth-type admin_token") {
		t.Errorf("notused: %d %s", r.StatusCode, d)
	}

	// No credential anywhere in the logs (or in a response other than the token endpoint's).
	checkNoSecrets(t, e.logs.String(), e.secrets)
	e.mu.Lock()
	checkNoSecrets(t, strings.Join(e.bodies, "\n"), e.secrets)
	e.mu.Unlock()
	if !strings.Contains(e.logs.String(), "authentication failed") || !strings.Contains(e.logs.String(), "msg=http") {
		t.Error("the log lacks request and authentication lines: the secret check proves nothing")
	}
}

func checkNoSecrets(t *testing.T, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("a credential appears: %.12s…", s)
		}
	}
}

func oauthError(t *testing.T, r resp, status int, code string) {
	t.Helper()
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(r.body, &oe); err != nil || r.StatusCode != status || oe.Error != code || oe.Description == "" {
		t.Errorf("token endpoint: %d %s, want %d %s", r.StatusCode, r.body, status, code)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token error headers: %v", r.Header)
	}
	if status == 401 && r.Header.Get("WWW-Authenticate") != `Basic realm="mini-vnfm", charset="UTF-8"` {
		t.Errorf("invalid_client without a Basic challenge: %v", r.Header)
	}
}

func TestOAuthTokenEndpoint(t *testing.T) {
	e := newAuthEnv(t, nil)
	ctx := context.Background()
	cc := url.Values{"grant_type": {"client_credentials"}}
	lcmClient := "lcm-only"
	lcmSecret, err := auth.RegisterClient(ctx, e.st, lcmClient, "vnflcm:write", "")
	if err != nil {
		t.Fatal(err)
	}
	e.secrets = append(e.secrets, lcmSecret)

	// Client authentication in the form; no scope asked: all the client's scopes.
	tok := e.token(url.Values{"grant_type": {"client_credentials"}, "client_id": {lcmClient}, "client_secret": {lcmSecret}}, "")
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`"}`, "Authorization", "Bearer "+tok), http.StatusCreated)
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+tok), http.StatusOK)
	e.expect(e.do("GET", "/vnfpkgm/v1/vnf_packages", "", "Authorization", "Bearer "+tok), http.StatusForbidden)
	// X-Auth-Token carries access tokens too.
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "X-Auth-Token", tok), http.StatusOK)

	// A narrower scope than the client's.
	ro := e.token(url.Values{"grant_type": {"client_credentials"}, "scope": {"vnflcm:read"}}, basicAuth(lcmClient, lcmSecret))
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+ro), http.StatusOK)
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`"}`, "Authorization", "Bearer "+ro), http.StatusForbidden)

	basic := basicAuth(lcmClient, lcmSecret)
	for _, c := range []struct {
		name, ctype, body string
		hdr               []string
		status            int
		code              string
	}{
		{"wider scope than the client's", formType, "grant_type=client_credentials&scope=vim:write", []string{"Authorization", basic}, 400, "invalid_scope"},
		{"unknown scope", formType, "grant_type=client_credentials&scope=everything", []string{"Authorization", basic}, 400, "invalid_scope"},
		{"wrong secret", formType, "grant_type=client_credentials", []string{"Authorization", basicAuth(lcmClient, lcmSecret+"x")}, 401, "invalid_client"},
		{"wrong form secret", formType, "grant_type=client_credentials&client_id=" + lcmClient + "&client_secret=nope", nil, 401, "invalid_client"},
		{"unknown client", formType, "grant_type=client_credentials", []string{"Authorization", basicAuth("ghost", lcmSecret)}, 401, "invalid_client"},
		{"no client authentication", formType, "grant_type=client_credentials", nil, 401, "invalid_client"},
		{"bearer is no client authentication", formType, "grant_type=client_credentials", []string{"Authorization", "Bearer " + tok}, 401, "invalid_client"},
		{"two client authentications", formType, "grant_type=client_credentials&client_id=" + lcmClient + "&client_secret=" + lcmSecret, []string{"Authorization", basic}, 400, "invalid_request"},
		{"no grant_type", formType, "scope=vnflcm:read", []string{"Authorization", basic}, 400, "invalid_request"},
		{"password grant", formType, "grant_type=password&username=a&password=b", []string{"Authorization", basic}, 400, "unsupported_grant_type"},
		{"JSON body", "application/json", `{"grant_type":"client_credentials"}`, []string{"Authorization", basic}, 400, "invalid_request"},
		{"repeated parameter", formType, "grant_type=client_credentials&grant_type=client_credentials", []string{"Authorization", basic}, 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			oauthError(t, e.post(auth.TokenPath, c.ctype, c.body, c.hdr...), c.status, c.code)
		})
	}
	e.t = t
	oauthError(t, e.post(auth.TokenPath+"?"+cc.Encode()+"&client_secret=x", formType, "", "Authorization", basic), 400, "invalid_request")
	// Other methods: 405 ProblemDetails with Allow.
	r := e.do("GET", auth.TokenPath, "")
	if r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
		t.Errorf("GET %s: %d Allow %q", auth.TokenPath, r.StatusCode, r.Header.Get("Allow"))
	}

	// Deleting the client: its tokens stop working at once, and it gets no new ones.
	if err := e.st.DeleteAuthClient(ctx, lcmClient); err != nil {
		t.Fatal(err)
	}
	want401(t, e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+tok), "invalid_token")
	want401(t, e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+ro), "invalid_token")
	oauthError(t, e.post(auth.TokenPath, formType, cc.Encode(), "Authorization", basic), 401, "invalid_client")

	checkNoSecrets(t, e.logs.String(), e.secrets)
}

func TestOAuthTokenExpires(t *testing.T) {
	e := newAuthEnv(t, func(s *auth.Settings) { s.TokenTTL = time.Second })
	tok := e.token(url.Values{"grant_type": {"client_credentials"}}, basicAuth(e.clientID, e.secret))
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+tok), http.StatusOK)
	time.Sleep(1200 * time.Millisecond)
	r := e.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+tok)
	want401(t, r, "invalid_token")
	if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "expired") {
		t.Errorf("detail %q", d)
	}
}

// Tokens live in the database: a token from one replica works on another.
func TestOAuthTokensWorkAcrossReplicas(t *testing.T) {
	e := newAuthEnv(t, nil)
	st2, err := store.Open(context.Background(), e.st.Pool().Config().ConnString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st2.Close)
	replica := newAuthAPI(t, st2, e.settings, nil)
	tok := e.token(url.Values{"grant_type": {"client_credentials"}, "scope": {"vnflcm:read"}}, basicAuth(e.clientID, e.secret))
	replica.expect(replica.do("GET", "/vnflcm/v1/vnf_instances", "", "Authorization", "Bearer "+tok), http.StatusOK)
	replica.expect(replica.do("POST", "/vnflcm/v1/vnf_instances", `{}`, "Authorization", "Bearer "+tok), http.StatusForbidden)
}

func TestAuthFailuresAreRateLimited(t *testing.T) {
	e := newAuthEnv(t, func(s *auth.Settings) { s.MaxFailures = 3 })
	for i := 0; i < 3; i++ {
		want401(t, e.do("GET", "/vnflcm/v1/vnf_instances", "", e.creds(viaBasic, auth.VnflcmRead, true)...), "")
	}
	for _, hdr := range [][]string{e.creds(viaBasic, auth.VnflcmRead, false), e.creds(viaBearer, auth.VnflcmRead, false)} {
		r := e.do("GET", "/vnflcm/v1/vnf_instances", "", hdr...)
		if n, err := time.ParseDuration(r.Header.Get("Retry-After") + "s"); r.StatusCode != http.StatusTooManyRequests || err != nil || n < time.Second || n > 30*time.Second {
			t.Errorf("after 3 failures: %d Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
	r := e.post(auth.TokenPath, formType, "grant_type=client_credentials", "Authorization", basicAuth(e.clientID, e.secret))
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("token endpoint after 3 failures: %d %s", r.StatusCode, r.body)
	}
	// Requests without credentials are answered as before (401, not counted).
	e.expect(e.do("GET", "/healthz", ""), http.StatusOK)
}

func TestAuthHealthOpenMetricsScoped(t *testing.T) {
	e := newAuthEnv(t, nil)
	e.expect(e.do("GET", "/healthz", ""), http.StatusOK)
	e.expect(e.do("GET", "/readyz", ""), http.StatusOK)
	want401(t, e.do("GET", "/metrics", ""), "")
	e.expect(e.do("GET", "/metrics", "", e.creds(viaBearer, auth.MetricsRead, false)...), http.StatusOK)

	open := newAuthEnv(t, func(s *auth.Settings) { s.MetricsOpen = true })
	open.expect(open.do("GET", "/metrics", ""), http.StatusOK)
	want401(t, open.do("GET", "/vnflcm/v1/vnf_instances", ""), "")
}

func TestAuthOffServesEveryone(t *testing.T) {
	st := storetest.Open(t)
	e := newAuthAPI(t, st, auth.Settings{Mode: "off"}, func(a *auth.Authenticator) {
		if a != nil {
			t.Fatal("VNFM_AUTH=off built an Authenticator")
		}
	})
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "X-Auth-Token", "notused"), http.StatusOK)
	e.expect(e.do("GET", "/metrics", ""), http.StatusOK)
	e.expect(e.do("POST", auth.TokenPath, ""), http.StatusNotFound)
}

// runServer runs the real server wiring in-process with env set, and returns
// its base URL and log.
func runServer(t *testing.T, vars map[string]string) (string, *syncBuffer) {
	t.Helper()
	db := pgtest.NewDB(t)
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.PutPackage(context.Background(), lcmtest.SamplePackage())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"DATABASE_URL": db, "VNFM_SECRET_KEY": secrets.NewKey(), "VNFM_LISTEN": "127.0.0.1:0",
		"VNFM_ENGINE": "false", "VNFM_AUTH": "", "VNFM_AUTH_TOKENS": "", "VNFM_AUTH_TOKENS_FILE": "", "VNFM_AUTH_BASIC_USERS": "",
		"VNFM_AUTH_BASIC_USERS_FILE": "", "VNFM_AUTH_KEYSTONE_URL": ""}
	for k, v := range vars {
		base[k] = v
	}
	for k, v := range base {
		t.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, server.Options{Version: "auth-test", Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Ready: func(addr string) { ready <- addr }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	select {
	case addr := <-ready:
		_, port, _ := net.SplitHostPort(addr)
		return "http://127.0.0.1:" + port, logs
	case err := <-done:
		t.Fatalf("server did not start: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not start:\n%s", logs)
	}
	return "", nil
}

func get(t *testing.T, u string, hdr ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// VNFM_AUTH unset: off on a loopback listen address, on otherwise.
func TestServerAuthDefaultsToListenAddress(t *testing.T) {
	u, _ := runServer(t, nil)
	if got := get(t, u+"/vnflcm/v1/vnf_instances"); got != http.StatusOK {
		t.Errorf("loopback, VNFM_AUTH unset: %d, want 200", got)
	}
	u, _ = runServer(t, map[string]string{"VNFM_LISTEN": "0.0.0.0:0"})
	if got := get(t, u+"/vnflcm/v1/vnf_instances"); got != http.StatusUnauthorized {
		t.Errorf("0.0.0.0, VNFM_AUTH unset: %d, want 401", got)
	}
	if got := get(t, u+"/healthz"); got != http.StatusOK {
		t.Errorf("/healthz with auth on: %d", got)
	}
	u, _ = runServer(t, map[string]string{"VNFM_LISTEN": "0.0.0.0:0", "VNFM_AUTH": "off"})
	if got := get(t, u+"/vnflcm/v1/vnf_instances"); got != http.StatusOK {
		t.Errorf("0.0.0.0, VNFM_AUTH=off: %d, want 200", got)
	}
}

// tackerCLIHint is how to get the Tacker CLI (CI installs it).
const tackerCLIHint = "apt-get install -y python3-tackerclient python3-openstackclient"

// The Tacker CLI against a server with auth on: admin_token and http_basic work,
// none and wrong credentials are refused, scopes hold.
func TestTackerCLIWithAuth(t *testing.T) {
	cli, err := exec.LookPath("openstack")
	if err != nil {
		t.Fatalf("the Tacker CLI (openstack) is not installed; install it with: %s", tackerCLIHint)
	}
	if out, err := exec.Command(cli, "vnflcm", "--help").CombinedOutput(); err != nil {
		t.Fatalf("openstack has no vnflcm commands (%v: %.300s); install: %s", err, out, tackerCLIHint)
	}
	readTok, pkgTok := "cli-read-"+randHex(12), "cli-pkg-"+randHex(12)
	pw := "pw-" + randHex(8)
	h, _ := auth.HashPasswordIter(pw, 1000)
	u, logs := runServer(t, map[string]string{"VNFM_AUTH": "on",
		"VNFM_AUTH_TOKENS":      readTok + ":vnflcm:read " + pkgTok + ":vnfpkgm:read",
		"VNFM_AUTH_BASIC_USERS": "ops:" + h + ":vnflcm:write"})

	run := func(args ...string) (string, error) {
		cmd := exec.Command(cli, append([]string{"--os-endpoint", u}, args...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OS_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Errorf("openstack %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := run(args...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("openstack %s: %v, want a failure mentioning %q:\n%s", strings.Join(args, " "), err, want, out)
		}
	}
	token := []string{"--os-auth-type", "admin_token", "--os-token"}
	basic := []string{"--os-auth-type", "http_basic", "--os-username", "ops", "--os-password"}

	if out := ok(append(append(token, readTok), "vnflcm", "list", "-f", "json")...); strings.TrimSpace(out) != "[]" {
		t.Errorf("vnflcm list with a token: %q", out)
	}
	out := ok(append(append(basic, pw), "vnflcm", "create", lcmtest.VnfdID, "--name", "cli-auth", "-f", "json")...)
	if !strings.Contains(out, "cli-auth") {
		t.Errorf("vnflcm create with Basic: %s", out)
	}
	if out := ok(append(append(basic, pw), "vnflcm", "list", "-f", "json")...); !strings.Contains(out, "cli-auth") {
		t.Errorf("vnflcm list with Basic: %s", out)
	}

	// The CLI prints the ProblemDetails detail of the 401/403.
	refused("requires credentials: use --os-auth-type admin_token", "--os-auth-type", "none", "vnflcm", "list")
	refused("the X-Auth-Token is not valid", append(append(token, "wrong-"+randHex(8)), "vnflcm", "list")...)
	refused("the Basic user name or password is wrong", append(append(basic, pw+"x"), "vnflcm", "list")...)
	refused("scope vnflcm:read is missing", append(append(token, pkgTok), "vnflcm", "list")...)
	refused("scope vnflcm:write is missing", append(append(token, readTok), "vnflcm", "create", lcmtest.VnfdID)...)

	checkNoSecrets(t, logs.String(), []string{readTok, pkgTok, pw, h, base64.StdEncoding.EncodeToString([]byte("ops:" + pw))})
	if !strings.Contains(logs.String(), "authentication failed") {
		t.Errorf("the server log has no failed authentication:\n%s", logs)
	}
}
