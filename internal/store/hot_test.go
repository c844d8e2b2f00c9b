package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// heapOnly reports whether the op row's current version is a heap-only
// tuple: written by a HOT update, with no index entry of its own.
func heapOnly(t *testing.T, st *store.Store, id string) bool {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Pool().Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pageinspect`); err != nil {
		t.Fatal(err)
	}
	var ho bool
	err := st.Pool().QueryRow(ctx, `SELECT (h.t_infomask2 & 32768) <> 0 FROM vnf_lcm_op_occs o,
		heap_page_items(get_raw_page('vnf_lcm_op_occs', ((o.ctid::text::point)[0])::int)) h
		WHERE o.id = $1 AND h.lp = ((o.ctid::text::point)[1])::int`, id).Scan(&ho)
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
