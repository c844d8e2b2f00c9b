// Package lcmtest provides in-test drivers and fixtures for engine, API and
// end-to-end tests: a fake infra driver that "creates" VNFCs node by node
// with journaled checkpoints, a fake management driver, and a sample VNFD.
// Their behaviour is steered by the request's additionalParams.fake, so a test
// (or a second process) can inject delays and failures.
package lcmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
)

// VimType is the VIM type the fake infra driver serves.
const VimType = "ETSINFV.FAKE.V_1"

// MgmtDriverName is the fake management driver's name in the sample VNFD.
const MgmtDriverName = "fake-mgmt"

// Knobs are read from additionalParams.fake of the request.
type Knobs struct {
	// DelayMs is how long each infra node takes.
	DelayMs int `json:"delayMs"`
	// HookDelayMs is how long each management hook takes.
	HookDelayMs int `json:"hookDelayMs"`
	// FailStep names a step ("infra.instantiate", "mgmt.instantiate_end", ...) that fails
	// while FailFile exists (or always, when FailFile is empty).
	FailStep string `json:"failStep"`
	FailFile string `json:"failFile"`
	// FailNode makes only that node fail inside FailStep.
	FailNode string `json:"failNode"`
	// Conflict makes the management driver refuse the request when it is
	// accepted, as a driver does when other resources stand in the way
	// (*driverapi.ConflictError with this detail).
	Conflict string `json:"conflict"`
	// EchoVimCredentials makes a failing instantiate_end hook quote the
	// VIM's credentials in its error, as a careless driver might: the
	// engine must scrub them.
	EchoVimCredentials bool `json:"echoVimCredentials"`
}

func knobsOf(ap map[string]any) Knobs {
	var k Knobs
	if f, ok := ap["fake"]; ok {
		b, _ := json.Marshal(f)
		_ = json.Unmarshal(b, &k)
	}
	return k
}

func knobs(op *driverapi.Op) Knobs { return knobsOf(op.Request.AdditionalParams()) }

func (k Knobs) fails(step, node string) bool {
	if k.FailStep != step || (k.FailNode != "" && k.FailNode != node) {
		return false
	}
	if k.FailFile == "" {
		return true
	}
	_, err := os.Stat(k.FailFile)
	return err == nil
}

// Calls counts driver invocations per step and node (process-local).
type Calls struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *Calls) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[key]++
}

// Get returns how often key ran ("infra.instantiate", "infra.instantiate/VDU1-0", ...).
func (c *Calls) Get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// Infra is a fake infra driver: one VNFC per VDU instance, created node by node.
type Infra struct {
	Calls Calls
}

var _ driverapi.InfraDriver = (*Infra)(nil)

// CheckRequest implements driverapi.InfraDriver: the fake accepts everything.
func (f *Infra) CheckRequest(context.Context, *driverapi.Accept) error { return nil }

// ComputeResources implements driverapi.Infra from the SOL003 attributes.
func (f *Infra) ComputeResources(info *model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	return driverapi.BaseComputeResources(info)
}

// CheckVIP implements driverapi.Infra: nothing filters traffic here.
func (f *Infra) CheckVIP(context.Context, driverapi.VIPCheck) error { return nil }

// ScaleInVictims implements driverapi.InfraDriver: the VNFCs beyond the
// target level, as converge removes them.
func (f *Infra) ScaleInVictims(_ context.Context, op *driverapi.Op) ([]string, error) {
	keep := map[string]bool{}
	for _, v := range desired(op) {
		keep[v.ID] = true
	}
	var out []string
	for _, v := range op.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if !keep[v.ID] {
			out = append(out, v.ID)
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// desired returns the VNFC names the instance should have at its scale levels.
func desired(op *driverapi.Op) []model.VnfcResourceInfo {
	var out []model.VnfcResourceInfo
	fl := op.Vnfd.Flavours[op.Instance.InstantiatedVnfInfo.FlavourID]
	levels := map[string]int{}
	for _, s := range op.Instance.InstantiatedVnfInfo.ScaleStatus {
		levels[s.AspectID] = s.ScaleLevel
	}
	for _, vdu := range sortedVDUs(fl) {
		n := fl.VDUs[vdu].InitialInstances
		if vdu == "worker" {
			n += levels["worker_aspect"]
		}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", vdu, i)
			vim := "default"
			if op.Vim != nil {
				vim = op.Vim.ID
			}
			out = append(out, model.VnfcResourceInfo{ID: name, VduID: vdu,
				ComputeResource: model.ResourceHandle{VimConnectionID: vim, ResourceID: "server-" + op.Instance.ID[:8] + "-" + name, VimLevelResourceType: "OS::Nova::Server"}})
		}
	}
	return out
}

func sortedVDUs(fl *model.Flavour) []string {
	var out []string
	for _, n := range []string{"master", "worker"} {
		if _, ok := fl.VDUs[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// converge creates missing VNFCs and removes extra ones, node by node, with checkpoints.
func (f *Infra) converge(ctx context.Context, op *driverapi.Op, step string) error {
	f.Calls.add(step)
	k := knobs(op)
	info := op.Instance.InstantiatedVnfInfo
	want := desired(op)
	have := map[string]model.VnfcResourceInfo{}
	for _, v := range info.VnfcResourceInfo {
		have[v.ID] = v
	}
	var next []model.VnfcResourceInfo
	for _, v := range want {
		if _, ok := have[v.ID]; ok {
			next = append(next, have[v.ID])
			delete(have, v.ID)
			continue
		}
		if _, done := op.Progress.NodeCompleted(v.ID); !done {
			if err := op.Progress.NodeStart(ctx, v.ID, "creating server"); err != nil {
				return err
			}
			f.Calls.add(step + "/" + v.ID)
			if err := sleep(ctx, time.Duration(k.DelayMs)*time.Millisecond); err != nil {
				return err
			}
			if k.fails(step, v.ID) {
				err := fmt.Errorf("server %s did not boot (injected failure)", v.ID)
				_ = op.Progress.NodeFailed(ctx, v.ID, err)
				return err
			}
			if err := op.Progress.NodeDone(ctx, v.ID, map[string]string{"resourceId": v.ComputeResource.ResourceID}); err != nil {
				return err
			}
			if op.CancelRequested() {
				next = append(next, v)
				info.VnfcResourceInfo = next
				return driverapi.ErrCancelled
			}
		}
		next = append(next, v)
		op.ResourceChanges.AffectedVnfcs = append(op.ResourceChanges.AffectedVnfcs,
			model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ChangeType: "ADDED", ComputeResource: v.ComputeResource})
	}
	for _, v := range sortedVnfcs(have) {
		op.ResourceChanges.AffectedVnfcs = append(op.ResourceChanges.AffectedVnfcs,
			model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ChangeType: "REMOVED", ComputeResource: v.ComputeResource})
	}
	info.VnfcResourceInfo = next
	if k.fails(step, "") && k.FailNode == "" {
		return fmt.Errorf("%s failed (injected failure)", step)
	}
	return nil
}

func sortedVnfcs(m map[string]model.VnfcResourceInfo) []model.VnfcResourceInfo {
	var out []model.VnfcResourceInfo
	for _, v := range m {
		out = append(out, v)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].ID < out[j-1].ID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Instantiate creates every VNFC.
func (f *Infra) Instantiate(ctx context.Context, op *driverapi.Op) error {
	return f.converge(ctx, op, "infra.instantiate")
}

// Scale converges to the new scale level.
func (f *Infra) Scale(ctx context.Context, op *driverapi.Op) error {
	return f.converge(ctx, op, "infra.scale")
}

// Heal "recreates" the named VNFCs (all when none are named).
func (f *Infra) Heal(ctx context.Context, op *driverapi.Op) error {
	f.Calls.add("infra.heal")
	k := knobs(op)
	if k.fails("infra.heal", "") {
		return errors.New("heal failed (injected failure)")
	}
	req := op.Request.Heal
	for _, v := range op.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if req != nil && len(req.VnfcInstanceID) > 0 && !contains(req.VnfcInstanceID, v.ID) {
			continue
		}
		op.ResourceChanges.AffectedVnfcs = append(op.ResourceChanges.AffectedVnfcs,
			model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ChangeType: "MODIFIED", ComputeResource: v.ComputeResource})
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Terminate removes every VNFC.
func (f *Infra) Terminate(ctx context.Context, op *driverapi.Op) error {
	f.Calls.add("infra.terminate")
	if knobs(op).fails("infra.terminate", "") {
		return errors.New("terminate failed (injected failure)")
	}
	if info := op.Instance.InstantiatedVnfInfo; info != nil {
		for _, v := range info.VnfcResourceInfo {
			op.ResourceChanges.AffectedVnfcs = append(op.ResourceChanges.AffectedVnfcs,
				model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ChangeType: "REMOVED", ComputeResource: v.ComputeResource})
		}
		info.VnfcResourceInfo = nil
	}
	return nil
}

// ChangeExtConn records the new external VLs.
func (f *Infra) ChangeExtConn(ctx context.Context, op *driverapi.Op) error {
	f.Calls.add("infra.change_ext_conn")
	req := op.Request.ChangeExtConn
	op.ChangedExtConnectivity = nil
	info := op.Instance.InstantiatedVnfInfo
	info.ExtVirtualLinkInfo = nil
	for _, l := range req.ExtVirtualLinks {
		vim := l.VimConnectionID
		if vim == "" && op.Vim != nil {
			vim = op.Vim.ID
		}
		evl := model.ExtVirtualLinkInfo{ID: l.ID, ResourceHandle: model.ResourceHandle{VimConnectionID: vim, ResourceID: l.ResourceID}}
		info.ExtVirtualLinkInfo = append(info.ExtVirtualLinkInfo, evl)
		op.ChangedExtConnectivity = append(op.ChangedExtConnectivity, evl)
	}
	return nil
}

// RollbackInstantiate removes whatever was created.
func (f *Infra) RollbackInstantiate(ctx context.Context, op *driverapi.Op) error {
	f.Calls.add("rollback.infra.instantiate")
	if knobs(op).fails("rollback.infra.instantiate", "") {
		return errors.New("rollback failed (injected failure)")
	}
	if info := op.Instance.InstantiatedVnfInfo; info != nil {
		info.VnfcResourceInfo = nil
	}
	return nil
}

// RollbackScale restores the previous scale level and converges to it.
func (f *Infra) RollbackScale(ctx context.Context, op *driverapi.Op) error {
	f.Calls.add("rollback.infra.scale")
	var prev []model.ScaleInfo
	if err := json.Unmarshal(op.Previous["scaleStatus"], &prev); err != nil {
		return fmt.Errorf("no previous scale status: %w", err)
	}
	op.Instance.InstantiatedVnfInfo.ScaleStatus = prev
	return f.converge(ctx, op, "rollback.scale")
}

// Mgmt is a fake management driver implementing every hook it is asked for.
type Mgmt struct {
	Calls Calls

	mu     sync.Mutex
	stored []*MgmtParams // what ParseParams was given, call by call
}

// Stored returns the stored parameters (the instantiation's) ParseParams
// was given, call by call (nil where it was given none).
func (m *Mgmt) Stored() []*MgmtParams {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stored)
}

// MgmtParams are the fake driver's parameters: the request's
// additionalParams.fake knobs and additionalParams.password (a secret the
// engine must scrub from the errors it injects).
type MgmtParams struct {
	Knobs    Knobs  `json:"knobs"`
	Password string `json:"password,omitempty"`
}

// Name implements mgmtdrivers.Typed.
func (m *Mgmt) Name() string { return MgmtDriverName }

// ParseParams implements mgmtdrivers.Typed: the knobs of this request.
func (m *Mgmt) ParseParams(_ context.Context, a *driverapi.Accept, stored *MgmtParams) (*MgmtParams, error) {
	m.Calls.add("parse")
	m.mu.Lock()
	m.stored = append(m.stored, stored)
	m.mu.Unlock()
	ap := a.Request.AdditionalParams()
	p := &MgmtParams{Knobs: knobsOf(ap)}
	p.Password, _ = ap["password"].(string)
	if p.Knobs.Conflict != "" {
		return nil, &driverapi.ConflictError{Detail: p.Knobs.Conflict}
	}
	return p, nil
}

func (m *Mgmt) hook(ctx context.Context, p *MgmtParams, hook string) error {
	m.Calls.add("mgmt." + hook)
	k := p.Knobs
	if err := sleep(ctx, time.Duration(k.HookDelayMs)*time.Millisecond); err != nil {
		return err
	}
	if k.fails("mgmt."+hook, "") {
		// Include a secret from the request: the engine must scrub it.
		return fmt.Errorf("%s failed on the master (ssh password %s rejected; injected failure)", hook, p.Password)
	}
	return nil
}

// InstantiateStart implements the hook.
func (m *Mgmt) InstantiateStart(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	return m.hook(ctx, p, model.HookInstantiateStart)
}

// InstantiateEnd registers a marker in the instance's metadata.
func (m *Mgmt) InstantiateEnd(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	if err := m.hook(ctx, p, model.HookInstantiateEnd); err != nil {
		if p.Knobs.EchoVimCredentials && op.Vim != nil {
			return fmt.Errorf("%w; VIM access %v", err, op.Vim.AccessInfo)
		}
		return err
	}
	if op.Instance.Metadata == nil {
		op.Instance.Metadata = map[string]any{}
	}
	op.Instance.Metadata["cluster"] = "ready"
	return nil
}

// TerminateStart implements the hook.
func (m *Mgmt) TerminateStart(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	return m.hook(ctx, p, model.HookTerminateStart)
}

// ScaleStart implements the hook.
func (m *Mgmt) ScaleStart(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	return m.hook(ctx, p, model.HookScaleStart)
}

// ScaleEnd implements the hook.
func (m *Mgmt) ScaleEnd(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	return m.hook(ctx, p, model.HookScaleEnd)
}

// HealEnd implements the hook.
func (m *Mgmt) HealEnd(ctx context.Context, op *driverapi.Op, p *MgmtParams) error {
	return m.hook(ctx, p, model.HookHealEnd)
}

// Rollback undoes hooks during a rollback.
func (m *Mgmt) Rollback(ctx context.Context, hook string, op *driverapi.Op, p *MgmtParams) error {
	m.Calls.add("rollback.mgmt." + hook)
	if hook == model.HookInstantiateEnd && op.Instance.Metadata != nil {
		delete(op.Instance.Metadata, "cluster")
	}
	return nil
}

// Resolver returns an infra resolver serving VimType (and "" as the default) with f.
func Resolver(f driverapi.InfraDriver) func(string) (driverapi.InfraDriver, bool) {
	return func(t string) (driverapi.InfraDriver, bool) {
		if t == VimType || t == "" {
			return f, true
		}
		return nil, false
	}
}

// Registry returns a management driver registry holding m.
func Registry(m *Mgmt) *mgmtdrivers.Registry {
	return mgmtdrivers.NewRegistry(mgmtdrivers.New[MgmtParams](m))
}

// VnfdID of the sample package.
const VnfdID = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177"

// PackageID of the sample package.
const PackageID = "3c1b4e4a-1f0c-4c59-9a7a-6b0e0e1f9a01"

// SamplePackage is an onboarded, enabled package with a Kubernetes-cluster
// shaped VNFD: masters and a scalable worker aspect, hooks on the fake driver.
func SamplePackage() *model.Package {
	hooks := map[string]string{}
	for _, h := range []string{model.HookInstantiateStart, model.HookInstantiateEnd, model.HookTerminateStart,
		model.HookScaleStart, model.HookScaleEnd, model.HookHealEnd} {
		hooks[h] = MgmtDriverName
	}
	return &model.Package{ID: PackageID, OnboardingState: model.Onboarded, OperationalState: model.Enabled, UsageState: model.NotInUse,
		Vnfd: &model.Vnfd{ID: VnfdID, Provider: "Company", ProductName: "Sample K8s", SoftwareVersion: "1.0", Version: "1.0",
			Flavours: map[string]*model.Flavour{"simple": {
				ID: "simple", DefaultInstantiationLevel: "instantiation_level_1",
				InstantiationLevels: map[string]*model.InstantiationLevel{
					"instantiation_level_1": {ScaleLevels: map[string]int{"worker_aspect": 0}},
					"instantiation_level_2": {ScaleLevels: map[string]int{"worker_aspect": 1}},
				},
				ScalingAspects: map[string]*model.ScalingAspect{"worker_aspect": {MaxScaleLevel: 3}},
				Interfaces:     hooks,
				VDUs: map[string]*model.VDU{
					"master": {MinInstances: 1, MaxInstances: 1, InitialInstances: 1},
					"worker": {MinInstances: 2, MaxInstances: 5, InitialInstances: 2},
				},
			}}}}
}
