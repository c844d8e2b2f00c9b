package pglocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timeouts for getting rid of a previous run's processes. Tests shorten them.
var (
	orphanShutdownGrace = 30 * time.Second // fast shutdown of a live orphaned postmaster
	orphanExitGrace     = 10 * time.Second // orphaned backends of a killed postmaster
)

// readPostmasterPID returns the PID on the first line of pgdata/postmaster.pid,
// or 0 when there is no such file.
func readPostmasterPID(pgData string) (int, error) {
	f, err := os.Open(filepath.Join(pgData, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pglocal: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return -1, nil // empty or truncated: stale
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return -1, nil
	}
	return pid, nil
}

// runsIn reports whether process pid is a PostgreSQL server process whose
// working directory is pgData (postmaster and backends chdir to their data
// directory). pgData must be a resolved path.
func runsIn(pid int, pgData string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil || cwd != pgData {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	// After a package upgrade the link reads ".../postgres (deleted)".
	return strings.HasPrefix(filepath.Base(exe), "postgres")
}

// processesIn lists the PostgreSQL processes that run in pgData.
func processesIn(pgData string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if runsIn(pid, pgData) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// exists reports whether pid names any process, zombies included.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// alive reports whether pid is a live process. A zombie counts as dead: in
// containers whose init does not reap orphans a killed postmaster stays a
// zombie forever.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	// "pid (comm) S ...": the state follows the last ')'.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// waitGone polls until cond is false or d elapses; it reports whether cond
// became false.
func waitGone(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for cond() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// recoverPrevious makes pgData startable after a previous owner died: it shuts
// down a still-running postmaster of this data directory, waits for (and then
// kills) orphaned server processes, and removes a postmaster.pid that names an
// unrelated process. The caller holds the DataDir lock, so no live Server of
// this process or another one owns pgData.
func (s *Server) recoverPrevious(ctx context.Context) error {
	pid, err := readPostmasterPID(s.pgData)
	if err != nil {
		return err
	}
	if pid > 0 && runsIn(pid, s.resolvedPGData()) {
		s.log.Warn("pglocal: a server left running by a previous owner of the data directory is still up; shutting it down",
			"pid", pid, "pgdata", s.pgData)
		// SIGINT = fast shutdown, SIGQUIT = immediate, then SIGKILL.
		type step struct {
			sig   syscall.Signal
			grace time.Duration
		}
		steps := []step{{syscall.SIGINT, orphanShutdownGrace}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}}
		if s.immediate {
			steps = steps[1:]
		}
		for _, step := range steps {
			_ = syscall.Kill(pid, step.sig)
			if waitGone(ctx, step.grace, func() bool { return alive(pid) }) {
				break
			}
		}
		if alive(pid) {
			return fmt.Errorf("pglocal: previous server (pid %d) in %s does not stop", pid, s.pgData)
		}
	}
	// Backends of a killed postmaster notice its death and exit on their own;
	// while any is attached to the old shared memory PostgreSQL refuses to start.
	if !waitGone(ctx, orphanExitGrace, func() bool { return len(processesIn(s.resolvedPGData())) > 0 }) {
		for _, p := range processesIn(s.resolvedPGData()) {
			s.log.Warn("pglocal: killing orphaned server process", "pid", p)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if !waitGone(ctx, 5*time.Second, func() bool { return len(processesIn(s.resolvedPGData())) > 0 }) {
			return fmt.Errorf("pglocal: orphaned PostgreSQL processes %v still run in %s", processesIn(s.resolvedPGData()), s.pgData)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// PostgreSQL itself handles a postmaster.pid (and socket lock files) whose
	// PID is gone, and then also frees the old shared memory, so such files
	// are left to it. It refuses to start when the PID exists: reused by an
	// unrelated process (after a reboot, in a container) or a zombie that no
	// init reaps. No process of ours runs in pgData now, so remove them then;
	// the socket directory is private to this cluster.
	stale := []string{filepath.Join(s.pgData, "postmaster.pid")}
	switch {
	case pid == 0: // no postmaster.pid: a clean shutdown
		return nil
	case pid < 0: // unreadable: PostgreSQL would refuse it; remove it
	case !exists(pid):
		return nil
	case s.sockDir != "":
		socks, _ := filepath.Glob(filepath.Join(s.sockDir, ".s.PGSQL.*"))
		stale = append(stale, socks...)
	}
	for _, f := range stale {
		if _, err := os.Lstat(f); err != nil {
			continue
		}
		s.log.Info("pglocal: removing stale file of a previous server", "file", f, "pid", pid)
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pglocal: %w", err)
		}
	}
	return nil
}

// resolvedPGData is pgData with symlinks resolved, as /proc/<pid>/cwd shows it.
func (s *Server) resolvedPGData() string {
	if p, err := filepath.EvalSymlinks(s.pgData); err == nil {
		return p
	}
	return s.pgData
}
