package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A list of ids ([]string for $n::uuid[]) is sent in the binary format —
// pgx had no binary plan for it and tried, failed and fell back to text at
// every call — and means to PostgreSQL what its text meant; an id in another
// form PostgreSQL reads (braces, no hyphens) still goes as text, and one it
// refuses is refused as before. A text[] list keeps its NULLs and strings.
func TestUUIDListsBinary(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	c, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	id1, id2 := uuid.NewString(), strings.ToUpper(uuid.NewString())
	if _, err := c.Conn().TypeMap().Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []string{id1, id2}, nil); err != nil {
		t.Fatalf("a []string of ids does not encode in binary: %v", err)
	}
	brace, bare := "{"+uuid.NewString()+"}", strings.ReplaceAll(uuid.NewString(), "-", "")
	for _, ids := range [][]string{nil, {}, {id1}, {id1, id2, id1}, {brace, bare, id2}} {
		// The same list as text, which PostgreSQL parses itself.
		lit := `{"` + strings.Join(ids, `","`) + `"}`
		if len(ids) == 0 {
			lit = "{}"
		}
		var want, got *string
		if ids != nil {
			if err := c.QueryRow(ctx, `SELECT $1::text::uuid[]::text`, lit).Scan(&want); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.QueryRow(ctx, `SELECT $1::uuid[]::text`, ids).Scan(&got); err != nil {
			t.Fatalf("%q: %v", ids, err)
		}
		if (want == nil) != (got == nil) || want != nil && *want != *got {
			t.Errorf("%q: got %v, want %v", ids, textOrNULL(got), textOrNULL(want))
		}
	}
	var pe *pgconn.PgError
	var s string
	if err := c.QueryRow(ctx, `SELECT $1::uuid[]::text`, []string{id1, "not-an-id"}).Scan(&s); !errors.As(err, &pe) || pe.Code != "22P02" {
		t.Errorf("a malformed id: got %v, want PostgreSQL's invalid_text_representation", err)
	}
	// text[]: a []*string's nil elements are NULL, the rest as written.
	x, empty, odd := "x", "", "é😀 \"{},NULL"
	in := []*string{&x, nil, &empty, &odd}
	var back []*string
	if err := c.QueryRow(ctx, `SELECT $1::text[]`, in).Scan(&back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(in) || back[1] != nil || *back[0] != x || *back[2] != empty || *back[3] != odd {
		t.Errorf("text[] %q (and a NULL) came back as %d elements", []string{x, empty, odd}, len(back))
	}
	// The pool's other connections have the codec too.
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT cardinality($1::uuid[])`, []string{id1, id2}).Scan(&n); err != nil || n != 2 {
		t.Errorf("pool: %d, %v", n, err)
	}
}

func textOrNULL(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
