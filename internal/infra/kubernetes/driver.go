package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
)

// Options configure the driver.
type Options struct {
	// ReadyTimeout bounds each wait for objects to become ready (instantiate,
	// scale, heal; default 10 min — Tacker's is 500 s).
	ReadyTimeout time.Duration
	// DeleteTimeout bounds each wait for objects to be gone, on top of a
	// GRACEFUL termination's timeout (default 5 min).
	DeleteTimeout time.Duration
	// PollMin and PollMax bound the polling backoff (default 200 ms, 2 s).
	PollMin, PollMax time.Duration
	// RequestTimeout bounds one API request (default 30 s).
	RequestTimeout time.Duration
	// Outbound, when set, is the policy every connection to an API server
	// goes through.
	Outbound *outbound.Policy
	// Limits bound the manifests of a request.
	Limits Limits
	Logger *slog.Logger
}

// Driver is the Kubernetes infra driver. It is safe for concurrent use.
type Driver struct {
	opts Options
	oidc oidcSources // credentials' digest → ID token source (oidcSource)
}

var _ driverapi.InfraDriver = (*Driver)(nil)

// New returns a driver.
func New(o Options) *Driver {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Minute
	}
	if o.DeleteTimeout <= 0 {
		o.DeleteTimeout = 5 * time.Minute
	}
	if o.PollMin <= 0 {
		o.PollMin = 200 * time.Millisecond
	}
	if o.PollMax <= 0 {
		o.PollMax = 2 * time.Second
	}
	o.PollMax = max(o.PollMax, o.PollMin)
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{opts: o}
}

// The VNFC metadata keys the driver records per pod.
const (
	MetaNamespace = "namespace"
	MetaPodUID    = "podUid"
	MetaNode      = "nodeName"
	MetaPhase     = "phase"
	MetaReady     = "ready"
	MetaWorkload  = "workload"
	MetaCreated   = "creationTimestamp"
)

func levelsOf(ss []model.ScaleInfo) map[string]int {
	m := map[string]int{}
	for _, s := range ss {
		m[s.AspectID] = s.ScaleLevel
	}
	return m
}

func flavourOf(op *driverapi.Op) (*model.Flavour, error) {
	info := op.Instance.InstantiatedVnfInfo
	if info == nil {
		return nil, fmt.Errorf("VNF instance %s has no instantiatedVnfInfo", op.Instance.ID)
	}
	if op.Vnfd != nil {
		if fl := op.Vnfd.Flavours[info.FlavourID]; fl != nil {
			return fl, nil
		}
	}
	if op.Flavour != nil {
		return op.Flavour, nil
	}
	return nil, fmt.Errorf("flavour %q is not in the VNFD", info.FlavourID)
}

// planAt is the instance's plan with its objects' replicas at levels.
func (d *Driver) planAt(ctx context.Context, op *driverapi.Op, levels map[string]int) (*plan, error) {
	fl, err := flavourOf(op)
	if err != nil {
		return nil, err
	}
	return makePlan(ctx, planRequest{Package: op.Package, Flavour: fl, InstanceID: op.Instance.ID,
		Params: op.Instance.InstantiatedVnfInfo.AdditionalParams, Levels: levels, Limits: d.opts.Limits})
}

// ComputeResources implements driverapi.Infra: the pods, by VNFC.
func (d *Driver) ComputeResources(info *model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	out := driverapi.BaseComputeResources(info)
	for i, v := range info.VnfcResourceInfo {
		r := &out[i]
		r.Name = v.ComputeResource.ResourceID
		r.ResourceType = "Pod"
		if uid, _ := v.Metadata[MetaPodUID].(string); uid != "" {
			r.ResourceID = uid
		}
		r.Group, _ = v.Metadata[MetaWorkload].(string)
		if s, _ := v.Metadata[MetaCreated].(string); s != "" {
			r.Created, _ = time.Parse(time.RFC3339, s)
		}
	}
	return out
}

// CheckVIP implements driverapi.Infra: nothing in a Kubernetes VIM filters
// a virtual IP's traffic between pods.
func (d *Driver) CheckVIP(context.Context, driverapi.VIPCheck) error { return nil }

// CheckRequest implements driverapi.InfraDriver: the manifests are read and
// checked whole before a CNF instantiation is accepted (a request that
// cannot deploy never creates anything), a scale must name an aspect whose
// VDUs are scalable workloads and stay within their vdu_profile.
func (d *Driver) CheckRequest(ctx context.Context, a *driverapi.Accept) error {
	switch {
	case a.Request.Instantiate != nil:
		req := a.Request.Instantiate
		if len(a.Instance.VimConnectionInfo) == 0 {
			return errors.New("a CNF is instantiated on a Kubernetes VIM: give vimConnectionInfo [{\"vimId\": <VIM id>, \"vimType\": \"kubernetes\"}]")
		}
		if _, err := d.restConfig(&a.Instance.VimConnectionInfo[0]); err != nil {
			return err
		}
		if err := refuseHelm(req.AdditionalParams); err != nil {
			return err
		}
		levelID := req.InstantiationLevelID
		if levelID == "" {
			levelID = a.Flavour.DefaultInstantiationLevel
		}
		levels := map[string]int{}
		if l := a.Flavour.InstantiationLevels[levelID]; l != nil {
			levels = l.ScaleLevels
		}
		_, err := makePlan(ctx, planRequest{Package: a.Package, Flavour: a.Flavour, InstanceID: a.Instance.ID,
			Params: req.AdditionalParams, Levels: levels, Limits: d.opts.Limits})
		return err
	case a.Request.Scale != nil:
		req, info := a.Request.Scale, a.Instance.InstantiatedVnfInfo
		if info == nil {
			return nil
		}
		if v, ok := req.AdditionalParams["is_reverse"]; ok && v != nil && v != false && v != "False" && v != "false" {
			return errors.New("additionalParams.is_reverse is not supported for a CNF: Kubernetes workloads have no stack resource order to reverse")
		}
		levels := levelsOf(info.ScaleStatus)
		if req.Type == model.ScaleIn {
			levels[req.AspectID] -= req.Steps()
		} else {
			levels[req.AspectID] += req.Steps()
		}
		pl, err := makePlan(ctx, planRequest{Package: a.Package, Flavour: a.Flavour, InstanceID: a.Instance.ID,
			Params: info.AdditionalParams, Levels: levels, Limits: d.opts.Limits})
		if err != nil {
			return err
		}
		return canScale(a.Flavour, pl, req.AspectID)
	case a.Request.ChangeExtConn != nil:
		return errors.New("change_ext_conn is not supported for a CNF: its workloads have no external virtual links to change")
	}
	return nil
}

// canScale checks that an aspect scales at least one workload of the plan.
func canScale(fl *model.Flavour, pl *plan, aspectID string) error {
	asp := fl.ScalingAspects[aspectID]
	if asp == nil {
		return fmt.Errorf("aspect %q is not a scaling aspect of flavour %s", aspectID, fl.ID)
	}
	wl := pl.workloads()
	for vdu := range asp.VduDeltas {
		if len(wl[vdu]) > 0 {
			return nil
		}
	}
	return fmt.Errorf("aspect %s scales VDU(s) %s, but no workload of the deployed manifests backs them; nothing would change", aspectID, strings.Join(sortedKeys(asp.VduDeltas), ", "))
}

// sortedKeys is m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// progress is op.Progress, or nothing when the caller gave none.
func progress(op *driverapi.Op) driverapi.Progress {
	if op.Progress != nil {
		return op.Progress
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Note(context.Context, string) error              { return nil }
func (noProgress) NodeStart(context.Context, string, string) error { return nil }
func (noProgress) NodeNote(context.Context, string, string) error  { return nil }
func (noProgress) NodeDone(context.Context, string, any) error     { return nil }
func (noProgress) NodeFailed(context.Context, string, error) error { return nil }
func (noProgress) NodeCompleted(string) (json.RawMessage, bool)    { return nil, false }

// Instantiate implements driverapi.InfraDriver: create the manifests'
// objects in dependency order, wait until they are ready, record the pods
// as VNFCs. Every step converges when run again (objects of this instance
// that exist are adopted).
func (d *Driver) Instantiate(ctx context.Context, op *driverapi.Op) error {
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	if err := d.deploy(ctx, op, c, pl); err != nil {
		return err
	}
	if op.Instance.Metadata == nil {
		op.Instance.Metadata = map[string]any{}
	}
	op.Instance.Metadata["namespace"] = pl.Namespace
	return d.sync(ctx, op, c, pl, syncMode{})
}

func (d *Driver) begin(ctx context.Context, op *driverapi.Op) (*plan, *cluster, error) {
	if op.Instance.InstantiatedVnfInfo == nil {
		return nil, nil, fmt.Errorf("VNF instance %s has no instantiatedVnfInfo", op.Instance.ID)
	}
	pl, err := d.planAt(ctx, op, levelsOf(op.Instance.InstantiatedVnfInfo.ScaleStatus))
	if err != nil {
		return nil, nil, err
	}
	c, err := d.connect(op.Vim)
	if err != nil {
		return nil, nil, err
	}
	return pl, c, nil
}

// deploy creates the plan's objects and waits until they are ready.
func (d *Driver) deploy(ctx context.Context, op *driverapi.Op, c *cluster, pl *plan) error {
	pr := progress(op)
	for _, o := range pl.Objects {
		node := o.Name()
		_ = pr.NodeStart(ctx, node, "creating")
		if err := d.create(ctx, c, o, op.Instance.ID); err != nil {
			_ = pr.NodeFailed(ctx, node, err)
			return err
		}
		if o.Kind.review {
			_ = pr.NodeDone(ctx, node, map[string]string{"status": "answered"})
			continue
		}
		_ = pr.NodeNote(ctx, node, "created; waiting until it is ready")
	}
	return d.waitReady(ctx, op, c, pl.Objects)
}

func ours(u *unstructured.Unstructured, instanceID string) bool {
	return u.GetAnnotations()[AnnotationInstance] == instanceID
}

// create creates one object; an object of this instance that exists
// already (an earlier attempt) is kept.
func (d *Driver) create(ctx context.Context, c *cluster, o *object, instanceID string) error {
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	deadline := time.Now().Add(d.opts.DeleteTimeout)
	for {
		_, err := c.resource(o).Create(ctx, o.Obj.DeepCopy(), metav1.CreateOptions{FieldManager: ManagedBy})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) || o.Kind.review {
			return fmt.Errorf("creating %s%s: %s", o.where(), inNamespace(o), apiMessage(err))
		}
		live, gerr := c.resource(o).Get(ctx, o.Obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			continue // deleted meanwhile
		}
		if gerr != nil {
			return fmt.Errorf("reading %s%s: %s", o.where(), inNamespace(o), apiMessage(gerr))
		}
		if !ours(live, instanceID) {
			owner := live.GetAnnotations()[AnnotationInstance]
			by := "it was not created by this VNFM"
			if owner != "" {
				by = "it belongs to VNF instance " + owner
			}
			return fmt.Errorf("%s already exists%s and %s; this VNF instance does not take over objects it did not create: remove it, or deploy into another namespace (additionalParams.%s)", o.where(), inNamespace(o), by, ParamNamespace)
		}
		if live.GetDeletionTimestamp() == nil {
			return nil
		}
		// Ours, being deleted (an entire heal re-creating it): wait, then create.
		if time.Now().After(deadline) {
			return fmt.Errorf("%s%s is still being deleted after %s; it cannot be created again", o.where(), inNamespace(o), d.opts.DeleteTimeout)
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return err
		}
	}
}

func inNamespace(o *object) string {
	if o.Kind.namespaced {
		return " in namespace " + o.Obj.GetNamespace()
	}
	return ""
}

// apiMessage is the API server's message of an error, for people.
func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		return fmt.Sprintf("%s (%s, HTTP %d)", st.Message, st.Reason, st.Code)
	}
	return err.Error()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitReady waits until every object is ready, noting each one's status as
// it changes; on timeout the error names what is not ready and why.
func (d *Driver) waitReady(ctx context.Context, op *driverapi.Op, c *cluster, objs []*object) error {
	pr := progress(op)
	deadline := time.Now().Add(d.opts.ReadyTimeout)
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	pending := slices.DeleteFunc(slices.Clone(objs), func(o *object) bool { return o.Kind.review })
	last := map[string]string{}
	for {
		var still []*object
		for _, o := range pending {
			node := o.Name()
			live, err := c.resource(o).Get(ctx, o.Obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				err = fmt.Errorf("%s%s disappeared while the VNFM waited for it to be ready; something else deleted it", o.where(), inNamespace(o))
				_ = pr.NodeFailed(ctx, node, err)
				return err
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				last[node] = "cannot read it: " + apiMessage(err)
				still = append(still, o)
				continue
			}
			ok, st, failed := readiness(o.Kind, live)
			if failed {
				err := fmt.Errorf("%s%s cannot become ready: %s", o.where(), inNamespace(o), st)
				_ = pr.NodeFailed(ctx, node, err)
				return err
			}
			if ok {
				_ = pr.NodeDone(ctx, node, map[string]string{"status": st})
				continue
			}
			if last[node] != st {
				_ = pr.NodeNote(ctx, node, "waiting: "+st)
				last[node] = st
			}
			still = append(still, o)
		}
		if len(still) == 0 {
			return nil
		}
		pending = still
		if time.Now().After(deadline) {
			var parts []string
			for _, o := range still {
				parts = append(parts, fmt.Sprintf("%s: %s", o.Name(), last[o.Name()]))
			}
			detail := strings.Join(parts, "; ")
			if pods := d.podProblems(ctx, c, still); pods != "" {
				detail += "; pods: " + pods
			}
			return fmt.Errorf("not ready after %s: %s", d.opts.ReadyTimeout, detail)
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return err
		}
	}
}

// podProblems describes the unready pods of the namespaces of objs.
func (d *Driver) podProblems(ctx context.Context, c *cluster, objs []*object) string {
	nss := map[string]bool{}
	for _, o := range objs {
		if o.Kind.workload || o.Kind.gvk.Kind == "Job" {
			nss[o.Obj.GetNamespace()] = true
		}
	}
	var out []string
	for _, ns := range sortedKeys(nss) {
		list, err := c.dyn.Resource(kindByName["Pod"][0].gvr()).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: ""})
		if err != nil {
			continue
		}
		for i := range list.Items {
			p := &list.Items[i]
			if ok, st, _ := readiness(kindByName["Pod"][0], p); !ok && len(out) < 10 {
				out = append(out, p.GetName()+" "+st)
			}
		}
	}
	return strings.Join(out, ", ")
}

// Terminate implements driverapi.InfraDriver: the instance's objects are
// deleted in the reverse of their creation order and waited for.
// FORCEFUL deletes pods at once (grace period 0); GRACEFUL lets them stop
// within gracefulTerminationTimeout seconds, then deletes what is left at
// once.
func (d *Driver) Terminate(ctx context.Context, op *driverapi.Op) error {
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	req := op.Request.Terminate
	var grace time.Duration
	graceful := req != nil && req.TerminationType == "GRACEFUL"
	if graceful && req.GracefulTerminationTimeout != nil {
		grace = time.Duration(*req.GracefulTerminationTimeout) * time.Second
	}
	if err := d.deleteAll(ctx, op, c, pl, graceful, grace); err != nil {
		return err
	}
	d.removeAllVnfcs(op)
	// As Tacker: a terminated CNF no longer uses its VIM, so the cluster
	// behind it may be terminated in turn.
	op.Instance.VimConnectionInfo = nil
	return nil
}

func (d *Driver) removeAllVnfcs(op *driverapi.Op) {
	info := op.Instance.InstantiatedVnfInfo
	if info == nil {
		return
	}
	for _, v := range info.VnfcResourceInfo {
		addChange(op, v, "REMOVED")
	}
	info.VnfcResourceInfo = nil
}

// deleteAll deletes the plan's objects of this instance, newest rank first,
// each waited for before the next (a Deployment's pods are gone before the
// ConfigMap they mount is deleted; the Namespace goes last).
func (d *Driver) deleteAll(ctx context.Context, op *driverapi.Op, c *cluster, pl *plan, graceful bool, grace time.Duration) error {
	pr := progress(op)
	objs := slices.Clone(pl.Objects)
	slices.Reverse(objs)
	start := time.Now()
	for _, o := range objs {
		if o.Kind.review {
			continue
		}
		node := "delete " + o.Name()
		_ = pr.NodeStart(ctx, node, "deleting")
		left, err := d.deleteOne(ctx, c, o, op.Instance.ID, graceful, grace, start)
		if err != nil {
			_ = pr.NodeFailed(ctx, node, err)
			return err
		}
		out := map[string]string{"status": "deleted"}
		if left != "" {
			out["status"] = left
			d.opts.Logger.Warn("object left in place", "object", o.Name(), "vnfInstanceId", op.Instance.ID, "why", left)
		}
		_ = pr.NodeDone(ctx, node, out)
	}
	return nil
}

// deleteOne deletes an object of this instance and waits until it is gone
// (with a StatefulSet, the PersistentVolumeClaims of its pods too). An
// object another owner made is left alone; the returned note says so.
func (d *Driver) deleteOne(ctx context.Context, c *cluster, o *object, instanceID string, graceful bool, grace time.Duration, start time.Time) (string, error) {
	name := o.Obj.GetName()
	live, err := c.resource(o).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", d.deleteClaims(ctx, c, o, instanceID)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s%s: %s", o.where(), inNamespace(o), apiMessage(err))
	}
	if !ours(live, instanceID) {
		return "left in place: not created by this VNF instance", nil
	}
	uid := live.GetUID()
	policy := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
	var zero int64
	if !graceful {
		// Foreground still: the workload is gone only once its pods are
		// (deleted at once below), so a terminated CNF leaves nothing running.
		opts.GracePeriodSeconds = &zero
	}
	if err := c.resource(o).Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return "", fmt.Errorf("deleting %s%s: %s", o.where(), inNamespace(o), apiMessage(err))
	}
	if !graceful && o.Kind.workload {
		if err := d.forcePods(ctx, c, o, uid); err != nil {
			return "", err
		}
	}
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	forced := !graceful
	for {
		cur, err := c.resource(o).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != uid) {
			break
		}
		if graceful && !forced && time.Since(start) > grace {
			// The graceful period is over: what still runs is stopped now.
			forced = true
			if o.Kind.workload {
				if err := d.forcePods(ctx, c, o, uid); err != nil {
					return "", err
				}
			}
		}
		if time.Since(start) > grace+d.opts.DeleteTimeout {
			return "", fmt.Errorf("%s%s is not deleted after %s (finalizers: %v)", o.where(), inNamespace(o), grace+d.opts.DeleteTimeout, cur.GetFinalizers())
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return "", err
		}
	}
	return "", d.deleteClaims(ctx, c, o, instanceID)
}

// forcePods deletes the pods of a workload (uid) with grace period 0.
func (d *Driver) forcePods(ctx context.Context, c *cluster, o *object, uid types.UID) error {
	pods, err := c.cs.CoreV1().Pods(o.Obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the pods of %s: %s", o.where(), apiMessage(err))
	}
	owners := map[types.UID]bool{uid: true}
	if o.Kind.gvk.Kind == "Deployment" {
		rss, err := c.cs.AppsV1().ReplicaSets(o.Obj.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing the replica sets of %s: %s", o.where(), apiMessage(err))
		}
		for _, rs := range rss.Items {
			if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == uid {
				owners[rs.UID] = true
			}
		}
	}
	var zero int64
	for _, p := range pods.Items {
		ref := metav1.GetControllerOf(&p)
		if (ref != nil && owners[ref.UID]) || p.UID == uid {
			err := c.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting pod %s of %s: %s", p.Name, o.where(), apiMessage(err))
			}
		}
	}
	return nil
}

// deleteClaims deletes the PersistentVolumeClaims a StatefulSet's
// volumeClaimTemplates made (<template>-<statefulset>-<ordinal>), as Tacker
// does, and waits for them.
func (d *Driver) deleteClaims(ctx context.Context, c *cluster, o *object, instanceID string) error {
	if o.Kind.gvk.Kind != "StatefulSet" {
		return nil
	}
	tmpls, _, _ := unstructured.NestedSlice(o.Obj.Object, "spec", "volumeClaimTemplates")
	if len(tmpls) == 0 {
		return nil
	}
	ns, sts := o.Obj.GetNamespace(), o.Obj.GetName()
	pvcs, err := c.cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the claims of %s: %s", o.where(), apiMessage(err))
	}
	var names []string
	for _, t := range tmpls {
		tm, _ := t.(map[string]any)
		vct, _, _ := unstructured.NestedString(tm, "metadata", "name")
		prefix := vct + "-" + sts + "-"
		for _, p := range pvcs.Items {
			if rest, ok := strings.CutPrefix(p.Name, prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
				names = append(names, p.Name)
			}
		}
	}
	for _, n := range names {
		if err := c.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting claim %s of %s: %s", n, o.where(), apiMessage(err))
		}
	}
	deadline := time.Now().Add(d.opts.DeleteTimeout)
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	for _, n := range names {
		for {
			_, err := c.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("claim %s of %s is not deleted after %s", n, o.where(), d.opts.DeleteTimeout)
			}
			if err := sleep(ctx, bo.next()); err != nil {
				return err
			}
		}
	}
	return nil
}

// RollbackInstantiate implements driverapi.InfraDriver: whatever the
// instantiation created of this instance is deleted (at once).
func (d *Driver) RollbackInstantiate(ctx context.Context, op *driverapi.Op) error {
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	if err := d.deleteAll(ctx, op, c, pl, false, 0); err != nil {
		return err
	}
	d.removeAllVnfcs(op)
	return nil
}

// ChangeExtConn implements driverapi.InfraDriver; CheckRequest refuses it.
func (d *Driver) ChangeExtConn(context.Context, *driverapi.Op) error {
	return errors.New("change_ext_conn is not supported for a CNF")
}
