package kubernetes_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
)

// A heal completes only when the healed VNFC's new pod is running and
// ready, also when the workload's status still counts the deleted pod
// ready: the controller manager is stopped while the pod is deleted (the
// Deployment keeps saying 1/1 ready), and once it runs again and makes the
// replacement, kwok is stopped (the replacement stays Pending). Not
// parallel: it stops processes every test of the package shares (parallel
// tests start after it).
func TestHealWaitsForTheReplacementToBeReady(t *testing.T) {
	cs, _ := world(t)
	namespace(t, cs, "healready")
	drv := kdrv.New(kdrv.Options{ReadyTimeout: 2 * time.Minute, PollMin: 50 * time.Millisecond, PollMax: 200 * time.Millisecond})
	c := newCNF(t, drv, testPackage, params("healready", "deployment.yaml", "config-map.yaml"))
	c.mustInstantiate()
	before := c.vnfcs("VDU2")
	if len(before) != 1 {
		t.Fatalf("VNFCs after instantiate: %+v", before)
	}
	pids := shared.w.ProcessIDs()
	signal := func(name string, sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(pids[name], sig); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, p := range []string{kubebin.KubeControllerManager, kubebin.Kwok} {
		t.Cleanup(func() { _ = syscall.Kill(pids[p], syscall.SIGCONT) })
	}
	ctx := context.Background()
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s after a minute", what)
			}
		}
	}

	signal(kubebin.KubeControllerManager, syscall.SIGSTOP)
	done := make(chan error, 1)
	go func() { _, err := c.heal(before[0].ID); done <- err }()
	old := before[0].ComputeResource.ResourceID
	until("deletion of pod "+old, func() bool {
		_, err := cs.CoreV1().Pods("healready").Get(ctx, old, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	time.Sleep(time.Second) // the heal reads the Deployment's stale status meanwhile
	signal(kubebin.Kwok, syscall.SIGSTOP)
	signal(kubebin.KubeControllerManager, syscall.SIGCONT)
	until("replacement pod", func() bool {
		pods, err := cs.CoreV1().Pods("healready").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Name != old
	})
	select {
	case err := <-done:
		t.Fatalf("the heal completed (%v) while the replacement pod was not ready", err)
	case <-time.After(2 * time.Second):
	}
	signal(kubebin.Kwok, syscall.SIGCONT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("heal: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the heal did not complete two minutes after the replacement could become ready")
	}
	after := c.vnfcs("VDU2")
	if len(after) != 1 || after[0].ID != before[0].ID || after[0].ComputeResource.ResourceID == old {
		t.Fatalf("VNFCs after heal: %+v (before %+v)", after, before)
	}
	p, err := cs.CoreV1().Pods("healready").Get(ctx, after[0].ComputeResource.ResourceID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, cond := range p.Status.Conditions {
		ready = ready || cond.Type == "Ready" && cond.Status == "True"
	}
	if !ready {
		t.Fatalf("the healed VNFC's pod %s is not ready: %+v", p.Name, p.Status)
	}
}
