// Package e2e runs the VNFM as real processes (this test binary re-executed
// as a server with the in-test drivers) against a real PostgreSQL, and talks
// to it only over HTTP — to prove crash recovery across processes.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

const serverEnv = "VNFM_E2E_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(serve())
	}
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// serve runs the real server wiring with the fake drivers until killed.
func serve() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		// Exit when the parent test goes away.
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	err = server.Run(ctx, cfg, server.Options{Version: "e2e", Infra: lcmtest.Resolver(&lcmtest.Infra{}),
		Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Ready: func(addr string) { fmt.Printf("READY %s\n", addr) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type proc struct {
	cmd    *exec.Cmd
	base   string
	stdin  io.WriteCloser
	logs   *strings.Builder
	mu     *sync.Mutex
	exited chan struct{} // closed once the process has been waited for
}

// start launches a server process on db and waits until it listens.
func start(t *testing.T, db, key string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1", "DATABASE_URL="+db, "VNFM_SECRET_KEY="+key,
		"VNFM_LISTEN=127.0.0.1:0", "VNFM_LEASE=2s", "VNFM_POLL=200ms", "VNFM_LOG_LEVEL=info")
	cmd.Env = append(cmd.Env, env...)
	stdout, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	p := &proc{cmd: cmd, stdin: stdin, logs: &strings.Builder{}, mu: &sync.Mutex{}, exited: make(chan struct{})}
	cmd.Stderr = writerFunc(func(b []byte) (int, error) { p.mu.Lock(); defer p.mu.Unlock(); return p.logs.Write(b) })
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
	case <-time.After(readyWait(env)):
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("server did not start:\n%s", p.logs.String())
	}
	// Endpoint URLs are only used in links; requests go to the bound address.
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
	return 30 * time.Second
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// stop ends the server (stdin closed: graceful) and waits for it.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitExitOr waits until the process exits (true) or cond holds (false).
func (p *proc) waitExitOr(cond func() bool, within time.Duration) bool {
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

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

func call(t *testing.T, method, url, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func seedPackage(t *testing.T, db string) {
	t.Helper()
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutPackage(context.Background(), lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
}

func createAndInstantiate(t *testing.T, base, fake string) (instID, opID string) {
	t.Helper()
	code, _, b := call(t, "POST", base+"/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var in map[string]any
	_ = json.Unmarshal(b, &in)
	instID = in["id"].(string)
	code, h, b := call(t, "POST", base+"/vnflcm/v1/vnf_instances/"+instID+"/instantiate",
		`{"flavourId":"simple","instantiationLevelId":"instantiation_level_2","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}],"additionalParams":{"fake":`+fake+`}}`)
	if code != 202 {
		t.Fatalf("instantiate: %d %s", code, b)
	}
	loc := h.Get("Location")
	return instID, loc[strings.LastIndex(loc, "/")+1:]
}

func opDoc(t *testing.T, base, opID string) map[string]any {
	t.Helper()
	code, _, b := call(t, "GET", base+"/vnflcm/v1/vnf_lcm_op_occs/"+opID, "")
	if code != 200 {
		t.Fatalf("get op: %d %s", code, b)
	}
	var d map[string]any
	_ = json.Unmarshal(b, &d)
	return d
}

func nodeDone(d map[string]any, node string) bool {
	prog, _ := d["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, s := range steps {
		nodes, _ := s.(map[string]any)["nodes"].([]any)
		for _, n := range nodes {
			if nm := n.(map[string]any); nm["name"] == node && nm["state"] == "COMPLETED" {
				return true
			}
		}
	}
	return false
}

func TestKill9MidOperationAndResumeInAnotherProcess(t *testing.T) {
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := secrets.NewKey()
	a := start(t, db, key)
	_, opID := createAndInstantiate(t, a.base, `{"delayMs":300}`)
	deadline := time.Now().Add(20 * time.Second)
	for !nodeDone(opDoc(t, a.base, opID), "worker-0") {
		if time.Now().After(deadline) {
			t.Fatal("worker-0 never completed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.kill9(t)

	b := start(t, db, key)
	var d map[string]any
	for deadline = time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d = opDoc(t, b.base, opID)
		if s := d["operationState"]; s == "COMPLETED" || s == "FAILED_TEMP" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("op stuck in %v after the crash", d["operationState"])
		}
	}
	if d["operationState"] != "COMPLETED" {
		t.Fatalf("resumed op ended %v: %v", d["operationState"], d["error"])
	}
	// The journal shows what ran twice: the crashed step, not the checkpointed nodes.
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT step, node, attempt, state FROM op_journal WHERE op_occ_id=$1`, opID)
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]int{}
	for rows.Next() {
		var step, node, state string
		var n int
		if err := rows.Scan(&step, &node, &n, &state); err != nil {
			t.Fatal(err)
		}
		if state != "COMPLETED" {
			t.Errorf("%s/%s left %s", step, node, state)
		}
		attempts[step+"/"+node] = n
	}
	if attempts["infra.instantiate/"] != 2 || attempts["infra.instantiate/master-0"] != 1 || attempts["infra.instantiate/worker-0"] != 1 || attempts["mgmt.instantiate_start/"] != 1 {
		t.Fatalf("journal attempts after resume: %v", attempts)
	}
	var claims int
	_ = conn.QueryRow(context.Background(), `SELECT attempts FROM vnf_lcm_op_occs WHERE id=$1`, opID).Scan(&claims)
	if claims != 2 {
		t.Fatalf("claimed %d times", claims)
	}
}

func TestTwoProcessesShareTheQueue(t *testing.T) {
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := secrets.NewKey()
	a, b := start(t, db, key), start(t, db, key)
	var ops []string
	for i := 0; i < 12; i++ {
		base := a.base
		if i%2 == 1 {
			base = b.base
		}
		_, op := createAndInstantiate(t, base, `{"delayMs":50}`)
		ops = append(ops, op)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, op := range ops {
		for {
			d := opDoc(t, a.base, op)
			if d["operationState"] == "COMPLETED" {
				break
			}
			if d["operationState"] == "FAILED_TEMP" || time.Now().After(deadline) {
				t.Fatalf("op %s: %v %v", op, d["operationState"], d["error"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var multi int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM vnf_lcm_op_occs WHERE attempts <> 1`).Scan(&multi)
	if multi != 0 {
		t.Fatalf("%d operations were claimed more than once", multi)
	}
}
