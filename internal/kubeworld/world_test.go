package kubeworld_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld"
	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
)

func TestPinsMatchBuildModules(t *testing.T) {
	for file, want := range map[string]string{
		"buildmod/kubernetes/go.mod": "k8s.io/kubernetes " + kubebin.KubernetesVersion,
		"buildmod/kwok/go.mod":       "sigs.k8s.io/kwok " + kubebin.KwokVersion,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "require "+want+"\n") {
			t.Errorf("%s does not require %s", file, want)
		}
	}
	// Every staging module is replaced by its release of the same version.
	b, _ := os.ReadFile("buildmod/kubernetes/go.mod")
	staging := "v0." + strings.TrimPrefix(kubebin.KubernetesVersion, "v1.")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[1] == "=>" {
			n++
			if f[0] != f[2] || f[3] != staging {
				t.Errorf("replace line %q: want %s => %s %s", l, f[0], f[0], staging)
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d staging modules replaced", n)
	}
}

func TestWorld(t *testing.T) {
	t0 := time.Now()
	w := kubeworld.NewTest(t, kubeworld.Options{Nodes: 2})
	t.Logf("control plane with 2 nodes up in %s", time.Since(t0).Round(time.Millisecond))
	cs, err := w.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("DeploymentReady", func(t *testing.T) { testDeploymentReady(t, cs) })
	t.Run("ServiceAccountRBAC", func(t *testing.T) { testServiceAccountRBAC(t, w, cs) })
	t.Run("DrainEvicts", func(t *testing.T) { testDrain(t, w, cs) })
	t.Run("WatchListRefused", func(t *testing.T) { testWatchListRefused(t, cs) })
	t.Run("ControllerManagerRestarted", func(t *testing.T) { testControllerManagerRestarted(t, w, cs) })

	pids := w.ProcessIDs()
	if len(pids) != 5 {
		t.Errorf("processes %v, want etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok", pids)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("%s (pid %d) still runs after Stop", name, pid)
		}
	}
	if _, err := os.Stat(w.Dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s left after Stop: %v", w.Dir, err)
	}
}

// testControllerManagerRestarted kills kube-controller-manager as a crash
// would: the world starts it again (as the kubelet restarts a static pod) and
// its controllers work again.
func testControllerManagerRestarted(t *testing.T, w *kubeworld.World, cs kubernetes.Interface) {
	ctx := ctxT(t)
	old := w.ProcessIDs()["kube-controller-manager"]
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "kube-controller-manager running again", func() (bool, string) {
		pid := w.ProcessIDs()["kube-controller-manager"]
		return pid != old && syscall.Kill(pid, 0) == nil, fmt.Sprintf("pid %d (killed %d)", pid, old)
	})
	namespace(t, cs, "restarted")
	if _, err := cs.AppsV1().Deployments("restarted").Create(ctx, deployment("web", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "a Deployment made after the restart ready", func() (bool, string) {
		d, err := cs.AppsV1().Deployments("restarted").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 1, fmt.Sprintf("%d/1 ready", d.Status.ReadyReplicas)
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func namespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func deployment(name string, replicas int32, nodeSelector map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: nodeSelector,
					Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
			},
		},
	}
}

// waitFor polls cond until it holds or the context ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached (%s)", what, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func testDeploymentReady(t *testing.T, cs kubernetes.Interface) {
	ctx := ctxT(t)
	namespace(t, cs, "deploy")
	t0 := time.Now()
	if _, err := cs.AppsV1().Deployments("deploy").Create(ctx, deployment("web", 3, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "3/3 replicas ready", func() (bool, string) {
		d, err := cs.AppsV1().Deployments("deploy").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 3, fmt.Sprintf("%d/3 ready", d.Status.ReadyReplicas)
	})
	t.Logf("Deployment 3/3 Ready in %s", time.Since(t0).Round(time.Millisecond))
	pods, err := cs.CoreV1().Pods("deploy").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s: node %q phase %s IP %q; want scheduled on a kwok node, Running, with an address", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP)
		}
	}
}

func testServiceAccountRBAC(t *testing.T, w *kubeworld.World, cs kubernetes.Interface) {
	ctx := ctxT(t)
	namespace(t, cs, "team-a")
	namespace(t, cs, "team-b")
	if _, err := cs.CoreV1().ServiceAccounts("team-a").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles("team-a").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("team-a").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "team-a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("team-a").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := w.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(admin)
		cfg.BearerToken = token
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	reader := as(tr.Status.Token)
	if _, err := reader.CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the bound ServiceAccount cannot list pods in its namespace: %v", err)
	}
	if _, err := reader.CoreV1().Pods("team-b").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("pods in another namespace: %v, want Forbidden", err)
	}
	if _, err := reader.CoreV1().Secrets("team-a").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("secrets: %v, want Forbidden", err)
	}
	if _, err := as(tr.Status.Token+"x").CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("a tampered token: %v, want Unauthorized", err)
	}
	// The legacy token Secret the drivers use for the VIM is filled by the
	// token controller, and authenticates too.
	if _, err := cs.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "reader-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "reader"}}, Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var token string
	waitFor(ctx, t, "the token controller fills the Secret", func() (bool, string) {
		s, err := cs.CoreV1().Secrets("team-a").Get(ctx, "reader-token", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "" && len(s.Data[corev1.ServiceAccountRootCAKey]) > 0, "no token yet"
	})
	if _, err := as(token).CoreV1().Pods("team-a").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the Secret's token: %v", err)
	}
}

func testDrain(t *testing.T, w *kubeworld.World, cs kubernetes.Interface) {
	ctx := ctxT(t)
	namespace(t, cs, "drain")
	if _, err := w.Kubectl(ctx, nil, "cordon", "kwok-node-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments("drain").Create(ctx, deployment("db", 2, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podsOn := func(node string) (ready int, all int) {
		pods, err := cs.CoreV1().Pods("drain").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return 0, -1
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			all++
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready, all
	}
	waitFor(ctx, t, "2 pods Ready on kwok-node-1", func() (bool, string) {
		r, a := podsOn("kwok-node-1")
		return r == 2, fmt.Sprintf("%d/%d ready", r, a)
	})
	if _, err := w.Kubectl(ctx, nil, "uncordon", "kwok-node-2"); err != nil {
		t.Fatal(err)
	}
	// A PodDisruptionBudget that forbids any disruption blocks the drain.
	minAvail := intstr.FromInt32(2)
	if _, err := cs.PolicyV1().PodDisruptionBudgets("drain").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvail, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the disruption controller counts the PDB", func() (bool, string) {
		p, err := cs.PolicyV1().PodDisruptionBudgets("drain").Get(ctx, "db", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 2, "not yet"
	})
	_, err := w.Kubectl(ctx, nil, "drain", "kwok-node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=4s")
	if err == nil || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("drain with a blocking PodDisruptionBudget: %v, want an eviction refused for the disruption budget", err)
	}
	if r, _ := podsOn("kwok-node-1"); r != 2 {
		t.Errorf("%d pods left on the node after the blocked drain, want 2", r)
	}
	if err := cs.PolicyV1().PodDisruptionBudgets("drain").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := w.Kubectl(ctx, nil, "drain", "kwok-node-1", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"); err != nil {
		t.Fatalf("drain: %v", err)
	} else if !strings.Contains(string(out), "evicting pod drain/db-") && !strings.Contains(string(out), "evicted") {
		t.Errorf("drain output does not mention evictions: %s", out)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "kwok-node-1", metav1.GetOptions{})
	if err != nil || !n.Spec.Unschedulable {
		t.Errorf("kwok-node-1 not cordoned after the drain: %v", err)
	}
	waitFor(ctx, t, "the evicted pods run again on kwok-node-2", func() (bool, string) {
		r1, a1 := podsOn("kwok-node-1")
		r2, a2 := podsOn("kwok-node-2")
		return a1 == 0 && r2 == 2, fmt.Sprintf("node-1 %d/%d, node-2 %d/%d", r1, a1, r2, a2)
	})
}

// The API server refuses watch-list requests at once (kubebin.
// APIServerFeatureGates), so informers (kwok's, the controllers') fall back
// to LIST + WATCH instead of retrying with a back-off against Debian's etcd
// 3.4, which cannot serve them: pods then took seconds to become Running or
// to go.
func testWatchListRefused(t *testing.T, cs kubernetes.Interface) {
	ctx := ctxT(t)
	yes := true
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err == nil {
		w.Stop()
		t.Fatal("a watch-list request (sendInitialEvents=true) was served; want it refused as Invalid (the WatchList feature gate off)")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "sendInitialEvents") {
		t.Errorf("watch-list request: %v, want Invalid naming sendInitialEvents", err)
	}
}
