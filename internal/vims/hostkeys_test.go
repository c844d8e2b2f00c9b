package vims

import (
	"context"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// TestVimHostKeyPolicy: a VIM's extra.ssh_host_key_policy (published or
// tofu) is checked at registration and handed to the operations on the VIM
// in the connection's extra; pinned and unknown values are refused.
func TestVimHostKeyPolicy(t *testing.T) {
	w := newVimWorld(t)
	ctx := context.Background()
	for _, bad := range []string{`{"ssh_host_key_policy":"pinned"}`, `{"ssh_host_key_policy":"trust-me"}`, `{"ssh_host_key_policy":7}`} {
		if _, err := w.svc.Register(ctx, []byte(w.openstackBody("bad", "devstack", bad)), true); err == nil || !strings.Contains(err.Error(), "ssh_host_key_policy") {
			t.Errorf("extra %s: %v", bad, err)
		}
	}
	v, err := w.svc.Register(ctx, []byte(w.openstackBody("lab", "devstack", `{"ssh_host_key_policy":"TOFU"}`)), true)
	if err != nil {
		t.Fatal(err)
	}
	conns, err := w.svc.Resolve(ctx, []model.VimConnectionInfo{{ID: "c", VimID: v.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if got := conns[0].Extra["ssh_host_key_policy"]; got != "tofu" {
		t.Fatalf("connection extra %v", conns[0].Extra)
	}
	plain, err := w.svc.Register(ctx, []byte(w.openstackBody("prod", "devstack", "")), true)
	if err != nil {
		t.Fatal(err)
	}
	conns, err = w.svc.Resolve(ctx, []model.VimConnectionInfo{{ID: "c", VimID: plain.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, set := conns[0].Extra["ssh_host_key_policy"]; set {
		t.Fatalf("a VIM without a policy hands one on: %v", conns[0].Extra)
	}
}
