package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// livePod is a pod of a VDU's workload.
type livePod struct {
	VDU      string
	Workload *object
	Pod      corev1.Pod
}

// pods lists the running pods of the plan's workloads, found by their owner
// chain (Deployment → ReplicaSet → Pod; StatefulSet, DaemonSet, ReplicaSet
// → Pod; a bare Pod by its name and annotation), never by name patterns.
// Pods being deleted, and finished pods of controllers, are not VNFCs.
func (d *Driver) pods(ctx context.Context, c *cluster, pl *plan, instanceID string) ([]livePod, error) {
	var out []livePod
	byNS := map[string][]*object{}
	for _, o := range pl.Objects {
		if o.VDU != "" {
			byNS[o.Obj.GetNamespace()] = append(byNS[o.Obj.GetNamespace()], o)
		}
	}
	for _, ns := range sortedKeys(byNS) {
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the pods of namespace %s: %s", ns, apiMessage(err))
		}
		var rss []metav1.Object
		for _, o := range byNS[ns] {
			if o.Kind.gvk.Kind == "Deployment" && rss == nil {
				list, err := c.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, fmt.Errorf("listing the replica sets of namespace %s: %s", ns, apiMessage(err))
				}
				rss = []metav1.Object{}
				for i := range list.Items {
					rss = append(rss, &list.Items[i])
				}
			}
		}
		for _, o := range byNS[ns] {
			live, err := c.resource(o).Get(ctx, o.Obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s: %s", o.where(), apiMessage(err))
			}
			if !ours(live, instanceID) {
				continue
			}
			owners := map[types.UID]bool{live.GetUID(): true}
			if o.Kind.gvk.Kind == "Deployment" {
				for _, rs := range rss {
					if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == live.GetUID() {
						owners[rs.GetUID()] = true
					}
				}
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				if o.Kind.gvk.Kind == "Pod" {
					if p.UID == live.GetUID() {
						out = append(out, livePod{VDU: o.VDU, Workload: o, Pod: p})
					}
					continue
				}
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				if ref := metav1.GetControllerOfNoCopy(&p); ref != nil && owners[ref.UID] {
					out = append(out, livePod{VDU: o.VDU, Workload: o, Pod: p})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b livePod) int {
		if c := strings.Compare(a.VDU, b.VDU); c != 0 {
			return c
		}
		if c := a.Pod.CreationTimestamp.Compare(b.Pod.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Pod.Name, b.Pod.Name)
	})
	return out, nil
}

// syncMode says how pods are matched to the VNFCs recorded before.
type syncMode struct {
	// byName keeps a VNFC whose pod was replaced under the same name (a
	// StatefulSet's or a bare Pod's) — VNFC heal.
	byName bool
	// fresh gives every pod a new VNFC id (entire heal).
	fresh bool
	// reuse gives these VNFC ids (healed ones, by VDU) to new pods first.
	reuse map[string][]string
}

// sync records the workloads' pods as vnfcResourceInfo and the differences
// as the operation's affected VNFCs.
func (d *Driver) sync(ctx context.Context, op *driverapi.Op, c *cluster, pl *plan, mode syncMode) error {
	pods, err := d.pods(ctx, c, pl, op.Instance.ID)
	if err != nil {
		return err
	}
	record(op, pods, mode)
	return nil
}

// Refresh implements driverapi.Refresher: the workloads' pods as they are
// now become vnfcResourceInfo (what Tacker's periodic sync_db does). A VNFC
// whose pod is gone (evicted by a drain, deleted, replaced by its
// controller) keeps its id for a new pod of the same VDU, as Tacker
// renames it; VNFCs are added or dropped only when the pod count changed.
// Nothing in the cluster is changed.
func (d *Driver) Refresh(ctx context.Context, op *driverapi.Op) (bool, error) {
	pl, c, err := d.begin(ctx, op)
	if err != nil {
		return false, err
	}
	pods, err := d.pods(ctx, c, pl, op.Instance.ID)
	if err != nil {
		return false, err
	}
	info := op.Instance.InstantiatedVnfInfo
	before, err := json.Marshal(info.VnfcResourceInfo)
	if err != nil {
		return false, err
	}
	live := map[string]bool{}
	for _, lp := range pods {
		live[string(lp.Pod.UID)] = true
	}
	gone := map[string][]string{}
	for _, v := range info.VnfcResourceInfo {
		if uid, _ := v.Metadata[MetaPodUID].(string); !live[uid] {
			gone[v.VduID] = append(gone[v.VduID], v.ID)
		}
	}
	record(op, pods, syncMode{reuse: gone})
	after, err := json.Marshal(info.VnfcResourceInfo)
	return !bytes.Equal(before, after), err
}

// record makes pods the instance's vnfcResourceInfo (see syncMode).
func record(op *driverapi.Op, pods []livePod, mode syncMode) {
	info := op.Instance.InstantiatedVnfInfo
	old := info.VnfcResourceInfo
	byUID := map[string]int{}
	byName := map[string]int{}
	for i, v := range old {
		if uid, _ := v.Metadata[MetaPodUID].(string); uid != "" {
			byUID[uid] = i
		}
		byName[v.VduID+"/"+v.ComputeResource.ResourceID] = i
	}
	used := map[string]bool{}
	reuse := map[string][]string{}
	for k, v := range mode.reuse {
		reuse[k] = slices.Clone(v)
	}
	vimID := ""
	if op.Vim != nil {
		vimID = op.Vim.ID
	}
	var out []model.VnfcResourceInfo
	for _, lp := range pods {
		p := &lp.Pod
		idx, found := -1, false
		if !mode.fresh {
			if idx, found = byUID[string(p.UID)]; !found && mode.byName {
				idx, found = byName[lp.VDU+"/"+p.Name]
			}
		}
		for len(reuse[lp.VDU]) > 0 && used[reuse[lp.VDU][0]] {
			reuse[lp.VDU] = reuse[lp.VDU][1:]
		}
		change := ""
		var id string
		switch {
		case found && !used[old[idx].ID]:
			id = old[idx].ID
			if old[idx].Metadata[MetaPodUID] != string(p.UID) {
				change = "MODIFIED"
			}
		case len(reuse[lp.VDU]) > 0:
			id, reuse[lp.VDU] = reuse[lp.VDU][0], reuse[lp.VDU][1:]
			change = "MODIFIED"
		default:
			id, change = uuid.NewString(), "ADDED"
		}
		used[id] = true
		rec := model.VnfcResourceInfo{ID: id, VduID: lp.VDU,
			ComputeResource: model.ResourceHandle{VimConnectionID: vimID, ResourceID: p.Name, VimLevelResourceType: lp.Workload.Kind.gvk.Kind},
			Metadata: map[string]any{MetaNamespace: p.Namespace, MetaPodUID: string(p.UID), MetaNode: p.Spec.NodeName,
				MetaPhase: string(p.Status.Phase), MetaReady: podReady(p), MetaWorkload: lp.Workload.Name(),
				MetaCreated: p.CreationTimestamp.UTC().Format(time.RFC3339)}}
		out = append(out, rec)
		if change != "" {
			addChange(op, rec, change)
		}
	}
	for _, v := range old {
		if !used[v.ID] {
			addChange(op, v, "REMOVED")
		}
	}
	info.VnfcResourceInfo = out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// addChange records an affected VNFC, replacing an earlier record of it.
func addChange(op *driverapi.Op, v model.VnfcResourceInfo, change string) {
	if op.ResourceChanges == nil {
		op.ResourceChanges = &model.ResourceChanges{}
	}
	a := model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ChangeType: change, ComputeResource: v.ComputeResource}
	rc := op.ResourceChanges
	for i := range rc.AffectedVnfcs {
		if rc.AffectedVnfcs[i].ID == v.ID {
			prev := rc.AffectedVnfcs[i].ChangeType
			switch {
			case prev == "ADDED" && change == "REMOVED":
				rc.AffectedVnfcs = slices.Delete(rc.AffectedVnfcs, i, i+1)
				return
			case prev == "ADDED":
				a.ChangeType = "ADDED"
			}
			rc.AffectedVnfcs[i] = a
			return
		}
	}
	rc.AffectedVnfcs = append(rc.AffectedVnfcs, a)
}
