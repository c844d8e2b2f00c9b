package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func box(t *testing.T, keys ...string) *secrets.Box {
	t.Helper()
	var raw [][]byte
	for _, k := range keys {
		b, err := secrets.ParseKey(k)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	b, err := secrets.NewBox(raw[0], raw[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResealAll: after a rotation every stored document opens with the new
// key alone, each value still bound to its own place.
func TestResealAll(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	k1, k2 := secrets.NewKey(), secrets.NewKey()
	old := box(t, k1)
	sealDoc := func(v any, at secrets.Place) []byte {
		out, err := old.SealDoc(v, at)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		return b
	}

	instID := uuid.NewString()
	var md map[string]any
	_ = json.Unmarshal(sealDoc(map[string]any{"api_token": "tok-md", "owner": "ops"}, store.InstancePlace(instID).Key("metadata")), &md)
	if _, err := st.CreateInstance(ctx, &model.VnfInstance{ID: instID, VnfdID: lcmtest.VnfdID, VnfProvider: "p", VnfProductName: "n",
		VnfSoftwareVersion: "1", VnfdVersion: "1", Metadata: md}); err != nil {
		t.Fatal(err)
	}
	opID := uuid.NewString()
	params := sealDoc(map[string]any{"additionalParams": map[string]any{"node_password": "pw-op"}}, store.OpPlace(opID, "operation_params"))
	driverParams := sealDoc(map[string]any{"kubeadm": map[string]any{"master_node": map[string]any{"password": "pw-driver"}}}, store.OpPlace(opID, "driver_params"))
	if _, err := st.CreateOpOcc(ctx, store.NewOp{ID: opID, VnfInstanceID: instID, Operation: model.OpInstantiate, OperationParams: params,
		DriverParams: driverParams, LeaseOwner: "e/1", Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// The working copy is a text column (migration 0020), the others jsonb.
	work := sealDoc(map[string]any{"vimConnectionInfo": map[string]any{"v": map[string]any{"password": "pw-work"}}}, store.OpPlace(opID, "work"))
	if res := st.WriteOps(ctx, []store.OpWrite{{OpOccID: opID, Owner: "e/1", Start: true, Work: work}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	subID := uuid.NewString()
	auth := sealDoc(map[string]any{"paramsBasic": map[string]any{"userName": "u", "password": "pw-sub"}}, store.SubscriptionAuthPlace(subID))
	if _, err := st.CreateSubscription(ctx, &store.Subscription{ID: subID, CallbackURI: "http://nfvo.example/cb", Authentication: auth}); err != nil {
		t.Fatal(err)
	}

	rotating := box(t, k2, k1)
	n, err := st.ResealAll(ctx, rotating.ResealJSON)
	if err != nil || n != 5 {
		t.Fatalf("re-sealed %d documents (%v), want 5", n, err)
	}
	if n, err := st.ResealAll(ctx, rotating.ResealJSON); err != nil || n != 0 {
		t.Fatalf("a second rotation changed %d documents (%v)", n, err)
	}

	onlyNew := box(t, k2)
	in, err := st.GetInstance(ctx, instID)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := onlyNew.OpenDoc(anyOf(t, in.Metadata), store.InstancePlace(instID).Key("metadata"))
	if err != nil || opened.(map[string]any)["api_token"] != "tok-md" {
		t.Fatalf("instance metadata after rotation: %v %v", opened, err)
	}
	op, err := st.GetOpOcc(ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := onlyNew.OpenJSON(op.OperationParams, store.OpPlace(opID, "operation_params"))
	if err != nil || !strings.Contains(string(p), "pw-op") {
		t.Fatalf("operation params after rotation: %s %v", p, err)
	}
	if d, err := onlyNew.OpenJSON(op.DriverParams, store.OpPlace(opID, "driver_params")); err != nil || !strings.Contains(string(d), "pw-driver") {
		t.Fatalf("drivers' parameters after rotation: %s %v", d, err)
	}
	if w, err := onlyNew.OpenJSON(op.Work, store.OpPlace(opID, "work")); err != nil || !strings.Contains(string(w), "pw-work") {
		t.Fatalf("working copy after rotation: %s %v", w, err)
	}
	// Still bound: the op's parameters do not open as another op's.
	if _, err := onlyNew.OpenJSON(op.OperationParams, store.OpPlace(uuid.NewString(), "operation_params")); err == nil {
		t.Fatal("re-sealed parameters open at another op occurrence")
	}
	sub, err := st.GetSubscription(ctx, subID)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := onlyNew.OpenJSON(sub.Authentication, store.SubscriptionAuthPlace(subID)); err != nil || !strings.Contains(string(a), "pw-sub") {
		t.Fatalf("subscription credentials after rotation: %s %v", a, err)
	}
}

func anyOf(t *testing.T, v any) any {
	t.Helper()
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
