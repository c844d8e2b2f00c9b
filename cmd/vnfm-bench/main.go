// Command vnfm-bench measures the VNFM against the limits it runs on and
// prints a table (and writes JSON) of ratios and distributions, all measured
// in one run on one machine. `make bench` runs it; docs/benchmarks.md explains
// every figure and how it is measured.
//
// What it starts: a durable PostgreSQL from the Debian binaries (package
// pglocal, in a temporary directory), the VNFM as a separate process (this
// binary re-executed: the real server wiring of internal/server with the
// zero-latency in-test drivers of internal/lcmtest), a loopback notification
// receiver, pgbench, and — as root — 100 SSH test hosts (internal/testhosts)
// for the fan-out figure and a second VNFM with its built-in drivers and the
// simulator's real hosts for the cluster build. Everything is removed at the end.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// sshEnv turns a re-executed vnfm-bench into the SSH fan-out client; the
// VNFM processes it starts are roles (test/harness): roleBench, roleFull.
const sshEnv = "VNFM_BENCH_SSH_FANOUT"

type options struct {
	out       string
	only      map[string]bool
	instances int           // engine: instances run in parallel
	rounds    int           // engine: bursts of `instances` instantiations
	sustain   time.Duration // engine: closed-loop duration
	workers   int           // VNFM_WORKERS of the server under test
	clients   int           // reads: concurrent HTTP clients and pgbench clients
	readFor   time.Duration // reads: duration of each rate measurement
	rows      int           // list: instances bulk-loaded
	hosts     int           // ssh: test hosts
	stepT     time.Duration // cluster: the stand-in's install step time t
	profile   bool          // collect CPU profiles of the VNFM process
	fastDB    bool          // PostgreSQL with fsync off (not the default)
}

var phases = []string{"engine", "reads", "list", "ssh", "cluster"}

func main() {
	harness.RunRole()
	if os.Getenv(sshEnv) == "1" {
		os.Exit(sshWorker())
	}
	var o options
	var only string
	flag.StringVar(&o.out, "out", "bench/results", "directory for the JSON results, the VNFM log and profiles")
	flag.StringVar(&only, "only", strings.Join(phases, ","), "comma-separated phases to run: "+strings.Join(phases, ", "))
	flag.IntVar(&o.instances, "instances", 50, "engine: instances instantiated in parallel")
	flag.IntVar(&o.rounds, "rounds", 10, "engine: bursts of -instances parallel instantiations (latency samples = instances × rounds)")
	flag.DurationVar(&o.sustain, "sustain", 15*time.Second, "engine: duration of the closed-loop throughput run")
	flag.IntVar(&o.workers, "workers", 64, "engine: VNFM_WORKERS of the VNFM under test (64 is the default)")
	flag.IntVar(&o.clients, "clients", 16, "reads: concurrent HTTP clients, and pgbench clients")
	flag.DurationVar(&o.readFor, "read-for", 10*time.Second, "reads: duration of each rate measurement")
	flag.IntVar(&o.rows, "rows", 1000000, "list: instances bulk-loaded (COPY) for the filtered lists")
	flag.IntVar(&o.hosts, "hosts", 100, "ssh: test hosts for the fan-out (needs root)")
	flag.DurationVar(&o.stepT, "step-t", 2*time.Second, "cluster: time t that the stand-in's kubeadm init and join take (sleep before their work)")
	flag.BoolVar(&o.profile, "profile", false, "save CPU profiles of the VNFM process (engine and read phases) next to the results")
	flag.BoolVar(&o.fastDB, "fast-db", false, "run PostgreSQL with fsync=off, synchronous_commit=off (default: durable, as `vnfm serve` runs it)")
	flag.Parse()
	o.only = map[string]bool{}
	for _, p := range strings.Split(only, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !contains(phases, p) {
			fmt.Fprintf(os.Stderr, "vnfm-bench: unknown phase %q (phases: %s)\n", p, strings.Join(phases, ", "))
			os.Exit(2)
		}
		o.only[p] = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "vnfm-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	stamp := began.UTC().Format("20060102T150405Z")
	b := &bench{o: o, ctx: ctx, prefix: filepath.Join(o.out, stamp)}
	b.res = &Results{Started: began.UTC(), Machine: machineInfo(), Version: gitDescribe(), Settings: o.settings()}
	defer b.cleanup()
	logf("machine: %s", b.res.Machine)

	needDB := o.only["engine"] || o.only["reads"] || o.only["list"] || o.only["ssh"] || o.only["cluster"]
	if needDB {
		if err := b.startDB(); err != nil {
			return fmt.Errorf("database: %w", err)
		}
		b.res.Machine.PostgreSQL = b.pgVersion
	}
	needVNFM := o.only["engine"] || o.only["reads"] || o.only["list"]
	if needVNFM {
		if err := b.startVNFM(); err != nil {
			return fmt.Errorf("VNFM: %w", err)
		}
	}
	type phase struct {
		name string
		fn   func() error
	}
	for _, p := range []phase{{"engine", b.engine}, {"reads", b.reads}, {"list", b.list}, {"ssh", b.sshFanout}, {"cluster", b.cluster}} {
		if !o.only[p.name] {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t0 := time.Now()
		logf("── %s", p.name)
		if err := p.fn(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One broken phase must not hide the others' figures.
			b.res.add(Figure{ID: p.name + ".error", Group: p.name, Title: p.name + " phase failed", Status: StatusError, Note: err.Error()})
			logf("%s phase failed: %v", p.name, err)
		}
		logf("%s phase took %v", p.name, time.Since(t0).Round(time.Millisecond))
	}
	b.res.Took = time.Since(began).Round(time.Millisecond).String()
	printTable(os.Stdout, b.res)
	path := b.prefix + ".json"
	if err := writeJSON(path, b.res); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(o.out, "latest.json"), b.res); err != nil {
		return err
	}
	fmt.Printf("\nresults: %s (also %s); took %s\n", path, filepath.Join(o.out, "latest.json"), b.res.Took)
	for _, f := range b.res.Figures {
		if f.Status == StatusError {
			return errors.New("some phases failed; see the table")
		}
	}
	return nil
}

func (o options) settings() map[string]any {
	only := []string{}
	for _, p := range phases {
		if o.only[p] {
			only = append(only, p)
		}
	}
	return map[string]any{"phases": only, "instances": o.instances, "rounds": o.rounds, "sustain": o.sustain.String(),
		"vnfmWorkers": o.workers, "clients": o.clients, "readFor": o.readFor.String(), "rows": o.rows, "hosts": o.hosts, "stepT": o.stepT.String(),
		"fastDB": o.fastDB, "gomaxprocs": runtime.GOMAXPROCS(0)}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// logf reports progress on stderr; the table goes to stdout.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
