// Package drills holds failure drills (issue 9) that run in `make test`:
// two replicas on one database with the lease holder killed -9, a corpus of
// hostile requests, 200 concurrent LCM requests on one instance, secrets
// after a full lifecycle, and a fuzz target for request bodies. The VNFM
// runs in-process (server.Run) or, where its real logger or a kill -9
// matters, as this test binary re-executed; every test gets its own
// PostgreSQL database (internal/pgtest).
package drills

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// serverEnv makes the re-executed test binary a VNFM process with the
// in-test drivers; its configuration comes from the environment like
// `vnfm serve`.
const serverEnv = "VNFM_DRILLS_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(serveProcess())
	}
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

func serveProcess() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // the test closed stdin or died: stop
		stop()
	}()
	err = server.Run(ctx, cfg, server.Options{Version: "drills", Infra: lcmtest.Resolver(&lcmtest.Infra{}),
		Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Ready: func(addr string) { fmt.Printf("READY %s\n", addr) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
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

// proc is a VNFM process (this binary re-executed).
type proc struct {
	cmd    *exec.Cmd
	base   string
	stdin  io.WriteCloser
	logs   *syncBuffer
	exited chan struct{}
}

// startProc launches a VNFM process on db and waits until it listens.
func startProc(t *testing.T, db, key string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1", "DATABASE_URL="+db, "VNFM_SECRET_KEY="+key,
		"VNFM_LISTEN=127.0.0.1:0", "VNFM_LEASE=2s", "VNFM_POLL=200ms", "VNFM_LOG_LEVEL=debug")
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &syncBuffer{}, exited: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- addr
			}
		}
	}()
	select {
	case addr := <-ready:
		p.base = "http://" + addr
	case <-p.exited:
		t.Fatalf("VNFM process exited at start:\n%s", p.logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("VNFM process did not start:\n%s", p.logs.String())
	}
	return p
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// stop ends the process gracefully (stdin closed) and waits for it.
func (p *proc) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// vnfm is an in-process VNFM: the real server wiring (server.Run) with the
// in-test drivers.
type vnfm struct {
	base string
	db   string
	logs *syncBuffer
	stop func()
}

type inProcess struct {
	engine        bool
	testCallbacks bool
}

// startInProcess runs server.Run on db until the test ends (or stop is called).
func startInProcess(tb testing.TB, db, key string, o inProcess) *vnfm {
	tb.Helper()
	cfg := &config.Config{DatabaseURL: db, DataDir: tb.TempDir(), Listen: "127.0.0.1:0", EndpointURL: "http://127.0.0.1:0",
		SecretKey: key, Engine: o.engine, Workers: 4, Lease: 2 * time.Second, Poll: 100 * time.Millisecond,
		PageSize: 100, MaxBodyBytes: 1 << 20, ShutdownWait: 10 * time.Second, NotifyBackoffMin: 100 * time.Millisecond,
		NotifyBackoffMax: time.Second, NotifyRetryFor: time.Hour, TestCallbacks: o.testCallbacks,
		Auth: auth.Settings{Mode: "off", TokenTTL: 30 * time.Minute, Realm: "mini-vnfm"}}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, server.Options{Version: "drills", Infra: lcmtest.Resolver(&lcmtest.Infra{}),
			Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Logger: log, Ready: func(addr string) { ready <- addr }})
	}()
	v := &vnfm{db: db, logs: logs}
	var once sync.Once
	v.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("server.Run: %v", err)
			}
		})
	}
	tb.Cleanup(v.stop)
	select {
	case addr := <-ready:
		v.base = "http://" + addr
	case err := <-done:
		tb.Fatalf("server.Run ended at start: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		tb.Fatalf("server.Run did not start:\n%s", logs.String())
	}
	return v
}

// response is an answer with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("body is not a JSON object (%d): %v: %.300s", r.status, err, r.body)
	}
	return m
}

// location returns the last segment of the Location header (an id).
func (r response) location() string {
	loc := r.header.Get("Location")
	return loc[strings.LastIndex(loc, "/")+1:]
}

var client = &http.Client{
	Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0},
	Timeout:   2 * time.Minute,
	// 303 See Other is an answer to check, not to follow.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// send makes one request; hdr are name/value pairs ("Content-Type" defaults
// to application/json when there is a body and no Content-Type is given).
func send(tb testing.TB, method, url string, body []byte, hdr ...string) response {
	tb.Helper()
	r, err := trySend(method, url, body, hdr...)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

func trySend(method, url string, body []byte, hdr ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	res, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}, err
}

// problemError says why r is not a ProblemDetails answer ("" when it is one).
func problemError(r response) string {
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Sprintf("Content-Type %q, want application/problem+json", ct)
	}
	var pd struct {
		Status *float64 `json:"status"`
		Detail string   `json:"detail"`
		Title  string   `json:"title"`
	}
	if err := json.Unmarshal(r.body, &pd); err != nil {
		return "body is not JSON: " + err.Error()
	}
	if pd.Status == nil || int(*pd.Status) != r.status {
		return fmt.Sprintf("ProblemDetails.status %v differs from the HTTP status %d", pd.Status, r.status)
	}
	if pd.Detail == "" {
		return "ProblemDetails without detail"
	}
	return ""
}

// seedPackage stores the in-test sample package (onboarded, enabled).
func seedPackage(tb testing.TB, db string) {
	tb.Helper()
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	if err := st.PutPackage(context.Background(), lcmtest.SamplePackage()); err != nil {
		tb.Fatal(err)
	}
}

func connect(tb testing.TB, db string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// tables lists the application's tables (schema public).
func tables(tb testing.TB, conn *pgx.Conn) []string {
	tb.Helper()
	rows, err := conn.Query(context.Background(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		tb.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	if len(names) < 5 {
		tb.Fatalf("only %d tables: %v", len(names), names)
	}
	return names
}

// rowCounts counts the rows of every table in one statement.
func rowCounts(tb testing.TB, conn *pgx.Conn, names []string) map[string]int64 {
	tb.Helper()
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("SELECT %s, count(*) FROM %s", quoteLiteral(n), pgx.Identifier{n}.Sanitize())
	}
	rows, err := conn.Query(context.Background(), strings.Join(parts, " UNION ALL "))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]int64{}
	for rows.Next() {
		var n string
		var c int64
		if err := rows.Scan(&n, &c); err != nil {
			tb.Fatal(err)
		}
		out[n] = c
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func diffCounts(before, after map[string]int64) string {
	var d []string
	for k, v := range after {
		if before[k] != v {
			d = append(d, fmt.Sprintf("%s %d→%d", k, before[k], v))
		}
	}
	return strings.Join(d, ", ")
}

// waitOp polls an op occurrence until it is in one of states.
func waitOp(tb testing.TB, base, opID string, within time.Duration, states ...string) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		r := send(tb, "GET", base+"/vnflcm/v1/vnf_lcm_op_occs/"+opID, nil)
		if r.status != http.StatusOK {
			tb.Fatalf("GET op %s: %d %s", opID, r.status, r.body)
		}
		doc := r.json(tb)
		for _, s := range states {
			if doc["operationState"] == s {
				return doc
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("op %s is %v after %v, want %v (error %v)", opID, doc["operationState"], within, states, doc["error"])
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func newKey() string { return secrets.NewKey() }
