package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// The outbox keeps of an operation's snapshot what a notification shows:
// its body, rendered from the whole snapshot (a RESULT's details, nothing
// for a START), masked, never the request body.
func TestOutboxBodyIsWhatNotificationsShow(t *testing.T) {
	op := &model.VnfLcmOpOcc{ID: "op", OperationState: model.StateCompleted, Operation: model.OpInstantiate,
		StartTime: time.Now(), VnfInstanceID: "i", OperationParams: json.RawMessage(`{"password":"in-the-request"}`),
		Error:                  &model.ProblemDetails{Status: 500, Detail: "d"},
		ResourceChanges:        &model.ResourceChanges{AffectedVnfcs: []model.AffectedVnfc{{ID: "c", VduID: "v", ChangeType: "ADDED"}}},
		ChangedInfo:            map[string]any{"vnfInstanceName": "n", "metadata": map[string]any{"apiToken": "in-changed-info"}},
		ChangedExtConnectivity: []model.ExtVirtualLinkInfo{{ID: "e"}}}
	for _, state := range []string{model.StateStarting, model.StateProcessing, model.StateCompleted, model.StateFailedTemp} {
		ev := lccn.Event{Type: lccn.TypeOpOcc, OpOccID: op.ID, Operation: op.Operation, OperationState: state, Op: op, Instance: lccn.Instance{ID: "i"}}
		ids, body, err := outboxOf([]target{{id: "s"}, {id: "t", f: &lccn.Filter{OperationStates: []string{"ROLLED_BACK"}}}}, ev, "n")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(ids, ",") != "s" {
			t.Fatalf("%s: queued for %v, want s", state, ids)
		}
		at := time.Unix(1, 0)
		want, _ := json.Marshal(secrets.MaskDoc(lccn.Payload(ev, "n", "s", "", at)))
		got, err := lccn.AppendNotification(nil, body, "", "s", at)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: notification from the outbox (%v)\n%s\nfrom the whole snapshot\n%s", state, err, got, want)
		}
		if strings.Contains(string(body), "in-the-request") || strings.Contains(string(body), "in-changed-info") {
			t.Fatalf("%s: a secret is stored: %s", state, body)
		}
		if lccn.Status(state) == "START" && strings.Contains(string(body), `"changedInfo"`) {
			t.Fatalf("%s: details stored: %s", state, body)
		}
	}
}
