package kubespray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// ansibleServerID is the pin key's server id of the Ansible server, which
// is not a VNFC: its host key is pinned per address like every SSH target.
const ansibleServerID = "kubespray-ansible-server"

// session is one hook run: the parameters, the cluster as the instance
// shows it, and the SSH connections opened so far.
type session struct {
	d   *Driver
	op  *driverapi.Op
	p   *Params
	c   *Cluster
	log *slog.Logger

	inv     string // inventory directory on the Ansible server
	secrets []string

	mu         sync.Mutex
	clients    map[string]*remote.Session // by node name; "" = the Ansible server
	clusterKey string                     // public key line of the cluster's Ansible key
	progMu     sync.Mutex
}

func (d *Driver) newSession(op *driverapi.Op, p *Params, needCluster bool) (*session, error) {
	if op.Instance == nil || op.Instance.InstantiatedVnfInfo == nil {
		return nil, errors.New("kubespray: the VNF instance is not instantiated")
	}
	if p == nil || p.Ansible.IPAddress == "" {
		return nil, errors.New("kubespray: the operation carries no parameters of this driver (it was accepted by an older VNFM); fail it and send the request again")
	}
	inv, err := p.inventoryDir(op.Instance.ID)
	if err != nil {
		return nil, err
	}
	log := op.Log
	if log == nil {
		log = d.o.Logger
	}
	s := &session{d: d, op: op, p: p, log: log.With("driver", Name), inv: inv, clients: map[string]*remote.Session{}}
	for _, v := range []string{p.Master.Password, p.Master.PrivateKey, p.Worker.Password, p.Worker.PrivateKey, p.Ansible.Login.Password,
		p.Ansible.Login.PrivateKey, p.ExternalLB.Login.Password, p.ExternalLB.Login.PrivateKey} {
		if len(v) >= 4 {
			s.secrets = append(s.secrets, v)
		}
	}
	if needCluster {
		if s.c, err = BuildCluster(op.ComputeResources(), op.Flavour, p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		_ = c.Close()
	}
	s.clients = map[string]*remote.Session{}
}

func (s *session) cancelled() error {
	if s.op.CancelRequested != nil && s.op.CancelRequested() {
		return driverapi.ErrCancelled
	}
	return nil
}

// progress calls are serialised: nodes are prepared in parallel.
func (s *session) note(ctx context.Context, msg string) {
	if s.op.Progress == nil {
		return
	}
	s.progMu.Lock()
	defer s.progMu.Unlock()
	if err := s.op.Progress.Note(ctx, msg); err != nil {
		s.log.Debug("progress note", "err", err)
	}
}

// step runs fn as a journaled unit ("node" of the running step): skipped
// when an earlier run of this step completed it (retry, crash resume).
func (s *session) step(ctx context.Context, key, what string, fn func() error) error {
	if err := s.cancelled(); err != nil {
		return err
	}
	pr := s.op.Progress
	if pr != nil {
		if _, done := pr.NodeCompleted(key); done {
			s.log.Info("already done in an earlier run", "unit", key)
			return nil
		}
		s.progMu.Lock()
		err := pr.NodeStart(ctx, key, what)
		s.progMu.Unlock()
		if err != nil {
			return err
		}
	}
	s.log.Info(what, "unit", key)
	err := fn()
	if pr != nil {
		s.progMu.Lock()
		defer s.progMu.Unlock()
		if err != nil {
			if perr := pr.NodeFailed(ctx, key, err); perr != nil {
				s.log.Warn("progress", "err", perr)
			}
			return err
		}
		return pr.NodeDone(ctx, key, nil)
	}
	return err
}

// dialer opens the session's SSH connections: host keys pinned (or checked
// against published fingerprints), the parameters' secrets masked.
func (s *session) dialer() *kube.Dialer {
	var keys kube.HostKeys
	if s.p != nil {
		keys = s.p.HostKeys
	}
	return &kube.Dialer{Pins: s.d.o.Pins, Dial: s.d.o.Dial, Secrets: s.secrets, Log: s.log, Note: s.note,
		Trust: keys.Trust(s.op.Vim), Pinned: keys, Publisher: kube.PublisherOf(s.op),
		FingerprintWait: s.d.o.FingerprintWait}
}

// nodePlan is how to reach a VNFC; wait bounds the retries while the VM
// boots (authentication failures retried too: cloud-init may set the
// password after sshd starts).
func nodePlan(n *Node, wait time.Duration) kube.Plan {
	return kube.Plan{Key: n.Name, Name: fmt.Sprintf("%s %s (VNFC %s)", n.Role, n.Name, n.VnfcID), ServerID: n.ServerID, Addr: n.SSHAddr,
		Fingerprints: n.Fingerprints, Login: n.Login,
		Fresh: wait > 0, Wait: wait, ConnectTimeout: 20 * time.Second}
}

// ansible connects to the Ansible server (its host key pinned, or checked
// against ansible.host_key_fingerprints).
func (s *session) ansible(ctx context.Context) (*remote.Session, error) {
	s.mu.Lock()
	c := s.clients[""]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	a := s.p.Ansible
	c, err := s.dialer().Open(ctx, kube.Plan{Name: "the Ansible server", ServerID: ansibleServerID, Addr: a.IPAddress, Port: a.Port,
		Fingerprints: a.HostKeyFingerprints, Login: a.Login, External: true,
		Wait: s.d.o.AnsibleWait, ConnectTimeout: 20 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("kubespray: Ansible server %s: %w", a.IPAddress, err)
	}
	s.mu.Lock()
	s.clients[""] = c
	s.mu.Unlock()
	return c, nil
}

// node connects to a VNFC, verifying its host key against the pin (or, at
// first contact, against the fingerprints the cloud published) and pinning
// it. wait bounds the retries while the VM boots.
func (s *session) node(ctx context.Context, n *Node, wait time.Duration) (*remote.Session, error) {
	s.mu.Lock()
	c := s.clients[n.Name]
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := s.dialer().Open(ctx, nodePlan(n, wait))
	if err != nil {
		return nil, fmt.Errorf("kubespray: %s %s (VNFC %s): %w", n.Role, n.Name, n.VnfcID, err)
	}
	s.mu.Lock()
	s.clients[n.Name] = c
	s.mu.Unlock()
	return c, nil
}

// master returns a connection to the first control-plane node that answers.
func (s *session) master(ctx context.Context) (*remote.Session, error) {
	var errs []error
	for i, m := range s.c.Masters {
		wait := s.d.o.NodeWait
		if i > 0 || len(s.c.Masters) > 1 {
			wait = time.Minute
		}
		c, err := s.node(ctx, m, wait)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("kubespray: no control-plane node answers: %w", errors.Join(errs...))
}

func (s *session) kubectl(ctx context.Context) (*Kubectl, error) {
	m, err := s.master(ctx)
	if err != nil {
		return nil, err
	}
	return &Kubectl{Exec: m, Output: s.outputLogger("kubectl")}, nil
}

func (s *session) outputLogger(what string) func(remote.Stream, string) {
	return func(st remote.Stream, line string) {
		s.log.Info(what, "stream", st.String(), "line", line)
	}
}

// ensureInventoryDir creates the cluster's inventory directory and its
// Ansible key on the Ansible server, checks the kubespray tree, and returns
// the key's public half.
func (s *session) ensureInventoryDir(ctx context.Context) error {
	if s.clusterKey != "" {
		return nil
	}
	c, err := s.ansible(ctx)
	if err != nil {
		return err
	}
	const script = `set -e
umask 077
root=$1 inv=$2 comment=$3
if ! command -v ansible-playbook >/dev/null 2>&1; then
	echo "ansible-playbook is not installed on the Ansible server (or not on the PATH of $(id -un))" >&2; exit 3
fi
for f in cluster.yml scale.yml remove-node.yml facts.yml; do
	[ -f "$root/$f" ] || { echo "$root/$f does not exist: is ansible.kubespray_root_path a kubespray checkout?" >&2; exit 3; }
done
mkdir -p "$inv/ssh" "$inv/group_vars/all" "$inv/group_vars/k8s_cluster"
chmod 700 "$inv"
if [ -d "$root/inventory/sample/group_vars" ] && [ ! -e "$inv/.sample-group-vars" ]; then
	cp -R "$root/inventory/sample/group_vars/." "$inv/group_vars/"
	: > "$inv/.sample-group-vars"
fi
rm -f "$inv"/.become.*
[ -f "$inv/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "$comment" -f "$inv/ssh/id_ed25519"
cat "$inv/ssh/id_ed25519.pub"
`
	res, err := c.Run(ctx, remote.Command("sh", "-c", script, "sh", s.p.Ansible.KubesprayRootPath, s.inv, "mini-vnfm-"+s.op.Instance.ID),
		remote.RunOpts{Timeout: 2 * time.Minute})
	if err != nil {
		return fmt.Errorf("kubespray: preparing the inventory directory %s on the Ansible server: %w", s.inv, err)
	}
	key := strings.TrimSpace(res.Stdout)
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key)); err != nil {
		return fmt.Errorf("kubespray: the Ansible key %s/%s.pub is not a public key: %w", s.inv, sshKeyFile, err)
	}
	s.clusterKey = key
	return nil
}

// prepareNodes logs in to each node (pinning its host key) and authorises
// the cluster's Ansible key, in parallel.
func (s *session) prepareNodes(ctx context.Context, nodes []*Node) error {
	if err := s.ensureInventoryDir(ctx); err != nil {
		return err
	}
	const script = `set -e
umask 077
mkdir -p "$HOME/.ssh"
touch "$HOME/.ssh/authorized_keys"
grep -qxF "$1" "$HOME/.ssh/authorized_keys" || printf '%s\n' "$1" >> "$HOME/.ssh/authorized_keys"
`
	errs := remote.ForEach(ctx, nodes, 8, func(ctx context.Context, n *Node) error {
		return s.step(ctx, "ssh/"+n.Name, "log in (host key verified and pinned), authorise the cluster's Ansible key", func() error {
			c, err := s.node(ctx, n, s.d.o.NodeWait)
			if err != nil {
				return err
			}
			_, err = c.Run(ctx, remote.Command("sh", "-c", script, "sh", s.clusterKey), remote.RunOpts{Timeout: time.Minute})
			return err
		})
	})
	return remote.JoinErrors(nodes, errs, func(n *Node) string { return n.Name })
}

// hostKeys returns the pinned host keys of the nodes, pinning (by logging
// in) those that have none yet.
func (s *session) hostKeys(ctx context.Context, nodes []*Node) (map[string][]ssh.PublicKey, error) {
	out := map[string][]ssh.PublicKey{}
	for _, n := range nodes {
		pins, err := s.d.o.Pins.Get(ctx, n.ServerID, n.SSHAddr)
		if err != nil {
			return nil, err
		}
		if len(pins) == 0 {
			c, err := s.node(ctx, n, s.d.o.NodeWait)
			if err != nil {
				return nil, err
			}
			out[n.Name] = []ssh.PublicKey{c.HostKey()}
			continue
		}
		for _, p := range pins {
			k, err := ssh.ParsePublicKey(p.Key)
			if err != nil {
				return nil, fmt.Errorf("kubespray: pinned host key of %s: %w", n.Name, err)
			}
			out[n.Name] = append(out[n.Name], k)
		}
	}
	return out, nil
}

// writeInventory uploads the inventory of these nodes (hosts.ini,
// known_hosts, group_vars) into the cluster's directory.
func (s *session) writeInventory(ctx context.Context, masters, workers []*Node) error {
	if err := s.ensureInventoryDir(ctx); err != nil {
		return err
	}
	keys, err := s.hostKeys(ctx, append(slices.Clone(masters), workers...))
	if err != nil {
		return err
	}
	inv := &Inventory{Dir: s.inv, Masters: masters, Workers: workers, LB: s.c.LB, APIPort: s.p.ExternalLB.APIPort,
		Proxy: s.p.Proxy, PodCIDR: s.p.Master.PodCIDR, SvcCIDR: s.p.Master.ClusterCIDR, KnownHosts: keys}
	allVars, err := inv.AllVars()
	if err != nil {
		return err
	}
	k8sVars, err := inv.K8sVars()
	if err != nil {
		return err
	}
	c, err := s.ansible(ctx)
	if err != nil {
		return err
	}
	for _, f := range []struct{ rel, data string }{
		{knownHostsFile, inv.KnownHostsFile()}, {allVarsFile, allVars}, {k8sVarsFile, k8sVars}, {hostsFile, inv.HostsINI()},
	} {
		if err := c.Upload(ctx, inv.path(f.rel), []byte(f.data), 0o600); err != nil {
			return fmt.Errorf("kubespray: writing the inventory: %w", err)
		}
	}
	s.log.Info("inventory written", "dir", s.inv, "masters", names(masters), "workers", names(workers))
	return nil
}

func names(nodes []*Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

// becomeVars is the temporary extra-vars file of a run: the nodes' sudo
// passwords, read by hosts.ini's ansible_become_password. Never written
// into the inventory.
func (s *session) becomeVars() string {
	var b strings.Builder
	b.WriteString("mini_vnfm_become_passwords:\n")
	for _, n := range s.c.All() {
		if n.Login.Password != "" {
			fmt.Fprintf(&b, "  %s: %s\n", n.Name, yamlQuote(n.Login.Password))
		}
	}
	return b.String()
}

func yamlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s) + `"`
}
