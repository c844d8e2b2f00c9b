package ossim

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

type stack struct {
	id, name, project string
	owner             string // user name
	parent            *stack
	parentRes         string // name of the resource in parent owning this stack
	tmpl              *hotTemplate
	files             map[string]string
	env               map[string]any
	userParams        map[string]any // as supplied (create/update), before defaults
	params            map[string]any // converted values of declared parameters
	action, status    string
	reason            string
	created, updated  time.Time
	deletedAt         time.Time
	deleted           bool
	disableRollback   bool
	timeoutMins       int
	tags              []string
	res               map[string]*resource
	gen               int
	busy              bool
	cancel            context.CancelFunc
	opDone            chan struct{}
	events            []*event
}

func (st *stack) top() *stack {
	for st.parent != nil {
		st = st.parent
	}
	return st
}

func (st *stack) paramValue(name string) (any, bool) {
	switch name {
	case "OS::stack_name":
		return st.name, true
	case "OS::stack_id":
		return st.id, true
	case "OS::project_id":
		return st.project, true
	}
	v, ok := st.params[name]
	return v, ok
}

type resource struct {
	st             *stack
	id             string
	name, typ      string
	handler        resType
	props          map[string]any
	action, status string
	reason         string
	physID         string
	created        time.Time
	updated        time.Time
	nested         *stack
	fault          string // injected failure message for the running action
	data           map[string]any
}

type event struct {
	id, resName, physID, status, reason string
	at                                  time.Time
}

// resFailure is a resource failure as Heat reports it:
// "<Type>: resources.<a>.resources.<b>: <message>".
type resFailure struct {
	typ  string
	path []string
	msg  string
}

func (f *resFailure) Error() string {
	return fmt.Sprintf("%s: resources.%s: %s", f.typ, strings.Join(f.path, ".resources."), f.msg)
}

// wrapFailure turns a handler error of resource name into a resFailure.
func wrapFailure(name string, err error) *resFailure {
	var rf *resFailure
	if errors.As(err, &rf) {
		return &resFailure{typ: rf.typ, path: append([]string{name}, rf.path...), msg: rf.msg}
	}
	var ae *apiError
	if errors.As(err, &ae) {
		typ := ae.typ
		switch ae.code {
		case 400:
			if typ == "" || typ == "InvalidInput" {
				typ = "BadRequest"
			}
		case 403:
			typ = "Forbidden"
		case 404:
			if typ == "" {
				typ = "NotFound"
			}
		case 409:
			if typ == "" {
				typ = "Conflict"
			}
		}
		msg := ae.msg
		if ae.code >= 400 && ae.typ != "StackValidationFailed" && ae.typ != "ResourceTypeNotFound" {
			msg = fmt.Sprintf("%s (HTTP %d)", ae.msg, ae.code)
		}
		return &resFailure{typ: typ, path: []string{name}, msg: msg}
	}
	var ie *inErrorState
	if errors.As(err, &ie) {
		return &resFailure{typ: "ResourceInError", path: []string{name}, msg: fmt.Sprintf("Went to status ERROR due to \"Message: %s, Code: 500\"", ie.msg)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &resFailure{typ: "Timeout", path: []string{name}, msg: "Timed out"}
	}
	if errors.Is(err, context.Canceled) {
		return &resFailure{typ: "Cancelled", path: []string{name}, msg: "Operation cancelled"}
	}
	return &resFailure{typ: "ResourceFailure", path: []string{name}, msg: err.Error()}
}

// inErrorState is a physical resource that went to ERROR (a server).
type inErrorState struct{ msg string }

func (e *inErrorState) Error() string { return e.msg }

// ---- events ----

func (s *Sim) setResState(r *resource, action, status, reason string) {
	r.action, r.status, r.reason = action, status, reason
	r.updated = s.now()
	st := r.st
	st.events = append(st.events, &event{id: uuid.NewString(), resName: r.name, physID: r.physID,
		status: action + "_" + status, reason: reason, at: r.updated})
	if len(st.events) > 2000 {
		st.events = st.events[len(st.events)-2000:]
	}
}

func (s *Sim) setStackState(st *stack, action, status, reason string) {
	st.action, st.status, st.reason = action, status, reason
	now := s.now()
	if action != "CREATE" && action != "INIT" {
		st.updated = now
	}
	st.events = append(st.events, &event{id: uuid.NewString(), resName: st.name, physID: st.id,
		status: action + "_" + status, reason: reason, at: now})
}

// ---- stack construction ----

// computeParams validates supplied parameters against a template and fills
// defaults and the environment's values.
func computeParams(t *hotTemplate, user map[string]any, env map[string]any, nested bool) (map[string]any, error) {
	envParams, _ := env["parameters"].(map[string]any)
	envDefaults, _ := env["parameter_defaults"].(map[string]any)
	for k := range user {
		if _, ok := t.params[k]; !ok {
			if nested {
				return nil, validationErr("Property error: Unknown Property %s", k)
			}
			return nil, errf(400, "UnknownUserParameter", "The Parameter (%s) was not defined in template.", k)
		}
	}
	out := map[string]any{}
	for name, p := range t.params {
		var v any
		var ok bool
		if v, ok = user[name]; !ok {
			if v, ok = envParams[name]; !ok {
				if v, ok = envDefaults[name]; !ok {
					v, ok = p.def, p.hasDef
				}
			}
		}
		if !ok {
			return nil, errf(400, "UserParameterMissing", "The Parameter (%s) was not provided.", name)
		}
		cv, err := convertParam(p, v)
		if err != nil {
			return nil, err
		}
		out[name] = cv
	}
	return out, nil
}

// newStack builds a stack record with INIT_COMPLETE resources (s.mu held).
func (s *Sim) newStack(name, project, owner string, parent *stack, parentRes string, t *hotTemplate,
	files map[string]string, env map[string]any, userParams, params map[string]any) *stack {
	now := s.now()
	st := &stack{id: uuid.NewString(), name: name, project: project, owner: owner, parent: parent, parentRes: parentRes,
		tmpl: t, files: files, env: env, userParams: userParams, params: params, action: "INIT", status: "COMPLETE",
		created: now, res: map[string]*resource{}}
	if st.files == nil {
		st.files = map[string]string{}
	}
	for _, rn := range t.resourceNames() {
		st.res[rn] = s.newResource(st, rn)
	}
	s.stacks[st.id] = st
	return st
}

func (s *Sim) newResource(st *stack, name string) *resource {
	now := s.now()
	def := st.tmpl.resources[name]
	return &resource{st: st, id: uuid.NewString(), name: name, typ: def["type"].(string), action: "INIT", status: "COMPLETE",
		created: now, updated: now, data: map[string]any{}}
}

// ---- operations ----

// startOp runs op on a top-level stack in the background. It returns at
// once; the stack shows <action>_IN_PROGRESS until op ends.
func (s *Sim) startOp(st *stack, action string, op func(ctx context.Context) error) {
	prevDone := st.opDone
	prevCancel := st.cancel
	st.gen++
	gen := st.gen
	ctx, cancel := context.WithCancel(s.ctx)
	if st.timeoutMins > 0 && (action == "CREATE" || action == "UPDATE") {
		ctx, cancel = context.WithTimeout(s.ctx, time.Duration(st.timeoutMins)*time.Minute)
	}
	done := make(chan struct{})
	st.cancel, st.opDone, st.busy = cancel, done, true
	s.setStackState(st, action, "IN_PROGRESS", fmt.Sprintf("Stack %s started", action))
	delay := s.stackDelay(st.name, action)
	s.goAsync(func(_ context.Context) {
		defer close(done)
		defer cancel()
		if prevDone != nil {
			if prevCancel != nil {
				prevCancel()
			}
			<-prevDone
		}
		err := sleep(ctx, delay)
		if err == nil {
			err = op(ctx)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if st.gen != gen {
			return // superseded (e.g. deleted while creating)
		}
		st.busy = false
		if err == nil {
			s.setStackState(st, action, "COMPLETE", fmt.Sprintf("Stack %s completed successfully", action))
			if action == "DELETE" {
				st.deleted, st.deletedAt = true, s.now()
			}
			s.logf("heat: stack %s %s_COMPLETE", st.name, action)
			return
		}
		reason := failureReason(action, err)
		s.setStackState(st, action, "FAILED", reason)
		s.logf("heat: stack %s %s_FAILED: %s", st.name, action, reason)
		if action == "CREATE" && !st.disableRollback && s.ctx.Err() == nil {
			st.gen++
			g2 := st.gen
			st.busy = true
			s.setStackState(st, "ROLLBACK", "IN_PROGRESS", reason)
			done2 := make(chan struct{})
			st.opDone = done2
			s.goAsync(func(ctx context.Context) {
				defer close(done2)
				rerr := s.deleteAll(ctx, st)
				s.mu.Lock()
				defer s.mu.Unlock()
				if st.gen != g2 {
					return
				}
				st.busy = false
				if rerr != nil {
					s.setStackState(st, "ROLLBACK", "FAILED", failureReason("DELETE", rerr))
					return
				}
				s.setStackState(st, "ROLLBACK", "COMPLETE", "Stack ROLLBACK completed successfully")
			})
		}
	})
}

func failureReason(action string, err error) string {
	var rf *resFailure
	if errors.As(err, &rf) {
		return fmt.Sprintf("Resource %s failed: %s", action, rf.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timed out"
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Sprintf("Stack %s cancelled", action)
	}
	return fmt.Sprintf("Resource %s failed: %v", action, err)
}

func (s *Sim) stackDelay(name, action string) time.Duration {
	var d time.Duration
	for _, sd := range s.faults.SlowStacks {
		if len(sd.Actions) > 0 && !contains(sd.Actions, action) {
			continue
		}
		if ok, _ := path.Match(orStar(sd.Stack), name); ok {
			d += sd.Delay.D()
		}
	}
	return d
}

func orStar(p string) string {
	if p == "" {
		return "*"
	}
	return p
}

// runGraph runs work for every node after its dependencies have finished.
// After a failure no new work starts; nodes whose dependencies failed are
// skipped. It returns the first failure.
func runGraph(ctx context.Context, nodes []string, deps map[string][]string, work func(ctx context.Context, n string) error) error {
	done := make(map[string]chan struct{}, len(nodes))
	for _, n := range nodes {
		done[n] = make(chan struct{})
	}
	var mu sync.Mutex
	failed := map[string]bool{}
	stop := false
	var first error
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[n])
			for _, d := range deps[n] {
				if ch, ok := done[d]; ok {
					select {
					case <-ch:
					case <-ctx.Done():
					}
				}
			}
			mu.Lock()
			skip := stop || ctx.Err() != nil
			for _, d := range deps[n] {
				skip = skip || failed[d]
			}
			if skip {
				failed[n] = true
			}
			mu.Unlock()
			if skip {
				return
			}
			if err := work(ctx, n); err != nil {
				mu.Lock()
				failed[n], stop = true, true
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		return ctx.Err()
	}
	return first
}

func reverseDeps(nodes []string, deps map[string][]string) map[string][]string {
	in := map[string]bool{}
	for _, n := range nodes {
		in[n] = true
	}
	out := map[string][]string{}
	for _, n := range nodes {
		for _, d := range deps[n] {
			if in[d] {
				out[d] = append(out[d], n)
			}
		}
	}
	return out
}

// createAll creates every resource of st in dependency order.
func (s *Sim) createAll(ctx context.Context, st *stack) error {
	s.mu.Lock()
	names := st.tmpl.resourceNames()
	deps := map[string][]string{}
	for _, n := range names {
		deps[n] = st.tmpl.deps(n)
	}
	s.mu.Unlock()
	return runGraph(ctx, names, deps, func(ctx context.Context, n string) error {
		s.mu.Lock()
		r := st.res[n]
		s.mu.Unlock()
		return s.createResource(ctx, r)
	})
}

// actionRetryLimit is Heat's default action_retry_limit.
const actionRetryLimit = 5

// createResource resolves the properties and runs the type's create.
func (s *Sim) createResource(ctx context.Context, r *resource) error {
	s.mu.Lock()
	st := r.st
	def := st.tmpl.resources[r.name]
	r.created = s.now()
	s.setResState(r, "CREATE", "IN_PROGRESS", "state changed")
	h, err := s.resolveType(st, r.typ)
	var props map[string]any
	if err == nil {
		props, err = s.resolveProps(st, def)
	}
	if err == nil {
		r.handler, r.props = h, props
		r.fault = s.takeFault(r, "CREATE")
		if v := validateProps(r.typ, h, props); v != nil {
			err = v
		}
	}
	s.mu.Unlock()
	if err == nil {
		if _, faultAware := h.(faultAwareType); !faultAware && r.fault != "" {
			_ = sleep(ctx, s.opts.ResourceLatency)
			err = errf(500, "InternalServerError", "%s", r.fault)
		} else {
			err = h.create(ctx, s, r)
		}
		// Heat retries a create that ended in ERROR (a server that went to
		// ERROR, a conflict) action_retry_limit = 5 times, deleting the
		// failed physical resource first, with a growing pause.
		var ie *inErrorState
		for attempt := 1; attempt <= actionRetryLimit && errors.As(err, &ie) && ctx.Err() == nil; attempt++ {
			_ = h.delete(ctx, s, r)
			_ = sleep(ctx, s.opts.ResourceLatency<<attempt)
			s.mu.Lock()
			r.fault = s.takeFault(r, "CREATE")
			s.mu.Unlock()
			err = h.create(ctx, s, r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		f := wrapFailure(r.name, err)
		s.setResState(r, "CREATE", "FAILED", innerReason(f))
		return f
	}
	s.setResState(r, "CREATE", "COMPLETE", "state changed")
	return nil
}

// innerReason is a resource's own status reason: the failure without its
// own name in front.
func innerReason(f *resFailure) string {
	if len(f.path) <= 1 {
		return fmt.Sprintf("%s: %s", f.typ, f.msg)
	}
	return (&resFailure{typ: f.typ, path: f.path[1:], msg: f.msg}).Error()
}

func (s *Sim) resolveProps(st *stack, def map[string]any) (map[string]any, error) {
	p, _ := def["properties"].(map[string]any)
	if p == nil {
		return map[string]any{}, nil
	}
	v, err := scope{s, st}.resolve(p)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// deleteAll deletes every resource of st in reverse dependency order.
func (s *Sim) deleteAll(ctx context.Context, st *stack) error {
	s.mu.Lock()
	var names []string
	deps := map[string][]string{}
	for n := range st.res {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := st.tmpl.resources[n]; ok {
			deps[n] = st.tmpl.deps(n)
		}
	}
	s.mu.Unlock()
	rdeps := reverseDeps(names, deps)
	return runGraph(ctx, names, rdeps, func(ctx context.Context, n string) error {
		s.mu.Lock()
		r := st.res[n]
		s.mu.Unlock()
		if r == nil {
			return nil
		}
		if err := s.deleteResource(ctx, r); err != nil {
			return err
		}
		s.mu.Lock()
		if st.res[n] == r {
			delete(st.res, n)
		}
		s.mu.Unlock()
		return nil
	})
}

// deleteResource deletes a resource's physical resource (the record stays).
func (s *Sim) deleteResource(ctx context.Context, r *resource) error {
	s.mu.Lock()
	if r.physID == "" && r.nested == nil && r.handler == nil {
		s.mu.Unlock()
		return nil
	}
	s.setResState(r, "DELETE", "IN_PROGRESS", "state changed")
	r.fault = s.takeFault(r, "DELETE")
	h := r.handler
	fault := r.fault
	s.mu.Unlock()
	var err error
	switch {
	case fault != "":
		_ = sleep(ctx, s.opts.ResourceLatency)
		err = errf(500, "InternalServerError", "%s", fault)
	case h != nil:
		err = h.delete(ctx, s, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		f := wrapFailure(r.name, err)
		s.setResState(r, "DELETE", "FAILED", innerReason(f))
		return f
	}
	s.setResState(r, "DELETE", "COMPLETE", "state changed")
	r.physID = ""
	return nil
}

// updateAll updates st to a new template and parameters: new resources are
// created, changed ones updated or replaced, unhealthy and failed ones
// replaced, nested stacks updated recursively, removed ones deleted last.
func (s *Sim) updateAll(ctx context.Context, st *stack, t *hotTemplate) error {
	s.mu.Lock()
	oldTmpl := st.tmpl
	st.tmpl = t
	names := t.resourceNames()
	deps := map[string][]string{}
	for _, n := range names {
		deps[n] = t.deps(n)
		if st.res[n] == nil {
			st.res[n] = s.newResource(st, n)
		}
	}
	s.mu.Unlock()
	if err := runGraph(ctx, names, deps, func(ctx context.Context, n string) error {
		return s.updateResource(ctx, st, n)
	}); err != nil {
		return err
	}
	// Resources no longer in the template go, dependents first.
	s.mu.Lock()
	var gone []string
	odeps := map[string][]string{}
	for n := range st.res {
		if _, ok := t.resources[n]; !ok {
			gone = append(gone, n)
		}
	}
	sort.Strings(gone)
	for _, n := range gone {
		if _, ok := oldTmpl.resources[n]; ok {
			odeps[n] = oldTmpl.deps(n)
		}
	}
	s.mu.Unlock()
	return runGraph(ctx, gone, reverseDeps(gone, odeps), func(ctx context.Context, n string) error {
		s.mu.Lock()
		r := st.res[n]
		s.mu.Unlock()
		if err := s.deleteResource(ctx, r); err != nil {
			return err
		}
		s.mu.Lock()
		if st.res[n] == r {
			delete(st.res, n)
		}
		s.mu.Unlock()
		return nil
	})
}

func (s *Sim) updateResource(ctx context.Context, st *stack, name string) error {
	s.mu.Lock()
	r := st.res[name]
	def := st.tmpl.resources[name]
	newType := def["type"].(string)
	neverCreated := r.handler == nil || (r.physID == "" && r.nested == nil)
	unhealthy := r.action == "CHECK" && r.status == "FAILED"
	failed := r.status == "FAILED"
	_, nestedType := r.handler.(nestedStackType)
	sameType := r.typ == newType
	s.mu.Unlock()

	replace := func() error {
		if !neverCreated {
			if err := s.deleteResource(ctx, r); err != nil {
				return err
			}
		}
		s.mu.Lock()
		nr := s.newResource(st, name)
		st.res[name] = nr
		s.mu.Unlock()
		return s.createResource(ctx, nr)
	}
	switch {
	case neverCreated && r.action == "INIT":
		return s.createResource(ctx, r)
	case neverCreated, !sameType, unhealthy, failed && !nestedType:
		return replace()
	}

	s.mu.Lock()
	props, err := s.resolveProps(st, def)
	if err == nil {
		err = validateProps(r.typ, r.handler, props)
	}
	if err != nil {
		f := wrapFailure(name, err)
		s.setResState(r, "UPDATE", "FAILED", innerReason(f))
		s.mu.Unlock()
		return f
	}
	old := r.props
	if !nestedType && reflect.DeepEqual(old, props) {
		s.mu.Unlock()
		return nil // unchanged: Heat leaves the resource alone
	}
	s.setResState(r, "UPDATE", "IN_PROGRESS", "state changed")
	r.props = props
	r.fault = s.takeFault(r, "UPDATE")
	fault := r.fault
	s.mu.Unlock()

	var needReplace bool
	if fault != "" {
		_ = sleep(ctx, s.opts.ResourceLatency)
		err = errf(500, "InternalServerError", "%s", fault)
	} else {
		needReplace, err = r.handler.update(ctx, s, r, old)
	}
	if err == nil && needReplace {
		return replace()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		f := wrapFailure(name, err)
		s.setResState(r, "UPDATE", "FAILED", innerReason(f))
		return f
	}
	s.setResState(r, "UPDATE", "COMPLETE", "state changed")
	return nil
}

// ---- nested stacks ----

func (s *Sim) nestedName(parent *stack, resName string) string {
	n := fmt.Sprintf("%s-%s-%s", parent.name, resName, shortID())
	if len(n) > 255 {
		n = n[len(n)-255:]
	}
	return n
}

// createNested makes and creates a nested stack for r (called without
// s.mu). r.physID and r.nested are set before the nested resources are
// created, like Heat.
func (s *Sim) createNested(ctx context.Context, r *resource, t *hotTemplate, userParams map[string]any) error {
	s.mu.Lock()
	parent := r.st
	params, err := computeParams(t, userParams, parent.env, true)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	ns := s.newStack(s.nestedName(parent, r.name), parent.project, parent.owner, parent, r.name, t, parent.files, parent.env, userParams, params)
	ns.disableRollback = true
	r.nested, r.physID = ns, ns.id
	s.setStackState(ns, "CREATE", "IN_PROGRESS", "Stack CREATE started")
	s.mu.Unlock()
	err = s.createAll(ctx, ns)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.setStackState(ns, "CREATE", "FAILED", failureReason("CREATE", err))
		return err
	}
	s.setStackState(ns, "CREATE", "COMPLETE", "Stack CREATE completed successfully")
	return nil
}

func (s *Sim) updateNested(ctx context.Context, r *resource, t *hotTemplate, userParams map[string]any) error {
	s.mu.Lock()
	ns := r.nested
	if ns == nil {
		s.mu.Unlock()
		return s.createNested(ctx, r, t, userParams)
	}
	params, err := computeParams(t, userParams, ns.env, true)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	ns.userParams, ns.params, ns.files, ns.env = userParams, params, r.st.files, r.st.env
	s.setStackState(ns, "UPDATE", "IN_PROGRESS", "Stack UPDATE started")
	s.mu.Unlock()
	err = s.updateAll(ctx, ns, t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.setStackState(ns, "UPDATE", "FAILED", failureReason("UPDATE", err))
		return err
	}
	s.setStackState(ns, "UPDATE", "COMPLETE", "Stack UPDATE completed successfully")
	return nil
}

func (s *Sim) deleteNested(ctx context.Context, r *resource) error {
	s.mu.Lock()
	ns := r.nested
	if ns == nil {
		s.mu.Unlock()
		return nil
	}
	s.setStackState(ns, "DELETE", "IN_PROGRESS", "Stack DELETE started")
	s.mu.Unlock()
	err := s.deleteAll(ctx, ns)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.setStackState(ns, "DELETE", "FAILED", failureReason("DELETE", err))
		return err
	}
	s.setStackState(ns, "DELETE", "COMPLETE", "Stack DELETE completed successfully")
	ns.deleted, ns.deletedAt = true, s.now()
	r.nested = nil
	return nil
}

// stackOutputs evaluates the outputs of a stack (s.mu held).
func (s *Sim) stackOutputs(st *stack) []map[string]any {
	out := []map[string]any{}
	if st.deleted {
		return out
	}
	names := make([]string, 0, len(st.tmpl.outputs))
	for n := range st.tmpl.outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := st.tmpl.outputs[n]
		desc, _ := o["description"].(string)
		if desc == "" {
			desc = "No description given"
		}
		m := map[string]any{"output_key": n, "description": desc}
		v, err := scope{s, st}.resolve(o["value"])
		if err != nil {
			m["output_error"] = err.Error()
			m["output_value"] = nil
		} else {
			m["output_value"] = v
		}
		out = append(out, m)
	}
	return out
}

func (s *Sim) outputValue(st *stack, name string) any {
	o, ok := st.tmpl.outputs[name]
	if !ok {
		return nil
	}
	v, err := scope{s, st}.resolve(o["value"])
	if err != nil {
		return nil
	}
	return v
}

// resourceAttr returns a resource attribute followed along path (s.mu held).
func (s *Sim) resourceAttr(r *resource, name string, path []any) (any, error) {
	if r.handler == nil {
		return nil, nil // not created yet: Heat resolves to None
	}
	if ph, ok := r.handler.(pathAttrType); ok {
		return ph.attrPath(s, r, name, path)
	}
	v, err := r.handler.attr(s, r, name)
	if err != nil {
		return nil, err
	}
	return traverse(v, path), nil
}
