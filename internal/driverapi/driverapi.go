// Package driverapi is the contract between the LCM engine and the drivers it
// runs, and it is VIM-neutral:
//
//   - an infra driver (InfraDriver) makes a VNF's virtualised resources on
//     one kind of VIM — the engine picks it by the vimType of the
//     instance's VIM connection — and describes the compute resources it
//     made as ComputeResources (VMs or pods alike), including which of them
//     a scale-in removes (it chooses them: ScaleInVictims);
//   - management drivers (package mgmtdrivers) configure the VNF in the
//     Vnflcm hooks around the infra step; they see the operation as an Op:
//     its typed Request, the compute resources through Op.ComputeResources,
//     the package through Package, the VIM registry through VimRegistry.
//
// It holds types only, so drivers need not import the engine, the engine
// can be tested with in-test fakes, and no driver imports another.
package driverapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// vimConnectionInfo.vimType of the VIMs this VNFM knows, as the ETSI
// NFV-SOL003 VIM connection info registry names them (Tacker v2 uses the
// same names; Tacker v1 requests say "openstack" / "kubernetes", see
// NormalizeVimType). The engine picks an operation's infra driver by it.
const (
	VimTypeOpenStack  = "ETSINFV.OPENSTACK_KEYSTONE.V_3"
	VimTypeKubernetes = "ETSINFV.KUBERNETES.V_1"
)

// NormalizeVimType maps the VIM type names clients use to the registry's:
// "openstack" (Tacker v1, any case) and ETSINFV.OPENSTACK_KEYSTONE.V_3 (any
// case of the suffix) to VimTypeOpenStack, "kubernetes" and
// ETSINFV.KUBERNETES.V_1 to VimTypeKubernetes. Other values are returned
// unchanged.
func NormalizeVimType(t string) string {
	switch strings.ToUpper(strings.TrimSpace(t)) {
	case "OPENSTACK", "ETSINFV.OPENSTACK_KEYSTONE.V_3", "ETSINFV.OPENSTACK_KEYSTONE.V3":
		return VimTypeOpenStack
	case "KUBERNETES", "ETSINFV.KUBERNETES.V_1", "ETSINFV.KUBERNETES.V1":
		return VimTypeKubernetes
	}
	return t
}

// Request is an LCM request, typed: exactly the member of the operation is
// set (additionalParams in the clear).
type Request struct {
	Instantiate   *model.InstantiateVnfRequest
	Terminate     *model.TerminateVnfRequest
	Scale         *model.ScaleVnfRequest
	Heal          *model.HealVnfRequest
	ChangeExtConn *model.ChangeExtVnfConnectivityRequest
	Modify        *model.VnfInfoModificationRequest
}

// AdditionalParams returns the request's additionalParams (nil for a
// modification, which has none).
func (r Request) AdditionalParams() map[string]any {
	switch {
	case r.Instantiate != nil:
		return r.Instantiate.AdditionalParams
	case r.Terminate != nil:
		return r.Terminate.AdditionalParams
	case r.Scale != nil:
		return r.Scale.AdditionalParams
	case r.Heal != nil:
		return r.Heal.AdditionalParams
	case r.ChangeExtConn != nil:
		return r.ChangeExtConn.AdditionalParams
	}
	return nil
}

// ScaleIn reports whether the request is a SCALE_IN.
func (r Request) ScaleIn() bool { return r.Scale != nil && r.Scale.Type == model.ScaleIn }

// ScaleOut reports whether the request is a SCALE_OUT.
func (r Request) ScaleOut() bool { return r.Scale != nil && r.Scale.Type == model.ScaleOut }

// Op is one operation as a driver sees it. Drivers change Instance (the
// engine's working copy) and ResourceChanges; the engine persists both after
// each step and writes the instance when the operation completes.
type Op struct {
	ID        string // op occurrence id
	Operation string // model.OpInstantiate, ...
	// RollingBack is true while the engine undoes the operation.
	RollingBack bool
	// Instance is the decrypted working copy of the VNF instance.
	Instance *model.VnfInstance
	// Vnfd and Flavour (one of its flavours) are shared by every operation
	// on the package: read-only.
	Vnfd    *model.Vnfd
	Flavour *model.Flavour
	// Request is the operation's request.
	Request Request
	// Package reads the instance's VNF package.
	Package Package
	// Vims registers and removes the Kubernetes VIMs of the clusters drivers build.
	Vims VimRegistry
	// Vim is the decrypted VIM connection the operation runs against (nil if none).
	Vim *model.VimConnectionInfo
	// Infra is the infra driver of the operation's VIM, as management
	// drivers may ask it (nil: the instance has no VIM).
	Infra Infra
	// Victims are the VNFC ids a SCALE_IN removes, in removal order: chosen
	// once by the infra driver (InfraDriver.ScaleInVictims) before the first
	// step and kept for every step, retry and resume.
	Victims []string
	// Previous holds values the engine recorded before changing the working
	// copy (e.g. "scaleStatus" before a scale), for rollback.
	Previous map[string]json.RawMessage

	ResourceChanges        *model.ResourceChanges
	ChangedInfo            map[string]any
	ChangedExtConnectivity []model.ExtVirtualLinkInfo
	// Scratch is driver state that must survive a crash between steps (persisted, sealed).
	Scratch map[string]json.RawMessage

	Log      *slog.Logger
	Progress Progress
	// CancelRequested reports a GRACEFUL cancel: finish the current unit of work,
	// start no new one, and return ErrCancelled. A FORCEFUL cancel cancels ctx.
	CancelRequested func() bool
}

// ComputeResources returns the VNF's compute resources as the working copy
// holds them now, described by the infra driver that made them; during a
// SCALE_IN the victims have Removing set.
func (op *Op) ComputeResources() []ComputeResource {
	if op.Instance == nil || op.Instance.InstantiatedVnfInfo == nil {
		return nil
	}
	var rs []ComputeResource
	if op.Infra != nil {
		rs = op.Infra.ComputeResources(op.Instance.InstantiatedVnfInfo)
	} else {
		rs = BaseComputeResources(op.Instance.InstantiatedVnfInfo)
	}
	for i := range rs {
		rs[i].Removing = slices.Contains(op.Victims, rs[i].VnfcID)
	}
	return rs
}

// Accept is a request the VNFM is deciding whether to accept, as a driver
// validating it sees it: nothing has changed yet, and a driver's error
// refuses the request (422) before an operation exists.
type Accept struct {
	Operation string
	Request   Request
	// Instance is the instance as stored, its secrets in the clear.
	Instance *model.VnfInstance
	// Vnfd is shared by every request on the package: read-only.
	Vnfd *model.Vnfd
	// Flavour is the flavour the request instantiates, else the instance's
	// (read-only, like Vnfd).
	Flavour *model.Flavour
	Package Package
	// Infra is the infra driver the operation will run on (nil: none yet).
	Infra Infra
	Vims  VimRegistry
}

// ComputeResources returns the instance's compute resources as its infra
// driver describes them (none before instantiation).
func (a *Accept) ComputeResources() []ComputeResource {
	if a.Instance == nil || a.Instance.InstantiatedVnfInfo == nil {
		return nil
	}
	if a.Infra != nil {
		return a.Infra.ComputeResources(a.Instance.InstantiatedVnfInfo)
	}
	return BaseComputeResources(a.Instance.InstantiatedVnfInfo)
}

// ComputeResource is one VNFC's compute resource — a VM, a pod — as the
// infra driver that made it describes it, whatever the VIM.
type ComputeResource struct {
	VnfcID string
	VduID  string
	// ResourceID is the VIM's id of the resource (a Nova server id, a pod's
	// uid); SSH host keys are pinned per resource id and address.
	ResourceID string
	// ResourceType is the VIM's type of it ("OS::Nova::Server", "Pod").
	ResourceType string
	// Name is the VIM's name of it (server name, pod name), for messages.
	Name string
	// Group is the scaling group the infra driver made it in, "" if none
	// (OpenStack: the AutoScalingGroup, named after the aspect by Tacker's
	// convention).
	Group string
	// Created is when it (or its group member) was made: the creation order.
	Created time.Time
	CPs     []ConnectionPoint
	// HostKeyFingerprints are the SSH host key fingerprints the VIM
	// published for it ("SHA256:..."), if any.
	HostKeyFingerprints []string
	// Removing is set on the victims of the running scale-in.
	Removing bool
}

// CP returns the connection point of cpdID, or nil.
func (r *ComputeResource) CP(cpdID string) *ConnectionPoint {
	for i := range r.CPs {
		if r.CPs[i].CpdID == cpdID {
			return &r.CPs[i]
		}
	}
	return nil
}

// ConnectionPoint is one of a compute resource's connection points (ports).
type ConnectionPoint struct {
	CpdID     string
	Addresses []string
	// FloatingAddress is the floating IP mapped to it, if any.
	FloatingAddress string
}

// Address is the CP's first IPv4 address, else its first address ("" if none).
func (c *ConnectionPoint) Address() string {
	first := ""
	for _, s := range c.Addresses {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if ip.Is4() {
			return ip.String()
		}
		if first == "" {
			first = ip.String()
		}
	}
	return first
}

// BaseComputeResources describes the VNFCs of instantiatedVnfInfo from the
// SOL003 attributes alone (no VIM-specific metadata): infra drivers start
// from it.
func BaseComputeResources(info *model.InstantiatedVnfInfo) []ComputeResource {
	out := make([]ComputeResource, 0, len(info.VnfcResourceInfo))
	for _, v := range info.VnfcResourceInfo {
		r := ComputeResource{VnfcID: v.ID, VduID: v.VduID, ResourceID: v.ComputeResource.ResourceID,
			ResourceType: v.ComputeResource.VimLevelResourceType}
		for _, cp := range v.VnfcCpInfo {
			r.CPs = append(r.CPs, ConnectionPoint{CpdID: cp.CpdID, Addresses: ProtocolAddresses(cp.CpProtocolInfo)})
		}
		out = append(out, r)
	}
	return out
}

// ProtocolAddresses lists the IP addresses of a SOL003 cpProtocolInfo
// (IP_OVER_ETHERNET).
func ProtocolAddresses(info []map[string]any) []string {
	var out []string
	for _, pi := range info {
		ipoe, _ := pi["ipOverEthernet"].(map[string]any)
		for _, a := range anyList(ipoe["ipAddresses"]) {
			am, _ := a.(map[string]any)
			for _, s := range anyList(am["addresses"]) {
				if str, ok := s.(string); ok {
					out = append(out, str)
				}
			}
		}
	}
	return out
}

func anyList(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case []map[string]any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = t[i]
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i := range t {
			out[i] = t[i]
		}
		return out
	}
	return nil
}

// Package gives drivers the files of the instance's VNF package.
type Package interface {
	// ReadFile returns a file of the CSAR by its path (e.g. "Scripts/install.sh").
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Files lists the paths of the CSAR's files.
	Files(ctx context.Context) ([]string, error)
}

// KubernetesVim describes a cluster to register as a Kubernetes VIM.
type KubernetesVim struct {
	Name        string // unique; e.g. kubernetes_vim_<vnfInstanceId>
	Description string
	AuthURL     string // API server URL, https://<address>:<port>
	BearerToken string
	SSLCACert   string // PEM
	Insecure    bool
	Namespace   string
	Extra       map[string]any
	// Verify checks the token against the API server before registering.
	Verify bool
}

// VimRegistry is the VIM store as management drivers see it. Registration
// is idempotent by name (a retry reuses the VIM); removal of a missing VIM
// succeeds.
type VimRegistry interface {
	RegisterKubernetesVim(ctx context.Context, v KubernetesVim) (vimID string, err error)
	// RemoveKubernetesVim deletes the VIM of that name; it fails while
	// instances other than the owner refer to it.
	RemoveKubernetesVim(ctx context.Context, name, ownerInstanceID string) error
	// VimUsers lists the VNF instances other than ownerInstanceID whose
	// vimConnectionInfo refers to the VIM of that name (none: no such VIM),
	// so that a driver can refuse, when a request is accepted, to remove a
	// VIM others depend on.
	VimUsers(ctx context.Context, name, ownerInstanceID string) ([]string, error)
}

// Progress records per-node checkpoints of the running step in the operation
// journal; pollers see them in the op occurrence's progress attribute.
type Progress interface {
	// Note sets the running step's message.
	Note(ctx context.Context, message string) error
	// NodeStart marks a node as RUNNING with a message (e.g. "kubeadm join").
	NodeStart(ctx context.Context, node, message string) error
	// NodeNote updates a running node's message.
	NodeNote(ctx context.Context, node, message string) error
	// NodeDone marks a node COMPLETED with an optional JSON-encodable output.
	NodeDone(ctx context.Context, node string, output any) error
	// NodeFailed marks a node FAILED.
	NodeFailed(ctx context.Context, node string, err error) error
	// NodeCompleted reports whether the node completed in an earlier run of
	// this step (crash resume or retry), with its recorded output.
	NodeCompleted(node string) (output json.RawMessage, ok bool)
}

// Infra is what management drivers may ask the infra driver of an
// operation's VIM.
type Infra interface {
	// ComputeResources describes the compute resources of
	// instantiatedVnfInfo that this driver made (Removing unset).
	ComputeResources(info *model.InstantiatedVnfInfo) []ComputeResource
	// CheckVIP reports whether the VIM lets traffic for a virtual IP (the
	// address of the connection point VipCpd, e.g. a keepalived VIP) through
	// the ports of connection point PortCpd of flavour Flavour. Nil when it
	// does, or when nothing in the VIM filters such traffic.
	CheckVIP(ctx context.Context, c VIPCheck) error
}

// HostKeyPublisher is implemented by infra drivers whose VIM publishes its
// servers' SSH host key fingerprints (OpenStack: cloud-init prints them to
// the console log, some seconds into the boot). Under the SSH host key
// policy published, management drivers ask it again while they wait for a
// new server's fingerprints.
type HostKeyPublisher interface {
	// PublishedHostKeys returns the fingerprints ("SHA256:...") published
	// for the compute resource now (none yet: empty, no error).
	PublishedHostKeys(ctx context.Context, op *Op, resourceID string) ([]string, error)
}

// CredentialIssuer is an Infra that can issue credentials of its VIM for
// software running inside the VNF (a cluster's network plugin such as
// Kuryr-Kubernetes, which calls Neutron and Octavia): short-lived, least
// privilege, never the VIM's own secret. Management drivers type-assert
// Op.Infra (or Accept.Infra) to it. Optional.
type CredentialIssuer interface {
	// IssueCredential creates the credential named r.Name for the
	// operation's VIM, replacing one of that name (a retry).
	IssueCredential(ctx context.Context, op *Op, r CredentialRequest) (*Credential, error)
	// RevokeCredential deletes the credential of that name (none: nil).
	RevokeCredential(ctx context.Context, op *Op, name string) error
}

// CredentialRequest asks for a credential.
type CredentialRequest struct {
	// Name is unique per VNF instance and use and ends with
	// "-<instance id>" (e.g. kuryr-<instance id>): when the infra driver
	// removes the instance's resources (terminate, the rollback of an
	// instantiation, an entire heal) it revokes the instance's credentials
	// first, so that the software holding them stops making resources,
	// then deletes what carries InstanceTag.
	Name        string
	Description string
	// Roles it gets in the VIM's project (a subset of the VIM user's).
	Roles []string
	// TTL is its lifetime.
	TTL time.Duration
	// Services are the VIM services (catalog types) it may call.
	Services []string
}

// Credential is an issued credential. Secret is given once; it must go
// only where it is used and never into a log, a notification or an error.
type Credential struct {
	// Type is how it logs in (Keystone: "v3applicationcredential").
	Type      string
	ID        string
	Name      string
	Secret    string
	AuthURL   string // the VIM's identity endpoint
	Region    string
	ProjectID string
	ExpiresAt time.Time
	Roles     []string
	Services  []string
}

// InstanceTag is the tag of VIM resources that software of a VNF instance
// creates on its own (a cluster's Kuryr-Kubernetes: Neutron ports for pods,
// Octavia load balancers for Services): the infra driver deletes what
// carries it with the instance's resources, so that nothing leaks and
// nothing blocks the deletion of the networks.
func InstanceTag(instanceID string) string { return "mini-vnfm-" + instanceID }

// CredentialSuffix is how the names of an instance's credentials end
// (CredentialRequest.Name).
func CredentialSuffix(instanceID string) string { return "-" + instanceID }

// InfraOutputs is an Infra that publishes what its templates output about
// the resources it made (OpenStack: the stack's outputs and its top-level
// resources' ids), for management drivers that configure software with
// those ids (Kuryr's subnets and security groups). Optional.
type InfraOutputs interface {
	Outputs(ctx context.Context, op *Op) (*Outputs, error)
}

// Outputs are an infra driver's outputs.
type Outputs struct {
	// Values are the template's outputs by name.
	Values map[string]any
	// Resources are the VIM ids of the template's resources by name.
	Resources map[string]string
	// Project is the VIM project the resources are in.
	Project string
}

// Refresher is an Infra whose VIM changes the resources of a VNF on its own
// (Kubernetes: a node drained, a pod evicted and re-created elsewhere),
// so that the records of a settled instance drift until its next
// operation. The engine calls Refresh periodically (VNFM_CNF_SYNC_INTERVAL)
// outside any operation: op carries the instance's working copy, its VNFD,
// flavour and VIM, no request and no progress; Refresh re-reads the VIM
// and updates op.Instance's records in place (vnfcResourceInfo) without
// changing any resource, and reports whether they changed. Optional.
type Refresher interface {
	Refresh(ctx context.Context, op *Op) (changed bool, err error)
}

// VIPCheck is a question to Infra.CheckVIP.
type VIPCheck struct {
	Package Package
	Flavour *model.Flavour
	// PortCpd is the connection point whose ports must let the VIP through;
	// VipCpd the connection point holding the VIP.
	PortCpd, VipCpd string
	// VIP is the address, when known ("" before instantiation: any address
	// the VIP connection point may get).
	VIP string
}

// InfraDriver manages the virtualised resources of a VNF on one kind of VIM.
// Every method that changes resources must be idempotent: the engine may
// call it again after a crash or on retry, with the working copy as it was
// persisted.
type InfraDriver interface {
	Infra
	// CheckRequest refuses, when a request is accepted, what the driver can
	// already tell will fail (a flavour it cannot deploy, an aspect it cannot
	// scale, a victim list that does not fit), so that a request that cannot
	// succeed never starts.
	CheckRequest(ctx context.Context, a *Accept) error
	// ScaleInVictims chooses the VNFC ids a SCALE_IN removes, in removal
	// order, from the working copy before the scale (its scaleStatus already
	// at the target level). The engine calls it once and keeps the answer in
	// Op.Victims.
	ScaleInVictims(ctx context.Context, op *Op) ([]string, error)

	Instantiate(ctx context.Context, op *Op) error
	Terminate(ctx context.Context, op *Op) error
	Scale(ctx context.Context, op *Op) error
	Heal(ctx context.Context, op *Op) error
	ChangeExtConn(ctx context.Context, op *Op) error
	// RollbackInstantiate removes whatever Instantiate created, even partially.
	RollbackInstantiate(ctx context.Context, op *Op) error
	// RollbackScale restores the pre-scale capacity (op.Previous["scaleStatus"]).
	RollbackScale(ctx context.Context, op *Op) error
}

// ConflictError refuses a request because of the state of other resources
// — CNF instances still deployed on the Kubernetes VIM of the cluster a
// terminate would delete —: the VNFM answers 409 Conflict (not 422) with
// Detail, before any operation exists.
type ConflictError struct{ Detail string }

func (e *ConflictError) Error() string { return e.Detail }

// ErrCancelled is returned by drivers that stop because of a GRACEFUL cancel.
var ErrCancelled = cancelledError{}

type cancelledError struct{}

func (cancelledError) Error() string { return "operation cancelled" }
