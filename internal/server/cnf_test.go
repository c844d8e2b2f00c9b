package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// TestCNFOnKubernetesVIM: the sample CNF package, onboarded as a Tacker
// user would, instantiated through the LCM engine on a registered
// Kubernetes VIM (a real API server) with Tacker v1's request, scaled out,
// healed and terminated by the built-in infra drivers; a request the
// manifests cannot satisfy is refused before an operation exists.
func TestCNFOnKubernetesVIM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w := kubeworld.NewTest(t, kubeworld.Options{Nodes: 1})
	acc, err := w.VimAccess(ctx, "vnfm")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := w.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t)
	box := storetest.NewBox(t)
	log := slog.New(slog.DiscardHandler)
	policy := &outbound.Policy{AllowLoopback: true}
	cfg := lcm.Config{Store: st, Box: box, Mgmt: DefaultMgmt(MgmtOptions{Pins: st.HostKeyPins()}), Infra: NewInfraResolver(nil, nil, nil), Logger: log, Outbound: policy}
	svc := lcm.NewService(cfg)
	ectx, ecancel := context.WithCancel(ctx)
	eng := lcm.NewEngine(lcm.EngineConfig{Config: cfg, Workers: 2, Lease: 10 * time.Second, Poll: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ectx) }()
	t.Cleanup(func() { ecancel(); <-done })

	// Onboard the sample CNF package.
	pkgs := packages.New(packages.Config{Store: st, Box: box, Parse: ParseCSAR, Logger: log, Outbound: policy})
	pkg, err := pkgs.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pkgs.Upload(ctx, pkg.ID, vnfpkgtest.CSAR(t, "cnf-helloworld")); err != nil {
		t.Fatal(err)
	}
	pkgs.Wait()
	if pkg, err = pkgs.Get(ctx, pkg.ID); err != nil || pkg.OnboardingState != model.Onboarded {
		t.Fatalf("package: %+v, %v", pkg, err)
	}

	// Register the cluster as a Kubernetes VIM (verified against it).
	caJSON, _ := json.Marshal(acc.CAPEM)
	vim, err := svc.Vims().Register(ctx, []byte(`{"name": "cluster", "type": "kubernetes", "auth_url": "`+acc.Server+
		`", "vim_project": {"name": "default"}, "auth_cred": {"bearer_token": "`+acc.Token+`", "ssl_ca_cert": `+string(caJSON)+`}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	in, err := svc.CreateInstance(ctx, []byte(`{"vnfdId": "`+pkg.VnfdID+`", "vnfInstanceName": "cnf"}`))
	if err != nil {
		t.Fatal(err)
	}
	wait := func(op *store.OpOcc, err error) *store.OpOcc {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for {
			cur, err := st.GetOpOcc(ctx, op.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch cur.OperationState {
			case model.StateCompleted:
				return cur
			case model.StateFailedTemp, model.StateFailed:
				t.Fatalf("%s: %s %+v", cur.Operation, cur.OperationState, cur.Error)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: still %s", cur.Operation, cur.OperationState)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	inst := func(file string) string {
		return `{"flavourId": "simple", "vimConnectionInfo": [{"id": "c1", "vimId": "` + vim.ID + `", "vimType": "kubernetes"}],
			"additionalParams": {"lcm-kubernetes-def-files": ["Files/kubernetes/` + file + `"], "namespace": "default"}}`
	}

	// Refused at accept time: a manifest the package does not have.
	_, err = svc.Instantiate(ctx, in.ID, []byte(inst("none.yaml")))
	if le, ok := reqerr.As(err); !ok || le.Kind != reqerr.Unprocessable || !strings.Contains(le.Detail, "Files/kubernetes/none.yaml") {
		t.Fatalf("instantiate with a missing manifest: %v, want 422 naming it", err)
	}
	if ops, _, _ := st.ListOpOccs(ctx, store.Page{Limit: 10}); len(ops) != 0 {
		t.Fatalf("a refused request made %d op occurrence(s)", len(ops))
	}

	wait(svc.Instantiate(ctx, in.ID, []byte(inst("web.yaml"))))
	vnfcs := func() []model.VnfcResourceInfo {
		got, err := st.GetInstance(ctx, in.ID)
		if err != nil || got.InstantiatedVnfInfo == nil {
			t.Fatalf("instance: %+v, %v", got, err)
		}
		return got.InstantiatedVnfInfo.VnfcResourceInfo
	}
	if v := vnfcs(); len(v) != 1 || v[0].VduID != "web" || v[0].ComputeResource.VimLevelResourceType != "Deployment" {
		t.Fatalf("vnfcResourceInfo after instantiate: %+v", v)
	}
	// The CNF now depends on the VIM: what would remove the cluster is refused.
	if users, err := svc.Vims().VimUsers(ctx, "cluster", ""); err != nil || len(users) != 1 || !strings.Contains(users[0], in.ID) {
		t.Errorf("the VIM's users: %v, %v; want the CNF instance", users, err)
	}
	wait(svc.Scale(ctx, in.ID, []byte(`{"type": "SCALE_OUT", "aspectId": "web_aspect", "numberOfSteps": 1}`)))
	two := vnfcs()
	if len(two) != 2 {
		t.Fatalf("vnfcResourceInfo after scale out: %+v", two)
	}
	wait(svc.Heal(ctx, in.ID, []byte(fmt.Sprintf(`{"vnfcInstanceId": [%q]}`, two[0].ID))))
	healed := vnfcs()
	if len(healed) != 2 || (healed[0].ID != two[0].ID && healed[1].ID != two[0].ID) {
		t.Fatalf("after heal: %+v, healed %s", healed, two[0].ID)
	}
	for _, v := range healed {
		if v.ID == two[0].ID && v.ComputeResource.ResourceID == two[0].ComputeResource.ResourceID {
			t.Errorf("healed VNFC %s kept pod %s", v.ID, v.ComputeResource.ResourceID)
		}
	}
	// A pod replaced outside any operation (a drain, a deleted pod): the
	// engine's refresh pass records the new pod under the same VNFC, with
	// no operation occurrence.
	opsBefore, _, err := st.ListOpOccs(ctx, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	gone := healed[1].ComputeResource.ResourceID
	if err := cs.CoreV1().Pods("default").Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var live []string
	for i := 0; ; i++ {
		live = live[:0]
		list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == "Running" && p.Name != gone {
				live = append(live, p.Name)
			}
		}
		if len(live) == 2 && len(list.Items) == 2 {
			break
		}
		if i == 300 {
			t.Fatalf("pods after deleting %s: %v", gone, list.Items)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n, err := eng.RefreshAll(ctx); err != nil || n != 1 {
		t.Fatalf("refresh pass: %d instance(s) rewritten, %v; want 1", n, err)
	}
	refreshed := vnfcs()
	var ids, podNames []string
	for _, v := range refreshed {
		ids, podNames = append(ids, v.ID), append(podNames, v.ComputeResource.ResourceID)
	}
	slices.Sort(ids)
	slices.Sort(podNames)
	slices.Sort(live)
	want := []string{healed[0].ID, healed[1].ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) || !slices.Equal(podNames, live) {
		t.Fatalf("after the refresh: VNFCs %v on pods %v, want %v on the live pods %v", ids, podNames, want, live)
	}
	if n, err := eng.RefreshAll(ctx); err != nil || n != 0 {
		t.Fatalf("second refresh pass: %d rewritten, %v; want none", n, err)
	}
	if opsAfter, _, err := st.ListOpOccs(ctx, store.Page{Limit: 100}); err != nil || len(opsAfter) != len(opsBefore) {
		t.Fatalf("op occurrences %d after the refresh, %d before (%v): a refresh makes none", len(opsAfter), len(opsBefore), err)
	}
	wait(svc.Terminate(ctx, in.ID, []byte(`{"terminationType": "FORCEFUL"}`)))
	if got, _ := st.GetInstance(ctx, in.ID); got.InstantiationState != model.NotInstantiated || len(got.VimConnectionInfo) != 0 {
		t.Errorf("after terminate: %s, vimConnectionInfo %+v", got.InstantiationState, got.VimConnectionInfo)
	}
	if users, err := svc.Vims().VimUsers(ctx, "cluster", ""); err != nil || len(users) != 0 {
		t.Errorf("the VIM's users after the CNF's termination: %v, %v; want none", users, err)
	}
	if _, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment web after terminate: %v", err)
	}
}
