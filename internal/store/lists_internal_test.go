package store

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// The store's lists are written byte for byte as pgx's own array codec
// writes them in binary: text[] from a []string or a []*string (nil
// elements NULL), uuid[] from a []string of canonical ids as from the
// same ids as uuids.
func TestListsEncodeAsPgxDoes(t *testing.T) {
	ours, theirs := pgtype.NewMap(), pgtype.NewMap()
	registerLists(ours)
	enc := func(m *pgtype.Map, oid uint32, v any) []byte {
		t.Helper()
		b, err := m.Encode(oid, pgtype.BinaryFormatCode, v, []byte("prefix"))
		if err != nil {
			t.Fatalf("%T %v: %v", v, v, err)
		}
		return b
	}
	a, e, long := "a", "", strings.Repeat("é😀\x01\"{},", 100)
	texts := []any{[]string(nil), []string{}, []string{"x"}, []string{"", "a b", long, "NULL"},
		[]*string(nil), []*string{}, []*string{nil}, []*string{&a, nil, &e, &long}}
	for _, v := range texts {
		if got, want := enc(ours, pgtype.TextArrayOID, v), enc(theirs, pgtype.TextArrayOID, v); !bytes.Equal(got, want) {
			t.Errorf("text[] %q:\n%x\nwant\n%x", v, got, want)
		}
	}
	for _, n := range []int{0, 1, 3} {
		var ids []string
		var uuids []pgtype.UUID
		for range n {
			u := uuid.New()
			s := u.String()
			if len(ids)%2 == 1 {
				s = strings.ToUpper(s)
			}
			ids, uuids = append(ids, s), append(uuids, pgtype.UUID{Bytes: u, Valid: true})
		}
		if n == 0 {
			ids, uuids = []string{}, []pgtype.UUID{}
		}
		if got, want := enc(ours, pgtype.UUIDArrayOID, ids), enc(theirs, pgtype.UUIDArrayOID, uuids); !bytes.Equal(got, want) {
			t.Errorf("uuid[] %q:\n%x\nwant\n%x", ids, got, want)
		}
	}
	// An id in another form has no binary form here: it goes as text.
	for _, bad := range []string{"{" + uuid.NewString() + "}", strings.ReplaceAll(uuid.NewString(), "-", ""), "x", uuid.NewString()[:35] + "g"} {
		if _, err := ours.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []string{uuid.NewString(), bad}, nil); err == nil {
			t.Errorf("%q encoded in binary", bad)
		}
	}
	// Allocation-free but for the buffer's growth.
	buf := make([]byte, 0, 4096)
	ids := []string{uuid.NewString(), uuid.NewString()}
	plan := ours.PlanEncode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids)
	strs := []*string{&a, nil, &long}
	tplan := ours.PlanEncode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, strs)
	var idsV, strsV any = ids, strs // as pgx holds them
	if n := testing.AllocsPerRun(100, func() {
		_, _ = plan.Encode(idsV, buf)
		_, _ = tplan.Encode(strsV, buf)
	}); n > 0 {
		t.Errorf("%.1f allocations per list pair", n)
	}
	// Into a buffer too small (pgx's starts at a few hundred bytes), the
	// list grows it once, to its size: appending element by element
	// reallocated at every doubling.
	docs := make([]string, 40)
	for i := range docs {
		docs[i] = strings.Repeat("d", 1800)
	}
	var docsV any = docs
	dplan := ours.PlanEncode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, docs)
	small := make([]byte, 3, 256)
	want := 1.0
	if raceDetector {
		want = 2
	}
	if n := testing.AllocsPerRun(20, func() {
		_, _ = dplan.Encode(docsV, small)
	}); n > want {
		t.Errorf("a list of %d documents into a small buffer: %.0f allocations, want %.0f", len(docs), n, want)
	}
	out, err := dplan.Encode(docsV, small)
	if err != nil || len(out) != 3+20+len(docs)*(4+1800) {
		t.Errorf("encoded %d bytes (%v), want %d", len(out), err, 3+20+len(docs)*(4+1800))
	}
}
