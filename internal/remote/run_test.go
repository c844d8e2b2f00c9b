package remote_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

func TestRunExitStatus(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	for _, tc := range []struct {
		name, cmd          string
		code               int
		stdout, stderrTail string
	}{
		{"success", "echo hello", 0, "hello\n", ""},
		{"failure", "echo out; echo oops >&2; exit 3", 3, "out\n", "oops\n"},
		{"not found", "no-such-command-xyz", 127, "", "not found"},
		{"killed", "kill -KILL $$", 128 + 9, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Run(context.Background(), tc.cmd, remote.RunOpts{})
			if res.ExitCode != tc.code || res.Stdout != tc.stdout {
				t.Errorf("Run(%q) = exit %d stdout %q; want %d %q", tc.cmd, res.ExitCode, res.Stdout, tc.code, tc.stdout)
			}
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var ce *remote.CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %T %v, want *CommandError", err, err)
			}
			if ce.ExitCode != tc.code || ce.Cmd != tc.cmd || ce.Host != s.Addr || ce.Err != nil || ce.NotStarted {
				t.Errorf("CommandError = %+v", ce)
			}
			if !strings.Contains(ce.StderrTail, tc.stderrTail) || !strings.Contains(err.Error(), "exit status "+strconv.Itoa(tc.code)) {
				t.Errorf("error %q, stderr tail %q", err, ce.StderrTail)
			}
			if code, ok := remote.ExitCode(err); !ok || code != tc.code {
				t.Errorf("ExitCode(err) = %d, %v", code, ok)
			}
		})
	}
}

func TestRunStreamsLinesAsTheyCome(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	type line struct {
		stream remote.Stream
		text   string
		at     time.Time
	}
	var lines []line
	start := time.Now()
	_, err := c.Run(context.Background(), `echo one; echo err1 >&2; sleep 0.5; printf 'two\r\nthree'; printf '' >&2`, remote.RunOpts{
		Output: func(st remote.Stream, text string) { lines = append(lines, line{st, text, time.Now()}) },
	})
	end := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.stream.String()+":"+l.text)
	}
	// stdout and stderr are separate pipes: only their own order is fixed.
	want := map[remote.Stream][]string{remote.Stdout: {"one", "two", "three"}, remote.Stderr: {"err1"}}
	for st, w := range want {
		var g []string
		for _, l := range lines {
			if l.stream == st {
				g = append(g, l.text)
			}
		}
		if strings.Join(g, "|") != strings.Join(w, "|") {
			t.Errorf("%s lines = %q, want %q (all: %q)", st, g, w, got)
		}
	}
	// The first line was delivered while the command was still running.
	if len(lines) == 0 || lines[0].at.Sub(start) > end.Sub(start)-300*time.Millisecond {
		t.Errorf("first line at %v of %v: not streamed", lines[0].at.Sub(start), end.Sub(start))
	}
}

func TestRunStdinAndEnv(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	ctx := context.Background()

	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	res, err := c.Run(ctx, "sha256sum | cut -c1-64; wc -c < /dev/null", remote.RunOpts{Stdin: bytes.NewReader(big)})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := c.Run(ctx, "cat | wc -c", remote.RunOpts{Stdin: bytes.NewReader(big)})
	if err != nil || strings.TrimSpace(res2.Stdout) != strconv.Itoa(len(big)) {
		t.Fatalf("wc -c of 3 MiB stdin = %q, %v", res2.Stdout, err)
	}
	_ = res

	env := map[string]string{"PLAIN": "x", "TRICKY": "a'b; touch pwned-env #", "MULTI": "l1\nl2", "EMPTY": ""}
	res, err = c.Run(ctx, `printf '%s|%s|%s|%s' "$PLAIN" "$TRICKY" "$MULTI" "${EMPTY-unset}"`, remote.RunOpts{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x|a'b; touch pwned-env #|l1\nl2|"; res.Stdout != want {
		t.Errorf("env seen by the command = %q, want %q", res.Stdout, want)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "pwned-env")); err == nil {
		t.Error("an environment value was executed")
	}
	if _, err := c.Run(ctx, "true", remote.RunOpts{Env: map[string]string{"BAD-NAME": "x"}}); err == nil {
		t.Error("invalid env name accepted")
	}
	if _, err := c.Run(ctx, "echo a\x00b", remote.RunOpts{}); err == nil {
		t.Error("NUL in the command accepted")
	}
}

// waitGone waits until the process whose pid the command wrote is gone.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after the abort", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunCancelAndTimeout(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	for _, tc := range []struct {
		name    string
		cmd     string
		timeout time.Duration // RunOpts.Timeout; else the context is cancelled
		grace   time.Duration
		is      []error
		maxTime time.Duration
	}{
		{"cancel", "echo $$ > pid1; echo started; exec sleep 30", 0, 0, []error{context.Canceled}, time.Second},
		{"timeout", "echo $$ > pid2; echo started; exec sleep 30", 300 * time.Millisecond, 0,
			[]error{remote.ErrTimeout, context.DeadlineExceeded}, time.Second},
		{"ignores TERM", "trap '' TERM; echo $$ > pid3; echo started; while :; do sleep 0.05; done", 0, 300 * time.Millisecond,
			[]error{context.Canceled}, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			var aborted time.Time
			opts := remote.RunOpts{Timeout: tc.timeout, KillGrace: tc.grace, Output: func(_ remote.Stream, l string) {
				if l == "started" && tc.timeout == 0 {
					once.Do(func() {
						time.AfterFunc(200*time.Millisecond, func() { aborted = time.Now(); cancel() })
					})
				}
			}}
			start := time.Now()
			res, err := c.Run(ctx, tc.cmd, opts)
			took := time.Since(start)
			var ce *remote.CommandError
			if !errors.As(err, &ce) || ce.ExitCode != -1 && ce.Err == nil {
				t.Fatalf("err = %v, want an aborted *CommandError", err)
			}
			for _, want := range tc.is {
				if !errors.Is(err, want) {
					t.Errorf("errors.Is(%v, %v) = false", err, want)
				}
			}
			if !strings.Contains(ce.StdoutTail, "started") || !strings.Contains(err.Error(), "aborted after") {
				t.Errorf("error lacks context: %v (tail %q)", err, ce.StdoutTail)
			}
			if tc.timeout == 0 {
				took = time.Since(aborted)
			}
			if took > tc.maxTime {
				t.Errorf("returned %v after the abort, want < %v", took, tc.maxTime)
			}
			waitGone(t, filepath.Join(s.Dir, "pid"+strconv.Itoa(map[string]int{"cancel": 1, "timeout": 2, "ignores TERM": 3}[tc.name])))
			_ = res
			// The connection is still usable.
			if _, err := c.Run(context.Background(), "true", remote.RunOpts{}); err != nil {
				t.Errorf("next command: %v", err)
			}
		})
	}
	// An already cancelled context starts nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := len(s.Commands())
	_, err := c.Run(ctx, "touch never", remote.RunOpts{})
	var ce *remote.CommandError
	if !errors.As(err, &ce) || !ce.NotStarted || !errors.Is(err, context.Canceled) || len(s.Commands()) != before {
		t.Errorf("Run with a cancelled context: %v", err)
	}
}

func TestRunOutputIsBounded(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	var calls, longest int
	var last string
	opts := remote.RunOpts{MaxOutput: 64 << 10, MaxLineLen: 1000, Output: func(_ remote.Stream, l string) {
		calls++
		longest = max(longest, len(l))
		last = l
	}}
	// 20 MB on one line, then 200k short lines on stderr, then exit 1.
	res, err := c.Run(context.Background(),
		`head -c 20000000 /dev/zero | tr '\0' x; echo; seq 1 200000 >&2; echo end; exit 1`, opts)
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 1 {
		t.Fatalf("err = %v", err)
	}
	if len(res.Stdout) != 64<<10 || !res.StdoutTruncated || !strings.HasSuffix(res.Stdout, "x\nend\n") {
		t.Errorf("Stdout: %d bytes (truncated %v), suffix %q", len(res.Stdout), res.StdoutTruncated, res.Stdout[max(0, len(res.Stdout)-10):])
	}
	if len(res.Stderr) != 64<<10 || !res.StderrTruncated || !strings.HasSuffix(res.Stderr, "199999\n200000\n") {
		t.Errorf("Stderr: %d bytes (truncated %v)", len(res.Stderr), res.StderrTruncated)
	}
	if calls != 200002 || last == "" {
		t.Errorf("Output called %d times, want 200002", calls)
	}
	if longest > 1000+40 {
		t.Errorf("longest line given to Output: %d bytes", longest)
	}
	stderrLines := strings.Split(strings.TrimSuffix(ce.StderrTail, "\n"), "\n")
	if len(stderrLines) != remote.TailLines || stderrLines[len(stderrLines)-1] != "200000" || len(ce.StderrTail) > remote.TailBytes {
		t.Errorf("stderr tail: %d lines, %d bytes, last %q", len(stderrLines), len(ce.StderrTail), stderrLines[len(stderrLines)-1])
	}
	if len(ce.StdoutTail) > remote.TailBytes || !strings.Contains(ce.StdoutTail, "bytes truncated]") {
		t.Errorf("stdout tail: %d bytes: %.80q", len(ce.StdoutTail), ce.StdoutTail)
	}
	if len(err.Error()) > 2*remote.TailBytes+1000 {
		t.Errorf("error text is %d bytes", len(err.Error()))
	}
}

func TestSecretsAreMasked(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	tg := targetFor(t, s)
	tg.Secrets = []string{"client-wide-token-123"}
	var logs bytes.Buffer
	var logMu sync.Mutex
	tg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := dial(t, tg)
	const secret = "op-s3cret'\"$x" // with quote characters: masked in its quoted forms too
	key := "-----BEGIN KEY-----\nAAAAsecretline1\nBBBBsecretline2\n-----END KEY-----"
	var lines []string
	cmd := remote.Command("sh", "-c", `echo "pw=$1 pass=$2 tok=$3"; printf '%s\n' "$4" >&2; exit 4`, "x", secret, testPass,
		"client-wide-token-123", key)
	_, err := c.Run(context.Background(), cmd, remote.RunOpts{
		Secrets: []string{secret, key},
		Output:  func(_ remote.Stream, l string) { lines = append(lines, l) },
	})
	var ce *remote.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v", err)
	}
	logMu.Lock()
	everything := strings.Join(append(lines, err.Error(), ce.Cmd, ce.StdoutTail, ce.StderrTail, logs.String()), "\n")
	logMu.Unlock()
	if !strings.Contains(everything, "command failed") {
		t.Errorf("no command log: %s", everything)
	}
	for _, leak := range []string{secret, remote.Quote(secret), testPass, "client-wide-token-123", "secretline1", "secretline2", "s3cret"} {
		if strings.Contains(everything, leak) {
			t.Errorf("%q leaked:\n%s", leak, everything)
		}
	}
	if !strings.Contains(ce.StdoutTail, "pw="+remote.Mask+" pass="+remote.Mask+" tok="+remote.Mask) {
		t.Errorf("stdout tail = %q", ce.StdoutTail)
	}

	// A secret cut by the line length limit does not leak its beginning.
	lines = nil
	long := strings.Repeat("x", 995) + "ZQ" + "VERYSECRETVALUE" + strings.Repeat("y", 100)
	_, err = c.Run(context.Background(), remote.Command("printf", "%s\n", long), remote.RunOpts{
		MaxLineLen: 1000, Secrets: []string{"ZQVERYSECRETVALUE"},
		Output: func(_ remote.Stream, l string) { lines = append(lines, l) },
	})
	if err != nil || len(lines) != 1 {
		t.Fatalf("lines %q, %v", lines, err)
	}
	if strings.Contains(lines[0], "ZQV") || !strings.Contains(lines[0], "bytes truncated]") {
		t.Errorf("truncated line leaks the start of a secret or lacks the marker: %q", lines[0][990:])
	}

	// Secrets added later are masked from then on.
	c.AddSecrets("learned-join-token")
	_, err = c.Run(context.Background(), "echo learned-join-token; exit 1", remote.RunOpts{})
	if err == nil || strings.Contains(err.Error(), "learned-join-token") {
		t.Errorf("AddSecrets: %v", err)
	}
}

func TestRunManyInParallelOnOneConnection(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	c := dial(t, targetFor(t, s))
	items := make([]int, 20)
	for i := range items {
		items[i] = i
	}
	start := time.Now()
	errs := remote.ForEach(context.Background(), items, 0, func(ctx context.Context, i int) error {
		res, err := c.Run(ctx, fmt.Sprintf("sleep 0.3; echo %d", i), remote.RunOpts{})
		if err == nil && strings.TrimSpace(res.Stdout) != strconv.Itoa(i) {
			err = fmt.Errorf("got %q", res.Stdout)
		}
		return err
	})
	if err := remote.JoinErrors(items, errs, strconv.Itoa); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("20 × 0.3 s on one connection took %v: not parallel", took)
	}
}

// remotetest.Scripted answers commands from canned rules (for driver tests).
func TestScriptedServer(t *testing.T) {
	s := startServer(t, remotetest.Options{Handler: remotetest.Scripted(
		remotetest.Rule{Match: regexp.MustCompile(`^kubeadm token create`), Stdout: "abcdef.0123456789abcdef\n"},
		remotetest.Rule{Match: regexp.MustCompile(`^kubectl drain`), Stderr: "error: cannot evict pod web-1\n", Exit: 1},
		remotetest.Rule{Match: regexp.MustCompile(`^echo-env$`), Run: func(e *remotetest.Exec) int {
			_, _ = io.WriteString(e.Stdout, e.User+"\n")
			return 0
		}},
	)})
	c := dial(t, targetFor(t, s))
	ctx := context.Background()
	res, err := c.Run(ctx, remote.Command("kubeadm", "token", "create", "--ttl", "10m"), remote.RunOpts{})
	if err != nil || res.Stdout != "abcdef.0123456789abcdef\n" {
		t.Fatalf("token = %q, %v", res.Stdout, err)
	}
	_, err = c.Run(ctx, "kubectl drain w1", remote.RunOpts{})
	if code, _ := remote.ExitCode(err); code != 1 || !strings.Contains(err.Error(), "cannot evict pod web-1") {
		t.Fatalf("drain: %v", err)
	}
	if res, err := c.Run(ctx, "echo-env", remote.RunOpts{}); err != nil || res.Stdout != testUser+"\n" {
		t.Fatalf("custom rule: %q %v", res.Stdout, err)
	}
	if _, err := c.Run(ctx, "rm -rf /", remote.RunOpts{}); !strings.Contains(fmt.Sprint(err), "status 127") {
		t.Fatalf("unmatched: %v", err)
	}
	if got := s.Commands(); len(got) != 4 || got[3] != "rm -rf /" {
		t.Errorf("recorded commands: %q", got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
