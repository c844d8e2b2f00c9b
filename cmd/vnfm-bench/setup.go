package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served by the VNFM under test on a separate loopback port
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pglocal"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// bench holds what the phases share.
type bench struct {
	o      options
	ctx    context.Context
	res    *Results
	prefix string // of the files this run writes (bench/results/<time>)

	dbDir     string
	pg        *pglocal.Server
	dbURL     string // over TCP, for the bench's own connections
	localURL  string // over the unix socket when there is one, as `vnfm serve` connects to its embedded PostgreSQL
	pgVersion string
	pgPID     int
	pool      *pgxpool.Pool
	key       string
	pgss      bool // pg_stat_statements is there (-profile)
	tabs0     map[string]tableCounters

	vnfm    *harness.Process
	vnfmPID int
	base    string // http://127.0.0.1:port of the VNFM
	pprof   string // host:port of its pprof listener

	client *http.Client
	// instances created by the engine phase (reads use them)
	instanceIDs []string

	cleanups []func()
}

func (b *bench) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// startDB starts a private PostgreSQL in a temporary directory, durable like
// the embedded database of `vnfm serve` unless -fast-db.
func (b *bench) startDB() error {
	dir, err := os.MkdirTemp("", "vnfm-bench-")
	if err != nil {
		return err
	}
	b.dbDir = dir
	b.cleanups = append(b.cleanups, func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// The server runs as user postgres, which must traverse the directory.
		if err := os.Chmod(dir, 0o711); err != nil {
			return err
		}
	}
	t0 := time.Now()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	popts := pglocal.Options{DataDir: filepath.Join(dir, "pg"), Fast: b.o.fastDB, Logger: log}
	if b.o.profile {
		popts.Settings = pgssSettings
	}
	pg, err := pglocal.Start(b.ctx, popts)
	if err != nil {
		return err
	}
	b.pg = pg
	b.cleanups = append(b.cleanups, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := pg.Destroy(ctx); err != nil {
			logf("removing the bench database: %v", err)
		}
	})
	b.dbURL = pg.URL("vnfm")
	b.localURL = pg.LocalURL("vnfm")
	b.pgPID = postmasterPID(pg.PGData())
	if err := store.MigrateUp(b.ctx, b.dbURL); err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	cfg.MaxConns = 8
	if b.pool, err = pgxpool.NewWithConfig(b.ctx, cfg); err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, b.pool.Close)
	if err := b.pool.QueryRow(b.ctx, "SHOW server_version").Scan(&b.pgVersion); err != nil {
		return err
	}
	durability := "durable (fsync on, synchronous_commit on)"
	if b.o.fastDB {
		durability = "fsync off"
	}
	logf("PostgreSQL %s up in %v, %s, pgdata %s", b.pgVersion, time.Since(t0).Round(time.Millisecond), durability, pg.PGData())
	return nil
}

// startVNFM runs this binary as the VNFM under test: server.Run with the
// zero-latency in-test drivers, on the bench database, default settings
// except VNFM_WORKERS (-workers) and the ephemeral port.
func (b *bench) startVNFM() error {
	st, err := store.Open(b.ctx, b.dbURL, nil)
	if err != nil {
		return err
	}
	err = st.PutPackage(b.ctx, lcmtest.SamplePackage())
	st.Close()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	b.key = secrets.NewKey()
	logPath := b.prefix + "-vnfm.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child keeps its own descriptor
	p, err := harness.Launch(harness.Spec{Role: roleBench, Exe: exe,
		Env: []string{"DATABASE_URL=" + b.localURL, "VNFM_SECRET_KEY=" + b.key, "VNFM_LISTEN=127.0.0.1:0",
			fmt.Sprintf("VNFM_WORKERS=%d", b.o.workers), "VNFM_AUTH=off"},
		Stderr: logFile, // inherited descriptor: logging costs the VNFM what it costs in production
		Line: func(l string) {
			if a, ok := strings.CutPrefix(l, "PPROF "); ok {
				b.pprof = a
			}
		}})
	if err != nil {
		return fmt.Errorf("%w; see %s", err, logPath)
	}
	b.vnfm, b.vnfmPID, b.base = p, p.Pid(), p.Base
	b.cleanups = append(b.cleanups, b.stopVNFM)
	b.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256, IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	logf("VNFM pid %d serving %s (log %s)", b.vnfmPID, b.base, logPath)
	return nil
}

func (b *bench) stopVNFM() {
	if b.vnfm == nil {
		return
	}
	b.vnfm.Stop(20 * time.Second)
	b.vnfm = nil
}

// roleBench is the VNFM under test (re-executed vnfm-bench): the real
// server wiring with the in-test drivers, and a pprof listener.
var roleBench = harness.Role("bench", func() int {
	return harness.Serve("bench", func(context.Context, *config.Config) (server.Options, func(), error) {
		if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			fmt.Printf("PPROF %s\n", ln.Addr())
			go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
		}
		return server.Options{Infra: lcmtest.Resolver(&lcmtest.Infra{}), Mgmt: lcmtest.Registry(&lcmtest.Mgmt{})}, nil, nil
	})
})

// profile saves a CPU profile of the VNFM taken over d (when -profile) and,
// when the go tool is at hand, its top functions as text.
func (b *bench) profile(name string, d time.Duration) (wait func()) {
	if !b.o.profile || b.pprof == "" || d < time.Second {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.pprof, int(d.Seconds()))
		res, err := http.Get(url)
		if err != nil {
			logf("profile %s: %v", name, err)
			return
		}
		defer res.Body.Close()
		path := b.prefix + "-" + name + ".pprof"
		f, err := os.Create(path)
		if err != nil {
			logf("profile %s: %v", name, err)
			return
		}
		_, err = io.Copy(f, res.Body)
		f.Close()
		if err != nil {
			logf("profile %s: %v", name, err)
			return
		}
		exe, _ := os.Executable()
		if out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", exe, path).CombinedOutput(); err == nil {
			_ = os.WriteFile(b.prefix+"-"+name+"-top.txt", out, 0o644)
		}
		logf("CPU profile of the VNFM (%s): %s", name, path)
	}()
	return func() { <-done }
}

func (b *bench) exec(ctx context.Context, sql string, args ...any) error {
	_, err := b.pool.Exec(ctx, sql, args...)
	return err
}

// vnfmAllocs reads the VNFM's cumulative heap allocations (count and bytes,
// runtime.MemStats Mallocs and TotalAlloc) from its pprof listener; ok is
// false without -profile. Per request they do not depend on the machine's load.
func (b *bench) vnfmAllocs() (mallocs, bytes int64, ok bool) {
	if !b.o.profile || b.pprof == "" {
		return 0, 0, false
	}
	res, err := http.Get("http://" + b.pprof + "/debug/pprof/heap?debug=1")
	if err != nil {
		return 0, 0, false
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, 0, false
	}
	var got int
	for _, l := range strings.Split(string(body), "\n") {
		if v, found := strings.CutPrefix(l, "# Mallocs = "); found {
			mallocs, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			got++
		}
		if v, found := strings.CutPrefix(l, "# TotalAlloc = "); found {
			bytes, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			got++
		}
	}
	return mallocs, bytes, got == 2
}

// saveAllocs saves the VNFM's allocation profile (cumulative since its
// start; -profile only) as <time>-<name>.pprof.
func (b *bench) saveAllocs(name string) {
	if !b.o.profile || b.pprof == "" {
		return
	}
	res, err := http.Get("http://" + b.pprof + "/debug/pprof/allocs")
	if err != nil {
		logf("allocation profile: %v", err)
		return
	}
	defer res.Body.Close()
	f, err := os.Create(b.prefix + "-" + name + ".pprof")
	if err != nil {
		logf("allocation profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, res.Body); err != nil {
		logf("allocation profile: %v", err)
	}
}

// profileSelf saves a CPU profile of the bench process itself (its clients)
// from now until stop is called (-profile only).
func (b *bench) profileSelf(name string) (stop func()) {
	if !b.o.profile {
		return func() {}
	}
	f, err := os.Create(b.prefix + "-" + name + ".pprof")
	if err != nil {
		logf("profile %s: %v", name, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil { // one at a time: fails if another runs
		logf("profile %s: %v", name, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
