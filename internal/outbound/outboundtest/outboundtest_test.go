package outboundtest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
)

// TestNothingLeavesLoopback: the dialer refuses every non-loopback address
// it is handed (it is called directly, as a policy that let the address
// through would call it), the resolver answers only localhost, and loopback
// servers are reached.
func TestNothingLeavesLoopback(t *testing.T) {
	p := Policy(0)
	for _, addr := range []string{"192.0.2.1:80", "[2001:db8::1]:443", "10.0.0.1:5432"} {
		if _, err := p.Dial(context.Background(), "tcp", addr); err == nil || !strings.Contains(err.Error(), "never leave loopback") {
			t.Fatalf("%s: %v", addr, err)
		}
		if !slices.Contains(Strays(), addr) {
			t.Fatalf("%s not recorded: %v", addr, Strays())
		}
	}
	if _, err := p.Resolver.LookupNetIP(context.Background(), "ip", "nfvo.example"); err == nil {
		t.Fatal("resolved a name other than localhost")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		res, err := p.Client(outbound.ClientOptions{}).Get(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: %d", u, res.StatusCode)
		}
	}
	// The policy itself still refuses before the dialer is asked.
	_, err := p.Client(outbound.ClientOptions{}).Get("http://169.254.169.254/latest/meta-data/")
	var re *outbound.RefusedError
	if !errors.As(err, &re) || slices.Contains(Strays(), "169.254.169.254:80") {
		t.Fatalf("metadata: %v, strays %v", err, Strays())
	}
}
