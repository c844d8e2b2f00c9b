package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func subscribeAll(t *testing.T, st *store.Store) {
	t.Helper()
	if _, err := st.CreateSubscription(context.Background(), &store.Subscription{ID: uuid.NewString(),
		CallbackURI: "http://127.0.0.1:1/n", Filter: &lccn.Filter{}}); err != nil {
		t.Fatal(err)
	}
}

// outboxEvents are the stored events of an op's notifications, oldest first.
func outboxEvents(t *testing.T, st *store.Store, opID string) []string {
	t.Helper()
	var out []string
	for _, e := range outbox(t, st, opID) {
		out = append(out, e.raw)
	}
	return out
}

// outboxStates are the operation states an op's notifications report, in order.
func outboxStates(t *testing.T, st *store.Store, opID string) []string {
	t.Helper()
	var out []string
	for _, e := range outbox(t, st, opID) {
		out = append(out, e.OperationState)
	}
	return out
}

// storedEvent is what the outbox keeps of a notification (lccn.Body).
type storedEvent struct {
	OperationState string `json:"operationState"`
	VnfLcmOpOccID  string `json:"vnfLcmOpOccId"`
	raw            string
}

func outbox(t *testing.T, st *store.Store, opID string) []storedEvent {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), `SELECT body FROM notification_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storedEvent
	for rows.Next() {
		var e storedEvent
		if err := rows.Scan(&e.raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(e.raw), &e); err != nil {
			t.Fatal(err)
		}
		if e.VnfLcmOpOccID == opID {
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func newOpFrom(t *testing.T, st *store.Store, instID string) (store.NewOp, *store.InstancePackage) {
	t.Helper()
	r, err := st.OpenForOp(context.Background(), instID, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return store.NewOp{ID: uuid.NewString(), VnfInstanceID: instID, Operation: model.OpInstantiate,
		OperationParams: []byte(`{}`), Verb: "instantiated", From: r}, r
}

// leasedOp creates an op leased to owner for lease, from a fresh read.
func leasedOp(t *testing.T, st *store.Store, owner string, lease time.Duration) *store.OpOcc {
	t.Helper()
	n, _ := newOpFrom(t, st, newInstance(t, st, "i"))
	n.LeaseOwner, n.Lease = owner, lease
	op, err := st.CreateOpOcc(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// Given the instance as read with the subscriptions (OpenForOp), an op is
// created in one statement, and its STARTING notification is stored
// exactly as the transaction that reads under the lock stores it.
func TestCreateOpOccFromReadIsTheSameOp(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	subscribeAll(t, st)
	a, b := newInstance(t, st, "same"), newInstance(t, st, "same")
	n, r := newOpFrom(t, st, a)
	fast, err := st.CreateOpOcc(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if st.CreateFallbacks() != 0 {
		t.Fatalf("the op was created by the transaction that reads under the lock")
	}
	if fast.OperationState != model.StateStarting || fast.LeaseOwner != "" || fast.Attempts != 0 ||
		fast.CreatedFrom() == nil || fast.CreatedFrom().Version != r.Version {
		t.Fatalf("created %+v (from %+v)", fast, fast.CreatedFrom())
	}
	slow, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: b, Operation: model.OpInstantiate,
		OperationParams: []byte(`{}`), Verb: "instantiated"})
	if err != nil {
		t.Fatal(err)
	}
	fe, se := outboxEvents(t, st, fast.ID), outboxEvents(t, st, slow.ID)
	if len(fe) != 1 || len(se) != 1 {
		t.Fatalf("STARTING notifications: %d and %d, want 1 each", len(fe), len(se))
	}
	// The same but for the ids: the notification's, the op's, the instance's.
	norm := func(s, op, inst string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "id")
		b, _ := json.Marshal(m)
		return strings.ReplaceAll(strings.ReplaceAll(string(b), op, "OP"), inst, "INST")
	}
	if f, s := norm(fe[0], fast.ID, a), norm(se[0], slow.ID, b); f != s {
		t.Fatalf("STARTING event differs:\n one statement: %s\n transaction:   %s", f, s)
	}
	got, err := st.GetOpOcc(ctx, fast.ID)
	if err != nil || got.OperationState != model.StateStarting {
		t.Fatalf("stored: %v %+v", err, got)
	}
}

// When the instance is no longer as read, or an operation is active, the
// one statement inserts nothing and the transaction that reads under the
// lock answers as before: created from the current version, 412, or 409
// naming the blocking operation.
func TestCreateOpOccFromReadFallsBack(t *testing.T) {
	bump := func(t *testing.T, st *store.Store, id string) {
		if _, err := st.Pool().Exec(context.Background(), `UPDATE vnf_instances SET version = version + 1 WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	t.Run("instance changed since read", func(t *testing.T) {
		st := open(t)
		id := newInstance(t, st, "i")
		n, r := newOpFrom(t, st, id)
		bump(t, st, id)
		op, err := st.CreateOpOcc(ctx, n)
		if err != nil || op.CreatedFrom().Version != r.Version+1 || st.CreateFallbacks() != 1 {
			t.Fatalf("%v %+v, %d fallbacks", err, op, st.CreateFallbacks())
		}
	})
	t.Run("If-Match no longer current", func(t *testing.T) {
		st := open(t)
		id := newInstance(t, st, "i")
		n, r := newOpFrom(t, st, id)
		n.IfVersion = r.Version
		bump(t, st, id)
		_, err := st.CreateOpOcc(ctx, n)
		var pe *store.PreconditionError
		if !errors.As(err, &pe) || pe.Current != r.Version+1 {
			t.Fatalf("want 412 with the current version: %v", err)
		}
	})
	t.Run("an operation is active", func(t *testing.T) {
		st := open(t)
		id := newInstance(t, st, "i")
		n, _ := newOpFrom(t, st, id)
		first, err := st.CreateOpOcc(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		n, _ = newOpFrom(t, st, id)
		_, err = st.CreateOpOcc(ctx, n)
		var ce *store.ConflictError
		if !errors.As(err, &ce) || ce.BlockingOp == nil || ce.BlockingOp.ID != first.ID {
			t.Fatalf("want 409 naming %s: %v", first.ID, err)
		}
		if got := outboxEvents(t, st, n.ID); len(got) != 0 {
			t.Fatalf("a refused op left notifications: %v", got)
		}
	})
	t.Run("requests at the same moment", func(t *testing.T) {
		st := open(t)
		subscribeAll(t, st)
		for range 10 {
			id := newInstance(t, st, "i")
			var (
				wg   sync.WaitGroup
				errs [2]error
				ns   [2]store.NewOp
			)
			for i := range ns {
				ns[i], _ = newOpFrom(t, st, id)
			}
			for i := range ns {
				wg.Go(func() { _, errs[i] = st.CreateOpOcc(ctx, ns[i]) })
			}
			wg.Wait()
			ok, refused := 0, 0
			for i, err := range errs {
				var ce *store.ConflictError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &ce) && ce.BlockingOp != nil && ce.BlockingOp.ID == ns[1-i].ID:
					refused++
					if got := outboxEvents(t, st, ns[i].ID); len(got) != 0 {
						t.Fatalf("a refused op left notifications: %v", got)
					}
				default:
					t.Fatalf("request %d: %v", i, err)
				}
			}
			if ok != 1 || refused != 1 {
				t.Fatalf("%d created, %d refused naming the other; want 1 and 1", ok, refused)
			}
		}
	})
}

// An op created leased to its run (NewOp.LeaseOwner) is STARTING, claimed
// by no engine while its lease lasts, and moved to PROCESSING by its run's
// first write (OpWrite.Start), with the notifications in order.
func TestLeasedOpStartsWithItsFirstWrite(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	subscribeAll(t, st)
	op := leasedOp(t, st, "e/1", time.Minute)
	if op.OperationState != model.StateStarting || op.LeaseOwner != "e/1" || op.Attempts != 1 {
		t.Fatalf("created %s owner %q attempt %d", op.OperationState, op.LeaseOwner, op.Attempts)
	}
	if got, err := st.ClaimN(ctx, "x", time.Minute, 10); err != nil || len(got) != 0 {
		t.Fatalf("claimed a leased op: %v %d", err, len(got))
	}
	if p, _, err := st.Heartbeat(ctx, op.ID, "e/1", time.Minute); err != nil || p {
		t.Fatalf("heartbeat of a STARTING op: %v %v", p, err)
	}
	begin := func(step string) store.OpWrite {
		return store.OpWrite{OpOccID: op.ID, Owner: "e/1", Start: true, Journal: []store.JournalWrite{{Kind: store.JournalBeginKind,
			Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: step}}}}
	}
	for _, step := range []string{"a", "b"} { // the second Start finds it PROCESSING already
		if res := st.WriteOps(ctx, []store.OpWrite{begin(step)}); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		got, err := st.GetOpOcc(ctx, op.ID)
		if err != nil || got.OperationState != model.StateProcessing || got.LeaseOwner != "e/1" || got.Attempts != 1 {
			t.Fatalf("after the first write: %v %+v", err, got)
		}
	}
	if _, err := st.FinishOp(ctx, op.ID, "e/1", store.Finish{State: model.StateCompleted}); err != nil {
		t.Fatal(err)
	}
	j, _ := st.Journal(ctx, []string{op.ID})
	if len(j[op.ID]) != 2 {
		t.Fatalf("journal: %+v", j[op.ID])
	}
	if got := strings.Join(outboxStates(t, st, op.ID), ","); got != "STARTING,PROCESSING,COMPLETED" {
		t.Fatalf("notifications %s", got)
	}
}

// A cancel that reaches a leased op while it is STARTING keeps it there:
// its run's first write changes nothing (ErrCancelPending) and the run ends
// it ROLLED_BACK, as a cancel of an op no engine holds does at once.
func TestCancelBeforeALeasedOpStarts(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	subscribeAll(t, st)
	op := leasedOp(t, st, "e/1", time.Minute)
	c, err := st.CancelOp(ctx, op.ID, model.CancelGraceful)
	if err != nil || c.OperationState != model.StateStarting || !c.IsCancelPending {
		t.Fatalf("cancel: %v %+v", err, c)
	}
	if p, mode, err := st.Heartbeat(ctx, op.ID, "e/1", time.Minute); err != nil || !p || mode != model.CancelGraceful {
		t.Fatalf("heartbeat: %v %q %v", p, mode, err)
	}
	res := st.WriteOps(ctx, []store.OpWrite{{OpOccID: op.ID, Owner: "e/1", Start: true, Journal: []store.JournalWrite{{
		Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: "a"}}}}})
	if !errors.Is(res[0].Err, store.ErrCancelPending) {
		t.Fatalf("first write: %v, want ErrCancelPending", res[0].Err)
	}
	if j, _ := st.Journal(ctx, []string{op.ID}); len(j[op.ID]) != 0 {
		t.Fatalf("journal written: %+v", j[op.ID])
	}
	done, err := st.FinishOp(ctx, op.ID, "e/1", store.Finish{State: model.StateRolledBack})
	if err != nil || done.OperationState != model.StateRolledBack || done.IsCancelPending || done.CancelMode != model.CancelGraceful {
		t.Fatalf("finish: %v %+v", err, done)
	}
	if got := strings.Join(outboxStates(t, st, op.ID), ","); got != "STARTING,ROLLED_BACK" {
		t.Fatalf("notifications %s", got)
	}
}

// The process that created a leased op dies before its first write: once
// the lease expires, any engine claims it (STARTING → PROCESSING, attempt
// 2), and a cancel rolls it back at once, as one no engine ever held.
// A cancel that reached it while the lease lasted is ended by the claim:
// ROLLED_BACK, not run, not returned.
func TestLeasedOpOfADeadProcess(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	subscribeAll(t, st)
	a, b := leasedOp(t, st, "dead/1", 50*time.Millisecond), leasedOp(t, st, "dead/2", 50*time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	got, err := st.ClaimN(ctx, "alive", time.Minute, 1)
	if err != nil || len(got) != 1 || got[0].ID != a.ID || got[0].OperationState != model.StateProcessing || got[0].Attempts != 2 {
		t.Fatalf("claim after expiry: %v %+v", err, got)
	}
	if s := strings.Join(outboxStates(t, st, a.ID), ","); s != "STARTING,PROCESSING" {
		t.Fatalf("notifications %s", s)
	}
	c, err := st.CancelOp(ctx, b.ID, model.CancelForceful)
	if err != nil || c.OperationState != model.StateRolledBack || c.LeaseOwner != "" {
		t.Fatalf("cancel after expiry: %v %+v", err, c)
	}
	if s := strings.Join(outboxStates(t, st, b.ID), ","); s != "STARTING,ROLLED_BACK" {
		t.Fatalf("notifications %s", s)
	}

	c1, c2 := leasedOp(t, st, "dead/3", 50*time.Millisecond), leasedOp(t, st, "dead/4", 50*time.Millisecond)
	if op, err := st.CancelOp(ctx, c1.ID, model.CancelGraceful); err != nil || op.OperationState != model.StateStarting || !op.IsCancelPending {
		t.Fatalf("cancel while leased: %v %+v", err, op)
	}
	time.Sleep(150 * time.Millisecond)
	got, err = st.ClaimN(ctx, "alive", time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != c2.ID || got[0].OperationState != model.StateProcessing {
		t.Fatalf("claim after a cancel while leased: %v %+v", err, got)
	}
	done, err := st.GetOpOcc(ctx, c1.ID)
	if err != nil || done.OperationState != model.StateRolledBack || done.LeaseOwner != "" || done.IsCancelPending || done.CancelMode != model.CancelGraceful {
		t.Fatalf("cancelled op after the claim: %v %+v", err, done)
	}
	if s := strings.Join(outboxStates(t, st, c1.ID), ","); s != "STARTING,ROLLED_BACK" {
		t.Fatalf("notifications %s", s)
	}
}

// OpenForOp with instantiation reads, in its one statement, the id and
// drivers' parameters of the instance's last completed instantiation: none
// before one completes, the latest completed one after, whatever other
// operations (a terminate, a failed instantiation) came since.
func TestOpenForOpReadsTheLastInstantiation(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	id := newInstance(t, st, "inst")
	read := func(instantiation bool) *store.Instantiation {
		t.Helper()
		r, err := st.OpenForOp(ctx, id, nil, instantiation)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != id {
			t.Fatalf("read instance %s, want %s", r.ID, id)
		}
		return r.Instantiation
	}
	create := func(operation string, params string) string {
		t.Helper()
		n := store.NewOp{ID: uuid.NewString(), VnfInstanceID: id, Operation: operation, OperationParams: []byte(`{}`), Verb: "x"}
		if params != "" {
			n.DriverParams = []byte(params)
		}
		if _, err := st.CreateOpOcc(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	end := func(opID, state string) {
		t.Helper()
		if _, err := st.Pool().Exec(ctx, `UPDATE vnf_lcm_op_occs SET operation_state=$2 WHERE id=$1`, opID, state); err != nil {
			t.Fatal(err)
		}
	}
	want := func(got *store.Instantiation, opID, params string) {
		t.Helper()
		if got == nil || got.OpID != opID || !jsonEqual(got.DriverParams, params) {
			t.Fatalf("instantiation read %+v, want op %s with %s", got, opID, params)
		}
	}
	if got := read(true); got != nil {
		t.Fatalf("never instantiated: read %+v", got)
	}
	first := create(model.OpInstantiate, `{"d":{"a":1}}`)
	if got := read(true); got != nil {
		t.Fatalf("instantiation still running: read %+v", got)
	}
	end(first, model.StateCompleted)
	want(read(true), first, `{"d":{"a":1}}`)
	if got := read(false); got != nil {
		t.Fatalf("read without instantiation: %+v", got)
	}
	end(create(model.OpTerminate, ""), model.StateCompleted)
	second := create(model.OpInstantiate, `{"d":{"a":2}}`)
	end(second, model.StateCompleted)
	end(create(model.OpTerminate, ""), model.StateCompleted)
	end(create(model.OpInstantiate, `{"d":{"a":3}}`), model.StateFailed)
	want(read(true), second, `{"d":{"a":2}}`)
	third := create(model.OpInstantiate, "")
	end(third, model.StateCompleted)
	if got := read(true); got == nil || got.OpID != third || got.DriverParams != nil {
		t.Fatalf("instantiation without drivers' parameters: read %+v", got)
	}
}

// listen listens on channels over a connection of its own; heard returns
// the notifications that arrived since, by channel (it stops once none came
// for 300 ms).
func listen(t *testing.T, st *store.Store, channels ...string) (heard func() map[string][]string) {
	t.Helper()
	ctx := context.Background()
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, `LISTEN "`+ch+`"`); err != nil {
			t.Fatal(err)
		}
	}
	return func() map[string][]string {
		got := map[string][]string{}
		for {
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			n, err := conn.Conn().WaitForNotification(wctx)
			cancel()
			if err != nil {
				return got
			}
			got[n.Channel] = append(got[n.Channel], n.Payload)
		}
	}
}

func jsonEqual(a []byte, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// The one statement writes the STARTING notification's outbox rows only
// when a subscription wants it, and wakes up the engines (an op no process
// holds: its id) and the notifiers (outbox rows written) as the rows need,
// with and without subscriptions that want the notification.
func TestCreateOpOccWakeUps(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	heard := listen(t, st, store.ChannelOps, store.ChannelOutbox)
	if _, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/n",
		Filter: &lccn.Filter{OperationStates: []string{model.StateCompleted}}}); err != nil {
		t.Fatal(err)
	}
	subscribed := false
	for _, c := range []struct {
		name          string
		leased, all   bool
		ops, outboxes int
	}{
		{"no subscription wants STARTING, held by no process", false, false, 1, 0},
		{"no subscription wants STARTING, leased", true, false, 0, 0},
		{"a subscription wants STARTING, held by no process", false, true, 1, 1},
		{"a subscription wants STARTING, leased", true, true, 0, 1},
	} {
		if c.all && !subscribed {
			subscribeAll(t, st)
			subscribed = true
		}
		n, _ := newOpFrom(t, st, newInstance(t, st, "w"))
		_ = heard() // the instance's creation's
		fallbacks := st.CreateFallbacks()
		if c.leased {
			n.LeaseOwner, n.Lease = "e/1", time.Minute
		}
		op, err := st.CreateOpOcc(ctx, n)
		if err != nil || st.CreateFallbacks() != fallbacks {
			t.Fatalf("%s: %v (fallbacks %d → %d)", c.name, err, fallbacks, st.CreateFallbacks())
		}
		if want := map[bool]string{false: "", true: "e/1"}[c.leased]; op.OperationState != model.StateStarting || op.LeaseOwner != want {
			t.Fatalf("%s: created %s leased to %q", c.name, op.OperationState, op.LeaseOwner)
		}
		got := heard()
		if len(got[store.ChannelOps]) != c.ops || c.ops == 1 && got[store.ChannelOps][0] != op.ID || len(got[store.ChannelOutbox]) != c.outboxes {
			t.Fatalf("%s: wake-ups %v, want %d for the engines (the op's id) and %d for the notifiers", c.name, got, c.ops, c.outboxes)
		}
		if states := outboxStates(t, st, op.ID); len(states) != c.outboxes {
			t.Fatalf("%s: notifications %v, want %d STARTING", c.name, states, c.outboxes)
		}
	}
}
