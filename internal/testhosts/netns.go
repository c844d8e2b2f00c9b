package testhosts

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` keeps its namespace handles.
const netnsDir = "/run/netns"

// NetnsPath is the handle of the named network namespace.
func NetnsPath(name string) string { return filepath.Join(netnsDir, name) }

// inNetns runs fn on a fresh OS thread that has joined the network namespace
// at nsPath. The thread is never returned to the Go scheduler (the goroutine
// ends without UnlockOSThread, so the runtime discards the thread): nothing
// else in the process ever runs in that namespace, and the process's own
// interfaces and sockets are unaffected. Sockets created by fn stay in the
// namespace for their whole life.
func inNetns(nsPath string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		f, err := os.Open(nsPath)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", nsPath, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// DialInNetns dials addr from inside the network namespace at nsPath. Only the
// socket lives there; the caller's goroutine and process stay where they are.
func DialInNetns(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(nsPath, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// ListenInNetns opens a listener inside the network namespace at nsPath.
func ListenInNetns(ctx context.Context, nsPath, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNetns(nsPath, func() error {
		var lc net.ListenConfig
		var err error
		l, err = lc.Listen(ctx, network, addr)
		return err
	})
	return l, err
}

// spawner starts long-lived child processes from one OS thread that never
// exits, so that Pdeathsig (which fires when the *thread* that forked the
// child ends) fires only when the whole process dies.
var spawner struct {
	once sync.Once
	ch   chan func()
}

func startPinned(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.ch = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range spawner.ch {
				f()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	errc := make(chan error, 1)
	spawner.ch <- func() { errc <- cmd.Start() }
	return <-errc
}

// run runs a short command and returns its combined output in the error.
func run(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsInode identifies a network namespace handle (dev, inode).
type nsID struct{ dev, ino uint64 }

func statNS(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// pidsInNetns lists the processes whose network namespace is the one at
// nsPath (what `ip netns pids` prints). The caller's own process is skipped.
func pidsInNetns(nsPath string) ([]int, error) {
	want, err := statNS(nsPath)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		id, err := statNS(filepath.Join("/proc", e.Name(), "ns", "net"))
		if err != nil {
			continue // gone, or a kernel thread
		}
		if id == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killNetns SIGKILLs every process in the namespace and deletes it.
func killNetns(ctx context.Context, name string) error {
	path := NetnsPath(name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	pids, err := pidsInNetns(path)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return run(ctx, "", "ip", "netns", "del", name)
}

// listNetns lists the namespace names under /run/netns.
func listNetns() ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// childrenOf returns the child pids of pid (needs CONFIG_PROC_CHILDREN).
func childrenOf(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}
