package notify

import (
	"encoding/json"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// render is the body of a notification for one subscription: exactly the
// bytes of json.Marshal(secrets.MaskDoc(lccn.Payload(...))), without the
// map the payload is built in, its sorted encoding and the masked copy of
// every level: members in the order the map's encoding sorts them, and the
// only attribute MaskDoc can reach below the top (changedInfo, the one
// map[string]any) masked on its own.
func render(e lccn.Event, id, subscriptionID, base string, at time.Time) ([]byte, error) {
	p := payload{
		Links: links{
			Subscription: link{base + "/vnflcm/v1/subscriptions/" + subscriptionID},
			VnfInstance:  link{base + "/vnflcm/v1/vnf_instances/" + e.Instance.ID},
		},
		ID: id, NotificationType: e.Type, SubscriptionID: subscriptionID,
		TimeStamp: at.UTC().Format(time.RFC3339Nano), VnfInstanceID: e.Instance.ID,
	}
	if e.Type == lccn.TypeOpOcc {
		status := lccn.Status(e.OperationState)
		p.Links.VnfLcmOpOcc = &link{base + "/vnflcm/v1/vnf_lcm_op_occs/" + e.OpOccID}
		p.NotificationStatus, p.OperationState, p.Operation = &status, &e.OperationState, &e.Operation
		p.IsAutomaticInvocation, p.VnfLcmOpOccID = &e.IsAutomaticInvocation, &e.OpOccID
		if status == "RESULT" && e.Op != nil {
			if rc := e.Op.ResourceChanges; rc != nil {
				p.AffectedVnfcs, p.AffectedVirtualLinks, p.AffectedVirtualStorages = rc.AffectedVnfcs, rc.AffectedVirtualLinks, rc.AffectedVirtualStorages
			}
			if len(e.Op.ChangedInfo) > 0 {
				p.ChangedInfo = secrets.MaskDoc(e.Op.ChangedInfo)
			}
			p.ChangedExtConnectivity, p.Error = e.Op.ChangedExtConnectivity, e.Op.Error
		}
	}
	return json.Marshal(&p)
}

// payload is lccn.Payload's map as a struct, its members sorted by name.
type payload struct {
	Links                   links                      `json:"_links"`
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
	SubscriptionID          string                     `json:"subscriptionId"`
	TimeStamp               string                     `json:"timeStamp"`
	VnfInstanceID           string                     `json:"vnfInstanceId"`
	VnfLcmOpOccID           *string                    `json:"vnfLcmOpOccId,omitempty"`
}

type links struct {
	Subscription link  `json:"subscription"`
	VnfInstance  link  `json:"vnfInstance"`
	VnfLcmOpOcc  *link `json:"vnfLcmOpOcc,omitempty"`
}

type link struct {
	Href string `json:"href"`
}
