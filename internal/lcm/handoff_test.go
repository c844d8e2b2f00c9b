package lcm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// A handed-over instance is taken once; what nobody takes is dropped after
// two generations, so operations run by other processes cost no memory.
func TestHandoffTakesOnceAndForgets(t *testing.T) {
	var h handoff
	in := &model.VnfInstance{}
	h.put("a", handed{in: in})
	if v := h.take("a"); v == nil || v.in != in {
		t.Fatalf("take a: %v", v)
	}
	if h.take("a") != nil {
		t.Fatal("taken twice")
	}
	h.put("old", handed{in: in})
	for i := range handoffGeneration {
		h.put(fmt.Sprint(i), handed{in: in})
	}
	if h.take("old") == nil {
		t.Fatal("the previous generation is still there")
	}
	h.put("kept", handed{in: in})
	for i := range 2 * handoffGeneration {
		h.put(fmt.Sprint("x", i), handed{in: in})
	}
	if h.take("kept") != nil {
		t.Fatal("an entry outlived two generations")
	}
	if n := len(h.cur) + len(h.old); n > 2*handoffGeneration {
		t.Fatalf("%d entries kept", n)
	}
}

// A run started at once by the process that accepted its instantiate uses
// the VIM accept resolved an instant before (handed.vims): it does not read
// and decrypt the VIM again (this run has no engine: resolving would fail).
func TestInstantiateRunUsesTheVimResolvedAtAccept(t *testing.T) {
	resolved := []model.VimConnectionInfo{{ID: "vim-1", VimID: "vim-1", VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3",
		AccessInfo: map[string]any{"password": "s3cret"}}}
	dop := &driverapi.Op{Instance: &model.VnfInstance{}, Vnfd: &model.Vnfd{ID: "d", Flavours: map[string]*model.Flavour{"simple": {ID: "simple"}}},
		Request: driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple"}}}
	r := &run{vims: resolved, vimsResolved: true}
	if err := prepareInstantiate(context.Background(), r, dop); err != nil {
		t.Fatal(err)
	}
	if got := dop.Instance.VimConnectionInfo; len(got) != 1 || got[0].VimID != "vim-1" || got[0].AccessInfo["password"] != "s3cret" {
		t.Fatalf("vimConnectionInfo %+v, want the one resolved at accept", got)
	}
}

// The first run of an operation accepted here takes the request accept
// decoded (handed.req) instead of decoding operation_params again; handed
// no request, it decodes what the op stores.
func TestRunTakesTheRequestAcceptDecoded(t *testing.T) {
	key, _ := secrets.ParseKey(secrets.NewKey())
	box, _ := secrets.NewBox(key)
	e := &Engine{svc: &Service{box: box}}
	for _, withReq := range []bool{true, false} {
		op := &store.OpOcc{VnfLcmOpOcc: model.VnfLcmOpOcc{ID: "op-1", VnfInstanceID: "inst-1", Operation: model.OpTerminate,
			OperationParams: json.RawMessage(`{"terminationType":"FORCEFUL"}`)}, Attempts: 1}
		h := &handed{in: &model.VnfInstance{ID: "inst-1"}, vnfd: &model.Vnfd{ID: "d"}}
		want := "FORCEFUL"
		if withReq {
			h.req, want = &driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "GRACEFUL"}}, "GRACEFUL"
		}
		r := &run{e: e, op: op, handed: h, log: slog.New(slog.DiscardHandler)}
		dop, _, err := r.load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := dop.Request.Terminate.TerminationType; got != want {
			t.Errorf("handed a request %v: the run's request says %s, want %s", withReq, got, want)
		}
	}
}
