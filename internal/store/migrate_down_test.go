package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Going back to a build before migration 0013 keeps the notifications this
// build queued with only a body: each gets the event that build renders,
// and what it renders from the event is what this build sends.
func TestOutboxBodiesSurviveMigratingDown(t *testing.T) {
	ctx := context.Background()
	u := pgtest.NewDB(t)
	st := openAt(t, u)
	sub := subscribe(t, st)
	inst := lccn.Instance{ID: uuid.NewString(), Name: "n", VnfdID: "d", Provider: "p", ProductName: "pn", SoftwareVersion: "1", VnfdVersion: "1"}
	opEvent := func(op, state string, auto bool, o *model.VnfLcmOpOcc) lccn.Event {
		return lccn.Event{Type: lccn.TypeOpOcc, Instance: inst, OpOccID: uuid.NewString(), Operation: op, OperationState: state,
			IsAutomaticInvocation: auto, Op: o}
	}
	events := []lccn.Event{
		{Type: lccn.TypeCreation, Instance: inst},
		{Type: lccn.TypeDeletion, Instance: inst},
		opEvent(model.OpInstantiate, model.StateStarting, true, nil),
		opEvent(model.OpInstantiate, model.StateProcessing, false, &model.VnfLcmOpOcc{ChangedInfo: map[string]any{"x": 1}}),
		opEvent(model.OpInstantiate, model.StateCompleted, false, &model.VnfLcmOpOcc{
			ResourceChanges: &model.ResourceChanges{
				AffectedVnfcs: []model.AffectedVnfc{{ID: "w-0", VduID: "worker", ChangeType: "ADDED",
					ComputeResource: model.ResourceHandle{ResourceID: "srv-1"}, Metadata: map[string]any{"password": "p", "k": nil, "n": 1.5}}},
				AffectedVirtualLinks: []map[string]any{{"id": "vl", "metadata": map[string]any{"token": "t"}}},
			},
			ChangedExtConnectivity: []model.ExtVirtualLinkInfo{{ID: "ext", ResourceHandle: model.ResourceHandle{ResourceID: "net"}}},
		}),
		opEvent(model.OpModifyInfo, model.StateCompleted, false, &model.VnfLcmOpOcc{
			ChangedInfo: map[string]any{"metadata": map[string]any{"gone": nil, "api_token": "secret"}, "vnfInstanceName": "m"}}),
		opEvent(model.OpScale, model.StateFailedTemp, false, &model.VnfLcmOpOcc{
			Error:           &model.ProblemDetails{Status: 500, Title: "t", Detail: "infra.scale failed"},
			ResourceChanges: &model.ResourceChanges{AffectedVirtualStorages: []map[string]any{{"id": "s"}}}}),
		opEvent(model.OpTerminate, model.StateRolledBack, false, &model.VnfLcmOpOcc{}),
	}
	const base = "http://vnfm.example"
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	want := map[string][]byte{}
	for _, ev := range events {
		nid := uuid.NewString()
		body, err := lccn.Body(ev, nid)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, `INSERT INTO notification_outbox (notification_id, subscription_id, body) VALUES ($1, $2, $3)`,
			nid, sub, string(body)); err != nil {
			t.Fatal(err)
		}
		sent, err := lccn.AppendNotification(nil, body, base, sub, at)
		if err != nil {
			t.Fatal(err)
		}
		want[nid] = sent
	}
	st.Close()

	migrateDownTo(t, u, 12) // before 0013
	if v, _, _, err := store.MigrationVersion(ctx, u); err != nil || v != 12 {
		t.Fatalf("version %d (%v), want 12", v, err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT notification_id::text, event FROM notification_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var nid string
		var raw []byte
		if err := rows.Scan(&nid, &raw); err != nil {
			t.Fatal(err)
		}
		n++
		// What the older build does with a row: decode the event, render it.
		var ev lccn.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("%s: %v: %s", nid, err, raw)
		}
		got, err := json.Marshal(secrets.MaskDoc(lccn.Payload(ev, nid, sub, base, at)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[nid]) {
			t.Errorf("notification %s after migrating down:\n%s\nwant\n%s\n(event %s)", nid, got, want[nid], raw)
		}
	}
	if err := rows.Err(); err != nil || n != len(events) {
		t.Fatalf("%d of %d notifications left (%v)", n, len(events), err)
	}
	if err := store.MigrateUp(ctx, u); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// migrateDownTo migrates the database at u down to version v: the steps
// are counted from the version it is at, so a migration added later does
// not change which one a test goes back to.
func migrateDownTo(t *testing.T, u string, v uint) {
	t.Helper()
	ctx := context.Background()
	cur, _, _, err := store.MigrationVersion(ctx, u)
	if err != nil || cur < v {
		t.Fatalf("migrating down to %d from %d: %v", v, cur, err)
	}
	if err := store.MigrateDown(ctx, u, int(cur-v)); err != nil {
		t.Fatal(err)
	}
	if cur, _, _, err = store.MigrationVersion(ctx, u); err != nil || cur != v {
		t.Fatalf("migrated down to %d, want %d (%v)", cur, v, err)
	}
}
