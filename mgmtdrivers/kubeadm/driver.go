package kubeadm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Name is the driver's name in VNFDs (builtin:kubeadm, Tacker's
// mgmt-drivers-kubernetes).
const Name = "kubeadm"

// VimTypeKubernetes is the vimType of the cluster's vimConnectionInfo entry.
const VimTypeKubernetes = driverapi.VimTypeKubernetes

// Scratch keys (op.Scratch).
const (
	scratchHealed  = "kubeadm.healedServers"
	scratchRemoved = "kubeadm.removedServers"
)

// Options configure the driver.
type Options struct {
	// Pins keeps the nodes' SSH host keys (the store's host_keys table).
	// Required.
	Pins remote.PinStore
	// Dial opens TCP connections to the nodes, for SSH and for checking
	// the registered VIM's API server; nil: the host's network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectWait bounds connecting to a node, retries while it boots
	// included (default 5 min).
	ConnectWait time.Duration
	// CommandTimeout bounds kubectl/kubeadm commands (default 2 min).
	CommandTimeout time.Duration
	// InstallTimeout bounds one run of the install script (default 45 min,
	// Tacker's 2700 s).
	InstallTimeout time.Duration
	// NodeWait bounds the wait for a joined node to register (default 3 min).
	NodeWait time.Duration
	// TokenWait bounds the wait for the VIM's token Secret (default 1 min).
	TokenWait time.Duration
	// FingerprintWait bounds the wait for a new server's published SSH host
	// key fingerprints under the policy published (default 3 min).
	FingerprintWait time.Duration
}

// Driver is the kubeadm management driver.
type Driver struct {
	o Options
}

// New returns the driver.
func New(o Options) *Driver {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ConnectWait, remote.DefaultMaxWait)
	def(&o.CommandTimeout, 2*time.Minute)
	def(&o.InstallTimeout, 45*time.Minute)
	def(&o.NodeWait, 3*time.Minute)
	def(&o.TokenWait, time.Minute)
	return &Driver{o: o}
}

// Name implements mgmtdrivers.Typed.
func (d *Driver) Name() string { return Name }

// The hooks the driver implements, with its Params.
var (
	_ mgmtdrivers.Typed[Params]              = (*Driver)(nil)
	_ mgmtdrivers.InstantiateStarter[Params] = (*Driver)(nil)
	_ mgmtdrivers.InstantiateEnder[Params]   = (*Driver)(nil)
	_ mgmtdrivers.TerminateEnder[Params]     = (*Driver)(nil)
	_ mgmtdrivers.ScaleStarter[Params]       = (*Driver)(nil)
	_ mgmtdrivers.ScaleEnder[Params]         = (*Driver)(nil)
	_ mgmtdrivers.HealStarter[Params]        = (*Driver)(nil)
	_ mgmtdrivers.HealEnder[Params]          = (*Driver)(nil)
	_ mgmtdrivers.RollbackHandler[Params]    = (*Driver)(nil)
)

// Driver returns the driver as the engine holds it.
func (d *Driver) Driver() mgmtdrivers.Driver { return mgmtdrivers.New[Params](d) }

// hook is one run of a hook: the op, its parameters and cluster.
type hook struct {
	d    *Driver
	op   *driverapi.Op
	p    *Params
	topo *Topology
	log  *slog.Logger
	// etcdTLS caches HAProxy's etcd health-check certificates (etcdlb.go).
	etcdTLS *etcdCheckTLS
	// lbWithoutEtcd: the load balancer is configured while kubeadm init
	// writes etcd's certificates; HAProxy gets no etcd frontend yet.
	lbWithoutEtcd bool
	// prep is the nodes' preparation running beside the build (nil: each
	// join checks and uploads itself).
	prep *preparation
	// cleanups, when set, runs best-effort clean-ups off the critical path
	// (the hook waits for it before its sessions close).
	cleanups *sync.WaitGroup
	// tokens are the bootstrap tokens of the hook's joins (nil: each join
	// flow makes its own).
	tokens *tokenPool
	// certs is the certificate key of the control-plane certificates
	// uploaded for this hook's control-plane joins (hamasters.go).
	certs certKey
	// initToken is the join token the install script printed on the main
	// master; initFresh says its kubeadm init ran in this hook.
	initToken string
	initFresh bool
	// gate, when set, holds the first master's background work until the
	// critical path is past it (installCluster).
	gate *gate
	// initRunning, when set, opens once the first master's install script
	// printed its first line (installCluster).
	initRunning *gate
	// nodesAtConnect are the cluster's nodes as connectControl listed them
	// when it picked the master to work through (nil: not listed).
	nodesAtConnect map[string]nodeState
}

// load finds the nodes of the operation's compute resources with the
// parameters accepted with the request (ParseParams).
func (d *Driver) load(op *driverapi.Op, p *Params) (*hook, error) {
	if d.o.Pins == nil {
		return nil, errors.New("kubeadm driver: no host key pin store configured")
	}
	if p == nil || p.Master.SSHCPName == "" {
		return nil, errors.New("kubeadm driver: the operation carries no parameters of this driver (it was accepted by an older VNFM); retry it after failing it, with a new request")
	}
	log := op.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &hook{d: d, op: op, p: p, log: log.With("driver", Name)}
	if info := op.Instance.InstantiatedVnfInfo; info != nil && len(info.VnfcResourceInfo) > 0 {
		var err error
		if h.topo, err = Classify(op.ComputeResources(), info.ExtCpInfo, op.Flavour, p); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *hook) needTopology() error {
	if h.topo == nil {
		return errors.New("the VNF instance has no VNFCs: nothing to configure (did the infra driver create the servers?)")
	}
	if h.topo.HA() {
		if err := checkHA(context.Background(), h.topo, h.op.Infra, h.op.Package, h.op.Flavour, h.p); err != nil {
			return err
		}
	}
	return checkLBTopology(h.topo, h.p)
}

func (h *hook) note(ctx context.Context, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.log.Info(msg)
	if h.op.Progress != nil {
		_ = h.op.Progress.Note(ctx, msg)
	}
}

func (h *hook) nodeNote(ctx context.Context, n *Node) func(string) {
	return func(msg string) {
		if h.op.Progress != nil {
			_ = h.op.Progress.NodeNote(ctx, n.Name, msg)
		}
	}
}

// perNode runs fn for each node at most limit at a time, as a per-node
// checkpoint: nodes completed in an earlier run of this step are skipped, a
// graceful cancel starts no new node, fn's output is recorded.
func (h *hook) perNode(ctx context.Context, nodes []*Node, limit int, start string, fn func(ctx context.Context, n *Node) (any, error)) error {
	pr := h.op.Progress
	errs := remote.ForEach(ctx, nodes, limit, func(ctx context.Context, n *Node) error {
		if pr != nil {
			if _, done := pr.NodeCompleted(n.Name); done {
				h.log.Info("node already done in an earlier run of this step; skipped", "node", n.Name)
				return nil
			}
		}
		if h.op.CancelRequested != nil && h.op.CancelRequested() {
			return driverapi.ErrCancelled
		}
		if pr != nil {
			if err := pr.NodeStart(ctx, n.Name, start); err != nil {
				return err
			}
		}
		t0 := time.Now()
		h.log.Info(start, "node", n.Name, "vnfc", n.VnfcID, "address", n.IP)
		out, err := fn(ctx, n)
		if err != nil {
			h.log.Warn(start+" failed", "node", n.Name, "err", err)
			if pr != nil {
				_ = pr.NodeFailed(context.WithoutCancel(ctx), n.Name, err)
			}
			return err
		}
		h.log.Info(start+" done", "node", n.Name, "duration", time.Since(t0).Round(time.Millisecond))
		if pr != nil {
			return pr.NodeDone(ctx, n.Name, out)
		}
		return nil
	})
	err := remote.JoinErrors(nodes, errs, func(n *Node) string { return n.Name })
	for _, e := range errs {
		if errors.Is(e, driverapi.ErrCancelled) {
			return driverapi.ErrCancelled
		}
	}
	return err
}

func (h *hook) script(ctx context.Context) ([]byte, error) {
	return installScript(ctx, h.op.Package, h.p)
}

// installScript is the install script: script_path's file in the package
// (which must be the mini-VNFM script), or the built-in one.
func installScript(ctx context.Context, pkg driverapi.Package, p *Params) ([]byte, error) {
	if p.ScriptPath == "" {
		return builtinScript, nil
	}
	if pkg == nil {
		return nil, errors.New("the VNF package cannot be read")
	}
	b, err := pkg.ReadFile(ctx, p.ScriptPath)
	if err != nil {
		return nil, fmt.Errorf("%s.script_path: %s is not in the VNF package: %w", root, p.ScriptPath, err)
	}
	if !isOurScript(b) {
		return nil, fmt.Errorf("%s.script_path: %s is not the mini-VNFM install script (it prints no VNFM_RESULT lines; Tacker's sample script will not do): ship scripts/install_k8s_cluster.sh or leave script_path out to use the built-in one", root, p.ScriptPath)
	}
	return b, nil
}

// InstantiateStart checks the plan again before the infra driver creates
// any resource (for VNFDs that bind instantiate_start to this driver): the
// request was validated when it was accepted (ParseParams).
func (d *Driver) InstantiateStart(ctx context.Context, op *driverapi.Op, p *Params) error {
	if _, err := installScript(ctx, op.Package, p); err != nil {
		return err
	}
	if err := checkHAPlan(ctx, op.Infra, op.Package, op.Flavour, p); err != nil {
		return err
	}
	return checkLBPlan(ctx, op.Infra, op.Package, op.Flavour, p)
}

// InstantiateEnd installs the cluster and registers it as a Kubernetes VIM.
func (d *Driver) InstantiateEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	h, err := d.load(op, p)
	if err != nil {
		return err
	}
	return h.installCluster(ctx)
}

// installCluster builds the cluster along its critical path: kubeadm init
// on the first master, then (HA) the control-plane joins one at a time.
// Everything else runs beside it: every node's preparation (prepare.go) and
// the HA load balancer with its VIP start with the init; once the init is
// done, the workers join beside the control-plane joins, HAProxy's etcd
// frontend is added and the VIM is registered. The bootstrap tokens of all
// joins are made in one round trip and deleted in another.
func (h *hook) installCluster(ctx context.Context) error {
	if err := h.needTopology(); err != nil {
		return err
	}
	script, err := h.script(ctx)
	if err != nil {
		return err
	}
	t := h.topo
	all := t.All()
	h.note(ctx, "connecting to %d nodes (host keys verified)", len(all))
	ss, err := h.d.connect(ctx, h, plansFor(h.p, all, true))
	if err != nil {
		return err
	}
	defer ss.Close()
	// Every goroutine below ends before the sessions close.
	var bg sync.WaitGroup
	defer bg.Wait()
	h.note(ctx, "preparing %d nodes (/etc/hosts, install script, packages) beside the first master's kubeadm init", len(all))
	master := t.Masters[0]
	// The other nodes' preparation starts once the first master's install
	// script runs: until then the critical path has the machines.
	h.initRunning = newGate()
	defer h.initRunning.open()
	h.prep = h.prepareNodes(ctx, ss, all, all, script, h.initRunning, master)
	defer h.prep.finish()
	haErr := make(chan error, 1)
	if t.HA() {
		// Before the init has made them, etcd's certificates are not read
		// for HAProxy: the init writes them while the load balancer is
		// configured. enableEtcdLB adds the etcd frontend afterwards.
		_, initDone := h.nodeCompleted(master)
		h.lbWithoutEtcd = !initDone
		bg.Go(func() { haErr <- h.setupHA(ctx, ss) })
	} else {
		haErr <- nil
	}
	ms := ss.get(master)
	// One token per join, made together as soon as the init's API server
	// answers (while the install script finishes), else on the first
	// join's demand.
	h.tokens = h.newTokenPool(ms, append(slices.Clone(t.Masters[1:]), t.Workers...))
	defer h.tokens.finish(ctx)
	var mi *masterInfo
	initErr := h.perNode(ctx, []*Node{master}, 1, "kubeadm init", func(ctx context.Context, n *Node) (any, error) {
		var err error
		mi, err = h.initMaster(ctx, ms, script)
		return mi, err
	})
	h.initRunning.open() // the init was done in an earlier run, or failed
	if err := errors.Join(initErr, <-haErr); err != nil {
		return err
	}
	h.lbWithoutEtcd = false
	if raw, ok := h.nodeCompleted(master); mi == nil && ok && len(raw) > 0 { // done in an earlier run of this step
		_ = json.Unmarshal(raw, &mi)
	}
	if mi == nil || mi.CACert == "" || mi.CAHash == "" {
		pemText, hash, err := h.d.caCert(ctx, ms)
		if err != nil {
			return err
		}
		mi = &masterInfo{CACert: pemText, CAHash: hash}
	}
	// The first master's other work waits until the critical path has
	// what it needs from it (the tokens; with an HA control plane, the
	// first control-plane join under way): the used tokens and the init's,
	// the VIM (it needs only the API through the endpoint; a failure later
	// in the step rolls it back with the rest) and HAProxy's etcd frontend
	// (it needs only the etcd certificates the init made: the masters that
	// have not joined yet are marked down by its health checks until they
	// have). On a fresh cluster there is nothing to list or check first.
	h.gate = newGate()
	defer h.gate.open()
	h.cleanups = &bg
	later := func(f func()) {
		bg.Go(func() {
			select {
			case <-h.gate.c:
			case <-ctx.Done():
			}
			f()
		})
	}
	if h.initFresh {
		keep := h.tokens.ids()
		later(func() {
			if owners := h.d.deleteOtherTokens(context.WithoutCancel(ctx), ms, keep); owners != nil {
				h.tokens.setCertOwners(owners)
			}
		})
	} else if h.initToken != "" {
		later(func() { h.d.deleteToken(context.WithoutCancel(ctx), ms, h.initToken) })
	}
	var present map[string]nodeState
	if h.initFresh {
		present = map[string]nodeState{}
	}
	vimErr := make(chan error, 1)
	later(func() { vimErr <- h.registerVim(ctx, ss, ms, mi.CACert) })
	lbErr := make(chan error, 1)
	cpErr := make(chan error, 1)
	if t.HA() {
		later(func() { lbErr <- h.enableEtcdLB(ctx, ss) })
		h.note(ctx, "joining %d more masters as control-plane nodes, one at a time, and %d workers beside them, %d at a time", len(t.Masters)-1, len(t.Workers), h.p.WorkerParallelism)
		bg.Go(func() {
			defer h.gate.open()
			cpErr <- h.joinControlPlanes(ctx, ss, ms, script, mi.CAHash)
		})
	} else {
		h.note(ctx, "joining %d workers, %d at a time", len(t.Workers), h.p.WorkerParallelism)
		lbErr <- nil
		cpErr <- nil
	}
	// The workers' commands on the first master leave room there for the
	// control-plane joins'.
	wErr := h.joinWorkers(ctx, ss, ms.shared(maxChannels/2), t.Workers, script, mi.CAHash, present)
	h.gate.open()
	return errors.Join(<-cpErr, wErr, <-lbErr, <-vimErr)
}

// gate holds work back until it opens (once).
type gate struct {
	c    chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{c: make(chan struct{})} }

// open opens the gate; nil-safe.
func (g *gate) open() {
	if g != nil {
		g.once.Do(func() { close(g.c) })
	}
}

// joinControlPlanes joins the masters after the first one at a time and
// checks that etcd is whole: exactly the masters, all healthy.
func (h *hook) joinControlPlanes(ctx context.Context, ss *sessions, ms *session, script []byte, caHash string) error {
	t := h.topo
	var view *cpView
	if h.initFresh {
		// A cluster kubeadm init just made: one etcd member, the init's,
		// and no other node.
		view = &cpView{nodes: map[string]nodeState{}, etcd: &etcdView{Healthy: map[uint64]bool{}, Errors: map[uint64]string{}}}
	}
	v, err := h.joinMasters(ctx, ss, ms, t.Masters[1:], script, caHash, false, view)
	if err != nil {
		return err
	}
	if v == nil || etcdWholeProblem(v, t.Masters) != "" {
		// The last join's own check did not see it whole (or was done
		// in an earlier run): wait for it.
		if v, err = h.d.waitEtcdWhole(ctx, ms, t.Masters, etcdHealthWait); err != nil {
			return err
		}
	}
	h.note(ctx, "etcd: %d members, all healthy", len(v.Members))
	return nil
}

// nodeCompleted is Progress.NodeCompleted (false without a progress).
func (h *hook) nodeCompleted(n *Node) (json.RawMessage, bool) {
	if h.op.Progress == nil {
		return nil, false
	}
	return h.op.Progress.NodeCompleted(n.Name)
}

// masterInfo is what the first master's install reports (its checkpoint
// output: nothing secret).
type masterInfo struct {
	Status            string `json:"status"`
	Role              string `json:"role"`
	APIEndpoint       string `json:"apiEndpoint"`
	KubernetesVersion string `json:"kubernetesVersion"`
	CACert            string `json:"caCert"`
	CAHash            string `json:"caCertHash"`
	kubeadmTime
}

func (h *hook) initMaster(ctx context.Context, ms *session, script []byte) (*masterInfo, error) {
	n := ms.node
	if err := h.prepared(ctx, ms, script); err != nil {
		return nil, err
	}
	args := []string{"-m", masterIPs(h.topo.Masters), "-i", h.topo.EndpointIP, "-p", h.p.Master.PodCIDR, "-a", h.p.Master.ClusterCIDR,
		"--api-port", strconv.Itoa(h.topo.EndpointPort), "--node-name", n.Name, "--node-ip", n.IP,
		"--token-ttl", strconv.Itoa(int(h.p.JoinTokenTTL.Seconds())) + "s"}
	if h.topo.EtcdEndpoint(h.p) != "" {
		// etcd clients reach the members through the VIP: their server
		// certificates must name it. An older copy of the script in a
		// package cannot do that: said, not failed.
		if bytes.Contains(script, []byte("--etcd-cert-sans")) {
			args = append(args, "--etcd-cert-sans", h.topo.VIP)
		} else {
			h.note(ctx, "the package's install script %s has no --etcd-cert-sans: etcd's certificates will not name the VIP %s, so etcd clients through it must verify another name (use the driver's script, or a current copy, for that)", h.p.ScriptPath, h.topo.VIP)
		}
	}
	if bytes.Contains(script, []byte("--no-join-token")) {
		// Every join gets a token of its own (tokens.go): the one the
		// script would make is one kubeadm run on the critical path.
		args = append(args, "--no-join-token")
	}
	kargs, err := h.kuryrArgs(ctx, ms, script)
	if err != nil {
		return nil, err
	}
	args = append(args, kargs...)
	// The joins' tokens are made by kubeadm init itself when the script
	// can: there when the init ends, no round trip between the init and
	// the first join. Else they are made once its API server answers.
	var stdin io.Reader
	withTokens := h.tokens != nil && len(h.tokens.order) > 0 && bytes.Contains(script, []byte("--bootstrap-tokens-stdin"))
	if withTokens {
		args = append(args, "--bootstrap-tokens-stdin")
		stdin = strings.NewReader(h.tokens.initLines())
	}
	note := h.nodeNote(ctx, n)
	r, err := h.d.runScriptIn(ctx, ms, args, scriptEnv(h.p, h.topo), proxySecrets(h.p), stdin, func(msg string) {
		h.initRunning.open()
		if strings.HasPrefix(msg, "kubeadm init succeeded") && h.tokens != nil && !withTokens {
			h.tokens.prefetch(ctx)
		}
		note(msg)
	})
	if err != nil {
		return nil, err
	}
	if withTokens && r["bootstrap_tokens"] == "created" {
		h.tokens.madeByInit()
	}
	// Every join gets a token of its own: the ones kubeadm init (24 h)
	// and the script made go (installCluster, in the background).
	if key := r["certificate_key"]; key != "" {
		// The key of the certificates kubeadm init --upload-certs (or the
		// script) uploaded: the control-plane joins of this hook use it.
		ms.x.AddSecrets(key)
		h.certs.set(key)
	}
	if tok := r["join_token"]; tok != "" {
		ms.x.AddSecrets(tok)
		h.initToken = tok
	}
	h.initFresh = r["status"] == "installed"
	mi := &masterInfo{Status: r["status"], Role: r["role"], APIEndpoint: r["api_endpoint"], KubernetesVersion: r["kubernetes_version"], kubeadmTime: kubeadmTimeOf(r)}
	if want := h.topo.Endpoint(); mi.APIEndpoint != want {
		return nil, fmt.Errorf("the install script on %s reports the API endpoint %q, want %s", n.Name, mi.APIEndpoint, want)
	}
	caFile, err := base64.StdEncoding.DecodeString(r["ca_cert_b64"])
	if err != nil || len(caFile) == 0 {
		return nil, fmt.Errorf("the install script on %s printed no usable ca_cert_b64", n.Name)
	}
	if mi.CACert, mi.CAHash, err = parseCA(caFile); err != nil {
		return nil, fmt.Errorf("the cluster CA the install script on %s printed: %w", n.Name, err)
	}
	if r["ca_cert_hash"] != "" && r["ca_cert_hash"] != mi.CAHash {
		return nil, fmt.Errorf("the install script on %s printed the CA hash %q, but its CA certificate hashes to %s", n.Name, r["ca_cert_hash"], mi.CAHash)
	}
	return mi, nil
}

// joinWorkers joins workers in parallel (worker_parallelism at a time),
// each with a bootstrap token of its own (h.tokens, or a pool of its own).
// Nodes already in the cluster (present, or listed now when nil) are
// skipped; a node that holds a kubelet.conf but is not in the cluster (a
// join that died half-way) is reset first.
func (h *hook) joinWorkers(ctx context.Context, ss *sessions, ms *session, workers []*Node, script []byte, caHash string, present map[string]nodeState) error {
	if len(workers) == 0 {
		return nil
	}
	if present == nil {
		var err error
		if present, err = h.clusterNodes(ctx, ms); err != nil {
			return err
		}
	}
	pool := h.tokens
	if pool == nil {
		pool = h.newTokenPool(ms, workers)
		defer pool.finish(ctx)
	}
	// Once every join runs, h.gate opens (the hook's other work waits).
	var toStart atomic.Int32
	for _, w := range workers {
		if _, ok := present[w.Name]; !ok {
			toStart.Add(1)
		}
	}
	return h.perNode(ctx, workers, h.p.WorkerParallelism, "kubeadm join", func(ctx context.Context, n *Node) (any, error) {
		used := sync.OnceFunc(func() { pool.used(ctx, n) })
		defer used()
		if _, ok := present[n.Name]; ok {
			return map[string]any{"status": "already-joined"}, nil
		}
		ws := ss.get(n)
		note := h.nodeNote(ctx, n)
		pr, ok, err := h.prep.wait(ctx, n)
		if err != nil {
			return nil, err
		}
		if !ok || !pr.Checked {
			half, err := ws.run(ctx, "test -e "+kubeletConf+" && echo half-joined || true", h.d.sudo(remote.RunOpts{}))
			if err != nil {
				return nil, err
			}
			pr.KubeletConf = strings.TrimSpace(half) == "half-joined"
		}
		reset := pr.KubeletConf
		if reset {
			note("resetting a half-joined node (kubelet.conf without a Node object)")
			if _, err := ws.run(ctx, "kubeadm reset -f", h.d.sudo(remote.RunOpts{})); err != nil {
				return nil, fmt.Errorf("kubeadm reset on %s: %w", n.Name, err)
			}
		}
		if !ok {
			if err := h.d.uploadScript(ctx, ws, script); err != nil {
				return nil, err
			}
		}
		tok, err := pool.get(ctx, n)
		if err != nil {
			return nil, err
		}
		if !h.topo.HA() || toStart.Add(-1) == 0 {
			// The single master's work for the workers is done, or every
			// join runs.
			h.gate.open()
		}
		ss.addSecrets(tok)
		args := []string{"-w", n.IP, "-i", h.topo.EndpointIP, "-t", tok, "-s", caHash,
			"--api-port", strconv.Itoa(h.topo.EndpointPort), "--node-name", n.Name, "--node-ip", n.IP}
		r, err := h.d.runScript(ctx, ws, args, scriptEnv(h.p, h.topo), append(proxySecrets(h.p), tok), func(msg string) {
			if strings.HasPrefix(msg, bootstrappedLine) {
				used() // the kubelet has bootstrapped: the token is not needed
			}
			note(msg)
		})
		used()
		if err != nil {
			return nil, err
		}
		if r["node_registered"] != "true" {
			// The script did not see the Node with the kubelet's
			// credentials (or is an older copy): ask a master.
			note("waiting for the node to register")
			if err := h.d.waitNode(ctx, ms, n.Name); err != nil {
				return nil, err
			}
		}
		return joinOutput{Status: r["status"], Role: r["role"], Reset: reset, kubeadmTime: kubeadmTimeOf(r)}, nil
	})
}

// joinOutput is a join's checkpoint output.
type joinOutput struct {
	Status string `json:"status"`
	Role   string `json:"role,omitempty"`
	Reset  bool   `json:"reset"`
	kubeadmTime
}

// prepared makes sure a node has the install script: uploaded by its
// preparation when this hook prepared the node, else now.
func (h *hook) prepared(ctx context.Context, s *session, script []byte) error {
	if _, ok, err := h.prep.wait(ctx, s.node); ok || err != nil {
		return err
	}
	return h.d.uploadScript(ctx, s, script)
}

// registerVim registers the cluster as a Kubernetes VIM (reused by name on
// retry) with a dedicated ServiceAccount's token and the cluster CA, after
// checking they work, and records it in vimConnectionInfo.
func (h *hook) registerVim(ctx context.Context, ss *sessions, ms *session, caPEM string) error {
	h.note(ctx, "registering the cluster as Kubernetes VIM %s", h.p.VimName)
	token, err := h.d.vimToken(ctx, ms)
	if err != nil {
		return err
	}
	ss.addSecrets(token)
	authURL := h.topo.Endpoint()
	if err := h.d.checkAPI(ctx, authURL, token, caPEM); err != nil {
		return err
	}
	if h.op.Vims == nil {
		return errors.New("no VIM registry: cannot register the cluster")
	}
	vimID, err := h.op.Vims.RegisterKubernetesVim(ctx, driverapi.KubernetesVim{
		Name: h.p.VimName, AuthURL: authURL, BearerToken: token, SSLCACert: caPEM, Namespace: "default",
		Description: "Kubernetes cluster of VNF instance " + h.op.Instance.ID + " (mini-VNFM kubeadm driver)",
		// The driver checked the token itself, over its own dialer; the
		// registry checks again when it reaches the nodes the same way.
		Verify: h.d.o.Dial == nil,
	})
	if err != nil {
		return fmt.Errorf("registering Kubernetes VIM %s: %w", h.p.VimName, err)
	}
	setVimConnection(h.op.Instance, vimID, h.p.VimName, authURL, caPEM)
	h.log.Info("cluster registered as a Kubernetes VIM", "vimId", vimID, "name", h.p.VimName, "authUrl", authURL)
	return nil
}

// checkAPI proves the VIM's credentials: the API server, verified with the
// cluster CA, lists nodes for the token.
func (d *Driver) checkAPI(ctx context.Context, authURL, token, caPEM string) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return errors.New("the cluster CA certificate does not parse")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	if d.o.Dial != nil {
		tr.DialContext = d.o.Dial
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	var last error
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, time.Second); err != nil {
				return err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL+"/api/v1/nodes?limit=1", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := cl.Do(req)
		if err != nil {
			last = err
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return fmt.Errorf("the VIM credentials do not work: GET %s/api/v1/nodes with the ServiceAccount token and the cluster CA: %v", authURL, last)
}

// setVimConnection adds (or updates) the cluster's vimConnectionInfo entry:
// the VIM by id, no secrets.
func setVimConnection(in *model.VnfInstance, vimID, name, authURL, caPEM string) {
	e := model.VimConnectionInfo{
		ID:            uuid.NewSHA1(uuid.NameSpaceURL, []byte("mini-vnfm:kubeadm:"+in.ID+":"+vimID)).String(),
		VimID:         vimID,
		VimType:       VimTypeKubernetes,
		InterfaceInfo: map[string]any{"endpoint": authURL, "ssl_ca_cert": caPEM},
		AccessInfo:    map[string]any{"auth_url": authURL},
		Extra:         map[string]any{"vimName": name, "managedBy": "mgmtdrivers/" + Name},
	}
	in.VimConnectionInfo = slices.DeleteFunc(in.VimConnectionInfo, func(c model.VimConnectionInfo) bool { return ours(c, name) || c.VimID == vimID })
	in.VimConnectionInfo = append(in.VimConnectionInfo, e)
}

func ours(c model.VimConnectionInfo, name string) bool {
	n, _ := c.Extra["vimName"].(string)
	m, _ := c.Extra["managedBy"].(string)
	return m == "mgmtdrivers/"+Name && (name == "" || n == name)
}

// vimNames are the cluster VIMs of the instance: name (the parameters') and
// those its vimConnectionInfo entries of this driver name.
func vimNames(in *model.VnfInstance, name string) []string {
	names := []string{}
	if name != "" {
		names = append(names, name)
	}
	for _, c := range in.VimConnectionInfo {
		if ours(c, "") {
			if n, _ := c.Extra["vimName"].(string); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		names = append(names, "kubernetes_vim_"+in.ID)
	}
	return names
}

// removeVim deletes the cluster's VIM and its vimConnectionInfo entry. With
// force (the operator went ahead although CNFs use the VIM), a VIM others
// still refer to is left registered for them.
func (d *Driver) removeVim(ctx context.Context, op *driverapi.Op, name string, force bool) error {
	for _, n := range vimNames(op.Instance, name) {
		if op.Vims == nil {
			return errors.New("no VIM registry: cannot remove the cluster's VIM")
		}
		if force {
			users, err := op.Vims.VimUsers(ctx, n, op.Instance.ID)
			if err != nil {
				return err
			}
			if len(users) > 0 {
				op.Log.Warn("force: the cluster's Kubernetes VIM stays registered for its users", "vim", n, "users", strings.Join(users, ", "))
				continue
			}
		}
		if err := op.Vims.RemoveKubernetesVim(ctx, n, op.Instance.ID); err != nil {
			return fmt.Errorf("removing Kubernetes VIM %s: %w", n, err)
		}
	}
	op.Instance.VimConnectionInfo = slices.DeleteFunc(op.Instance.VimConnectionInfo, func(c model.VimConnectionInfo) bool { return ours(c, "") })
	return nil
}

// TerminateEnd removes the cluster's VIM and its vimConnectionInfo entry
// (the VMs are gone; nothing runs on them).
func (d *Driver) TerminateEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	if err := d.revokeKuryr(ctx, op, p); err != nil {
		return err
	}
	return d.removeVim(ctx, op, p.VimName, p.Force)
}

// ScaleStart drains and removes the scale-in victims (the VNFCs the infra
// driver removes next: op.Victims) from the cluster and from the other
// nodes' /etc/hosts. For a scale-out it only checks the request.
func (d *Driver) ScaleStart(ctx context.Context, op *driverapi.Op, p *Params) error {
	req := op.Request.Scale
	if req == nil {
		return errors.New("scale_start: the operation has no ScaleVnfRequest")
	}
	h, err := d.load(op, p)
	if err != nil {
		return err
	}
	if err := h.needTopology(); err != nil {
		return err
	}
	if err := h.checkAspect(req.AspectID); err != nil {
		return err
	}
	if req.Type != model.ScaleIn {
		return nil
	}
	victims, err := h.victims()
	if err != nil || len(victims) == 0 {
		return err
	}
	recordServers(op, scratchRemoved, victims)
	remaining := h.topo.Without(vnfcIDs(victims)...)
	ss, ms, err := h.connectControl(ctx, plansFor(h.p, remaining.Workers, false))
	if err != nil {
		return err
	}
	defer ss.Close()
	if err := h.removeNodes(ctx, ms, victims, nil); err != nil {
		return err
	}
	h.note(ctx, "removing %s from /etc/hosts of %d nodes", strings.Join(sortedNames(victims), ", "), len(remaining.All()))
	return d.writeHostsAll(ctx, ss, remaining.All(), remaining.All())
}

// removeNodes cordons all, then drains and deletes each (in parallel). A
// victim that is NotReady, or in down (its VM did not answer: a heal's dead
// master), is deleted without a drain.
func (h *hook) removeNodes(ctx context.Context, ms *session, victims []*Node, down map[string]bool) error {
	h.note(ctx, "removing %s from the cluster (drain timeout %v, policy %s)", strings.Join(sortedNames(victims), ", "), h.p.DrainTimeout, h.p.DrainPolicy)
	present, err := h.clusterNodes(ctx, ms)
	if err != nil {
		return err
	}
	var cordon []string
	for _, v := range victims {
		if _, ok := present[v.Name]; ok {
			cordon = append(cordon, v.Name)
		}
	}
	if len(cordon) > 0 {
		// All first, so that no drained pod lands on another victim.
		if _, err := ms.run(ctx, kubectl(append([]string{"cordon"}, cordon...)...), h.d.sudo(remote.RunOpts{})); err != nil {
			return fmt.Errorf("cordoning %s: %w", strings.Join(cordon, ", "), err)
		}
	}
	return h.perNode(ctx, victims, h.p.WorkerParallelism, "drain and delete", func(ctx context.Context, n *Node) (any, error) {
		st, ok := present[n.Name]
		if ok && (!st.Ready || down[n.Name]) {
			// An unreachable kubelet never confirms pod deletions: a drain
			// would only time out. Deleting the Node lets the pods go. The
			// Node of a VM that just died stays Ready for the node monitor's
			// grace period (50 s), hence down.
			why := "node NotReady"
			if st.Ready {
				why = "its server does not answer"
			}
			h.nodeNote(ctx, n)(why + ": deleting it without a drain")
			if _, err := ms.run(ctx, kubectl("delete", "node", n.Name, "--ignore-not-found"), h.d.sudo(remote.RunOpts{})); err != nil {
				return nil, fmt.Errorf("deleting node %s: %w", n.Name, err)
			}
			return map[string]any{"notReady": true}, nil
		}
		return h.d.removeNode(ctx, ms, h.p, n.Name, h.nodeNote(ctx, n))
	})
}

// victims are the worker nodes a SCALE_IN removes.
func (h *hook) victims() ([]*Node, error) {
	var out []*Node
	for _, id := range h.op.Victims {
		n := h.topo.ByVnfc(id)
		if n == nil {
			continue // not a Kubernetes node
		}
		if n.Role == Master {
			return nil, fmt.Errorf("scale-in would remove master %s: scaling the control plane is not supported (heal a failed master instead)", n.Name)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkAspect refuses aspects that scale the masters' VDU.
func (h *hook) checkAspect(aspectID string) error {
	return checkAspect(h.op.Flavour, h.topo, h.p, aspectID)
}

func checkAspect(fl *model.Flavour, topo *Topology, p *Params, aspectID string) error {
	if fl == nil {
		return nil
	}
	a := fl.ScalingAspects[aspectID]
	if a == nil {
		return nil
	}
	for _, m := range topo.Masters {
		if _, ok := a.VduDeltas[m.VduID]; ok {
			return fmt.Errorf("aspect %s scales the master VDU %s: scaling the control plane is not supported (an HA control plane keeps its odd number of masters; a failed master is healed); scale the workers' aspect", aspectID, m.VduID)
		}
	}
	return checkLBAspect(a, aspectID, p)
}

func vnfcIDs(ns []*Node) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.VnfcID)
	}
	return out
}

// ScaleEnd joins the new workers of a SCALE_OUT in parallel and updates
// /etc/hosts everywhere; after a SCALE_IN it forgets the removed servers'
// host keys.
func (d *Driver) ScaleEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	req := op.Request.Scale
	if req == nil {
		return errors.New("scale_end: the operation has no ScaleVnfRequest")
	}
	if req.Type == model.ScaleIn {
		return d.forgetRemoved(ctx, op)
	}
	h, err := d.load(op, p)
	if err != nil {
		return err
	}
	if err := h.needTopology(); err != nil {
		return err
	}
	added := addedVnfcs(op)
	// Every node is connected (its host key verified) before anything
	// runs on any of them, the masters beside the workers.
	plans := plansFor(h.p, h.topo.Workers, false)
	for i := range plans {
		plans[i].Fresh = added[plans[i].Key]
	}
	all := h.topo.All()
	ss, ms, err := h.connectControl(ctx, plans)
	if err != nil {
		return err
	}
	defer ss.Close()
	// The CA certificate is read while the nodes are listed (connectControl
	// listed them when it picked the master).
	var hash string
	caErr := make(chan error, 1)
	go func() {
		var err error
		_, hash, err = d.caCert(ctx, ms)
		caErr <- err
	}()
	present := h.nodesAtConnect
	if present == nil {
		present, err = h.clusterNodes(ctx, ms)
	}
	if err := errors.Join(err, <-caErr); err != nil {
		return err
	}
	var joining []*Node
	for _, w := range h.topo.Workers {
		if _, ok := present[w.Name]; !ok || added[w.VnfcID] {
			joining = append(joining, w)
		}
	}
	h.note(ctx, "writing /etc/hosts on %d nodes", len(all))
	if len(joining) == 0 {
		return d.writeHostsAll(ctx, ss, all, all)
	}
	script, err := h.script(ctx)
	if err != nil {
		return err
	}
	// The joins' tokens are made while the new workers are prepared
	// (/etc/hosts, script, packages); the others' /etc/hosts are written
	// beside the joins: a join needs only its own node's.
	h.tokens = h.newTokenPool(ms, joining)
	h.tokens.prefetch(ctx)
	defer h.tokens.finish(ctx)
	h.prep = h.prepareNodes(ctx, ss, joining, all, script, nil)
	defer h.prep.finish()
	// The other nodes' /etc/hosts are written once every join runs: a join
	// needs only its own node's, and until then the joins have the
	// machines.
	h.gate = newGate()
	hostsErr := make(chan error, 1)
	go func() {
		select {
		case <-h.gate.c:
		case <-ctx.Done():
		}
		hostsErr <- d.writeHostsAll(ctx, ss, h.topo.Without(vnfcIDs(joining)...).All(), all)
	}()
	h.note(ctx, "joining %s, %d at a time", strings.Join(sortedNames(joining), ", "), h.p.WorkerParallelism)
	err = h.joinWorkers(ctx, ss, ms.shared(maxChannels/2), joining, script, hash, present)
	h.gate.open()
	return errors.Join(err, <-hostsErr)
}

func addedVnfcs(op *driverapi.Op) map[string]bool {
	out := map[string]bool{}
	if op.ResourceChanges != nil {
		for _, a := range op.ResourceChanges.AffectedVnfcs {
			if a.ChangeType == "ADDED" {
				out[a.ID] = true
			}
		}
	}
	return out
}

// forgetRemoved drops the host key pins of the servers a scale-in removed
// (recorded by scale_start).
func (d *Driver) forgetRemoved(ctx context.Context, op *driverapi.Op) error {
	var gone map[string]serverAddr
	if raw, ok := op.Scratch[scratchRemoved]; ok {
		_ = json.Unmarshal(raw, &gone)
	}
	for _, id := range slices.Sorted(maps.Keys(gone)) {
		if err := d.o.Pins.Replace(ctx, gone[id].ServerID, gone[id].Addr, nil); err != nil {
			return fmt.Errorf("dropping the host key pins of removed server %s: %w", gone[id].ServerID, err)
		}
	}
	return nil
}

// serverAddr records a VNFC's server and SSH address (its pin key).
type serverAddr struct {
	ServerID string `json:"serverId"`
	Addr     string `json:"addr"`
}

func recordServers(op *driverapi.Op, key string, nodes []*Node) {
	rec := map[string]serverAddr{}
	for _, n := range nodes {
		rec[n.VnfcID] = serverAddr{ServerID: n.ServerID, Addr: n.SSHAddr}
	}
	b, _ := json.Marshal(rec)
	if op.Scratch != nil {
		op.Scratch[key] = b
	}
}

// HealStart: a VNFC heal of workers drains and deletes their nodes (a
// NotReady node is deleted without a drain); a heal of the whole VNF removes
// the cluster's VIM (the cluster is rebuilt). Masters cannot be healed one
// by one.
func (d *Driver) HealStart(ctx context.Context, op *driverapi.Op, p *Params) error {
	req := op.Request.Heal
	if req == nil {
		return errors.New("heal_start: the operation has no HealVnfRequest")
	}
	h, err := d.load(op, p)
	if err != nil {
		return err
	}
	if err := h.needTopology(); err != nil {
		return err
	}
	if err := refuseLBHeal(h.op.Instance.InstantiatedVnfInfo, h.p, req.VnfcInstanceID); err != nil {
		return err
	}
	targets := append(h.topo.All(), h.topo.LBs...) // an entire heal replaces the LBs' servers too
	var masters, workers []*Node
	if len(req.VnfcInstanceID) > 0 {
		targets = nil
		for _, id := range req.VnfcInstanceID {
			n := h.topo.ByVnfc(id)
			if n == nil {
				continue
			}
			if n.Role == Master {
				if !h.topo.HA() {
					return fmt.Errorf("VNFC %s is the cluster's only master: it cannot be healed on its own; heal the entire VNF (the cluster is rebuilt, its workloads are lost)", id)
				}
				masters = append(masters, n)
			} else {
				workers = append(workers, n)
			}
			targets = append(targets, n)
		}
	}
	recordServers(op, scratchHealed, targets)
	if len(req.VnfcInstanceID) == 0 {
		h.note(ctx, "entire heal: removing Kubernetes VIM %s; the cluster is rebuilt after the VNF", h.p.VimName)
		return d.removeVim(ctx, op, h.p.VimName, h.p.Force)
	}
	if len(masters) > 0 {
		return h.healMastersStart(ctx, masters, workers)
	}
	if len(targets) == 0 {
		return nil
	}
	ss, ms, err := h.connectControl(ctx, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	return h.removeNodes(ctx, ms, targets, nil)
}

// HealEnd joins the healed workers again (same node name and address, new
// server and host key: pinned afresh, re-pinned if the server kept its id);
// after an entire heal it installs the new cluster as instantiate_end does.
func (d *Driver) HealEnd(ctx context.Context, op *driverapi.Op, p *Params) error {
	req := op.Request.Heal
	if req == nil {
		return errors.New("heal_end: the operation has no HealVnfRequest")
	}
	h, err := d.load(op, p)
	if err != nil {
		return err
	}
	before := map[string]serverAddr{}
	if raw, ok := op.Scratch[scratchHealed]; ok {
		_ = json.Unmarshal(raw, &before)
	}
	if len(req.VnfcInstanceID) == 0 {
		if err := h.installCluster(ctx); err != nil {
			return err
		}
		return d.forgetServers(ctx, h, before)
	}
	if err := h.needTopology(); err != nil {
		return err
	}
	var targets, masters []*Node
	for _, id := range req.VnfcInstanceID {
		n := h.topo.ByVnfc(id)
		switch {
		case n == nil:
		case n.Role == Worker:
			targets = append(targets, n)
		case h.topo.HA():
			masters = append(masters, n)
		}
	}
	if len(masters) > 0 {
		if err := h.healMastersEnd(ctx, masters, targets, before); err != nil {
			return err
		}
		return d.forgetServers(ctx, h, before)
	}
	if len(targets) == 0 {
		return nil
	}
	var plans []kube.Plan
	for _, p := range plansFor(h.p, targets, true) {
		if b, ok := before[p.Key]; ok && b.ServerID == p.ServerID && b.Addr == p.Addr {
			p.Repin = true // rebuilt in place: new keys, same server id
		}
		plans = append(plans, p)
	}
	ss, ms, err := h.connectControl(ctx, plans)
	if err != nil {
		return err
	}
	defer ss.Close()
	all := h.topo.All()
	if err := d.writeHostsAll(ctx, ss, targets, all); err != nil {
		return err
	}
	script, err := h.script(ctx)
	if err != nil {
		return err
	}
	_, hash, err := d.caCert(ctx, ms)
	if err != nil {
		return err
	}
	if err := h.joinWorkers(ctx, ss, ms, targets, script, hash, nil); err != nil {
		return err
	}
	return d.forgetServers(ctx, h, before)
}

// forgetServers drops the pins of servers recorded before a heal that are
// no longer the VNFC's server.
func (d *Driver) forgetServers(ctx context.Context, h *hook, before map[string]serverAddr) error {
	now := map[string]bool{}
	if h.topo != nil {
		for _, n := range append(h.topo.All(), h.topo.LBs...) {
			now[n.ServerID] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(before)) {
		b := before[id]
		if now[b.ServerID] {
			continue
		}
		if err := d.o.Pins.Replace(ctx, b.ServerID, b.Addr, nil); err != nil {
			h.log.Warn("could not drop the host key pins of a replaced server", "server", b.ServerID, "err", err)
		}
	}
	return nil
}

// Rollback undoes a hook of an operation being rolled back: the VIM of a
// failed instantiate, the nodes a failed scale-out joined. (A scale-in is
// not rolled back: the engine offers retry and fail only.)
func (d *Driver) Rollback(ctx context.Context, hookName string, op *driverapi.Op, p *Params) error {
	switch hookName {
	case model.HookInstantiateEnd:
		if err := d.revokeKuryr(ctx, op, p); err != nil {
			return err
		}
		return d.removeVim(ctx, op, p.VimName, false)
	case model.HookScaleEnd:
		if !op.Request.ScaleOut() {
			return nil
		}
		h, err := d.load(op, p)
		if err != nil || h.topo == nil {
			return err
		}
		added := addedVnfcs(op)
		var joined []*Node
		for _, w := range h.topo.Workers {
			if added[w.VnfcID] {
				joined = append(joined, w)
			}
		}
		if len(joined) == 0 {
			return nil
		}
		ss, ms, err := h.connectControl(ctx, nil)
		if err != nil {
			return err
		}
		defer ss.Close()
		for _, n := range joined {
			if _, err := ms.run(ctx, kubectl("delete", "node", n.Name, "--ignore-not-found"), d.sudo(remote.RunOpts{})); err != nil {
				return fmt.Errorf("deleting node %s: %w", n.Name, err)
			}
		}
		return nil
	}
	return nil
}

// ParseParams (mgmtdrivers.Typed) reads k8s_cluster_installation_param
// once, when the request is accepted, and refuses what can be known then,
// before anything is created or deleted: for an instantiation the
// connection point names against the VNFD, the install script (present and
// ours), the HA and load balancer plan; for a scale an aspect that scales
// the control plane or the load balancers; for a heal the VNFCs that cannot
// be healed one by one and a heal that would lose etcd quorum; for a
// termination, an entire heal or a scale-in that leaves no worker a cluster
// VIM other instances depend on.
func (d *Driver) ParseParams(ctx context.Context, a *driverapi.Accept, stored *Params) (*Params, error) {
	p, err := mgmtdrivers.BaseParams(a, stored, ParseParams)
	if err != nil {
		return nil, err
	}
	if p.VimName == "" {
		p.VimName = "kubernetes_vim_" + a.Instance.ID
	}
	if a.Request.Instantiate != nil {
		if err := checkKuryr(a, p); err != nil {
			return nil, err
		}
		return p, checkPlan(ctx, a, p)
	}
	p.Force = false
	if err := p.Overrides(a.Request.AdditionalParams()); err != nil {
		return nil, err
	}
	info := a.Instance.InstantiatedVnfInfo
	var topo *Topology
	if info != nil && len(info.VnfcResourceInfo) > 0 {
		topo, _ = Classify(a.ComputeResources(), info.ExtCpInfo, a.Flavour, p) // the hooks report a failure with the whole picture
	}
	switch {
	case a.Request.Scale != nil:
		if a.Flavour != nil && topo != nil {
			if err := checkAspect(a.Flavour, topo, p, a.Request.Scale.AspectID); err != nil {
				return nil, err
			}
			return p, kube.CheckWorkerScaleIn(ctx, a, p.Force, topo.Workers, vimNames(a.Instance, p.VimName)...)
		}
	case a.Request.Heal != nil:
		if len(a.Request.Heal.VnfcInstanceID) == 0 {
			return p, kube.CheckVimUsers(ctx, a, p.Force, vimNames(a.Instance, p.VimName)...)
		}
		if topo != nil {
			if err := checkHeal(info, topo, p, a.Request.Heal.VnfcInstanceID); err != nil {
				return nil, err
			}
		}
	case a.Request.Terminate != nil:
		return p, kube.CheckVimUsers(ctx, a, p.Force, vimNames(a.Instance, p.VimName)...)
	}
	return p, nil
}

// checkPlan validates an instantiation's parameters against the VNFD and
// the package before anything exists.
func checkPlan(ctx context.Context, a *driverapi.Accept, p *Params) error {
	r := &kube.Reader{Docs: DocsURL}
	kube.CheckNodeCPs(r, a.Flavour, root+".master_node", p.Master.NodeParams)
	kube.CheckCP(r, a.Flavour, root+".master_node.cluster_cp_name", p.Master.ClusterCPName)
	kube.CheckNodeCPs(r, a.Flavour, root+".worker_node", p.Worker.NodeParams)
	if p.LB.Dedicated() {
		kube.CheckNodeCPs(r, a.Flavour, root+".lb_node", p.LB.Node.NodeParams)
	}
	if err := r.Err(); err != nil {
		return err
	}
	if _, err := installScript(ctx, a.Package, p); err != nil {
		return err
	}
	// An HA control plane's VNFD must keep an odd number >= 3 of masters.
	if err := checkHAPlan(ctx, a.Infra, a.Package, a.Flavour, p); err != nil {
		return err
	}
	return checkLBPlan(ctx, a.Infra, a.Package, a.Flavour, p)
}

// checkHeal refuses VNFC heals the driver cannot carry out: a load balancer,
// the only master, more masters at once than etcd can lose (unless force).
func checkHeal(info *model.InstantiatedVnfInfo, topo *Topology, p *Params, vnfcs []string) error {
	if err := refuseLBHeal(info, p, vnfcs); err != nil {
		return err
	}
	var masters []string
	for _, id := range vnfcs {
		if n := topo.ByVnfc(id); n != nil && n.Role == Master {
			if !topo.HA() {
				return fmt.Errorf("VNFC %s is the cluster's only master: it cannot be healed on its own; heal the entire VNF (no vnfcInstanceId: the cluster is rebuilt, its workloads are lost)", id)
			}
			masters = append(masters, n.Name)
		}
	}
	// Healing more masters at once than etcd can lose is refused outright;
	// heal_start checks the members' actual health.
	if n := len(topo.Masters); len(masters) > (n-1)/2 && !p.Force {
		return fmt.Errorf("healing %d of %d masters at once (%s) would lose etcd quorum (%d members must stay): heal at most %d at a time, or set additionalParams.force: true",
			len(masters), n, strings.Join(masters, ", "), quorum(n), (n-1)/2)
	}
	return nil
}
