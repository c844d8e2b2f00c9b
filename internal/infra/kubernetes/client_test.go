package kubernetes

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
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
	get := func(p *outbound.Policy) error {
		cfg, err := New(Options{Outbound: p}).restConfig(vim)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL + "/version")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
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
