package store

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// A group's journal and finish columns are made at their length once, and
// their values need no allocation each (the journal's messages and errors
// point into its rows, the finishes' texts share one backing array): the
// group commit's columns were its largest number of allocations. Their
// contents are what opwrite_test.go's journals and finishes read back.
func TestGroupColumnsAllocateByColumn(t *testing.T) {
	const n = 32
	var ws []OpWrite
	for i := range n {
		id := fmt.Sprint("op", i)
		e := JournalEntry{OpOccID: id, Phase: "run", Step: "s", State: model.StepCompleted,
			Message: fmt.Sprint("message ", i), Error: fmt.Sprint("error ", i)}
		in := &model.VnfInstance{ID: fmt.Sprint("in", i), VnfInstanceName: "name", VnfdID: "d",
			InstantiationState: model.Instantiated}
		ws = append(ws, OpWrite{OpOccID: id, Owner: "o", Journal: []JournalWrite{{Kind: JournalEndKind, Entry: e}},
			Finish: &Finish{State: model.StateCompleted, Instance: in}})
	}
	journal := testing.AllocsPerRun(20, func() {
		var jb journalBatch
		for _, w := range ws {
			jb.add(w.Journal[0])
		}
		var b pgx.Batch
		jb.queue(&b)
	})
	// The rows (a map, a row each) and one statement's columns (~100 for
	// 32 rows); columns grown append by append and a message and an error
	// allocated each made 209.
	if max := float64(2*n + 60); journal > max {
		t.Errorf("journal of %d rows: %.0f allocations, want ≤ %.0f", n, journal, max)
	}
	fb := finishBatch{}
	fb.grow(n)
	for _, w := range ws {
		if err := fb.add(w, nil, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if fb.n != n || *fb.inst[1][7] != "name" || fb.inst[2][0] != nil || fb.ids[n-1] != fmt.Sprint("op", n-1) {
		t.Fatalf("columns: n %d, names %v", fb.n, fb.inst[1])
	}
	finishes := testing.AllocsPerRun(20, func() {
		var fb finishBatch
		fb.grow(n)
		for _, w := range ws {
			_ = fb.add(w, nil, nil, nil, nil)
		}
	})
	// Most of it is the instance's arguments and its rendered document
	// (instanceUpdateArgs: ~19); a text allocated each and columns grown
	// append by append made 29. The race detector makes it 28.
	budget := 24.0
	if raceDetector {
		budget = 29
	}
	if per := finishes / n; per > budget {
		t.Errorf("%.1f allocations per finish, want ≤ %.0f", per, budget)
	}
}
