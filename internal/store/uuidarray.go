package store

import (
	"encoding/binary"
	"errors"

	"github.com/jackc/pgx/v5/pgtype"
)

// uuidArrayCodec is pgx's uuid[] codec, but a []string of ids — how the store
// passes every list of ids ($1::uuid[]) — is sent in the binary format.
// pgx prefers binary for uuid[] and has no binary plan for a []string: each
// such argument first failed (an error formatted with the whole slice, a plan
// searched for again at every call, ~5 % of the VNFM's CPU in the group
// commit) and was then sent as text. An id that is not in the canonical
// 8-4-4-4-12 form still goes as text, so PostgreSQL judges it as before.
type uuidArrayCodec struct{ *pgtype.ArrayCodec }

func (c uuidArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.([]string); ok && format == pgtype.BinaryFormatCode {
		return uuidStringsBinary{}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// registerUUIDArray makes m encode a []string for uuid[] in binary.
func registerUUIDArray(m *pgtype.Map) {
	elem, ok := m.TypeForOID(pgtype.UUIDOID)
	if !ok {
		return
	}
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID,
		Codec: uuidArrayCodec{&pgtype.ArrayCodec{ElementType: elem}}})
}

type uuidStringsBinary struct{}

var errNotCanonicalUUID = errors.New("store: not a canonical uuid (sent as text)")

// Encode writes a one-dimensional array (PostgreSQL's array_send): the
// header, then each element as its length and 16 bytes. A nil slice is NULL.
func (uuidStringsBinary) Encode(value any, buf []byte) ([]byte, error) {
	ids := value.([]string)
	if ids == nil {
		return nil, nil
	}
	start := len(buf)
	dims := int32(0)
	if len(ids) > 0 {
		dims = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(dims))
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL
	buf = binary.BigEndian.AppendUint32(buf, pgtype.UUIDOID)
	if dims == 1 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(ids)))
		buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	}
	for _, s := range ids {
		buf = binary.BigEndian.AppendUint32(buf, 16)
		var ok bool
		if buf, ok = appendCanonicalUUID(buf, s); !ok {
			return buf[:start], errNotCanonicalUUID
		}
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
