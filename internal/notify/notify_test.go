package notify_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/apitest"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/notify"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// receiver is an NFVO notification endpoint on loopback that can be "down".
type receiver struct {
	srv   *httptest.Server
	down  atomic.Bool
	mu    sync.Mutex
	got   []map[string]any
	seen  map[string]bool
	auths []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{seen: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if req.Method == http.MethodGet {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		b, _ := io.ReadAll(req.Body)
		var n map[string]any
		if err := json.Unmarshal(b, &n); err != nil {
			t.Errorf("notification is not JSON: %s", b)
		}
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		key := n["id"].(string) + "/" + n["subscriptionId"].(string)
		if !r.seen[key] { // at-least-once: de-duplicate by notification id
			r.seen[key] = true
			r.got = append(r.got, n)
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) notifications() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.got...)
}

type world struct {
	st      *store.Store
	svc     *lcm.Service
	subs    *notify.Subscriptions
	metrics *metrics.Metrics
}

func setup(t *testing.T) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := storetest.Open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	box := storetest.NewBox(t)
	log := slog.New(slog.DiscardHandler)
	cfg := lcm.Config{Store: st, Box: box, Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Infra: lcmtest.Resolver(&lcmtest.Infra{}), Logger: log}
	eng := lcm.NewEngine(lcm.EngineConfig{Config: cfg, Workers: 2, Lease: 5 * time.Second, Poll: 100 * time.Millisecond})
	m := metrics.New(nil, log)
	n := notify.New(notify.Config{Store: st, Box: box, BaseURL: "http://vnfm.example", Logger: log, Metrics: m,
		BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond, Poll: 50 * time.Millisecond, Timeout: 2 * time.Second,
		Outbound: outboundtest.Policy(0)})
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	wg.Go(func() { n.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &world{st: st, svc: lcm.NewService(cfg), subs: notify.NewSubscriptions(n, true), metrics: m}
}

func (w *world) run(t *testing.T, f func() (*store.OpOcc, error)) {
	t.Helper()
	op, err := f()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cur, _ := w.st.GetOpOcc(context.Background(), op.ID)
		if cur.OperationState == model.StateCompleted {
			return
		}
		if cur.OperationState == model.StateFailedTemp || time.Now().After(deadline) {
			t.Fatalf("op %s: %s %+v", op.Operation, cur.OperationState, cur.Error)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitFor(t *testing.T, r *receiver, n int, within time.Duration) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := r.notifications()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d notifications, want %d", len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lifecycle runs create, instantiate, scale out, heal, terminate and delete.
func lifecycle(t *testing.T, w *world) string {
	ctx := context.Background()
	in, err := w.svc.CreateInstance(ctx, []byte(`{"vnfdId":"`+lcmtest.VnfdID+`","vnfInstanceName":"k8s"}`))
	if err != nil {
		t.Fatal(err)
	}
	id := in.ID
	w.run(t, func() (*store.OpOcc, error) {
		return w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}]}`))
	})
	w.run(t, func() (*store.OpOcc, error) {
		return w.svc.Scale(ctx, id, []byte(`{"type":"SCALE_OUT","aspectId":"worker_aspect"}`))
	})
	w.run(t, func() (*store.OpOcc, error) { return w.svc.Heal(ctx, id, []byte(`{}`)) })
	w.run(t, func() (*store.OpOcc, error) {
		return w.svc.Terminate(ctx, id, []byte(`{"terminationType":"FORCEFUL"}`))
	})
	if err := w.svc.DeleteInstance(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// expected is the notification sequence of lifecycle, as "type/operation/state".
var expected = []string{
	"VnfIdentifierCreationNotification//",
	"op/INSTANTIATE/STARTING", "op/INSTANTIATE/PROCESSING", "op/INSTANTIATE/COMPLETED",
	"op/SCALE/STARTING", "op/SCALE/PROCESSING", "op/SCALE/COMPLETED",
	"op/HEAL/STARTING", "op/HEAL/PROCESSING", "op/HEAL/COMPLETED",
	"op/TERMINATE/STARTING", "op/TERMINATE/PROCESSING", "op/TERMINATE/COMPLETED",
	"VnfIdentifierDeletionNotification//",
}

func keyOf(n map[string]any) string {
	if n["notificationType"] == "VnfLcmOperationOccurrenceNotification" {
		return "op/" + n["operation"].(string) + "/" + n["operationState"].(string)
	}
	return n["notificationType"].(string) + "//"
}

func TestNotificationsInOrderAndSchemaValid(t *testing.T) {
	w := setup(t)
	r := newReceiver(t)
	checker := apitest.NewChecker(t)
	sub, err := w.subs.Create(context.Background(), []byte(`{"callbackUri":"`+r.srv.URL+`/notify","authentication":{"authType":["BASIC"],"paramsBasic":{"userName":"nfvo","password":"nfvo-pass"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// A second subscription that wants only final results of scale operations.
	r2 := newReceiver(t)
	if _, err := w.subs.Create(context.Background(), []byte(`{"callbackUri":"`+r2.srv.URL+`","filter":{"notificationTypes":["VnfLcmOperationOccurrenceNotification"],"operationTypes":["SCALE"],"operationStates":["COMPLETED"]}}`)); err != nil {
		t.Fatal(err)
	}
	id := lifecycle(t, w)
	got := waitFor(t, r, len(expected), 10*time.Second)
	for i, n := range got {
		if k := keyOf(n); i >= len(expected) || k != expected[i] {
			t.Fatalf("notification %d is %s, want %v", i, k, expected)
		}
		if n["subscriptionId"] != sub.ID || n["vnfInstanceId"] != id {
			t.Fatalf("notification %d: %v", i, n)
		}
		b, _ := json.Marshal(n)
		checker.ValidateNotification(t, b, n["notificationType"].(string))
		if n["notificationType"] == "VnfLcmOperationOccurrenceNotification" {
			status := n["notificationStatus"]
			if (n["operationState"] == "COMPLETED") != (status == "RESULT") {
				t.Fatalf("status %v for %v", status, n["operationState"])
			}
		}
	}
	if inst := got[3]; inst["affectedVnfcs"] == nil {
		t.Fatalf("instantiate RESULT without affectedVnfcs: %v", inst)
	}
	for _, a := range r.auths {
		if a == "" {
			t.Fatal("notification sent without the subscription's BASIC credentials")
		}
	}
	only := waitFor(t, r2, 1, 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	if only = r2.notifications(); len(only) != 1 || keyOf(only[0]) != "op/SCALE/COMPLETED" {
		t.Fatalf("filtered subscription got %d: %v", len(only), only)
	}
}

func TestReceiverDownGetsEverythingLaterInOrder(t *testing.T) {
	w := setup(t)
	r := newReceiver(t)
	if _, err := w.subs.Create(context.Background(), []byte(`{"callbackUri":"`+r.srv.URL+`"}`)); err != nil {
		t.Fatal(err)
	}
	r.down.Store(true)
	lifecycle(t, w)
	time.Sleep(500 * time.Millisecond) // several failed attempts
	if n := len(r.notifications()); n != 0 {
		t.Fatalf("%d delivered while down", n)
	}
	r.down.Store(false)
	got := waitFor(t, r, len(expected), 10*time.Second)
	for i, n := range got {
		if keyOf(n) != expected[i] {
			t.Fatalf("after recovery notification %d is %s", i, keyOf(n))
		}
	}
	// The attempts are counted by result.
	attempts := func(result string) float64 {
		mfs, err := w.metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "vnfm_notification_attempts_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && l.GetValue() == result {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
	if failed, delivered := attempts("failed"), attempts("delivered"); failed < 2 || delivered < float64(len(expected)) {
		t.Fatalf("attempts counted: %v failed, %v delivered", failed, delivered)
	}
}

func TestSubscriptionCallbackTestAndDuplicates(t *testing.T) {
	w := setup(t)
	r := newReceiver(t)
	ctx := context.Background()
	body := []byte(`{"callbackUri":"` + r.srv.URL + `","filter":{"operationTypes":["HEAL","SCALE"]}}`)
	first, err := w.subs.Create(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.subs.Create(ctx, []byte(`{"callbackUri":"`+r.srv.URL+`","filter":{"operationTypes":["SCALE","HEAL"]}}`))
	if err != store.ErrDuplicateSubscription || again.ID != first.ID {
		t.Fatalf("duplicate: %v %v", err, again)
	}
	r.down.Store(true)
	var ie *notify.InvalidError
	if _, err := w.subs.Create(ctx, []byte(`{"callbackUri":"`+r.srv.URL+`/other"}`)); !asInvalid(err, &ie) || !ie.Unprocessable {
		t.Fatalf("unreachable callback accepted: %v", err)
	}
	for _, bad := range []string{`{"callbackUri":"ftp://x"}`, `{"callbackUri":"` + r.srv.URL + `","authentication":{"authType":["BASIC"]}}`} {
		if _, err := w.subs.Create(ctx, []byte(bad)); !asInvalid(err, &ie) {
			t.Fatalf("%s accepted: %v", bad, err)
		}
	}
}

func asInvalid(err error, target **notify.InvalidError) bool {
	ie, ok := err.(*notify.InvalidError)
	if ok {
		*target = ie
	}
	return ok
}

// TestRedirectsAreNotFollowed is the issue 14 reproduction: a notification
// endpoint that redirects (for the callback test or for deliveries) does
// not make the VNFM call the redirect's target, and the error says why
// without the remote's body.
func TestRedirectsAreNotFollowed(t *testing.T) {
	w := setup(t)
	ctx := context.Background()
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer target.Close()
	// Passes the callback test, then redirects every notification.
	postRedirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.Redirect(w, r, target.URL+"/internal-admin", http.StatusTemporaryRedirect)
	}))
	defer postRedirect.Close()
	// Redirects the callback test itself.
	getRedirect := httptest.NewServer(http.RedirectHandler(target.URL+"/internal-admin", http.StatusFound))
	defer getRedirect.Close()

	var ie *notify.InvalidError
	_, err := w.subs.Create(ctx, []byte(`{"callbackUri":"`+getRedirect.URL+`/cb"}`))
	if !asInvalid(err, &ie) || !ie.Unprocessable || !strings.Contains(ie.Detail, "redirects are not followed") || strings.Contains(ie.Detail, "internal-admin") {
		t.Fatalf("redirecting callback test: %v", err)
	}
	sub, err := w.subs.Create(ctx, []byte(`{"callbackUri":"`+postRedirect.URL+`/cb"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.CreateInstance(ctx, []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var attempts int
		var lastErr *string
		err := w.st.Pool().QueryRow(ctx, `SELECT attempts, last_error FROM notification_outbox WHERE subscription_id = $1 ORDER BY id LIMIT 1`, sub.ID).Scan(&attempts, &lastErr)
		if err == nil && attempts >= 2 && lastErr != nil {
			if !strings.Contains(*lastErr, "redirects are not followed") || strings.Contains(*lastErr, "internal-admin") {
				t.Fatalf("delivery error %q", *lastErr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed delivery recorded (attempts %d, err %v)", attempts, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("the redirect target was called %d times", n)
	}
}

// TestCallbackPolicy: callback URIs and token endpoints the outbound
// policy refuses are 422 at subscription time, before any connection.
func TestCallbackPolicy(t *testing.T) {
	w := setup(t)
	for _, tc := range []struct{ body, want string }{
		{`{"callbackUri":"http://169.254.169.254/latest/meta-data/"}`, "link-local"},
		{`{"callbackUri":"http://[fd00:ec2::254]/"}`, "metadata"},
		{`{"callbackUri":"http://100.100.100.200/"}`, "metadata"},
		{`{"callbackUri":"http://127.0.0.1:1/cb","authentication":{"authType":["OAUTH2_CLIENT_CREDENTIALS"],
			"paramsOauth2ClientCredentials":{"clientId":"c","clientPassword":"p","tokenEndpoint":"http://169.254.169.254/token"}}}`, "tokenEndpoint"},
	} {
		var ie *notify.InvalidError
		_, err := w.subs.Create(context.Background(), []byte(tc.body))
		if !asInvalid(err, &ie) || !ie.Unprocessable || !strings.Contains(ie.Detail, tc.want) || !strings.Contains(ie.Detail, "outbound-URL policy") {
			t.Fatalf("%s: %v", tc.body, err)
		}
	}
}

// TestRemoteTextIsNotRepeated: an endpoint's own reason phrase and body do
// not come back in the error (the standard reason phrase does).
func TestRemoteTextIsNotRepeated(t *testing.T) {
	w := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("HTTP/1.1 403 internal-db.corp:5432 said no\r\nContent-Length: 22\r\nConnection: close\r\n\r\ninternal-db.corp body\n"))
			}()
		}
	}()
	var ie *notify.InvalidError
	_, err = w.subs.Create(context.Background(), []byte(`{"callbackUri":"http://`+ln.Addr().String()+`/cb"}`))
	if !asInvalid(err, &ie) || !strings.Contains(ie.Detail, "403 Forbidden") || strings.Contains(ie.Detail, "internal-db") {
		t.Fatalf("err %v", err)
	}
}
