// Package lcm is the VNF lifecycle engine: it accepts LCM requests as
// operation occurrences (Service), and runs them as journaled, resumable steps
// on a pool of workers that claim op occurrences from the database (Engine).
package lcm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
)

// InfraResolver finds the infra driver for a VIM type ("" = the instance has
// no VIM connection: the default, if any).
type InfraResolver func(vimType string) (driverapi.InfraDriver, bool)

// Config wires the LCM service and engine.
type Config struct {
	Store *store.Store
	Box   *secrets.Box
	Mgmt  *mgmtdrivers.Registry
	Infra InfraResolver
	// Vims is the VIM registry (nil: one on Store with Box).
	Vims   *vims.Registry
	Logger *slog.Logger
	// Outbound is the policy VIM verification goes through (nil: the zero
	// policy, which refuses loopback and private addresses); used for the
	// registry made when Vims is nil.
	Outbound *outbound.Policy
}

// Service validates LCM requests and turns them into op occurrences.
type Service struct {
	st    *store.Store
	box   *secrets.Box
	mgmt  *mgmtdrivers.Registry
	infra InfraResolver
	vims  *vims.Registry
	log   *slog.Logger
}

// NewService builds a Service.
func NewService(c Config) *Service {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Infra == nil {
		c.Infra = func(string) (driverapi.InfraDriver, bool) { return nil, false }
	}
	if c.Vims == nil {
		c.Vims = vims.New(vims.Config{Store: c.Store, Box: c.Box, Logger: c.Logger, Outbound: c.Outbound})
	}
	return &Service{st: c.Store, box: c.Box, mgmt: c.Mgmt, infra: c.Infra, vims: c.Vims, log: c.Logger}
}

// Vims is the service's VIM registry.
func (s *Service) Vims() *vims.Registry { return s.vims }

// decodeStrict decodes a request body into a typed view. Unknown members are
// allowed (Tacker compatibility); type errors are reported for people.
func decode(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return errorf(KindInvalid, "request body: %q must be of type %s", te.Field, te.Type)
		}
		return errorf(KindInvalid, "request body is not valid JSON: %v", err)
	}
	return nil
}

func (s *Service) seal(raw []byte, p secrets.Place) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	out, err := s.box.SealJSON(raw, p)
	if errors.Is(err, secrets.ErrMisplaced) {
		return nil, errorf(KindInvalid, "request body holds a value sealed by the VNFM; send the plaintext")
	}
	if err != nil {
		return nil, errorf(KindInvalid, "request body is not valid JSON: %v", err)
	}
	return out, nil
}

func (s *Service) sealMap(m map[string]any, p secrets.Place) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := s.box.SealDoc(m, p)
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	return out, nil
}

// CreateInstance creates a NOT_INSTANTIATED VNF instance from an onboarded, enabled package.
func (s *Service) CreateInstance(ctx context.Context, raw []byte) (*store.Instance, error) {
	var req model.CreateVnfRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.VnfdID == "" {
		return nil, errorf(KindInvalid, `request body: "vnfdId" is required`)
	}
	pkg, err := s.st.PackageByVnfdID(ctx, req.VnfdID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(KindUnprocessable, "no VNF package with vnfdId %s is onboarded; onboard it first (POST /vnfpkgm/v1/vnf_packages, then PUT .../package_content)", req.VnfdID)
	}
	if err != nil {
		return nil, err
	}
	if pkg.OnboardingState != model.Onboarded || pkg.OperationalState != model.Enabled || pkg.Vnfd == nil {
		return nil, errorf(KindUnprocessable, "VNF package %s with vnfdId %s is %s/%s; it must be ONBOARDED and ENABLED (PATCH /vnfpkgm/v1/vnf_packages/%s with {\"operationalState\":\"ENABLED\"})",
			pkg.ID, req.VnfdID, pkg.OnboardingState, pkg.OperationalState, pkg.ID)
	}
	v := pkg.Vnfd
	id := uuid.NewString()
	metadata, err := s.sealMap(req.Metadata, store.InstancePlace(id).Key("metadata"))
	if err != nil {
		return nil, errorf(KindInvalid, "request body: metadata holds a value sealed by the VNFM; send the plaintext")
	}
	in := &model.VnfInstance{
		ID: id, VnfInstanceName: req.VnfInstanceName, VnfInstanceDescription: req.VnfInstanceDescription,
		VnfdID: v.ID, VnfProvider: v.Provider, VnfProductName: v.ProductName, VnfSoftwareVersion: v.SoftwareVersion,
		VnfdVersion: v.Version, VnfPkgID: pkg.ID, Metadata: metadata, InstantiationState: model.NotInstantiated,
	}
	created, err := s.st.CreateInstance(ctx, in)
	var ce *store.ConflictError
	if errors.As(err, &ce) {
		return nil, errorf(KindUnprocessable, "%s", ce.Reason)
	}
	return created, err
}

// GetInstance reads an instance; a malformed id is simply not found.
func (s *Service) GetInstance(ctx context.Context, id string) (*store.Instance, error) {
	if !validID(id) {
		return nil, notFoundInstance(id)
	}
	in, err := s.st.GetInstance(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundInstance(id)
	}
	return in, err
}

// ListInstances pages through instances.
func (s *Service) ListInstances(ctx context.Context, p store.Page) ([]*store.Instance, bool, error) {
	return s.st.ListInstances(ctx, p)
}

// DeleteInstance deletes a NOT_INSTANTIATED instance.
func (s *Service) DeleteInstance(ctx context.Context, id string) error {
	if !validID(id) {
		return notFoundInstance(id)
	}
	_, err := s.st.DeleteInstance(ctx, id)
	return fromStore(err, notFoundInstance(id).Detail)
}

func validID(id string) bool { _, err := uuid.Parse(id); return err == nil && len(id) == 36 }

func notFoundInstance(id string) *Error {
	return errorf(KindNotFound, "VNF instance %s does not exist; list instances with GET /vnflcm/v1/vnf_instances", id)
}

func notFoundOp(id string) *Error {
	return errorf(KindNotFound, "VNF LCM operation occurrence %s does not exist; list them with GET /vnflcm/v1/vnf_lcm_op_occs", id)
}

// instanceAndVnfd loads what request validation needs.
func (s *Service) instanceAndVnfd(ctx context.Context, id string) (*store.Instance, *model.Vnfd, error) {
	in, err := s.GetInstance(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	pkg, err := s.st.PackageByVnfdID(ctx, in.VnfdID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errorf(KindUnprocessable, "the VNF package with vnfdId %s of VNF instance %s is no longer onboarded", in.VnfdID, id)
	}
	if err != nil {
		return nil, nil, err
	}
	return in, pkg.Vnfd, nil
}

// checkDrivers makes sure every hook the flavour names has a driver, so a
// package error surfaces on the request instead of halfway through.
func (s *Service) checkDrivers(fl *model.Flavour, hooks ...string) error {
	for _, h := range hooks {
		name, ok := fl.Interfaces[h]
		if !ok {
			continue
		}
		d, ok := s.mgmt.Lookup(name)
		if !ok {
			return errorf(KindUnprocessable, "the VNFD names management driver %q for interfaces.Vnflcm.%s, which this VNFM does not provide (available: %s)",
				name, h, strings.Join(s.mgmt.Names(), ", "))
		}
		if _, ok := mgmtdrivers.Hook(d, h); !ok {
			return errorf(KindUnprocessable, "management driver %q does not implement interfaces.Vnflcm.%s named in the VNFD", name, h)
		}
	}
	return nil
}

// validateRequest lets the drivers bound to the hooks refuse the request
// (mgmtdrivers.RequestValidator) before an operation is created.
func (s *Service) validateRequest(ctx context.Context, fl *model.Flavour, r mgmtdrivers.Request, hooks ...string) error {
	seen := map[string]bool{}
	for _, h := range hooks {
		name, ok := fl.Interfaces[h]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		d, ok := s.mgmt.Lookup(name)
		if !ok {
			continue
		}
		if v, ok := d.(mgmtdrivers.RequestValidator); ok {
			if err := v.ValidateRequest(ctx, r); err != nil {
				return errorf(KindUnprocessable, "management driver %s: %v", name, err)
			}
		}
	}
	return nil
}

func flavourNames(v *model.Vnfd) string {
	var n []string
	for k := range v.Flavours {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

func (s *Service) createOp(ctx context.Context, instID, operation, requireState, verb string, raw []byte, ifVersion int64) (*store.OpOcc, error) {
	opID := uuid.NewString()
	sealed, err := s.seal(raw, store.OpPlace(opID, "operation_params"))
	if err != nil {
		return nil, err
	}
	op, err := s.st.CreateOpOcc(ctx, store.NewOp{ID: opID, VnfInstanceID: instID, Operation: operation,
		OperationParams: sealed, RequireState: requireState, IfVersion: ifVersion, Verb: verb})
	if err != nil {
		return nil, fromStore(err, notFoundInstance(instID).Detail)
	}
	s.log.Info("lcm operation accepted", "opOccId", op.ID, "vnfInstanceId", instID, "operation", operation)
	return op, nil
}

// Instantiate accepts an InstantiateVnfRequest.
func (s *Service) Instantiate(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	var req model.InstantiateVnfRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	if in.InstantiationState == model.Instantiated {
		// Checked again atomically by the store; this early answer saves validation noise.
		return nil, errorf(KindConflict, "VNF instance %s is already INSTANTIATED; terminate it before instantiating it again", id)
	}
	fl, ok := vnfd.Flavours[req.FlavourID]
	if !ok {
		return nil, errorf(KindInvalid, "flavourId %q is not a deployment flavour of VNFD %s; use one of: %s", req.FlavourID, vnfd.ID, flavourNames(vnfd))
	}
	if req.InstantiationLevelID != "" {
		if _, ok := fl.InstantiationLevels[req.InstantiationLevelID]; !ok {
			return nil, errorf(KindInvalid, "instantiationLevelId %q is not defined in flavour %q; use one of: %s",
				req.InstantiationLevelID, fl.ID, strings.Join(sortedKeys(fl.InstantiationLevels), ", "))
		}
	}
	if len(fl.ExtCPs) > 0 {
		for _, l := range req.ExtVirtualLinks {
			for _, cp := range l.ExtCps {
				if _, ok := fl.ExtCPs[cp.CpdID]; !ok {
					return nil, errorf(KindInvalid, "extVirtualLinks %q: cpdId %q is not an external connection point of flavour %q; use one of: %s",
						l.ID, cp.CpdID, fl.ID, strings.Join(sortedKeys(fl.ExtCPs), ", "))
				}
			}
		}
	}
	if len(req.VimConnectionInfo) > 1 {
		return nil, errorf(KindInvalid, "vimConnectionInfo: give at most one VIM connection")
	}
	// Resolve now to reject unknown VIMs; the engine resolves again when it
	// starts, so a VIM's current credentials are used.
	vims, err := s.vims.Resolve(ctx, req.VimConnectionInfo)
	if err != nil {
		return nil, err
	}
	vimType := ""
	if len(vims) > 0 {
		vimType = vims[0].VimType
	} else if len(in.VimConnectionInfo) > 0 {
		vimType = in.VimConnectionInfo[0].VimType
	}
	if _, ok := s.infra(vimType); !ok {
		if vimType == "" {
			return nil, errorf(KindInvalid, "no VIM to instantiate on: give vimConnectionInfo in the request, or register a default VIM (openstack vim register --is-default ...)")
		}
		return nil, errorf(KindInvalid, "vimConnectionInfo: vimType %q is not supported by this VNFM", vimType)
	}
	if err := s.checkDrivers(fl, model.HookInstantiateStart, model.HookInstantiateEnd); err != nil {
		return nil, err
	}
	if err := s.validateRequest(ctx, fl, mgmtdrivers.Request{Operation: model.OpInstantiate, Instance: &in.VnfInstance, Flavour: fl, Body: &req},
		model.HookInstantiateStart, model.HookInstantiateEnd); err != nil {
		return nil, err
	}
	return s.createOp(ctx, id, model.OpInstantiate, model.NotInstantiated, "instantiated", raw, 0)
}

// Terminate accepts a TerminateVnfRequest.
func (s *Service) Terminate(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	var req model.TerminateVnfRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.TerminationType != "FORCEFUL" && req.TerminationType != "GRACEFUL" {
		return nil, errorf(KindInvalid, `request body: "terminationType" must be FORCEFUL or GRACEFUL`)
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	if fl := flavourOf(in, vnfd); fl != nil {
		if err := s.checkDrivers(fl, model.HookTerminateStart, model.HookTerminateEnd); err != nil {
			return nil, err
		}
	}
	return s.createOp(ctx, id, model.OpTerminate, model.Instantiated, "terminated", raw, 0)
}

func flavourOf(in *store.Instance, vnfd *model.Vnfd) *model.Flavour {
	if in.InstantiatedVnfInfo == nil {
		return nil
	}
	return vnfd.Flavours[in.InstantiatedVnfInfo.FlavourID]
}

// Scale accepts a ScaleVnfRequest.
func (s *Service) Scale(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	var req model.ScaleVnfRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if req.Type != model.ScaleOut && req.Type != model.ScaleIn {
		return nil, errorf(KindInvalid, `request body: "type" must be SCALE_OUT or SCALE_IN`)
	}
	if req.Steps() < 1 {
		return nil, errorf(KindInvalid, `request body: "numberOfSteps" must be a positive integer`)
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	fl := flavourOf(in, vnfd)
	if fl == nil {
		return nil, errorf(KindConflict, "VNF instance %s is NOT_INSTANTIATED and cannot be scaled; instantiate it first", id)
	}
	asp, ok := fl.ScalingAspects[req.AspectID]
	if !ok {
		return nil, errorf(KindInvalid, "aspectId %q is not a scaling aspect of flavour %q; use one of: %s", req.AspectID, fl.ID, strings.Join(sortedKeys(fl.ScalingAspects), ", "))
	}
	level := 0
	for _, st := range in.InstantiatedVnfInfo.ScaleStatus {
		if st.AspectID == req.AspectID {
			level = st.ScaleLevel
		}
	}
	switch {
	case req.Type == model.ScaleOut && level+req.Steps() > asp.MaxScaleLevel:
		return nil, errorf(KindInvalid, "cannot scale out aspect %q by %d step(s): it is at level %d of at most %d", req.AspectID, req.Steps(), level, asp.MaxScaleLevel)
	case req.Type == model.ScaleIn && level-req.Steps() < 0:
		return nil, errorf(KindInvalid, "cannot scale in aspect %q by %d step(s): it is at level %d", req.AspectID, req.Steps(), level)
	}
	if err := s.checkDrivers(fl, model.HookScaleStart, model.HookScaleEnd); err != nil {
		return nil, err
	}
	return s.createOp(ctx, id, model.OpScale, model.Instantiated, "scaled", raw, 0)
}

// Heal accepts a HealVnfRequest.
func (s *Service) Heal(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	var req model.HealVnfRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	fl := flavourOf(in, vnfd)
	if fl == nil {
		return nil, errorf(KindConflict, "VNF instance %s is NOT_INSTANTIATED and cannot be healed; instantiate it first", id)
	}
	for _, c := range req.VnfcInstanceID {
		if !slices.ContainsFunc(in.InstantiatedVnfInfo.VnfcResourceInfo, func(r model.VnfcResourceInfo) bool { return r.ID == c }) {
			return nil, errorf(KindInvalid, "vnfcInstanceId %q is not a VNFC of VNF instance %s; see instantiatedVnfInfo.vnfcResourceInfo[].id", c, id)
		}
	}
	if err := s.checkDrivers(fl, model.HookHealStart, model.HookHealEnd); err != nil {
		return nil, err
	}
	if err := s.validateRequest(ctx, fl, mgmtdrivers.Request{Operation: model.OpHeal, Instance: &in.VnfInstance, Flavour: fl, Body: &req},
		model.HookHealStart, model.HookHealEnd); err != nil {
		return nil, err
	}
	return s.createOp(ctx, id, model.OpHeal, model.Instantiated, "healed", raw, 0)
}

// ChangeExtConn accepts a ChangeExtVnfConnectivityRequest.
func (s *Service) ChangeExtConn(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	var req model.ChangeExtVnfConnectivityRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	if len(req.ExtVirtualLinks) == 0 {
		return nil, errorf(KindInvalid, `request body: "extVirtualLinks" must list at least one external virtual link`)
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	if fl := flavourOf(in, vnfd); fl != nil {
		if err := s.checkDrivers(fl, model.HookChangeExtConnStart, model.HookChangeExtConnEnd); err != nil {
			return nil, err
		}
	}
	return s.createOp(ctx, id, model.OpChangeExtConn, model.Instantiated, "reconnected (change_ext_conn)", raw, 0)
}

// Modify accepts a VnfInfoModificationRequest (JSON merge patch).
func (s *Service) Modify(ctx context.Context, id string, raw []byte, ifVersion int64) (*store.OpOcc, error) {
	var req model.VnfInfoModificationRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	in, vnfd, err := s.instanceAndVnfd(ctx, id)
	if err != nil {
		return nil, err
	}
	target := req.VnfdID
	if target == "" && req.VnfPkgID != "" {
		return nil, errorf(KindInvalid, "changing vnfPkgId is not supported; give the target vnfdId instead")
	}
	if target != "" && target != in.VnfdID {
		pkg, err := s.st.PackageByVnfdID(ctx, target)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errorf(KindInvalid, "vnfdId %s does not belong to an onboarded VNF package", target)
		}
		if err != nil {
			return nil, err
		}
		if pkg.OperationalState != model.Enabled {
			return nil, errorf(KindInvalid, "VNF package %s with vnfdId %s is not ENABLED", pkg.ID, target)
		}
	}
	if fl := flavourOf(in, vnfd); fl != nil {
		if err := s.checkDrivers(fl, model.HookModifyInformationStart, model.HookModifyInformationEnd); err != nil {
			return nil, err
		}
	}
	return s.createOp(ctx, id, model.OpModifyInfo, "", "modified", raw, ifVersion)
}

// GetOpOcc reads one op occurrence.
func (s *Service) GetOpOcc(ctx context.Context, id string) (*store.OpOcc, error) {
	if !validID(id) {
		return nil, notFoundOp(id)
	}
	op, err := s.st.GetOpOcc(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundOp(id)
	}
	return op, err
}

// ListOpOccs pages through op occurrences.
func (s *Service) ListOpOccs(ctx context.Context, p store.Page) ([]*store.OpOcc, bool, error) {
	return s.st.ListOpOccs(ctx, p)
}

// Journal returns the journals of ops, for their progress attribute.
func (s *Service) Journal(ctx context.Context, ids []string) (map[string][]store.JournalEntry, error) {
	return s.st.Journal(ctx, ids)
}

// Retry resumes a FAILED_TEMP operation from its journal.
func (s *Service) Retry(ctx context.Context, id string) (*store.OpOcc, error) {
	if _, err := s.GetOpOcc(ctx, id); err != nil {
		return nil, err
	}
	op, err := s.st.RetryOp(ctx, id)
	return op, fromStore(err, notFoundOp(id).Detail)
}

// Rollback undoes a FAILED_TEMP operation that can be rolled back.
func (s *Service) Rollback(ctx context.Context, id string) (*store.OpOcc, error) {
	cur, err := s.GetOpOcc(ctx, id)
	if err != nil {
		return nil, err
	}
	if cur.OperationState == model.StateFailedTemp {
		if why := rollbackUnsupported(cur); why != "" {
			return nil, errorf(KindConflict, "LCM operation occurrence %s (%s) cannot be rolled back: %s; retry it (POST .../retry) or mark it failed (POST .../fail)", id, cur.Operation, why)
		}
	}
	if err := s.st.ClearRollbackJournal(ctx, id); err != nil {
		return nil, err
	}
	op, err := s.st.RollbackOp(ctx, id)
	return op, fromStore(err, notFoundOp(id).Detail)
}

// rollbackUnsupported says why an operation cannot be rolled back ("" = it can).
func rollbackUnsupported(op *store.OpOcc) string {
	switch op.Operation {
	case model.OpInstantiate, model.OpChangeExtConn, model.OpModifyInfo:
		return ""
	case model.OpScale:
		var req model.ScaleVnfRequest
		_ = json.Unmarshal(op.OperationParams, &req)
		if req.Type == model.ScaleIn {
			return "removed VNFCs cannot be restored"
		}
		return ""
	case model.OpTerminate:
		return "terminated resources cannot be restored"
	case model.OpHeal:
		return "healed VNFCs are replaced, there is no previous state to return to"
	}
	return fmt.Sprintf("rollback of %s is not supported", op.Operation)
}

// Fail marks a FAILED_TEMP operation as finally FAILED.
func (s *Service) Fail(ctx context.Context, id string) (*store.OpOcc, error) {
	if _, err := s.GetOpOcc(ctx, id); err != nil {
		return nil, err
	}
	op, err := s.st.FailOp(ctx, id)
	return op, fromStore(err, notFoundOp(id).Detail)
}

// Cancel requests cancellation of a running or starting operation.
func (s *Service) Cancel(ctx context.Context, id, mode string) (*store.OpOcc, error) {
	if mode == "" {
		mode = model.CancelGraceful
	}
	if mode != model.CancelGraceful && mode != model.CancelForceful {
		return nil, errorf(KindInvalid, `"cancelMode" must be GRACEFUL or FORCEFUL`)
	}
	if _, err := s.GetOpOcc(ctx, id); err != nil {
		return nil, err
	}
	op, err := s.st.CancelOp(ctx, id, mode)
	return op, fromStore(err, notFoundOp(id).Detail)
}

// OpenParams decrypts an op's operationParams (for drivers; never for output).
func (s *Service) OpenParams(op *store.OpOcc) ([]byte, error) {
	return s.box.OpenJSON(op.OperationParams, store.OpPlace(op.ID, "operation_params"))
}

// Ready reports whether the database answers and its schema is the one this binary expects.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.st.Ping(ctx); err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	v, dirty, err := s.st.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("cannot read schema version: %w", err)
	}
	want, err := store.LatestMigration()
	if err != nil {
		return err
	}
	if dirty || v != want {
		return fmt.Errorf("database schema is at version %d (dirty=%v), this binary needs %d; run `vnfm migrate up`", v, dirty, want)
	}
	return nil
}

// Stats returns the operation and queue snapshot for metrics.
func (s *Service) Stats(ctx context.Context) (*store.Stats, error) { return s.st.Stats(ctx) }
