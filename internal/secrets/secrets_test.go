package secrets

import (
	"encoding/json"
	"strings"
	"testing"
)

func testBox(t *testing.T) *Box {
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

func TestSealOpenMaskRoundTrip(t *testing.T) {
	b := testBox(t)
	in := `{"k8s":{"master_node":{"username":"ubuntu","password":"a'b; touch /tmp/pwned #","port":22}},` +
		`"vims":[{"accessInfo":{"password":{"nested":[1,2]},"username":"admin"}}],"token":12345}`
	sealed, err := b.SealJSON([]byte(in))
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
	again, err := b.SealJSON(sealed)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := b.OpenJSON(again)
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
	if strings.Contains(string(masked), "enc:v1:") || strings.Count(string(masked), Mask) != 3 {
		t.Fatalf("mask: %s", masked)
	}
}

func TestOpenWithWrongKeyFails(t *testing.T) {
	s := testBox(t).Seal([]byte(`"x"`))
	if _, err := testBox(t).Open(s); err == nil {
		t.Fatal("open with another key succeeded")
	}
	if _, err := testBox(t).Open("enc:v1:!!"); err == nil {
		t.Fatal("corrupt value opened")
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
