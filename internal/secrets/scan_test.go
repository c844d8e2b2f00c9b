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

// Sealing a document opened with a Kept keeps the stored value of every
// secret that did not change and seals the changed ones anew; a remembered
// value is kept only at its own place, and sealing without a Kept seals
// every value anew.
func TestSealJSONKeptKeepsUnchangedValues(t *testing.T) {
	b := testBox(t)
	p := At("vnf_instances/aaaa").Key("vimConnectionInfo")
	stored, err := b.SealJSON([]byte(`[{"accessInfo":{"password":"pw-1","token":"t-1","username":"u"}}]`), p)
	if err != nil {
		t.Fatal(err)
	}
	var k Kept
	opened, err := b.OpenJSONKept(stored, p, &k)
	if err != nil || !bytes.Contains(opened, []byte(`"pw-1"`)) {
		t.Fatalf("opened %s %v", opened, err)
	}
	changed := bytes.Replace(opened, []byte(`"t-1"`), []byte(`"t-2"`), 1)
	again, err := b.SealJSONKept(changed, p, &k)
	if err != nil {
		t.Fatal(err)
	}
	sealedOf := func(doc []byte) (pw, tok string) {
		var v []struct{ AccessInfo map[string]string }
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		return v[0].AccessInfo["password"], v[0].AccessInfo["token"]
	}
	pw0, tok0 := sealedOf(stored)
	pw1, tok1 := sealedOf(again)
	if pw1 != pw0 || tok1 == tok0 || !IsSealed(tok1) {
		t.Fatalf("unchanged password %v, changed token re-sealed %v", pw1 == pw0, tok1 != tok0)
	}
	if got, err := b.OpenJSON(again, p); err != nil || !bytes.Contains(got, []byte(`"t-2"`)) || !bytes.Contains(got, []byte(`"pw-1"`)) {
		t.Fatalf("opened again: %s %v", got, err)
	}
	// Sealing again with k keeps the token sealed last time too.
	if third, err := b.SealJSONKept(changed, p, &k); err != nil || !bytes.Equal(third, again) {
		t.Fatalf("third sealing %s, want %s (%v)", third, again, err)
	}
	// At another place, the same plaintext is sealed for that place.
	other := At("vnf_instances/bbbb").Key("vimConnectionInfo")
	moved, err := b.SealJSONKept(opened, other, &k)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := sealedOf(moved); pw == pw0 {
		t.Fatal("a value remembered for one place was kept at another")
	}
	if _, err := b.OpenJSON(moved, other); err != nil {
		t.Fatal(err)
	}
	if fresh, err := b.SealJSON(opened, p); err != nil {
		t.Fatal(err)
	} else if pw, _ := sealedOf(fresh); pw == pw0 {
		t.Fatal("SealJSON without a Kept kept a value")
	}
}
