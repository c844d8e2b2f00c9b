package lcm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// run is one claim of one op occurrence by one worker.
type run struct {
	e      *Engine
	op     *store.OpOcc
	owner  string
	cancel context.CancelCauseFunc
	log    *slog.Logger

	cancelMode atomic.Value // string: "" or the requested cancel mode
	graceOnce  sync.Once

	// handed is what accepting the op read, when this process accepted it
	// and runs it itself (nil: the handoff, or the database).
	handed *handed
	// starting: the op is still STARTING, leased to this run since its
	// creation; the run's first write moves it to PROCESSING
	// (store.OpWrite.Start), unless a cancel came first.
	starting bool

	// carry is the end of the last step, not written yet: it is committed
	// with the next write of the operation (the next step's begin, or its
	// end), since nothing happens between the two.
	carry *carried
	// lastWork is the working copy (plaintext JSON) a resume would start
	// from: the one last written, or the one load builds afresh when none
	// was. A step that leaves it as it was writes none.
	lastWork []byte
	dop      *driverapi.Op                     // set once loaded
	journal  map[journalKey]store.JournalEntry // as loaded at claim time
	secrets  []string                          // plaintext secrets to scrub from errors
	// params are the management drivers' parameters of the operation, by
	// driver name, as accepted (mgmtdrivers.Driver.Bind reads them).
	params map[string]json.RawMessage
	// kept remembers the sealed values of the instance (as opened) and of
	// the working copy (as opened and sealed): an unchanged secret keeps
	// its stored value when they are sealed again.
	kept secrets.Kept
	// vims is the instantiate request's vimConnectionInfo as resolved when
	// it was accepted an instant before this run started (handed.vims);
	// without vimsResolved the run resolves it again.
	vims         []model.VimConnectionInfo
	vimsResolved bool
}

type journalKey struct{ phase, step, node string }

// carried is a step's end waiting for the operation's next write.
type carried struct {
	end  []store.JournalWrite
	work []byte // the working copy the step produced, JSON (nil: unchanged); sealed when written
	// later is the working copy of the last step, encoded only if the
	// next write keeps it (an end of the operation but FAILED_TEMP drops it).
	later *work
}

// work is the persisted working state of an operation between steps.
type work struct {
	Instance               *model.VnfInstance         `json:"instance"`
	ResourceChanges        *model.ResourceChanges     `json:"resourceChanges,omitempty"`
	ChangedInfo            map[string]any             `json:"changedInfo,omitempty"`
	ChangedExtConnectivity []model.ExtVirtualLinkInfo `json:"changedExtConnectivity,omitempty"`
	Previous               map[string]json.RawMessage `json:"previous,omitempty"`
	Scratch                map[string]json.RawMessage `json:"scratch,omitempty"`
	// Victims are a SCALE_IN's victims, as the infra driver chose them.
	Victims []string `json:"victims,omitempty"`
}

// step is one journaled unit of an operation.
type step struct {
	name string
	do   func(context.Context, *driverapi.Op) error
	undo func(context.Context, *driverapi.Op) error // nil: nothing to undo
}

func (r *run) checkCancel(ctx context.Context) {
	pending, mode, err := r.e.svc.st.Heartbeat(ctx, r.op.ID, r.owner, r.e.cfg.Lease)
	if errors.Is(err, store.ErrLeaseLost) {
		r.cancel(errLeaseLost)
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("heartbeat failed", "err", err)
		}
		return
	}
	if !pending {
		return
	}
	r.cancelMode.Store(mode)
	if mode == model.CancelForceful {
		r.cancel(errForceful)
		return
	}
	r.graceOnce.Do(func() {
		time.AfterFunc(r.e.cfg.GracefulCancelTimeout, func() { r.cancel(errForceful) })
	})
}

func (r *run) cancelRequested() bool {
	m, _ := r.cancelMode.Load().(string)
	return m != ""
}

// execute runs the operation forward or, in ROLLING_BACK, backward.
func (r *run) execute(ctx context.Context) {
	r.journal = map[journalKey]store.JournalEntry{}
	// Journal entries need a lease: an operation claimed for the first time has none.
	if r.op.Attempts > 1 {
		entries, err := r.e.svc.st.Journal(ctx, []string{r.op.ID})
		if err != nil {
			r.log.Error("cannot read journal; the lease will expire and the operation be resumed", "err", err)
			return
		}
		for _, e := range entries[r.op.ID] {
			r.journal[journalKey{e.Phase, e.Step, e.Node}] = e
		}
	}
	dop, w, err := r.load(ctx)
	if err != nil {
		r.finishFailed(ctx, "", err)
		return
	}
	r.dop = dop
	steps, err := r.plan(dop)
	if err != nil {
		r.finishFailed(ctx, "", err)
		return
	}
	rollingBack := r.op.OperationState == model.StateRollingBack
	if rollingBack {
		dop.RollingBack = true
		r.rollback(ctx, dop, w, steps)
		return
	}
	r.log.Debug("operation running", "steps", len(steps))
	for i, s := range steps {
		if e, ok := r.journal[journalKey{store.PhaseRun, s.name, ""}]; ok && e.State == model.StepCompleted {
			continue
		}
		if r.cancelRequested() || context.Cause(ctx) != nil {
			r.finishFailed(ctx, s.name, r.stopCause(ctx, nil))
			return
		}
		if err := r.runStep(ctx, store.PhaseRun, i, s.name, s.do, dop, w, i == len(steps)-1); err != nil {
			r.finishFailed(ctx, s.name, r.stopCause(ctx, err))
			return
		}
	}
	// The finished state on a copy: the working copy stays as the last
	// step left it, for a failure below to keep (it is encoded then).
	final := *dop.Instance
	if o, err := operationOf(dop.Operation); err == nil && o.finish != nil {
		o.finish(&final)
	}
	sealed, docs, err := r.sealInstance(&final)
	if err != nil {
		r.finishFailed(ctx, "", err)
		return
	}
	changed, err := r.e.svc.sealMap(dop.ChangedInfo, store.OpPlace(r.op.ID, "changed_info"))
	if err != nil {
		r.finishFailed(ctx, "", err)
		return
	}
	res := r.write(ctx, store.OpWrite{Finish: &store.Finish{State: model.StateCompleted,
		ResourceChanges: dop.ResourceChanges, ChangedInfo: changed,
		ChangedExtConnectivity: dop.ChangedExtConnectivity, Instance: sealed, Docs: docs}}, "completed")
	if res.Err != nil {
		r.log.Error("cannot complete operation", "err", res.Err)
		return
	}
	r.log.Info("operation completed", "duration", res.Op.StateEnteredTime.Sub(res.Op.StartTime).Round(time.Millisecond))
}

// stopCause names why a step stopped: a cancel, a lost lease, a shutdown, or its own error.
func (r *run) stopCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errLeaseLost), errors.Is(cause, errShutdown):
		return cause
	case r.cancelRequested() || errors.Is(cause, errForceful) || errors.Is(err, driverapi.ErrCancelled):
		mode, _ := r.cancelMode.Load().(string)
		if mode == "" {
			mode = model.CancelForceful
		}
		return &cancelled{mode: mode}
	}
	return err
}

type cancelled struct{ mode string }

func (c *cancelled) Error() string {
	return fmt.Sprintf("the operation was cancelled on request (cancelMode %s)", c.mode)
}

// write commits w, after the carried end of the last step, through the
// engine's group commit; what names the checkpoint.
// While the op is STARTING, the write starts it too (store.OpWrite.Start).
func (r *run) write(ctx context.Context, w store.OpWrite, what string) store.OpWriteResult {
	w.Start = r.starting
	res := r.writeCarried(ctx, w, what)
	if w.Start && res.Err == nil {
		r.starting = false
	}
	return res
}

func (r *run) writeCarried(ctx context.Context, w store.OpWrite, what string) store.OpWriteResult {
	w.OpOccID, w.Owner = r.op.ID, r.owner
	if c := r.carry; c != nil {
		r.carry = nil
		keep := w.Finish == nil || w.Finish.KeepWork
		if c.later != nil && keep {
			b, err := json.Marshal(c.later)
			if err != nil {
				// Not written: the step stays begun, and runs again as
				// after a crash.
				r.log.Error("cannot encode the working copy; the step will run again", "err", err)
				return r.e.commit.write(ctx, w, what)
			}
			if !bytes.Equal(b, r.lastWork) {
				c.work = b
			}
		}
		w.Journal = append(c.end, w.Journal...)
		// The working copy of the step's end, unless the write ends the
		// operation and drops it anyway.
		if c.work != nil && keep {
			sealed, err := r.e.svc.box.SealJSONKept(c.work, store.OpPlace(r.op.ID, "work"), &r.kept)
			if err != nil {
				return store.OpWriteResult{Err: err}
			}
			w.Work = sealed
		}
		e := c.end[len(c.end)-1].Entry
		what = e.Phase + ":end:" + e.Step + " " + what
		res := r.e.commit.write(ctx, w, what)
		if res.Err == nil && w.Work != nil {
			r.lastWork = c.work
		}
		return res
	}
	return r.e.commit.write(ctx, w, what)
}

// runStep journals the step's begin (with the last step's end), runs it,
// and leaves its end — with the working copy it produced — to be committed
// with the operation's next write. Nothing runs between a step's end and that
// write, so a crash in between finds the step begun and runs it again, as it
// would have after a crash during the step: steps are idempotent.
//
// The last step of a pass (last) leaves its working copy to be encoded by
// that write, and only when the write keeps it: the operation's end drops
// it, unless FAILED_TEMP.
func (r *run) runStep(ctx context.Context, phase string, i int, name string, f func(context.Context, *driverapi.Op) error, dop *driverapi.Op, w *work, last bool) error {
	if res := r.write(ctx, store.OpWrite{Journal: []store.JournalWrite{{Kind: store.JournalBeginKind,
		Entry: store.JournalEntry{OpOccID: r.op.ID, Phase: phase, StepIndex: i, Step: name}}}}, phase+":begin:"+name); res.Err != nil {
		return res.Err
	}
	start := time.Now()
	dop.Progress = &progress{r: r, phase: phase, step: name, index: i}
	dop.Log = r.log.With("step", name)
	err := f(ctx, dop)
	state := model.StepCompleted
	if err != nil {
		state = model.StepFailed
	}
	r.e.observeStep(r.op.Operation, name, state, time.Since(start))
	end := store.JournalEntry{OpOccID: r.op.ID, Phase: phase, StepIndex: i, Step: name, State: state}
	if err != nil {
		// Written with the FAILED_TEMP that follows (finishFailed).
		end.Error = secrets.Scrub(err.Error(), r.secrets)
		r.carry = &carried{end: []store.JournalWrite{{Kind: store.JournalEndKind, Entry: end}}}
		return err
	}
	// Nothing changes w before the next write: the execute loop goes
	// straight to the next step's begin or to the operation's end.
	w.capture(dop)
	r.carry = &carried{end: []store.JournalWrite{{Kind: store.JournalEndKind, Entry: end}}}
	if last {
		r.carry.later = w
		return nil
	}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	// A working copy that a resume would find anyway (the step changed
	// nothing) is not written again; with none written yet, load builds
	// that same copy again from the instance and the request, as it does
	// after a crash during the first step.
	if !bytes.Equal(b, r.lastWork) {
		r.carry.work = b
	}
	return nil
}

// rollback undoes, newest first, every step that started, then ends ROLLED_BACK.
func (r *run) rollback(ctx context.Context, dop *driverapi.Op, w *work, steps []step) {
	r.log.Info("rolling back")
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if _, started := r.journal[journalKey{store.PhaseRun, s.name, ""}]; !started || s.undo == nil {
			continue
		}
		if e, ok := r.journal[journalKey{store.PhaseRollback, s.name, ""}]; ok && e.State == model.StepCompleted {
			continue
		}
		if r.cancelRequested() || context.Cause(ctx) != nil {
			r.finishFailed(ctx, s.name, r.stopCause(ctx, nil))
			return
		}
		if err := r.runStep(ctx, store.PhaseRollback, len(steps)-i-1, s.name, s.undo, dop, w, i == 0); err != nil {
			r.finishFailed(ctx, s.name, r.stopCause(ctx, fmt.Errorf("rollback: %w", err)))
			return
		}
	}
	if res := r.write(ctx, store.OpWrite{Finish: &store.Finish{State: model.StateRolledBack,
		ResourceChanges: dop.ResourceChanges}}, "rolled_back"); res.Err != nil {
		r.log.Error("cannot finish rollback", "err", res.Err)
		return
	}
	r.log.Info("operation rolled back")
}

// finishFailed ends the claim in FAILED_TEMP (the user decides what next),
// except when the lease was lost or the process is stopping.
func (r *run) finishFailed(ctx context.Context, stepName string, err error) {
	if errors.Is(err, errLeaseLost) || errors.Is(err, store.ErrLeaseLost) {
		r.log.Warn("lease lost; another engine owns the operation now")
		return
	}
	if errors.Is(err, errShutdown) {
		r.log.Info("stopping for shutdown; the operation resumes when its lease expires", "step", stepName)
		return
	}
	if errors.Is(err, store.ErrCancelPending) {
		r.rollBackUnstarted(ctx)
		return
	}
	detail := secrets.Scrub(err.Error(), r.secrets)
	title := "LCM operation failed"
	var c *cancelled
	if errors.As(err, &c) {
		title = "LCM operation cancelled"
	}
	if stepName != "" {
		detail = fmt.Sprintf("step %s: %s", stepName, detail)
	}
	hint := "; fix the cause, then POST /vnflcm/v1/vnf_lcm_op_occs/" + r.op.ID + "/retry, /rollback or /fail"
	pd := &model.ProblemDetails{Status: 500, Title: title, Detail: detail + hint}
	rc := r.op.ResourceChanges
	if r.dop != nil {
		rc = r.dop.ResourceChanges
	}
	// A background context: the op's own context may be the thing that was cancelled.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	res := r.write(fctx, store.OpWrite{Finish: &store.Finish{State: model.StateFailedTemp, Error: pd,
		ResourceChanges: rc, KeepWork: true}}, "failed_temp")
	if errors.Is(res.Err, store.ErrCancelPending) {
		r.rollBackUnstarted(ctx)
		return
	}
	if res.Err != nil {
		r.log.Error("cannot record failure", "err", res.Err, "failure", detail)
		return
	}
	r.log.Warn("operation failed", "step", stepName, "detail", detail)
}

// rollBackUnstarted ends an op that a cancel reached while it was STARTING
// (store.ErrCancelPending): ROLLED_BACK, as CancelOp ends one no engine
// holds — nothing ran.
func (r *run) rollBackUnstarted(ctx context.Context) {
	r.starting, r.carry = false, nil
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if res := r.write(fctx, store.OpWrite{Finish: &store.Finish{State: model.StateRolledBack}}, "rolled_back"); res.Err != nil {
		r.log.Error("cannot roll back the cancelled operation", "err", res.Err)
		return
	}
	r.log.Info("operation cancelled before it started")
}

// load restores the working state: from the op's work column on resume, else
// from the instance as stored plus the request's initial effects.
func (r *run) load(ctx context.Context) (*driverapi.Op, *work, error) {
	svc := r.e.svc
	raw, err := svc.box.OpenJSON(r.op.OperationParams, store.OpPlace(r.op.ID, "operation_params"))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot decrypt operationParams: %w", err)
	}
	r.secrets = secrets.ValuesJSON(raw)
	o, err := operationOf(r.op.Operation)
	if err != nil {
		return nil, nil, err
	}
	h := r.handed
	if h == nil {
		h = svc.handed.take(r.op.ID)
	}
	if r.op.Attempts != 1 {
		h = nil // a retry, or a resume after a crash: what accept read is history
	}
	var req driverapi.Request
	if h != nil && h.req != nil {
		req = *h.req
	} else if req, err = o.decode(raw); err != nil {
		return nil, nil, fmt.Errorf("operationParams do not match %s: %w", r.op.Operation, err)
	}
	if h != nil {
		r.params = h.params
		r.vims, r.vimsResolved = h.vims, h.resolved
	} else if len(r.op.DriverParams) > 0 {
		plain, err := svc.box.OpenJSON(r.op.DriverParams, store.OpPlace(r.op.ID, "driver_params"))
		if err != nil {
			return nil, nil, fmt.Errorf("cannot decrypt the management drivers' parameters: %w", err)
		}
		if err := json.Unmarshal(plain, &r.params); err != nil {
			return nil, nil, fmt.Errorf("the management drivers' parameters are corrupt: %w", err)
		}
	}
	w := &work{}
	if len(r.op.Work) > 0 {
		plain, err := svc.box.OpenJSONKept(r.op.Work, store.OpPlace(r.op.ID, "work"), &r.kept)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot decrypt the operation's working state: %w", err)
		}
		if err := json.Unmarshal(plain, w); err != nil {
			return nil, nil, fmt.Errorf("working state is corrupt: %w", err)
		}
	}
	fresh := w.Instance == nil
	var pkg *model.Package
	var docs [][]byte // w.Instance's JSON (or that of its jsonb attributes)
	if h != nil && fresh {
		w.Instance, docs, pkg = h.in, h.docs, &model.Package{Vnfd: h.vnfd}
		if h.kept != nil {
			r.kept = *h.kept
		}
	} else if fresh {
		read, err := svc.st.OpenInstanceAndPackage(ctx, r.op.VnfInstanceID, svc.opener(&r.kept))
		if err != nil {
			return nil, nil, fmt.Errorf("VNF instance %s: %w", r.op.VnfInstanceID, err)
		}
		if read.Package == nil {
			return nil, nil, fmt.Errorf("VNF package of vnfdId %s: %w", read.VnfdID, store.ErrNotFound)
		}
		w.Instance, docs, pkg = &read.VnfInstance, read.Docs, read.Package
	} else {
		b, _ := json.Marshal(w.Instance)
		docs = [][]byte{b}
	}
	for _, d := range docs {
		r.secrets = append(r.secrets, secrets.ValuesJSON(d)...)
	}
	if pkg == nil {
		if pkg, err = svc.st.PackageByVnfdID(ctx, w.Instance.VnfdID); err != nil {
			return nil, nil, fmt.Errorf("VNF package of vnfdId %s: %w", w.Instance.VnfdID, err)
		}
	}
	dop := &driverapi.Op{ID: r.op.ID, Operation: r.op.Operation, Instance: w.Instance, Vnfd: pkg.Vnfd,
		Request: req, Previous: w.Previous, Scratch: w.Scratch, Victims: w.Victims,
		ResourceChanges: w.ResourceChanges, ChangedInfo: w.ChangedInfo, ChangedExtConnectivity: w.ChangedExtConnectivity,
		Log: r.log, CancelRequested: r.cancelRequested, Package: &pkgFiles{st: svc.st, pkgID: w.Instance.VnfPkgID},
		Vims: svc.vims}
	if dop.Previous == nil {
		dop.Previous = map[string]json.RawMessage{}
	}
	if dop.Scratch == nil {
		dop.Scratch = map[string]json.RawMessage{}
	}
	if dop.ResourceChanges == nil {
		dop.ResourceChanges = &model.ResourceChanges{}
	}
	r.bindVim(dop)
	if fresh {
		if o.prepare != nil {
			if err := o.prepare(ctx, r, dop); err != nil {
				return nil, nil, err
			}
		}
		w.capture(dop)
		// The VIMs prepare resolved from the registry (vimId, the default
		// VIM) carry credentials neither the request nor the stored instance
		// had: errors and journal messages must not show them either.
		b, err := json.Marshal(dop.Instance.VimConnectionInfo)
		if err != nil {
			return nil, nil, err
		}
		r.secrets = append(r.secrets, secrets.ValuesJSON(b)...)
	}
	if r.lastWork, err = json.Marshal(w); err != nil {
		return nil, nil, err
	}
	r.bindVim(dop)
	return dop, w, nil
}

// bindVim points the op at its flavour, its VIM and that VIM's infra driver.
func (r *run) bindVim(dop *driverapi.Op) {
	dop.Flavour, dop.Vim, dop.Infra = nil, nil, nil
	if info := dop.Instance.InstantiatedVnfInfo; info != nil {
		dop.Flavour = dop.Vnfd.Flavours[info.FlavourID]
	}
	if len(dop.Instance.VimConnectionInfo) > 0 {
		dop.Vim = &dop.Instance.VimConnectionInfo[0]
		if d, ok := r.e.svc.infra(dop.Vim.VimType); ok {
			dop.Infra = d
		}
	}
}

func (w *work) capture(dop *driverapi.Op) {
	w.Instance, w.ResourceChanges, w.ChangedInfo = dop.Instance, dop.ResourceChanges, dop.ChangedInfo
	w.ChangedExtConnectivity, w.Previous, w.Scratch, w.Victims = dop.ChangedExtConnectivity, dop.Previous, dop.Scratch, dop.Victims
}

func (r *run) sealInstance(in *model.VnfInstance) (*model.VnfInstance, store.InstanceDocs, error) {
	return r.e.svc.sealInstance(in, &r.kept)
}

// progress journals per-node checkpoints of one step.
type progress struct {
	r     *run
	phase string
	step  string
	index int
}

func (p *progress) entry(node, state, msg string) store.JournalEntry {
	return store.JournalEntry{OpOccID: p.r.op.ID, Phase: p.phase, StepIndex: p.index, Step: p.step, Node: node, State: state, Message: msg}
}

// journal writes one change of the step's journal: synchronously (a
// checkpoint the driver relies on) or not (what a crash may lose: the node
// is then simply not done).
func (p *progress) journal(ctx context.Context, kind string, e store.JournalEntry, what string, sync bool) error {
	w := store.OpWrite{OpOccID: p.r.op.ID, Owner: p.r.owner, Journal: []store.JournalWrite{{Kind: kind, Entry: e}}}
	if !sync {
		p.r.e.commit.writeAsync(w, what)
		return nil
	}
	return p.r.e.commit.write(ctx, w, what).Err
}

// Note updates the step's message; it is not waited for.
func (p *progress) Note(ctx context.Context, message string) error {
	return p.journal(ctx, store.JournalNoteKind, p.entry("", "", secrets.Scrub(message, p.r.secrets)), "", false)
}

// NodeStart journals a node's start without waiting for the commit: what a
// node's start promises — "not done" — holds whether or not it is durable,
// and it is committed with or before the node's next write (NodeDone).
func (p *progress) NodeStart(ctx context.Context, node, message string) error {
	if strings.TrimSpace(node) == "" {
		return errors.New("progress: empty node name")
	}
	return p.journal(ctx, store.JournalBeginKind, p.entry(node, "", secrets.Scrub(message, p.r.secrets)),
		p.phase+":node-begin:"+p.step+"/"+node, false)
}

// NodeNote updates a node's message; it is not waited for.
func (p *progress) NodeNote(ctx context.Context, node, message string) error {
	return p.journal(ctx, store.JournalNoteKind, p.entry(node, "", secrets.Scrub(message, p.r.secrets)), "", false)
}

// NodeDone is a checkpoint: durable when it returns, so a resumed step
// skips the node. Nodes that finish together share one commit.
func (p *progress) NodeDone(ctx context.Context, node string, output any) error {
	e := p.entry(node, model.StepCompleted, "")
	if output != nil {
		b, err := json.Marshal(output)
		if err != nil {
			return err
		}
		if e.Output, err = p.r.e.svc.box.SealJSON(b, store.JournalPlace(e.OpOccID, e.Phase, e.Step, e.Node)); err != nil {
			return err
		}
	}
	return p.journal(ctx, store.JournalEndKind, e, p.phase+":node-end:"+p.step+"/"+node, true)
}

// NodeFailed records a node's failure; it is not waited for (the step's
// failure that follows is ordered after it).
func (p *progress) NodeFailed(ctx context.Context, node string, err error) error {
	e := p.entry(node, model.StepFailed, "")
	e.Error = secrets.Scrub(err.Error(), p.r.secrets)
	return p.journal(ctx, store.JournalEndKind, e, "", false)
}

func (p *progress) NodeCompleted(node string) (json.RawMessage, bool) {
	e, ok := p.r.journal[journalKey{p.phase, p.step, node}]
	if !ok || e.State != model.StepCompleted {
		return nil, false
	}
	if len(e.Output) == 0 {
		return nil, true
	}
	plain, err := p.r.e.svc.box.OpenJSON(e.Output, store.JournalPlace(e.OpOccID, e.Phase, e.Step, e.Node))
	if err != nil {
		return nil, false // redo the node rather than trust an unreadable output
	}
	return plain, true
}

func (e *Engine) checkpoint(opID, what string) {
	if e.cfg.Observer != nil {
		e.cfg.Observer.Checkpoint(opID, what)
	}
}

func (e *Engine) observeStep(operation, step, state string, d time.Duration) {
	if e.cfg.Observer != nil {
		e.cfg.Observer.StepFinished(operation, step, state, d)
	}
}
