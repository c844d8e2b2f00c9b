// Package drills holds failure drills (issue 9) that run in `make test`:
// two replicas on one database with the lease holder killed -9, a corpus of
// hostile requests, 200 concurrent LCM requests on one instance, secrets
// after a full lifecycle, and a fuzz target for request bodies. The VNFM
// runs in-process (server.Run) or, where its real logger or a kill -9
// matters, as this test binary re-executed; every test gets its own
// PostgreSQL database (internal/pgtest).
package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// roleDrills is this test binary re-executed as a VNFM process with the
// in-test drivers; its configuration comes from the environment like
// `vnfm serve`.
var roleDrills = harness.Role("drills", func() int {
	return harness.Serve("drills", func(context.Context, *config.Config) (server.Options, func(), error) {
		return server.Options{Infra: lcmtest.Resolver(&lcmtest.Infra{}), Mgmt: lcmtest.Registry(&lcmtest.Mgmt{})}, nil, nil
	})
})

func TestMain(m *testing.M) { harness.Main(m) }

// startProc launches a VNFM process on db (log level debug) and waits until it listens.
func startProc(t *testing.T, db, key string, env ...string) *harness.Process {
	t.Helper()
	return harness.Start(t, roleDrills, db, key, append([]string{"VNFM_LOG_LEVEL=debug"}, env...)...)
}

// vnfm is an in-process VNFM: the real server wiring (server.Run) with the
// in-test drivers.
type vnfm struct {
	base string
	db   string
	logs *harness.Buffer
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
	logs := &harness.Buffer{}
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
type response = harness.Response

// send makes one request (harness.Send).
func send(tb testing.TB, method, url string, body []byte, hdr ...string) response {
	tb.Helper()
	return harness.Send(tb, method, url, body, hdr...)
}

// problemError says why r is not a ProblemDetails answer ("" when it is one).
func problemError(r response) string {
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Sprintf("Content-Type %q, want application/problem+json", ct)
	}
	var pd struct {
		Status *float64 `json:"status"`
		Detail string   `json:"detail"`
		Title  string   `json:"title"`
	}
	if err := json.Unmarshal(r.Body, &pd); err != nil {
		return "body is not JSON: " + err.Error()
	}
	if pd.Status == nil || int(*pd.Status) != r.Status {
		return fmt.Sprintf("ProblemDetails.Status %v differs from the HTTP status %d", pd.Status, r.Status)
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

func newKey() string { return secrets.NewKey() }
