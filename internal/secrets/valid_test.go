package secrets

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// The validating scan that SealJSON runs instead of json.Valid and a second
// scan, and validDoc, which the other checks run before json.Valid, take
// exactly the documents json.Valid takes — valid ones (so they
// take the one pass), and never an invalid one — and finds its secrets only
// in a document that passed: none is visited in one that does not.
func TestValidatingScanIsJSONValid(t *testing.T) {
	check := func(raw []byte) {
		t.Helper()
		visited := 0
		_, err := scanValidSecrets(raw, Place{Path: "/x"}, func(val []byte, at func() Place) ([]byte, error) {
			visited++
			return nil, nil
		})
		ok := json.Valid(raw)
		if (err == nil) != ok {
			t.Fatalf("%q: the scan says %v, json.Valid %v", raw, err, ok)
		}
		if validDoc(raw) != ok {
			t.Fatalf("%q: validDoc says %v, json.Valid %v", raw, !ok, ok)
		}
		if err != nil && visited > 0 {
			t.Fatalf("%q: %d secrets visited in a document that is not JSON", raw, visited)
		}
	}
	deep := func(n int, open, close string) []byte {
		return []byte(strings.Repeat(open, n) + strings.Repeat(close, n))
	}
	for _, c := range []string{``, ` `, `0`, `-0`, `01`, `-01`, `-`, `1.`, `1.e5`, `1e`, `1e+`, `1E-5`, `.5`, `+1`, `0x1`,
		`1.5e3`, `-12.5E+03`, `1 2`, `"\u00zz"`, `"\u00e9"`, `"\u00e"`, `"\x"`, "\"a\x01\"", "\"a\x7f\xff\"", `"\/\b\f\n\r\t\"\\"`,
		`"abc`, `tru`, `nul`, `falsey`, `true false`, `null`, ` true `, `{,}`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{1:2}`,
		`{"a":1,}`, `{"a":1 "b":2}`, `[`, `]`, `{}x`, `[] []`, `{"password":"x","a":tru}`, `{"password":"x","a":[1,2}`,
		`{"password":{"a":01},"b":1}`, `{"pass\u0077ord":"x"}`, `{"password":null}`, "{\"password\":\"x\"}\x00",
		`[{"token":["a",{"b":-0.5e-3}]},"s",3,null,{"credentials":[]}]`, "\t{ \"a\" :\n[ 1 , 2 ]\r}"} {
		check([]byte(c))
	}
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		check(deep(n, `[`, `]`))
		check([]byte(`{"password":` + string(deep(n, `[`, `]`)) + `}`))
		check([]byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat(`}`, n)))
	}
	r := rand.New(rand.NewPCG(5, 6))
	marks := []byte(`{}[]",:\/-+.eE0123456789 tfnulax` + "\x00\x1f\x7f\xff")
	forTestDocs(3000, 7, func(raw []byte) {
		check(raw)
		for range 4 {
			b := []byte(string(raw))
			switch i := r.IntN(len(b)); r.IntN(3) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b = append(b[:i], append([]byte{marks[r.IntN(len(marks))]}, b[i:]...)...)
			default:
				b[i] = marks[r.IntN(len(marks))]
			}
			check(b)
		}
	})
}

func BenchmarkValidDoc(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var docs []any
	for range 50 {
		docs = append(docs, randomDoc(r, 0))
	}
	raw, _ := json.Marshal(docs)

	b.Run("validDoc", func(b *testing.B) {
		for b.Loop() {
			validDoc(raw)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(raw)
		}
	})
}
