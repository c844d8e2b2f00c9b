// Package model holds the SOL003 v2.6.1 data structures the VNFM stores, passes
// to drivers and renders. It is a leaf package: JSON shapes only, no behaviour
// beyond small helpers, so every layer can share it.
package model

import (
	"encoding/json"
	"time"
)

// Instantiation states of a VNF instance.
const (
	NotInstantiated = "NOT_INSTANTIATED"
	Instantiated    = "INSTANTIATED"
)

// VnfInstance is SOL003 VnfInstance without `_links`, which the API derives.
type VnfInstance struct {
	ID                        string               `json:"id"`
	VnfInstanceName           string               `json:"vnfInstanceName,omitempty"`
	VnfInstanceDescription    string               `json:"vnfInstanceDescription,omitempty"`
	VnfdID                    string               `json:"vnfdId"`
	VnfProvider               string               `json:"vnfProvider"`
	VnfProductName            string               `json:"vnfProductName"`
	VnfSoftwareVersion        string               `json:"vnfSoftwareVersion"`
	VnfdVersion               string               `json:"vnfdVersion"`
	VnfPkgID                  string               `json:"vnfPkgId,omitempty"` // Tacker v1 compatibility
	VnfConfigurableProperties map[string]any       `json:"vnfConfigurableProperties,omitempty"`
	VimConnectionInfo         []VimConnectionInfo  `json:"vimConnectionInfo,omitempty"`
	InstantiationState        string               `json:"instantiationState"`
	InstantiatedVnfInfo       *InstantiatedVnfInfo `json:"instantiatedVnfInfo,omitempty"`
	Metadata                  map[string]any       `json:"metadata,omitempty"`
	Extensions                map[string]any       `json:"extensions,omitempty"`
}

// VimConnectionInfo carries how to reach a VIM; accessInfo may hold secrets
// (they are sealed at rest and masked on output by the secrets package).
type VimConnectionInfo struct {
	ID            string         `json:"id"`
	VimID         string         `json:"vimId,omitempty"`
	VimType       string         `json:"vimType"`
	InterfaceInfo map[string]any `json:"interfaceInfo,omitempty"`
	AccessInfo    map[string]any `json:"accessInfo,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// InstantiatedVnfInfo is present only while the instance is INSTANTIATED.
type InstantiatedVnfInfo struct {
	FlavourID                  string                       `json:"flavourId"`
	VnfState                   string                       `json:"vnfState"`
	ScaleStatus                []ScaleInfo                  `json:"scaleStatus,omitempty"`
	ExtCpInfo                  []ExtCpInfo                  `json:"extCpInfo,omitempty"`
	ExtVirtualLinkInfo         []ExtVirtualLinkInfo         `json:"extVirtualLinkInfo,omitempty"`
	ExtManagedVirtualLinkInfo  []ExtManagedVirtualLinkInfo  `json:"extManagedVirtualLinkInfo,omitempty"`
	MonitoringParameters       []map[string]any             `json:"monitoringParameters,omitempty"`
	LocalizationLanguage       string                       `json:"localizationLanguage,omitempty"`
	VnfcResourceInfo           []VnfcResourceInfo           `json:"vnfcResourceInfo,omitempty"`
	VirtualLinkResourceInfo    []VirtualLinkResourceInfo    `json:"virtualLinkResourceInfo,omitempty"`
	VirtualStorageResourceInfo []VirtualStorageResourceInfo `json:"virtualStorageResourceInfo,omitempty"`
	AdditionalParams           map[string]any               `json:"additionalParams,omitempty"` // Tacker v1 compatibility
}

// ScaleInfo is the current level of one scaling aspect.
type ScaleInfo struct {
	AspectID   string `json:"aspectId"`
	ScaleLevel int    `json:"scaleLevel"`
}

// ResourceHandle addresses a resource inside a VIM.
type ResourceHandle struct {
	VimConnectionID      string `json:"vimConnectionId,omitempty"`
	ResourceProviderID   string `json:"resourceProviderId,omitempty"`
	ResourceID           string `json:"resourceId"`
	VimLevelResourceType string `json:"vimLevelResourceType,omitempty"`
}

// ExtCpInfo describes an external connection point of the VNF.
type ExtCpInfo struct {
	ID                 string           `json:"id"`
	CpdID              string           `json:"cpdId"`
	CpProtocolInfo     []map[string]any `json:"cpProtocolInfo"`
	ExtLinkPortID      string           `json:"extLinkPortId,omitempty"`
	Metadata           map[string]any   `json:"metadata,omitempty"`
	AssociatedVnfcCpID string           `json:"associatedVnfcCpId,omitempty"`
}

// ExtVirtualLinkInfo is an external VL the VNF is connected to.
type ExtVirtualLinkInfo struct {
	ID             string            `json:"id"`
	ResourceHandle ResourceHandle    `json:"resourceHandle"`
	ExtLinkPorts   []ExtLinkPortInfo `json:"extLinkPorts,omitempty"`
}

// ExtLinkPortInfo is a link port on an external VL.
type ExtLinkPortInfo struct {
	ID             string         `json:"id"`
	ResourceHandle ResourceHandle `json:"resourceHandle"`
	CpInstanceID   string         `json:"cpInstanceId,omitempty"`
}

// ExtManagedVirtualLinkInfo is an externally managed internal VL.
type ExtManagedVirtualLinkInfo struct {
	ID                   string           `json:"id"`
	VnfVirtualLinkDescID string           `json:"vnfVirtualLinkDescId"`
	NetworkResource      *ResourceHandle  `json:"networkResource,omitempty"`
	VnfLinkPorts         []map[string]any `json:"vnfLinkPorts,omitempty"`
}

// VnfcResourceInfo is one VNFC (a VM for the OpenStack driver).
type VnfcResourceInfo struct {
	ID                 string         `json:"id"`
	VduID              string         `json:"vduId"`
	ComputeResource    ResourceHandle `json:"computeResource"`
	StorageResourceIDs []string       `json:"storageResourceIds,omitempty"`
	ReservationID      string         `json:"reservationId,omitempty"`
	VnfcCpInfo         []VnfcCpInfo   `json:"vnfcCpInfo,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
}

// VnfcCpInfo is a connection point of a VNFC.
type VnfcCpInfo struct {
	ID             string           `json:"id"`
	CpdID          string           `json:"cpdId"`
	VnfExtCpID     string           `json:"vnfExtCpId,omitempty"`
	CpProtocolInfo []map[string]any `json:"cpProtocolInfo,omitempty"`
	VnfLinkPortID  string           `json:"vnfLinkPortId,omitempty"`
	Metadata       map[string]any   `json:"metadata,omitempty"`
}

// VirtualLinkResourceInfo is an internal VL.
type VirtualLinkResourceInfo struct {
	ID                   string           `json:"id"`
	VnfVirtualLinkDescID string           `json:"vnfVirtualLinkDescId"`
	NetworkResource      ResourceHandle   `json:"networkResource"`
	ReservationID        string           `json:"reservationId,omitempty"`
	VnfLinkPorts         []map[string]any `json:"vnfLinkPorts,omitempty"`
	Metadata             map[string]any   `json:"metadata,omitempty"`
}

// VirtualStorageResourceInfo is a volume.
type VirtualStorageResourceInfo struct {
	ID                   string         `json:"id"`
	VirtualStorageDescID string         `json:"virtualStorageDescId"`
	StorageResource      ResourceHandle `json:"storageResource"`
	ReservationID        string         `json:"reservationId,omitempty"`
	Metadata             map[string]any `json:"metadata,omitempty"`
}

// Operation names (SOL003 LcmOperationType).
const (
	OpInstantiate   = "INSTANTIATE"
	OpScale         = "SCALE"
	OpScaleToLevel  = "SCALE_TO_LEVEL"
	OpChangeFlavour = "CHANGE_FLAVOUR"
	OpTerminate     = "TERMINATE"
	OpHeal          = "HEAL"
	OpOperate       = "OPERATE"
	OpChangeExtConn = "CHANGE_EXT_CONN"
	OpModifyInfo    = "MODIFY_INFO"
)

// Operation states (SOL003 LcmOperationStateType).
const (
	StateStarting    = "STARTING"
	StateProcessing  = "PROCESSING"
	StateCompleted   = "COMPLETED"
	StateFailedTemp  = "FAILED_TEMP"
	StateFailed      = "FAILED"
	StateRollingBack = "ROLLING_BACK"
	StateRolledBack  = "ROLLED_BACK"
)

// ActiveStates block any other LCM operation on the same instance.
var ActiveStates = []string{StateStarting, StateProcessing, StateFailedTemp, StateRollingBack}

// VnfLcmOpOcc is SOL003 VnfLcmOpOcc without `_links`, plus the progress extension.
type VnfLcmOpOcc struct {
	ID                     string               `json:"id"`
	OperationState         string               `json:"operationState"`
	StateEnteredTime       time.Time            `json:"stateEnteredTime"`
	StartTime              time.Time            `json:"startTime"`
	VnfInstanceID          string               `json:"vnfInstanceId"`
	GrantID                string               `json:"grantId,omitempty"`
	Operation              string               `json:"operation"`
	IsAutomaticInvocation  bool                 `json:"isAutomaticInvocation"`
	OperationParams        json.RawMessage      `json:"operationParams"`
	IsCancelPending        bool                 `json:"isCancelPending"`
	CancelMode             string               `json:"cancelMode,omitempty"`
	Error                  *ProblemDetails      `json:"error,omitempty"`
	ResourceChanges        *ResourceChanges     `json:"resourceChanges,omitempty"`
	ChangedInfo            map[string]any       `json:"changedInfo,omitempty"`
	ChangedExtConnectivity []ExtVirtualLinkInfo `json:"changedExtConnectivity,omitempty"`
	Progress               *Progress            `json:"progress,omitempty"`
}

// ProblemDetails is RFC 7807 / SOL013 ProblemDetails.
type ProblemDetails struct {
	Type     string `json:"type,omitempty"`
	Title    string `json:"title,omitempty"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
}

// ResourceChanges accumulates what an operation did to virtualised resources.
type ResourceChanges struct {
	AffectedVnfcs           []AffectedVnfc   `json:"affectedVnfcs,omitempty"`
	AffectedVirtualLinks    []map[string]any `json:"affectedVirtualLinks,omitempty"`
	AffectedVirtualStorages []map[string]any `json:"affectedVirtualStorages,omitempty"`
}

// AffectedVnfc is one VNFC added, removed, modified or temporary.
type AffectedVnfc struct {
	ID                        string         `json:"id"`
	VduID                     string         `json:"vduId"`
	ChangeType                string         `json:"changeType"`
	ComputeResource           ResourceHandle `json:"computeResource"`
	Metadata                  map[string]any `json:"metadata,omitempty"`
	AffectedVnfcCpIDs         []string       `json:"affectedVnfcCpIds,omitempty"`
	AddedStorageResourceIDs   []string       `json:"addedStorageResourceIds,omitempty"`
	RemovedStorageResourceIDs []string       `json:"removedStorageResourceIds,omitempty"`
}

// Step and node states of the progress extension.
const (
	StepPending    = "PENDING"
	StepRunning    = "RUNNING"
	StepCompleted  = "COMPLETED"
	StepFailed     = "FAILED"
	StepSkipped    = "SKIPPED"
	StepRolledBack = "ROLLED_BACK"
)

// Progress is the mini-VNFM extension attribute of VnfLcmOpOcc: a view of the
// operation journal, so a poller sees which step and node is running.
type Progress struct {
	CurrentStep string         `json:"currentStep,omitempty"`
	StepsDone   int            `json:"stepsDone"`
	StepsTotal  int            `json:"stepsTotal"`
	UpdatedTime *time.Time     `json:"updatedTime,omitempty"`
	LastError   string         `json:"lastError,omitempty"`
	Steps       []StepProgress `json:"steps"`
}

// StepProgress is one journal step.
type StepProgress struct {
	Name       string         `json:"name"`
	State      string         `json:"state"`
	Attempt    int            `json:"attempt,omitempty"`
	StartTime  *time.Time     `json:"startTime,omitempty"`
	EndTime    *time.Time     `json:"endTime,omitempty"`
	Error      string         `json:"error,omitempty"`
	NodesDone  int            `json:"nodesDone,omitempty"`
	NodesTotal int            `json:"nodesTotal,omitempty"`
	Nodes      []NodeProgress `json:"nodes,omitempty"`
}

// NodeProgress is one per-node checkpoint inside a step.
type NodeProgress struct {
	Name      string     `json:"name"`
	State     string     `json:"state"`
	Message   string     `json:"message,omitempty"`
	StartTime *time.Time `json:"startTime,omitempty"`
	EndTime   *time.Time `json:"endTime,omitempty"`
}
