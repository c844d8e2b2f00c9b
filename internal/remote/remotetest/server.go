// Package remotetest is an in-process SSH server for tests of code that
// uses package remote: password, keyboard-interactive and public-key login,
// exec requests run by a Handler (by default a real /bin/sh in a
// directory), env and signal requests, and an SFTP subsystem backed by the
// same directory. It records the commands it was asked to run.
package remotetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Exec is one exec request.
type Exec struct {
	Cmd  string
	User string
	// Env holds the variables the client set with env requests ("K=V").
	Env []string
	// Stdin reads what the client sends; Stdout and Stderr go to it.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals delivers the client's signal requests ("TERM", "KILL").
	Signals <-chan ssh.Signal
	// Context ends when the client closes the channel or the server stops.
	Context context.Context
	// Dir is the server's directory.
	Dir string
}

// NoExitStatus, returned by a Handler, closes the channel without an
// exit-status message.
const NoExitStatus = -1

// Handler runs an exec request and returns its exit status.
type Handler func(e *Exec) int

// Options configure a Server.
type Options struct {
	// Passwords maps users to their passwords.
	Passwords map[string]string
	// AuthorizedKeys maps users to the public keys they may log in with.
	AuthorizedKeys map[string][]ssh.PublicKey
	// KeyboardInteractiveOnly accepts passwords only through
	// keyboard-interactive (like sshd with PAM and PasswordAuthentication
	// no).
	KeyboardInteractiveOnly bool
	// HostKeys are the server's keys; default one fresh ed25519 key.
	HostKeys []ssh.Signer
	// NoSFTP refuses the sftp subsystem.
	NoSFTP bool
	// Dir is the working directory of the commands and the SFTP root;
	// default a test temp dir.
	Dir string
	// Handler runs commands; default Shell.
	Handler Handler
	// Addr to listen on; default 127.0.0.1:0.
	Addr string
	// DropFirst closes the first n TCP connections right after accepting
	// them (an sshd that is still starting: the client sees EOF).
	DropFirst int
}

// Server is a running in-process SSH server.
type Server struct {
	// Addr is "127.0.0.1:port".
	Addr string
	Dir  string

	opts   Options
	ln     net.Listener
	cfg    *ssh.ServerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	cmds     []string
	accepted int
	logins   int
	conns    map[net.Conn]bool
}

// NewHostKey makes a fresh ed25519 host key.
func NewHostKey(tb testing.TB) ssh.Signer {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Start starts a server and stops it when the test ends.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	if len(o.HostKeys) == 0 {
		o.HostKeys = []ssh.Signer{NewHostKey(tb)}
	}
	if o.Handler == nil {
		o.Handler = Shell
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), Dir: o.Dir, opts: o, ln: ln, conns: map[net.Conn]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(c ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range o.AuthorizedKeys[c.User()] {
				if slices.Equal(k.Marshal(), key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("unknown key")
		},
	}
	check := func(user, pw string) error {
		if want, ok := o.Passwords[user]; ok && want == pw {
			return nil
		}
		return errors.New("wrong password")
	}
	if o.KeyboardInteractiveOnly {
		s.cfg.KeyboardInteractiveCallback = func(c ssh.ConnMetadata, ch ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
			ans, err := ch("", "", []string{"Password: "}, []bool{false})
			if err != nil || len(ans) != 1 {
				return nil, errors.New("no answer")
			}
			return nil, check(c.User(), ans[0])
		}
	} else {
		s.cfg.PasswordCallback = func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			return nil, check(c.User(), string(pw))
		}
	}
	for _, k := range o.HostKeys {
		s.cfg.AddHostKey(k)
	}
	s.wg.Add(1)
	go s.accept()
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server and drops its connections.
func (s *Server) Close() {
	s.cancel()
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Commands returns the commands the server was asked to run, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cmds)
}

// Accepted is the number of TCP connections accepted; Logins the number of
// successful logins.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Logins is the number of successful logins.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// HostKey is the server's first host key.
func (s *Server) HostKey() ssh.PublicKey { return s.opts.HostKeys[0].PublicKey() }

// HostKeyRaw is the server's first host key signer.
func (s *Server) HostKeyRaw() ssh.Signer { return s.opts.HostKeys[0] }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.accepted++
		drop := s.accepted <= s.opts.DropFirst
		s.conns[c] = true
		s.mu.Unlock()
		if drop {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
			s.serveConn(c)
		}()
	}
}

func (s *Server) serveConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	defer sc.Close()
	s.mu.Lock()
	s.logins++
	s.mu.Unlock()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.session(sc.User(), ch, creqs)
		}()
	}
}

func (s *Server) session(user string, ch ssh.Channel, reqs <-chan *ssh.Request) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var env []string
	sigs := make(chan ssh.Signal, 8)
	started := false
	var done sync.WaitGroup
	defer done.Wait()
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil {
				env = append(env, kv.Name+"="+kv.Value)
			}
			_ = req.Reply(true, nil)
		case "exec":
			var p struct{ Command string }
			if started || ssh.Unmarshal(req.Payload, &p) != nil {
				_ = req.Reply(false, nil)
				continue
			}
			started = true
			s.mu.Lock()
			s.cmds = append(s.cmds, p.Command)
			s.mu.Unlock()
			_ = req.Reply(true, nil)
			e := &Exec{Cmd: p.Command, User: user, Env: slices.Clone(env), Stdin: ch, Stdout: ch, Stderr: ch.Stderr(),
				Signals: sigs, Context: ctx, Dir: s.opts.Dir}
			done.Add(1)
			go func() {
				defer done.Done()
				code := s.opts.Handler(e)
				if code != NoExitStatus {
					_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
				}
				ch.Close()
			}()
		case "subsystem":
			var p struct{ Name string }
			if started || s.opts.NoSFTP || ssh.Unmarshal(req.Payload, &p) != nil || p.Name != "sftp" {
				_ = req.Reply(false, nil)
				continue
			}
			started = true
			_ = req.Reply(true, nil)
			done.Add(1)
			go func() {
				defer done.Done()
				srv, err := sftp.NewServer(ch, sftp.WithServerWorkingDirectory(s.opts.Dir))
				if err == nil {
					_ = srv.Serve()
					srv.Close()
				}
				ch.Close()
			}()
		case "signal":
			var p struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &p) == nil {
				select {
				case sigs <- ssh.Signal(p.Signal):
				default:
				}
			}
			if req.WantReply {
				_ = req.Reply(true, nil)
			}
		default:
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}
	// The client closed the channel: stop the command.
	cancel()
}

var signals = map[ssh.Signal]syscall.Signal{
	ssh.SIGTERM: syscall.SIGTERM, ssh.SIGKILL: syscall.SIGKILL, ssh.SIGINT: syscall.SIGINT,
	ssh.SIGHUP: syscall.SIGHUP, ssh.SIGQUIT: syscall.SIGQUIT, ssh.SIGUSR1: syscall.SIGUSR1, ssh.SIGUSR2: syscall.SIGUSR2,
}

// Shell runs the command with /bin/sh -c in the server's directory, in its
// own process group: signal requests go to the group, and closing the
// channel kills it.
func Shell(e *Exec) int {
	cmd := exec.Command("/bin/sh", "-c", e.Cmd)
	cmd.Dir = e.Dir
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + e.Dir,
		"LANG=C.UTF-8", "USER=" + e.User}, e.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.Stdin, e.Stdout, e.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 200 * time.Millisecond
	if err := cmd.Start(); err != nil {
		_, _ = io.WriteString(e.Stderr, err.Error()+"\n")
		return 127
	}
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-e.Signals:
				if n, ok := signals[sig]; ok {
					_ = syscall.Kill(-cmd.Process.Pid, n)
				}
			case <-e.Context.Done():
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				return
			case <-exited:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(exited)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return 1
	}
	return 0
}

// Getenv returns the value of a variable the client set, or "".
func (e *Exec) Getenv(name string) string {
	for _, kv := range slices.Backward(e.Env) {
		if len(kv) > len(name) && kv[:len(name)] == name && kv[len(name)] == '=' {
			return kv[len(name)+1:]
		}
	}
	return ""
}

// Rule answers the commands its pattern matches (see Scripted).
type Rule struct {
	// Match is matched against the whole command line.
	Match *regexp.Regexp
	// Stdout, Stderr and Exit are the canned answer.
	Stdout, Stderr string
	Exit           int
	// Run, when set, handles the command instead of the canned answer.
	Run Handler
}

// Scripted answers commands from rules instead of running them: the first
// rule whose Match matches wins; a command no rule matches gets exit status
// 127 and "remotetest: no rule for: <cmd>" on stderr, like a command that
// does not exist. Stdin is drained first, as a real command would.
func Scripted(rules ...Rule) Handler {
	return func(e *Exec) int {
		for _, r := range rules {
			if r.Match == nil || !r.Match.MatchString(e.Cmd) {
				continue
			}
			if r.Run != nil {
				return r.Run(e)
			}
			_, _ = io.Copy(io.Discard, e.Stdin)
			_, _ = io.WriteString(e.Stdout, r.Stdout)
			_, _ = io.WriteString(e.Stderr, r.Stderr)
			return r.Exit
		}
		_, _ = io.Copy(io.Discard, e.Stdin)
		_, _ = io.WriteString(e.Stderr, "remotetest: no rule for: "+e.Cmd+"\n")
		return 127
	}
}
