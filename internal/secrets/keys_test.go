package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func rawKey(t *testing.T) []byte {
	t.Helper()
	k, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sealV2 writes the format of the previous release (key id, no place).
func sealV2(t *testing.T, key, plain []byte) string {
	t.Helper()
	k, err := newBoxKey(key)
	if err != nil {
		t.Fatal(err)
	}
	header := sealedPrefixV2 + k.id + ":"
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return header + base64.RawStdEncoding.EncodeToString(k.aead.Seal(nonce, nonce, plain, []byte(header)))
}

// sealV1 writes the format of the first releases (no key id), as stored
// databases still hold it.
func sealV1(t *testing.T, key, plain []byte) string {
	t.Helper()
	k, err := newBoxKey(key)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return sealedPrefixV1 + base64.RawStdEncoding.EncodeToString(k.aead.Seal(nonce, nonce, plain, nil))
}

func TestKeyRotation(t *testing.T) {
	k1, k2, k3 := rawKey(t), rawKey(t), rawKey(t)
	at := At("vims/v1/auth_cred").Key("password")
	old, err := NewBox(k1)
	if err != nil {
		t.Fatal(err)
	}
	sealedOld := old.SealAt([]byte(`"pw1"`), at)
	if !strings.HasPrefix(sealedOld, "enc:v3:"+KeyID(k1)+":") || SealedKeyID(sealedOld) != KeyID(k1) {
		t.Fatalf("sealed value does not name its key: %s", sealedOld)
	}
	legacy1 := sealV1(t, k1, []byte(`"legacy-under-k1"`))
	legacy2 := sealV2(t, k1, []byte(`"v2-under-k1"`))

	rotated, err := NewBox(k2, k1)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.KeyID() != KeyID(k2) || strings.Join(rotated.KeyIDs(), ",") != KeyID(k2)+","+KeyID(k1) {
		t.Fatalf("key ids %v", rotated.KeyIDs())
	}
	for _, tc := range []struct {
		name, sealed, want string
	}{
		{"v3 under the old key", sealedOld, `"pw1"`},
		{"v2 under the old key", legacy2, `"v2-under-k1"`},
		{"v1 under the old key", legacy1, `"legacy-under-k1"`},
		{"v1 under the current key", sealV1(t, k2, []byte(`"legacy-under-k2"`)), `"legacy-under-k2"`},
		{"v2 under the current key", sealV2(t, k2, []byte(`"v2-under-k2"`)), `"v2-under-k2"`},
		{"v3 under the current key", rotated.SealAt([]byte(`"new"`), at), `"new"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rotated.OpenAt(tc.sealed, at)
			if err != nil || string(got) != tc.want {
				t.Fatalf("open: %q %v", got, err)
			}
			resealed, changed, err := rotated.Reseal(tc.sealed, at)
			if err != nil {
				t.Fatal(err)
			}
			if changed != !rotated.Current(tc.sealed) || SealedKeyID(resealed) != KeyID(k2) || !strings.HasPrefix(resealed, "enc:v3:") {
				t.Fatalf("reseal: changed %v, %s", changed, resealed[:20])
			}
			// Once re-sealed, the old key is no longer needed, and the value is bound to its place.
			onlyNew, _ := NewBox(k2)
			if got, err := onlyNew.OpenAt(resealed, at); err != nil || string(got) != tc.want {
				t.Fatalf("open re-sealed without the old key: %q %v", got, err)
			}
			if _, err := onlyNew.OpenAt(resealed, At("vims/v2/auth_cred").Key("password")); err == nil {
				t.Fatal("the re-sealed value opens in another row")
			}
		})
	}

	// A box without the key a value names says which key is missing.
	stranger, _ := NewBox(k3)
	if _, err := stranger.OpenAt(sealedOld, at); err == nil || !strings.Contains(err.Error(), KeyID(k1)) || !strings.Contains(err.Error(), "VNFM_SECRET_KEYS_OLD") {
		t.Fatalf("open with a missing key: %v", err)
	}
	if _, err := stranger.OpenAt(legacy1, at); err == nil {
		t.Fatal("v1 value opened by an unrelated key")
	}
	// Changing the key id or the format in a value breaks authentication.
	forged := strings.Replace(rotated.SealAt([]byte(`"x"`), at), KeyID(k2), KeyID(k1), 1)
	if _, err := rotated.OpenAt(forged, at); err == nil {
		t.Fatal("value with a swapped key id opened")
	}
	downgraded := strings.Replace(rotated.SealAt([]byte(`"x"`), at), "enc:v3:", "enc:v2:", 1)
	if _, err := rotated.OpenAt(downgraded, At("elsewhere")); err == nil {
		t.Fatal("a v3 value relabelled v2 opened without its place")
	}
}

func TestResealDocAndValues(t *testing.T) {
	k1, k2 := rawKey(t), rawKey(t)
	at := At("vims/x/extra")
	old, _ := NewBox(k1)
	doc, err := old.SealDoc(map[string]any{"auth": map[string]any{"password": "pw", "username": "u"}, "list": []any{map[string]any{"token": 42.0}}}, at)
	if err != nil {
		t.Fatal(err)
	}
	// A value of the previous format (v2) in the same document.
	doc.(map[string]any)["auth"].(map[string]any)["secret"] = sealV2(t, k1, []byte(`"s2"`))
	box, _ := NewBox(k2, k1)
	out, changed, err := box.ResealDoc(doc, at)
	if err != nil || !changed {
		t.Fatalf("reseal doc: %v %v", changed, err)
	}
	if _, again, _ := box.ResealDoc(out, at); again {
		t.Fatal("second reseal changed something")
	}
	fresh, _ := NewBox(k2)
	opened, err := fresh.OpenDoc(out, at)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(opened)
	if string(got) != `{"auth":{"password":"pw","secret":"s2","username":"u"},"list":[{"token":42}]}` {
		t.Fatalf("opened %s", got)
	}
	if _, err := fresh.OpenDoc(out, At("vims/y/extra")); !errors.Is(err, ErrMisplaced) {
		t.Fatalf("the re-sealed document opens in another row: %v", err)
	}

	vp := At("vims/x/auth_cred").Key("k")
	s, err := box.SealValue(map[string]any{"a": []any{1, "b"}}, vp)
	if err != nil {
		t.Fatal(err)
	}
	v, err := box.OpenValue(s, vp)
	if b, _ := json.Marshal(v); err != nil || string(b) != `{"a":[1,"b"]}` {
		t.Fatalf("value round trip %s %v", b, err)
	}
}

func TestParseKeys(t *testing.T) {
	a, b, c := NewKey(), NewKey(), NewKey()
	keys, err := ParseKeys("# current first\n" + a + "\n\n" + b + ", " + c + "\n")
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys %d %v", len(keys), err)
	}
	if k, _ := ParseKey(b); KeyID(keys[1]) != KeyID(k) {
		t.Fatal("order not kept")
	}
	if _, err := ParseKeys(a + ",short"); err == nil || !strings.Contains(err.Error(), "key 2") {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := NewBox(rawKey(t), make([]byte, 5)); err == nil {
		t.Fatal("short old key accepted")
	}
}
