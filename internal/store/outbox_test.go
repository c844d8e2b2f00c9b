package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// notificationOf is the notification a delivery sends (to subscription "s").
func notificationOf(t *testing.T, d store.Delivery) map[string]any {
	t.Helper()
	if d.Body == nil {
		t.Fatalf("notification %d has no body", d.ID)
	}
	b, err := lccn.AppendNotification(nil, d.Body, "", "s", d.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	var n map[string]any
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func subscribe(t *testing.T, st *store.Store) string {
	t.Helper()
	sub, err := st.CreateSubscription(context.Background(), &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/n"})
	if err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

func leaseOf(t *testing.T, st *store.Store, sub string) string {
	t.Helper()
	var owner *string
	if err := st.Pool().QueryRow(context.Background(), `SELECT delivery_owner FROM subscriptions WHERE id=$1`, sub).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner == nil {
		return ""
	}
	return *owner
}

func ids(ds []store.Delivery) []int64 {
	var out []int64
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// A round's record keeps the lease and hands out the next round while
// notifications wait, in order, and releases it when none is left; nobody
// else can claim the subscription in between.
func TestEndDeliveryHandsOutTheNextRound(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	sub := subscribe(t, st)
	newOps(t, st, 5) // 5 creations and 5 STARTING notifications
	got, ds, err := st.ClaimSubscription(ctx, "a", time.Minute, 4)
	if err != nil || got == nil || got.ID != sub || len(ds) != 4 {
		t.Fatalf("claim: %v %v %d", got, err, len(ds))
	}
	var all []store.Delivery
	for round := 1; len(ds) > 0; round++ {
		all = append(all, ds...)
		if leaseOf(t, st, sub) != "a" {
			t.Fatalf("round %d: lease %q, want a", round, leaseOf(t, st, sub))
		}
		if other, _, err := st.ClaimSubscription(ctx, "b", time.Minute, 4); err != nil || other != nil {
			t.Fatalf("round %d: another notifier claimed %v (%v)", round, other, err)
		}
		if ds, err = st.EndDelivery(ctx, sub, "a", ids(ds), nil, 4, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if len(all) != 10 || leaseOf(t, st, sub) != "" {
		t.Fatalf("%d notifications, lease %q after the last round", len(all), leaseOf(t, st, sub))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Fatalf("out of order: %v", ids(all))
		}
	}
	var pending, delivered int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE delivered_at IS NULL), count(*) FILTER (WHERE delivered_at IS NOT NULL AND attempts = 1)
		FROM notification_outbox`).Scan(&pending, &delivered); err != nil {
		t.Fatal(err)
	}
	if pending != 0 || delivered != 10 {
		t.Fatalf("pending %d, delivered %d", pending, delivered)
	}
}

// A failure ends the lease whatever waits; a record by a notifier that lost
// the lease changes nothing; next = 0 releases the lease.
func TestEndDeliveryFailureAndLostLease(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	sub := subscribe(t, st)
	newOps(t, st, 2)
	_, ds, err := st.ClaimSubscription(ctx, "a", time.Minute, 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim: %v %d", err, len(ds))
	}
	if _, err := st.EndDelivery(ctx, sub, "b", ids(ds), nil, 2, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("record without the lease: %v", err)
	}
	next, err := st.EndDelivery(ctx, sub, "a", ids(ds[:1]), &store.DeliveryFailure{ID: ds[1].ID, Cause: "503", Next: time.Hour}, 2, time.Minute)
	if err != nil || len(next) != 0 || leaseOf(t, st, sub) != "" {
		t.Fatalf("record with a failure: %v, %d handed out, lease %q", err, len(next), leaseOf(t, st, sub))
	}
	var attempts int
	var lastErr string
	var retryIn time.Duration
	if err := st.Pool().QueryRow(ctx, `SELECT attempts, last_error, EXTRACT(EPOCH FROM next_attempt_at - now())::int * interval '1 second'
		FROM notification_outbox WHERE id=$1`, ds[1].ID).Scan(&attempts, &lastErr, &retryIn); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || lastErr != "503" || retryIn < 59*time.Minute {
		t.Fatalf("failed notification: attempts %d, error %q, retry in %s", attempts, lastErr, retryIn)
	}
	// Blocked until then: nothing to claim.
	if got, _, err := st.ClaimSubscription(ctx, "c", time.Minute, 2); err != nil || got != nil {
		t.Fatalf("claimed a subscription whose oldest notification is not due: %v %v", got, err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE notification_outbox SET next_attempt_at = now()`); err != nil {
		t.Fatal(err)
	}
	_, ds, err = st.ClaimSubscription(ctx, "c", time.Minute, 1)
	if err != nil || len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("claim after the backoff: %v %+v", err, ds)
	}
	if next, err := st.EndDelivery(ctx, sub, "c", ids(ds), nil, 0, time.Minute); err != nil || len(next) != 0 || leaseOf(t, st, sub) != "" {
		t.Fatalf("record with next = 0: %v, %d handed out, lease %q", err, len(next), leaseOf(t, st, sub))
	}
}

// Notifications queued by an older build (an event, no body) are still
// handed out, with their event.
func TestOutboxRowsWithAnEventOnly(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	sub := subscribe(t, st)
	ev := lccn.Event{Type: lccn.TypeOpOcc, Instance: lccn.Instance{ID: uuid.NewString()}, OpOccID: uuid.NewString(),
		Operation: model.OpInstantiate, OperationState: model.StateCompleted}
	raw, _ := json.Marshal(ev)
	if _, err := st.Pool().Exec(ctx, `INSERT INTO notification_outbox (notification_id, subscription_id, event) VALUES ($1, $2, $3)`,
		uuid.NewString(), sub, raw); err != nil {
		t.Fatal(err)
	}
	_, ds, err := st.ClaimSubscription(ctx, "a", time.Minute, 5)
	if err != nil || len(ds) != 1 || ds[0].Body != nil || ds[0].Event == nil || ds[0].Event.OpOccID != ev.OpOccID {
		t.Fatalf("claim: %v %+v", err, ds)
	}
}

// A subscription's filter is read as stored at every event, also when it
// changed after the fan-out had used it (the decoded filters are cached).
func TestFanOutSeesAChangedFilter(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	sub, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/n",
		Filter: &lccn.Filter{NotificationTypes: []string{lccn.TypeOpOcc}, OperationStates: []string{model.StateCompleted}}})
	if err != nil {
		t.Fatal(err)
	}
	newOps(t, st, 1) // a creation and a STARTING: neither matches
	if got, ds, err := st.ClaimSubscription(ctx, "a", time.Minute, 10); err != nil || got != nil {
		t.Fatalf("claimed %v %d (%v), want nothing", got, len(ds), err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE subscriptions SET filter = '{"notificationTypes":["`+lccn.TypeOpOcc+`"]}' WHERE id=$1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	ops := newOps(t, st, 1)
	_, ds, err := st.ClaimSubscription(ctx, "a", time.Minute, 10)
	if err != nil || len(ds) != 1 || notificationOf(t, ds[0])["vnfLcmOpOccId"] != ops[0] {
		t.Fatalf("after the filter changed: %v %+v", err, ds)
	}
}
