// Package driverapi is the contract between the LCM engine and the drivers it
// runs: the infra driver (VIM resources) and the management drivers (VNF
// configuration hooks). It holds types only, so drivers need not import the
// engine and the engine can be tested with in-test fakes.
package driverapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

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
	Vnfd     *model.Vnfd
	Flavour  *model.Flavour
	// Package reads the instance's VNF package (Heat templates, scripts).
	Package Package
	// Vims registers and removes the Kubernetes VIMs of the clusters drivers build.
	Vims VimRegistry
	// Vim is the decrypted VIM connection the operation runs against (nil if none).
	Vim *model.VimConnectionInfo
	// Request is the typed request body: *model.InstantiateVnfRequest, *model.ScaleVnfRequest, ...
	Request any
	// AdditionalParams of the request, decrypted.
	AdditionalParams map[string]any
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

// Package gives drivers the files of the instance's VNF package.
type Package interface {
	// ReadFile returns a file of the CSAR by its path (e.g. "Scripts/install.sh").
	ReadFile(path string) ([]byte, error)
	// HeatTemplate returns a flavour's top Heat template (its path and
	// content) and the nested files keyed as the template references them.
	HeatTemplate(flavourID string) (path string, template []byte, files map[string]string, err error)
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
	RemoveKubernetesVim(ctx context.Context, name, ownerInstanceID string) error
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

// InfraDriver manages the virtualised resources of a VNF on one kind of VIM.
// Every method must be idempotent: the engine may call it again after a crash
// or on retry, with the working copy as it was persisted.
type InfraDriver interface {
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

// ErrCancelled is returned by drivers that stop because of a GRACEFUL cancel.
var ErrCancelled = cancelledError{}

type cancelledError struct{}

func (cancelledError) Error() string { return "operation cancelled" }
