package kubernetes_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// readyPods waits (bounded) until namespace ns has exactly n ready pods
// and none being deleted, and returns their names.
func readyPods(t *testing.T, cs k8s.Interface, ns string, n int) []string {
	t.Helper()
	var names []string
	for i := 0; i < 600; i++ {
		list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		settled := true
		for _, p := range list.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if p.DeletionTimestamp != nil || !ready {
				settled = false
				continue
			}
			names = append(names, p.Name)
		}
		if settled && len(names) == n {
			slices.Sort(names)
			return names
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("namespace %s: ready pods %v, want %d and none terminating", ns, names, n)
	return nil
}

// TestRefreshFollowsPodsChangedOutsideOperations: pods replaced or removed
// by the cluster between operations (a drain, a deleted pod, a hand-made
// scale) show up in vnfcResourceInfo after Refresh; a replaced pod's VNFC
// keeps its id (Tacker's sync_db renames it); nothing changed: no change.
func TestRefreshFollowsPodsChangedOutsideOperations(t *testing.T) {
	parallel(t)
	cs, _ := world(t)
	const ns = "refresh"
	namespace(t, cs, ns)
	drv := kdrv.New(kdrv.Options{ReadyTimeout: 4 * time.Minute, PollMax: 500 * time.Millisecond})
	c := newCNF(t, drv, testPackage, params(ns, "deployment.yaml"))
	c.mustInstantiate()
	if _, _, err := c.scale(model.ScaleOut, 1); err != nil {
		t.Fatalf("scale out: %v", err)
	}
	before := c.vnfcs("VDU2")
	if len(before) != 2 {
		t.Fatalf("VNFCs after scale out: %+v", before)
	}
	refresh := func() bool {
		t.Helper()
		changed, err := drv.Refresh(ctxFor(t, time.Minute), c.op("REFRESH", driverapi.Request{}))
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		return changed
	}
	if refresh() {
		t.Fatalf("refresh of an unchanged CNF reported a change: %+v, was %+v", c.vnfcs("VDU2"), before)
	}

	// A pod deleted outside any operation is replaced by its ReplicaSet.
	gone := before[0].ComputeResource.ResourceID
	if err := cs.CoreV1().Pods(ns).Delete(context.Background(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	live := readyPods(t, cs, ns, 2)
	if slices.Contains(live, gone) {
		t.Fatalf("pod %s still there: %v", gone, live)
	}
	if !refresh() {
		t.Fatal("refresh after a pod was replaced reported no change")
	}
	after := c.vnfcs("VDU2")
	if !slices.Equal(ids(after), ids(before)) || !slices.Equal(pods(after), live) {
		t.Fatalf("after refresh: VNFCs %v on pods %v, want the same VNFCs %v on the live pods %v", ids(after), pods(after), ids(before), live)
	}
	for _, v := range after {
		if v.ID == before[0].ID && v.ComputeResource.ResourceID == gone {
			t.Fatalf("VNFC %s still names the deleted pod %s", v.ID, gone)
		}
	}
	if refresh() {
		t.Fatal("a second refresh reported a change")
	}

	// A hand-made scale to one replica drops one VNFC.
	sc, err := cs.AppsV1().Deployments(ns).GetScale(context.Background(), "vdu2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 1
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), "vdu2", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	live = readyPods(t, cs, ns, 1)
	if !refresh() {
		t.Fatal("refresh after a scale to one replica reported no change")
	}
	one := c.vnfcs("VDU2")
	if len(one) != 1 || !slices.Equal(pods(one), live) || !slices.Contains(ids(before), one[0].ID) {
		t.Fatalf("after the hand-made scale: VNFCs %+v, want one of %v on pod %v", one, ids(before), live)
	}
	c.mustTerminate()
}
