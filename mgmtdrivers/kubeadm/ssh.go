package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// executor is what the driver needs of an SSH connection (*remote.Client).
type executor interface {
	Run(ctx context.Context, cmd string, opts remote.RunOpts) (remote.Result, error)
	UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	AddSecrets(values ...string)
	Close() error
}

// session is a verified connection to one node.
type session struct {
	node *Node
	x    executor
	log  *slog.Logger
}

// dialPlan says how to connect to a node.
type dialPlan struct {
	node *Node
	np   *NodeParams
	// fresh: the VM is new in this operation (cloud-init may still be
	// setting the password: authentication failures are retried).
	fresh bool
	// repin: the server was rebuilt under the same id with new host keys.
	repin bool
}

// sessions holds the connections of one hook; Close closes them all.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session // by VNFC id
}

func (s *sessions) get(n *Node) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[n.VnfcID]
}

func (s *sessions) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.m {
		_ = c.x.Close()
	}
	s.m = nil
}

// addSecrets masks values (a join token, a bearer token) on every connection.
func (s *sessions) addSecrets(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.m {
		c.x.AddSecrets(values...)
	}
}

// connect opens verified SSH connections to the nodes, in parallel, before
// anything runs on any of them: a host key that does not match its pin or
// the fingerprints the cloud published fails the whole hook with nothing
// executed anywhere.
func (d *Driver) connect(ctx context.Context, log *slog.Logger, plans []dialPlan) (*sessions, error) {
	s := &sessions{m: map[string]*session{}}
	errs := remote.ForEach(ctx, plans, 16, func(ctx context.Context, p dialPlan) error {
		t := remote.Target{
			Host: p.node.SSHAddr, User: p.np.Username, Password: p.np.Password,
			PrivateKey: []byte(p.np.SSHPrivateKey), Passphrase: p.np.SSHPrivateKeyPassphrase,
			Pins: d.o.Pins, PinKey: remote.PinKey{ServerID: p.node.ServerID, Address: p.node.SSHAddr},
			PublishedFingerprints: p.node.Fingerprints,
			Dialer:                d.o.Dial,
			MaxWait:               d.o.ConnectWait,
			RetryAuth:             p.fresh,
			Logger:                log.With("node", p.node.Name),
		}
		if len(t.PrivateKey) == 0 {
			t.PrivateKey = nil
		}
		if p.repin {
			t.HostKeyPolicy = remote.HostKeyRepin
		}
		x, err := d.dial(ctx, t)
		if err != nil {
			return err
		}
		again := t
		again.HostKeyPolicy = remote.HostKeyPin // the first connection pinned (or re-pinned) the key
		x = &redialing{x: x, target: again, dial: d.dial, log: log.With("node", p.node.Name)}
		s.mu.Lock()
		s.m[p.node.VnfcID] = &session{node: p.node, x: x, log: log.With("node", p.node.Name)}
		s.mu.Unlock()
		return nil
	})
	if err := remote.JoinErrors(plans, errs, func(p dialPlan) string { return p.node.String() }); err != nil {
		s.Close()
		var me *remote.HostKeyMismatchError
		if errors.As(err, &me) {
			return nil, fmt.Errorf("SSH host key verification failed, nothing was run on any node: %w", err)
		}
		return nil, fmt.Errorf("cannot connect to the nodes: %w", err)
	}
	return s, nil
}

// plansFor builds dial plans for nodes with the role's credentials.
func plansFor(p *Params, nodes []*Node, fresh bool) []dialPlan {
	out := make([]dialPlan, 0, len(nodes))
	for _, n := range nodes {
		np := &p.Worker
		if n.Role == Master {
			np = &p.Master
		}
		if n.Role == LB {
			np = &p.LB.Node
		}
		out = append(out, dialPlan{node: n, np: np, fresh: fresh})
	}
	return out
}

func defaultDial(ctx context.Context, t remote.Target) (executor, error) { return remote.Dial(ctx, t) }

// run runs a command and returns its stdout; errors carry the masked tails.
func (s *session) run(ctx context.Context, cmd string, o remote.RunOpts) (string, error) {
	res, err := s.x.Run(ctx, cmd, o)
	if err != nil {
		return res.Stdout, err
	}
	return res.Stdout, nil
}

// results parses the VNFM_RESULT key=value lines of the install script.
func results(stdout string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), "VNFM_RESULT ")
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(rest, "="); ok {
			out[k] = v
		}
	}
	return out
}

func sortedNames(ns []*Node) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// redialing reconnects once when a connection dies before a command or
// upload could start (a busy host resetting a fresh connection): nothing ran,
// so running it again is safe. The key must still match the pin.
type redialing struct {
	mu      sync.Mutex
	x       executor
	target  remote.Target
	dial    func(context.Context, remote.Target) (executor, error)
	log     *slog.Logger
	secrets []string
}

func (r *redialing) current() executor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.x
}

// lostBeforeStart tells whether err means the command never started: no
// session could be opened (the connection was lost, or the channel open got
// a garbled answer, seen from freshly replaced hosts), or an upload's
// connection went away (uploads are atomic renames: safe to redo).
func lostBeforeStart(err error) bool {
	var ce *remote.CommandError
	if errors.As(err, &ce) {
		return ce.NotStarted
	}
	return err != nil && errors.Is(err, remote.ErrConnectionLost)
}

func (r *redialing) reconnect(ctx context.Context, lost executor, cause error) (executor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.x != lost { // another caller already reconnected
		return r.x, nil
	}
	r.log.Warn("no SSH session could be opened; reconnecting once", "err", cause)
	nx, err := r.dial(ctx, r.target)
	if err != nil {
		return nil, err
	}
	nx.AddSecrets(r.secrets...)
	_ = lost.Close()
	r.x = nx
	return nx, nil
}

func (r *redialing) Run(ctx context.Context, cmd string, o remote.RunOpts) (remote.Result, error) {
	x := r.current()
	res, err := x.Run(ctx, cmd, o)
	if lostBeforeStart(err) {
		nx, derr := r.reconnect(ctx, x, err)
		if derr != nil {
			return res, fmt.Errorf("%w (reconnecting failed too: %v)", err, derr)
		}
		return nx.Run(ctx, cmd, o)
	}
	return res, err
}

func (r *redialing) UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	x := r.current()
	err := x.UploadAsRoot(ctx, path, data, mode)
	if lostBeforeStart(err) {
		nx, derr := r.reconnect(ctx, x, err)
		if derr != nil {
			return fmt.Errorf("%w (reconnecting failed too: %v)", err, derr)
		}
		return nx.UploadAsRoot(ctx, path, data, mode)
	}
	return err
}

func (r *redialing) AddSecrets(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, values...)
	r.x.AddSecrets(values...)
}

func (r *redialing) Close() error { return r.current().Close() }
