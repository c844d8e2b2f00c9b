package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// scaleTargets are the plan's workloads an aspect scales.
func scaleTargets(fl *model.Flavour, pl *plan, aspectID string) []*object {
	asp := fl.ScalingAspects[aspectID]
	if asp == nil {
		return nil
	}
	var out []*object
	for _, o := range pl.Objects {
		if _, ok := asp.VduDeltas[o.VDU]; ok && o.VDU != "" && o.Kind.scalable {
			out = append(out, o)
		}
	}
	return out
}

// ScaleInVictims implements driverapi.InfraDriver: per scaled VDU, the
// pods a controller removes first — a StatefulSet's highest ordinals, else
// the newest pods (Scale makes the ReplicaSet controller take exactly these
// through their pod-deletion-cost).
func (d *Driver) ScaleInVictims(ctx context.Context, op *driverapi.Op) ([]string, error) {
	req := op.Request.Scale
	if req == nil {
		return nil, errors.New("not a scale request")
	}
	fl, err := flavourOf(op)
	if err != nil {
		return nil, err
	}
	info := op.Instance.InstantiatedVnfInfo
	levels := levelsOf(info.ScaleStatus)
	var victims []string
	for _, vdu := range sortedKeys(fl.ScalingAspects[req.AspectID].VduDeltas) {
		var cur []model.VnfcResourceInfo
		for _, v := range info.VnfcResourceInfo {
			if v.VduID == vdu {
				cur = append(cur, v)
			}
		}
		n := len(cur) - fl.Instances(vdu, levels)
		if n <= 0 {
			continue
		}
		slices.SortStableFunc(cur, func(a, b model.VnfcResourceInfo) int {
			if a.ComputeResource.VimLevelResourceType == "StatefulSet" {
				return cmp.Compare(ordinal(b.ComputeResource.ResourceID), ordinal(a.ComputeResource.ResourceID))
			}
			ca, _ := a.Metadata[MetaCreated].(string)
			cb, _ := b.Metadata[MetaCreated].(string)
			if c := strings.Compare(cb, ca); c != 0 {
				return c
			}
			return strings.Compare(b.ComputeResource.ResourceID, a.ComputeResource.ResourceID)
		})
		for _, v := range cur[:min(n, len(cur))] {
			victims = append(victims, v.ID)
		}
	}
	return victims, nil
}

func ordinal(pod string) int {
	i := strings.LastIndexByte(pod, '-')
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// Scale implements driverapi.InfraDriver: the aspect's workloads get the
// replicas of the target level (the working copy's scaleStatus), and the
// driver waits until exactly that many pods are ready. A SCALE_IN's
// victims get the lowest pod-deletion-cost first, so the ReplicaSet
// controller removes them. Setting replicas is idempotent: a retry or a
// resume converges.
func (d *Driver) Scale(ctx context.Context, op *driverapi.Op) error {
	req := op.Request.Scale
	if req == nil {
		return errors.New("not a scale request")
	}
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	fl, _ := flavourOf(op)
	targets := scaleTargets(fl, pl, req.AspectID)
	if len(targets) == 0 {
		return canScale(fl, pl, req.AspectID)
	}
	if req.Type == model.ScaleIn {
		if err := d.markVictims(ctx, op, c); err != nil {
			return err
		}
	}
	return d.setReplicas(ctx, op, c, pl, targets)
}

// markVictims makes the victims the cheapest pods to delete.
func (d *Driver) markVictims(ctx context.Context, op *driverapi.Op, c *cluster) error {
	for _, v := range op.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if !slices.Contains(op.Victims, v.ID) {
			continue
		}
		switch v.ComputeResource.VimLevelResourceType {
		case "Deployment", "ReplicaSet":
		default:
			continue
		}
		ns, _ := v.Metadata[MetaNamespace].(string)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{deletionCostAnnot: strconv.Itoa(-1 << 30)}}})
		_, err := c.cs.CoreV1().Pods(ns).Patch(ctx, v.ComputeResource.ResourceID, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: ManagedBy})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("marking pod %s (VNFC %s) to be removed first: %s", v.ComputeResource.ResourceID, v.ID, apiMessage(err))
		}
	}
	return nil
}

// setReplicas sets the targets' replicas as planned, waits for the pods and
// records them.
func (d *Driver) setReplicas(ctx context.Context, op *driverapi.Op, c *cluster, pl *plan, targets []*object) error {
	pr := progress(op)
	for _, o := range targets {
		n := replicasOf(o)
		node := "scale " + o.Name()
		_ = pr.NodeStart(ctx, node, fmt.Sprintf("replicas → %d", n))
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
		if _, err := c.resource(o).Patch(ctx, o.Obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: ManagedBy}); err != nil {
			err = fmt.Errorf("scaling %s%s to %d replicas: %s", o.where(), inNamespace(o), n, apiMessage(err))
			_ = pr.NodeFailed(ctx, node, err)
			return err
		}
	}
	if err := d.waitReady(ctx, op, c, targets); err != nil {
		return err
	}
	if err := d.waitPodCount(ctx, c, pl, op.Instance.ID, targets); err != nil {
		return err
	}
	for _, o := range targets {
		_ = pr.NodeDone(ctx, "scale "+o.Name(), map[string]int{"replicas": replicasOf(o)})
	}
	return d.sync(ctx, op, c, pl, syncMode{})
}

// waitPodCount waits until each target runs exactly its replicas in pods,
// every one ready (the removed ones gone, not only terminating). The
// workload's own status is not enough: read right after a pod was deleted,
// it may still count that pod ready while its replacement is Pending.
func (d *Driver) waitPodCount(ctx context.Context, c *cluster, pl *plan, instanceID string, targets []*object) error {
	deadline := time.Now().Add(d.opts.ReadyTimeout)
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	for {
		all, err := c.cs.CoreV1().Pods(pl.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing pods: %s", apiMessage(err))
		}
		live, err := d.pods(ctx, c, pl, instanceID)
		if err != nil {
			return err
		}
		var wrong []string
		for _, o := range targets {
			n, ready := 0, 0
			for _, lp := range live {
				if lp.Workload == o {
					n++
					if podReady(&lp.Pod) {
						ready++
					}
				}
			}
			if n != replicasOf(o) || ready != n {
				wrong = append(wrong, fmt.Sprintf("%s has %d pods (%d ready), wants %d ready", o.Name(), n, ready, replicasOf(o)))
			}
		}
		terminating := 0
		for _, p := range all.Items {
			if p.DeletionTimestamp != nil {
				terminating++
			}
		}
		if len(wrong) == 0 && terminating == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods not settled after %s: %s (%d pod(s) terminating)", d.opts.ReadyTimeout, strings.Join(wrong, "; "), terminating)
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return err
		}
	}
}

// RollbackScale implements driverapi.InfraDriver: the aspect's workloads
// return to the replicas of the previous scale levels.
func (d *Driver) RollbackScale(ctx context.Context, op *driverapi.Op) error {
	req := op.Request.Scale
	if req == nil {
		return errors.New("not a scale request")
	}
	var prev []model.ScaleInfo
	if err := json.Unmarshal(op.Previous["scaleStatus"], &prev); err != nil {
		return fmt.Errorf("rollback: no previous scale status: %w", err)
	}
	op.Instance.InstantiatedVnfInfo.ScaleStatus = prev
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	fl, _ := flavourOf(op)
	return d.setReplicas(ctx, op, c, pl, scaleTargets(fl, pl, req.AspectID))
}

// Heal implements driverapi.InfraDriver. With vnfcInstanceId: each VNFC's
// pod is deleted; a controller replaces it, a bare Pod is created again from
// its manifest (on any node); the VNFC keeps its id and records the new pod.
// Without: the entire CNF is deleted and deployed again at its scale levels,
// with new VNFC ids.
func (d *Driver) Heal(ctx context.Context, op *driverapi.Op) error {
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return err
	}
	req := op.Request.Heal
	if req == nil || len(req.VnfcInstanceID) == 0 {
		return d.healEntire(ctx, op, c, pl)
	}
	pr := progress(op)
	info := op.Instance.InstantiatedVnfInfo
	reuse := map[string][]string{}
	var bare []*object
	for _, id := range req.VnfcInstanceID {
		i := slices.IndexFunc(info.VnfcResourceInfo, func(v model.VnfcResourceInfo) bool { return v.ID == id })
		if i < 0 {
			return fmt.Errorf("VNFC %s is not a VNFC of this instance", id)
		}
		v := info.VnfcResourceInfo[i]
		node := "heal " + id
		if _, done := pr.NodeCompleted(node); done {
			reuse[v.VduID] = append(reuse[v.VduID], id)
			continue
		}
		_ = pr.NodeStart(ctx, node, "deleting pod "+v.ComputeResource.ResourceID)
		ns, _ := v.Metadata[MetaNamespace].(string)
		uid := types.UID(fmt.Sprint(v.Metadata[MetaPodUID]))
		var zero int64
		err := c.cs.CoreV1().Pods(ns).Delete(ctx, v.ComputeResource.ResourceID, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			err = fmt.Errorf("deleting pod %s of VNFC %s: %s", v.ComputeResource.ResourceID, id, apiMessage(err))
			_ = pr.NodeFailed(ctx, node, err)
			return err
		}
		if err := d.waitPodGone(ctx, c, ns, v.ComputeResource.ResourceID, uid); err != nil {
			_ = pr.NodeFailed(ctx, node, err)
			return err
		}
		if v.ComputeResource.VimLevelResourceType == "Pod" {
			if o := pl.find("Pod", v.ComputeResource.ResourceID); o != nil {
				bare = append(bare, o)
				if err := d.create(ctx, c, o, op.Instance.ID); err != nil {
					_ = pr.NodeFailed(ctx, node, err)
					return err
				}
			}
		}
		_ = pr.NodeDone(ctx, node, map[string]string{"deleted": v.ComputeResource.ResourceID})
		reuse[v.VduID] = append(reuse[v.VduID], id)
	}
	var wait []*object
	for _, o := range pl.Objects {
		if o.VDU != "" {
			wait = append(wait, o)
		}
	}
	if err := d.waitReady(ctx, op, c, wait); err != nil {
		return err
	}
	var counted []*object
	for _, o := range wait {
		if o.Kind.scalable {
			counted = append(counted, o)
		}
	}
	if err := d.waitPodCount(ctx, c, pl, op.Instance.ID, counted); err != nil {
		return err
	}
	return d.sync(ctx, op, c, pl, syncMode{byName: true, reuse: reuse})
}

func (d *Driver) waitPodGone(ctx context.Context, c *cluster, ns, name string, uid types.UID) error {
	deadline := time.Now().Add(d.opts.DeleteTimeout)
	bo := backoff{d.opts.PollMin, d.opts.PollMax}
	for {
		p, err := c.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID != uid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s is not gone %s after its deletion", name, d.opts.DeleteTimeout)
		}
		if err := sleep(ctx, bo.next()); err != nil {
			return err
		}
	}
}

// healEntire deletes everything (once: a resumed heal does not delete what
// it already re-created) and deploys it again.
func (d *Driver) healEntire(ctx context.Context, op *driverapi.Op, c *cluster, pl *plan) error {
	pr := progress(op)
	const deleted = "heal: everything deleted"
	if _, done := pr.NodeCompleted(deleted); !done {
		_ = pr.NodeStart(ctx, deleted, "deleting every object")
		if err := d.deleteAll(ctx, op, c, pl, false, 0); err != nil {
			return err
		}
		_ = pr.NodeDone(ctx, deleted, nil)
	}
	if err := d.deploy(ctx, op, c, pl); err != nil {
		return err
	}
	return d.sync(ctx, op, c, pl, syncMode{fresh: true})
}
