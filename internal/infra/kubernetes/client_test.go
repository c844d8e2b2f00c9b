package kubernetes

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc/oidctest"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
)

// TestConnectionsFollowTheOutboundPolicy: a VIM's API server endpoint is
// client-registered, so the driver connects only through the server's
// outbound-URL policy; a refused address gets no request at all.
func TestConnectionsFollowTheOutboundPolicy(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	vim := &model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": srv.URL},
		AccessInfo: map[string]any{"bearer_token": "t"}}
	get := getVia(t, vim, srv.URL+"/version")
	refuse := outboundtest.Policy(0)
	refuse.AllowLoopback = false
	var refused *outbound.RefusedError
	if err := get(refuse); !errors.As(err, &refused) || hits.Load() != 0 {
		t.Errorf("a policy refusing loopback: %v (%d requests reached the server); want a RefusedError and none", err, hits.Load())
	}
	if err := get(outboundtest.Policy(0)); err != nil || hits.Load() != 1 {
		t.Errorf("a policy allowing loopback: %v (%d requests)", err, hits.Load())
	}
}

// getVia returns a GET of url by the driver's client of vim under a policy.
func getVia(t *testing.T, vim *model.VimConnectionInfo, url string) func(*outbound.Policy) error {
	return func(p *outbound.Policy) error {
		cfg, err := New(Options{Outbound: p}).restConfig(vim)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
}

// TestOIDCTokensFollowTheOutboundPolicy: a VIM connection with
// oidc_token_url gets its ID token through the outbound-URL policy too,
// trusting ssl_ca_cert for the provider's TLS, and sends it as the bearer
// token; a refused provider address gets no request, nor does the API.
func TestOIDCTokensFollowTheOutboundPolicy(t *testing.T) {
	idp, err := oidctest.Start("vnfm", "client-secret")
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	idp.AddUser("alice", "wonderland")
	var (
		mu   sync.Mutex
		auth []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	vim := &model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": srv.URL, "ssl_ca_cert": string(idp.CAPEM)},
		AccessInfo: map[string]any{"oidc_token_url": idp.TokenURL(), "username": "alice", "password": "wonderland",
			"client_id": "vnfm", "client_secret": "client-secret"}}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(auth)
	}
	get := getVia(t, vim, srv.URL+"/version")
	refuse := outboundtest.Policy(0)
	refuse.AllowLoopback = false
	var refused *outbound.RefusedError
	if err := get(refuse); !errors.As(err, &refused) || idp.Issued() != 0 || len(seen()) != 0 {
		t.Errorf("a policy refusing loopback: %v (%d tokens issued, %d API requests); want a RefusedError and none", err, idp.Issued(), len(seen()))
	}
	if err := get(outboundtest.Policy(0)); err != nil || idp.Issued() != 1 {
		t.Fatalf("a policy allowing loopback: %v (%d tokens issued)", err, idp.Issued())
	}
	if a := seen(); len(a) != 1 || !strings.HasPrefix(a[0], "Bearer ey") {
		t.Errorf("the API server saw Authorization %q, want the ID token as bearer", a)
	}
}
