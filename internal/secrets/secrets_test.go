package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func testBox(t testing.TB) *Box {
	t.Helper()
	k, err := ParseKey(NewKey())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBox(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIsSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"password": true, "ssh_password": true, "sshPassword": true, "clientPassword": true,
		"bearer_token": true, "private_key": true, "privateKey": true, "ssh-key": true,
		"client_secret": true, "credentials": true, "cert_key": true, "api_key": true,
		"username": false, "vimId": false, "aspectId": false, "ca_cert": false, "keyboard": false,
	} {
		t.Run(key, func(t *testing.T) {
			if got := IsSecretKey(key); got != want {
				t.Fatalf("IsSecretKey(%q) = %v, want %v", key, got, want)
			}
		})
	}
}

// The allocation-free IsSecretKey answers as the plain normalisation does,
// for any key: ASCII, Unicode (whose lower case may be ASCII: the Kelvin
// sign) and long ones.
func TestIsSecretKeyFastPathAgrees(t *testing.T) {
	alphabet := []string{"a", "P", "s", "S", "w", "o", "R", "d", "_", "-", "k", "e", "y", "t", "N", "1", " ", ".", "\u212a", "é", "İ", "api", "KEY", "Token", "pass"}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"", "password", "PassWord", "api_\u212aey", strings.Repeat("x", 63) + "token", strings.Repeat("_", 80) + "secret", strings.Repeat("y", 100)}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		keys = append(keys, b.String())
	}
	for _, k := range keys {
		if got, want := IsSecretKey(k), isSecretKeySlow(k); got != want {
			t.Fatalf("IsSecretKey(%q) = %v, the plain normalisation says %v", k, got, want)
		}
	}
	if !IsSecretKey("api_\u212aey") {
		t.Fatal("the Kelvin sign's lower case is k: api_\u212aey is apikey")
	}
	if n := testing.AllocsPerRun(100, func() { IsSecretKey("vimConnectionInfo_Password") }); n != 0 {
		t.Fatalf("IsSecretKey allocates %v times per ASCII key", n)
	}
}

func TestSealOpenMaskRoundTrip(t *testing.T) {
	b := testBox(t)
	in := `{"k8s":{"master_node":{"username":"ubuntu","password":"a'b; touch /tmp/pwned #","port":22}},` +
		`"vims":[{"accessInfo":{"password":{"nested":[1,2]},"username":"admin"}}],"token":12345}`
	at := At("vnf_lcm_op_occs/1/operation_params")
	sealed, err := b.SealJSON([]byte(in), at)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"touch /tmp/pwned", "12345", "nested"} {
		if strings.Contains(string(sealed), leak) {
			t.Fatalf("sealed document still contains %q: %s", leak, sealed)
		}
	}
	if !strings.Contains(string(sealed), `"username":"ubuntu"`) {
		t.Fatalf("non-secret value changed: %s", sealed)
	}
	again, err := b.SealJSON(sealed, at)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(sealed) {
		t.Fatal("sealing a sealed document again changed it")
	}
	opened, err := b.OpenJSON(again, at)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	_ = json.Unmarshal([]byte(in), &want)
	_ = json.Unmarshal(opened, &got)
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Fatalf("round trip mismatch:\n got %s\nwant %s", gj, wj)
	}
	masked, err := MaskJSON(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(masked), "enc:v") || strings.Count(string(masked), Mask) != 3 {
		t.Fatalf("mask: %s", masked)
	}
}

func TestOpenWithWrongKeyFails(t *testing.T) {
	at := At("t/1").Key("password")
	s := testBox(t).SealAt([]byte(`"x"`), at)
	if _, err := testBox(t).OpenAt(s, at); err == nil {
		t.Fatal("open with another key succeeded")
	}
	if _, err := testBox(t).OpenAt("enc:v1:!!", at); err == nil {
		t.Fatal("corrupt value opened")
	}
}

// TestSealedValuesAreBoundToTheirPlace: a value opens only in the row and
// at the JSON path it was sealed for; copied into another row, another
// field or another document it does not open, and sealing a document that
// holds such a copy is an error.
func TestSealedValuesAreBoundToTheirPlace(t *testing.T) {
	b := testBox(t)
	inst := At("vnf_instances/aaaa")
	doc, err := b.SealDoc(map[string]any{"metadata": map[string]any{"api_token": "tok-1"},
		"vimConnectionInfo": []any{map[string]any{"accessInfo": map[string]any{"password": "vim-pw"}}}}, inst)
	if err != nil {
		t.Fatal(err)
	}
	token := doc.(map[string]any)["metadata"].(map[string]any)["api_token"].(string)
	vimPW := doc.(map[string]any)["vimConnectionInfo"].([]any)[0].(map[string]any)["accessInfo"].(map[string]any)["password"].(string)
	if !strings.HasPrefix(token, "enc:v3:"+b.KeyID()+":") || !IsSealed(token) {
		t.Fatalf("sealed value %q", token)
	}
	if v, err := b.OpenValue(token, inst.Key("metadata").Key("api_token")); err != nil || v != "tok-1" {
		t.Fatalf("open at its place: %v %v", v, err)
	}
	// Array positions do not matter: the element's field does.
	if _, err := b.OpenAt(vimPW, Place{Row: inst.Row, Path: "/vimConnectionInfo/*/accessInfo/password"}); err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []Place{
		At("vnf_instances/bbbb").Key("metadata").Key("api_token"),                            // another row
		inst.Key("metadata").Key("password"),                                                 // another field
		inst.Key("extensions").Key("api_token"),                                              // another column
		At("vnf_lcm_op_occs/aaaa/operation_params").Key("additionalParams").Key("api_token"), // another table
	} {
		if _, err := b.OpenAt(token, wrong); !errors.Is(err, ErrMisplaced) {
			t.Errorf("opened at %s: %v", wrong, err)
		}
	}
	// A request (or a restored backup) that carries the copied value into
	// another document: sealing that document refuses it.
	moved := map[string]any{"additionalParams": map[string]any{"node_password": token}}
	if _, err := b.SealDoc(moved, At("vnf_lcm_op_occs/cccc/operation_params")); !errors.Is(err, ErrMisplaced) {
		t.Fatalf("sealing a document with a value sealed elsewhere: %v", err)
	}
	opened, err := b.OpenDoc(moved, At("vnf_lcm_op_occs/cccc/operation_params"))
	if !errors.Is(err, ErrMisplaced) || opened.(map[string]any)["additionalParams"].(map[string]any)["node_password"] != Mask {
		t.Fatalf("opening a document with a value sealed elsewhere: %v %v", opened, err)
	}
	// Keys with '/' or '*' do not alias other paths.
	a := b.SealAt([]byte(`"x"`), inst.Key("a/b"))
	if _, err := b.OpenAt(a, inst.Key("a").Key("b")); err == nil {
		t.Fatal(`"a/b" and a/b are the same place`)
	}
	e := b.SealAt([]byte(`"x"`), inst.Key("l").Key("*"))
	if _, err := b.OpenAt(e, inst.Key("l").Elem()); err == nil {
		t.Fatal(`key "*" and an array element are the same place`)
	}
}

func TestLooksSealed(t *testing.T) {
	for s, want := range map[string]bool{"enc:v1:x": true, "enc:v2:k:x": true, "enc:v3:k:x": true, "enc:v17:": true,
		"enc:v": false, "enc:vx:": false, "enc:v3": false, "xenc:v2:k": false, "hunter2": false} {
		if LooksSealed(s) != want {
			t.Errorf("LooksSealed(%q) = %v", s, !want)
		}
	}
}

func TestScrub(t *testing.T) {
	var doc any
	_ = json.Unmarshal([]byte(`{"a":{"password":"hunter22"},"b":["x"],"pw":{"token":"abc"}}`), &doc)
	vals := Values(doc)
	got := Scrub("ssh failed: auth hunter22 rejected; abc", vals)
	if strings.Contains(got, "hunter22") || !strings.Contains(got, "abc") {
		t.Fatalf("scrub: %q (values %v)", got, vals)
	}
}

func TestParseKey(t *testing.T) {
	if _, err := ParseKey("short"); err == nil {
		t.Fatal("short key accepted")
	}
	if _, err := NewBox(make([]byte, 16)); err == nil {
		t.Fatal("16-byte key accepted")
	}
}

// SealJSON and OpenJSON pass documents that cannot hold a secret through
// untouched; a key that spells a secret word in any way still gets sealed,
// and invalid JSON is still refused.
func TestSealJSONFastPath(t *testing.T) {
	b := testBox(t)
	p := At("row-1")
	plain := []byte(`{"a": 1, "b": [true, "x"], "nested": {"c": null}}`)
	got, err := b.SealJSON(plain, p)
	if err != nil || string(got) != string(plain) {
		t.Fatalf("no secret key: %s %v, want the document as it was", got, err)
	}
	if got, err := b.OpenJSON(plain, p); err != nil || string(got) != string(plain) {
		t.Fatalf("nothing sealed: %s %v", got, err)
	}
	for _, doc := range []string{
		`{"PassWord": "s3cr3t-value"}`, `{"pass_word": "s3cr3t-value"}`, `{"api-key": "s3cr3t-value"}`,
		`{"\u0070assword": "s3cr3t-value"}`, `{"x": {"clientSecret": "s3cr3t-value"}}`, `{"tO\u212Aen": "s3cr3t-value"}`,
	} {
		sealed, err := b.SealJSON([]byte(doc), p)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if strings.Contains(string(sealed), "s3cr3t-value") || !strings.Contains(string(sealed), "enc:v3:") {
			t.Fatalf("%s sealed as %s", doc, sealed)
		}
		opened, err := b.OpenJSON(sealed, p)
		if err != nil || !strings.Contains(string(opened), "s3cr3t-value") {
			t.Fatalf("%s: opened %s %v", doc, opened, err)
		}
	}
	if v := ValuesJSON(plain); v != nil {
		t.Fatalf("values of a document without secrets: %q", v)
	}
	if v := ValuesJSON([]byte(`{"x": {"Pass_Word": "s3cr3t-value"}}`)); len(v) != 1 || v[0] != "s3cr3t-value" {
		t.Fatalf("values: %q", v)
	}
	for _, bad := range []string{`{"a": `, `not json`} {
		if _, err := b.SealJSON([]byte(bad), p); err == nil {
			t.Fatalf("SealJSON(%q) accepted invalid JSON", bad)
		}
		if _, err := b.OpenJSON([]byte(bad), p); err == nil {
			t.Fatalf("OpenJSON(%q) accepted invalid JSON", bad)
		}
	}
}

// A value deep in a document is sealed for its own path, arrays as "*",
// keys escaped: the path a walk builds on demand is the one Place.Key and
// Place.Elem build.
func TestDeepSealedValueIsBoundToItsPath(t *testing.T) {
	k1, k2 := rawKey(t), rawKey(t)
	b, _ := NewBox(k1)
	doc := any(map[string]any{"api_token": "deep"})
	row := At("vnf_instances/aaaa")
	var keys []string
	for i := range 200 {
		k := fmt.Sprintf("k/%d*~", i)
		keys = append(keys, k)
		if i%3 == 0 {
			doc = []any{doc}
		}
		doc = map[string]any{k: doc}
	}
	deepest := func(v any) (string, Place) {
		at := row
		for i := len(keys) - 1; i >= 0; i-- {
			v = v.(map[string]any)[keys[i]]
			at = at.Key(keys[i])
			if l, ok := v.([]any); ok {
				v = l[0]
				at = at.Elem()
			}
		}
		return v.(map[string]any)["api_token"].(string), at.Key("api_token")
	}
	sealed, err := b.SealDoc(doc, row)
	if err != nil {
		t.Fatal(err)
	}
	token, at := deepest(sealed)
	if got, err := b.OpenValue(token, at); err != nil || got != "deep" {
		t.Fatalf("open at %s: %v %v", at, got, err)
	}
	if opened, err := b.OpenDoc(sealed, row); err != nil || !reflect.DeepEqual(opened, doc) {
		t.Fatalf("OpenDoc: %v", err)
	}
	// Re-sealing with a new key binds the value to the same path.
	rotated, _ := NewBox(k2, k1)
	out, changed, err := rotated.ResealDoc(sealed, row)
	if err != nil || !changed {
		t.Fatalf("reseal: %v %v", changed, err)
	}
	token2, _ := deepest(out)
	fresh, _ := NewBox(k2)
	if got, err := fresh.OpenValue(token2, at); err != nil || got != "deep" || token2 == token {
		t.Fatalf("open the re-sealed value at %s: %v %v", at, got, err)
	}
}
