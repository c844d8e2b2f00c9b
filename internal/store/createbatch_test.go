package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// batchGate holds the first batch of a coalescer in its hook until
// released, so that the calls made meanwhile queue; it records every
// batch's size.
type batchGate struct {
	mu      sync.Mutex
	sizes   []int
	entered chan struct{}
	release chan struct{}
	fail    func(n int) error
}

func newGate() *batchGate {
	return &batchGate{entered: make(chan struct{}), release: make(chan struct{})}
}

// gate holds st's creations.
func gate(st *store.Store) *batchGate {
	g := newGate()
	store.SetCreateHook(st, g.hook)
	return g
}

func (g *batchGate) hook(n int) error {
	g.mu.Lock()
	g.sizes = append(g.sizes, n)
	first := len(g.sizes) == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	if g.fail != nil {
		return g.fail(n)
	}
	return nil
}

func (g *batchGate) batches() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

type created struct {
	op  *store.OpOcc
	err error
}

// createAll starts CreateOpOcc for each op; the answers come in order.
func createAll(st *store.Store, ops []store.NewOp) []chan created {
	out := make([]chan created, len(ops))
	for i, n := range ops {
		out[i] = make(chan created, 1)
		go func() {
			op, err := st.CreateOpOcc(context.Background(), n)
			out[i] <- created{op, err}
		}()
	}
	return out
}

// answer is ch's answer, waited for at most a minute.
func answer(t *testing.T, ch chan created) created {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("no answer in a minute")
		return created{}
	}
}

// waitQueued waits (bounded) until n creations wait for a batch.
func waitQueued(t *testing.T, st *store.Store, n int) {
	t.Helper()
	waitFor(t, func() int { return store.QueuedCreates(st) }, n)
}

// waitFor waits (bounded) until queued says n calls wait for a batch.
func waitFor(t *testing.T, queued func() int, n int) {
	t.Helper()
	for range 2000 {
		if queued() == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d calls queued, want %d", queued(), n)
}

// Creations that arrive while one runs go together in the next statement,
// one per instance: each is created as alone (STARTING, its lease, its
// STARTING notification when a subscription wants it, the engines woken
// for one no process holds), and a second creation for an instance of the
// batch waits for the next batch, where it is refused as alone it would be.
func TestConcurrentCreationsShareAStatement(t *testing.T) {
	for _, c := range []struct {
		name       string
		subscribed bool
	}{{"no subscription wants STARTING", false}, {"a subscription wants STARTING", true}} {
		t.Run(c.name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			heard := listen(t, st, store.ChannelOps)
			if c.subscribed {
				subscribeAll(t, st)
			}
			var ops []store.NewOp
			for i := range 6 {
				n, _ := newOpFrom(t, st, newInstance(t, st, "b"))
				if i%2 == 1 {
					n.LeaseOwner, n.Lease = "e/1", time.Minute
				}
				ops = append(ops, n)
			}
			dup, _ := newOpFrom(t, st, ops[2].VnfInstanceID)
			g := gate(st)
			first := createAll(st, ops[:1])
			<-g.entered
			rest := createAll(st, append(ops[1:], dup))
			waitQueued(t, st, 6)
			close(g.release)
			answers := append(first, rest...)
			got := make([]created, len(answers))
			for i, ch := range answers {
				got[i] = answer(t, ch)
			}
			if store.FailedCreateBatches(st) != 0 {
				t.Fatalf("the batch's statement failed (see the log): its creations went alone")
			}
			if b := g.batches(); len(b) != 3 || b[0] != 1 || b[1] != 5 || b[2] != 1 {
				t.Fatalf("batches %v, want [1 5 1]: the first alone, the five queued together, the second for one instance after them", b)
			}
			// Of the two creations for one instance, the one queued first is
			// in the batch and created; the other is refused naming it.
			all := append(append([]store.NewOp(nil), ops...), dup)
			winner, loser := 2, 6
			if got[2].err != nil {
				winner, loser = 6, 2
			}
			var ce *store.ConflictError
			if l := got[loser]; !errors.As(l.err, &ce) || ce.BlockingOp == nil || ce.BlockingOp.ID != all[winner].ID {
				t.Fatalf("second creation for one instance: %+v, want 409 naming %s", l, all[winner].ID)
			}
			ops[2] = all[winner]
			for i, n := range ops {
				j := i
				if i == 2 {
					j = winner
				}
				op, err := got[j].op, got[j].err
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if op.ID != n.ID || op.VnfInstanceID != n.VnfInstanceID || op.OperationState != model.StateStarting ||
					op.LeaseOwner != n.LeaseOwner || op.Attempts != map[bool]int{false: 0, true: 1}[n.LeaseOwner != ""] ||
					op.CreatedFrom() == nil || op.CreatedFrom().Version != n.From.Version {
					t.Fatalf("op %d: created %+v", i, op)
				}
				stored, err := st.GetOpOcc(ctx, n.ID)
				if err != nil || stored.OperationState != model.StateStarting || stored.LeaseOwner != n.LeaseOwner ||
					!jsonEqual(stored.OperationParams, string(n.OperationParams)) {
					t.Fatalf("op %d stored: %v %+v", i, err, stored)
				}
				want := 0
				if c.subscribed {
					want = 1
				}
				if states := outboxStates(t, st, n.ID); len(states) != want || want == 1 && states[0] != model.StateStarting {
					t.Fatalf("op %d: notifications %v, want %d STARTING", i, states, want)
				}
			}
			if states := outboxStates(t, st, all[loser].ID); len(states) != 0 {
				t.Fatalf("the refused op left notifications %v", states)
			}
			// Woken for the three ops no process holds, by id.
			woken := map[string]bool{}
			for _, id := range heard()[store.ChannelOps] {
				woken[id] = true
			}
			for _, n := range ops {
				if woken[n.ID] != (n.LeaseOwner == "") {
					t.Fatalf("engines woken for %v; op %s leased to %q", woken, n.ID, n.LeaseOwner)
				}
			}
		})
	}
}

// A batch never waits for a lock: an instance another transaction holds is
// skipped, the others are created at once, and the skipped creation goes
// the single way, which waits for the lock as before.
func TestCreationBatchSkipsALockedInstance(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	var ops []store.NewOp
	for range 4 {
		n, _ := newOpFrom(t, st, newInstance(t, st, "l"))
		ops = append(ops, n)
	}
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `SELECT 1 FROM vnf_instances WHERE id = $1 FOR UPDATE`, ops[2].VnfInstanceID); err != nil {
		t.Fatal(err)
	}
	g := gate(st)
	first := createAll(st, ops[:1])
	<-g.entered
	rest := createAll(st, ops[1:])
	waitQueued(t, st, 3)
	close(g.release)
	for _, i := range []int{0, 1, 3} {
		ch := first[0]
		if i > 0 {
			ch = rest[i-1]
		}
		if r := answer(t, ch); r.err != nil || r.op.ID != ops[i].ID {
			t.Fatalf("op %d: %+v", i, r)
		}
	}
	select {
	case r := <-rest[1]:
		t.Fatalf("the creation for the locked instance did not wait for its lock: %+v", r)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := answer(t, rest[1]); r.err != nil || r.op.ID != ops[2].ID || r.op.OperationState != model.StateStarting {
		t.Fatalf("locked instance's op once the lock is gone: %+v", r)
	}
	if st.CreateFallbacks() != 1 {
		t.Fatalf("%d creations took the transaction that reads under the lock, want 1", st.CreateFallbacks())
	}
	if b := g.batches(); len(b) != 2 || b[1] != 3 || store.FailedCreateBatches(st) != 0 {
		t.Fatalf("batches %v (%d failed), want [1 3] and none failed", b, store.FailedCreateBatches(st))
	}
}

// A batch whose statement fails wrote nothing: each creation then runs its
// own statement and is created.
func TestFailedCreationBatchGoesOneByOne(t *testing.T) {
	st := open(t)
	var ops []store.NewOp
	for range 3 {
		n, _ := newOpFrom(t, st, newInstance(t, st, "f"))
		ops = append(ops, n)
	}
	g := gate(st)
	g.fail = func(n int) error {
		if n > 1 {
			return &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
		}
		return nil
	}
	first := createAll(st, ops[:1])
	<-g.entered
	rest := createAll(st, ops[1:])
	waitQueued(t, st, 2)
	close(g.release)
	for i, ch := range append(first, rest...) {
		if r := answer(t, ch); r.err != nil || r.op == nil || r.op.ID != ops[i].ID || r.op.OperationState != model.StateStarting {
			t.Fatalf("op %d: %+v", i, r)
		}
	}
	if b := g.batches(); len(b) != 2 || b[1] != 2 {
		t.Fatalf("batches %v, want [1 2]", b)
	}
	if st.CreateFallbacks() != 0 {
		t.Fatalf("%d creations took the transaction that reads under the lock, want 0", st.CreateFallbacks())
	}
}
