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
