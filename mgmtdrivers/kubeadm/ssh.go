package kubeadm

import (
	"context"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// session is a verified connection to one node.
type session struct {
	node *Node
	x    *nodeConn
	log  *slog.Logger
}

// maxChannels bounds the commands running at once on one node's
// connection. sshd refuses sessions beyond its MaxSessions (OpenSSH's
// default: 10) on a connection, and remote.Session answers a refused
// session by reconnecting, which ends the commands still running on the old
// connection: a build's 10 worker joins minting their tokens on the first
// master while a control-plane join runs there did exactly that.
const maxChannels = 8

// nodeConn is a node's connection with at most maxChannels commands or
// uploads at once; more wait for a slot.
type nodeConn struct {
	*remote.Session
	slots chan struct{}
	// share, when set, bounds the commands of one user of the connection
	// below maxChannels (see session.shared).
	share chan struct{}
}

func newNodeConn(x *remote.Session) *nodeConn {
	return &nodeConn{Session: x, slots: make(chan struct{}, maxChannels)}
}

func (c *nodeConn) acquire(ctx context.Context) (release func(), err error) {
	if c.share != nil {
		select {
		case c.share <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	select {
	case c.slots <- struct{}{}:
		return func() {
			<-c.slots
			if c.share != nil {
				<-c.share
			}
		}, nil
	case <-ctx.Done():
		if c.share != nil {
			<-c.share
		}
		return nil, context.Cause(ctx)
	}
}

// Run is remote.Session.Run in a slot.
func (c *nodeConn) Run(ctx context.Context, cmd string, o remote.RunOpts) (remote.Result, error) {
	release, err := c.acquire(ctx)
	if err != nil {
		return remote.Result{}, err
	}
	defer release()
	return c.Session.Run(ctx, cmd, o)
}

// UploadAsRoot is remote.Session.UploadAsRoot in a slot.
func (c *nodeConn) UploadAsRoot(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	release, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return c.Session.UploadAsRoot(ctx, path, data, mode)
}

// shared is the session for a crowd of commands that must leave room on
// the connection for others: at most n of its commands run at once (the
// workers' token and node checks on the first master leave slots to the
// control-plane joins, the critical path).
func (s *session) shared(n int) *session {
	c := *s.x
	c.share = make(chan struct{}, n)
	return &session{node: s.node, x: &c, log: s.log}
}

// sessions holds the connections of one hook by VNFC id; Close closes them
// all.
type sessions struct {
	*kube.Sessions
	log   *slog.Logger
	mu    sync.Mutex
	conns map[*remote.Session]*nodeConn
}

func (s *sessions) get(n *Node) *session {
	x := s.Get(n.VnfcID)
	if x == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[x]
	if c == nil {
		if s.conns == nil {
			s.conns = map[*remote.Session]*nodeConn{}
		}
		c = newNodeConn(x)
		s.conns[x] = c
	}
	return &session{node: n, x: c, log: s.log.With("node", n.Name)}
}

func (s *sessions) merge(o *sessions) { s.Merge(o.Sessions) }

func (s *sessions) addSecrets(values ...string) { s.AddSecrets(values...) }

// dialer is the driver's kube.Dialer for one hook: waits for a node show
// in the step's progress.
func (d *Driver) dialer(h *hook) *kube.Dialer {
	var keys kube.HostKeys
	if h.p != nil {
		keys = h.p.HostKeys
	}
	return &kube.Dialer{Pins: d.o.Pins, Dial: d.o.Dial, Wait: d.o.ConnectWait, Log: h.log,
		Note:  func(ctx context.Context, msg string) { h.note(ctx, "%s", msg) },
		Trust: keys.Trust(h.op.Vim), Pinned: keys, Publisher: kube.PublisherOf(h.op),
		FingerprintWait: d.o.FingerprintWait}
}

// connect opens verified SSH connections to the nodes, in parallel, before
// anything runs on any of them (kube.Dialer.OpenAll).
func (d *Driver) connect(ctx context.Context, h *hook, plans []kube.Plan) (*sessions, error) {
	s, err := d.dialer(h).OpenAll(ctx, plans)
	if err != nil {
		return nil, err
	}
	return &sessions{Sessions: s, log: h.log}, nil
}

// connectSome connects to the nodes it can within wait: a dead master must
// not stop a heal. A host key mismatch is still fatal.
func (d *Driver) connectSome(ctx context.Context, h *hook, plans []kube.Plan, wait time.Duration) (*sessions, map[string]error, error) {
	for i := range plans {
		plans[i].Wait, plans[i].ConnectTimeout = wait, min(wait, 20*time.Second)
	}
	s, failed, err := d.dialer(h).OpenSome(ctx, plans)
	if err != nil {
		return nil, nil, err
	}
	return &sessions{Sessions: s, log: h.log}, failed, nil
}

// planFor is how to connect to a node with its role's credentials.
func planFor(p *Params, n *Node, fresh bool) kube.Plan {
	np := &p.Worker
	switch n.Role {
	case Master:
		np = &p.Master
	case LB:
		np = &p.LB.Node
	}
	return kube.Plan{Key: n.VnfcID, Name: n.String(), ServerID: n.ServerID, Addr: n.SSHAddr, Fingerprints: n.Fingerprints,
		Login: kube.Login{Username: np.Username, Password: np.Password, PrivateKey: np.PrivateKey, Passphrase: np.Passphrase},
		Fresh: fresh}
}

// plansFor builds dial plans for nodes with the role's credentials.
func plansFor(p *Params, nodes []*Node, fresh bool) []kube.Plan {
	out := make([]kube.Plan, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, planFor(p, n, fresh))
	}
	return out
}

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
