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
	"sync/atomic"

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
	// handed is what accept read, for the engine sharing this service.
	handed handoff
	// runner is the engine running with this service (nil: none): an
	// operation accepted while it has a free worker slot runs there
	// without a claim (Engine.reserveRun).
	runner atomic.Pointer[Engine]
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

// sealMap seals the secrets of a document stored at p. It goes through
// secrets.Generic first, so that a typed value in it (a MODIFY_INFO's
// changedInfo holds the request's []model.VimConnectionInfo) has its
// secrets sealed too.
func (s *Service) sealMap(m map[string]any, p secrets.Place) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	doc, err := secrets.Generic(m)
	if err != nil {
		return nil, err
	}
	v, err := s.box.SealDoc(doc, p)
	if err != nil {
		return nil, err
	}
	out, _ := v.(map[string]any)
	return out, nil
}

// CreateInstance creates a NOT_INSTANTIATED VNF instance from an onboarded, enabled package.
func (s *Service) CreateInstance(ctx context.Context, raw []byte) (*store.Instance, error) {
	var req model.CreateVnfRequest
	if err := decodeInto(raw, &req); err != nil {
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

// ReadInstanceDoc reads an instance's rendered (masked, serialised) document
// into d, reusing d.Doc (store.ReadInstanceDoc); a malformed id is simply
// not found.
func (s *Service) ReadInstanceDoc(ctx context.Context, id string, d *store.InstanceDoc) error {
	if !validID(id) {
		return notFoundInstance(id)
	}
	err := s.st.ReadInstanceDoc(ctx, id, d)
	if errors.Is(err, store.ErrNotFound) {
		return notFoundInstance(id)
	}
	return err
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

// opener opens an instance's documents (store.Opener), remembering the
// sealed values in kept.
func (s *Service) opener(kept *secrets.Kept) store.Opener {
	return func(raw []byte, p secrets.Place) ([]byte, error) { return s.box.OpenJSONKept(raw, p, kept) }
}

// sealInstance seals the secrets of an opened instance for storing: each
// jsonb attribute at its place (store.InstancePlace(id).Key(name)), where
// sealing the whole instance puts its values and where the store opens
// them. An attribute without a secret is kept as it is — shared with in, not
// decoded again — so an instance without secrets costs one encoding of its
// attributes (sealing the whole instance encoded it, sealed it and decoded
// it again). A secret kept remembers from opening the instance — one that
// did not change — keeps its stored value instead of being sealed anew.
func (s *Service) sealInstance(in *model.VnfInstance, kept *secrets.Kept) (*model.VnfInstance, store.InstanceDocs, error) {
	out := *in
	at := store.InstancePlace(in.ID)
	var docs store.InstanceDocs
	var errs [5]error
	docs[0], errs[0] = sealAttr(s.box, at, "vnfConfigurableProperties", &out.VnfConfigurableProperties, kept)
	docs[1], errs[1] = sealAttr(s.box, at, "vimConnectionInfo", &out.VimConnectionInfo, kept)
	docs[2], errs[2] = sealAttr(s.box, at, "instantiatedVnfInfo", &out.InstantiatedVnfInfo, kept)
	docs[3], errs[3] = sealAttr(s.box, at, "metadata", &out.Metadata, kept)
	docs[4], errs[4] = sealAttr(s.box, at, "extensions", &out.Extensions, kept)
	for _, err := range errs {
		if err != nil {
			return nil, docs, err
		}
	}
	return &out, docs, nil
}

// sealAttr replaces *v by a copy with its secrets sealed at at.Key(name),
// unless it has none: then *v stays and its encoding is returned (the
// store's columns need it), else nil.
func sealAttr[T any](box *secrets.Box, at secrets.Place, name string, v *T, kept *secrets.Kept) ([]byte, error) {
	b, err := json.Marshal(*v)
	if err != nil {
		return nil, err
	}
	sealed, err := box.SealJSONKept(b, at.Key(name), kept)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(sealed, b) {
		return b, nil
	}
	var fresh T
	if err := json.Unmarshal(sealed, &fresh); err != nil {
		return nil, err
	}
	*v = fresh
	return nil, nil
}

// instanceAndVnfd loads what request validation needs: the instance, its
// secrets open (remembered in kept), and its VNFD — with the
// subscriptions, which the op's creation notifies (store.OpenForOp).
func (s *Service) instanceAndVnfd(ctx context.Context, id string, kept *secrets.Kept, instantiation bool) (*store.InstancePackage, *model.Vnfd, error) {
	if !validID(id) {
		return nil, nil, notFoundInstance(id)
	}
	r, err := s.st.OpenForOp(ctx, id, s.opener(kept), instantiation)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, notFoundInstance(id)
	}
	if err != nil {
		return nil, nil, err
	}
	if r.Package == nil {
		return nil, nil, errorf(KindUnprocessable, "the VNF package with vnfdId %s of VNF instance %s is no longer onboarded; onboard a package with that vnfdId again (POST /vnfpkgm/v1/vnf_packages, then PUT .../package_content)", r.VnfdID, id)
	}
	return r, r.Package.Vnfd, nil
}

func flavourNames(v *model.Vnfd) string {
	var n []string
	for k := range v.Flavours {
		n = append(n, k)
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// Instantiate accepts an InstantiateVnfRequest.
func (s *Service) Instantiate(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	return s.accept(ctx, opInstantiate, id, raw, 0)
}

// Terminate accepts a TerminateVnfRequest.
func (s *Service) Terminate(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	return s.accept(ctx, opTerminate, id, raw, 0)
}

// Scale accepts a ScaleVnfRequest.
func (s *Service) Scale(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	return s.accept(ctx, opScale, id, raw, 0)
}

// Heal accepts a HealVnfRequest.
func (s *Service) Heal(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	return s.accept(ctx, opHeal, id, raw, 0)
}

// ChangeExtConn accepts a ChangeExtVnfConnectivityRequest.
func (s *Service) ChangeExtConn(ctx context.Context, id string, raw []byte) (*store.OpOcc, error) {
	return s.accept(ctx, opChangeExtConn, id, raw, 0)
}

// Modify accepts a VnfInfoModificationRequest (JSON merge patch); ifVersion
// non-zero must be the instance's current ETag.
func (s *Service) Modify(ctx context.Context, id string, raw []byte, ifVersion int64) (*store.OpOcc, error) {
	return s.accept(ctx, opModify, id, raw, ifVersion)
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
		if why := s.rollbackUnsupported(cur); why != "" {
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
func (s *Service) rollbackUnsupported(op *store.OpOcc) string {
	o, err := operationOf(op.Operation)
	if err != nil || o.cannotRollBack == nil {
		return fmt.Sprintf("rollback of %s is not supported", op.Operation)
	}
	raw, err := s.box.OpenJSON(op.OperationParams, store.OpPlace(op.ID, "operation_params"))
	if err != nil {
		raw = op.OperationParams
	}
	req, _ := o.decode(raw)
	return o.cannotRollBack(req)
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
