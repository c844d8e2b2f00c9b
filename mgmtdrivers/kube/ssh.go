package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Login is how to log in to a host over SSH: a user and a password and/or a
// private key (PEM, optionally encrypted with Passphrase). The user needs
// sudo on the nodes.
type Login struct {
	// Username (username) is the login user.
	Username string `json:"username"`
	// Password (password) logs in and answers sudo.
	Password string `json:"password,omitempty"`
	// PrivateKey (ssh_private_key) is a PEM private key (OpenSSH, PKCS#1,
	// PKCS#8, SEC1), tried before the password.
	PrivateKey string `json:"ssh_private_key,omitempty"`
	// Passphrase (ssh_private_key_passphrase) decrypts PrivateKey.
	Passphrase string `json:"ssh_private_key_passphrase,omitempty"`
}

// secrets lists the login's secret values, for masking.
func (l Login) secrets() []string {
	var out []string
	for _, v := range []string{l.Password, l.PrivateKey, l.Passphrase} {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	return out
}

// Plan says how to open a session to one host: a VNFC's server (see
// NodePlan) or a server outside the VNF.
type Plan struct {
	// Key names the session in a Sessions (default Addr).
	Key string
	// Name is the host as messages show it.
	Name string
	// ServerID and Addr key the host key pins: a VNFC's compute resource
	// id, or a stable name for a server outside the VNF.
	ServerID string
	Addr     string
	Port     int
	// Fingerprints are the host key fingerprints the infra driver
	// published (none: the first contact pins the key offered).
	Fingerprints []string
	Login        Login
	// External: the host is not a server of the VNF (kubespray's Ansible
	// server): nothing is published for it, Fingerprints are the caller's.
	External bool
	// Fresh: the host is new in this operation (cloud-init may still be
	// setting the password): authentication failures are retried.
	Fresh bool
	// Repin: the server was rebuilt under the same id with new host keys.
	Repin bool
	// Wait bounds connecting, retries while the host boots included (0:
	// Dialer.Wait; negative: one attempt). ConnectTimeout bounds one
	// attempt (0: remote's default).
	Wait           time.Duration
	ConnectTimeout time.Duration
}

func (p Plan) key() string {
	if p.Key != "" {
		return p.Key
	}
	return p.Addr
}

func (p Plan) String() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Addr
}

// Dialer opens the SSH sessions of a driver: host keys verified against
// the pins (or, at first contact, the fingerprints the infra driver
// published) and pinned, every session a remote.Session (it reconnects once
// when a command could not start).
type Dialer struct {
	// Pins keeps the host keys (the store's host_keys). Required.
	Pins remote.PinStore
	// Dial opens TCP connections (nil: the host's network).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Wait is the default of Plan.Wait (0: remote's default).
	Wait time.Duration
	// Secrets are masked on every session, besides each login's own.
	Secrets []string
	Log     *slog.Logger
	// Trust is the operation's SSH host key policy for VNF servers (""
	// is published, see HostKeys): published waits, bounded by
	// FingerprintWait, for the fingerprints Publisher reads, and refuses a
	// server without them; pinned takes Pinned's; tofu pins the first key.
	Trust           remote.HostKeyTrust
	Pinned          HostKeys
	Publisher       func(ctx context.Context, resourceID string) ([]string, error)
	FingerprintWait time.Duration
	// Note, when set, receives a line for each failed attempt that will be
	// retried (which host, its address, the attempt, the error), so that
	// the operation's progress shows what it waits for.
	Note func(ctx context.Context, msg string)

	// open replaces remote.OpenSession in tests.
	open func(ctx context.Context, t remote.Target) (*remote.Session, error)
}

// Target is the remote.Target of a plan.
func (d *Dialer) Target(p Plan) remote.Target {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := p.Wait
	if wait == 0 {
		wait = d.Wait
	}
	t := remote.Target{
		Host: p.Addr, Port: p.Port, User: p.Login.Username, Password: p.Login.Password,
		Passphrase: p.Login.Passphrase,
		Pins:       d.Pins, PinKey: remote.PinKey{ServerID: p.ServerID, Address: p.Addr},
		PublishedFingerprints: p.Fingerprints,
		Dialer:                d.Dial, MaxWait: wait, ConnectTimeout: p.ConnectTimeout,
		RetryAuth: p.Fresh,
		Secrets:   append(append([]string(nil), d.Secrets...), p.Login.secrets()...),
		Logger:    log.With("host", p.String()),
	}
	if p.Login.PrivateKey != "" {
		t.PrivateKey = []byte(p.Login.PrivateKey)
	}
	if p.Repin {
		t.HostKeyPolicy = remote.HostKeyRepin
	}
	d.hostKeyTrust(p, &t)
	if d.Note != nil {
		t.OnRetry = func(ctx context.Context, attempt int, err error) { d.Note(ctx, WaitingNote(p, attempt, err)) }
	}
	return t
}

// hostKeyTrust sets how the first contact with p's host trusts its key.
func (d *Dialer) hostKeyTrust(p Plan, t *remote.Target) {
	trust := d.Trust
	if trust == "" {
		trust = remote.TrustPublished
	}
	switch {
	case p.External:
		// Nothing is published for a server outside the VNF: the caller's
		// fingerprints verify it; without them its first key is pinned,
		// unless the policy is pinned (then they are required).
		t.HostKeyTrust = remote.TrustTOFU
		if len(p.Fingerprints) > 0 || trust == remote.TrustPinned {
			t.HostKeyTrust = remote.TrustPinned
		}
	case trust == remote.TrustPinned:
		t.HostKeyTrust = remote.TrustPinned
		t.PublishedFingerprints = d.Pinned.For(p.Key, p.ServerID, p.Addr)
	case trust == remote.TrustTOFU:
		t.HostKeyTrust = remote.TrustTOFU
	default:
		t.HostKeyTrust = remote.TrustPublished
		t.FingerprintWait = d.FingerprintWait
		if d.Publisher != nil && p.ServerID != "" {
			id := p.ServerID
			t.FetchFingerprints = func(ctx context.Context) ([]string, error) { return d.Publisher(ctx, id) }
		}
	}
}

// WaitingNote is the progress line of a host that SSH waits for.
func WaitingNote(p Plan, attempt int, err error) string {
	port := p.Port
	if port == 0 {
		port = remote.DefaultPort
	}
	return fmt.Sprintf("waiting for %s at %s (SSH): attempt %d failed: %v", p, net.JoinHostPort(p.Addr, strconv.Itoa(port)), attempt, err)
}

// Open opens one session.
func (d *Dialer) Open(ctx context.Context, p Plan) (*remote.Session, error) {
	if d.Pins == nil {
		return nil, errors.New("no host key pin store configured")
	}
	open := d.open
	if open == nil {
		open = remote.OpenSession
	}
	return open(ctx, d.Target(p))
}

// OpenAll opens sessions to every host of plans, in parallel, before
// anything runs on any of them: a host that does not answer or presents a
// key that does not match its pin (or the published fingerprints) fails the
// whole set, with nothing executed anywhere.
func (d *Dialer) OpenAll(ctx context.Context, plans []Plan) (*Sessions, error) {
	s := NewSessions()
	errs := remote.ForEach(ctx, plans, 16, func(ctx context.Context, p Plan) error {
		c, err := d.Open(ctx, p)
		if err != nil {
			return err
		}
		s.Put(p.key(), c)
		return nil
	})
	if err := remote.JoinErrors(plans, errs, Plan.String); err != nil {
		s.Close()
		if IsHostKeyMismatch(err) {
			return nil, fmt.Errorf("SSH host key verification failed, nothing was run on any node: %w", err)
		}
		return nil, fmt.Errorf("cannot connect to the nodes: %w", err)
	}
	return s, nil
}

// OpenSome opens the sessions it can (a dead master must not stop a heal)
// and reports the hosts that failed by key. A host key mismatch is still
// fatal.
func (d *Dialer) OpenSome(ctx context.Context, plans []Plan) (*Sessions, map[string]error, error) {
	s := NewSessions()
	failed := map[string]error{}
	var mu sync.Mutex
	remote.ForEach(ctx, plans, 16, func(ctx context.Context, p Plan) error {
		c, err := d.Open(ctx, p)
		if err != nil {
			mu.Lock()
			failed[p.key()] = err
			mu.Unlock()
			return nil
		}
		s.Put(p.key(), c)
		return nil
	})
	for _, err := range failed {
		if IsHostKeyMismatch(err) {
			s.Close()
			return nil, nil, fmt.Errorf("SSH host key verification failed, nothing was run on any node: %w", err)
		}
	}
	return s, failed, nil
}

// IsHostKeyMismatch tells whether err is (or holds) a host key mismatch.
func IsHostKeyMismatch(err error) bool {
	var me *remote.HostKeyMismatchError
	return errors.As(err, &me)
}

// Sessions holds the sessions of one hook by key; Close closes them all.
// Safe for concurrent use.
type Sessions struct {
	mu sync.Mutex
	m  map[string]*remote.Session
}

// NewSessions returns an empty set.
func NewSessions() *Sessions { return &Sessions{m: map[string]*remote.Session{}} }

// Get returns the session of key, or nil.
func (s *Sessions) Get(key string) *remote.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// Put adds (or replaces) the session of key.
func (s *Sessions) Put(key string, c *remote.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*remote.Session{}
	}
	s.m[key] = c
}

// Merge moves o's sessions into s.
func (s *Sessions) Merge(o *Sessions) {
	o.mu.Lock()
	moved := o.m
	o.m = map[string]*remote.Session{}
	o.mu.Unlock()
	for k, c := range moved {
		s.Put(k, c)
	}
}

// AddSecrets masks values (a join token, a bearer token) on every session.
func (s *Sessions) AddSecrets(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.m {
		c.AddSecrets(values...)
	}
}

// Close closes every session.
func (s *Sessions) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.m {
		_ = c.Close()
	}
	s.m = map[string]*remote.Session{}
}
