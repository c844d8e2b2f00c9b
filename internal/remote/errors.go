package remote

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/sshpin"
)

// ErrTimeout is in the chain of the error of a command that ran longer than
// RunOpts.Timeout (together with context.DeadlineExceeded).
var ErrTimeout = errors.New("command timed out")

// ErrPinConflict is returned (wrapped) by PinStore.Put when a different key
// of the same type is already pinned for that server and address.
var ErrPinConflict = sshpin.ErrConflict

// maxCmdInError bounds the command text in error messages; CommandError.Cmd
// keeps it whole.
const maxCmdInError = 300

// CommandError reports a command that ran and did not succeed: it exited
// with a non-zero status, was killed by a signal, was aborted (context
// cancelled or RunOpts.Timeout reached), or lost its connection. Every text
// field has secrets masked.
type CommandError struct {
	// Host is the address the client is connected to ("host:port").
	Host string
	// Cmd is the command as given to Run (without the sudo wrapper).
	Cmd string
	// Sudo tells whether it ran through sudo.
	Sudo bool
	// ExitCode is the command's exit status; -1 when the server reported
	// none (aborted, connection lost); 128+n when killed by signal n.
	ExitCode int
	// Signal names the signal that killed the command ("TERM", "KILL"), if
	// the server said so.
	Signal string
	// StdoutTail and StderrTail are the last lines of the output (at most
	// TailLines lines and TailBytes bytes each).
	StdoutTail, StderrTail string
	// Duration is how long the command ran.
	Duration time.Duration
	// NotStarted tells that the command never started (no session could
	// be opened, or the context had ended): it is safe to retry.
	NotStarted bool
	// Err is why the command has no exit status: the context's error (an
	// LCM cancel: context.Canceled; RunOpts.Timeout: ErrTimeout and
	// context.DeadlineExceeded), or a connection error. Nil for a command
	// that exited on its own.
	Err error
}

func (e *CommandError) Error() string {
	var b strings.Builder
	cmd := e.Cmd
	if len(cmd) > maxCmdInError {
		cmd = cmd[:maxCmdInError] + "…"
	}
	what := "command"
	if e.Sudo {
		what = "sudo command"
	}
	fmt.Fprintf(&b, "remote: %s: %s %q ", e.Host, what, cmd)
	switch {
	case e.NotStarted:
		fmt.Fprintf(&b, "not started: %v", e.Err)
	case e.Err != nil:
		fmt.Fprintf(&b, "aborted after %v: %v", e.Duration.Round(time.Millisecond), e.Err)
	case e.Signal != "":
		fmt.Fprintf(&b, "killed by signal %s", e.Signal)
	default:
		fmt.Fprintf(&b, "failed with exit status %d", e.ExitCode)
	}
	if s := strings.TrimRight(e.StderrTail, "\n"); s != "" {
		b.WriteString("\nstderr (last lines):\n" + s)
	}
	if s := strings.TrimRight(e.StdoutTail, "\n"); s != "" {
		b.WriteString("\nstdout (last lines):\n" + s)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }

// ExitCode returns the exit status carried by err (a *CommandError with an
// exit status) and true, or -1 and false.
func ExitCode(err error) (int, bool) {
	var ce *CommandError
	if errors.As(err, &ce) && ce.ExitCode >= 0 {
		return ce.ExitCode, true
	}
	return -1, false
}

// AuthError reports that the server rejected every authentication method
// the client tried. It is permanent: Dial does not retry it (unless
// Target.RetryAuth).
type AuthError struct {
	User string
	Host string
	// Methods are the methods tried ("publickey", "password",
	// "keyboard-interactive").
	Methods []string
	Err     error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("remote: authentication failed for user %q on %s (tried %s): check the user name, password or private key",
		e.User, e.Host, strings.Join(e.Methods, ", "))
}

func (e *AuthError) Unwrap() error { return e.Err }

// HostKeyMismatchError reports a host key that does not match the pinned key
// or the fingerprints the cloud published. Dial returns it before
// authenticating, so nothing has been sent to or run on the host.
type HostKeyMismatchError struct {
	// Host is the address dialled ("host:port").
	Host string
	// ServerID and Address are the pin key.
	ServerID, Address string
	// KeyType is the type of the key the server offered ("ssh-ed25519"),
	// empty when it offered none of the pinned types.
	KeyType string
	// Got is the fingerprint of the offered key ("SHA256:..."), or a
	// description when no key of a pinned type was offered.
	Got string
	// Want are the acceptable fingerprints.
	Want []string
	// Source says where Want comes from: "pinned" (first contact with this
	// server) or "published" (the cloud's console log).
	Source string
}

func (e *HostKeyMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote: host key verification failed for %s", e.Host)
	if e.ServerID != "" {
		fmt.Fprintf(&b, " (server %s)", e.ServerID)
	}
	b.WriteString(": it offered ")
	if e.KeyType != "" {
		b.WriteString(e.KeyType + " key ")
	}
	b.WriteString(e.Got)
	if e.Source == "published" {
		fmt.Fprintf(&b, ", but the fingerprints the cloud published for it are %s.", strings.Join(e.Want, ", "))
	} else {
		fmt.Fprintf(&b, ", but the key pinned at first contact is %s.", strings.Join(e.Want, ", "))
	}
	b.WriteString(" Nothing was run on it. If the server was rebuilt or replaced, its key must be re-pinned" +
		" (a heal re-pins the replacement; for a rebuilt server with the same id call the pin store's Replace," +
		" or connect once with HostKeyPolicy Repin); otherwise someone may be intercepting the connection.")
	return b.String()
}

// ConnectError reports that Dial gave up: the overall deadline passed or the
// context ended while the host was still unreachable.
type ConnectError struct {
	Host     string
	User     string
	Attempts int
	Elapsed  time.Duration
	// Err is the last attempt's error.
	Err error
	// Cause is why Dial stopped retrying (context.Canceled,
	// context.DeadlineExceeded), nil for a permanent error.
	Cause error
}

func (e *ConnectError) Error() string {
	s := fmt.Sprintf("remote: cannot connect to %s as %q: gave up after %d attempt(s) in %v", e.Host, e.User, e.Attempts,
		e.Elapsed.Round(time.Millisecond))
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConnectError) Unwrap() []error {
	var out []error
	for _, err := range []error{e.Err, e.Cause} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// SudoError reports that a command could not be run through sudo: sudo is
// missing, the user may not use it, or it wants a password that was not
// given or was rejected.
type SudoError struct {
	Host   string
	User   string
	Reason string
	// StderrTail is sudo's own message (masked).
	StderrTail string
}

func (e *SudoError) Error() string {
	s := fmt.Sprintf("remote: %s: sudo as %q: %s", e.Host, e.User, e.Reason)
	if t := strings.TrimSpace(e.StderrTail); t != "" {
		s += ": " + t
	}
	return s
}
