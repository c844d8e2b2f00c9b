package lcm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func (w *world) subscribeAll() {
	w.t.Helper()
	if _, err := w.st.CreateSubscription(context.Background(), &store.Subscription{ID: uuid.NewString(),
		CallbackURI: "http://127.0.0.1:1/n", Filter: &lccn.Filter{}}); err != nil {
		w.t.Fatal(err)
	}
}

// engineRunning returns once the engine runs: an operation it claimed has completed.
func (w *world) engineRunning() {
	w.t.Helper()
	op, err := w.svc.Instantiate(context.Background(), w.instance(), instantiateBody(`{}`))
	if err != nil {
		w.t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
}

// notified are the states an op's notifications report, in the order queued.
func (w *world) notified(opID string) string {
	w.t.Helper()
	rows, err := w.st.Pool().Query(context.Background(), `SELECT body FROM notification_outbox ORDER BY id`)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	var states []string
	for rows.Next() {
		var (
			raw string
			n   struct {
				OperationState string `json:"operationState"`
				VnfLcmOpOccID  string `json:"vnfLcmOpOccId"`
			}
		)
		if err := rows.Scan(&raw); err != nil {
			w.t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(raw), &n); err != nil {
			w.t.Fatal(err)
		}
		if n.VnfLcmOpOccID == opID {
			states = append(states, n.OperationState)
		}
	}
	return strings.Join(states, ",")
}

// An operation accepted while this process's engine has a free worker slot
// is created leased to a run here and runs without being claimed: STARTING
// when accepted, moved to PROCESSING by its first write, notified in order.
func TestAcceptedOpRunsHereWithoutAClaim(t *testing.T) {
	w := newWorld(t)
	w.subscribeAll()
	// Workers to spare: the dispatcher's claims reserve up to 16 slots.
	w.engineN(64, 5*time.Second, nil)
	w.engineRunning()
	op, err := w.svc.Instantiate(context.Background(), w.instance(), instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if op.OperationState != model.StateStarting || op.LeaseOwner == "" || op.Attempts != 1 {
		t.Fatalf("accepted: %s owner %q attempt %d, want STARTING leased to a run here, attempt 1", op.OperationState, op.LeaseOwner, op.Attempts)
	}
	done := w.wait(op.ID, model.StateCompleted, model.StateFailedTemp)
	if done.OperationState != model.StateCompleted || done.Attempts != 1 {
		t.Fatalf("ended %s after %d claims: %+v", done.OperationState, done.Attempts, done.Error)
	}
	if got := w.notified(op.ID); got != "STARTING,PROCESSING,COMPLETED" {
		t.Fatalf("notifications %s", got)
	}
}

// With every worker slot busy, an accepted operation is created without a
// lease, as before, and claimed when a slot frees: the bound holds for the
// operations run here and those claimed.
func TestAcceptedOpWaitsForAFreeSlot(t *testing.T) {
	w := newWorld(t)
	w.engineN(1, 5*time.Second, nil)
	ctx := context.Background()
	first, err := w.svc.Instantiate(ctx, w.instance(), instantiateBody(`{"delayMs":150}`))
	if err != nil {
		t.Fatal(err)
	}
	w.waitNode(first.ID, "master-0") // its run holds the only slot
	second, err := w.svc.Instantiate(ctx, w.instance(), instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if second.LeaseOwner != "" || second.Attempts != 0 {
		t.Fatalf("accepted with no free slot: owner %q attempt %d, want unleased", second.LeaseOwner, second.Attempts)
	}
	for _, op := range []*store.OpOcc{first, second} {
		if d := w.wait(op.ID, model.StateCompleted, model.StateFailedTemp); d.OperationState != model.StateCompleted || d.Attempts != 1 {
			t.Fatalf("op ended %s after %d claims", d.OperationState, d.Attempts)
		}
	}
	j, err := w.st.Journal(ctx, []string{first.ID, second.ID})
	if err != nil {
		t.Fatal(err)
	}
	var firstEnd, secondStart time.Time
	for _, e := range j[first.ID] {
		if e.Node == "" && e.EndTime != nil && e.EndTime.After(firstEnd) {
			firstEnd = *e.EndTime
		}
	}
	for _, e := range j[second.ID] {
		if e.Node == "" && e.StartTime != nil && (secondStart.IsZero() || e.StartTime.Before(secondStart)) {
			secondStart = *e.StartTime
		}
	}
	if secondStart.Before(firstEnd) {
		t.Fatalf("the second op started at %v, before the first ended (%v): more than 1 ran at once", secondStart, firstEnd)
	}
}

// A cancel that reaches an operation leased to a run here while it is
// still STARTING ends it ROLLED_BACK with nothing run, as a cancel of a
// STARTING operation always did. The run's first write is held back by
// the group commit (another operation's write waits for a row lock) until
// the cancel is in.
func TestCancelWhileStartingHere(t *testing.T) {
	w := newWorld(t)
	w.subscribeAll()
	w.engineN(64, 5*time.Second, nil)
	w.engineRunning()
	ctx := context.Background()
	a, err := w.svc.Instantiate(ctx, w.instance(), instantiateBody(`{"delayMs":300}`))
	if err != nil {
		t.Fatal(err)
	}
	w.waitNode(a.ID, "master-0")
	tx, err := w.st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM vnf_lcm_op_occs WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	// Until a's next write waits for the lock, holding the group commit.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := w.st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%lease_owner%' AND query NOT LIKE '%is_cancel_pending, cancel_mode%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group commit never waited for the lock")
		}
	}
	b, err := w.svc.Instantiate(ctx, w.instance(), instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if b.LeaseOwner == "" {
		t.Fatal("b is not leased to a run here")
	}
	c, err := w.svc.Cancel(ctx, b.ID, model.CancelGraceful)
	if err != nil || c.OperationState != model.StateStarting || !c.IsCancelPending {
		t.Fatalf("cancel: %v %+v", err, c)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got := w.wait(b.ID, model.StateRolledBack, model.StateFailedTemp, model.StateCompleted)
	if got.OperationState != model.StateRolledBack || got.IsCancelPending || got.Error != nil {
		t.Fatalf("cancelled while STARTING: %s pending=%v %+v", got.OperationState, got.IsCancelPending, got.Error)
	}
	if j, _ := w.st.Journal(ctx, []string{b.ID}); len(j[b.ID]) != 0 {
		t.Fatalf("a step of the cancelled op was journaled: %+v", j[b.ID])
	}
	if s := w.notified(b.ID); s != "STARTING,ROLLED_BACK" {
		t.Fatalf("notifications %s", s)
	}
	if d := w.wait(a.ID, model.StateCompleted, model.StateFailedTemp); d.OperationState != model.StateCompleted {
		t.Fatalf("the other op ended %s", d.OperationState)
	}
}
