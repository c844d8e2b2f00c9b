package kubeadm

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

type fakeExec struct {
	runs    int
	failRun error
	secrets []string
	closed  bool
}

func (f *fakeExec) Run(context.Context, string, remote.RunOpts) (remote.Result, error) {
	f.runs++
	if f.failRun != nil {
		return remote.Result{}, f.failRun
	}
	return remote.Result{Stdout: "ok"}, nil
}
func (f *fakeExec) UploadAsRoot(context.Context, string, []byte, fs.FileMode) error { return nil }
func (f *fakeExec) AddSecrets(v ...string)                                          { f.secrets = append(f.secrets, v...) }
func (f *fakeExec) Close() error                                                    { f.closed = true; return nil }

func TestRedialingRetriesOnlyCommandsThatNeverStarted(t *testing.T) {
	lost := &remote.CommandError{Host: "n1", NotStarted: true, Err: fmt.Errorf("%w: reset", remote.ErrConnectionLost)}
	ranAndLost := &remote.CommandError{Host: "n1", ExitCode: -1, Err: fmt.Errorf("%w: reset", remote.ErrConnectionLost)}
	for _, c := range []struct {
		name    string
		first   error
		retried bool
	}{
		{"lost before start", lost, true},
		{"garbled channel open", &remote.CommandError{Host: "n1", NotStarted: true, Err: fmt.Errorf("open session: ssh: unexpected packet in response to channel open: <nil>")}, true},
		{"lost while running", ranAndLost, false},
		{"command failed", &remote.CommandError{Host: "n1", ExitCode: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := &fakeExec{failRun: c.first}
			fresh := &fakeExec{}
			dials := 0
			r := &redialing{x: old, log: slog.New(slog.DiscardHandler), dial: func(context.Context, remote.Target) (executor, error) {
				dials++
				return fresh, nil
			}}
			r.AddSecrets("tok-123")
			res, err := r.Run(context.Background(), "true", remote.RunOpts{})
			if c.retried {
				if err != nil || res.Stdout != "ok" || dials != 1 || fresh.runs != 1 || !old.closed || len(fresh.secrets) != 1 {
					t.Fatalf("err %v stdout %q dials %d fresh runs %d old closed %v fresh secrets %v", err, res.Stdout, dials, fresh.runs, old.closed, fresh.secrets)
				}
				return
			}
			if err == nil || dials != 0 || fresh.runs != 0 {
				t.Fatalf("a command that may have run was repeated: err %v dials %d", err, dials)
			}
		})
	}
}
