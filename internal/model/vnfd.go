package model

// Package is the part of an onboarded VNF package the LCM needs. The packages
// issue fills it from the CSAR; until then tests create rows directly.
type Package struct {
	ID               string `json:"id"`
	OnboardingState  string `json:"onboardingState"`
	OperationalState string `json:"operationalState"`
	UsageState       string `json:"usageState"`
	Vnfd             *Vnfd  `json:"-"`
}

// Package states.
const (
	Onboarded = "ONBOARDED"
	Enabled   = "ENABLED"
	Disabled  = "DISABLED"
	InUse     = "IN_USE"
	NotInUse  = "NOT_IN_USE"
)

// Vnfd is the LCM-relevant summary of a SOL001 VNFD.
type Vnfd struct {
	ID              string              `json:"id"`
	Provider        string              `json:"provider"`
	ProductName     string              `json:"productName"`
	SoftwareVersion string              `json:"softwareVersion"`
	Version         string              `json:"version"`
	Flavours        map[string]*Flavour `json:"flavours"`
}

// Flavour is one deployment flavour.
type Flavour struct {
	ID                        string                         `json:"id"`
	Description               string                         `json:"description,omitempty"`
	InstantiationLevels       map[string]*InstantiationLevel `json:"instantiationLevels,omitempty"`
	DefaultInstantiationLevel string                         `json:"defaultInstantiationLevel,omitempty"`
	ScalingAspects            map[string]*ScalingAspect      `json:"scalingAspects,omitempty"`
	// Interfaces maps a Vnflcm hook (instantiate_end, scale_start, ...) to the
	// name of the management driver implementing it.
	Interfaces map[string]string `json:"interfaces,omitempty"`
	VDUs       map[string]*VDU   `json:"vdus,omitempty"`
}

// InstantiationLevel gives each aspect's scale level at instantiation.
type InstantiationLevel struct {
	Description string         `json:"description,omitempty"`
	ScaleLevels map[string]int `json:"scaleLevels,omitempty"` // aspectId → level
}

// ScalingAspect is a SOL001 scaling aspect.
type ScalingAspect struct {
	Name          string `json:"name,omitempty"`
	MaxScaleLevel int    `json:"maxScaleLevel"`
}

// VDU is the LCM-relevant part of a VDU node template.
type VDU struct {
	Name             string `json:"name,omitempty"`
	MinInstances     int    `json:"minInstances"`
	MaxInstances     int    `json:"maxInstances"`
	InitialInstances int    `json:"initialInstances,omitempty"`
}

// Lcm hooks named in interfaces.Vnflcm.
const (
	HookInstantiateStart       = "instantiate_start"
	HookInstantiateEnd         = "instantiate_end"
	HookTerminateStart         = "terminate_start"
	HookTerminateEnd           = "terminate_end"
	HookScaleStart             = "scale_start"
	HookScaleEnd               = "scale_end"
	HookHealStart              = "heal_start"
	HookHealEnd                = "heal_end"
	HookChangeExtConnStart     = "change_external_connectivity_start"
	HookChangeExtConnEnd       = "change_external_connectivity_end"
	HookModifyInformationStart = "modify_information_start"
	HookModifyInformationEnd   = "modify_information_end"
)
