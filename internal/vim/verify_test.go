package vim_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
	"github.com/mini-vnfm/mini-vnfm/internal/vim/vimtest"
)

// loopbackOK is the outbound policy of these tests: their servers are on
// 127.0.0.1. A short connect timeout keeps the probe's equal-time failures short.
var loopbackOK = outboundtest.Policy(200 * time.Millisecond)

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

func osCred(user, pw string) map[string]any {
	return map[string]any{"username": user, "password": pw, "user_domain_name": "Default", "cert_verify": "True"}
}

func TestVerifyOpenStack(t *testing.T) {
	ks := vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv")
	project := map[string]any{"name": "nfv", "project_domain_name": "Default"}
	dead := closedURL(t)
	tlsKS := httptest.NewTLSServer(ks.Server.Config.Handler)
	t.Cleanup(tlsKS.Close)
	for _, tc := range []struct {
		name    string
		url     string
		project map[string]any
		cred    map[string]any
		want    string // substring of the error; "" = success
	}{
		{"password token", ks.URL(), project, osCred("nfv_user", "devstack"), ""},
		{"domains default when empty (the CLI sends \"\")", ks.URL(), map[string]any{"name": "nfv", "project_domain_name": ""},
			map[string]any{"username": "nfv_user", "password": "devstack", "user_domain_name": "", "cert_verify": "True"}, ""},
		{"user and project ids", ks.URL(), map[string]any{"id": "pid-nfv"}, map[string]any{"user_id": "uid-nfv_user", "password": "devstack"}, ""},
		{"unversioned URL uses version discovery", ks.Server.URL, project, osCred("nfv_user", "devstack"), ""},
		{"wrong password", ks.URL(), project, osCred("nfv_user", "wrong"),
			`Keystone rejected the credentials for user "nfv_user" at ` + ks.URL() + ` (401 Unauthorized)`},
		{"unknown project", ks.URL(), map[string]any{"name": "other"}, osCred("nfv_user", "devstack"), `Keystone rejected the credentials for user "nfv_user"`},
		{"not a Keystone", ks.Server.URL + "/nothing/v3", project, osCred("nfv_user", "devstack"), "no Keystone v3 identity API at"},
		{"unreachable", dead + "/v3", project, osCred("nfv_user", "devstack"), "cannot reach Keystone at " + dead + "/v3: cannot connect to " + strings.TrimPrefix(dead, "http://") + " (nothing accepted the connection)"},
		{"no password", ks.URL(), project, map[string]any{"username": "nfv_user"}, "auth_cred.password is required"},
		{"no project", ks.URL(), map[string]any{}, osCred("nfv_user", "devstack"), "vim_project.name (or id) is required"},
		{"untrusted TLS", tlsKS.URL + "/v3", project, osCred("nfv_user", "devstack"), "TLS certificate is not signed by a CA the VNFM trusts"},
		{"explicitly insecure TLS", tlsKS.URL + "/v3", project,
			map[string]any{"username": "nfv_user", "password": "devstack", "user_domain_name": "Default", "cert_verify": "False"}, ""},
		{"bad cert_verify", ks.URL(), project, map[string]any{"username": "nfv_user", "password": "devstack", "cert_verify": "maybe"}, "cert_verify must be True or False"},
		{"https to a plain HTTP server", strings.Replace(ks.URL(), "http:", "https:", 1), project, osCred("nfv_user", "devstack"), "does not speak TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := vim.Verify(context.Background(), vim.Target{Type: vim.TypeOpenStack, AuthURL: tc.url, Project: tc.project, Cred: tc.cred, Outbound: loopbackOK})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				if !slices.Equal(res.Regions, []string{"RegionOne"}) {
					t.Fatalf("regions %v", res.Regions)
				}
				return
			}
			var ve *vim.Error
			if !errors.As(err, &ve) {
				t.Fatalf("want *vim.Error containing %q, got %v", tc.want, err)
			}
			if !strings.Contains(ve.Detail, tc.want) {
				t.Fatalf("detail %q\nwant it to contain %q", ve.Detail, tc.want)
			}
			if strings.Contains(ve.Detail, "devstack") {
				t.Fatalf("detail leaks the password: %q", ve.Detail)
			}
		})
	}
	// The token request has the shape Keystone expects.
	_, _ = vim.Verify(context.Background(), vim.Target{Type: vim.TypeOpenStack, AuthURL: ks.URL(), Project: project, Cred: osCred("nfv_user", "devstack"), Outbound: loopbackOK})
	body := ks.LastRequest()
	auth := body["auth"].(map[string]any)
	if m := auth["identity"].(map[string]any)["methods"].([]any); len(m) != 1 || m[0] != "password" {
		t.Fatalf("methods %v", m)
	}
	if p := auth["scope"].(map[string]any)["project"].(map[string]any); p["name"] != "nfv" || p["domain"].(map[string]any)["name"] != "Default" {
		t.Fatalf("scope %v", p)
	}
}

func TestVerifyOpenStackTimeout(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // runs first
	start := time.Now()
	_, err := vim.Verify(context.Background(), vim.Target{Type: vim.TypeOpenStack, AuthURL: hang.URL + "/v3",
		Project: map[string]any{"name": "p"}, Cred: osCred("u", "p"), Timeout: 300 * time.Millisecond, Outbound: loopbackOK})
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("timeout not applied: %s", time.Since(start))
	}
}

func TestVerifyKubernetes(t *testing.T) {
	k8s := vimtest.NewKubernetes(t, "tok123")
	k8s.Username, k8s.Password = "", ""
	ca := k8s.CAPEM()
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	oidc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("grant_type") != "password" || r.Form.Get("client_id") != "vnfm" || r.Form.Get("password") != "oidcpw" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid user credentials"}`))
			return
		}
		_, _ = w.Write([]byte(`{"id_token":"tok123","token_type":"Bearer"}`))
	}))
	t.Cleanup(oidc.Close)
	ns := map[string]any{"name": "default"}
	for _, tc := range []struct {
		name string
		url  string
		cred map[string]any
		want string
	}{
		{"bearer token with CA", k8s.URL(), map[string]any{"bearer_token": "tok123", "ssl_ca_cert": ca}, ""},
		{"explicitly insecure", k8s.URL(), map[string]any{"bearer_token": "tok123", "cert_verify": "False"}, ""},
		{"oidc password grant", k8s.URL(), map[string]any{"oidc_token_url": oidc.URL + "/token", "username": "alice", "password": "oidcpw", "client_id": "vnfm", "ssl_ca_cert": ca}, ""},
		{"wrong token", k8s.URL(), map[string]any{"bearer_token": "nope", "ssl_ca_cert": ca}, "the Kubernetes API at " + k8s.URL() + " rejected the bearer token (401 Unauthorized)"},
		{"no CA", k8s.URL(), map[string]any{"bearer_token": "tok123"}, "TLS certificate is not signed by a CA the VNFM trusts; give the CA certificate as ssl_ca_cert"},
		{"CA is not PEM", k8s.URL(), map[string]any{"bearer_token": "tok123", "ssl_ca_cert": "PEMDATA"}, "ssl_ca_cert holds no PEM certificate"},
		{"oidc rejected", k8s.URL(), map[string]any{"oidc_token_url": oidc.URL + "/token", "username": "alice", "password": "bad", "client_id": "vnfm", "ssl_ca_cert": ca},
			`the OIDC provider at ` + oidc.URL + ` rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_grant)`},
		{"no credentials", k8s.URL(), map[string]any{"ssl_ca_cert": ca}, "needs bearer_token"},
		{"not a Kubernetes API", plain.URL, map[string]any{"bearer_token": "tok123"}, "answered GET /api with 404 Not Found"},
		{"unreachable", strings.Replace(closedURL(t), "http:", "https:", 1), map[string]any{"bearer_token": "tok123"}, "(nothing accepted the connection)"},
		{"bad URL", "ftp://x", map[string]any{"bearer_token": "tok123"}, `auth_url "ftp://x" is not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := vim.Verify(context.Background(), vim.Target{Type: vim.TypeKubernetes, AuthURL: tc.url, Project: ns, Cred: tc.cred, Outbound: loopbackOK})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				if !slices.Equal(res.Regions, []string{"default", "kube-system"}) {
					t.Fatalf("regions %v", res.Regions)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v\nwant it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "tok123") || strings.Contains(err.Error(), "oidcpw") {
				t.Fatalf("error leaks a credential: %v", err)
			}
		})
	}
	k8s.Username, k8s.Password = "admin", "pw"
	if _, err := vim.Verify(context.Background(), vim.Target{Type: vim.TypeKubernetes, AuthURL: k8s.URL(), Project: ns,
		Cred: map[string]any{"username": "admin", "password": "pw", "ssl_ca_cert": ca}, Outbound: loopbackOK}); err != nil {
		t.Fatalf("basic auth: %v", err)
	}
}

func TestBool(t *testing.T) {
	for in, want := range map[any]bool{true: true, false: false, "True": true, "False": false, "false": false, "1": true, "no": false} {
		if got, err := vim.Bool(in); err != nil || got != want {
			t.Errorf("Bool(%v) = %v, %v", in, got, err)
		}
	}
	if _, err := vim.Bool("maybe"); err == nil {
		t.Error("Bool(maybe) accepted")
	}
}

// TestVerifyFollowsTheOutboundPolicy: verification is a request on the
// registering client's behalf: the policy refuses forbidden addresses
// before any dial, redirects are not followed, remote bodies are not shown.
func TestVerifyFollowsTheOutboundPolicy(t *testing.T) {
	ks := vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv")
	var hits atomic.Int32
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		ks.Server.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(counted.Close)
	redirect := httptest.NewServer(http.RedirectHandler(counted.URL+"/v3/auth/tokens", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"internal-db.corp:5432 said no"}}`))
	}))
	t.Cleanup(chatty.Close)
	project := map[string]any{"name": "nfv"}
	for _, tc := range []struct {
		name, url string
		policy    *outbound.Policy
		typ       string
		cred      map[string]any
		want      string
	}{
		{"metadata auth_url", "http://169.254.169.254/v3", loopbackOK, vim.TypeOpenStack, osCred("nfv_user", "devstack"), "outbound-URL policy refuses 169.254.169.254"},
		{"metadata API server", "https://[fd00:ec2::254]:6443", loopbackOK, vim.TypeKubernetes, map[string]any{"bearer_token": "tok123"}, "outbound-URL policy"},
		{"metadata OIDC endpoint", "https://127.0.0.1:1", loopbackOK, vim.TypeKubernetes,
			map[string]any{"oidc_token_url": "http://100.100.100.200/token", "username": "a", "password": "b", "client_id": "c"}, "oidc_token_url: the VNFM's outbound-URL policy"},
		{"loopback refused by default", ks.URL(), nil, vim.TypeOpenStack, osCred("nfv_user", "devstack"), "a loopback address"},
		{"redirect", redirect.URL + "/v3", loopbackOK, vim.TypeOpenStack, osCred("nfv_user", "devstack"), "redirects are not followed"},
		{"remote body", chatty.URL + "/v3", loopbackOK, vim.TypeOpenStack, osCred("nfv_user", "devstack"), "401 Unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vim.Verify(context.Background(), vim.Target{Type: tc.typ, AuthURL: tc.url, Project: project, Cred: tc.cred, Outbound: tc.policy})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "internal-db") {
				t.Fatalf("the remote's body is repeated: %v", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the redirect target was called %d times", n)
	}
}
