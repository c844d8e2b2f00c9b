package lcm

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// sealInstance hands the store the encoding of every attribute that had no
// secret to seal (store.Finish.Docs) — the bytes the store would write for
// the sealed instance — and none for one it sealed.
func TestSealInstanceHandsOverTheEncodedAttributes(t *testing.T) {
	key, _ := secrets.ParseKey(secrets.NewKey())
	box, _ := secrets.NewBox(key)
	svc := &Service{box: box}
	in := &model.VnfInstance{ID: "0b0e4b8e-3c39-4d5e-8b43-2f3f0b8d6a11",
		VnfConfigurableProperties: map[string]any{"isAutoscaleEnabled": true, "n": 12345678901234.5},
		VimConnectionInfo: []model.VimConnectionInfo{{ID: "v", VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3",
			AccessInfo: map[string]any{"username": "u", "password": "s3cret"}}},
		InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple", VnfState: "STARTED"},
		Metadata:            map[string]any{"a": "<b>", "c": []any{1.0, "x"}},
	}
	sealed, docs, err := svc.sealInstance(in, &secrets.Kept{})
	if err != nil {
		t.Fatal(err)
	}
	attrs := []any{sealed.VnfConfigurableProperties, sealed.VimConnectionInfo, sealed.InstantiatedVnfInfo, sealed.Metadata, sealed.Extensions}
	for k, v := range attrs {
		want, _ := json.Marshal(v)
		switch {
		case k == 1 && docs[k] != nil:
			t.Errorf("vimConnectionInfo had a secret sealed, but its encoding was handed over: %s", docs[k])
		case k != 1 && !bytes.Equal(docs[k], want):
			t.Errorf("attribute %d: handed %s, the sealed instance's is %s", k, docs[k], want)
		}
	}
	if bytes.Contains(mustJSON(t, sealed.VimConnectionInfo), []byte("s3cret")) {
		t.Error("the password is not sealed")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
