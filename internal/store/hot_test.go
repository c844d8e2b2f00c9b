package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// heapOnly reports whether the op row's current version is a heap-only
// tuple: written by a HOT update, with no index entry of its own.
func heapOnly(t *testing.T, st *store.Store, id string) bool {
	t.Helper()
	return heapOnlyIn(t, st, "vnf_lcm_op_occs", id)
}

// heapOnlyIn is heapOnly for the row of table with that id.
func heapOnlyIn(t *testing.T, st *store.Store, table, id string) bool {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Pool().Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pageinspect`); err != nil {
		t.Fatal(err)
	}
	var ho bool
	err := st.Pool().QueryRow(ctx, `SELECT (h.t_infomask2 & 32768) <> 0 FROM `+table+` o,
		heap_page_items(get_raw_page($2, ((o.ctid::text::point)[0])::int)) h
		WHERE o.id = $1 AND h.lp = ((o.ctid::text::point)[1])::int`, id, table).Scan(&ho)
	if err != nil {
		t.Fatal(err)
	}
	return ho
}

// An operation's start (STARTING → PROCESSING) is a HOT update, by a claim
// and by the first write of a run that was handed the op when it was
// created: no index refers to the state (migration 0015), so the row's
// new version adds no entry to any of them. Its finish is not (it leaves
// the one-active index).
func TestOpStartIsHOT(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	op, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: newInstance(t, st, "a"), Operation: model.OpInstantiate, OperationParams: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := st.Claim(ctx, "w", time.Minute); err != nil || c == nil || c.ID != op.ID || c.OperationState != model.StateProcessing {
		t.Fatalf("claim: %v %+v", err, c)
	}
	if !heapOnly(t, st, op.ID) {
		t.Error("the claim's update was not HOT")
	}

	leased := leasedOp(t, st, "e/1", time.Minute)
	res := st.WriteOps(ctx, []store.OpWrite{{OpOccID: leased.ID, Owner: "e/1", Start: true, Journal: []store.JournalWrite{{
		Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: leased.ID, Phase: store.PhaseRun, Step: "a"}}}}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if got, _ := st.GetOpOcc(ctx, leased.ID); got == nil || got.OperationState != model.StateProcessing {
		t.Fatalf("after the first write: %+v", got)
	}
	if !heapOnly(t, st, leased.ID) {
		t.Error("the first write's start was not HOT")
	}

	if _, err := st.FinishOp(ctx, op.ID, "w", store.Finish{State: model.StateCompleted}); err != nil {
		t.Fatal(err)
	}
	if heapOnly(t, st, op.ID) {
		t.Error("the finish was HOT: the row is still in the one-active index")
	}
}

// Instantiate and terminate, which change the instance's state and no other
// indexed column here, update its row HOT: no index refers to the state
// (migration 0018). Migrating down puts the index back, and the same
// change is no longer HOT.
func TestInstantiateAndTerminateAreHOT(t *testing.T) {
	ctx := context.Background()
	u := pgtest.NewDB(t)
	st := openAt(t, u)
	id := newInstance(t, st, "a")
	finish := func(st *store.Store, state string) {
		t.Helper()
		n, _ := newOpFrom(t, st, id)
		n.LeaseOwner, n.Lease = "e/1", time.Minute
		op, err := st.CreateOpOcc(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		begin := store.JournalWrite{Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: "a"}}
		if r := st.WriteOps(ctx, []store.OpWrite{{OpOccID: op.ID, Owner: "e/1", Start: true, Journal: []store.JournalWrite{begin}}}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		in, err := st.GetInstance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		in.InstantiationState = state
		if _, err := st.FinishOp(ctx, op.ID, "e/1", store.Finish{State: model.StateCompleted, Instance: &in.VnfInstance}); err != nil {
			t.Fatal(err)
		}
		if got, err := st.GetInstance(ctx, id); err != nil || got.InstantiationState != state {
			t.Fatalf("after the finish: %+v, %v; want %s", got, err, state)
		}
	}
	finish(st, model.Instantiated)
	if !heapOnlyIn(t, st, "vnf_instances", id) {
		t.Error("instantiate's update of the instance was not HOT")
	}
	finish(st, model.NotInstantiated)
	if !heapOnlyIn(t, st, "vnf_instances", id) {
		t.Error("terminate's update of the instance was not HOT")
	}
	st.Close()
	migrateDownTo(t, u, 17) // before 0018
	st = openAt(t, u)
	finish(st, model.Instantiated)
	if heapOnlyIn(t, st, "vnf_instances", id) {
		t.Error("after migrating down: instantiate's update was HOT, the state index is not back")
	}
}

// The journal's rows have no foreign key to their op (migration 0017): the
// group's fence is what keeps a journal write from an op it does not hold —
// one that does not exist included — and the key's check cost a statement
// per row. Migrating down puts the key back over the rows written meanwhile.
func TestJournalNeedsNoForeignKey(t *testing.T) {
	ctx := context.Background()
	u := pgtest.NewDB(t)
	st := openAt(t, u)
	fk := func() (n int) {
		t.Helper()
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_constraint
			WHERE conrelid = 'op_journal'::regclass AND contype = 'f'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := fk(); n != 0 {
		t.Fatalf("op_journal has %d foreign keys", n)
	}
	op := leasedOp(t, st, "e/1", time.Minute)
	begin := func(id string) store.OpWrite {
		return store.OpWrite{OpOccID: id, Owner: "e/1", Start: id == op.ID, Journal: []store.JournalWrite{{
			Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: id, Phase: store.PhaseRun, Step: "a"}}}}
	}
	res := st.WriteOps(ctx, []store.OpWrite{begin(op.ID), begin(uuid.NewString())})
	if res[0].Err != nil || !errors.Is(res[1].Err, store.ErrLeaseLost) {
		t.Fatalf("writes: %v, %v; want nil, ErrLeaseLost", res[0].Err, res[1].Err)
	}
	var rows int
	var only string
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), min(op_occ_id::text) FROM op_journal`).Scan(&rows, &only); err != nil || rows != 1 || only != op.ID {
		t.Fatalf("journal: %d rows (%s, %v), want the held op's one", rows, only, err)
	}
	st.Close()
	migrateDownTo(t, u, 16) // before 0017
	st = openAt(t, u)
	if n := fk(); n != 1 {
		t.Fatalf("after migrating down: %d foreign keys, want 1", n)
	}
}

// The engine's group writes run their prepared statements' generic plans:
// left to choose, PostgreSQL planned the finishes, the start and the fence
// again at every call, which cost about as much CPU as running them.
// pg_prepared_statements counts a session's plans of each statement.
func TestGroupWritesUseGenericPlans(t *testing.T) {
	ctx := context.Background()
	st := oneSession(t)
	const runs = 8 // PostgreSQL's own choice plans the first 5 calls anew at least
	for i := range runs {
		op := leasedOp(t, st, "e/1", time.Minute)
		begin := store.JournalWrite{Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: "a"}}
		end := begin
		end.Kind = store.JournalEndKind
		if r := st.WriteOps(ctx, []store.OpWrite{{OpOccID: op.ID, Owner: "e/1", Start: true, Journal: []store.JournalWrite{begin}}}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		in, err := st.GetInstance(ctx, op.VnfInstanceID)
		if err != nil {
			t.Fatal(err)
		}
		in.InstantiationState = model.Instantiated
		if r := st.WriteOps(ctx, []store.OpWrite{{OpOccID: op.ID, Owner: "e/1", Work: []byte(`{"n":1}`), Journal: []store.JournalWrite{end}}}); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		if _, err := st.FinishOp(ctx, op.ID, "e/1", store.Finish{State: model.StateCompleted, Instance: &in.VnfInstance}); err != nil {
			t.Fatalf("finish %d: %v", i, err)
		}
	}
	onlyGenericPlans(t, st, runs,
		"UPDATE vnf_lcm_op_occs o SET operation_state = 'PROCESSING'", // the start
		"WITH u AS (UPDATE vnf_lcm_op_occs SET work",                  // the fence setting a working copy
		"UPDATE vnf_instances i SET",                                  // the instances a finish replaces
		"UPDATE vnf_lcm_op_occs o SET operation_state=u.fstate",       // the op rows a finish ends
		"INSERT INTO op_journal")
}

// oneSession opens a store of one connection, whose prepared statements
// onlyGenericPlans counts, with a subscription to every notification.
func oneSession(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), urlWith(pgtest.NewDB(t), "pool_max_conns=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	subscribeAll(t, st)
	return st
}

// onlyGenericPlans checks that the statements starting with heads, run at
// least runs times in st's one session, were only ever run with generic
// plans, and that the settings that force them did not outlast their
// transactions.
func onlyGenericPlans(t *testing.T, st *store.Store, runs int64, heads ...string) {
	t.Helper()
	ctx := context.Background()
	for _, head := range heads {
		var n, generic, custom int64
		if err := st.Pool().QueryRow(ctx, `SELECT count(*), COALESCE(sum(generic_plans), 0), COALESCE(sum(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE $1 || '%'`, head).Scan(&n, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		if n == 0 || custom != 0 || generic < runs {
			t.Errorf("%s…: %d prepared statements, %d generic plans, %d custom plans; want only generic ones", head, n, generic, custom)
		}
	}
	var mode, seq string
	if err := st.Pool().QueryRow(ctx, `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')`).Scan(&mode, &seq); err != nil ||
		mode != "auto" || seq != "on" {
		t.Errorf("afterwards: plan_cache_mode %s, enable_seqscan %s (%v)", mode, seq, err)
	}
}

// The notifier's two statements (the claim of a subscription and the record
// of a round) run their generic plans too, each in one round trip: left to
// choose, PostgreSQL planned them again at every call. The setting lasts for
// the statement's own transaction only.
func TestNotifierStatementsUseGenericPlans(t *testing.T) {
	ctx := context.Background()
	st := oneSession(t)
	const runs = 8 // PostgreSQL's own choice plans the first 5 calls anew at least
	for i := range runs {
		leasedOp(t, st, "e/1", time.Minute) // its instance's creation and its STARTING notifications
		sub, ds, err := st.ClaimSubscription(ctx, "n", time.Minute, 20)
		if err != nil || sub == nil || len(ds) != 2 {
			t.Fatalf("claim %d: %v, %v, %d notifications; want 2", i, err, sub, len(ds))
		}
		next, err := st.EndDelivery(ctx, sub.ID, "n", []int64{ds[0].ID, ds[1].ID}, nil, 20, time.Minute)
		if err != nil || len(next) != 0 {
			t.Fatalf("record %d: %v, %d notifications next; want none", i, err, len(next))
		}
	}
	onlyGenericPlans(t, st, runs,
		"WITH c AS (UPDATE subscriptions s SET delivery_owner", // ClaimSubscription
		"WITH m AS MATERIALIZED")                               // EndDelivery
}
