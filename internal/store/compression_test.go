package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// A working copy large enough to be compressed is compressed with lz4
// (migration 0019): pglz cost twice the CPU at every fence that rewrote it.
// Migrating down gives the columns the server's default back.
func TestDocumentsAreLZ4Compressed(t *testing.T) {
	ctx := context.Background()
	u := pgtest.NewDB(t)
	st := openAt(t, u)
	op := leasedOp(t, st, "e/1", time.Minute)
	work := []byte(`{"steps": [` + strings.Repeat(`{"name": "step", "state": "done", "output": {"token": "abc"}},`, 80) + `{}]}`)
	res := st.WriteOps(ctx, []store.OpWrite{{OpOccID: op.ID, Owner: "e/1", Start: true, Work: work, Journal: []store.JournalWrite{{
		Kind: store.JournalBeginKind, Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: "a"}}}}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	var method *string
	var size int
	if err := st.Pool().QueryRow(ctx, `SELECT pg_column_compression(work), pg_column_size(work) FROM vnf_lcm_op_occs WHERE id = $1`,
		op.ID).Scan(&method, &size); err != nil {
		t.Fatal(err)
	}
	if method == nil || *method != "lz4" || size >= len(work) {
		t.Errorf("a working copy of %d bytes is stored in %d bytes, compressed with %v; want lz4", len(work), size, deref(method))
	}
	st.Close()
	migrateDownTo(t, u, 18) // before 0019
	st = openAt(t, u)
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_attribute WHERE attcompression <> ''
		AND attrelid IN ('vnf_lcm_op_occs'::regclass, 'vnf_instances'::regclass, 'notification_outbox'::regclass, 'op_journal'::regclass)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after migrating down: %d columns with a compression of their own, want none", n)
	}
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
