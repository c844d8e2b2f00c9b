package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decoded decodes raw as SealDoc's callers did (numbers as written).
func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := decodeNumbers(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// sealedAs replaces every sealed string of a decoded document by a marker,
// so that two sealings of one document (random nonces) compare equal.
func sealedAs(v any) any {
	switch m := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range m {
			out[k] = sealedAs(val)
		}
		return out
	case []any:
		out := make([]any, len(m))
		for i, val := range m {
			out[i] = sealedAs(val)
		}
		return out
	case string:
		if IsSealed(m) {
			return "<sealed>"
		}
	}
	return v
}

// SealJSON and OpenJSON, which work on the document's bytes, seal and open
// exactly what SealDoc and OpenDoc do on the decoded document — the same
// values, at the same places, with the same plaintexts — for every kind of
// JSON value, key and string; the rest of the document is left as written.
func TestSealJSONIsSealDoc(t *testing.T) {
	b := testBox(t)
	p := At("vnf_instances/aaaa").Key("metadata")
	check := func(raw []byte) {
		t.Helper()
		old, err := transformJSON(raw, func(v any) (any, error) { return b.SealDoc(v, p) })
		sealed, err2 := b.SealJSON(raw, p)
		if err != nil {
			if err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("%s: SealDoc: %v, SealJSON: %v", raw, err, err2)
			}
			return
		}
		if err := err2; err != nil {
			t.Fatalf("%s: SealJSON: %v", raw, err)
		}
		if got, want := sealedAs(decoded(t, sealed)), sealedAs(decoded(t, old)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\nSealJSON %s\nSealDoc  %s", raw, sealed, old)
		}
		// Each value sealed where SealDoc seals it, with its plaintext:
		// OpenDoc opens it to the document as it was.
		opened, err := b.OpenDoc(decoded(t, sealed), p)
		if err != nil {
			t.Fatalf("%s: OpenDoc of %s: %v", raw, sealed, err)
		}
		want, _ := json.Marshal(decoded(t, raw))
		if got, _ := json.Marshal(opened); !bytes.Equal(got, want) {
			t.Fatalf("%s: opened %s, want %s", raw, got, want)
		}
		for _, doc := range [][]byte{sealed, old} {
			o, err := b.OpenJSON(doc, p)
			if err != nil {
				t.Fatalf("%s: OpenJSON: %v", doc, err)
			}
			if got, _ := json.Marshal(decoded(t, o)); !bytes.Equal(got, want) {
				t.Fatalf("%s: OpenJSON %s, want %s", doc, got, want)
			}
		}
		// Sealing again keeps every value; elsewhere it is refused.
		if again, err := b.SealJSON(sealed, p); err != nil || !bytes.Equal(again, sealed) {
			t.Fatalf("%s: sealed again: %s %v", sealed, again, err)
		}
		if !bytes.Equal(sealed, raw) {
			if _, err := b.SealJSON(sealed, p.Key("x")); !errors.Is(err, ErrMisplaced) {
				t.Fatalf("%s sealed at another place: %v", sealed, err)
			}
			if _, err := b.OpenJSON(sealed, p.Key("x")); !errors.Is(err, ErrMisplaced) {
				t.Fatalf("%s opened at another place: %v", sealed, err)
			}
		}
		// Values finds what Values of the decoded document finds.
		if got, want := ValuesJSON(raw), Values(decoded(t, raw)); !sameStrings(got, want) {
			t.Fatalf("%s: ValuesJSON %q, Values %q", raw, got, want)
		}
	}
	forTestDocs(1000, 3, check)
}

func sameStrings(a, b []string) bool {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// A document with no secret member comes back as it is, without a copy.
func TestSealJSONLeavesDocumentsWithoutSecretsAlone(t *testing.T) {
	b := testBox(t)
	raw := []byte(`{"a": [1, {"b": "password"}], "tokenless": null, "password": null}`)
	sealed, err := b.SealJSON(raw, At("r"))
	if err != nil || &sealed[0] != &raw[0] || len(sealed) != len(raw) {
		t.Fatalf("%s %v: want the document itself", sealed, err)
	}
}
