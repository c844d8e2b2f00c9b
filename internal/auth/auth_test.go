package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	p := Policy{}
	for _, c := range []struct {
		method, path string
		want         Requirement
	}{
		{"GET", "/healthz", Requirement{Open: true}},
		{"GET", "/readyz", Requirement{Open: true}},
		{"POST", "/oauth2/token", Requirement{Open: true}},
		{"GET", "/metrics", Requirement{Scope: MetricsRead}},
		{"GET", "/vnflcm/v1/vnf_instances", Requirement{Scope: VnflcmRead}},
		{"HEAD", "/vnflcm/v1/vnf_instances", Requirement{Scope: VnflcmRead}},
		{"GET", "/vnflcm/api_versions", Requirement{Scope: VnflcmRead}},
		{"POST", "/vnflcm/v1/vnf_instances", Requirement{Scope: VnflcmWrite}},
		{"PATCH", "/vnflcm/v1/vnf_instances/x", Requirement{Scope: VnflcmWrite}},
		{"DELETE", "/vnflcm/v1/vnf_instances/x", Requirement{Scope: VnflcmWrite}},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/x/retry", Requirement{Scope: VnflcmWrite}},
		{"GET", "/vnflcm/v1/subscriptions", Requirement{Scope: VnflcmRead}},
		{"POST", "/vnflcm/v1/subscriptions", Requirement{Scope: VnflcmWrite}},
		{"GET", "/vnfpkgm/v1/vnf_packages", Requirement{Scope: VnfpkgmRead}},
		{"PUT", "/vnfpkgm/v1/vnf_packages/x/package_content", Requirement{Scope: VnfpkgmWrite}},
		{"GET", "/v1.0/vims", Requirement{Scope: VimRead}},
		{"GET", "/v1.0/vims.json", Requirement{Scope: VimRead}},
		{"POST", "/v1.0/vims.json", Requirement{Scope: VimWrite}},
		{"DELETE", "/v1.0/vims/x.json", Requirement{Scope: VimWrite}},
		// A VIM's kubeconfig holds its credentials: a scope of its own.
		{"GET", "/v1.0/vims/x/kubeconfig", Requirement{Scope: VimKubeconfig}},
		{"GET", "/v1.0/vims/x/kubeconfig/", Requirement{Scope: VimKubeconfig}},
		{"GET", "/v1.0/vims/x/kubeconfigs", Requirement{Scope: VimRead}},
		// Outside every family: fail closed.
		{"GET", "/v1.0/vimsx", Requirement{Scope: Admin}},
		{"GET", "/vnflcmx", Requirement{Scope: Admin}},
		{"GET", "/", Requirement{Scope: Admin}},
		{"GET", "/healthz/x", Requirement{Scope: Admin}},
		{"GET", "/VNFLCM/v1/vnf_instances", Requirement{Scope: Admin}},
	} {
		if got := p.Require(c.method, c.path); got != c.want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.path, got, c.want)
		}
	}
	if got := (Policy{MetricsOpen: true}).Require("GET", "/metrics"); !got.Open {
		t.Errorf("MetricsOpen: /metrics needs %+v", got)
	}
}

func TestScopes(t *testing.T) {
	s, err := ParseScopes("vnflcm:write, vim:read")
	if err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[string]bool{VnflcmWrite: true, VnflcmRead: true, VimRead: true, VimWrite: false,
		VnfpkgmRead: false, MetricsRead: false, Admin: false} {
		if s.Has(scope) != want {
			t.Errorf("Has(%s) = %v", scope, !want)
		}
	}
	w, _ := ParseScopes("vim:write")
	if w.Has(VimKubeconfig) {
		t.Errorf("vim:write grants %s", VimKubeconfig)
	}
	admin, _ := ParseScopes("admin")
	for _, sc := range KnownScopes {
		if !admin.Has(sc) {
			t.Errorf("admin lacks %s", sc)
		}
	}
	if admin.String() != "*" {
		t.Errorf("admin normalises to %q", admin.String())
	}
	for _, bad := range []string{"", "vnflcm:reed", "read", ",,"} {
		if _, err := ParseScopes(bad); err == nil {
			t.Errorf("ParseScopes(%q) accepted", bad)
		}
	}
}

func TestEnabledDefaultsByListenAddress(t *testing.T) {
	for _, c := range []struct {
		mode, listen string
		want         bool
	}{
		{"", "127.0.0.1:9890", false},
		{"", "127.0.0.5:9890", false},
		{"", "[::1]:9890", false},
		{"", "localhost:9890", false},
		{"", ":9890", true},
		{"", "0.0.0.0:9890", true},
		{"", "[::]:9890", true},
		{"", "10.0.0.5:9890", true},
		{"", "vnfm.example:9890", true},
		{"on", "127.0.0.1:9890", true},
		{"ON", "127.0.0.1:9890", true},
		{"off", "0.0.0.0:9890", false},
		{"false", ":9890", false},
	} {
		got, err := Settings{Mode: c.mode}.Enabled(c.listen)
		if err != nil || got != c.want {
			t.Errorf("VNFM_AUTH=%q VNFM_LISTEN=%s: %v, %v; want %v", c.mode, c.listen, got, err, c.want)
		}
	}
	if _, err := (Settings{Mode: "maybe"}).Enabled(":1"); err == nil {
		t.Error("VNFM_AUTH=maybe accepted")
	}
}

func TestPasswordHash(t *testing.T) {
	h, err := HashPasswordIter("s3cret pass", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$pbkdf2-sha256$i=1000,l=32$") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := HashPasswordIter("s3cret pass", 1000)
	if h == h2 {
		t.Error("two hashes of one password are equal: no salt?")
	}
	for pw, want := range map[string]bool{"s3cret pass": true, "s3cret pas": false, "": false, "S3cret pass": false} {
		if ok, err := VerifyPassword(h, pw); err != nil || ok != want {
			t.Errorf("VerifyPassword(%q) = %v, %v", pw, ok, err)
		}
	}
	for _, bad := range []string{"", "plain", "$2y$10$abc", "$pbkdf2-sha256$i=x,l=32$c2FsdHNhbHQ$a", "$pbkdf2-sha256$i=1000,l=16$c2FsdHNhbHQ$YWJj",
		strings.Replace(h, "i=1000", "i=0", 1), strings.Replace(h, "i=1000", "i=99999999", 1)} {
		if _, err := VerifyPassword(bad, "x"); err == nil {
			t.Errorf("VerifyPassword accepted hash %q", bad)
		}
	}
	if def, _ := HashPassword("x"); !strings.Contains(def, fmt.Sprintf("i=%d,", DefaultIterations)) {
		t.Errorf("default hash %q", def)
	}
}

func TestSettingsParsing(t *testing.T) {
	h, _ := HashPasswordIter("pw", 1000)
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokFile, []byte("# ops\n\nfile-token-0123456789:vim:write\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	userFile := filepath.Join(dir, "users")
	if err := os.WriteFile(userFile, []byte("carol:"+h+":metrics:read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Settings{Tokens: "tok-aaaaaaaaaaaaaaaa:vnflcm:read,vnfpkgm:read ; tok-bbbbbbbbbbbbbbbb:*", TokensFile: tokFile,
		BasicUsers: "alice:" + h + ":admin\nbob:" + h + ":vnflcm:write", BasicUsersFile: userFile}
	toks, err := s.staticTokens()
	if err != nil || len(toks) != 3 {
		t.Fatalf("tokens: %v %v", toks, err)
	}
	if !toks[0].scopes.Has(VnfpkgmRead) || toks[0].scopes.Has(VnflcmWrite) || !toks[1].scopes.Has(VimWrite) || !toks[2].scopes.Has(VimRead) {
		t.Errorf("token scopes: %v %v %v", toks[0].scopes, toks[1].scopes, toks[2].scopes)
	}
	users, err := s.basicUsers()
	if err != nil || len(users) != 3 || users[2].name != "carol" || !users[1].scopes.Has(VnflcmRead) {
		t.Fatalf("users: %+v %v", users, err)
	}

	const secretTok = "this-token-must-not-appear-in-errors"
	for _, bad := range []Settings{
		{Tokens: "short:vnflcm:read"},
		{Tokens: secretTok},
		{Tokens: secretTok + ":"},
		{Tokens: secretTok + ":vnflcm:reed"},
		{Tokens: "vnflcm:read:" + secretTok},
		{Tokens: secretTok + ":vnflcm:read " + secretTok + ":vim:read"},
		{TokensFile: filepath.Join(dir, "missing")},
	} {
		_, err := bad.staticTokens()
		if err == nil {
			t.Errorf("%+v accepted", bad)
		} else if strings.Contains(err.Error(), secretTok) {
			t.Errorf("the error echoes the token: %v", err)
		}
	}
	for _, bad := range []Settings{
		{BasicUsers: "alice:plaintext:vnflcm:read"},
		{BasicUsers: "alice:" + h},
		{BasicUsers: ":" + h + ":vnflcm:read"},
		{BasicUsers: "alice:" + h + ":nope"},
		{BasicUsers: "alice:" + h + ":*;alice:" + h + ":*"},
	} {
		if _, err := bad.basicUsers(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := (Settings{KeystoneRoles: "admin"}).keystoneRoles(); err == nil {
		t.Error("role without scopes accepted")
	}
}

func TestFailureLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newFailureLimiter(3)
	l.now = func() time.Time { return now }
	for i := 0; i < 3; i++ {
		if b, _ := l.blocked("a"); b {
			t.Fatalf("blocked after %d failures", i)
		}
		l.fail("a")
	}
	b, wait := l.blocked("a")
	if !b || wait <= 0 || wait > 20*time.Second {
		t.Fatalf("after 3 failures: blocked %v, wait %s", b, wait)
	}
	if b, _ := l.blocked("b"); b {
		t.Error("another address is blocked")
	}
	now = now.Add(wait)
	if b, _ := l.blocked("a"); b {
		t.Error("still blocked after the wait")
	}
	if newFailureLimiter(0) != nil {
		t.Error("0 should disable the limiter")
	}
	var nl *failureLimiter
	nl.fail("a")
	if b, _ := nl.blocked("a"); b {
		t.Error("a nil limiter blocks")
	}
}

func newAuth(t *testing.T, s Settings, o Options) *Authenticator {
	t.Helper()
	if s.Realm == "" {
		s.Realm = "test"
	}
	if s.TokenTTL == 0 {
		s.TokenTTL = time.Minute
	}
	if s.KeystoneRoles == "" && s.KeystoneURL != "" {
		s.KeystoneRoles = "admin=*;reader=vnflcm:read"
	}
	if s.KeystoneCacheTTL == 0 {
		s.KeystoneCacheTTL = time.Minute
	}
	s.Mode = "on"
	var logs bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	a, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func basicHeader(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

func TestAuthenticateStaticAndBasic(t *testing.T) {
	h, _ := HashPasswordIter("alice-pw", 2000)
	a := newAuth(t, Settings{Tokens: "tok-read-0123456789:vnflcm:read", BasicUsers: "alice:" + h + ":vnfpkgm:write"}, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		name, authz, xat string
		status           int
		who              string
	}{
		{"bearer", "Bearer tok-read-0123456789", "", 0, "static-token-1"},
		{"bearer scheme case", "bearer tok-read-0123456789", "", 0, "static-token-1"},
		{"x-auth-token", "", "tok-read-0123456789", 0, "static-token-1"},
		{"basic", basicHeader("alice", "alice-pw"), "", 0, "alice"},
		{"basic again (cached)", basicHeader("alice", "alice-pw"), "", 0, "alice"},
		{"authorization wins", basicHeader("alice", "alice-pw"), "notused", 0, "alice"},
		{"nothing", "", "", 401, ""},
		{"wrong bearer", "Bearer tok-read-012345678", "", 401, ""},
		{"wrong x-auth-token", "", "nope", 401, ""},
		{"notused", "", "notused", 401, ""},
		{"basic wrong password", basicHeader("alice", "alice-pW"), "", 401, ""},
		{"basic unknown user", basicHeader("mallory", "alice-pw"), "", 401, ""},
		{"basic garbage", "Basic !!!", "", 401, ""},
		{"other scheme", "Digest x", "", 401, ""},
		{"bare token", "tok-read-0123456789", "", 401, ""},
		{"empty bearer", "Bearer ", "", 401, ""},
	} {
		p, err := a.Authenticate(ctx, c.authz, c.xat, "192.0.2.1")
		switch {
		case c.status == 0 && (err != nil || p.Name != c.who):
			t.Errorf("%s: %+v %v, want %s", c.name, p, err, c.who)
		case c.status != 0 && (err == nil || err.Status != c.status):
			t.Errorf("%s: %+v %v, want %d", c.name, p, err, c.status)
		case err != nil && strings.Contains(err.Detail, "tok-read"):
			t.Errorf("%s: the detail echoes the token: %s", c.name, err.Detail)
		}
	}
	ch := a.Challenges("invalid_token", "", "")
	if len(ch) != 2 || ch[0] != `Bearer realm="test", error="invalid_token"` || ch[1] != `Basic realm="test", charset="UTF-8"` {
		t.Errorf("challenges %q", ch)
	}
}

// An unknown user costs the same PBKDF2 work as a known user with a wrong
// password, so response times do not tell which user names exist.
func TestBasicWorkDoesNotRevealUsers(t *testing.T) {
	weak, _ := HashPasswordIter("pw", 1000)
	strong, _ := HashPasswordIter("pw", 3000)
	a := newAuth(t, Settings{BasicUsers: "alice:" + weak + ":* bob:" + strong + ":*"}, Options{})
	var work []int
	onVerify = func(iter int) { work = append(work, iter) }
	t.Cleanup(func() { onVerify = nil })
	ctx := context.Background()
	for _, user := range []string{"bob", "nobody", ""} {
		work = nil
		if _, err := a.Authenticate(ctx, basicHeader(user, "wrong"), "", "198.51.100.1"); err == nil {
			t.Fatal("wrong password accepted")
		}
		if len(work) != 1 || work[0] != 3000 {
			t.Errorf("user %q: PBKDF2 work %v, want [3000] (the costliest configured hash)", user, work)
		}
	}
	// A good password is checked once, then remembered for a while.
	for i := 0; i < 3; i++ {
		work = nil
		if _, err := a.Authenticate(ctx, basicHeader("alice", "pw"), "", "198.51.100.1"); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; len(work) != want {
			t.Errorf("login %d: %d PBKDF2 checks, want %d", i, len(work), want)
		}
	}
	// ... but not for another password of the same user.
	work = nil
	if _, err := a.Authenticate(ctx, basicHeader("alice", "pw2"), "", "198.51.100.1"); err == nil || len(work) != 1 {
		t.Errorf("another password after a good login: %v, %d checks", err, len(work))
	}
}

func TestAuthenticateRateLimitsFailures(t *testing.T) {
	a := newAuth(t, Settings{Tokens: "tok-good-0123456789:*", MaxFailures: 3}, Options{})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := a.Authenticate(ctx, "Bearer bad", "", "203.0.113.9"); err == nil || err.Status != 401 {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, err := a.Authenticate(ctx, "Bearer tok-good-0123456789", "", "203.0.113.9")
	if err == nil || err.Status != http.StatusTooManyRequests || err.RetryAfter < time.Second {
		t.Fatalf("after 3 failures: %+v", err)
	}
	if _, err := a.Authenticate(ctx, "Bearer tok-good-0123456789", "", "203.0.113.10"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// Missing credentials are not failures to count.
	for i := 0; i < 5; i++ {
		_, _ = a.Authenticate(ctx, "", "", "203.0.113.11")
	}
	if _, err := a.Authenticate(ctx, "Bearer tok-good-0123456789", "", "203.0.113.11"); err != nil {
		t.Fatalf("after requests without credentials: %v", err)
	}
}

// fakeKeystone answers GET /v3/auth/tokens like Keystone does.
func fakeKeystone(t *testing.T, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v3/auth/tokens" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		subj := r.Header.Get("X-Subject-Token")
		if r.Header.Get("X-Auth-Token") != subj {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		var roles []map[string]string
		project := map[string]string{"id": "p1", "name": "nfv"}
		exp := time.Now().Add(time.Hour)
		switch subj {
		case "ks-admin":
			roles = []map[string]string{{"name": "admin"}, {"name": "reader"}}
		case "ks-reader":
			roles = []map[string]string{{"name": "Reader"}}
		case "ks-member":
			roles = []map[string]string{{"name": "member"}, {"name": "reader"}}
		case "ks-other-project":
			roles = []map[string]string{{"name": "admin"}}
			project = map[string]string{"id": "p2", "name": "other"}
		case "ks-down":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":404,"message":"Could not find token"}}`))
			return
		}
		w.Header().Set("X-Subject-Token", subj)
		_ = json.NewEncoder(w).Encode(map[string]any{"token": map[string]any{"expires_at": exp.UTC().Format(time.RFC3339),
			"user": map[string]any{"id": "u1", "name": "ks-user"}, "project": project, "roles": roles}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestKeystoneTokens(t *testing.T) {
	var calls atomic.Int32
	ks := fakeKeystone(t, &calls)
	a := newAuth(t, Settings{KeystoneURL: ks.URL + "/v3/", KeystoneProject: "nfv", Tokens: "tok-static-0123456789:vim:read"}, Options{})
	ctx := context.Background()

	p, err := a.Authenticate(ctx, "", "ks-admin", "192.0.2.7")
	if err != nil || p.Method != MethodKeystone || p.Name != "keystone:ks-user" || !p.Scopes.Has(VimWrite) {
		t.Fatalf("admin: %+v %v", p, err)
	}
	p, err = a.Authenticate(ctx, "Bearer ks-reader", "", "192.0.2.7")
	if err != nil || !p.Scopes.Has(VnflcmRead) || p.Scopes.Has(VnflcmWrite) {
		t.Fatalf("reader (role names are case-insensitive): %+v %v", p, err)
	}
	n := calls.Load()
	for i := 0; i < 5; i++ {
		if _, err := a.Authenticate(ctx, "", "ks-admin", "192.0.2.7"); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != n {
		t.Errorf("valid tokens are not cached: %d more Keystone calls", calls.Load()-n)
	}
	if _, err := a.Authenticate(ctx, "", "tok-static-0123456789", "192.0.2.7"); err != nil || calls.Load() != n {
		t.Errorf("a static token went to Keystone: %v", err)
	}
	for tok, status := range map[string]int{"ks-unknown": 401, "ks-other-project": 401, "ks-down": 503, AccessTokenPrefix + "x": 401} {
		if _, err := a.Authenticate(ctx, "", tok, "192.0.2.7"); err == nil || err.Status != status {
			t.Errorf("%s: %+v, want %d", tok, err, status)
		}
	}
	n = calls.Load()
	_, _ = a.Authenticate(ctx, "", "ks-unknown", "192.0.2.7")
	_, _ = a.Authenticate(ctx, "", "ks-down", "192.0.2.7")
	if got := calls.Load() - n; got != 1 {
		t.Errorf("rejected tokens are cached briefly, outages not: %d calls, want 1", got)
	}
	// Keystone unreachable: 503, not 401.
	ks.Close()
	if _, err := a.Authenticate(ctx, "", "ks-new", "192.0.2.7"); err == nil || err.Status != 503 {
		t.Errorf("keystone down: %+v", err)
	}
}

// TestKeystoneProjects: only tokens of the configured projects (by name or
// id), or of any project when that is said explicitly.
func TestKeystoneProjects(t *testing.T) {
	var calls atomic.Int32
	ks := fakeKeystone(t, &calls)
	ctx := context.Background()
	for _, tc := range []struct {
		s          Settings
		ok, refuse []string
	}{
		{Settings{KeystoneProject: "nfv"}, []string{"ks-admin"}, []string{"ks-other-project"}},
		{Settings{KeystoneProject: "p2"}, []string{"ks-other-project"}, []string{"ks-admin"}},
		{Settings{KeystoneProject: "nfv, p2"}, []string{"ks-admin", "ks-other-project"}, nil},
		{Settings{KeystoneAnyProject: true}, []string{"ks-admin", "ks-other-project"}, nil},
	} {
		tc.s.KeystoneURL = ks.URL + "/v3"
		a := newAuth(t, tc.s, Options{})
		for _, tok := range tc.ok {
			if _, err := a.Authenticate(ctx, "", tok, "192.0.2.7"); err != nil {
				t.Errorf("%+v: %s refused: %v", tc.s, tok, err)
			}
		}
		for _, tok := range tc.refuse {
			if _, err := a.Authenticate(ctx, "", tok, "192.0.2.7"); err == nil || err.Status != 401 || !strings.Contains(err.Detail, "accepted project") {
				t.Errorf("%+v: %s: %+v, want 401", tc.s, tok, err)
			}
		}
	}
}

// TestKeystoneRolesMapOnlyAsConfigured: Keystone's everyday role, member,
// gets no write scope unless the role map gives it one; roles not in the map
// give nothing.
func TestKeystoneRolesMapOnlyAsConfigured(t *testing.T) {
	var calls atomic.Int32
	ks := fakeKeystone(t, &calls)
	ctx := context.Background()
	for _, tc := range []struct {
		roles     string
		has, lack []string
	}{
		{"admin=*;reader=vnflcm:read", []string{VnflcmRead}, []string{VnflcmWrite, VnfpkgmWrite, VimWrite, VimRead}},
		{"admin=*", nil, []string{VnflcmRead, VnflcmWrite, VnfpkgmWrite, VimWrite}},
		{"member=vnflcm:write,vnfpkgm:read", []string{VnflcmWrite, VnfpkgmRead}, []string{VnfpkgmWrite, VimWrite, VimRead}},
	} {
		a := newAuth(t, Settings{KeystoneURL: ks.URL + "/v3", KeystoneProject: "nfv", KeystoneRoles: tc.roles}, Options{})
		p, err := a.Authenticate(ctx, "", "ks-member", "192.0.2.7")
		if err != nil {
			t.Fatalf("%s: %v", tc.roles, err)
		}
		for _, s := range tc.has {
			if !p.Scopes.Has(s) {
				t.Errorf("roles %q: member lacks %s: %v", tc.roles, s, p.Scopes)
			}
		}
		for _, s := range tc.lack {
			if p.Scopes.Has(s) {
				t.Errorf("roles %q: member has %s: %v", tc.roles, s, p.Scopes)
			}
		}
	}
}

// TestKeystoneHalfConfiguredIsRefused: the server does not start with a
// Keystone mode that would accept more than the operator said.
func TestKeystoneHalfConfiguredIsRefused(t *testing.T) {
	url := "http://127.0.0.1:5000/v3"
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{KeystoneURL: url, KeystoneRoles: "admin=*"}, "VNFM_AUTH_KEYSTONE_ANY_PROJECT=true"},
		{Settings{KeystoneURL: url, KeystoneProject: "nfv"}, "VNFM_AUTH_KEYSTONE_ROLES is not"},
		{Settings{KeystoneURL: url, KeystoneProject: "nfv", KeystoneAnyProject: true, KeystoneRoles: "admin=*"}, "contradict"},
		{Settings{KeystoneURL: url, KeystoneProject: "nfv", KeystoneRoles: "admin"}, "want role=scope"},
		{Settings{KeystoneProject: "nfv"}, "without VNFM_AUTH_KEYSTONE_URL"},
		{Settings{KeystoneRoles: "admin=*"}, "without VNFM_AUTH_KEYSTONE_URL"},
		{Settings{KeystoneAnyProject: true}, "without VNFM_AUTH_KEYSTONE_URL"},
	} {
		err := tc.s.CheckKeystone()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
		tc.s.Mode, tc.s.Realm, tc.s.TokenTTL = "on", "r", time.Minute
		if _, err := New(tc.s, Options{Listen: "0.0.0.0:1", Logger: slog.New(slog.DiscardHandler)}); err == nil {
			t.Errorf("New accepted %+v", tc.s)
		}
	}
	for _, ok := range []Settings{{}, {KeystoneURL: url, KeystoneProject: "nfv", KeystoneRoles: "admin=*"},
		{KeystoneURL: url, KeystoneAnyProject: true, KeystoneRoles: "reader=vnflcm:read"}} {
		if err := ok.CheckKeystone(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	for _, s := range []Settings{
		{Mode: "on", Realm: `a"b`, TokenTTL: time.Minute},
		{Mode: "on", Realm: "r", TokenTTL: 0},
		{Mode: "on", Realm: "r", TokenTTL: time.Minute, KeystoneURL: "ftp://x", KeystoneRoles: "admin=*"},
		{Mode: "on", Realm: "r", TokenTTL: time.Minute, Tokens: "x:y"},
		{Mode: "sometimes"},
	} {
		if _, err := New(s, Options{Listen: "127.0.0.1:1", Logger: slog.New(slog.DiscardHandler)}); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	a, err := New(Settings{}, Options{Listen: "127.0.0.1:9890", Logger: slog.New(slog.DiscardHandler)})
	if a != nil || err != nil {
		t.Errorf("loopback default: %v %v, want auth off", a, err)
	}
}

func TestClientAuth(t *testing.T) {
	basic := basicHeader("c%3A1", "s%2B") // RFC 6749 2.3.1: form-encoded, then base64
	for _, c := range []struct {
		name, authz, id, secret string
		wantID, wantSecret      string
		code                    string
	}{
		{"basic", basic, "", "", "c:1", "s+", ""},
		{"basic with matching client_id", basicHeader("c", "s"), "c", "", "c", "s", ""},
		{"form", "", "c", "s", "c", "s", ""},
		{"both", basicHeader("c", "s"), "c", "s", "", "", "invalid_request"},
		{"different ids", basicHeader("c", "s"), "d", "", "", "", "invalid_request"},
		{"none", "", "", "", "", "", "invalid_client"},
		{"no secret", "", "c", "", "", "", "invalid_client"},
		{"bearer", "Bearer x", "", "", "", "", "invalid_client"},
		{"bad base64", "Basic %%%", "", "", "", "", "invalid_client"},
	} {
		id, secret, oe := ClientAuth(c.authz, c.id, c.secret)
		switch {
		case c.code == "" && (oe != nil || id != c.wantID || secret != c.wantSecret):
			t.Errorf("%s: %q %q %v", c.name, id, secret, oe)
		case c.code != "" && (oe == nil || oe.Code != c.code):
			t.Errorf("%s: %v, want %s", c.name, oe, c.code)
		}
	}
}
