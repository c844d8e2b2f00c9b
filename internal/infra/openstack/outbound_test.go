package openstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
)

// catalogKeystone answers every token request with a token whose catalog
// puts Heat, Nova and Neutron at serviceURL: a Keystone the client named
// can name any address there.
func catalogKeystone(t *testing.T, serviceURL string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cat []map[string]any
		for _, typ := range []string{"orchestration", "compute", "network"} {
			cat = append(cat, map[string]any{"type": typ, "name": typ, "endpoints": []map[string]any{
				{"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": serviceURL}}})
		}
		w.Header().Set("X-Subject-Token", "tok")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"token": map[string]any{
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "catalog": cat,
			"user": map[string]any{"id": "u", "name": "mine"}, "project": map[string]any{"id": "p", "name": "p"}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSuppliedVimConnectionsFollowTheOutboundPolicy: a vimConnectionInfo
// entry with its own accessInfo and no vimId names a Keystone of the
// client's choosing, and that Keystone names the endpoints of its catalog.
// Their connections go through the outbound-URL policy (refused addresses
// before any dial, no redirects, no remote bodies in errors); a registered
// VIM's do not.
func TestSuppliedVimConnectionsFollowTheOutboundPolicy(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(target.Close)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/v3/auth/tokens", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"internal-db.corp:5432 said no"}}`))
	}))
	t.Cleanup(chatty.Close)
	sim, err := ossim.New(ossim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim)
	t.Cleanup(func() { simSrv.Close(); _ = sim.Close() })

	conn := func(vimID, endpoint string) *model.VimConnectionInfo {
		return &model.VimConnectionInfo{ID: "v", VimID: vimID, VimType: VimType, InterfaceInfo: map[string]any{"endpoint": endpoint},
			AccessInfo: map[string]any{"username": "admin", "password": "secret", "project": "admin", "region": "RegionOne"}}
	}
	// The refused address is a loopback one the policy denies: should the
	// driver bypass the policy, the connection still stays on this machine.
	pol := outboundtest.Policy(200 * time.Millisecond)
	pol.Deny = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	lo := New(Options{Outbound: pol})
	denied := strings.Replace(chatty.URL, "127.0.0.1", "127.0.0.2", 1)
	strict := New(Options{}) // the zero policy: no loopback
	connect := func(d *Driver, v *model.VimConnectionInfo) (*clients, error) {
		a, err := accessOf(v)
		if err != nil {
			t.Fatal(err)
		}
		return d.clientsFor(ctx, a)
	}
	for _, tc := range []struct {
		name string
		d    *Driver
		v    *model.VimConnectionInfo
		want string
	}{
		{"refused Keystone", lo, conn("", denied+"/v3"), "outbound-URL policy refuses 127.0.0.2"},
		{"loopback refused by the policy", strict, conn("", simSrv.URL+"/v3"), "a loopback address"},
		{"redirect", lo, conn("", redirect.URL+"/v3"), "redirects are not followed"},
		{"remote body", lo, conn("", chatty.URL+"/v3"), "answered 401 Unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := connect(tc.d, tc.v)
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

	// A supplied Keystone the policy allows works, and so does its catalog on loopback.
	c, err := connect(lo, conn("", simSrv.URL+"/v3"))
	if err != nil {
		t.Fatalf("supplied connection to the loopback simulator: %v", err)
	}
	if _, err := c.nova.Get(ctx, c.nova.ServiceURL("flavors"), nil, nil); err != nil {
		t.Fatalf("Nova through the policy: %v", err)
	}
	// An error answer's body is not quoted (gophercloud would).
	_, err = c.nova.Get(ctx, c.nova.ServiceURL("servers", "no-such-server"), nil, nil)
	if err == nil || strings.Contains(err.Error(), "no-such-server could not be found") || strings.Contains(err.Error(), "itemNotFound") {
		t.Fatalf("Nova's 404 through a supplied connection: %v", err)
	}
	// Its catalog cannot send the VNFM to a refused address either
	// (gophercloud reads Heat's version document when it makes the client).
	_, err = connect(lo, conn("", catalogKeystone(t, denied+"/heat").URL+"/v3"))
	if err == nil || !strings.Contains(err.Error(), "outbound-URL policy refuses 127.0.0.2") {
		t.Fatalf("Heat at a refused address from a supplied catalog: %v", err)
	}

	// A registered VIM (vimId set) is the VNFM's own business: the policy does not apply.
	if _, err := connect(strict, conn("0d0e4a36-2a4c-4d7a-bf8b-2b7c0a3a0c01", simSrv.URL+"/v3")); err != nil {
		t.Fatalf("registered VIM on loopback under the zero policy: %v", err)
	}
}

// TestQuietErrorsKeepOnlyStackExists: error bodies of supplied connections
// are dropped, except Heat's StackExists conflict, kept as that word.
func TestQuietErrorsKeepOnlyStackExists(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exists":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"type":"StackExists","message":"internal-db.corp"}}`))
		case "/conflict":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`internal-db.corp`))
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`internal-db.corp`))
		default:
			_, _ = w.Write([]byte(`{"ok":"internal-db.corp"}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := &http.Client{Transport: quietErrors{http.DefaultTransport}}
	for path, want := range map[string]string{"/exists": "StackExists", "/conflict": "", "/missing": "", "/": `{"ok":"internal-db.corp"}`} {
		res, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) != want {
			t.Errorf("%s: body %q, want %q", path, b, want)
		}
	}
}
