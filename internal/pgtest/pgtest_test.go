package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/pglocal"
)

var errBoom = errors.New("boom")

func migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, `CREATE TABLE widgets (id int PRIMARY KEY, name text NOT NULL);
		INSERT INTO widgets VALUES (1, 'seed')`)
	return err
}

func TestMain(m *testing.M) { os.Exit(Main(m, migrate)) }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func dbExists(t testing.TB, name string) bool {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), Cluster())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var ok bool
	if err := conn.QueryRow(ctxT(t), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func dbName(t testing.TB, u string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

func TestNewDBIsMigratedAndDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("uses a database", func(t *testing.T) {
		u := NewDB(t)
		name = dbName(t, u)
		if !strings.HasPrefix(name, "t_") {
			t.Errorf("database name %q, want t_<n>", name)
		}
		conn, err := pgx.Connect(ctxT(t), u)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(context.Background()) }()
		var seed string
		if err := conn.QueryRow(ctxT(t), "SELECT name FROM widgets WHERE id = 1").Scan(&seed); err != nil || seed != "seed" {
			t.Fatalf("migrated seed row: %q, %v", seed, err)
		}
		// An open connection must not keep the database from being dropped.
	})
	if name == "" {
		t.Fatal("subtest did not run")
	}
	if dbExists(t, name) {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	a, b := Pool(t), Pool(t)
	if _, err := a.Exec(ctx, "INSERT INTO widgets VALUES (2, 'only in a')"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pool interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		}
		want int
	}{
		{"written database", a, 2},
		{"other database", b, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n int
			if err := tc.pool.QueryRow(ctx, "SELECT count(*) FROM widgets").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != tc.want {
				t.Errorf("count = %d, want %d", n, tc.want)
			}
		})
	}
	// The template itself is untouched.
	c := Pool(t)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM widgets").Scan(&n); err != nil || n != 1 {
		t.Errorf("fresh database has %d widgets (%v), want 1", n, err)
	}
}

func TestParallelTests(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	names := map[string]bool{}
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := Pool(t)
			ctx := ctxT(t)
			if _, err := pool.Exec(ctx, "INSERT INTO widgets VALUES ($1, 'x')", 100+i); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM widgets").Scan(&n); err != nil || n != 2 {
				t.Errorf("count = %d (%v), want 2", n, err)
			}
			var db string
			if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if names[db] {
				t.Errorf("database %s handed out twice", db)
			}
			names[db] = true
		})
	}
}

func TestClusterAllowsOwnDatabases(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, Cluster())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE own_db"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE own_db"); err != nil {
		t.Fatal(err)
	}
}

// TestSharedServer runs setup the way TEST_DATABASE_URL does, against this
// binary's cluster.
func TestSharedServer(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	for i, tc := range []struct {
		name    string
		url     string
		migrate MigrateFunc
		wantErr string
	}{
		{"migrated", Cluster(), migrate, ""},
		{"no migrations", Cluster(), nil, ""},
		{"migration fails", Cluster(), func(context.Context, string) error { return errBoom }, "migrating the template database: boom"},
		{"migration leaves a connection open", Cluster(), func(ctx context.Context, u string) error {
			c, err := pgx.Connect(ctx, u)
			if err != nil {
				return err
			}
			t.Cleanup(func() { _ = c.Close(context.Background()) })
			_, err = c.Exec(ctx, "CREATE TABLE widgets (id int)")
			return err
		}, ""},
		{"not a URL", "host=localhost dbname=x", nil, "TEST_DATABASE_URL: not a postgres:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("x%d_%d", os.Getpid(), i)
			e, err := setup(ctx, tc.url, tc.migrate, id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("setup: err = %v, want %q", err, tc.wantErr)
				}
				if tc.url == Cluster() && dbExists(t, "pgtest_tmpl_"+id) {
					t.Error("failed setup left its template database behind")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name, u, err := e.createDB(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := "t_" + id + "_1"; name != want {
				t.Errorf("database name %s, want %s", name, want)
			}
			conn, err := pgx.Connect(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.Close(ctx)
			if _, _, err := e.createDB(ctx); err != nil { // left for close to drop
				t.Fatal(err)
			}
			if err := e.dropDB(ctx, name); err != nil {
				t.Fatal(err)
			}
			if err := e.close(); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{e.template, name, "t_" + id + "_2"} {
				if dbExists(t, n) {
					t.Errorf("database %s left on the shared server", n)
				}
			}
			if err := e.close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

// fakeTB records Fatal instead of failing the real test.
type fakeTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestNewDBWithoutMain(t *testing.T) {
	// Not parallel: hides the cluster from the whole binary for a moment.
	saved := current.Swap(nil)
	defer current.Store(saved)
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewDB(f)
	}()
	<-done
	if !strings.Contains(f.fatal, "pgtest.Main") {
		t.Errorf("NewDB without Main: fatal %q, want a hint to call pgtest.Main", f.fatal)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "pgtest.Main") {
				t.Errorf("Cluster without Main: panic %v", r)
			}
		}()
		Cluster()
	}()
}

// TestNewDBSpeed measures the cost a test pays for its own database.
func TestNewDBSpeed(t *testing.T) {
	const n = 20
	var durs []time.Duration
	for i := range n {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			began := time.Now()
			NewDB(t)
			durs = append(durs, time.Since(began))
		})
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	var total time.Duration
	for _, d := range durs {
		total += d
	}
	t.Logf("NewDB over %d runs: median %v, max %v, mean %v", n, durs[n/2], durs[n-1], total/n)
	// Generous bound: catches a template that cannot be copied without
	// waiting (CREATE DATABASE waits up to 5 s for its connections to go).
	if durs[n/2] > time.Second {
		t.Errorf("median NewDB %v, want well under a second", durs[n/2])
	}
}

// BenchmarkNewDB reports the CREATE DATABASE ... TEMPLATE and the DROP
// DATABASE ... WITH (FORCE) that every test pays, separately.
func BenchmarkNewDB(b *testing.B) {
	e := current.Load()
	ctx := context.Background()
	var create, drop time.Duration
	for b.Loop() {
		t0 := time.Now()
		name, _, err := e.createDB(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := e.dropDB(ctx, name); err != nil {
			b.Fatal(err)
		}
		create += t1.Sub(t0)
		drop += time.Since(t1)
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(b.N), "create-ms/op")
	b.ReportMetric(float64(drop.Milliseconds())/float64(b.N), "drop-ms/op")
}

func TestReapLeftovers(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	base := t.TempDir()
	for _, d := range []string{base, filepath.Dir(base)} { // the server account must traverse them when root
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	mk := func(name string, files ...string) string {
		d := filepath.Join(base, name)
		for _, f := range append(files, "") {
			if err := os.MkdirAll(filepath.Join(d, filepath.Dir(f)), 0o711); err != nil {
				t.Fatal(err)
			}
			if f != "" {
				if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		return d
	}
	dead := mk("pgtest-dead", "pg/pglocal.lock", "pg/pgdata/PG_VERSION")
	deadEarly := mk("pgtest-died-before-start")
	fresh := mk("pgtest-fresh", "pg/pglocal.lock")
	other := mk("not-pgtest", "pg/pglocal.lock")
	live := filepath.Join(base, "pgtest-live")
	srv, err := pglocal.Start(ctx, pglocal.Options{DataDir: filepath.Join(live, "pg"), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Destroy(context.Background()) })
	for _, d := range []string{dead, deadEarly, other, live} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}

	reapLeftovers(ctx, base, time.Minute)

	for _, tc := range []struct {
		dir      string
		wantKept bool
	}{
		{dead, false},
		{deadEarly, false},
		{fresh, true},
		{other, true},
		{live, true},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			_, err := os.Stat(tc.dir)
			if kept := err == nil; kept != tc.wantKept {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
		})
	}
	conn, err := pgx.Connect(ctx, srv.URL(""))
	if err != nil {
		t.Fatalf("the live cluster was disturbed: %v", err)
	}
	_ = conn.Close(ctx)
}
