// Package lccn holds SOL003 lifecycle change notifications: subscription
// filters and how they match, and the notification payloads. It imports only
// model and secrets: the store uses it to fan events out to matching
// subscriptions inside the transaction that changes state and to render the
// body the outbox keeps, the notifier to make what it sends of that body.
package lccn

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Notification types.
const (
	TypeOpOcc    = "VnfLcmOperationOccurrenceNotification"
	TypeCreation = "VnfIdentifierCreationNotification"
	TypeDeletion = "VnfIdentifierDeletionNotification"
)

// Filter is SOL003 LifecycleChangeNotificationsFilter.
type Filter struct {
	VnfInstanceSubscriptionFilter *InstanceFilter `json:"vnfInstanceSubscriptionFilter,omitempty"`
	NotificationTypes             []string        `json:"notificationTypes,omitempty"`
	OperationTypes                []string        `json:"operationTypes,omitempty"`
	OperationStates               []string        `json:"operationStates,omitempty"`
}

// InstanceFilter is SOL003 VnfInstanceSubscriptionFilter.
type InstanceFilter struct {
	VnfdIDs                  []string       `json:"vnfdIds,omitempty"`
	VnfProductsFromProviders []ProviderFilt `json:"vnfProductsFromProviders,omitempty"`
	VnfInstanceIDs           []string       `json:"vnfInstanceIds,omitempty"`
	VnfInstanceNames         []string       `json:"vnfInstanceNames,omitempty"`
}

// ProviderFilt selects products of one provider.
type ProviderFilt struct {
	VnfProvider string        `json:"vnfProvider"`
	VnfProducts []ProductFilt `json:"vnfProducts,omitempty"`
}

// ProductFilt selects versions of one product.
type ProductFilt struct {
	VnfProductName string        `json:"vnfProductName"`
	Versions       []VersionFilt `json:"versions,omitempty"`
}

// VersionFilt selects VNFD versions of one software version.
type VersionFilt struct {
	VnfSoftwareVersion string   `json:"vnfSoftwareVersion"`
	VnfdVersions       []string `json:"vnfdVersions,omitempty"`
}

// Instance is what filters look at.
type Instance struct {
	ID, Name, VnfdID, Provider, ProductName, SoftwareVersion, VnfdVersion string
}

// InstanceOf extracts the filter view of an instance.
func InstanceOf(in *model.VnfInstance) Instance {
	return Instance{ID: in.ID, Name: in.VnfInstanceName, VnfdID: in.VnfdID, Provider: in.VnfProvider,
		ProductName: in.VnfProductName, SoftwareVersion: in.VnfSoftwareVersion, VnfdVersion: in.VnfdVersion}
}

// Event is a state change to notify about.
type Event struct {
	Type     string // TypeOpOcc, TypeCreation, TypeDeletion
	Instance Instance
	// For TypeOpOcc:
	OpOccID               string
	Operation             string
	OperationState        string
	IsAutomaticInvocation bool
	Op                    *model.VnfLcmOpOcc // snapshot for RESULT details
}

func in(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }

// MatchOp reports whether f may select e whatever its instance: the
// notification type and, for an operation occurrence, its operation and
// state (false: Match is false too, so the instance need not be read).
func (f *Filter) MatchOp(e Event) bool {
	if f == nil {
		return true
	}
	if !in(f.NotificationTypes, e.Type) {
		return false
	}
	return e.Type != TypeOpOcc || in(f.OperationTypes, e.Operation) && in(f.OperationStates, e.OperationState)
}

// Match reports whether f selects e. Attributes are ANDed; values inside one
// attribute are ORed; an absent attribute matches everything (SOL003 4.4.1.1.x).
func (f *Filter) Match(e Event) bool {
	if f == nil {
		return true
	}
	if !f.MatchOp(e) {
		return false
	}
	i := f.VnfInstanceSubscriptionFilter
	if i == nil {
		return true
	}
	if !in(i.VnfdIDs, e.Instance.VnfdID) || !in(i.VnfInstanceIDs, e.Instance.ID) || !in(i.VnfInstanceNames, e.Instance.Name) {
		return false
	}
	if len(i.VnfProductsFromProviders) == 0 {
		return true
	}
	for _, p := range i.VnfProductsFromProviders {
		if p.VnfProvider != e.Instance.Provider {
			continue
		}
		if len(p.VnfProducts) == 0 {
			return true
		}
		for _, prod := range p.VnfProducts {
			if prod.VnfProductName != e.Instance.ProductName {
				continue
			}
			if len(prod.Versions) == 0 {
				return true
			}
			for _, v := range prod.Versions {
				if v.VnfSoftwareVersion == e.Instance.SoftwareVersion && in(v.VnfdVersions, e.Instance.VnfdVersion) {
					return true
				}
			}
		}
	}
	return false
}

// Canonical returns a stable encoding of f, for duplicate detection
// (same callbackUri and filter → 303 See Other).
func (f *Filter) Canonical() string {
	if f == nil {
		return "{}"
	}
	c := *f
	sorted := func(s []string) []string {
		out := slices.Clone(s)
		slices.Sort(out)
		return slices.Compact(out)
	}
	c.NotificationTypes, c.OperationTypes, c.OperationStates = sorted(c.NotificationTypes), sorted(c.OperationTypes), sorted(c.OperationStates)
	if f.VnfInstanceSubscriptionFilter != nil {
		i := *f.VnfInstanceSubscriptionFilter
		i.VnfdIDs, i.VnfInstanceIDs, i.VnfInstanceNames = sorted(i.VnfdIDs), sorted(i.VnfInstanceIDs), sorted(i.VnfInstanceNames)
		if i.VnfdIDs == nil && i.VnfInstanceIDs == nil && i.VnfInstanceNames == nil && len(i.VnfProductsFromProviders) == 0 {
			c.VnfInstanceSubscriptionFilter = nil
		} else {
			c.VnfInstanceSubscriptionFilter = &i
		}
	}
	b, _ := json.Marshal(c) // struct field order is fixed
	return string(b)
}

// Status is START for STARTING/PROCESSING/ROLLING_BACK and RESULT otherwise.
func Status(state string) string {
	switch state {
	case model.StateStarting, model.StateProcessing, model.StateRollingBack:
		return "START"
	}
	return "RESULT"
}

// Payload renders a notification for one subscription. base is the API's
// external base URL; subscriptionID and id (stable across retries and
// copies) identify the delivery.
func Payload(e Event, id, subscriptionID, base string, at time.Time) map[string]any {
	link := func(p string) map[string]string { return map[string]string{"href": base + p} }
	links := map[string]any{
		"vnfInstance":  link("/vnflcm/v1/vnf_instances/" + e.Instance.ID),
		"subscription": link("/vnflcm/v1/subscriptions/" + subscriptionID),
	}
	p := map[string]any{
		"id": id, "notificationType": e.Type, "subscriptionId": subscriptionID,
		"timeStamp": at.UTC().Format(time.RFC3339Nano), "vnfInstanceId": e.Instance.ID, "_links": links,
	}
	if e.Type != TypeOpOcc {
		return p
	}
	links["vnfLcmOpOcc"] = link("/vnflcm/v1/vnf_lcm_op_occs/" + e.OpOccID)
	status := Status(e.OperationState)
	p["notificationStatus"] = status
	p["operationState"] = e.OperationState
	p["operation"] = e.Operation
	p["isAutomaticInvocation"] = e.IsAutomaticInvocation
	p["vnfLcmOpOccId"] = e.OpOccID
	if status == "RESULT" && e.Op != nil {
		if rc := e.Op.ResourceChanges; rc != nil {
			vnfcs, links, storages := maskedChanges(rc)
			if len(vnfcs) > 0 {
				p["affectedVnfcs"] = vnfcs
			}
			if len(links) > 0 {
				p["affectedVirtualLinks"] = links
			}
			if len(storages) > 0 {
				p["affectedVirtualStorages"] = storages
			}
		}
		if len(e.Op.ChangedInfo) > 0 {
			p["changedInfo"] = e.Op.ChangedInfo
		}
		if len(e.Op.ChangedExtConnectivity) > 0 {
			p["changedExtConnectivity"] = e.Op.ChangedExtConnectivity
		}
		if e.Op.Error != nil {
			p["error"] = e.Op.Error
		}
	}
	return p
}
