package openstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"
)

// stackRef names a Heat stack.
type stackRef struct {
	Name string `json:"stackName"`
	ID   string `json:"stackId"`
}

// rawCreate is a stack create body built here: the stock CreateOpts reads
// nested templates from disk, ours come from the CSAR in memory.
type rawCreate map[string]any

func (r rawCreate) ToStackCreateMap() (map[string]any, error) { return r, nil }

// rawUpdate is a stack update body (PATCH keeps what it does not name).
type rawUpdate map[string]any

func (r rawUpdate) ToStackUpdateMap() (map[string]any, error)      { return r, nil }
func (r rawUpdate) ToStackUpdatePatchMap() (map[string]any, error) { return r, nil }

func isNotFound(err error) bool { return gophercloud.ResponseCodeIs(err, http.StatusNotFound) }

// findStack returns the live stack of that name, or nil.
func findStack(ctx context.Context, c *clients, name string) (*stacks.RetrievedStack, error) {
	s, err := stacks.Find(ctx, c.heat, name).Extract()
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Heat: find stack %s: %w", name, err)
	}
	if s.Status == "DELETE_COMPLETE" {
		return nil, nil
	}
	return s, nil
}

func (d *Driver) timeoutMins() int {
	return max(1, int((d.opts.StackTimeout+time.Minute-1)/time.Minute))
}

func createStack(ctx context.Context, c *clients, body rawCreate) (stackRef, error) {
	name, _ := body["stack_name"].(string)
	cs, err := stacks.Create(ctx, c.heat, body).Extract()
	if err != nil {
		return stackRef{}, fmt.Errorf("Heat: create stack %s: %w", name, err)
	}
	return stackRef{Name: name, ID: cs.ID}, nil
}

// createStackWhenNameFree creates a stack; a 409 StackExists while the
// stack of that name is DELETE_COMPLETE (or no longer found) is retried
// until the name is free. Real Heat's convergence engine reports
// DELETE_COMPLETE before it purges the stack row that holds the name, so a
// create right after a delete (entire heal, retry after rollback) can meet
// the old stack for a moment.
func (d *Driver) createStackWhenNameFree(ctx context.Context, c *clients, body rawCreate) (stackRef, error) {
	name, _ := body["stack_name"].(string)
	deadline := time.Now().Add(d.opts.StackTimeout)
	wait := d.opts.PollMin
	for {
		ref, err := createStack(ctx, c, body)
		var code gophercloud.ErrUnexpectedResponseCode
		if err == nil || !errors.As(err, &code) || code.Actual != http.StatusConflict || !strings.Contains(string(code.Body), "StackExists") {
			return ref, err
		}
		s, ferr := findStack(ctx, c, name)
		if ferr != nil {
			return ref, errors.Join(err, ferr)
		}
		if s != nil || time.Now().After(deadline) {
			return ref, err // a live stack holds the name, or it never came free
		}
		select {
		case <-ctx.Done():
			return ref, context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, d.opts.PollMax)
	}
}

func patchStack(ctx context.Context, c *clients, s stackRef, body rawUpdate) error {
	if err := stacks.UpdatePatch(ctx, c.heat, s.Name, s.ID, body).ExtractErr(); err != nil {
		return fmt.Errorf("Heat: update stack %s: %w", s.Name, err)
	}
	return nil
}

func putStack(ctx context.Context, c *clients, s stackRef, body rawUpdate) error {
	if err := stacks.Update(ctx, c.heat, s.Name, s.ID, body).ExtractErr(); err != nil {
		return fmt.Errorf("Heat: update stack %s: %w", s.Name, err)
	}
	return nil
}

func deleteStack(ctx context.Context, c *clients, s stackRef) error {
	err := stacks.Delete(ctx, c.heat, s.Name, s.ID).ExtractErr()
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("Heat: delete stack %s: %w", s.Name, err)
	}
	return nil
}

// StackError is a stack that ended in a failed state.
type StackError struct {
	Stack  string
	Status string
	Reason string
	// Failed lists the failed resources, innermost first:
	// "<path> (<type>): <status>: <reason>".
	Failed []string
}

func (e *StackError) Error() string {
	msg := fmt.Sprintf("Heat stack %s is %s", e.Stack, e.Status)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if len(e.Failed) > 0 {
		msg += "; failed resources: " + strings.Join(e.Failed, "; ")
	}
	return msg
}

// waitMode says what a wait is for.
type waitMode int

const (
	waitDone   waitMode = iota // CREATE/UPDATE/... COMPLETE
	waitGone                   // DELETE_COMPLETE or 404
	waitSettle                 // anything but IN_PROGRESS
)

// waitOpts tunes a wait after an update was sent: the stack must be seen
// in progress, or updated after Since, before a COMPLETE counts (else a
// poll racing the update could see the previous COMPLETE).
type waitOpts struct {
	mode    waitMode
	since   time.Time // the stack's updated_time before the update
	updated bool      // an update was just sent
	note    func(status string)
}

// waitStack polls the stack with exponential backoff until it reaches what
// mode asks for, the overall timeout passes or ctx ends.
func (d *Driver) waitStack(ctx context.Context, c *clients, s stackRef, w waitOpts) (*stacks.RetrievedStack, error) {
	deadline := time.Now().Add(d.opts.StackTimeout)
	sent := time.Now()
	grace := max(2*d.opts.PollMax, time.Second)
	delay := d.opts.PollMin
	seenProgress := false
	last := ""
	var lastErr error
	for {
		st, err := stacks.Get(ctx, c.heat, s.Name, s.ID).Extract()
		switch {
		case err == nil:
			lastErr = nil
			if st.Status != last && w.note != nil {
				w.note(st.Status)
			}
			last = st.Status
			if strings.HasSuffix(st.Status, "_IN_PROGRESS") {
				seenProgress = true
				break
			}
			if w.mode == waitSettle {
				return st, nil
			}
			if w.mode == waitGone {
				if st.Status == "DELETE_COMPLETE" {
					return nil, nil
				}
				if st.Status == "DELETE_FAILED" {
					return st, d.stackError(ctx, c, s, st)
				}
				break // not deleting (yet): keep waiting
			}
			if strings.HasSuffix(st.Status, "_FAILED") || strings.HasPrefix(st.Status, "ROLLBACK_") || st.Status == "DELETE_COMPLETE" {
				if !w.updated || seenProgress || st.UpdatedTime.After(w.since) || time.Since(sent) > grace {
					return st, d.stackError(ctx, c, s, st)
				}
				break
			}
			if strings.HasSuffix(st.Status, "_COMPLETE") {
				if !w.updated || seenProgress || st.UpdatedTime.After(w.since) || time.Since(sent) > grace {
					return st, nil
				}
			}
		case isNotFound(err):
			if w.mode == waitGone {
				return nil, nil
			}
			return nil, fmt.Errorf("Heat stack %s (%s) disappeared", s.Name, s.ID)
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		default:
			var code gophercloud.ErrUnexpectedResponseCode
			if errors.As(err, &code) && code.Actual < 500 && code.Actual != http.StatusTooManyRequests {
				return nil, fmt.Errorf("Heat: show stack %s: %w", s.Name, err)
			}
			lastErr = err // transient: retry until the deadline
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("Heat stack %s did not finish within %s (last status %s)", s.Name, d.opts.StackTimeout, orNone(last))
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			return nil, errors.New(msg)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		delay = min(delay*3/2+time.Millisecond, d.opts.PollMax)
	}
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// stackError describes a failed stack with its failed resources.
func (d *Driver) stackError(ctx context.Context, c *clients, s stackRef, st *stacks.RetrievedStack) error {
	e := &StackError{Stack: s.Name, Status: st.Status, Reason: st.StatusReason}
	if t, err := d.listTree(ctx, c, s); err == nil {
		var failed []*hres
		for _, r := range t.all {
			if strings.HasSuffix(r.Status, "_FAILED") {
				failed = append(failed, r)
			}
		}
		slices.SortStableFunc(failed, func(a, b *hres) int {
			if len(a.path) != len(b.path) {
				return len(b.path) - len(a.path)
			}
			return strings.Compare(strings.Join(a.path, "/"), strings.Join(b.path, "/"))
		})
		for i, r := range failed {
			if i == 5 {
				e.Failed = append(e.Failed, fmt.Sprintf("… %d more", len(failed)-i))
				break
			}
			line := fmt.Sprintf("%s (%s): %s", strings.Join(r.path, "/"), r.Type, r.Status)
			if r.StatusReason != "" {
				line += ": " + r.StatusReason
			}
			e.Failed = append(e.Failed, line)
		}
	}
	return e
}

// hres is a Heat resource placed in the stack tree.
type hres struct {
	stackresources.Resource
	stack stackRef // the stack the resource is in
	path  []string // resource names from the top stack down to this one
	depth int
}

// tree is every resource of a stack and its nested stacks.
type tree struct {
	top     stackRef
	all     []*hres
	byStack map[string][]*hres // stack id → its resources
	owner   map[string]*hres   // nested stack id → the resource owning it
}

// stackOfLinks reads the stack a resource is in from its "stack" link
// (…/stacks/<name>/<id>).
func stackOfLinks(links []gophercloud.Link) (stackRef, bool) {
	for _, l := range links {
		if l.Rel != "stack" {
			continue
		}
		parts := strings.Split(strings.TrimRight(l.Href, "/"), "/")
		if len(parts) >= 2 {
			return stackRef{Name: parts[len(parts)-2], ID: parts[len(parts)-1]}, true
		}
	}
	return stackRef{}, false
}

// listTree lists the resources of the stack with nested_depth and places
// them in the tree of stacks.
func (d *Driver) listTree(ctx context.Context, c *clients, s stackRef) (*tree, error) {
	pages, err := stackresources.List(c.heat, s.Name, s.ID, stackresources.ListOpts{Depth: d.opts.NestedDepth}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("Heat: list resources of stack %s: %w", s.Name, err)
	}
	rs, err := stackresources.ExtractResources(pages)
	if err != nil {
		return nil, fmt.Errorf("Heat: resources of stack %s: %w", s.Name, err)
	}
	t := &tree{top: s, byStack: map[string][]*hres{}, owner: map[string]*hres{}}
	byPhys := map[string]*hres{}
	for _, r := range rs {
		h := &hres{Resource: r}
		if ref, ok := stackOfLinks(r.Links); ok {
			h.stack = ref
		} else if r.ParentResource == "" {
			h.stack = s
		}
		t.all = append(t.all, h)
		if r.PhysicalID != "" {
			byPhys[r.PhysicalID] = h
		}
	}
	// Resources without a stack link: find the stack by the parent
	// resource's name (ambiguous only in odd templates).
	for _, h := range t.all {
		if h.stack.ID != "" {
			continue
		}
		for _, p := range t.all {
			if p.Name == h.ParentResource && p.PhysicalID != "" {
				h.stack = stackRef{ID: p.PhysicalID}
				break
			}
		}
	}
	for _, h := range t.all {
		t.byStack[h.stack.ID] = append(t.byStack[h.stack.ID], h)
		if h.stack.ID != s.ID {
			if o := byPhys[h.stack.ID]; o != nil {
				t.owner[h.stack.ID] = o
			}
		}
	}
	for _, h := range t.all {
		h.path = t.pathOf(h, 0)
		h.depth = len(h.path) - 1
	}
	return t, nil
}

func (t *tree) pathOf(h *hres, guard int) []string {
	if h.stack.ID == t.top.ID || guard > 16 {
		return []string{h.Name}
	}
	o := t.owner[h.stack.ID]
	if o == nil {
		return []string{h.Name}
	}
	return append(t.pathOf(o, guard+1), h.Name)
}

// stackName fills in the name of a nested stack known by id only.
func stackName(ctx context.Context, c *clients, ref stackRef) (stackRef, error) {
	if ref.Name != "" {
		return ref, nil
	}
	st, err := stacks.Find(ctx, c.heat, ref.ID).Extract()
	if err != nil {
		return ref, fmt.Errorf("Heat: find stack %s: %w", ref.ID, err)
	}
	return stackRef{Name: st.Name, ID: st.ID}, nil
}

// markUnhealthy marks a resource unhealthy. Heat takes the lock of the
// stack holding the resource for this, so while that (nested) stack still
// runs an action — a failed scale-out's group stack can be UPDATE in
// progress after the parent stack reported UPDATE_FAILED — Heat answers 409
// ActionInProgress; that is waited out (bounded by StackTimeout).
func (d *Driver) markUnhealthy(ctx context.Context, c *clients, in stackRef, resource, reason string) error {
	in, err := stackName(ctx, c, in)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(d.opts.StackTimeout)
	wait := d.opts.PollMin
	for {
		err = stackresources.MarkUnhealthy(ctx, c.heat, in.Name, in.ID, resource,
			stackresources.MarkUnhealthyOpts{MarkUnhealthy: true, ResourceStatusReason: reason}).ExtractErr()
		if err == nil {
			return nil
		}
		if !isActionInProgress(err) || time.Now().After(deadline) {
			return fmt.Errorf("Heat: mark %s of stack %s unhealthy: %w", resource, in.Name, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, d.opts.PollMax)
	}
}

// isActionInProgress is Heat's 409 for a stack whose lock another action holds.
func isActionInProgress(err error) bool {
	var code gophercloud.ErrUnexpectedResponseCode
	return errors.As(err, &code) && code.Actual == http.StatusConflict && strings.Contains(string(code.Body), "ActionInProgress")
}
