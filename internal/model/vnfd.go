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

// Vnfd is the LCM-relevant summary of a SOL001 VNFD, as internal/vnfpkg reads
// it from a CSAR. It is stored as JSON with the package, so field names and
// JSON tags are stable.
type Vnfd struct {
	ID              string              `json:"id"`
	Provider        string              `json:"provider"`
	ProductName     string              `json:"productName"`
	SoftwareVersion string              `json:"softwareVersion"`
	Version         string              `json:"version"`
	Flavours        map[string]*Flavour `json:"flavours"`
	// VnfmInfo is the VNF node's vnfm_info (VNFMs the VNF is compatible with).
	VnfmInfo []string `json:"vnfmInfo,omitempty"`
	// Description is the top VNFD's description.
	Description string `json:"description,omitempty"`
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
	// VirtualLinks are the flavour's internal virtual links (VnfVirtualLink).
	VirtualLinks map[string]*VirtualLink `json:"virtualLinks,omitempty"`
	// Storages are the flavour's virtual storages (Vdu.VirtualBlockStorage).
	Storages map[string]*VirtualStorage `json:"virtualStorages,omitempty"`
	// ExtCPs are the external connection points, keyed by cpdId: the ids
	// InstantiateVnfRequest.extVirtualLinks[].extCps[].cpdId may name.
	ExtCPs map[string]*ExtCP `json:"extCps,omitempty"`
	// VipCPs are virtual-IP connection points (tosca.nodes.nfv.VipCp).
	VipCPs map[string]*VipCP `json:"vipCps,omitempty"`
	// HOT is the flavour's Heat base template (BaseHOT/<flavourId>/), nil
	// when the package has none for this flavour.
	HOT *HOT `json:"hot,omitempty"`
	// Untranslated are the flavour's node templates and policies that
	// describe VIM resources or placement the VNFM does not generate Heat
	// for (tosca.nodes.Compute, tosca.nodes.network.*, object and file
	// storage, affinity and security group rules...): name → type. A base
	// HOT makes them the template author's business; without one they
	// cannot be honoured, so the flavour cannot be instantiated.
	Untranslated map[string]string `json:"untranslated,omitempty"`
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
	Description   string `json:"description,omitempty"`
	// StepDeltas names the delta applied by each scaling step: step i (0-based)
	// uses StepDeltas[i], the last one repeating for further steps.
	StepDeltas []string `json:"stepDeltas,omitempty"`
	// VduDeltas gives, per VDU the aspect scales, the number of instances each
	// named delta adds (VduScalingAspectDeltas): vduId → deltaId → instances.
	VduDeltas map[string]map[string]int `json:"vduDeltas,omitempty"`
}

// StepDelta returns how many instances of vdu scaling step `step` (0-based:
// step 0 takes the aspect from level 0 to level 1) adds.
func (a *ScalingAspect) StepDelta(vdu string, step int) int {
	deltas := a.VduDeltas[vdu]
	if len(deltas) == 0 || step < 0 {
		return 0
	}
	if len(a.StepDeltas) == 0 {
		// Lenient form: one delta applies to every step.
		for _, n := range deltas {
			return n
		}
	}
	if step >= len(a.StepDeltas) {
		step = len(a.StepDeltas) - 1
	}
	return deltas[a.StepDeltas[step]]
}

// Instances returns how many instances of vdu the aspect adds at scale level
// `level` over the VDU's initial instances.
func (a *ScalingAspect) Instances(vdu string, level int) int {
	n := 0
	for step := 0; step < level; step++ {
		n += a.StepDelta(vdu, step)
	}
	return n
}

// VDU is the LCM-relevant part of a VDU node template.
type VDU struct {
	Name             string `json:"name,omitempty"`
	MinInstances     int    `json:"minInstances"`
	MaxInstances     int    `json:"maxInstances"`
	InitialInstances int    `json:"initialInstances,omitempty"`
	// ID is the node template name (the vduId; Heat resource names follow it).
	ID          string `json:"id,omitempty"`
	Description string `json:"description,omitempty"`
	// Flavor is the compute flavour the VIM should use: virtual_compute's
	// requested_additional_capability_name (a Nova flavor name).
	Flavor string `json:"flavor,omitempty"`
	// VirtualCPUs, VirtualMemory and LocalStorage are the virtual_compute
	// requirements as written in the VNFD ("4 GB").
	VirtualCPUs   int      `json:"virtualCpus,omitempty"`
	VirtualMemory string   `json:"virtualMemory,omitempty"`
	LocalStorage  []string `json:"localStorage,omitempty"`
	// SwImage is sw_image_data; its Name is the VIM (Glance) image name.
	SwImage *SwImage `json:"swImage,omitempty"`
	// CPs are the VduCps bound to this VDU, ordered by order, then id.
	CPs []VduCP `json:"cps,omitempty"`
	// Storages are the virtual storages (ids in Flavour.Storages) it requires.
	Storages []string `json:"virtualStorages,omitempty"`
	// InstantiationLevels gives the instance count per instantiation level
	// (VduInstantiationLevels), when the VNFD states it.
	InstantiationLevels map[string]int `json:"instantiationLevels,omitempty"`
}

// Instances returns the number of instances of the VDU at the given aspect
// scale levels (aspectId → level): initial delta plus every aspect's deltas.
func (f *Flavour) Instances(vdu string, levels map[string]int) int {
	v := f.VDUs[vdu]
	if v == nil {
		return 0
	}
	n := v.InitialInstances
	for id, a := range f.ScalingAspects {
		n += a.Instances(vdu, levels[id])
	}
	return n
}

// SwImage is a VDU's or storage's sw_image_data.
type SwImage struct {
	// Name is the image name in the VIM (Glance).
	Name            string `json:"name"`
	Version         string `json:"version,omitempty"`
	ChecksumAlg     string `json:"checksumAlgorithm,omitempty"`
	Checksum        string `json:"checksum,omitempty"`
	ContainerFormat string `json:"containerFormat,omitempty"`
	DiskFormat      string `json:"diskFormat,omitempty"`
	MinDisk         int64  `json:"minDisk,omitempty"` // bytes
	MinRAM          int64  `json:"minRam,omitempty"`  // bytes
	Size            int64  `json:"size,omitempty"`    // bytes
	OperatingSystem string `json:"operatingSystem,omitempty"`
	// File is the image's path inside the package (artifacts.sw_image.file),
	// empty when the image is expected in the VIM already.
	File string `json:"file,omitempty"`
}

// VduCP is a VduCp bound to a VDU.
type VduCP struct {
	ID string `json:"id"`
	// Order is the NIC order (order property); nil when the VNFD has none.
	Order *int `json:"order,omitempty"`
	// VirtualLink is the internal virtual link the CP attaches to; empty for
	// a CP exposed as an external CP (its network comes from extVirtualLinks).
	VirtualLink    string   `json:"virtualLink,omitempty"`
	LayerProtocols []string `json:"layerProtocols,omitempty"`
}

// VirtualLink is an internal virtual link (tosca.nodes.nfv.VnfVirtualLink).
type VirtualLink struct {
	ID             string                `json:"id"`
	Description    string                `json:"description,omitempty"`
	LayerProtocols []string              `json:"layerProtocols,omitempty"`
	Protocols      []VirtualLinkProtocol `json:"protocols,omitempty"`
}

// VirtualLinkProtocol is one vl_profile.virtual_link_protocol_data entry.
type VirtualLinkProtocol struct {
	LayerProtocol string `json:"layerProtocol,omitempty"`
	IPVersion     string `json:"ipVersion,omitempty"`
	CIDR          string `json:"cidr,omitempty"`
	GatewayIP     string `json:"gatewayIp,omitempty"`
	DHCPEnabled   *bool  `json:"dhcpEnabled,omitempty"`
}

// VirtualStorage is a Vdu.VirtualBlockStorage node.
type VirtualStorage struct {
	ID            string   `json:"id"`
	Type          string   `json:"type"`          // "BlockStorage"
	SizeOfStorage string   `json:"sizeOfStorage"` // as written ("10 GB")
	Size          int64    `json:"sizeBytes"`     // in bytes
	SwImage       *SwImage `json:"swImage,omitempty"`
	RdmaEnabled   bool     `json:"rdmaEnabled,omitempty"`
}

// ExtCP is an external connection point of a flavour.
type ExtCP struct {
	// ID is the cpdId.
	ID string `json:"id"`
	// Requirement is the substitution_mappings requirement exposing it
	// (e.g. virtual_link_external1_1); empty for a VnfExtCp node not mapped.
	Requirement string `json:"requirement,omitempty"`
	// Kind is the node kind: VduCp (Tacker style: the VDU's port is the
	// external CP), VnfExtCp or VipCp.
	Kind string `json:"kind"`
	// VDU is the VDU a VduCp is bound to.
	VDU string `json:"vdu,omitempty"`
	// VirtualLink is the internal virtual link a VnfExtCp exposes.
	VirtualLink string `json:"virtualLink,omitempty"`
}

// VipCP is a virtual IP shared by the target VduCps (e.g. the Kubernetes API
// VIP of an HA control plane).
type VipCP struct {
	ID          string   `json:"id"`
	VipFunction string   `json:"vipFunction,omitempty"`
	Targets     []string `json:"targets,omitempty"`     // VduCp ids
	VirtualLink string   `json:"virtualLink,omitempty"` // internal VL, if any
}

// HOT names the Heat templates of a flavour inside the package.
type HOT struct {
	// Top is the top template's package path (BaseHOT/<flavourId>/x.yaml).
	Top string `json:"top"`
	// Nested are the package paths of BaseHOT/<flavourId>/nested/*.
	Nested []string `json:"nested,omitempty"`
	// Files maps each Heat `files` key (as the templates reference it, e.g.
	// "VDU1.yaml") to its package path.
	Files map[string]string `json:"files,omitempty"`
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

// Hooks lists every Vnflcm hook a management driver can implement.
var Hooks = []string{
	HookInstantiateStart, HookInstantiateEnd, HookTerminateStart, HookTerminateEnd,
	HookScaleStart, HookScaleEnd, HookHealStart, HookHealEnd,
	HookChangeExtConnStart, HookChangeExtConnEnd, HookModifyInformationStart, HookModifyInformationEnd,
}
