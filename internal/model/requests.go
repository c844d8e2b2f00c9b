package model

// Request bodies of the LCM tasks. The API keeps the original JSON as the op
// occurrence's operationParams; these typed views are what the engine reads.

// CreateVnfRequest creates a VNF instance resource.
type CreateVnfRequest struct {
	VnfdID                 string         `json:"vnfdId"`
	VnfInstanceName        string         `json:"vnfInstanceName,omitempty"`
	VnfInstanceDescription string         `json:"vnfInstanceDescription,omitempty"`
	Metadata               map[string]any `json:"metadata,omitempty"`
}

// InstantiateVnfRequest instantiates a VNF.
type InstantiateVnfRequest struct {
	FlavourID              string                      `json:"flavourId"`
	InstantiationLevelID   string                      `json:"instantiationLevelId,omitempty"`
	ExtVirtualLinks        []ExtVirtualLinkData        `json:"extVirtualLinks,omitempty"`
	ExtManagedVirtualLinks []ExtManagedVirtualLinkData `json:"extManagedVirtualLinks,omitempty"`
	VimConnectionInfo      []VimConnectionInfo         `json:"vimConnectionInfo,omitempty"`
	LocalizationLanguage   string                      `json:"localizationLanguage,omitempty"`
	Extensions             map[string]any              `json:"extensions,omitempty"`
	AdditionalParams       map[string]any              `json:"additionalParams,omitempty"`
}

// ExtVirtualLinkData is an external VL given in a request.
type ExtVirtualLinkData struct {
	ID                 string            `json:"id"`
	VimConnectionID    string            `json:"vimConnectionId,omitempty"`
	ResourceProviderID string            `json:"resourceProviderId,omitempty"`
	ResourceID         string            `json:"resourceId"`
	ExtCps             []VnfExtCpData    `json:"extCps"`
	ExtLinkPorts       []ExtLinkPortData `json:"extLinkPorts,omitempty"`
}

// VnfExtCpData configures the instances of one external CPD.
type VnfExtCpData struct {
	CpdID    string           `json:"cpdId"`
	CpConfig []map[string]any `json:"cpConfig,omitempty"`
}

// ExtLinkPortData is a pre-created port on an external VL.
type ExtLinkPortData struct {
	ID             string         `json:"id"`
	ResourceHandle ResourceHandle `json:"resourceHandle"`
}

// ExtManagedVirtualLinkData is an externally managed internal VL.
type ExtManagedVirtualLinkData struct {
	ID                   string `json:"id"`
	VnfVirtualLinkDescID string `json:"vnfVirtualLinkDescId,omitempty"`
	VirtualLinkDescID    string `json:"virtualLinkDescId,omitempty"`
	VimConnectionID      string `json:"vimConnectionId,omitempty"`
	ResourceProviderID   string `json:"resourceProviderId,omitempty"`
	ResourceID           string `json:"resourceId"`
}

// TerminateVnfRequest terminates a VNF.
type TerminateVnfRequest struct {
	TerminationType            string         `json:"terminationType"`
	GracefulTerminationTimeout *int           `json:"gracefulTerminationTimeout,omitempty"`
	AdditionalParams           map[string]any `json:"additionalParams,omitempty"`
}

// Scale directions.
const (
	ScaleOut = "SCALE_OUT"
	ScaleIn  = "SCALE_IN"
)

// ScaleVnfRequest scales one aspect by a number of steps.
type ScaleVnfRequest struct {
	Type             string         `json:"type"`
	AspectID         string         `json:"aspectId"`
	NumberOfSteps    *int           `json:"numberOfSteps,omitempty"`
	AdditionalParams map[string]any `json:"additionalParams,omitempty"`
}

// Steps returns numberOfSteps with the SOL003 default of 1.
func (r *ScaleVnfRequest) Steps() int {
	if r.NumberOfSteps == nil {
		return 1
	}
	return *r.NumberOfSteps
}

// HealVnfRequest heals a VNF; VnfcInstanceID is Tacker's SOL002-style extension.
type HealVnfRequest struct {
	Cause            string         `json:"cause,omitempty"`
	VnfcInstanceID   []string       `json:"vnfcInstanceId,omitempty"`
	AdditionalParams map[string]any `json:"additionalParams,omitempty"`
}

// ChangeExtVnfConnectivityRequest changes the external connectivity.
type ChangeExtVnfConnectivityRequest struct {
	ExtVirtualLinks   []ExtVirtualLinkData `json:"extVirtualLinks"`
	VimConnectionInfo []VimConnectionInfo  `json:"vimConnectionInfo,omitempty"`
	AdditionalParams  map[string]any       `json:"additionalParams,omitempty"`
}

// VnfInfoModificationRequest is the JSON merge patch body of PATCH /vnf_instances/{id}.
type VnfInfoModificationRequest struct {
	VnfInstanceName           *string             `json:"vnfInstanceName,omitempty"`
	VnfInstanceDescription    *string             `json:"vnfInstanceDescription,omitempty"`
	VnfdID                    string              `json:"vnfdId,omitempty"`
	VnfPkgID                  string              `json:"vnfPkgId,omitempty"`
	VnfConfigurableProperties map[string]any      `json:"vnfConfigurableProperties,omitempty"`
	Metadata                  map[string]any      `json:"metadata,omitempty"`
	Extensions                map[string]any      `json:"extensions,omitempty"`
	VimConnectionInfo         []VimConnectionInfo `json:"vimConnectionInfo,omitempty"`
}

// Cancel modes.
const (
	CancelGraceful = "GRACEFUL"
	CancelForceful = "FORCEFUL"
)
