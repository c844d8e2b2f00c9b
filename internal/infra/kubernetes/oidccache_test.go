package kubernetes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
)

// TestOIDCSourcesAreSharedAndDropped: connections with the same OIDC
// credentials share one ID token source; a source nobody asked for in an
// hour is dropped and its idle connection to the provider closed, so VIMs
// whose credentials changed or that were deleted leave nothing behind.
func TestOIDCSourcesAreSharedAndDropped(t *testing.T) {
	var mu sync.Mutex
	closed := 0
	idp := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id_token":"header.payload.signature","expires_in":300}`))
	}))
	idp.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			mu.Lock()
			closed++
			mu.Unlock()
		}
	}
	idp.Start()
	defer idp.Close()

	d := New(Options{})
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	d.oidc.now = func() time.Time { return now }
	vim := func(password string) *model.VimConnectionInfo {
		return &model.VimConnectionInfo{ID: "vim-" + password, VimType: "kubernetes",
			AccessInfo: map[string]any{"oidc_token_url": idp.URL + "/token", "username": "alice", "password": password, "client_id": "vnfm"}}
	}
	get := func(password string) *oidc.Source {
		t.Helper()
		s, err := d.oidcSource(vim(password), nil, false)
		if err != nil {
			t.Fatalf("oidcSource(%s): %v", password, err)
		}
		return s
	}

	a, b := get("a"), get("b")
	if a == b {
		t.Fatal("different passwords share one token source")
	}
	if get("a") != a {
		t.Fatal("the same credentials got a second token source")
	}
	if _, err := d.oidcSource(vim("a"), []byte("not a certificate"), false); err == nil ||
		!strings.Contains(err.Error(), "ssl_ca_cert holds no PEM certificate") {
		t.Fatalf("a CA that is no PEM: %v", err)
	}
	if n := d.oidc.len(); n != 2 {
		t.Fatalf("%d sources kept, want 2 (a source that could not be made is not kept)", n)
	}
	// b fetches a token, leaving a keep-alive connection to the provider.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.Token(ctx); err != nil {
		t.Fatal(err)
	}

	now = now.Add(50 * time.Minute)
	get("a") // a is in use, b is not
	now = now.Add(20 * time.Minute)
	c := get("c") // the sweep: b unused for 70 minutes
	if n := d.oidc.len(); n != 2 {
		t.Fatalf("%d sources kept after b's hour unused, want 2 (a and c)", n)
	}
	if get("a") != a || get("c") != c {
		t.Fatal("a source in use was dropped")
	}
	if get("b") == b {
		t.Fatal("b's dropped source came back")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := closed
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the provider saw %d connections closed, want 1 (the dropped source's)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
