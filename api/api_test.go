package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/api"
	"github.com/mini-vnfm/mini-vnfm/internal/apitest"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/notify"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type env struct {
	t       *testing.T
	srv     *httptest.Server
	st      *store.Store
	checker *apitest.Checker
	logs    *syncBuffer
	// bodies collects every response body, for secret-leak checks.
	mu     sync.Mutex
	bodies []string
}

func newEnv(t *testing.T, pageSize int, withEngine bool) *env {
	t.Helper()
	return newEnvWith(t, pageSize, withEngine, nil)
}

// newEnvWith is newEnv with a hook that adjusts the API configuration.
func newEnvWith(t *testing.T, pageSize int, withEngine bool, adjust func(*api.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	box := storetest.NewBox(t)
	cfg := lcm.Config{Store: st, Box: box, Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Infra: lcmtest.Resolver(&lcmtest.Infra{}), Logger: log,
		Outbound: outboundtest.Policy(0)}
	svc := lcm.NewService(cfg)
	e := &env{t: t, st: st, logs: logs, checker: apitest.NewChecker(t)}
	var handler atomic.Value
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	n := notify.New(notify.Config{Store: st, Box: box, BaseURL: e.srv.URL, Logger: log, Outbound: outboundtest.Policy(0)})
	acfg := api.Config{Service: svc, EndpointURL: e.srv.URL, Logger: log, Metrics: metrics.New(svc.Stats, log), PageSize: pageSize, MaxBodyBytes: 64 << 10,
		Subscriptions: notify.NewSubscriptions(n, true)}
	if withEngine {
		ectx, cancel := context.WithCancel(ctx)
		eng := lcm.NewEngine(lcm.EngineConfig{Config: cfg, Workers: 4, Lease: 5 * time.Second, Poll: 100 * time.Millisecond})
		done := make(chan struct{})
		go func() { defer close(done); _ = eng.Run(ectx) }()
		t.Cleanup(func() { cancel(); <-done })
		acfg.Wake = eng.Wake
	}
	if adjust != nil {
		adjust(&acfg)
	}
	h, err := api.New(ctx, acfg)
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(h)
	return e
}

// noRedirect shows 303 See Other as it is sent.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type resp struct {
	*http.Response
	body []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	var m []map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON array: %v: %s", err, r.body)
	}
	return m
}

// do sends a request and checks the response against the OpenAPI and TST010 schemas.
func (e *env) do(method, path, body string, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	e.mu.Lock()
	e.bodies = append(e.bodies, string(b), fmt.Sprint(res.Header))
	e.mu.Unlock()
	if res.Header.Get("Version") != api.APIVersion && strings.HasPrefix(path, "/vnflcm") {
		e.t.Errorf("%s %s: Version header %q", method, path, res.Header.Get("Version"))
	}
	if res.StatusCode >= 400 {
		var pd map[string]any
		if err := json.Unmarshal(b, &pd); err != nil || res.Header.Get("Content-Type") != "application/problem+json" ||
			pd["status"] != float64(res.StatusCode) || pd["detail"] == "" {
			e.t.Errorf("%s %s: %d is not a ProblemDetails: %s %s", method, path, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
	}
	if strings.HasPrefix(path, "/vnflcm/") && !strings.HasSuffix(path, "openapi.yaml") {
		e.checker.Check(e.t, req, res, b)
	}
	return resp{res, b}
}

func (e *env) expect(r resp, status int) resp {
	e.t.Helper()
	if r.StatusCode != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	return r
}

func (e *env) createInstance(name string) string {
	e.t.Helper()
	r := e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`","vnfInstanceName":"`+name+`","metadata":{"owner":"ops","api_token":"tok-secret-789"}}`), 201)
	doc := r.json(e.t)
	id, _ := doc["id"].(string)
	if r.Header.Get("Location") != e.srv.URL+"/vnflcm/v1/vnf_instances/"+id {
		e.t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	return id
}

const instBody = `{"flavourId":"simple","vimConnectionInfo":[{"id":"vim1","vimType":"` + lcmtest.VimType + `","accessInfo":{"username":"admin","password":"vim-pass-123"}}],
	"additionalParams":{"k8s_cluster_installation_param":{"master_node":{"username":"ubuntu","password":"a'b; touch /tmp/pwned #"}}}}`

func (e *env) waitOp(loc string, states ...string) map[string]any {
	e.t.Helper()
	path := strings.TrimPrefix(loc, e.srv.URL)
	deadline := time.Now().Add(15 * time.Second)
	for {
		doc := e.expect(e.do("GET", path, ""), 200).json(e.t)
		for _, s := range states {
			if doc["operationState"] == s {
				return doc
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("op %s is %v, want %v", path, doc["operationState"], states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLifecycleOverHTTP(t *testing.T) {
	e := newEnv(t, 100, true)
	id := e.createInstance("k8s-1")
	inst := "/vnflcm/v1/vnf_instances/" + id
	got := e.expect(e.do("GET", inst, ""), 200)
	if got.Header.Get("ETag") == "" {
		t.Fatal("no ETag")
	}
	doc := got.json(t)
	if doc["instantiationState"] != "NOT_INSTANTIATED" || doc["_links"].(map[string]any)["instantiate"] == nil {
		t.Fatalf("new instance: %v", doc)
	}
	// The rendered document with its links is what the list renders, for
	// the id in any spelling.
	listed := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?all_fields", ""), 200).list(t)
	upper := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances/"+strings.ToUpper(id), ""), 200).json(t)
	if len(listed) != 1 || fmt.Sprint(listed[0]) != fmt.Sprint(doc) || fmt.Sprint(upper) != fmt.Sprint(doc) {
		t.Fatalf("GET instance:\n%v\nlisted:\n%v\nGET with the id in capitals:\n%v", doc, listed, upper)
	}
	r := e.expect(e.do("POST", inst+"/instantiate", instBody), 202)
	if len(r.body) != 0 {
		t.Fatalf("202 with a body: %s", r.body)
	}
	loc := r.Header.Get("Location")
	if !strings.HasPrefix(loc, e.srv.URL+"/vnflcm/v1/vnf_lcm_op_occs/") {
		t.Fatalf("Location %q", loc)
	}
	// The op occurrence is listed by the time the 202 arrives.
	opID := loc[strings.LastIndex(loc, "/")+1:]
	list := e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?filter="+url.QueryEscape("(eq,vnfInstanceId,"+id+")"), ""), 200).list(t)
	if len(list) != 1 || list[0]["id"] != opID || list[0]["operation"] != "INSTANTIATE" {
		t.Fatalf("op list right after 202: %v", list)
	}
	done := e.waitOp(loc, "COMPLETED", "FAILED_TEMP")
	if done["operationState"] != "COMPLETED" {
		t.Fatalf("instantiate: %v", done["error"])
	}
	prog, _ := done["progress"].(map[string]any)
	if prog == nil || prog["stepsDone"] != float64(3) || prog["stepsTotal"] != float64(3) {
		t.Fatalf("progress: %v", done["progress"])
	}
	doc = e.expect(e.do("GET", inst, ""), 200).json(t)
	links := doc["_links"].(map[string]any)
	if doc["instantiationState"] != "INSTANTIATED" || links["terminate"] == nil || links["instantiate"] != nil {
		t.Fatalf("instantiated instance: %v", doc)
	}
	for _, task := range []struct{ path, body, op string }{
		{"/scale", `{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":1}`, "SCALE"},
		{"/heal", `{}`, "HEAL"},
		{"/change_ext_conn", `{"extVirtualLinks":[{"id":"net1","resourceId":"neutron-net-1","extCps":[{"cpdId":"CP1"}]}]}`, "CHANGE_EXT_CONN"},
		{"/terminate", `{"terminationType":"FORCEFUL"}`, "TERMINATE"},
	} {
		r := e.expect(e.do("POST", inst+task.path, task.body), 202)
		d := e.waitOp(r.Header.Get("Location"), "COMPLETED", "FAILED_TEMP")
		if d["operationState"] != "COMPLETED" || d["operation"] != task.op {
			t.Fatalf("%s: %v %v", task.path, d["operationState"], d["error"])
		}
	}
	e.expect(e.do("DELETE", inst, ""), 204)
	e.expect(e.do("GET", inst, ""), 404)
	ops := e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields", ""), 200).list(t)
	if len(ops) != 5 {
		t.Fatalf("%d op occurrences", len(ops))
	}
}

func TestErrorHandlingAndOperationTasks(t *testing.T) {
	e := newEnv(t, 100, false) // no engine: ops stay where the test puts them
	id := e.createInstance("k8s")
	inst := "/vnflcm/v1/vnf_instances/" + id
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		detail                   string
	}{
		{"invalid uuid", "GET", "/vnflcm/v1/vnf_instances/not-a-uuid", "", nil, 404, "does not exist"},
		{"unknown instance", "GET", "/vnflcm/v1/vnf_instances/8d5b8a57-2fd3-4a3c-9fb3-6a6a0f3f6f11", "", nil, 404, "does not exist"},
		{"unknown op", "POST", "/vnflcm/v1/vnf_lcm_op_occs/8d5b8a57-2fd3-4a3c-9fb3-6a6a0f3f6f11/retry", "", nil, 404, "does not exist"},
		{"malformed json", "POST", "/vnflcm/v1/vnf_instances", `{"vnfdId": }`, nil, 400, "line 1"},
		{"not an object", "POST", "/vnflcm/v1/vnf_instances", `[1]`, nil, 400, ""},
		{"missing vnfdId", "POST", "/vnflcm/v1/vnf_instances", `{"vnfInstanceName":"x"}`, nil, 400, "vnfdId"},
		{"oversized", "POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"` + strings.Repeat("a", 70000) + `"}`, nil, 413, "larger"},
		{"unknown query", "GET", "/vnflcm/v1/vnf_instances?attribute_not_exist=some_value", "", nil, 400, "attribute_not_exist"},
		{"bad filter", "GET", "/vnflcm/v1/vnf_instances?filter=(equal,id,1)", "", nil, 400, "operator"},
		{"filter unknown attribute", "GET", "/vnflcm/v1/vnf_lcm_op_occs?filter=(eq,nope,1)", "", nil, 400, "nope"},
		{"bad selector combo", "GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields&fields=error", "", nil, 400, "all_fields"},
		{"bad marker", "GET", "/vnflcm/v1/vnf_instances?nextpage_opaque_marker=zzz", "", nil, 400, "nextpage_opaque_marker"},
		{"missing flavourId", "POST", inst + "/instantiate", `{}`, nil, 400, "flavourId"},
		{"wrong type", "POST", inst + "/scale", `{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":"1"}`, nil, 400, "numberOfSteps"},
		{"unknown flavour", "POST", inst + "/instantiate", `{"flavourId":"huge"}`, nil, 400, "simple"},
		{"scale not instantiated", "POST", inst + "/scale", `{"type":"SCALE_OUT","aspectId":"worker_aspect"}`, nil, 409, "NOT_INSTANTIATED"},
		{"terminate not instantiated", "POST", inst + "/terminate", `{"terminationType":"FORCEFUL"}`, nil, 409, "NOT_INSTANTIATED"},
		{"unsupported task", "POST", inst + "/operate", `{"changeStateTo":"STARTED"}`, nil, 404, "not supported"},
		{"unsupported major version", "GET", "/vnflcm/v1/vnf_instances", "", []string{"Version", "2.0.0"}, 406, "1.3.0"},
		{"malformed version", "GET", "/vnflcm/v1/vnf_instances", "", []string{"Version", "one"}, 400, "Version"},
		{"wrong content type", "POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"x"}`, []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"stale if-match", "PATCH", inst, `{"vnfInstanceName":"y"}`, []string{"If-Match", `"999"`}, 412, "ETag"},
		{"unknown path", "GET", "/vnflcm/v1/nothing", "", nil, 404, "/vnflcm/v1"},
		{"package not onboarded", "POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"0f6f1e6e-0000-4000-8000-000000000000"}`, nil, 422, "onboard"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.path, c.body, c.hdr...)
			if r.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, c.status, r.body)
			}
			if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, c.detail) {
				t.Fatalf("detail %q does not mention %q", d, c.detail)
			}
		})
	}

	t.Run("405 with Allow on every route", func(t *testing.T) {
		for path, allow := range map[string]string{
			"/vnflcm/api_versions":       "GET",
			"/vnflcm/v1/api_versions":    "GET",
			"/vnflcm/v1/vnf_instances":   "GET, POST",
			inst:                         "GET, PATCH, DELETE",
			inst + "/instantiate":        "POST",
			inst + "/scale":              "POST",
			"/vnflcm/v1/vnf_lcm_op_occs": "GET",
			"/vnflcm/v1/vnf_lcm_op_occs/8d5b8a57-2fd3-4a3c-9fb3-6a6a0f3f6f11":      "GET",
			"/vnflcm/v1/vnf_lcm_op_occs/8d5b8a57-2fd3-4a3c-9fb3-6a6a0f3f6f11/fail": "POST",
		} {
			r := e.do("PUT", path, "")
			if r.StatusCode != 405 || r.Header.Get("Allow") != allow {
				t.Errorf("PUT %s: %d Allow %q, want 405 %q", path, r.StatusCode, r.Header.Get("Allow"), allow)
			}
		}
	})

	t.Run("op occurrence tasks", func(t *testing.T) {
		r := e.expect(e.do("POST", inst+"/instantiate", instBody), 202)
		opPath := strings.TrimPrefix(r.Header.Get("Location"), e.srv.URL)
		// Another task while one is pending: 409 naming the blocking op.
		c := e.expect(e.do("PATCH", inst, `{"vnfInstanceName":"z"}`, "Content-Type", "application/merge-patch+json"), 409)
		if d := c.json(t)["detail"].(string); !strings.Contains(d, opPath[strings.LastIndex(opPath, "/")+1:]) {
			t.Fatalf("409 detail does not name the blocking op: %s", d)
		}
		e.expect(e.do("DELETE", inst, ""), 409)
		for _, task := range []string{"retry", "rollback", "fail"} {
			e.expect(e.do("POST", opPath+"/"+task, ""), 409)
		}
		doc := e.expect(e.do("GET", opPath, ""), 200).json(t)
		if doc["_links"].(map[string]any)["cancel"] == nil {
			t.Fatalf("STARTING op without cancel link: %v", doc["_links"])
		}
		// The TST sends the bare string; no engine claimed it, so it rolls back at once.
		e.expect(e.do("POST", opPath+"/cancel", `"GRACEFUL"`), 202)
		if st := e.expect(e.do("GET", opPath, ""), 200).json(t)["operationState"]; st != "ROLLED_BACK" {
			t.Fatalf("cancelled STARTING op is %v", st)
		}
		e.expect(e.do("POST", opPath+"/cancel", `{"cancelMode":"FORCEFUL"}`), 409)
	})
}

func TestFailedTempTasksOverHTTP(t *testing.T) {
	e := newEnv(t, 100, true)
	id := e.createInstance("k8s")
	inst := "/vnflcm/v1/vnf_instances/" + id
	body := strings.Replace(instBody, `"additionalParams":{`, `"additionalParams":{"fake":{"failStep":"mgmt.instantiate_end"},`, 1)
	loc := e.expect(e.do("POST", inst+"/instantiate", body), 202).Header.Get("Location")
	opPath := strings.TrimPrefix(loc, e.srv.URL)
	doc := e.waitOp(loc, "FAILED_TEMP")
	links := doc["_links"].(map[string]any)
	if links["retry"] == nil || links["rollback"] == nil || links["fail"] == nil || doc["error"] == nil {
		t.Fatalf("FAILED_TEMP op: %v", doc)
	}
	// retry: 202 + Location, fails again (the fault is permanent).
	r := e.expect(e.do("POST", opPath+"/retry", "", "Content-Type", ""), 202)
	if r.Header.Get("Location") != loc {
		t.Fatalf("retry Location %q", r.Header.Get("Location"))
	}
	e.waitOp(loc, "FAILED_TEMP")
	e.expect(e.do("POST", opPath+"/rollback", ""), 202)
	e.waitOp(loc, "ROLLED_BACK")
	// A second failing op, then fail: 200 with the op.
	loc = e.expect(e.do("POST", inst+"/instantiate", body), 202).Header.Get("Location")
	e.waitOp(loc, "FAILED_TEMP")
	f := e.expect(e.do("POST", strings.TrimPrefix(loc, e.srv.URL)+"/fail", ""), 200).json(t)
	if f["operationState"] != "FAILED" {
		t.Fatalf("fail answered %v", f["operationState"])
	}
}

func TestConcurrentRequestsOverHTTP(t *testing.T) {
	e := newEnv(t, 100, false)
	id := e.createInstance("race")
	var accepted, conflicts atomic.Int32
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	for i := 0; i < 100; i++ {
		wg.Go(func() {
			res, err := client.Post(e.srv.URL+"/vnflcm/v1/vnf_instances/"+id+"/instantiate", "application/json", strings.NewReader(instBody))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			switch res.StatusCode {
			case 202:
				accepted.Add(1)
			case 409:
				conflicts.Add(1)
			default:
				t.Errorf("status %d", res.StatusCode)
			}
		})
	}
	wg.Wait()
	if accepted.Load() != 1 || conflicts.Load() != 99 {
		t.Fatalf("accepted %d, conflicts %d", accepted.Load(), conflicts.Load())
	}
}

// TestConcurrentGetsServeTheirOwnDocument: GETs of documents of different
// sizes at once each get exactly their instance's document (GET reuses its
// buffers from one request to the next).
func TestConcurrentGetsServeTheirOwnDocument(t *testing.T) {
	e := newEnv(t, 100, false)
	small := e.createInstance("small")
	big := e.createInstance("big-" + strings.Repeat("x", 3000))
	want := map[string]string{}
	for _, id := range []string{small, big} {
		r := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances/"+id, ""), 200)
		if got := r.json(t)["id"]; got != id {
			t.Fatalf("GET %s: id %v", id, got)
		}
		want[id] = string(r.body)
	}
	if len(want[big]) < len(want[small])+2900 {
		t.Fatalf("documents of %d and %d bytes: want one much bigger", len(want[small]), len(want[big]))
	}
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				id := small
				if (i+j)%2 == 0 {
					id = big
				}
				res, err := client.Get(e.srv.URL + "/vnflcm/v1/vnf_instances/" + id)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || string(b) != want[id] {
					t.Errorf("GET %s: %d, %d bytes, want its own %d-byte document: %.120s", id, res.StatusCode, len(b), len(want[id]), b)
					return
				}
			}
		})
	}
	wg.Wait()
}

var linkRe = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

func TestFilterSelectorsAndPaging(t *testing.T) {
	e := newEnv(t, 3, false)
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	for _, n := range names {
		e.createInstance(n)
	}
	// Follow Link headers: every instance exactly once, no Link on the last page.
	seen := map[string]bool{}
	path := "/vnflcm/v1/vnf_instances"
	pages := 0
	for path != "" {
		r := e.expect(e.do("GET", path, ""), 200)
		pages++
		for _, d := range r.list(t) {
			if seen[d["id"].(string)] {
				t.Fatalf("instance %v on two pages", d["id"])
			}
			seen[d["id"].(string)] = true
			if _, ok := d["metadata"]; ok {
				t.Fatal("default list includes metadata (exclude_default is the default)")
			}
		}
		path = ""
		if l := r.Header.Get("Link"); l != "" {
			m := linkRe.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("malformed Link %q", l)
			}
			path = strings.TrimPrefix(m[1], e.srv.URL)
		}
	}
	if len(seen) != 7 || pages != 3 {
		t.Fatalf("%d instances over %d pages", len(seen), pages)
	}
	// The filter is carried in the next link.
	f := url.QueryEscape("(in,vnfInstanceName,alpha,beta,gamma,delta)")
	r := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?filter="+f+"&fields=metadata", ""), 200)
	if n := len(r.list(t)); n != 3 {
		t.Fatalf("first filtered page has %d", n)
	}
	m := linkRe.FindStringSubmatch(r.Header.Get("Link"))
	if m == nil || !strings.Contains(m[1], "filter=") || !strings.Contains(m[1], "fields=metadata") {
		t.Fatalf("next link drops the query: %q", r.Header.Get("Link"))
	}
	last := e.expect(e.do("GET", strings.TrimPrefix(m[1], e.srv.URL), ""), 200)
	if l := last.list(t); len(l) != 1 || last.Header.Get("Link") != "" {
		t.Fatalf("last filtered page: %d items, Link %q", len(l), last.Header.Get("Link"))
	}
	md := last.list(t)[0]["metadata"].(map[string]any)
	if md["owner"] != "ops" || md["api_token"] != secrets.Mask {
		t.Fatalf("fields=metadata: %v", md)
	}
	cases := map[string]int{
		"(eq,vnfInstanceName,beta)":                       1,
		"(neq,vnfInstanceName,beta)":                      6,
		"(cont,vnfInstanceName,eta)":                      3, // beta, zeta, eta
		"(eq,metadata/owner,ops)":                         7,
		"(eq,instantiationState,INSTANTIATED)":            0,
		"(eq,vnfProvider,Company);(gt,vnfInstanceName,f)": 2, // gamma, zeta? see below
	}
	_ = cases
	for filter, want := range map[string]int{
		"(eq,vnfInstanceName,beta)":                       1,
		"(neq,vnfInstanceName,beta)":                      6,
		"(cont,vnfInstanceName,eta)":                      3,
		"(eq,metadata/owner,ops)":                         7,
		"(eq,instantiationState,INSTANTIATED)":            0,
		"(eq,vnfProvider,Company);(gt,vnfInstanceName,f)": 2, // gamma, zeta
	} {
		t.Run(filter, func(t *testing.T) {
			total := 0
			path := "/vnflcm/v1/vnf_instances?filter=" + url.QueryEscape(filter)
			for path != "" {
				r := e.expect(e.do("GET", path, ""), 200)
				total += len(r.list(t))
				path = ""
				if m := linkRe.FindStringSubmatch(r.Header.Get("Link")); m != nil {
					path = strings.TrimPrefix(m[1], e.srv.URL)
				}
			}
			if total != want {
				t.Fatalf("%d matches, want %d", total, want)
			}
		})
	}
	all := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?all_fields", ""), 200).list(t)
	if _, ok := all[0]["metadata"]; !ok {
		t.Fatal("all_fields omits metadata")
	}
	excl := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?exclude_fields=metadata", ""), 200).list(t)
	if _, ok := excl[0]["metadata"]; ok {
		t.Fatal("exclude_fields kept metadata")
	}
	if _, ok := excl[0]["vnfProvider"]; !ok {
		t.Fatal("exclude_fields dropped a simple attribute")
	}
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?fields=vnfProvider", ""), 400)
	// The Tacker CLI spells it exclude-fields on op lists.
	e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?exclude-fields=operationParams", ""), 200)
}

func TestSecretsNeverLeave(t *testing.T) {
	e := newEnv(t, 100, true)
	id := e.createInstance("secret")
	inst := "/vnflcm/v1/vnf_instances/" + id
	body := strings.Replace(instBody, `"additionalParams":{`, `"additionalParams":{"fake":{"failStep":"mgmt.instantiate_end"},"password":"a'b; touch /tmp/pwned #",`, 1)
	loc := e.expect(e.do("POST", inst+"/instantiate", body), 202).Header.Get("Location")
	failed := e.waitOp(loc, "FAILED_TEMP")
	if d := failed["error"].(map[string]any)["detail"].(string); !strings.Contains(d, secrets.Mask) {
		t.Fatalf("error detail %q: the injected failure quotes the password, it must be masked", d)
	}
	e.expect(e.do("POST", strings.TrimPrefix(loc, e.srv.URL)+"/fail", ""), 200)
	loc = e.expect(e.do("POST", inst+"/instantiate", instBody), 202).Header.Get("Location")
	e.waitOp(loc, "COMPLETED")
	op := e.expect(e.do("GET", strings.TrimPrefix(loc, e.srv.URL), ""), 200).json(t)
	params := op["operationParams"].(map[string]any)
	vim := params["vimConnectionInfo"].([]any)[0].(map[string]any)["accessInfo"].(map[string]any)
	if vim["password"] != secrets.Mask || vim["username"] != "admin" {
		t.Fatalf("operationParams accessInfo: %v", vim)
	}
	// GET serves the document rendered when the instance changed; the list
	// renders the row as it reads it: the two agree, masks included.
	got := e.expect(e.do("GET", inst, ""), 200).json(t)
	if ai := got["vimConnectionInfo"].([]any)[0].(map[string]any)["accessInfo"].(map[string]any); ai["password"] != secrets.Mask {
		t.Fatalf("GET instance accessInfo: %v", ai)
	}
	var listed map[string]any
	for _, d := range e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?all_fields", ""), 200).list(t) {
		if d["id"] == id {
			listed = d
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(listed) {
		t.Fatalf("GET instance:\n%v\nthe same instance listed with all_fields:\n%v", got, listed)
	}
	e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields", ""), 200)
	e.mu.Lock()
	everything := strings.Join(e.bodies, "\n")
	e.mu.Unlock()
	for _, s := range []string{"touch /tmp/pwned", "vim-pass-123", "tok-secret-789", "enc:v"} {
		if strings.Contains(everything, s) {
			t.Errorf("a response contains %q", s)
		}
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("the log contains %q", s)
		}
	}
}

func TestOpsEndpointsAndTackerQuirks(t *testing.T) {
	e := newEnv(t, 100, false)
	for _, p := range []string{"/vnflcm/api_versions", "/vnflcm/v1/api_versions"} {
		doc := e.expect(e.do("GET", p, "", "Version", "2.0.0"), 200).json(t)
		if !strings.HasPrefix(p, doc["uriPrefix"].(string)) {
			t.Fatalf("%s uriPrefix %v", p, doc["uriPrefix"])
		}
	}
	e.expect(e.do("GET", "/vnflcm/v1/api_versions?x=1", ""), 400)
	// The CLI leaks Content-Type onto GETs without a body; TST uses double slashes.
	e.expect(e.do("GET", "//vnflcm/v1/vnf_instances", "", "Content-Type", "application/json"), 200)
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Version", "1.3.0"), 200)
	// curl -d sends form encoding, which a web form can send too: 415 (see guard_test.go).
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`"}`, "Content-Type", "application/x-www-form-urlencoded"), 415)
	spec := e.expect(e.do("GET", "/vnflcm/v1/openapi.yaml", ""), 200)
	if !bytes.Contains(spec.body, []byte("openapi: 3")) {
		t.Fatal("openapi.yaml not served")
	}
	e.expect(e.do("GET", "/healthz", ""), 200)
	e.expect(e.do("GET", "/readyz", ""), 200)
	m := e.expect(e.do("GET", "/metrics", ""), 200)
	for _, want := range []string{"vnfm_http_requests_total", "vnfm_lcm_queue_depth", "vnfm_database_up 1", `route="/vnflcm/v1/vnf_instances"`} {
		if !bytes.Contains(m.body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
