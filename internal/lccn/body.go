package lccn

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Body is what a notification says whoever receives it, rendered once when
// the event is queued (the outbox keeps it): the JSON object of the
// notification without the members that differ per delivery — _links,
// subscriptionId and timeStamp. AppendNotification adds them. The members
// are those of json.Marshal(secrets.MaskDoc(Payload(...))), in its order (by
// name), changedInfo and the resource changes' free-form maps masked
// (maskedChanges); a notifier sends it without decoding it.
func Body(e Event, id string) ([]byte, error) {
	p := body{ID: id, NotificationType: e.Type, VnfInstanceID: e.Instance.ID}
	if e.Type == TypeOpOcc {
		status := Status(e.OperationState)
		p.NotificationStatus, p.OperationState, p.Operation = &status, &e.OperationState, &e.Operation
		p.IsAutomaticInvocation, p.VnfLcmOpOccID = &e.IsAutomaticInvocation, &e.OpOccID
		if status == "RESULT" && e.Op != nil {
			if rc := e.Op.ResourceChanges; rc != nil {
				p.AffectedVnfcs, p.AffectedVirtualLinks, p.AffectedVirtualStorages = maskedChanges(rc)
			}
			if len(e.Op.ChangedInfo) > 0 {
				// The only attribute MaskDoc can reach below the top:
				// changedInfo, the one map[string]any.
				p.ChangedInfo = secrets.MaskDoc(e.Op.ChangedInfo)
			}
			p.ChangedExtConnectivity, p.Error = e.Op.ChangedExtConnectivity, e.Op.Error
		}
	}
	return json.Marshal(&p)
}

// body is Payload's map as a struct, its members sorted by name, without
// _links, subscriptionId and timeStamp. subscriptionId and timeStamp sort
// between operationState and vnfInstanceId.
type body struct {
	AffectedVirtualLinks    []map[string]any           `json:"affectedVirtualLinks,omitempty"`
	AffectedVirtualStorages []map[string]any           `json:"affectedVirtualStorages,omitempty"`
	AffectedVnfcs           []model.AffectedVnfc       `json:"affectedVnfcs,omitempty"`
	ChangedExtConnectivity  []model.ExtVirtualLinkInfo `json:"changedExtConnectivity,omitempty"`
	ChangedInfo             any                        `json:"changedInfo,omitempty"`
	Error                   *model.ProblemDetails      `json:"error,omitempty"`
	ID                      string                     `json:"id"`
	IsAutomaticInvocation   *bool                      `json:"isAutomaticInvocation,omitempty"`
	NotificationStatus      *string                    `json:"notificationStatus,omitempty"`
	NotificationType        string                     `json:"notificationType"`
	Operation               *string                    `json:"operation,omitempty"`
	OperationState          *string                    `json:"operationState,omitempty"`
	VnfInstanceID           string                     `json:"vnfInstanceId"`
	VnfLcmOpOccID           *string                    `json:"vnfLcmOpOccId,omitempty"`
}

const (
	memberInstanceID = `"vnfInstanceId":"`
	memberOpOccID    = `,"vnfLcmOpOccId":"`
)

// AppendNotification appends the notification of a Body for one
// subscription to dst: exactly json.Marshal(secrets.MaskDoc(Payload(e, id,
// subscriptionID, base, at))) for the event and id the body was made of.
// The links are made of the body's vnfInstanceId and vnfLcmOpOccId as they
// are encoded (escaping a string escapes each of its characters).
func AppendNotification(dst, b []byte, base, subscriptionID string, at time.Time) ([]byte, error) {
	// The body's last members are vnfInstanceId and maybe vnfLcmOpOccId,
	// both strings: the last `"vnfInstanceId":"` is the member (inside a
	// string a quote is escaped).
	k := bytes.LastIndex(b, []byte(memberInstanceID))
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' || k < 1 || (b[k-1] != ',' && b[k-1] != '{') {
		return dst, errors.New("lccn: not a notification body")
	}
	inst, rest, ok := jsonString(b[k+len(memberInstanceID):])
	if !ok {
		return dst, errors.New("lccn: not a notification body")
	}
	var op []byte
	if bytes.HasPrefix(rest, []byte(memberOpOccID)) {
		if op, rest, ok = jsonString(rest[len(memberOpOccID):]); !ok {
			return dst, errors.New("lccn: not a notification body")
		}
	}
	if string(rest) != "}" {
		return dst, errors.New("lccn: not a notification body")
	}
	dst = append(dst, `{"_links":{"subscription":{"href":"`...)
	dst = appendEscaped(dst, base)
	dst = append(dst, "/vnflcm/v1/subscriptions/"...)
	dst = appendEscaped(dst, subscriptionID)
	dst = append(dst, `"},"vnfInstance":{"href":"`...)
	dst = appendEscaped(dst, base)
	dst = append(dst, "/vnflcm/v1/vnf_instances/"...)
	dst = append(dst, inst...)
	dst = append(dst, `"}`...)
	if op != nil {
		dst = append(dst, `,"vnfLcmOpOcc":{"href":"`...)
		dst = appendEscaped(dst, base)
		dst = append(dst, "/vnflcm/v1/vnf_lcm_op_occs/"...)
		dst = append(dst, op...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, '}')
	if k > 1 { // the members before vnfInstanceId, their comma included
		dst = append(dst, ',')
		dst = append(dst, b[1:k]...)
	} else {
		dst = append(dst, ',')
	}
	dst = append(dst, `"subscriptionId":"`...)
	dst = appendEscaped(dst, subscriptionID)
	dst = append(dst, `","timeStamp":"`...)
	dst = at.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `",`...)
	return append(dst, b[k:]...), nil
}

// jsonString splits b after the encoded string that starts it (its opening
// quote already read): the string's encoded content and what follows its
// closing quote.
func jsonString(b []byte) (content, rest []byte, ok bool) {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[:i], b[i+1:], true
		}
	}
	return nil, nil, false
}

// appendEscaped appends s as encoding/json encodes it inside a string.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(dst, q[1:len(q)-1]...)
		}
	}
	return append(dst, s...)
}
