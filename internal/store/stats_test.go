package store_test

import (
	"context"
	"maps"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Stats counts op rows by operation and state exactly as a GROUP BY over
// all of them does, scrape after scrape, while rows are created, finish
// (also rows it folded while they were unfinished) and grow old enough to
// be folded into its cache; two stores (processes) agree.
func TestStatsCountsOpsExactly(t *testing.T) {
	ctx := context.Background()
	u := pgtest.NewDB(t)
	st, other := openAt(t, u), openAt(t, u)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := st.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	newOp := func(op, state string) string {
		t.Helper()
		inst := newInstance(t, st, "s")
		id := uuid.NewString()
		if _, err := st.CreateOpOcc(ctx, store.NewOp{ID: id, VnfInstanceID: inst, Operation: op, OperationParams: []byte(`{}`), Verb: "x"}); err != nil {
			t.Fatal(err)
		}
		exec(`UPDATE vnf_lcm_op_occs SET operation_state=$2 WHERE id=$1`, id, state)
		return id
	}
	check := func(step string) {
		t.Helper()
		want := map[[2]string]int64{}
		rows, err := st.Pool().Query(ctx, `SELECT operation, operation_state, count(*) FROM vnf_lcm_op_occs GROUP BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var op, state string
			var n int64
			if err := rows.Scan(&op, &state, &n); err != nil {
				t.Fatal(err)
			}
			want[[2]string{op, state}] = n
		}
		rows.Close()
		for name, s := range map[string]*store.Store{"this": st, "other": other} {
			for range 2 { // a second scrape counts nothing twice
				stats, err := s.Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := map[[2]string]int64{}
				for _, c := range stats.Ops {
					got[[2]string{c.Operation, c.State}] = c.Count
				}
				if !maps.Equal(got, want) {
					t.Fatalf("%s, %s store: %v, want %v", step, name, got, want)
				}
			}
		}
	}
	age := func() { exec(`UPDATE vnf_lcm_op_occs SET start_time = start_time - interval '2 minutes'`) }

	var running, held []string
	for range 3 {
		newOp(model.OpInstantiate, model.StateCompleted)
		newOp(model.OpScale, model.StateFailed)
		running = append(running, newOp(model.OpHeal, model.StateProcessing))
		held = append(held, newOp(model.OpTerminate, model.StateFailedTemp))
	}
	newOp(model.OpInstantiate, model.StateStarting)
	check("new rows")
	age()
	check("rows old enough to fold, some unfinished")
	// Rows folded unfinished finish; new rows come.
	exec(`UPDATE vnf_lcm_op_occs SET operation_state='COMPLETED' WHERE id = ANY($1::uuid[])`, running[:2])
	exec(`UPDATE vnf_lcm_op_occs SET operation_state='ROLLED_BACK' WHERE id=$1`, held[0])
	newOp(model.OpModifyInfo, model.StateCompleted)
	newOp(model.OpHeal, model.StateProcessing)
	check("folded rows finished, new rows")
	age()
	exec(`UPDATE vnf_lcm_op_occs SET operation_state='FAILED' WHERE id=$1`, held[1])
	check("everything folded once more")
	exec(`UPDATE vnf_lcm_op_occs SET operation_state='COMPLETED' WHERE id = ANY($1::uuid[])`, append(running[2:], held[2]))
	check("the last pending rows finished")
}
