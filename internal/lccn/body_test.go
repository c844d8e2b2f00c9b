package lccn_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// A notification made of its body sends exactly what masking the payload
// map and encoding it sent: same members, same order, same masking, for
// every kind of notification, whatever the base URL and subscription id.
func TestBodyMakesTheMaskedPayload(t *testing.T) {
	inst := lccn.Instance{ID: "6f1e2d3c-0000-4000-8000-000000000001", Name: "k8s <&>"}
	// As the notifier reads it: decoded from the outbox's JSON.
	var full model.VnfLcmOpOcc
	if err := json.Unmarshal([]byte(`{"id":"op-1","operationState":"COMPLETED","operation":"INSTANTIATE",
		"resourceChanges":{"affectedVnfcs":[{"id":"c1","vduId":"master","changeType":"ADDED",
			"computeResource":{"resourceId":"srv-1"},"metadata":{"password":"vnfc-pw","n":1,"big":12345678901234567890}}],
			"affectedVirtualLinks":[{"id":"vl","token":"t-123","nested":{"apiKey":"vl-key"}}],"affectedVirtualStorages":[{"id":"st","secret":"st-321"}]},
		"changedInfo":{"vnfInstanceName":"new","metadata":{"db_password":"p-456","list":[{"apiKey":"k-789"},"x"]},"n":2.5},
		"changedExtConnectivity":[{"id":"ext","resourceHandle":{"resourceId":"net-1"}}],
		"error":{"status":500,"title":"failed","detail":"step x: <boom> & more"}}`), &full); err != nil {
		t.Fatal(err)
	}
	empty := model.VnfLcmOpOcc{ID: "op-2", OperationState: "FAILED_TEMP", ResourceChanges: &model.ResourceChanges{}, ChangedInfo: map[string]any{}}
	events := map[string]lccn.Event{
		"creation": {Type: lccn.TypeCreation, Instance: inst},
		"deletion": {Type: lccn.TypeDeletion, Instance: inst},
		"start":    {Type: lccn.TypeOpOcc, Instance: inst, OpOccID: "op-1", Operation: "INSTANTIATE", OperationState: "STARTING", Op: &full},
		"result":   {Type: lccn.TypeOpOcc, Instance: inst, OpOccID: "op-1", Operation: "INSTANTIATE", OperationState: "COMPLETED", Op: &full, IsAutomaticInvocation: true},
		"empty":    {Type: lccn.TypeOpOcc, Instance: inst, OpOccID: "op-2", Operation: "SCALE", OperationState: "FAILED_TEMP", Op: &empty},
		"no op":    {Type: lccn.TypeOpOcc, Instance: inst, OpOccID: "op-3", Operation: "HEAL", OperationState: "ROLLED_BACK"},
		"blank":    {Type: lccn.TypeOpOcc},
		"odd ids": {Type: lccn.TypeOpOcc, Instance: lccn.Instance{ID: "i\"<&>\\ \u2028é,\"vnfInstanceId\":\""}, OpOccID: "o\\\"}",
			Operation: "HEAL", OperationState: "FAILED_TEMP", Op: &full},
		"odd creation": {Type: lccn.TypeCreation, Instance: lccn.Instance{ID: ",\"vnfInstanceId\":\"x"}},
	}
	at := time.Date(2026, 11, 26, 16, 0, 0, 123456789, time.FixedZone("x", 3600))
	for name, e := range events {
		for _, base := range []string{"https://vnfm.example:9890", "", "https://v.example/p?a=1&b=2", "http://[::1]:80/a&b<c>\"q\"/é\u2028"} {
			t.Run(name, func(t *testing.T) {
				want, err := json.Marshal(secrets.MaskDoc(lccn.Payload(e, "n-1", "s-1", base, at)))
				if err != nil {
					t.Fatal(err)
				}
				b, err := lccn.Body(e, "n-1")
				if err != nil {
					t.Fatal(err)
				}
				got, err := lccn.AppendNotification([]byte("kept"), b, base, "s-1", at)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, append([]byte("kept"), want...)) {
					t.Fatalf("from the body:\n%s\nmasked payload:\n%s", got, want)
				}
			})
		}
	}
	b, _ := lccn.Body(events["result"], "n-1")
	got, _ := lccn.AppendNotification(nil, b, "", "s-1", at)
	for _, secret := range []string{"p-456", "k-789", "vnfc-pw", "t-123", "vl-key", "st-321"} {
		if bytes.Contains(got, []byte(secret)) {
			t.Fatalf("secret %s sent: %s", secret, got)
		}
	}
}

// What is not a body is refused, not spliced.
func TestAppendNotificationRefusesWhatIsNotABody(t *testing.T) {
	for _, b := range []string{``, `{}`, `{"id":"n"}`, `{"vnfInstanceId":"i"`, `{"vnfInstanceId":"i","x":1}`,
		`{"vnfInstanceId":"i}`, `{"id":"n","vnfInstanceId":"i","vnfLcmOpOccId":"o}`, `["vnfInstanceId":"i"]`} {
		if got, err := lccn.AppendNotification(nil, []byte(b), "", "s", time.Unix(0, 0)); err == nil {
			t.Errorf("%s: made %s", b, got)
		}
	}
}
