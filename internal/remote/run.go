package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// sudoWrapper runs the command ($1) as a root shell's child so that an
// abort reaches all of it. On abort OpenSSH signals the session's process
// group as the login user: that reaches sudo, which passes SIGTERM on to
// its direct child only, and a SIGKILL from the user cannot touch root's
// processes. So this shell (sudo's child, root) catches the TERM and
// signals its whole process group, then kills what is left after 2 s. The
// command keeps the original stdin (an asynchronous list would get
// /dev/null).
const sudoWrapper = `exec 3<&0
trap 'trap "" TERM INT HUP; kill -TERM 0 2>/dev/null; i=0; while kill -0 "$child" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL 0' TERM INT HUP
sh -c "$1" sh 0<&3 3<&- &
child=$!
exec 3<&-
wait "$child"`

// DefaultKillGrace is how long an aborted command gets between SIGTERM and
// SIGKILL.
const DefaultKillGrace = 2 * time.Second

// RunOpts are the options of one command.
type RunOpts struct {
	// Stdin is fed to the command (nil: empty). Secrets are best passed
	// here: unlike arguments and Env they never appear in the remote
	// process list.
	Stdin io.Reader
	// Env is exported to the command (inside sudo, too). Names must be
	// shell identifiers; values are quoted. They are part of the command
	// line sent to the server (masked in errors and logs if listed in
	// Secrets), so use Stdin for values other users of the host must not
	// see in ps.
	Env map[string]string
	// Timeout bounds the command; on expiry it is aborted like a cancelled
	// context and the error wraps ErrTimeout and context.DeadlineExceeded.
	// Zero: only the context bounds it.
	Timeout time.Duration
	// Sudo runs the command as root: `sudo -n sh -c <cmd>` when the user
	// has NOPASSWD, else `sudo -S -k -p '' sh -c <cmd>` with the password
	// fed on stdin ahead of Stdin (never in the command line). For root it
	// is a no-op.
	Sudo bool
	// Secrets are masked, besides the client's own, in this command's
	// error, output lines and logs.
	Secrets []string
	// Output receives every line of stdout and stderr as it arrives
	// (secrets masked, at most MaxLineLen bytes, without the newline), one
	// call at a time, never after Run returns.
	Output func(stream Stream, line string)
	// MaxLineLen bounds lines given to Output (default 4 KiB).
	MaxLineLen int
	// MaxOutput is how many bytes of stdout and of stderr Result keeps: the
	// last ones (default 1 MiB).
	MaxOutput int
	// KillGrace is the time between SIGTERM and SIGKILL when the command
	// is aborted (default 2 s).
	KillGrace time.Duration
}

// Result is what a command left behind.
type Result struct {
	// ExitCode is the exit status (-1 if the command did not report one).
	ExitCode int
	// Stdout and Stderr are the last MaxOutput bytes of each stream, raw:
	// NOT masked, for the caller to parse. Never log them; log the Output
	// lines or the error instead.
	Stdout, Stderr string
	// StdoutTruncated and StderrTruncated tell that the command printed
	// more than MaxOutput bytes.
	StdoutTruncated, StderrTruncated bool
	Duration                         time.Duration
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run runs cmd, a shell command line, on the host and waits for it. Every
// value placed in cmd must be quoted with Quote or built with Command.
//
// A non-zero exit status yields a *CommandError along with the Result. When
// ctx ends (an LCM cancel) or Timeout expires, the command gets SIGTERM,
// then SIGKILL after KillGrace, its channel is closed and Run returns a
// *CommandError wrapping the context's error. Output is bounded in memory
// whatever the command prints.
func (c *Client) Run(ctx context.Context, cmd string, o RunOpts) (Result, error) {
	res := Result{ExitCode: -1}
	if strings.IndexByte(cmd, 0) >= 0 {
		return res, errors.New("remote: the command contains a NUL byte, which no shell command line can carry")
	}
	m := c.masker().with(o.Secrets)
	script, err := withEnv(cmd, o.Env)
	if err != nil {
		return res, err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout,
			fmt.Errorf("%w after %v: %w", ErrTimeout, o.Timeout, context.DeadlineExceeded))
		defer cancel()
	}
	masked := m.mask(cmd)
	cerr := func(err error, d time.Duration) *CommandError {
		return &CommandError{Host: c.host, Cmd: masked, Sudo: o.Sudo, ExitCode: -1, Duration: d, Err: err}
	}
	if err := context.Cause(ctx); err != nil {
		ce := cerr(err, 0)
		ce.NotStarted = true
		return res, ce
	}
	var stdin io.Reader = o.Stdin
	if o.Sudo {
		mode, err := c.sudo(ctx)
		if err != nil {
			return res, err
		}
		switch mode {
		case sudoNoPasswd:
			script = "sudo -n -- sh -c " + Quote(sudoWrapper) + " sudo-wrapper " + Quote(script)
		case sudoPassword:
			// -k: always ask, so that the password line is always consumed
			// by sudo and never reaches the command's stdin.
			script = "sudo -S -k -p '' -- sh -c " + Quote(sudoWrapper) + " sudo-wrapper " + Quote(script)
			rest := o.Stdin
			if rest == nil {
				rest = strings.NewReader("")
			}
			stdin = io.MultiReader(strings.NewReader(c.sudoPass+"\n"), rest)
		}
	}
	r, err := c.exec(ctx, script, stdin, m, &o)
	r.res.Duration = r.dur
	if err != nil {
		if lost := c.connLost(); lost != nil {
			err = fmt.Errorf("%w (%w)", lost, err)
		}
		ce := cerr(err, r.dur)
		ce.NotStarted = true
		return r.res, ce
	}
	res = r.res
	log := c.log.With("cmd", truncate(masked, 200), "sudo", o.Sudo)
	if r.abort != nil || r.exitErr != nil {
		ce := cerr(r.abort, r.dur)
		ce.ExitCode, ce.StdoutTail, ce.StderrTail = res.ExitCode, r.out.stdout().tail.String(), r.out.stderr().tail.String()
		var ee *ssh.ExitError
		if errors.As(r.exitErr, &ee) {
			ce.Signal = ee.Signal()
		} else if ce.Err == nil {
			ce.Err = r.exitErr // exit status missing, connection lost
			if lost := c.connLost(); lost != nil {
				ce.Err = fmt.Errorf("%w (%w)", lost, r.exitErr)
			}
		}
		log.Debug("command failed", "exit", ce.ExitCode, "signal", ce.Signal, "duration", r.dur, "err", ce.Err)
		return res, ce
	}
	log.Debug("command done", "duration", r.dur)
	return res, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withEnv prefixes cmd with exports of env (sorted, quoted).
func withEnv(cmd string, env map[string]string) (string, error) {
	if len(env) == 0 {
		return cmd, nil
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envNameRE.MatchString(k) {
			return "", fmt.Errorf("remote: invalid environment variable name %q", k)
		}
		if strings.IndexByte(env[k], 0) >= 0 {
			return "", fmt.Errorf("remote: environment variable %s contains a NUL byte", k)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, Quote(env[k]))
	}
	b.WriteString(cmd)
	return b.String(), nil
}

type execResult struct {
	res     Result
	out     *runOutput
	dur     time.Duration
	exitErr error // from Session.Wait
	abort   error // the context's cause when aborted
}

// exec runs script on a new session. err is set only when the command could
// not be started.
func (c *Client) exec(ctx context.Context, script string, stdin io.Reader, m *masker, o *RunOpts) (execResult, error) {
	r := execResult{res: Result{ExitCode: -1}}
	r.out = newRunOutput(m, o.Output, o.MaxLineLen, o.MaxOutput)
	start := time.Now()
	sess, err := c.newSession(ctx)
	if err != nil {
		r.dur = time.Since(start)
		return r, err
	}
	defer sess.Close()
	if stdin != nil {
		sess.Stdin = stdin
	}
	sess.Stdout, sess.Stderr = r.out.stdout(), r.out.stderr()
	if err := sess.Start(script); err != nil {
		r.dur = time.Since(start)
		return r, fmt.Errorf("start: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case r.exitErr = <-done:
	case <-ctx.Done():
		r.abort = context.Cause(ctx)
		r.exitErr = c.abort(sess, done, o.KillGrace)
	}
	r.out.finish()
	r.dur = time.Since(start)
	r.res.Stdout, r.res.StdoutTruncated = string(r.out.stdout().raw.bytes()), r.out.stdout().raw.truncated()
	r.res.Stderr, r.res.StderrTruncated = string(r.out.stderr().raw.bytes()), r.out.stderr().raw.truncated()
	var ee *ssh.ExitError
	switch {
	case r.exitErr == nil && r.abort == nil:
		r.res.ExitCode = 0
	case errors.As(r.exitErr, &ee):
		r.res.ExitCode = ee.ExitStatus()
	}
	return r, nil
}

// abort stops a running command: SIGTERM (OpenSSH signals the session's
// process group), SIGKILL after the grace time, then the channel is closed.
// It waits only briefly for the server to confirm.
func (c *Client) abort(sess *ssh.Session, done <-chan error, grace time.Duration) error {
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	_ = sess.Signal(ssh.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
	}
	_ = sess.Signal(ssh.SIGKILL)
	_ = sess.Close()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		return nil
	}
}

// newSession opens a session, giving up when ctx ends.
func (c *Client) newSession(ctx context.Context) (*ssh.Session, error) {
	type res struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.conn.NewSession()
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("open session: %w", r.err)
		}
		return r.s, nil
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

type sudoMode int

const (
	sudoUnknown sudoMode = iota
	sudoRoot
	sudoNoPasswd
	sudoPassword
)

// sudo finds out once per client how sudo works for the user.
func (c *Client) sudo(ctx context.Context) (sudoMode, error) {
	c.sudoMu.Lock()
	defer c.sudoMu.Unlock()
	if c.sudoMode != sudoUnknown {
		return c.sudoMode, nil
	}
	if c.user == "root" {
		c.sudoMode = sudoRoot
		return sudoRoot, nil
	}
	m := c.masker()
	probe := func(script, stdin string) (execResult, error) {
		var in io.Reader
		if stdin != "" {
			in = strings.NewReader(stdin)
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r, err := c.exec(pctx, script, in, m, &RunOpts{KillGrace: 100 * time.Millisecond})
		if err == nil && r.abort != nil {
			err = r.abort
		}
		if err != nil {
			return r, fmt.Errorf("remote: %s: checking sudo: %w", c.host, err)
		}
		return r, nil
	}
	r, err := probe("sudo -n true", "")
	if err != nil {
		return sudoUnknown, err
	}
	tail := func(r execResult) string { return r.out.stderr().tail.String() }
	switch {
	case r.res.ExitCode == 0:
		c.sudoMode = sudoNoPasswd
		return sudoNoPasswd, nil
	case r.res.ExitCode == 127:
		return sudoUnknown, &SudoError{Host: c.host, User: c.user, Reason: "sudo is not installed", StderrTail: tail(r)}
	case c.sudoPass == "":
		return sudoUnknown, &SudoError{Host: c.host, User: c.user,
			Reason: "sudo needs a password and none was given (Target.Password or Target.SudoPassword)", StderrTail: tail(r)}
	}
	r, err = probe("sudo -S -k -p '' true", c.sudoPass+"\n")
	if err != nil {
		return sudoUnknown, err
	}
	if r.res.ExitCode != 0 {
		return sudoUnknown, &SudoError{Host: c.host, User: c.user,
			Reason: "sudo rejected the password or the user may not use sudo", StderrTail: tail(r)}
	}
	c.sudoMode = sudoPassword
	return sudoPassword, nil
}
