package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

type fakeConn struct {
	runs, uploads int
	fail          error
	secrets       []string
	closed        bool
}

func (f *fakeConn) Host() string           { return "n1:22" }
func (f *fakeConn) HostKey() ssh.PublicKey { return nil }
func (f *fakeConn) Run(context.Context, string, RunOpts) (Result, error) {
	f.runs++
	if f.fail != nil {
		return Result{}, f.fail
	}
	return Result{Stdout: "ok"}, nil
}
func (f *fakeConn) Upload(context.Context, string, []byte, fs.FileMode) error {
	f.uploads++
	return f.fail
}
func (f *fakeConn) UploadAsRoot(ctx context.Context, p string, b []byte, m fs.FileMode) error {
	return f.Upload(ctx, p, b, m)
}
func (f *fakeConn) AddSecrets(v ...string) { f.secrets = append(f.secrets, v...) }
func (f *fakeConn) Close() error           { f.closed = true; return nil }

func TestSessionRedialsOnlyWhatNeverStarted(t *testing.T) {
	lost := &CommandError{Host: "n1", NotStarted: true, Err: fmt.Errorf("%w: reset", ErrConnectionLost)}
	ranAndLost := &CommandError{Host: "n1", ExitCode: -1, Err: fmt.Errorf("%w: reset", ErrConnectionLost)}
	for _, c := range []struct {
		name    string
		first   error
		retried bool
	}{
		{"lost before start", lost, true},
		{"garbled channel open", &CommandError{Host: "n1", NotStarted: true, Err: errors.New("open session: ssh: unexpected packet in response to channel open: <nil>")}, true},
		{"lost while running", ranAndLost, false},
		{"command failed", &CommandError{Host: "n1", ExitCode: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			old, fresh := &fakeConn{fail: c.first}, &fakeConn{}
			var dialed []Target
			dial := func(_ context.Context, tg Target) (conn, error) {
				dialed = append(dialed, tg)
				if len(dialed) == 1 {
					return old, nil
				}
				return fresh, nil
			}
			s, err := openSession(context.Background(), Target{Host: "n1", HostKeyPolicy: HostKeyRepin, Logger: slog.New(slog.DiscardHandler)}, dial)
			if err != nil {
				t.Fatal(err)
			}
			s.AddSecrets("tok-123")
			res, err := s.Run(context.Background(), "true", RunOpts{})
			if c.retried {
				if err != nil || res.Stdout != "ok" || len(dialed) != 2 || fresh.runs != 1 || !old.closed || len(fresh.secrets) != 1 {
					t.Fatalf("err %v stdout %q dials %d fresh runs %d old closed %v fresh secrets %v", err, res.Stdout, len(dialed), fresh.runs, old.closed, fresh.secrets)
				}
				if dialed[1].HostKeyPolicy != HostKeyPin {
					t.Fatalf("the reconnection used policy %v, want the pin the first connection made", dialed[1].HostKeyPolicy)
				}
				return
			}
			if err == nil || len(dialed) != 1 || fresh.runs != 0 {
				t.Fatalf("a command that may have run was repeated: err %v dials %d", err, len(dialed))
			}
		})
	}
}

func TestSessionRedialsAnUploadOnce(t *testing.T) {
	lost := fmt.Errorf("sftp: %w", ErrConnectionLost)
	conns := []*fakeConn{{fail: lost}, {fail: lost}}
	n := 0
	dial := func(context.Context, Target) (conn, error) { c := conns[n]; n++; return c, nil }
	s, err := openSession(context.Background(), Target{Host: "n1"}, dial)
	if err != nil {
		t.Fatal(err)
	}
	err = s.UploadAsRoot(context.Background(), "/x", []byte("y"), 0o600)
	if !errors.Is(err, ErrConnectionLost) || n != 2 || conns[1].uploads != 1 {
		t.Fatalf("err %v dials %d: want one reconnection, then the second failure", err, n)
	}
}

// blockingConn runs "long" until release is closed and refuses any other
// command with a channel-open failure, as sshd does beyond MaxSessions.
type blockingConn struct {
	fakeConn
	mu      sync.Mutex
	started chan struct{}
	release chan struct{}
}

func (b *blockingConn) Run(_ context.Context, cmd string, _ RunOpts) (Result, error) {
	if cmd == "long" {
		close(b.started)
		<-b.release
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed {
			return Result{}, &CommandError{Host: "n1", ExitCode: -1, Err: ErrConnectionLost}
		}
		return Result{Stdout: "long done"}, nil
	}
	return Result{}, &CommandError{Host: "n1", NotStarted: true, Err: errors.New("open session: ssh: rejected: administratively prohibited (open failed)")}
}

func (b *blockingConn) Close() error { b.mu.Lock(); defer b.mu.Unlock(); b.closed = true; return nil }

func (b *blockingConn) isClosed() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.closed }

func TestSessionReconnectLetsRunningCommandsFinish(t *testing.T) {
	for _, closeSession := range []bool{false, true} {
		t.Run(fmt.Sprintf("close session while draining=%v", closeSession), func(t *testing.T) {
			old := &blockingConn{started: make(chan struct{}), release: make(chan struct{})}
			fresh := &fakeConn{}
			n := 0
			dial := func(context.Context, Target) (conn, error) {
				n++
				if n == 1 {
					return old, nil
				}
				return fresh, nil
			}
			s, err := openSession(context.Background(), Target{Host: "n1"}, dial)
			if err != nil {
				t.Fatal(err)
			}
			long := make(chan error, 1)
			go func() {
				res, err := s.Run(context.Background(), "long", RunOpts{})
				if err == nil && res.Stdout != "long done" {
					err = fmt.Errorf("stdout %q", res.Stdout)
				}
				long <- err
			}()
			<-old.started
			res, err := s.Run(context.Background(), "short", RunOpts{})
			if err != nil || res.Stdout != "ok" || n != 2 || fresh.runs != 1 {
				t.Fatalf("short: err %v stdout %q dials %d: want it run once on a new connection", err, res.Stdout, n)
			}
			if old.isClosed() {
				t.Fatal("the replaced connection was closed while a command was still running on it")
			}
			if closeSession {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if !old.isClosed() || !fresh.closed {
					t.Fatalf("Close: replaced connection closed %v, current closed %v: want both", old.isClosed(), fresh.closed)
				}
				close(old.release)
				if err := <-long; err == nil {
					t.Fatal("the command on a connection closed by Session.Close reported success")
				}
				return
			}
			close(old.release)
			if err := <-long; err != nil {
				t.Fatalf("the running command: %v", err)
			}
			if !old.isClosed() {
				t.Fatal("the replaced connection is still open after its last command ended")
			}
			if fresh.closed {
				t.Fatal("the current connection was closed")
			}
		})
	}
}
