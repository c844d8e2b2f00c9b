package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// notes records the step messages.
type notes struct {
	*fakeProgress
	mu  sync.Mutex
	got []string
}

func (n *notes) Note(_ context.Context, msg string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, msg)
	return nil
}

// A master whose API server comes up only after a few tries (its node
// rebooted): the step waits, and says so in the progress.
func TestAPIWaitIsInTheProgress(t *testing.T) {
	var down atomic.Int32
	down.Store(3)
	unreachable := func(e *remotetest.Exec) int {
		_, _ = io.Copy(io.Discard, e.Stdin)
		if down.Add(-1) >= 0 {
			_, _ = io.WriteString(e.Stderr, "Unable to connect to the server: Get \"https://10.0.0.2:16443/api/v1/nodes\": EOF\n")
			return 1
		}
		if strings.Contains(e.Cmd, "/healthz") {
			_, _ = io.WriteString(e.Stdout, "ok")
			return 0
		}
		_, _ = io.WriteString(e.Stdout, `{"items":[{"metadata":{"name":"m1"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}]}`)
		return 0
	}
	x := kubectlHost(t, unreachable)
	pr := &notes{fakeProgress: newProgress()}
	h := &hook{d: &Driver{}, op: &driverapi.Op{Progress: pr}, log: slog.New(slog.DiscardHandler)}
	ms := &session{node: &Node{Name: "m1", SSHAddr: "10.0.0.1"}, x: newNodeConn(x), log: h.log}
	nodes, err := h.clusterNodes(context.Background(), ms)
	if err != nil || !nodes["m1"].Ready {
		t.Fatalf("nodes %v, %v", nodes, err)
	}
	if len(pr.got) < 3 {
		t.Fatalf("progress notes: %q", pr.got)
	}
	for _, want := range []string{"waiting for the Kubernetes API server", "m1", "10.0.0.1", "attempt 1", "Unable to connect to the server"} {
		if !strings.Contains(pr.got[0], want) {
			t.Errorf("note %q lacks %q", pr.got[0], want)
		}
	}
	if last := pr.got[len(pr.got)-1]; !strings.Contains(last, "answers again") {
		t.Errorf("last note %q", last)
	}
}

func TestAPIUnreachable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("stderr (last lines):\nUnable to connect to the server: EOF"), true},
		{errors.New("The connection to the server 10.0.0.2:6443 was refused - did you specify the right host or port? dial tcp: connection refused"), true},
		// The real kubectl's words for a refused connection.
		{errors.New("Process exited with status 1 The connection to the server 10.77.51.11:6443 was refused - did you specify the right host or port?"), true},
		{errors.New("Error from server (Forbidden): nodes is forbidden"), false},
		{nil, false},
	} {
		if got := apiUnreachable(c.err); got != c.want {
			t.Errorf("apiUnreachable(%v) = %v", c.err, got)
		}
	}
}

// A node SSH waits for shows in the progress: which, where, the attempt
// and why (kube.Dialer.Note).
func TestSSHWaitIsInTheProgress(t *testing.T) {
	pr := &notes{fakeProgress: newProgress()}
	h := &hook{d: &Driver{}, op: &driverapi.Op{Progress: pr}, log: slog.New(slog.DiscardHandler)}
	tg := h.d.dialer(h).Target(kube.Plan{Name: "worker-1", Addr: "10.0.0.9"})
	if tg.OnRetry == nil {
		t.Fatal("no OnRetry on the driver's SSH targets")
	}
	tg.OnRetry(context.Background(), 4, errors.New("dial tcp 10.0.0.9:22: connect: no route to host"))
	if len(pr.got) != 1 || pr.got[0] != "waiting for worker-1 at 10.0.0.9:22 (SSH): attempt 4 failed: dial tcp 10.0.0.9:22: connect: no route to host" {
		t.Fatalf("note %q", pr.got)
	}
}

func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

// A kubectl request through the VIP reset by HAProxy (CI saw it during a
// master heal right after a keepalived failover) is run again; the API
// server's own refusal is not.
func TestRunKubeRetriesOnlyUnansweredRequests(t *testing.T) {
	var cordons, deletes atomic.Int32
	handler := func(e *remotetest.Exec) int {
		_, _ = io.Copy(io.Discard, e.Stdin)
		switch {
		case strings.Contains(e.Cmd, "cordon"):
			if cordons.Add(1) <= 2 {
				_, _ = io.WriteString(e.Stderr, "Unable to connect to the server: Patch \"https://10.77.64.2:16443/api/v1/nodes/m2\": read tcp 10.77.64.7:53094->10.77.64.2:16443: read: connection reset by peer\n")
				return 1
			}
			_, _ = io.WriteString(e.Stdout, "node/m2 cordoned\n")
			return 0
		default:
			deletes.Add(1)
			_, _ = io.WriteString(e.Stderr, "Error from server (Forbidden): nodes \"m2\" is forbidden\n")
			return 1
		}
	}
	x := kubectlHost(t, handler)
	d := &Driver{}
	ms := &session{node: &Node{Name: "m1", SSHAddr: "10.0.0.1"}, x: newNodeConn(x), log: slog.New(slog.DiscardHandler)}
	out, err := d.runKube(context.Background(), ms, kubectl("cordon", "m2"), d.sudo(remote.RunOpts{}))
	if err != nil || !strings.Contains(out, "cordoned") || cordons.Load() != 3 {
		t.Errorf("cordon: %q, %v after %d attempts; want success on the third", out, err, cordons.Load())
	}
	if _, err := d.runKube(context.Background(), ms, kubectl("delete", "node", "m2", "--ignore-not-found"), d.sudo(remote.RunOpts{})); err == nil || deletes.Load() != 1 {
		t.Errorf("delete refused by the API server: %v after %d attempts; want the error at once", err, deletes.Load())
	}
}

// kubectlHost is an SSH session to a scripted host whose kubectl commands
// run handler (and whose sudo probe succeeds).
func kubectlHost(t *testing.T, handler func(*remotetest.Exec) int) *remote.Session {
	t.Helper()
	srv := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "p"},
		Handler: remotetest.Scripted(remotetest.Rule{Match: regexp.MustCompile(`^sudo -n true$`)}, // the sudo probe
			remotetest.Rule{Match: regexp.MustCompile(`kubectl`), Run: handler})})
	host, port := splitAddr(t, srv.Addr)
	x, err := remote.OpenSession(context.Background(), remote.Target{Host: host, Port: port, User: "u", Password: "p",
		HostKeyPolicy: remote.InsecureIgnoreHostKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// A heal deletes the Node of a master whose server does not answer without
// a drain; one that answers but refuses us is not "down".
func TestServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedHost, closedPort := splitAddr(t, l.Addr().String())
	l.Close()
	srv := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "p"}})
	host, port := splitAddr(t, srv.Addr)
	for _, c := range []struct {
		name string
		tg   remote.Target
		down bool
	}{
		{"nothing listens", remote.Target{Host: closedHost, Port: closedPort, User: "u", Password: "p", MaxWait: 300 * time.Millisecond}, true},
		{"wrong password", remote.Target{Host: host, Port: port, User: "u", Password: "x", MaxWait: 300 * time.Millisecond}, false},
	} {
		c.tg.HostKeyPolicy = remote.InsecureIgnoreHostKey
		x, err := remote.OpenSession(context.Background(), c.tg)
		if err == nil {
			x.Close()
			t.Fatalf("%s: connected", c.name)
		}
		if got := serverDown(fmt.Errorf("master m1: %w", err)); got != c.down {
			t.Errorf("%s: serverDown(%v) = %v, want %v", c.name, err, got, c.down)
		}
	}
}
