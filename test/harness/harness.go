// Package harness is the test harness the end-to-end suites share
// (test/e2e, test/drills, test/cli, and cmd/vnfm-bench's server under
// test): the binary re-executed as a VNFM server process in a named role,
// started, stopped and killed by the tests; the HTTP client and the loop
// that waits for an LCM operation to end.
//
// A test package registers its roles at package level and calls Main from
// TestMain:
//
//	var roleFake = harness.Role("fake", func() int {
//		return harness.Serve("e2e", func(context.Context, *config.Config) (server.Options, func(), error) {
//			return server.Options{Infra: lcmtest.Resolver(&lcmtest.Infra{}), Mgmt: lcmtest.Registry(&lcmtest.Mgmt{})}, nil, nil
//		})
//	})
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
//	p := harness.Start(t, roleFake, db, key) // p.Base is the server's URL
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// RoleEnv names the role a re-executed process runs.
const RoleEnv = "VNFM_HARNESS_ROLE"

var (
	rolesMu sync.Mutex
	roles   = map[string]func() int{}
)

// Role registers what a process started in role name runs (its exit code);
// call it in a package-level var so it is there before TestMain or main.
// It returns name.
func Role(name string, run func() int) string {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	if _, dup := roles[name]; dup {
		panic("harness: role " + name + " registered twice")
	}
	roles[name] = run
	return name
}

// RunRole runs the role this process was started in and exits; it returns
// when the process was not started in a role.
func RunRole() {
	name := os.Getenv(RoleEnv)
	if name == "" {
		return
	}
	rolesMu.Lock()
	run, ok := roles[name]
	rolesMu.Unlock()
	if !ok {
		fmt.Fprintf(os.Stderr, "harness: this binary has no role %q\n", name)
		os.Exit(2)
	}
	os.Exit(run())
}

// Main is a TestMain: a process started in a role runs it; else the tests
// run with a throwaway PostgreSQL cluster whose databases are migrated
// (internal/pgtest).
func Main(m *testing.M) {
	RunRole()
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// Serve runs the real server wiring (server.Run) with the options build
// makes from the environment's configuration, until stdin is closed (the
// parent stops the process, or went away). It prints "READY <addr>" once the
// server listens; build may print lines of its own before. done, if not
// nil, runs after the server stopped. For roles.
func Serve(version string, build func(ctx context.Context, cfg *config.Config) (opts server.Options, done func(), err error)) int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	opts, done, err := build(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if done != nil {
		defer done()
	}
	opts.Version = version
	opts.Ready = func(addr string) { fmt.Printf("READY %s\n", addr) }
	if err := server.Run(ctx, cfg, opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Spec says how to launch a process.
type Spec struct {
	Role string
	// Exe is the binary (default: this one); Args its arguments (default
	// -test.run=^$ in a test binary, none else).
	Exe  string
	Args []string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Stderr receives the process's log (default: kept for Logs).
	Stderr io.Writer
	// Line is called with every stdout line (e.g. to read a PPROF address).
	Line func(line string)
	// StartWait bounds the wait for READY (default 60 s).
	StartWait time.Duration
}

// Process is a server process.
type Process struct {
	// Base is the server's URL ("http://127.0.0.1:port").
	Base   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	logs   *Buffer
	exited chan struct{}
}

// Launch starts a process in its role and waits until it serves.
func Launch(s Spec) (*Process, error) {
	exe, args := s.Exe, s.Args
	if exe == "" {
		exe = os.Args[0]
		if args == nil && testing.Testing() {
			args = []string{"-test.run=^$"}
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), RoleEnv+"="+s.Role), s.Env...)
	p := &Process{cmd: cmd, logs: &Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.logs
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if s.Line != nil {
				s.Line(sc.Text())
			}
			if addr, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- addr
			}
		}
	}()
	wait := s.StartWait
	if wait <= 0 {
		wait = 60 * time.Second
	}
	select {
	case addr := <-ready:
		p.Base = "http://" + addr
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the VNFM process (role %s) exited at start:\n%s", s.Role, p.logs.String())
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-p.exited
		return nil, fmt.Errorf("the VNFM process (role %s) did not start within %v:\n%s", s.Role, wait, p.logs.String())
	}
}

// Start launches a VNFM process in role on database db with secret key
// key (listening on a loopback port the OS picks, lease 2 s, poll 200 ms,
// log level info; env overrides and adds), and kills it when the test ends.
func Start(tb testing.TB, role, db, key string, env ...string) *Process {
	tb.Helper()
	base := []string{"DATABASE_URL=" + db, "VNFM_SECRET_KEY=" + key, "VNFM_LISTEN=127.0.0.1:0", "VNFM_LEASE=2s",
		"VNFM_POLL=200ms", "VNFM_LOG_LEVEL=info"}
	p, err := Launch(Spec{Role: role, Env: append(base, env...), StartWait: readyWait(env)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	return p
}

// readyWait is how long a server process may take to listen: longer when
// it starts real Keystone and Heat first.
func readyWait(env []string) time.Duration {
	for _, kv := range env {
		if kv == "VNFM_SIMULATOR_HEAT=real" {
			return 10 * time.Minute
		}
	}
	return 0 // Launch's default
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Logs is what the process logged (when Spec.Stderr was not given).
func (p *Process) Logs() string { return p.logs.String() }

// LogTail is the last n bytes of Logs.
func (p *Process) LogTail(n int) string {
	l := p.Logs()
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}

// Stop ends the process gracefully (stdin closed) and waits up to grace
// before killing it.
func (p *Process) Stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Kill9 kills the process with SIGKILL (no cleanup at all) and waits.
func (p *Process) Kill9() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// WaitExitOr waits until the process exits (true) or cond holds (false),
// checking every 50 ms, at most within.
func (p *Process) WaitExitOr(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return true
		case <-time.After(50 * time.Millisecond):
		}
		if cond() {
			// The last checkpoint comes right after the state is written:
			// give a process due to die there the time to do it.
			select {
			case <-p.exited:
				return true
			case <-time.After(time.Second):
				return false
			}
		}
	}
	return false
}

// Buffer collects output from many goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Client is the tests' HTTP client: many connections per host, and a 303
// is an answer to check, not to follow.
var Client = &http.Client{
	Transport:     &http.Transport{MaxIdleConnsPerHost: 256},
	Timeout:       2 * time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Response is an answer with its body read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as an object.
func (r Response) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		tb.Fatalf("body is not a JSON object (%d): %v: %.300s", r.Status, err, r.Body)
	}
	return m
}

// Location is the last segment of the Location header (an id).
func (r Response) Location() string { return OpID(r.Header.Get("Location")) }

// OpID is the last segment of a URL (the op occurrence id of a Location).
func OpID(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// Send makes one request; hdr are name/value pairs (Content-Type defaults
// to application/json when there is a body; an empty value removes the
// header).
func Send(tb testing.TB, method, url string, body []byte, hdr ...string) Response {
	tb.Helper()
	r, err := TrySend(method, url, body, hdr...)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// TrySend is Send returning the transport's error.
func TrySend(method, url string, body []byte, hdr ...string) (Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return Response{}, err
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
	res, err := Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: b}, err
}

// final are the states an LCM operation rests in.
var final = []string{"COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"}

// WaitOp polls the op occurrence at base until its operationState is one
// of states and returns it; it fails the test when the deadline passes, or
// when the operation rests in another final state.
func WaitOp(tb testing.TB, base, opID string, within time.Duration, states ...string) map[string]any {
	tb.Helper()
	return Wait{Within: within}.Op(tb, base, opID, states...)
}

// Wait is how to wait for an operation.
type Wait struct {
	// Within bounds the wait (default 90 s).
	Within time.Duration
	// Poll is the interval (default 25 ms).
	Poll time.Duration
	// Explain adds to a failure (e.g. the tail of the server's log).
	Explain func() string
}

// Op waits as WaitOp does.
func (w Wait) Op(tb testing.TB, base, opID string, states ...string) map[string]any {
	tb.Helper()
	if w.Within <= 0 {
		w.Within = 90 * time.Second
	}
	if w.Poll <= 0 {
		w.Poll = 25 * time.Millisecond
	}
	explain := func() string {
		if w.Explain == nil {
			return ""
		}
		return "\n" + w.Explain()
	}
	within := w.Within
	deadline := time.Now().Add(within)
	for {
		r := Send(tb, "GET", base+"/vnflcm/v1/vnf_lcm_op_occs/"+opID, nil)
		if r.Status != http.StatusOK {
			tb.Fatalf("GET op %s: %d %s", opID, r.Status, r.Body)
		}
		doc := r.JSON(tb)
		s, _ := doc["operationState"].(string)
		for _, want := range states {
			if s == want {
				return doc
			}
		}
		if isFinal(s) {
			tb.Fatalf("op %s (%v) ended %s, want %v: %v%s", opID, doc["operation"], s, states, doc["error"], explain())
		}
		if time.Now().After(deadline) {
			tb.Fatalf("op %s is %s after %v, want %v (error %v)%s", opID, s, within, states, doc["error"], explain())
		}
		time.Sleep(w.Poll)
	}
}

func isFinal(s string) bool {
	for _, f := range final {
		if s == f {
			return true
		}
	}
	return false
}
