package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// The outbox keeps of an operation's snapshot what a notification shows: a
// RESULT's details, nothing for a START, never the request body — and the
// payload rendered from it is the one the whole snapshot gave.
func TestOutboxEventKeepsWhatNotificationsShow(t *testing.T) {
	op := &model.VnfLcmOpOcc{ID: "op", OperationState: model.StateCompleted, Operation: model.OpInstantiate,
		StartTime: time.Now(), VnfInstanceID: "i", OperationParams: json.RawMessage(`{"password":"in-the-request"}`),
		Error:           &model.ProblemDetails{Status: 500, Detail: "d"},
		ResourceChanges: &model.ResourceChanges{AffectedVnfcs: []model.AffectedVnfc{{ID: "c", VduID: "v", ChangeType: "ADDED"}}},
		ChangedInfo:     map[string]any{"vnfInstanceName": "n"}, ChangedExtConnectivity: []model.ExtVirtualLinkInfo{{ID: "e"}}}
	for _, state := range []string{model.StateStarting, model.StateProcessing, model.StateCompleted, model.StateFailedTemp} {
		ev := lccn.Event{Type: lccn.TypeOpOcc, OpOccID: op.ID, Operation: op.Operation, OperationState: state, Op: op, Instance: lccn.Instance{ID: "i"}}
		_, raw, err := outboxOf([]target{{id: "s"}}, ev)
		if err != nil {
			t.Fatal(err)
		}
		var stored lccn.Event
		if err := json.Unmarshal(raw, &stored); err != nil {
			t.Fatal(err)
		}
		if (stored.Op == nil) != (lccn.Status(state) == "START") {
			t.Fatalf("%s: snapshot kept %v", state, stored.Op)
		}
		var full lccn.Event
		b, _ := json.Marshal(ev)
		_ = json.Unmarshal(b, &full)
		at := time.Unix(1, 0)
		want, _ := json.Marshal(lccn.Payload(full, "n", "s", "", at))
		got, _ := json.Marshal(lccn.Payload(stored, "n", "s", "", at))
		if string(got) != string(want) {
			t.Fatalf("%s: payload from the outbox\n%s\nfrom the whole snapshot\n%s", state, got, want)
		}
		if strings.Contains(string(raw), "in-the-request") {
			t.Fatalf("%s: request body stored: %s", state, raw)
		}
	}
}
