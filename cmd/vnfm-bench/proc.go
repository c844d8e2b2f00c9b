package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStatus returns a field of /proc/<pid>/status in kB (VmRSS, VmHWM).
func procStatus(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux ≥ 4.0).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

var clockTick = 100.0 // USER_HZ: 100 on every Linux architecture Go supports

// cpuTime is the user+system CPU time a process has used, from
// /proc/<pid>/stat; with children, also that of its children that have
// exited and been waited for (cutime, cstime).
func cpuTime(pid int, children bool) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may contain spaces: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0
	}
	// f[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17.
	n := 13
	if children {
		n = 15
	}
	ticks := 0.0
	for _, v := range f[11:n] {
		t, _ := strconv.ParseFloat(v, 64)
		ticks += t
	}
	return time.Duration(ticks / clockTick * float64(time.Second))
}

func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// treeCPU is the CPU time of pid and its children, live or exited
// (PostgreSQL's postmaster reaps its backends, so theirs lands in its cutime).
func treeCPU(pid int) time.Duration {
	total := cpuTime(pid, true)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == pid {
			continue
		}
		if parentOf(n) == pid {
			total += cpuTime(n, false)
		}
	}
	return total
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postmasterPID reads the first line of pgdata/postmaster.pid.
func postmasterPID(pgData string) int {
	b, err := os.ReadFile(filepath.Join(pgData, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	n, _ := strconv.Atoi(strings.TrimSpace(line))
	return n
}

// cpuMeter attributes CPU time over an interval to the VNFM, PostgreSQL and
// the bench's own clients.
type cpuMeter struct {
	vnfm, pg, self time.Duration
	at             time.Time
	vnfmPID, pgPID int
}

func startCPU(vnfmPID, pgPID int) *cpuMeter {
	return &cpuMeter{vnfm: cpuTime(vnfmPID, false), pg: treeCPU(pgPID), self: selfCPU(), at: time.Now(), vnfmPID: vnfmPID, pgPID: pgPID}
}

type cpuUse struct {
	VNFM, PG, Bench, Wall time.Duration
}

func (c *cpuMeter) stop() cpuUse {
	return cpuUse{VNFM: cpuTime(c.vnfmPID, false) - c.vnfm, PG: treeCPU(c.pgPID) - c.pg, Bench: selfCPU() - c.self, Wall: time.Since(c.at)}
}

func (u cpuUse) String() string {
	w := u.Wall.Seconds()
	return fmt.Sprintf("CPU over %.1f s: VNFM %.2f cores, PostgreSQL %.2f cores, bench clients %.2f cores",
		w, u.VNFM.Seconds()/w, u.PG.Seconds()/w, u.Bench.Seconds()/w)
}

// dbCounters are PostgreSQL's cumulative counters of the VNFM's database:
// committed transactions and WAL records, bytes and flushes (fsyncs).
type dbCounters struct {
	commits, walRecords, walBytes, walSyncs int64
}

// readDB reads the counters. Backends publish their statistics at most once
// a second when they go idle, so callers wait a little (statsSettle) first.
func (b *bench) readDB() (dbCounters, error) {
	var c dbCounters
	err := b.pool.QueryRow(b.ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		w.wal_records, w.wal_bytes::bigint, w.wal_sync FROM pg_stat_wal w`).Scan(&c.commits, &c.walRecords, &c.walBytes, &c.walSyncs)
	return c, err
}

// statsSettle is how long backends may hold statistics before publishing them.
const statsSettle = 1200 * time.Millisecond

func (c dbCounters) sub(o dbCounters) dbCounters {
	return dbCounters{c.commits - o.commits, c.walRecords - o.walRecords, c.walBytes - o.walBytes, c.walSyncs - o.walSyncs}
}
