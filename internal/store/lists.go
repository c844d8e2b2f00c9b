package store

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
)

// listCodec is pgx's codec for an array type (uuid[], text[]), except that
// the store's lists — a []string, or a []*string whose nil elements are
// NULL, as every multi-row statement passes its columns ($n::uuid[],
// $n::text[]) — are written in the binary format directly. pgx prefers
// binary for arrays and writes each element through an interface value
// (one allocation per string, reflection for a []*string); for a []string
// of ids into uuid[] it had no binary plan at all, so each such argument
// first failed (an error formatted with the whole slice, a plan searched
// for again at every call) and was then sent as text.
type listCodec struct {
	*pgtype.ArrayCodec
	// elem appends the binary form of one element; false when s has none
	// here (the whole list then goes as text, for PostgreSQL to judge).
	elem func(buf []byte, s string) ([]byte, bool)
	// width is the binary size of every element (0: the string's length).
	width int
}

func (c listCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case []string, []*string:
			return listBinary{c}
		}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// registerLists makes m write the store's lists for uuid[] and text[] in binary.
func registerLists(m *pgtype.Map) {
	for _, l := range []struct {
		name      string
		oid, elem uint32
		append    func([]byte, string) ([]byte, bool)
		width     int
	}{
		{"_uuid", pgtype.UUIDArrayOID, pgtype.UUIDOID, appendCanonicalUUID, 16},
		{"_text", pgtype.TextArrayOID, pgtype.TextOID, func(b []byte, s string) ([]byte, bool) { return append(b, s...), true }, 0},
	} {
		if elem, ok := m.TypeForOID(l.elem); ok {
			m.RegisterType(&pgtype.Type{Name: l.name, OID: l.oid,
				Codec: listCodec{&pgtype.ArrayCodec{ElementType: elem}, l.append, l.width}})
		}
	}
}

type listBinary struct{ c listCodec }

var errNotInBinary = errors.New("store: a list element has no binary form here (sent as text)")

// Encode writes what pgx's array codec writes (PostgreSQL's array_send
// format): one dimension, even for an empty list, its NULL flag, the
// element type; then each element as its length (-1: NULL) and bytes. A nil
// slice is NULL.
func (p listBinary) Encode(value any, buf []byte) ([]byte, error) {
	var (
		strs []string
		ptrs []*string
		n    int
	)
	switch v := value.(type) {
	case []string:
		if v == nil {
			return nil, nil
		}
		strs, n = v, len(v)
	case []*string:
		if v == nil {
			return nil, nil
		}
		ptrs, n = v, len(v)
	}
	// Grown once to the list's size: pgx's parameter buffer starts small at
	// every statement, and a list of documents (the group commit's working
	// copies, bodies, renderings) grown by appending was a tenth of the
	// bytes the VNFM allocated in the engine bench.
	need := 20 + 4*n
	if p.c.width > 0 {
		need += p.c.width * n
	} else {
		for i := range n {
			if strs != nil {
				need += len(strs[i])
			} else if ptrs[i] != nil {
				need += len(*ptrs[i])
			}
		}
	}
	buf = slices.Grow(buf, need)
	start := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, 1)
	nullFlag := len(buf)
	buf = binary.BigEndian.AppendUint32(buf, 0)
	buf = binary.BigEndian.AppendUint32(buf, p.c.ElementType.OID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for i := range n {
		var s string
		if strs != nil {
			s = strs[i]
		} else if ptrs[i] == nil {
			binary.BigEndian.PutUint32(buf[nullFlag:], 1)
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF) // -1
			continue
		} else {
			s = *ptrs[i]
		}
		at := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		var ok bool
		if buf, ok = p.c.elem(buf, s); !ok {
			return buf[:start], errNotInBinary
		}
		binary.BigEndian.PutUint32(buf[at:], uint32(len(buf)-at-4))
	}
	return buf, nil
}

// appendCanonicalUUID appends the 16 bytes of s, a uuid written as 32 hex
// digits (either case) in groups of 8-4-4-4-12; ok is false for any other
// form.
func appendCanonicalUUID(buf []byte, s string) ([]byte, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return buf, false
	}
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return buf, false
		}
		buf = append(buf, hi<<4|lo)
		i += 2
	}
	return buf, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
