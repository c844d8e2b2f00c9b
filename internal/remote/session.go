package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"golang.org/x/crypto/ssh"
)

// conn is what a Session needs of a connection (*Client).
type conn interface {
	Host() string
	HostKey() ssh.PublicKey
	Run(ctx context.Context, cmd string, opts RunOpts) (Result, error)
	Upload(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	AddSecrets(values ...string)
	Close() error
}

var _ Executor = (*Session)(nil)

// Session is a connection to one host that reconnects, once per failure,
// when a command or an upload could not start: no session could be opened
// on the connection (it was lost, or a freshly replaced host garbled the
// channel open). Nothing ran, so running it again is safe; a command that
// may have run is never repeated. The reconnection verifies the host key
// against the pin the first connection made (HostKeyPin, whatever policy
// the first connection used), so a host that changed its key in between is
// refused. Secrets added to the session stay masked on the new connection.
//
// A session that could not be opened does not always mean the connection is
// gone: sshd refuses channels beyond MaxSessions while the ones it has keep
// running. So the replaced connection is closed only once the commands and
// uploads still using it have ended; closing it at once would kill them.
type Session struct {
	mu       sync.Mutex
	c        conn
	inUse    map[conn]int  // commands and uploads running, per connection
	retiring map[conn]bool // replaced: closed when its last user ends
	target   Target
	dial     func(context.Context, Target) (conn, error)
	log      *slog.Logger
	secrets  []string
}

func dialConn(ctx context.Context, t Target) (conn, error) { return Dial(ctx, t) }

// OpenSession dials t (see Dial) and returns the connection as a Session.
func OpenSession(ctx context.Context, t Target) (*Session, error) {
	return openSession(ctx, t, dialConn)
}

func openSession(ctx context.Context, t Target, dial func(context.Context, Target) (conn, error)) (*Session, error) {
	c, err := dial(ctx, t)
	if err != nil {
		return nil, err
	}
	again := t
	if again.HostKeyPolicy == HostKeyRepin {
		again.HostKeyPolicy = HostKeyPin // the first connection re-pinned the key
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Session{c: c, inUse: map[conn]int{}, retiring: map[conn]bool{}, target: again, dial: dial, log: log}, nil
}

func (s *Session) current() conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// acquire returns the current connection, counted as in use until release.
func (s *Session) acquire() conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse[s.c]++
	return s.c
}

// release ends one use of c and closes c when it was replaced and this was
// its last user.
func (s *Session) release(c conn) {
	s.mu.Lock()
	s.inUse[c]--
	last := s.inUse[c] <= 0
	if last {
		delete(s.inUse, c)
	}
	closeIt := last && s.retiring[c]
	if closeIt {
		delete(s.retiring, c)
	}
	s.mu.Unlock()
	if closeIt {
		_ = c.Close()
	}
}

// notStarted tells whether err means the command or upload never started:
// no session could be opened, or an upload's connection went away (uploads
// are atomic renames: safe to redo).
func notStarted(err error) bool {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.NotStarted
	}
	return err != nil && errors.Is(err, ErrConnectionLost)
}

func (s *Session) reconnect(ctx context.Context, lost conn, cause error) (conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != lost { // another caller already reconnected
		return s.c, nil
	}
	s.log.Warn("no SSH session could be opened; reconnecting once", "host", lost.Host(), "err", cause)
	nc, err := s.dial(ctx, s.target)
	if err != nil {
		return nil, err
	}
	nc.AddSecrets(s.secrets...)
	s.c = nc
	if s.inUse[lost] > 0 {
		s.retiring[lost] = true // still running commands: closed by their release
		return nc, nil
	}
	_ = lost.Close()
	return nc, nil
}

// retry runs f on the current connection and, when it did not start, once
// more on a new one.
func (s *Session) retry(ctx context.Context, f func(conn) error) error {
	c := s.acquire()
	err := f(c)
	s.release(c)
	if !notStarted(err) {
		return err
	}
	if _, derr := s.reconnect(ctx, c, err); derr != nil {
		return fmt.Errorf("%w (reconnecting failed too: %v)", err, derr)
	}
	nc := s.acquire()
	defer s.release(nc)
	return f(nc)
}

// Run runs cmd as Client.Run does.
func (s *Session) Run(ctx context.Context, cmd string, o RunOpts) (Result, error) {
	var res Result
	err := s.retry(ctx, func(c conn) error {
		var err error
		res, err = c.Run(ctx, cmd, o)
		return err
	})
	return res, err
}

// Upload copies data to path as the login user (Client.Upload).
func (s *Session) Upload(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	return s.retry(ctx, func(c conn) error { return c.Upload(ctx, path, data, mode) })
}

// UploadAsRoot copies data to path as root (Client.UploadAsRoot).
func (s *Session) UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	return s.retry(ctx, func(c conn) error { return c.UploadAsRoot(ctx, path, data, mode) })
}

// AddSecrets masks values on this connection and on any later one.
func (s *Session) AddSecrets(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, values...)
	s.c.AddSecrets(values...)
}

// Host is the address of the host ("host:port").
func (s *Session) Host() string { return s.current().Host() }

// HostKey is the host key the host presented (and that is pinned).
func (s *Session) HostKey() ssh.PublicKey { return s.current().HostKey() }

// Close closes the current connection and any replaced one still draining.
func (s *Session) Close() error {
	s.mu.Lock()
	old := make([]conn, 0, len(s.retiring))
	for c := range s.retiring {
		old = append(old, c)
	}
	clear(s.retiring)
	c := s.c
	s.mu.Unlock()
	for _, o := range old {
		_ = o.Close()
	}
	return c.Close()
}
