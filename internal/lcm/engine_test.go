package lcm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

type world struct {
	t     *testing.T
	st    *store.Store
	svc   *lcm.Service
	infra *lcmtest.Infra
	mgmt  *lcmtest.Mgmt
	cfg   lcm.Config
	// ownService gives engines a service of their own, not svc: a run reads
	// everything from the database, as one in another process does.
	ownService bool
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	box := storetest.NewBox(t)
	w := &world{t: t, st: st, infra: &lcmtest.Infra{}, mgmt: &lcmtest.Mgmt{}}
	w.cfg = lcm.Config{Store: st, Box: box, Mgmt: lcmtest.Registry(w.mgmt), Infra: lcmtest.Resolver(w.infra),
		Logger: slog.New(slog.DiscardHandler)}
	w.svc = lcm.NewService(w.cfg)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	return w
}

// engine starts an engine; the returned stop simulates a process going away
// (its leases are left to expire).
func (w *world) engine(lease time.Duration, obs lcm.Observer) (stop func()) {
	return w.engineN(4, lease, obs)
}

// engineN is engine with at most workers operations at once.
func (w *world) engineN(workers int, lease time.Duration, obs lcm.Observer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	svc := w.svc
	if w.ownService {
		svc = nil
	}
	e := lcm.NewEngine(lcm.EngineConfig{Config: w.cfg, Service: svc, Workers: workers, Lease: lease, Poll: 50 * time.Millisecond,
		GracefulCancelTimeout: 5 * time.Second, Observer: obs})
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	w.t.Cleanup(stop)
	return stop
}

func (w *world) instance() string {
	w.t.Helper()
	in, err := w.svc.CreateInstance(context.Background(), []byte(`{"vnfdId":"`+lcmtest.VnfdID+`","vnfInstanceName":"k8s"}`))
	if err != nil {
		w.t.Fatal(err)
	}
	return in.ID
}

func instantiateBody(fake string) []byte {
	return []byte(`{"flavourId":"simple","instantiationLevelId":"instantiation_level_2",
		"vimConnectionInfo":[{"id":"vim1","vimType":"` + lcmtest.VimType + `","accessInfo":{"username":"admin","password":"vim-pass-123"}}],
		"additionalParams":{"password":"node-pass-456","fake":` + fake + `}}`)
}

func (w *world) wait(opID string, states ...string) *store.OpOcc {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		op, err := w.st.GetOpOcc(context.Background(), opID)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, s := range states {
			if op.OperationState == s {
				return op
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("op %s stayed %s; want %v (error %+v)", opID, op.OperationState, states, op.Error)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (w *world) mustInst(id string) *store.Instance {
	w.t.Helper()
	in, err := w.st.GetInstance(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return in
}

func vnfcIDs(in *store.Instance) []string {
	var out []string
	if in.InstantiatedVnfInfo != nil {
		for _, v := range in.InstantiatedVnfInfo.VnfcResourceInfo {
			out = append(out, v.ID)
		}
	}
	return out
}

// An operation's first run gets the instance and VNFD from its acceptance
// when the engine shares the accepting service, else from the database: the
// same result either way.
func TestInstantiateCompletes(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("ownService=%v", own), func(t *testing.T) { testInstantiateCompletes(t, own) })
	}
}

func testInstantiateCompletes(t *testing.T, ownService bool) {
	w := newWorld(t)
	w.ownService = ownService
	w.engine(5*time.Second, nil)
	id := w.instance()
	op, err := w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if op.OperationState != model.StateStarting || op.Operation != model.OpInstantiate {
		t.Fatalf("new op: %s %s", op.Operation, op.OperationState)
	}
	done := w.wait(op.ID, model.StateCompleted, model.StateFailedTemp)
	if done.OperationState != model.StateCompleted {
		t.Fatalf("instantiate ended %s: %+v", done.OperationState, done.Error)
	}
	in := w.mustInst(id)
	if in.InstantiationState != model.Instantiated {
		t.Fatalf("instance %s", in.InstantiationState)
	}
	if got := strings.Join(vnfcIDs(in), ","); got != "master-0,worker-0,worker-1,worker-2" {
		t.Fatalf("vnfcs %s", got)
	}
	if ss := in.InstantiatedVnfInfo.ScaleStatus; len(ss) != 1 || ss[0].ScaleLevel != 1 {
		t.Fatalf("scaleStatus %+v", ss)
	}
	if in.Metadata["cluster"] != "ready" {
		t.Fatalf("instantiate_end effect missing: %+v", in.Metadata)
	}
	if n := len(done.ResourceChanges.AffectedVnfcs); n != 4 {
		t.Fatalf("affectedVnfcs %d", n)
	}
	for _, h := range []string{"mgmt.instantiate_start", "mgmt.instantiate_end", "infra.instantiate"} {
		if c := w.mgmt.Calls.Get(h) + w.infra.Calls.Get(h); c != 1 {
			t.Errorf("%s ran %d times", h, c)
		}
	}
	// The driver's parameters were parsed once, when the request was
	// accepted; the hooks got them already typed.
	if n := w.mgmt.Calls.Get("parse"); n != 1 {
		t.Errorf("the management driver parsed its parameters %d times, want once (at accept)", n)
	}
	j, err := w.st.Journal(context.Background(), []string{op.ID})
	if err != nil {
		t.Fatal(err)
	}
	steps, nodes := 0, 0
	for _, e := range j[op.ID] {
		if e.State != model.StepCompleted {
			t.Errorf("journal entry %s/%s is %s", e.Step, e.Node, e.State)
		}
		if e.Node == "" {
			steps++
		} else {
			nodes++
		}
	}
	if steps != 3 || nodes != 4 {
		t.Fatalf("journal: %d steps %d nodes", steps, nodes)
	}
	// Secrets are sealed at rest: the plaintext appears in no column.
	var leaks int
	err = w.st.Pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM vnf_lcm_op_occs WHERE operation_params::text LIKE '%pass-%' OR coalesce(work::text,'') LIKE '%pass-%') +
		(SELECT count(*) FROM vnf_instances WHERE coalesce(vim_connection_info::text,'') LIKE '%pass-%' OR coalesce(instantiated_vnf_info::text,'') LIKE '%pass-%')`).Scan(&leaks)
	if err != nil || leaks != 0 {
		t.Fatalf("plaintext secrets stored in %d rows (err %v)", leaks, err)
	}
	if in.VimConnectionInfo[0].AccessInfo["username"] != "admin" || !secrets.IsSealed(fmt.Sprint(in.VimConnectionInfo[0].AccessInfo["password"])) {
		t.Fatalf("vim access info not sealed as expected: %+v", in.VimConnectionInfo[0].AccessInfo)
	}
	// Each sealed at its place in the instance: opened as the next
	// operation opens it.
	read, err := w.st.OpenInstanceAndPackage(context.Background(), id, w.cfg.Box.OpenJSON)
	if err != nil {
		t.Fatal(err)
	}
	if pw := read.VimConnectionInfo[0].AccessInfo["password"]; pw != "vim-pass-123" {
		t.Fatalf("the VIM password opens as %v", pw)
	}
	if pw := read.InstantiatedVnfInfo.AdditionalParams["password"]; pw != "node-pass-456" {
		t.Fatalf("additionalParams.password opens as %v", pw)
	}
}

// An operation that does not change a secret of the instance leaves its
// stored (sealed) value as it was; the one it changes is sealed anew.
func TestUnchangedSecretsAreNotSealedAgain(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("ownService=%v", own), func(t *testing.T) {
			w := newWorld(t)
			w.ownService = own
			w.engine(5*time.Second, nil)
			ctx := context.Background()
			id := w.instance()
			op, err := w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			w.wait(op.ID, model.StateCompleted)
			stored := func() (vimPW, nodePW any) {
				in := w.mustInst(id)
				return in.VimConnectionInfo[0].AccessInfo["password"], in.InstantiatedVnfInfo.AdditionalParams["password"]
			}
			vim0, node0 := stored()
			op, err = w.svc.Modify(ctx, id, []byte(`{"metadata":{"k":"v"},"vimConnectionInfo":[{"id":"vim1","vimType":"`+lcmtest.VimType+`","accessInfo":{"username":"admin","password":"vim-pass-789"}}]}`), 0)
			if err != nil {
				t.Fatal(err)
			}
			w.wait(op.ID, model.StateCompleted)
			vim1, node1 := stored()
			if node1 != node0 || vim1 == vim0 || !secrets.IsSealed(fmt.Sprint(vim1)) {
				t.Fatalf("unchanged secret kept: %v; changed secret sealed anew: %v", node1 == node0, vim1 != vim0)
			}
			read, err := w.st.OpenInstanceAndPackage(ctx, id, w.cfg.Box.OpenJSON)
			if err != nil {
				t.Fatal(err)
			}
			if read.VimConnectionInfo[0].AccessInfo["password"] != "vim-pass-789" || read.InstantiatedVnfInfo.AdditionalParams["password"] != "node-pass-456" {
				t.Fatalf("opened: %+v / %+v", read.VimConnectionInfo[0].AccessInfo, read.InstantiatedVnfInfo.AdditionalParams)
			}
		})
	}
}

func TestFailureThenRetryResumesFromJournal(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	flag := filepath.Join(t.TempDir(), "fail")
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id := w.instance()
	op, err := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"failStep":"infra.instantiate","failNode":"worker-1","failFile":"`+flag+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	failed := w.wait(op.ID, model.StateFailedTemp, model.StateCompleted)
	if failed.OperationState != model.StateFailedTemp || failed.Error == nil {
		t.Fatalf("want FAILED_TEMP with error, got %s %+v", failed.OperationState, failed.Error)
	}
	if !strings.Contains(failed.Error.Detail, "infra.instantiate") || !strings.Contains(failed.Error.Detail, "worker-1") {
		t.Fatalf("error detail does not say what failed: %q", failed.Error.Detail)
	}
	if w.mustInst(id).InstantiationState != model.NotInstantiated {
		t.Fatal("a failed instantiate changed the instance")
	}
	// Another task is blocked while the op is FAILED_TEMP.
	if _, err := w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`)); !isKind(err, lcm.KindConflict) || !strings.Contains(err.Error(), op.ID) {
		t.Fatalf("second instantiate: %v", err)
	}
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	parsed := w.mgmt.Calls.Get("parse")
	if _, err := w.svc.Retry(context.Background(), op.ID); err != nil {
		t.Fatal(err)
	}
	done := w.wait(op.ID, model.StateCompleted, model.StateFailedTemp)
	if done.OperationState != model.StateCompleted || done.Error != nil {
		t.Fatalf("retry ended %s %+v", done.OperationState, done.Error)
	}
	for node, want := range map[string]int{"master-0": 1, "worker-0": 1, "worker-1": 2, "worker-2": 1} {
		if got := w.infra.Calls.Get("infra.instantiate/" + node); got != want {
			t.Errorf("node %s created %d times, want %d", node, got, want)
		}
	}
	if got := w.mgmt.Calls.Get("mgmt.instantiate_start"); got != 1 {
		t.Errorf("completed step instantiate_start re-ran: %d", got)
	}
	if got := w.mgmt.Calls.Get("parse"); got != parsed {
		t.Errorf("the retry parsed the driver's parameters again (%d parses, %d before it): hooks get those kept with the operation", got, parsed)
	}
	if got := strings.Join(vnfcIDs(w.mustInst(id)), ","); got != "master-0,worker-0,worker-1,worker-2" {
		t.Fatalf("vnfcs after retry: %s", got)
	}
	if _, err := w.svc.Retry(context.Background(), op.ID); !isKind(err, lcm.KindConflict) {
		t.Fatalf("retry of a COMPLETED op: %v", err)
	}
}

func isKind(err error, k lcm.Kind) bool {
	var le *lcm.Error
	return errors.As(err, &le) && le.Kind == k
}

func TestErrorDetailsNeverCarrySecrets(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	id := w.instance()
	op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"failStep":"mgmt.instantiate_end"}`))
	failed := w.wait(op.ID, model.StateFailedTemp)
	if strings.Contains(failed.Error.Detail, "node-pass-456") || !strings.Contains(failed.Error.Detail, secrets.Mask) {
		t.Fatalf("secret not scrubbed from error: %q", failed.Error.Detail)
	}
	j, _ := w.st.Journal(context.Background(), []string{op.ID})
	for _, e := range j[op.ID] {
		if strings.Contains(e.Error+e.Message, "node-pass-456") {
			t.Fatalf("journal leaks a secret: %+v", e)
		}
	}
}

// A VIM given by vimId (or the default VIM) gets its credentials from the
// registry when the run prepares: a driver error quoting them is scrubbed too.
func TestErrorDetailsNeverCarryRegisteredVimSecrets(t *testing.T) {
	w := newWorld(t)
	w.cfg.Infra = func(string) (driverapi.InfraDriver, bool) { return w.infra, true }
	// The VIM is registered offline at a loopback address (nothing connects
	// to it): the policy must allow loopback for it to be usable at all.
	w.cfg.Outbound = outboundtest.Policy(time.Second)
	w.svc = lcm.NewService(w.cfg)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	vim, err := w.svc.Vims().Register(ctx, []byte(`{"name":"reg","type":"openstack","auth_url":"http://127.0.0.1:1/v3",
		"vim_project":{"name":"p"},"auth_cred":{"username":"nfv_user","password":"registry-pass-789"}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	id := w.instance()
	op, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimId":"`+vim.ID+`"}],
		"additionalParams":{"fake":{"failStep":"mgmt.instantiate_end","echoVimCredentials":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	failed := w.wait(op.ID, model.StateFailedTemp)
	if failed.Error == nil || !strings.Contains(failed.Error.Detail, "VIM access") {
		t.Fatalf("the injected failure did not reach the op: %+v", failed.Error)
	}
	if strings.Contains(failed.Error.Detail, "registry-pass-789") || !strings.Contains(failed.Error.Detail, secrets.Mask) {
		t.Fatalf("the registered VIM's password is in the error: %q", failed.Error.Detail)
	}
	j, _ := w.st.Journal(ctx, []string{op.ID})
	for _, e := range j[op.ID] {
		if strings.Contains(e.Error+e.Message, "registry-pass-789") {
			t.Fatalf("journal leaks the registered VIM's password: %+v", e)
		}
	}
}

func TestRollbackInstantiate(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	id := w.instance()
	op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"failStep":"mgmt.instantiate_end"}`))
	w.wait(op.ID, model.StateFailedTemp)
	if _, err := w.svc.Rollback(context.Background(), op.ID); err != nil {
		t.Fatal(err)
	}
	rb := w.wait(op.ID, model.StateRolledBack, model.StateFailedTemp)
	if rb.OperationState != model.StateRolledBack {
		t.Fatalf("rollback ended %s %+v", rb.OperationState, rb.Error)
	}
	for _, c := range []string{"rollback.infra.instantiate"} {
		if w.infra.Calls.Get(c) != 1 {
			t.Errorf("%s ran %d times", c, w.infra.Calls.Get(c))
		}
	}
	if w.mgmt.Calls.Get("rollback.mgmt.instantiate_end") != 1 {
		t.Error("the failed instantiate_end step was not undone")
	}
	if in := w.mustInst(id); in.InstantiationState != model.NotInstantiated || in.InstantiatedVnfInfo != nil {
		t.Fatalf("instance after rollback: %+v", in)
	}
	// The instance is free again.
	op2, err := w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op2.ID, model.StateCompleted)
}

func TestFailMakesOperationFinal(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	id := w.instance()
	op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"failStep":"infra.instantiate"}`))
	w.wait(op.ID, model.StateFailedTemp)
	failed, err := w.svc.Fail(context.Background(), op.ID)
	if err != nil || failed.OperationState != model.StateFailed {
		t.Fatalf("fail: %v %v", err, failed)
	}
	for name, f := range map[string]func(context.Context, string) (*store.OpOcc, error){"retry": w.svc.Retry, "rollback": w.svc.Rollback, "fail": w.svc.Fail} {
		if _, err := f(context.Background(), op.ID); !isKind(err, lcm.KindConflict) {
			t.Errorf("%s of a FAILED op: %v", name, err)
		}
	}
	if _, err := w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`)); err != nil {
		t.Fatalf("instance still blocked after fail: %v", err)
	}
}

func TestCancel(t *testing.T) {
	t.Run("forceful stops the running step", func(t *testing.T) {
		w := newWorld(t)
		w.engine(5*time.Second, nil)
		id := w.instance()
		op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"delayMs":20000}`))
		w.waitNode(op.ID, "master-0")
		start := time.Now()
		if _, err := w.svc.Cancel(context.Background(), op.ID, model.CancelForceful); err != nil {
			t.Fatal(err)
		}
		got := w.wait(op.ID, model.StateFailedTemp, model.StateCompleted)
		if got.OperationState != model.StateFailedTemp || !strings.Contains(got.Error.Detail, "cancelled") || got.IsCancelPending {
			t.Fatalf("after cancel: %s pending=%v %+v", got.OperationState, got.IsCancelPending, got.Error)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("forceful cancel took %v: the step was not interrupted", time.Since(start))
		}
		if _, err := w.svc.Cancel(context.Background(), op.ID, model.CancelForceful); !isKind(err, lcm.KindConflict) {
			t.Fatalf("cancel of a FAILED_TEMP op: %v", err)
		}
	})
	t.Run("graceful finishes the current node and stops", func(t *testing.T) {
		w := newWorld(t)
		w.engine(5*time.Second, nil)
		id := w.instance()
		op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"delayMs":400}`))
		w.waitNode(op.ID, "master-0")
		if _, err := w.svc.Cancel(context.Background(), op.ID, model.CancelGraceful); err != nil {
			t.Fatal(err)
		}
		got := w.wait(op.ID, model.StateFailedTemp, model.StateCompleted)
		if got.OperationState != model.StateFailedTemp {
			t.Fatalf("graceful cancel ended %s", got.OperationState)
		}
		created := 0
		for _, n := range []string{"master-0", "worker-0", "worker-1", "worker-2"} {
			created += w.infra.Calls.Get("infra.instantiate/" + n)
		}
		if created == 0 || created == 4 {
			t.Fatalf("graceful cancel should stop between nodes; %d of 4 created", created)
		}
	})
	t.Run("starting op with no engine is rolled back at once", func(t *testing.T) {
		w := newWorld(t)
		id := w.instance()
		op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`))
		got, err := w.svc.Cancel(context.Background(), op.ID, "")
		if err != nil || got.OperationState != model.StateRolledBack {
			t.Fatalf("cancel STARTING: %v %+v", err, got)
		}
	})
}

func (w *world) waitNode(opID, node string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		j, err := w.st.Journal(context.Background(), []string{opID})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, e := range j[opID] {
			if e.Node == node {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("node %s never started", node)
}

func TestScaleAndRollback(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	op, _ := w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
	w.wait(op.ID, model.StateCompleted)

	scale := func(body string) *store.OpOcc {
		t.Helper()
		op, err := w.svc.Scale(ctx, id, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	got := w.wait(scale(`{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":2}`).ID, model.StateCompleted, model.StateFailedTemp)
	if got.OperationState != model.StateCompleted {
		t.Fatalf("scale out: %+v", got.Error)
	}
	if ids := strings.Join(vnfcIDs(w.mustInst(id)), ","); ids != "master-0,worker-0,worker-1,worker-2,worker-3,worker-4" {
		t.Fatalf("after scale out: %s", ids)
	}
	if _, err := w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":1}`)); !isKind(err, lcm.KindInvalid) || !strings.Contains(err.Error(), "it cannot be scaled out further") {
		t.Fatalf("scale beyond max level: %v, want a refusal saying it is at its maximum", err)
	}
	if _, err := w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_IN","aspectId":"worker_aspect","numberOfSteps":9}`)); !isKind(err, lcm.KindInvalid) || !strings.Contains(err.Error(), "it is at level 3; scale it in by at most 3 step(s)") {
		t.Fatalf("scale in below level 0: %v, want a refusal naming the steps left", err)
	}
	if _, err := w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_OUT","aspectId":"nope"}`)); !isKind(err, lcm.KindInvalid) {
		t.Fatalf("unknown aspect: %v", err)
	}
	in := w.wait(scale(`{"type":"SCALE_IN","aspectId":"worker_aspect"}`).ID, model.StateCompleted)
	if n := len(in.ResourceChanges.AffectedVnfcs); n != 1 || in.ResourceChanges.AffectedVnfcs[0].ChangeType != "REMOVED" {
		t.Fatalf("scale in changes: %+v", in.ResourceChanges)
	}
	// A scale-out whose scale_end fails rolls back to the previous level.
	failing := scale(`{"type":"SCALE_OUT","aspectId":"worker_aspect","additionalParams":{"fake":{"failStep":"mgmt.scale_end"}}}`)
	w.wait(failing.ID, model.StateFailedTemp)
	if _, err := w.svc.Rollback(ctx, failing.ID); err != nil {
		t.Fatal(err)
	}
	w.wait(failing.ID, model.StateRolledBack)
	inst := w.mustInst(id)
	if lvl := inst.InstantiatedVnfInfo.ScaleStatus[0].ScaleLevel; lvl != 2 {
		t.Fatalf("level after rollback %d", lvl)
	}
	if ids := strings.Join(vnfcIDs(inst), ","); ids != "master-0,worker-0,worker-1,worker-2,worker-3" {
		t.Fatalf("vnfcs after rollback: %s", ids)
	}
	// Scale-in cannot be rolled back.
	sin := scale(`{"type":"SCALE_IN","aspectId":"worker_aspect","additionalParams":{"fake":{"failStep":"mgmt.scale_end"}}}`)
	w.wait(sin.ID, model.StateFailedTemp)
	if _, err := w.svc.Rollback(ctx, sin.ID); !isKind(err, lcm.KindConflict) {
		t.Fatalf("rollback of scale in: %v", err)
	}
}

func TestTerminateAndDelete(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	if err := w.svc.DeleteInstance(ctx, id); err != nil {
		t.Fatalf("delete NOT_INSTANTIATED: %v", err)
	}
	id = w.instance()
	if _, err := w.svc.Terminate(ctx, id, []byte(`{"terminationType":"FORCEFUL"}`)); !isKind(err, lcm.KindConflict) {
		t.Fatalf("terminate NOT_INSTANTIATED: %v", err)
	}
	op, _ := w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
	w.wait(op.ID, model.StateCompleted)
	if err := w.svc.DeleteInstance(ctx, id); !isKind(err, lcm.KindConflict) {
		t.Fatalf("delete INSTANTIATED: %v", err)
	}
	// A management driver that finds other resources in the way (CNFs on
	// the cluster's VIM) refuses with 409, and no operation starts.
	_, err := w.svc.Terminate(ctx, id, []byte(`{"terminationType":"FORCEFUL","additionalParams":{"fake":{"conflict":"the cluster's VIM is in use by VNF instance x"}}}`))
	if le, ok := reqerr.As(err); !ok || le.Kind != lcm.KindConflict || le.Detail != "the cluster's VIM is in use by VNF instance x" {
		t.Fatalf("terminate refused by the driver: %v, want 409 with its detail", err)
	}
	if in := w.mustInst(id); in.InstantiationState != model.Instantiated {
		t.Fatalf("after the refused terminate: %s", in.InstantiationState)
	}
	term, err := w.svc.Terminate(ctx, id, []byte(`{"terminationType":"GRACEFUL","gracefulTerminationTimeout":1}`))
	if err != nil {
		t.Fatal(err)
	}
	done := w.wait(term.ID, model.StateCompleted)
	if len(done.ResourceChanges.AffectedVnfcs) != 4 {
		t.Fatalf("terminate changes %+v", done.ResourceChanges)
	}
	if in := w.mustInst(id); in.InstantiationState != model.NotInstantiated || in.InstantiatedVnfInfo != nil {
		t.Fatalf("after terminate: %+v", in.VnfInstance)
	}
	if err := w.svc.DeleteInstance(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.GetInstance(ctx, id); !isKind(err, lcm.KindNotFound) {
		t.Fatalf("deleted instance: %v", err)
	}
}

func TestConcurrentTasksOnOneInstanceAcceptExactlyOne(t *testing.T) {
	w := newWorld(t)
	id := w.instance()
	var ok, conflict atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = w.svc.Instantiate(context.Background(), id, instantiateBody(`{}`))
			} else {
				_, err = w.svc.Modify(context.Background(), id, []byte(`{"vnfInstanceName":"n`+fmt.Sprint(i)+`"}`), 0)
			}
			switch {
			case err == nil:
				ok.Add(1)
			case isKind(err, lcm.KindConflict):
				conflict.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 99 {
		t.Fatalf("accepted %d, conflicts %d; want 1 and 99", ok.Load(), conflict.Load())
	}
	var n int
	_ = w.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM vnf_lcm_op_occs WHERE vnf_instance_id=$1`, id).Scan(&n)
	if n != 1 {
		t.Fatalf("%d op occurrences stored", n)
	}
}

// crashAt stops its engine (like a dying process: no cleanup, lease left to
// expire) when a checkpoint is reached.
type crashAt struct {
	at   string
	stop atomic.Pointer[func()]
	hit  atomic.Bool
}

func (c *crashAt) StepFinished(string, string, string, time.Duration) {}
func (c *crashAt) Checkpoint(_ string, what string) {
	if what == c.at && c.hit.CompareAndSwap(false, true) {
		go (*c.stop.Load())()
	}
}

func TestAnotherEngineResumesAfterCrash(t *testing.T) {
	w := newWorld(t)
	obs := &crashAt{at: "run:node-end:infra.instantiate/worker-0"}
	stopA := w.engine(time.Second, obs)
	obs.stop.Store(&stopA)
	id := w.instance()
	op, _ := w.svc.Instantiate(context.Background(), id, instantiateBody(`{"delayMs":100}`))
	deadline := time.Now().Add(10 * time.Second)
	for !obs.hit.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stopA()
	if cur, _ := w.st.GetOpOcc(context.Background(), op.ID); cur.OperationState != model.StateProcessing {
		t.Fatalf("after crash op is %s", cur.OperationState)
	}
	w.engine(time.Second, nil) // engine B
	done := w.wait(op.ID, model.StateCompleted, model.StateFailedTemp)
	if done.OperationState != model.StateCompleted {
		t.Fatalf("resumed op ended %s %+v", done.OperationState, done.Error)
	}
	if done.Attempts < 2 {
		t.Fatalf("attempts %d: not resumed by a second claim", done.Attempts)
	}
	for _, n := range []string{"master-0", "worker-0"} {
		if c := w.infra.Calls.Get("infra.instantiate/" + n); c != 1 {
			t.Errorf("checkpointed node %s ran %d times", n, c)
		}
	}
	if got := w.mgmt.Calls.Get("mgmt.instantiate_start"); got != 1 {
		t.Errorf("completed step re-ran %d times", got)
	}
	if got := w.mgmt.Calls.Get("parse"); got != 1 {
		t.Errorf("the driver's parameters were parsed %d times, want once (at accept): the resuming engine uses those kept with the operation", got)
	}
	if got := strings.Join(vnfcIDs(w.mustInst(id)), ","); got != "master-0,worker-0,worker-1,worker-2" {
		t.Fatalf("vnfcs after resume: %s", got)
	}
}

func TestModifyInfoAndETag(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	cur := w.mustInst(id)
	if _, err := w.svc.Modify(ctx, id, []byte(`{"vnfInstanceName":"x"}`), cur.Version+1); !isKind(err, lcm.KindPrecondition) {
		t.Fatalf("stale If-Match: %v", err)
	}
	op, err := w.svc.Modify(ctx, id, []byte(`{"vnfInstanceName":"renamed","metadata":{"a":"1","b":{"c":2}}}`), cur.Version)
	if err != nil {
		t.Fatal(err)
	}
	done := w.wait(op.ID, model.StateCompleted)
	b, _ := json.Marshal(done.ChangedInfo)
	if !strings.Contains(string(b), `"vnfInstanceName":"renamed"`) {
		t.Fatalf("changedInfo %s", b)
	}
	op, _ = w.svc.Modify(ctx, id, []byte(`{"metadata":{"a":null,"b":{"d":3}}}`), 0)
	w.wait(op.ID, model.StateCompleted)
	in := w.mustInst(id)
	mb, _ := json.Marshal(in.Metadata)
	if in.VnfInstanceName != "renamed" || string(mb) != `{"b":{"c":2,"d":3}}` {
		t.Fatalf("after merge patch: name %q metadata %s", in.VnfInstanceName, mb)
	}
}

// A MODIFY_INFO's changedInfo is stored with its secrets sealed, the VIM
// credentials of a vimConnectionInfo it changed included (they are typed
// values in it, which sealing did not reach), and read back masked.
func TestModifyChangedInfoKeepsSecretsSealed(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	op, err := w.svc.Modify(ctx, id, []byte(`{"metadata":{"api_token":"md-tok-789"},
		"vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`","accessInfo":{"username":"u","password":"pw-modify-123"}}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
	var stored string
	if err := w.st.Pool().QueryRow(ctx, `SELECT changed_info::text FROM vnf_lcm_op_occs WHERE id=$1`, op.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw-modify-123", "md-tok-789"} {
		if strings.Contains(stored, secret) {
			t.Errorf("changedInfo holds %s at rest: %s", secret, stored)
		}
	}
	if !strings.Contains(stored, `"username": "u"`) || !strings.Contains(stored, "enc:v") {
		t.Errorf("changedInfo at rest: %s", stored)
	}
}

// Moving an instance to another package (vnfdId or vnfPkgId) moves every
// attribute that follows the package, as SOL003's changedInfo lists them;
// what cannot succeed is refused when the request arrives.
func TestModifyPackageMovesWhatFollowsIt(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	v2 := lcmtest.SamplePackage()
	v2.ID, v2.Vnfd.ID, v2.Vnfd.SoftwareVersion, v2.Vnfd.Version, v2.Vnfd.ProductName = uuid.NewString(), uuid.NewString(), "2.0", "2.1", "Sample K8s v2"
	if err := w.st.PutPackage(ctx, v2); err != nil {
		t.Fatal(err)
	}
	other := lcmtest.SamplePackage()
	other.ID, other.Vnfd.ID = uuid.NewString(), uuid.NewString()
	other.Vnfd.Flavours = map[string]*model.Flavour{"big": other.Vnfd.Flavours["simple"]}
	if err := w.st.PutPackage(ctx, other); err != nil {
		t.Fatal(err)
	}

	disabled := lcmtest.SamplePackage()
	disabled.ID, disabled.Vnfd.ID, disabled.OperationalState = uuid.NewString(), uuid.NewString(), model.Disabled
	if err := w.st.PutPackage(ctx, disabled); err != nil {
		t.Fatal(err)
	}

	id := w.instance()
	for name, c := range map[string]struct{ body, hint string }{
		"unknown package":  {`{"vnfPkgId":"` + uuid.NewString() + `"}`, ""},
		"disagreeing pair": {`{"vnfPkgId":"` + v2.ID + `","vnfdId":"` + lcmtest.VnfdID + `"}`, ""},
		"unknown vnfdId":   {`{"vnfdId":"` + uuid.NewString() + `"}`, "GET /vnfpkgm/v1/vnf_packages"},
		"disabled package": {`{"vnfdId":"` + disabled.Vnfd.ID + `"}`, "PATCH /vnfpkgm/v1/vnf_packages/" + disabled.ID},
	} {
		if _, err := w.svc.Modify(ctx, id, []byte(c.body), 0); !isKind(err, lcm.KindInvalid) || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%s: %v, want a refusal saying %q", name, err, c.hint)
		}
	}
	op, err := w.svc.Modify(ctx, id, []byte(`{"vnfPkgId":"`+v2.ID+`"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	done := w.wait(op.ID, model.StateCompleted)
	want := map[string]any{"vnfPkgId": v2.ID, "vnfdId": v2.Vnfd.ID, "vnfProductName": "Sample K8s v2", "vnfSoftwareVersion": "2.0", "vnfdVersion": "2.1"}
	if !reflect.DeepEqual(done.ChangedInfo, want) {
		t.Errorf("changedInfo %v, want %v", done.ChangedInfo, want)
	}
	in := w.mustInst(id)
	if in.VnfPkgID != v2.ID || in.VnfdID != v2.Vnfd.ID || in.VnfProductName != "Sample K8s v2" || in.VnfSoftwareVersion != "2.0" || in.VnfdVersion != "2.1" || in.VnfProvider != "Company" {
		t.Fatalf("after moving to package %s: %+v", v2.ID, in.VnfInstance)
	}

	// Back by vnfdId; then, instantiated, a VNFD without its flavour is refused.
	op, err = w.svc.Modify(ctx, id, []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
	if in := w.mustInst(id); in.VnfPkgID != lcmtest.PackageID || in.VnfdVersion != "1.0" {
		t.Fatalf("after moving back by vnfdId: %+v", in.VnfInstance)
	}
	op, err = w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
	if _, err := w.svc.Modify(ctx, id, []byte(`{"vnfdId":"`+other.Vnfd.ID+`"}`), 0); !isKind(err, lcm.KindInvalid) || !strings.Contains(err.Error(), `"simple"`) {
		t.Fatalf("moving an instance instantiated with flavour simple to a VNFD without it: %v, want a refusal naming the flavour", err)
	}
}

func TestLeaseFencing(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.instance()
	op, _ := w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
	claimed, err := w.st.Claim(ctx, "dead-engine", time.Second)
	if err != nil || claimed == nil || claimed.ID != op.ID {
		t.Fatalf("claim: %v %v", err, claimed)
	}
	if again, _ := w.st.Claim(ctx, "other", time.Second); again != nil {
		t.Fatal("a leased op was claimed twice")
	}
	w.engine(time.Second, nil)
	w.wait(op.ID, model.StateCompleted)
	if err := w.st.JournalEnd(ctx, "dead-engine", store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: "x", State: "COMPLETED"}, nil); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale journal write: %v", err)
	}
	if _, err := w.st.FinishOp(ctx, op.ID, "dead-engine", store.Finish{State: model.StateFailedTemp}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale finish: %v", err)
	}
	if _, _, err := w.st.Heartbeat(ctx, op.ID, "dead-engine", time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale heartbeat: %v", err)
	}
}

func TestValidation(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.instance()
	cases := []struct {
		name string
		call func() error
		kind lcm.Kind
		want string
	}{
		{"unknown vnfd", func() error {
			_, err := w.svc.CreateInstance(ctx, []byte(`{"vnfdId":"00000000-0000-0000-0000-000000000000"}`))
			return err
		}, lcm.KindUnprocessable, "no VNF package"},
		{"unknown flavour", func() error {
			_, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"big"}`))
			return err
		}, lcm.KindInvalid, "simple"},
		{"unknown level", func() error {
			_, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"simple","instantiationLevelId":"x"}`))
			return err
		}, lcm.KindInvalid, "instantiationLevelId"},
		{"unknown vim type", func() error {
			_, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"nope"}]}`))
			return err
		}, lcm.KindInvalid, "nope"},
		{"bad terminationType", func() error {
			_, err := w.svc.Terminate(ctx, id, []byte(`{"terminationType":"SOFT"}`))
			return err
		}, lcm.KindInvalid, "FORCEFUL"},
		{"scale not instantiated", func() error {
			_, err := w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_OUT","aspectId":"worker_aspect"}`))
			return err
		}, lcm.KindConflict, "NOT_INSTANTIATED"},
		{"missing instance", func() error {
			_, err := w.svc.Heal(ctx, "6f1e2d3c-0000-4000-8000-000000000000", []byte(`{}`))
			return err
		}, lcm.KindNotFound, "does not exist"},
		{"malformed id", func() error { _, err := w.svc.GetOpOcc(ctx, "../etc"); return err }, lcm.KindNotFound, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !isKind(err, c.kind) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v; want kind %d mentioning %q", err, c.kind, c.want)
			}
		})
	}
}

func TestInstantiateValidatesExtCpds(t *testing.T) {
	w := newWorld(t)
	pkg := lcmtest.SamplePackage()
	pkg.Vnfd.Flavours["simple"].ExtCPs = map[string]*model.ExtCP{"master_ext_cp": {}, "worker_ext_cp": {}}
	if err := w.st.PutPackage(context.Background(), pkg); err != nil {
		t.Fatal(err)
	}
	id := w.instance()
	_, err := w.svc.Instantiate(context.Background(), id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}],
		"extVirtualLinks":[{"id":"net0","resourceId":"n","extCps":[{"cpdId":"nope"}]}]}`))
	if !isKind(err, lcm.KindInvalid) || !strings.Contains(err.Error(), "master_ext_cp, worker_ext_cp") {
		t.Fatalf("unknown cpdId: %v", err)
	}
	if _, err := w.svc.Instantiate(context.Background(), id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}],
		"extVirtualLinks":[{"id":"net0","resourceId":"n","extCps":[{"cpdId":"worker_ext_cp"}]}]}`)); err != nil {
		t.Fatalf("known cpdId refused: %v", err)
	}
}

// The engine runs as many ready operations at once as VNFM_WORKERS allows,
// claiming them in batches, and never more: with a bound of 12, twelve slow
// instantiations all run at the same time and a thirteenth waits for a slot.
func TestEngineRunsUpToWorkersAtOnce(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const bound = 12
	var ops []string
	for range bound + 1 {
		op, err := w.svc.Instantiate(ctx, w.instance(), instantiateBody(`{"delayMs":500}`))
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op.ID)
	}
	w.engineN(bound, 5*time.Second, nil)
	for _, id := range ops {
		w.wait(id, model.StateCompleted)
	}
	j, err := w.st.Journal(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end time.Time }
	spans := map[string]span{}
	for _, id := range ops {
		for _, e := range j[id] {
			if e.Step == "infra.instantiate" && e.Node == "" && e.StartTime != nil && e.EndTime != nil {
				spans[id] = span{*e.StartTime, *e.EndTime}
			}
		}
		if _, ok := spans[id]; !ok {
			t.Fatalf("op %s has no infra.instantiate step in its journal: %+v", id, j[id])
		}
	}
	// The first bound operations (in order of creation, as claimed) overlap;
	// the last starts only after one of them has ended.
	var lastStart, firstEnd time.Time
	for _, id := range ops[:bound] {
		if s := spans[id]; lastStart.IsZero() || s.start.After(lastStart) {
			lastStart = s.start
		}
		if s := spans[id]; firstEnd.IsZero() || s.end.Before(firstEnd) {
			firstEnd = s.end
		}
	}
	if !lastStart.Before(firstEnd) {
		t.Fatalf("the first %d operations did not run at once: the last started at %v, the first ended at %v", bound, lastStart, firstEnd)
	}
	if extra := spans[ops[bound]]; extra.start.Before(firstEnd) {
		t.Fatalf("operation %d started at %v, before any of the first %d ended (%v): more than %d ran at once",
			bound+1, extra.start, bound, firstEnd, bound)
	}
}

// Rows older builds wrote with changedInfo's VIM password in plain text are
// sealed at their place by the task migration 0016 queues, once; sealed
// values stay as they were, and the task leaves the queue.
func TestPendingTaskSealsOldChangedInfo(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	op, err := w.svc.Modify(ctx, id, []byte(`{"metadata":{"k":"v"}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
	current, err := w.svc.Modify(ctx, id, []byte(`{"vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`","accessInfo":{"username":"u","password":"pw-now"}}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	w.wait(current.ID, model.StateCompleted)
	stored := func(opID string) string {
		t.Helper()
		var s string
		if err := w.st.Pool().QueryRow(ctx, `SELECT changed_info::text FROM vnf_lcm_op_occs WHERE id=$1`, opID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := stored(current.ID)
	// What a build before 35ea10f stored.
	old := `{"vimConnectionInfo": [{"id": "v", "vimType": "` + lcmtest.VimType + `", "accessInfo": {"password": "pw-old-123", "username": "u"}}]}`
	if _, err := w.st.Pool().Exec(ctx, `UPDATE vnf_lcm_op_occs SET changed_info=$2::jsonb WHERE id=$1`, op.ID, old); err != nil {
		t.Fatal(err)
	}
	if tasks, err := w.st.PendingTasks(ctx); err != nil || !slices.Contains(tasks, store.TaskSealChangedInfo) {
		t.Fatalf("pending tasks %v (%v), want %s queued by the migration", tasks, err, store.TaskSealChangedInfo)
	}
	if err := w.svc.RunPendingTasks(ctx); err != nil {
		t.Fatal(err)
	}
	sealed := stored(op.ID)
	if strings.Contains(sealed, "pw-old-123") || !strings.Contains(sealed, "enc:v3") || !strings.Contains(sealed, `"username": "u"`) {
		t.Fatalf("changedInfo after the task: %s", sealed)
	}
	opened, err := w.cfg.Box.OpenJSON([]byte(sealed), store.OpPlace(op.ID, "changed_info"))
	var ci struct{ VimConnectionInfo []model.VimConnectionInfo }
	if err == nil {
		err = json.Unmarshal(opened, &ci)
	}
	if err != nil || len(ci.VimConnectionInfo) != 1 || ci.VimConnectionInfo[0].AccessInfo["password"] != "pw-old-123" {
		t.Fatalf("the sealed value does not open at its place: %s %v", opened, err)
	}
	if after := stored(current.ID); after != before {
		t.Errorf("a row sealed already changed:\n%s\n%s", before, after)
	}
	if tasks, err := w.st.PendingTasks(ctx); err != nil || len(tasks) != 0 {
		t.Fatalf("pending tasks after the run: %v %v", tasks, err)
	}
	if err := w.svc.RunPendingTasks(ctx); err != nil || stored(op.ID) != sealed {
		t.Fatalf("a second run: %v", err)
	}
}

// An operation after the instantiation hands its management driver the
// parameters the instance's last completed instantiation accepted (read
// with the instance, their secrets open); the instantiation itself is
// handed none.
func TestLaterOperationsStartFromTheInstantiationsParams(t *testing.T) {
	w := newWorld(t)
	w.engine(5*time.Second, nil)
	ctx := context.Background()
	id := w.instance()
	passwords := func() []string {
		var out []string
		for _, p := range w.mgmt.Stored() {
			if p == nil {
				out = append(out, "<none>")
			} else {
				out = append(out, p.Password)
			}
		}
		return out
	}
	run := func(op *store.OpOcc, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		w.wait(op.ID, model.StateCompleted)
	}
	run(w.svc.Instantiate(ctx, id, instantiateBody(`{}`)))
	run(w.svc.Terminate(ctx, id, []byte(`{"terminationType":"FORCEFUL"}`)))
	second := bytes.Replace(instantiateBody(`{}`), []byte("node-pass-456"), []byte("node-pass-789"), 1)
	run(w.svc.Instantiate(ctx, id, second))
	run(w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_OUT","aspectId":"worker_aspect"}`)))
	run(w.svc.Terminate(ctx, id, []byte(`{"terminationType":"FORCEFUL"}`)))
	want := []string{"<none>", "node-pass-456", "<none>", "node-pass-789", "node-pass-789"}
	if got := passwords(); !slices.Equal(got, want) {
		t.Fatalf("stored parameters handed to the driver: %q, want %q", got, want)
	}
}
