package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/userdata"
)

// VimType is the vimConnectionInfo.vimType the driver serves (the VIM
// registry normalizes Tacker's "openstack" to it).
const VimType = "ETSINFV.OPENSTACK_KEYSTONE.V_3"

// Options tune the driver; zero values take the defaults.
type Options struct {
	// StackTimeout bounds each wait for a stack create, update or delete
	// (default 30 minutes; also Heat's timeout_mins).
	StackTimeout time.Duration
	// PollMin and PollMax bound the exponential backoff of stack polling
	// (defaults 200 ms and 3 s).
	PollMin, PollMax time.Duration
	// HTTPTimeout bounds one API request (default 60 s).
	HTTPTimeout time.Duration
	// NestedDepth is the nested_depth of resource listings (default 3:
	// group, member, member resources, one more nested template).
	NestedDepth int
	Logger      *slog.Logger
	// Outbound is the outbound-URL policy of VIM connections a request
	// supplies (its own accessInfo, no vimId): the client names their
	// Keystone, and that Keystone names the endpoints of its catalog, so
	// every connection is checked, no redirect is followed and no remote
	// body is quoted in errors. Registered VIMs (vimId set) are the
	// VNFM's own business and are not restricted. nil: the zero policy
	// (public addresses only).
	Outbound *outbound.Policy
}

// Driver is the OpenStack infra driver. It is safe for concurrent use by
// the engine's workers.
type Driver struct {
	opts  Options
	cache clientCache
}

var _ driverapi.InfraDriver = (*Driver)(nil)

// New returns a driver.
func New(opts Options) *Driver {
	if opts.StackTimeout <= 0 {
		opts.StackTimeout = 30 * time.Minute
	}
	if opts.Outbound == nil {
		opts.Outbound = &outbound.Policy{}
	}
	if opts.PollMin <= 0 {
		opts.PollMin = 200 * time.Millisecond
	}
	if opts.PollMax <= 0 {
		opts.PollMax = 3 * time.Second
	}
	opts.PollMax = max(opts.PollMax, opts.PollMin)
	if opts.HTTPTimeout <= 0 {
		opts.HTTPTimeout = 60 * time.Second
	}
	if opts.NestedDepth <= 0 {
		opts.NestedDepth = 3
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Driver{opts: opts}
}

// StackName is the Heat stack of a VNF instance (Tacker's name).
func StackName(vnfInstanceID string) string { return "vnflcm_" + vnfInstanceID }

// Progress nodes of the driver's steps.
const (
	nodeStack        = "stack"              // instantiate: stack created (output: stackRef)
	nodeHealParams   = "stack-params"       // entire heal: parameters of the old stack (output: {nfv})
	nodeHealDelete   = "stack-delete"       // entire heal: old stack gone
	nodeGracefulWait = "graceful-wait"      // terminate: graceful termination timeout waited
	nodeStackNew     = "stack-recreate"     // entire heal: new stack created (output: stackRef)
	scaleReason      = "Scale-in victim"    // mark-unhealthy reason of scale-in
	rollbackReason   = "Scale-out rollback" // mark-unhealthy reason of a scale-out rollback
)

type progress struct {
	op *driverapi.Op
}

func (p progress) start(ctx context.Context, node, msg string) error {
	if p.op.Progress == nil {
		return nil
	}
	return p.op.Progress.NodeStart(ctx, node, msg)
}

func (p progress) note(ctx context.Context, node, msg string) {
	if p.op.Progress == nil {
		return
	}
	if node == "" {
		_ = p.op.Progress.Note(ctx, msg)
		return
	}
	_ = p.op.Progress.NodeNote(ctx, node, msg)
}

func (p progress) done(ctx context.Context, node string, out any) error {
	if p.op.Progress == nil {
		return nil
	}
	return p.op.Progress.NodeDone(ctx, node, out)
}

func (p progress) completed(node string) (json.RawMessage, bool) {
	if p.op.Progress == nil {
		return nil, false
	}
	return p.op.Progress.NodeCompleted(node)
}

func (d *Driver) log(op *driverapi.Op) *slog.Logger {
	if op.Log != nil {
		return op.Log
	}
	return d.opts.Logger
}

func cancelled(op *driverapi.Op) bool {
	return op.CancelRequested != nil && op.CancelRequested()
}

// osVim is the OpenStack VIM connection of the operation: op.Vim, or the
// instance's first OpenStack connection when op.Vim is of another type.
func osVim(op *driverapi.Op) *model.VimConnectionInfo {
	isOS := func(t string) bool {
		switch strings.ToUpper(strings.TrimSpace(t)) {
		case "OPENSTACK", VimType, "ETSINFV.OPENSTACK_KEYSTONE.V3":
			return true
		}
		return false
	}
	if op.Vim == nil || isOS(op.Vim.VimType) || op.Instance == nil {
		return op.Vim
	}
	for i := range op.Instance.VimConnectionInfo {
		if v := &op.Instance.VimConnectionInfo[i]; isOS(v.VimType) {
			return v
		}
	}
	return op.Vim
}

func vimID(op *driverapi.Op) string {
	v := osVim(op)
	if v == nil {
		return ""
	}
	if v.ID != "" {
		return v.ID
	}
	return v.VimID
}

// connect returns the clients of the operation's VIM.
func (d *Driver) connect(ctx context.Context, op *driverapi.Op) (*clients, error) {
	a, err := accessOf(osVim(op))
	if err != nil {
		return nil, err
	}
	return d.clientsFor(ctx, a)
}

// template reads the flavour's Heat templates from the package.
func (d *Driver) template(ctx context.Context, op *driverapi.Op) ([]byte, map[string]string, *layout, error) {
	fl := op.Flavour
	if fl == nil {
		return nil, nil, nil, errors.New("the VNF instance has no deployment flavour")
	}
	if fl.HOT == nil {
		if op.Request.Instantiate != nil {
			info, err := instantiated(op)
			if err != nil {
				return nil, nil, nil, err
			}
			return d.generate(ctx, op, info)
		}
		// Later operations: the stack runs the generated template; its
		// groups follow from the flavour.
		return nil, nil, generatedLayout(fl), nil
	}
	if op.Package == nil {
		return nil, nil, nil, errors.New("the VNF package is not available to the driver")
	}
	tmpl, files, err := heatTemplate(ctx, op.Package, fl)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("flavour %s: Heat base template (BaseHOT/%s/): %w", fl.ID, fl.ID, err)
	}
	lay, err := analyze(tmpl, files, fl)
	if err != nil {
		return nil, nil, nil, err
	}
	return tmpl, files, lay, nil
}

func (d *Driver) createBody(name string, tmpl []byte, files map[string]string, params map[string]any) rawCreate {
	if files == nil {
		files = map[string]string{}
	}
	return rawCreate{"stack_name": name, "template": string(tmpl), "files": files, "parameters": params,
		"disable_rollback": true, "timeout_mins": d.timeoutMins()}
}

func remember(op *driverapi.Op, ref stackRef) {
	if op.Scratch != nil {
		b, _ := json.Marshal(ref)
		op.Scratch[ScratchStack] = b
	}
}

func isComplete(status string) bool {
	return strings.HasSuffix(status, "_COMPLETE") && !strings.HasPrefix(status, "DELETE_") && !strings.HasPrefix(status, "ROLLBACK_")
}

// ensureCreated makes sure the stack `name` exists and is complete: a stack
// this step created before a crash (node checkpoint) is waited for, a
// complete stack of unknown origin is updated to this template and these
// parameters, a failed or half-deleted one is deleted first. Else it
// creates the stack, records its id (op.Scratch and the node's output)
// before waiting, and waits.
func (d *Driver) ensureCreated(ctx context.Context, op *driverapi.Op, c *clients, node string, body rawCreate) (stackRef, error) {
	p := progress{op}
	name, _ := body["stack_name"].(string)
	note := func(st string) { p.note(ctx, node, "Heat stack "+name+": "+st) }
	var ours stackRef
	if out, ok := p.completed(node); ok {
		_ = json.Unmarshal(out, &ours)
	}
	s, err := findStack(ctx, c, name)
	if err != nil {
		return stackRef{}, err
	}
	if s != nil {
		ref := stackRef{Name: s.Name, ID: s.ID}
		remember(op, ref)
		if strings.HasSuffix(s.Status, "_IN_PROGRESS") {
			d.log(op).Info("waiting for the stack an earlier attempt started", "stack", name, "status", s.Status)
			if s, err = d.waitStack(ctx, c, ref, waitOpts{mode: waitSettle, note: note}); err != nil {
				return ref, err
			}
		}
		switch {
		case s == nil || s.Status == "DELETE_COMPLETE":
		case isComplete(s.Status) && ours.ID == s.ID:
			return ref, nil
		case isComplete(s.Status):
			// Created by an attempt that crashed before its checkpoint, or
			// left over: bring it to this template and these parameters.
			d.log(op).Info("updating the existing stack", "stack", name, "status", s.Status)
			if cancelled(op) {
				return ref, driverapi.ErrCancelled
			}
			upd := rawUpdate{"template": body["template"], "files": body["files"], "parameters": body["parameters"], "timeout_mins": body["timeout_mins"]}
			if err := putStack(ctx, c, ref, upd); err != nil {
				return ref, err
			}
			if err := p.done(ctx, node, ref); err != nil {
				return ref, err
			}
			_, err := d.waitStack(ctx, c, ref, waitOpts{mode: waitDone, updated: true, since: s.UpdatedTime, note: note})
			return ref, err
		default:
			d.log(op).Info("deleting the failed stack of an earlier attempt", "stack", name, "status", s.Status, "reason", s.StatusReason)
			if err := d.deleteAndWait(ctx, op, c, ref, s.Status, node); err != nil {
				return ref, err
			}
		}
	}
	if cancelled(op) {
		return stackRef{}, driverapi.ErrCancelled
	}
	if err := p.start(ctx, node, "creating Heat stack "+name); err != nil {
		return stackRef{}, err
	}
	ref, err := d.createStackWhenNameFree(ctx, c, body)
	if err != nil {
		return stackRef{}, err
	}
	remember(op, ref)
	if err := p.done(ctx, node, ref); err != nil {
		return ref, err
	}
	d.log(op).Info("stack create sent", "stack", name, "id", ref.ID)
	_, err = d.waitStack(ctx, c, ref, waitOpts{mode: waitDone, note: note})
	return ref, err
}

// deleteAndWait deletes a stack (unless status says a delete is already
// running) and waits until it is gone; a second delete is tried once if
// Heat reports DELETE_FAILED.
func (d *Driver) deleteAndWait(ctx context.Context, op *driverapi.Op, c *clients, ref stackRef, status, node string) error {
	p := progress{op}
	note := func(st string) { p.note(ctx, node, "Heat stack "+ref.Name+": "+st) }
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 || status != "DELETE_IN_PROGRESS" {
			if err = deleteStack(ctx, c, ref); err != nil {
				return err
			}
		}
		if _, err = d.waitStack(ctx, c, ref, waitOpts{mode: waitGone, note: note}); err == nil {
			return nil
		}
		var se *StackError
		if !errors.As(err, &se) {
			return err
		}
	}
	return err
}

// liveStack finds the instance's stack and waits until no action is in
// progress on it.
func (d *Driver) liveStack(ctx context.Context, op *driverapi.Op, c *clients) (stackRef, *stacks.RetrievedStack, error) {
	name := StackName(op.Instance.ID)
	s, err := findStack(ctx, c, name)
	if err != nil {
		return stackRef{}, nil, err
	}
	if s == nil {
		return stackRef{}, nil, fmt.Errorf("the Heat stack %s of VNF instance %s does not exist in the VIM", name, op.Instance.ID)
	}
	ref := stackRef{Name: s.Name, ID: s.ID}
	remember(op, ref)
	if strings.HasSuffix(s.Status, "_IN_PROGRESS") {
		if s, err = d.waitStack(ctx, c, ref, waitOpts{mode: waitSettle}); err != nil {
			return ref, nil, err
		}
		if s == nil {
			return ref, nil, fmt.Errorf("the Heat stack %s disappeared", name)
		}
	}
	return ref, s, nil
}

// update PATCHes the stack's parameters and waits for UPDATE_COMPLETE.
func (d *Driver) update(ctx context.Context, op *driverapi.Op, c *clients, ref stackRef, before *stacks.RetrievedStack, params map[string]any) error {
	if cancelled(op) {
		return driverapi.ErrCancelled
	}
	body := rawUpdate{"parameters": params, "timeout_mins": d.timeoutMins()}
	if err := patchStack(ctx, c, ref, body); err != nil {
		return err
	}
	note := func(st string) { progress{op}.note(ctx, "", "Heat stack "+ref.Name+": "+st) }
	_, err := d.waitStack(ctx, c, ref, waitOpts{mode: waitDone, updated: true, since: before.UpdatedTime, note: note})
	return err
}

// refresh discovers the stack's resources, writes them into the working
// copy's instantiatedVnfInfo and records the changes.
//
// extVLs are the external VLs the instance is to have; reqLinks the
// request's extVirtualLinks (instantiate, change_ext_conn) that say which
// VL each external CPD is on (else the instance's current extCpInfo does,
// else the port's network).
func (d *Driver) refresh(ctx context.Context, op *driverapi.Op, c *clients, ref stackRef, extVLs []model.ExtVirtualLinkInfo,
	reqLinks []model.ExtVirtualLinkData, healed map[string]bool) (*discovered, error) {
	info := op.Instance.InstantiatedVnfInfo
	old := *info
	cpdVL := map[string]string{}
	for _, links := range [][]model.ExtVirtualLinkData{extVLDataOfInfo(info), reqLinks} {
		for _, l := range links {
			for _, c := range l.ExtCps {
				cpdVL[c.CpdID] = l.ID
			}
		}
	}
	disc, err := d.discover(ctx, c, ref, discoverInput{vim: vimID(op), flavour: op.Flavour, prev: info.VnfcResourceInfo, extVLs: extVLs})
	if err != nil {
		return nil, err
	}
	info.VnfcResourceInfo = disc.vnfcs
	info.VirtualLinkResourceInfo = disc.vls
	info.VirtualStorageResourceInfo = disc.storages
	info.ExtCpInfo = disc.extCps
	links := slices.Clone(extVLs)
	for i := range links {
		links[i].ExtLinkPorts = nil
	}
	for _, p := range disc.linkPorts {
		i := slices.IndexFunc(links, func(l model.ExtVirtualLinkInfo) bool {
			return l.ID == cpdVL[p.cpd] && l.ResourceHandle.ResourceID == p.network
		})
		if i < 0 {
			i = slices.IndexFunc(links, func(l model.ExtVirtualLinkInfo) bool { return l.ResourceHandle.ResourceID == p.network })
		}
		if i >= 0 {
			links[i].ExtLinkPorts = append(links[i].ExtLinkPorts, p.port)
		}
	}
	info.ExtVirtualLinkInfo = links
	if op.ResourceChanges == nil {
		op.ResourceChanges = &model.ResourceChanges{}
	}
	recordChanges(op.ResourceChanges, &old, info, healed)
	return disc, nil
}

// extVLsOfRequest turns a request's extVirtualLinks into ExtVirtualLinkInfo
// (ports are filled in by discovery).
func extVLsOfRequest(op *driverapi.Op, links []model.ExtVirtualLinkData) []model.ExtVirtualLinkInfo {
	var out []model.ExtVirtualLinkInfo
	for _, l := range links {
		vim := l.VimConnectionID
		if vim == "" {
			vim = vimID(op)
		}
		out = append(out, model.ExtVirtualLinkInfo{ID: l.ID, ResourceHandle: model.ResourceHandle{VimConnectionID: vim,
			ResourceProviderID: l.ResourceProviderID, ResourceID: l.ResourceID}})
	}
	return out
}

// extVLDataOfInfo rebuilds extVirtualLinks (network per external CPD) from
// instantiatedVnfInfo, for when the stack's nfv parameter is not readable.
func extVLDataOfInfo(info *model.InstantiatedVnfInfo) []model.ExtVirtualLinkData {
	cpdOfPort := map[string]string{}
	for _, e := range info.ExtCpInfo {
		cpdOfPort[e.ExtLinkPortID] = e.CpdID
	}
	var out []model.ExtVirtualLinkData
	for _, l := range info.ExtVirtualLinkInfo {
		d := model.ExtVirtualLinkData{ID: l.ID, VimConnectionID: l.ResourceHandle.VimConnectionID, ResourceID: l.ResourceHandle.ResourceID}
		seen := map[string]bool{}
		for _, p := range l.ExtLinkPorts {
			if cpd := cpdOfPort[p.ID]; cpd != "" && !seen[cpd] {
				seen[cpd] = true
				d.ExtCps = append(d.ExtCps, model.VnfExtCpData{CpdID: cpd})
			}
		}
		out = append(out, d)
	}
	return out
}

func vnfcIDs(vs []model.VnfcResourceInfo) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}

func instantiated(op *driverapi.Op) (*model.InstantiatedVnfInfo, error) {
	if op.Instance == nil || op.Instance.InstantiatedVnfInfo == nil {
		return nil, errors.New("the VNF instance is not instantiated")
	}
	return op.Instance.InstantiatedVnfInfo, nil
}

// Instantiate creates the stack vnflcm_<vnfInstanceId> from the flavour's
// base HOT and fills instantiatedVnfInfo from what it made.
//
// additionalParams lcm-operation-user-data and lcm-operation-user-data-class
// (Tacker's Python user-data hooks) are accepted and not run: the driver
// builds the parameters they would build (nfv, desired capacities,
// additionalParams pass-through) itself.
func (d *Driver) Instantiate(ctx context.Context, op *driverapi.Op) error {
	info, err := instantiated(op)
	if err != nil {
		return err
	}
	req := op.Request.Instantiate
	if req == nil {
		return errors.New("instantiate: the operation has no InstantiateVnfRequest")
	}
	tmpl, files, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	if sel, err := userdata.Select(req.AdditionalParams, nil); err != nil {
		return err
	} else if sel != nil {
		progress{op}.note(ctx, nodeStack, sel.Note())
		d.log(op).Info("LCM user data: the built-in parameter builder serves the class; the package's Python is not run", "class", sel.Class.Name, "file", sel.Path)
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	params := lay.parameters(paramInput{Flavour: op.Flavour, Levels: levelsOf(info), ExtVirtualLinks: req.ExtVirtualLinks,
		ExtManagedVirtualLinks: req.ExtManagedVirtualLinks, AdditionalParams: req.AdditionalParams})
	ref, err := d.ensureCreated(ctx, op, c, nodeStack, d.createBody(StackName(op.Instance.ID), tmpl, files, params))
	if err != nil {
		return err
	}
	_, err = d.refresh(ctx, op, c, ref, extVLsOfRequest(op, req.ExtVirtualLinks), req.ExtVirtualLinks, nil)
	return err
}

// Scale sets the aspect's groups to the capacity of the new scale level
// (prepare() already set it in scaleStatus) by a stack update. A scale-in
// first marks the chosen victims (ScaleInVictims) unhealthy, so Heat
// removes exactly them.
func (d *Driver) Scale(ctx context.Context, op *driverapi.Op) error {
	info, err := instantiated(op)
	if err != nil {
		return err
	}
	req := op.Request.Scale
	if req == nil {
		return errors.New("scale: the operation has no ScaleVnfRequest")
	}
	if _, ok := op.Scratch[ScratchPreScale]; !ok && op.Scratch != nil {
		b, _ := json.Marshal(vnfcIDs(info.VnfcResourceInfo))
		op.Scratch[ScratchPreScale] = b
	}
	victims := op.Victims
	if req.Type == model.ScaleIn && victims == nil {
		// The engine chose none (an operation accepted before it did): choose now.
		v, err := d.ScaleInVictims(ctx, op)
		if err != nil {
			return err
		}
		victims, op.Victims = v, v
	}
	_, _, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	if err := lay.canScale(op.Flavour, req.AspectID); err != nil {
		return err
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	ref, st, err := d.liveStack(ctx, op, c)
	if err != nil {
		return err
	}
	if len(victims) > 0 {
		if err := d.markMembers(ctx, op, c, ref, victims, scaleReason); err != nil {
			return err
		}
	}
	in := paramInput{Flavour: op.Flavour, Levels: levelsOf(info), AdditionalParams: info.AdditionalParams, NfvBase: nfvFromStack(st.Parameters)}
	if err := d.update(ctx, op, c, ref, st, lay.updateParameters(in)); err != nil {
		return err
	}
	if _, err := d.refresh(ctx, op, c, ref, info.ExtVirtualLinkInfo, nil, nil); err != nil {
		return err
	}
	var left []string
	for _, v := range info.VnfcResourceInfo {
		if slices.Contains(victims, v.ID) {
			left = append(left, v.ID)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("Heat kept the scale-in victims %s (it removed other members instead)", strings.Join(left, ", "))
	}
	return nil
}

// canScale checks that a stack update can change the aspect's capacity.
func (l *layout) canScale(fl *model.Flavour, aspect string) error {
	if _, ok := l.params[aspect+"_desired_capacity"]; ok {
		return nil
	}
	a := fl.ScalingAspects[aspect]
	inAspect := func(v string) bool {
		if a == nil {
			return false
		}
		_, ok := a.VduDeltas[v]
		return ok
	}
	for _, g := range l.groups {
		if g.Name != aspect && !slices.ContainsFunc(g.VDUs, inAspect) {
			continue
		}
		if _, ok := l.params[g.CapacityParam]; g.CapacityNfv || (ok && g.CapacityParam != "") {
			return nil
		}
		for _, v := range g.VDUs {
			if _, ok := l.params[v+"_desired_capacity"]; ok {
				return nil
			}
		}
	}
	return fmt.Errorf("cannot scale aspect %s: the Heat template has no parameter for its group's desired_capacity "+
		"(declare %s_desired_capacity and use it as the AutoScalingGroup's desired_capacity)", aspect, aspect)
}

// markMembers marks the group members holding the VNFCs unhealthy.
// VNFCs already gone are skipped.
func (d *Driver) markMembers(ctx context.Context, op *driverapi.Op, c *clients, ref stackRef, ids []string, reason string) error {
	t, err := d.listTree(ctx, c, ref)
	if err != nil {
		return err
	}
	pl := placeServers(t)
	done := map[string]bool{}
	for _, id := range ids {
		p := pl[id]
		if p == nil {
			continue // removed already (an earlier attempt)
		}
		if p.member == nil {
			return fmt.Errorf("VNFC %s is not an AutoScalingGroup member; it cannot be scaled in", id)
		}
		if done[p.member.stack.ID+"/"+p.member.Name] {
			continue
		}
		done[p.member.stack.ID+"/"+p.member.Name] = true
		if cancelled(op) {
			return driverapi.ErrCancelled
		}
		if err := d.markUnhealthy(ctx, c, p.member.stack, p.member.Name, reason); err != nil {
			return err
		}
		d.log(op).Info("group member marked unhealthy", "vnfc", id, "group", p.group, "member", p.member.Name, "reason", reason)
	}
	return nil
}

// RollbackScale restores the capacity of op.Previous["scaleStatus"]: after
// a scale-out the members it added are marked unhealthy and removed.
func (d *Driver) RollbackScale(ctx context.Context, op *driverapi.Op) error {
	info, err := instantiated(op)
	if err != nil {
		return err
	}
	var prev []model.ScaleInfo
	if err := json.Unmarshal(op.Previous["scaleStatus"], &prev); err != nil {
		return fmt.Errorf("rollback: no previous scale status: %w", err)
	}
	info.ScaleStatus = prev
	pre := vnfcIDs(info.VnfcResourceInfo)
	if raw, ok := op.Scratch[ScratchPreScale]; ok {
		_ = json.Unmarshal(raw, &pre)
	}
	_, _, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	ref, st, err := d.liveStack(ctx, op, c)
	if err != nil {
		return err
	}
	t, err := d.listTree(ctx, c, ref)
	if err != nil {
		return err
	}
	var added []string
	for id, p := range placeServers(t) {
		if !slices.Contains(pre, id) && p.member != nil {
			added = append(added, id)
		}
	}
	slices.Sort(added)
	if err := d.markMembers(ctx, op, c, ref, added, rollbackReason); err != nil {
		return err
	}
	in := paramInput{Flavour: op.Flavour, Levels: levelsOf(info), AdditionalParams: info.AdditionalParams, NfvBase: nfvFromStack(st.Parameters)}
	if err := d.update(ctx, op, c, ref, st, lay.updateParameters(in)); err != nil {
		return err
	}
	_, err = d.refresh(ctx, op, c, ref, info.ExtVirtualLinkInfo, nil, nil)
	return err
}

// Heal with vnfcInstanceId marks those servers unhealthy and updates the
// stack: Heat replaces each server inside its member stack, its ports (and
// so its addresses) survive. Without vnfcInstanceId the whole stack is
// deleted and created again (new VNFCs; scale levels kept).
func (d *Driver) Heal(ctx context.Context, op *driverapi.Op) error {
	info, err := instantiated(op)
	if err != nil {
		return err
	}
	req := op.Request.Heal
	if req == nil {
		return errors.New("heal: the operation has no HealVnfRequest")
	}
	if len(req.VnfcInstanceID) == 0 {
		return d.healEntire(ctx, op, info)
	}
	known := map[string]model.VnfcResourceInfo{}
	for _, v := range info.VnfcResourceInfo {
		known[v.ID] = v
	}
	var ids []string
	for _, id := range req.VnfcInstanceID {
		if _, ok := known[id]; !ok {
			return fmt.Errorf("vnfcInstanceId %s is not a VNFC of VNF instance %s (its VNFCs: %s)", id, op.Instance.ID, strings.Join(vnfcIDs(info.VnfcResourceInfo), ", "))
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	_, _, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	ref, st, err := d.liveStack(ctx, op, c)
	if err != nil {
		return err
	}
	t, err := d.listTree(ctx, c, ref)
	if err != nil {
		return err
	}
	pl := placeServers(t)
	reason := req.Cause
	if reason == "" {
		reason = "Healing"
	}
	marked := false
	healed := map[string]bool{}
	for _, id := range ids {
		healed[id] = true
		p := pl[id]
		if p == nil {
			return fmt.Errorf("VNFC %s has no server in Heat stack %s", id, ref.Name)
		}
		if p.server.PhysicalID != known[id].ComputeResource.ResourceID {
			continue // replaced by an earlier attempt
		}
		if cancelled(op) {
			return driverapi.ErrCancelled
		}
		if err := d.markUnhealthy(ctx, c, p.server.stack, p.server.Name, reason); err != nil {
			return err
		}
		d.log(op).Info("server marked unhealthy", "vnfc", id, "server", p.server.PhysicalID)
		marked = true
	}
	if marked {
		in := paramInput{Flavour: op.Flavour, Levels: levelsOf(info), AdditionalParams: info.AdditionalParams, NfvBase: nfvFromStack(st.Parameters)}
		if err := d.update(ctx, op, c, ref, st, lay.updateParameters(in)); err != nil {
			return err
		}
	}
	before := known
	if _, err := d.refresh(ctx, op, c, ref, info.ExtVirtualLinkInfo, nil, healed); err != nil {
		return err
	}
	for _, v := range info.VnfcResourceInfo {
		if healed[v.ID] && v.ComputeResource.ResourceID == before[v.ID].ComputeResource.ResourceID {
			return fmt.Errorf("Heat did not replace the server %s of VNFC %s", v.ComputeResource.ResourceID, v.ID)
		}
	}
	return nil
}

type healParams struct {
	Nfv map[string]any `json:"nfv,omitempty"`
	// Template and Files are the stack's, for a flavour whose template was
	// generated (hotgen): kept before the stack goes.
	Template string            `json:"template,omitempty"`
	Files    map[string]string `json:"files,omitempty"`
}

// healEntire deletes the stack and creates it again with the same
// parameters (nfv as the old stack had it; additionalParams of the
// instantiation; capacities of the current scale levels).
func (d *Driver) healEntire(ctx context.Context, op *driverapi.Op, info *model.InstantiatedVnfInfo) error {
	p := progress{op}
	tmpl, files, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	name := StackName(op.Instance.ID)
	var saved healParams
	if out, ok := p.completed(nodeHealParams); ok {
		_ = json.Unmarshal(out, &saved)
	}
	if _, deleted := p.completed(nodeHealDelete); !deleted {
		s, err := findStack(ctx, c, name)
		if err != nil {
			return err
		}
		if s != nil {
			if saved.Nfv == nil {
				saved.Nfv = nfvFromStack(s.Parameters)
				if op.Flavour.HOT == nil {
					ref := stackRef{Name: s.Name, ID: s.ID}
					if saved.Template, saved.Files, err = stackTemplate(ctx, c, ref); err != nil {
						return err
					}
				}
				if err := p.done(ctx, nodeHealParams, saved); err != nil {
					return err
				}
			}
			if cancelled(op) {
				return driverapi.ErrCancelled
			}
			if err := p.start(ctx, nodeHealDelete, "deleting Heat stack "+name); err != nil {
				return err
			}
			if err := d.revokeIssued(ctx, op, c, nodeHealDelete); err != nil {
				return err
			}
			if err := d.removeTagged(ctx, op, c, nodeHealDelete); err != nil {
				return err
			}
			if err := d.deleteAndWait(ctx, op, c, stackRef{Name: s.Name, ID: s.ID}, s.Status, nodeHealDelete); err != nil {
				return err
			}
		}
		if err := p.done(ctx, nodeHealDelete, nil); err != nil {
			return err
		}
	}
	if op.Flavour.HOT == nil {
		if saved.Template == "" {
			return fmt.Errorf("heal: the generated Heat template of stack %s was not kept before the stack was deleted; instantiate the VNF again", name)
		}
		tmpl, files = []byte(saved.Template), saved.Files
		if lay, err = analyze(tmpl, files, op.Flavour); err != nil {
			return err
		}
	}
	in := paramInput{Flavour: op.Flavour, Levels: levelsOf(info), AdditionalParams: info.AdditionalParams, NfvBase: saved.Nfv}
	if saved.Nfv == nil {
		in.ExtVirtualLinks = extVLDataOfInfo(info)
	}
	ref, err := d.ensureCreated(ctx, op, c, nodeStackNew, d.createBody(name, tmpl, files, lay.parameters(in)))
	if err != nil {
		return err
	}
	_, err = d.refresh(ctx, op, c, ref, info.ExtVirtualLinkInfo, nil, nil)
	return err
}

// ChangeExtConn points the external CPs named in the request at their new
// networks (nfv CP entries) by a stack update.
func (d *Driver) ChangeExtConn(ctx context.Context, op *driverapi.Op) error {
	info, err := instantiated(op)
	if err != nil {
		return err
	}
	req := op.Request.ChangeExtConn
	if req == nil {
		return errors.New("change_ext_conn: the operation has no ChangeExtVnfConnectivityRequest")
	}
	_, _, lay, err := d.template(ctx, op)
	if err != nil {
		return err
	}
	if _, ok := lay.params["nfv"]; !ok {
		return errors.New("the flavour's Heat template has no nfv parameter: its external connectivity cannot be changed")
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	ref, st, err := d.liveStack(ctx, op, c)
	if err != nil {
		return err
	}
	in := paramInput{Flavour: op.Flavour, Levels: levelsOf(info), AdditionalParams: info.AdditionalParams,
		NfvBase: nfvFromStack(st.Parameters), ExtVirtualLinks: req.ExtVirtualLinks}
	if in.NfvBase == nil {
		in.ExtVirtualLinks = append(extVLDataOfInfo(info), req.ExtVirtualLinks...)
	}
	if err := d.update(ctx, op, c, ref, st, map[string]any{"nfv": buildNfv(in)}); err != nil {
		return err
	}
	links := slices.Clone(info.ExtVirtualLinkInfo)
	for _, n := range extVLsOfRequest(op, req.ExtVirtualLinks) {
		if i := slices.IndexFunc(links, func(l model.ExtVirtualLinkInfo) bool { return l.ID == n.ID }); i >= 0 {
			links[i] = n
		} else {
			links = append(links, n)
		}
	}
	if _, err := d.refresh(ctx, op, c, ref, links, req.ExtVirtualLinks, nil); err != nil {
		return err
	}
	op.ChangedExtConnectivity = nil
	for _, l := range info.ExtVirtualLinkInfo {
		if slices.ContainsFunc(req.ExtVirtualLinks, func(r model.ExtVirtualLinkData) bool { return r.ID == l.ID }) {
			op.ChangedExtConnectivity = append(op.ChangedExtConnectivity, l)
		}
	}
	return nil
}

// Terminate waits gracefulTerminationTimeout (GRACEFUL), deletes the stack
// and waits until it is gone; a stack already gone is success.
func (d *Driver) Terminate(ctx context.Context, op *driverapi.Op) error {
	p := progress{op}
	if req := op.Request.Terminate; req != nil && strings.EqualFold(req.TerminationType, "GRACEFUL") &&
		req.GracefulTerminationTimeout != nil && *req.GracefulTerminationTimeout > 0 {
		if _, done := p.completed(nodeGracefulWait); !done {
			wait := time.Duration(*req.GracefulTerminationTimeout) * time.Second
			if err := p.start(ctx, nodeGracefulWait, fmt.Sprintf("waiting %s before deleting the resources (GRACEFUL)", wait)); err != nil {
				return err
			}
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			if err := p.done(ctx, nodeGracefulWait, nil); err != nil {
				return err
			}
		}
	}
	return d.removeStack(ctx, op)
}

// RollbackInstantiate deletes whatever stack the instantiation made.
func (d *Driver) RollbackInstantiate(ctx context.Context, op *driverapi.Op) error {
	return d.removeStack(ctx, op)
}

func (d *Driver) removeStack(ctx context.Context, op *driverapi.Op) error {
	info := op.Instance.InstantiatedVnfInfo
	if osVim(op) == nil {
		if info == nil || len(info.VnfcResourceInfo) == 0 {
			return nil // nothing was ever made in a VIM
		}
		return errors.New("the VNF instance has VNFCs but no VIM connection to remove them with")
	}
	c, err := d.connect(ctx, op)
	if err != nil {
		return err
	}
	name := StackName(op.Instance.ID)
	s, err := findStack(ctx, c, name)
	if err != nil {
		return err
	}
	if err := d.revokeIssued(ctx, op, c, ""); err != nil {
		return err
	}
	if err := d.removeTagged(ctx, op, c, ""); err != nil {
		return err
	}
	if s != nil {
		if cancelled(op) {
			return driverapi.ErrCancelled
		}
		if err := d.deleteAndWait(ctx, op, c, stackRef{Name: s.Name, ID: s.ID}, s.Status, ""); err != nil {
			return err
		}
		d.log(op).Info("stack deleted", "stack", name, "id", s.ID)
	}
	if info != nil {
		if op.ResourceChanges == nil {
			op.ResourceChanges = &model.ResourceChanges{}
		}
		old := *info
		info.VnfcResourceInfo, info.VirtualLinkResourceInfo, info.VirtualStorageResourceInfo, info.ExtCpInfo = nil, nil, nil, nil
		for i := range info.ExtVirtualLinkInfo {
			info.ExtVirtualLinkInfo[i].ExtLinkPorts = nil
		}
		recordChanges(op.ResourceChanges, &old, info, nil)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
