package lccn

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFilterMatch(t *testing.T) {
	inst := Instance{ID: "i1", Name: "k8s", VnfdID: "d1", Provider: "Company", ProductName: "K8s", SoftwareVersion: "1.0", VnfdVersion: "2.0"}
	op := Event{Type: TypeOpOcc, Instance: inst, Operation: "SCALE", OperationState: "COMPLETED"}
	create := Event{Type: TypeCreation, Instance: inst}
	cases := []struct {
		name   string
		filter string
		ev     Event
		want   bool
	}{
		{"no filter", `{}`, op, true},
		{"notification type", `{"notificationTypes":["VnfIdentifierCreationNotification"]}`, op, false},
		{"notification type ok", `{"notificationTypes":["VnfIdentifierCreationNotification"]}`, create, true},
		{"operation type", `{"operationTypes":["INSTANTIATE","SCALE"]}`, op, true},
		{"operation type miss", `{"operationTypes":["HEAL"]}`, op, false},
		{"operation types ignore creation", `{"operationTypes":["HEAL"]}`, create, true},
		{"operation state", `{"operationStates":["FAILED_TEMP"]}`, op, false},
		{"vnfdIds", `{"vnfInstanceSubscriptionFilter":{"vnfdIds":["x","d1"]}}`, op, true},
		{"vnfdIds miss", `{"vnfInstanceSubscriptionFilter":{"vnfdIds":["x"]}}`, op, false},
		{"instance ids", `{"vnfInstanceSubscriptionFilter":{"vnfInstanceIds":["i1"]}}`, op, true},
		{"instance names miss", `{"vnfInstanceSubscriptionFilter":{"vnfInstanceNames":["other"]}}`, op, false},
		{"provider only", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Company"}]}}`, op, true},
		{"provider miss", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Other"}]}}`, op, false},
		{"product", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Company","vnfProducts":[{"vnfProductName":"K8s"}]}]}}`, op, true},
		{"product miss", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Company","vnfProducts":[{"vnfProductName":"X"}]}]}}`, op, false},
		{"version", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Company","vnfProducts":[{"vnfProductName":"K8s","versions":[{"vnfSoftwareVersion":"1.0","vnfdVersions":["2.0"]}]}]}]}}`, op, true},
		{"vnfd version miss", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Company","vnfProducts":[{"vnfProductName":"K8s","versions":[{"vnfSoftwareVersion":"1.0","vnfdVersions":["3.0"]}]}]}]}}`, op, false},
		{"second provider entry", `{"vnfInstanceSubscriptionFilter":{"vnfProductsFromProviders":[{"vnfProvider":"Other"},{"vnfProvider":"Company"}]}}`, op, true},
		{"and of attributes", `{"vnfInstanceSubscriptionFilter":{"vnfdIds":["d1"],"vnfInstanceNames":["nope"]}}`, op, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Filter
			if err := json.Unmarshal([]byte(c.filter), &f); err != nil {
				t.Fatal(err)
			}
			if got := f.Match(c.ev); got != c.want {
				t.Fatalf("Match = %v, want %v", got, c.want)
			}
			// MatchOp looks at no instance attribute: it answers the same
			// with the instance unknown, and is true whenever Match is.
			noInst := c.ev
			noInst.Instance = Instance{}
			if f.MatchOp(c.ev) != f.MatchOp(noInst) || c.want && !f.MatchOp(noInst) {
				t.Fatalf("MatchOp = %v (without the instance %v), Match = %v", f.MatchOp(c.ev), f.MatchOp(noInst), c.want)
			}
			if f.VnfInstanceSubscriptionFilter == nil && f.MatchOp(c.ev) != c.want {
				t.Fatalf("without an instance filter MatchOp = %v, want Match's %v", f.MatchOp(c.ev), c.want)
			}
		})
	}
}

func TestCanonicalIgnoresOrder(t *testing.T) {
	var a, b Filter
	_ = json.Unmarshal([]byte(`{"operationTypes":["SCALE","HEAL"],"vnfInstanceSubscriptionFilter":{"vnfdIds":["b","a"]}}`), &a)
	_ = json.Unmarshal([]byte(`{"vnfInstanceSubscriptionFilter":{"vnfdIds":["a","b","a"]},"operationTypes":["HEAL","SCALE"]}`), &b)
	if a.Canonical() != b.Canonical() {
		t.Fatalf("%s != %s", a.Canonical(), b.Canonical())
	}
	var empty Filter
	_ = json.Unmarshal([]byte(`{"vnfInstanceSubscriptionFilter":{}}`), &empty)
	if empty.Canonical() != `{}` || (*Filter)(nil).Canonical() != `{}` {
		t.Fatalf("empty filter canonical %s", empty.Canonical())
	}
}

func TestPayloadStatus(t *testing.T) {
	for state, want := range map[string]string{"STARTING": "START", "PROCESSING": "START", "ROLLING_BACK": "START",
		"COMPLETED": "RESULT", "FAILED_TEMP": "RESULT", "FAILED": "RESULT", "ROLLED_BACK": "RESULT"} {
		p := Payload(Event{Type: TypeOpOcc, OperationState: state, OpOccID: "o", Instance: Instance{ID: "i"}}, "n", "s", "http://x", time.Unix(0, 0))
		if p["notificationStatus"] != want {
			t.Errorf("%s → %v, want %s", state, p["notificationStatus"], want)
		}
	}
}
