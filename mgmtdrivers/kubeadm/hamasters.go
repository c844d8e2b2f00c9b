package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

var certKeyRE = regexp.MustCompile(`(?m)^([0-9a-f]{64})\s*$`)

// Waits of the HA flows.
const (
	vipWait        = 30 * time.Second // the VIP to settle on a master
	etcdHealthWait = 2 * time.Minute  // etcd healthy before and after a control-plane join
	deadMasterWait = 20 * time.Second // connecting to a master that may be down
)

// connectControl connects to the nodes of plans (all must answer) and to a
// control-plane node to run kubectl and kubeadm on: the master of a single
// master cluster; for an HA control plane every master it can reach (dead
// ones are skipped), the first of them in master order.
func (h *hook) connectControl(ctx context.Context, plans []kube.Plan) (*sessions, *session, error) {
	t := h.topo
	inPlans := map[string]bool{}
	for _, p := range plans {
		inPlans[p.Key] = true
	}
	if !t.HA() {
		if !inPlans[t.Masters[0].VnfcID] {
			plans = append(plansFor(h.p, t.Masters[:1], false), plans...)
		}
		ss, err := h.d.connect(ctx, h, plans)
		if err != nil {
			return nil, nil, err
		}
		return ss, ss.get(t.Masters[0]), nil
	}
	var rest []*Node
	for _, m := range t.Masters {
		if !inPlans[m.VnfcID] {
			rest = append(rest, m)
		}
	}
	// The nodes of plans and the other masters are connected at once.
	ss := &sessions{Sessions: kube.NewSessions(), log: h.log}
	var more *sessions
	var failed map[string]error
	moreErr := make(chan error, 1)
	go func() {
		var err error
		more, failed, err = h.d.connectSome(ctx, h, plansFor(h.p, rest, false), deadMasterWait)
		moreErr <- err
	}()
	var err error
	if len(plans) > 0 {
		ss, err = h.d.connect(ctx, h, plans)
	}
	if err := errors.Join(err, <-moreErr); err != nil {
		if ss != nil {
			ss.Close()
		}
		if more != nil {
			more.Close()
		}
		return nil, nil, err
	}
	ss.merge(more)
	for id, e := range failed {
		h.log.Warn("master unreachable; carrying on with the others", "vnfc", id, "err", e)
	}
	live := reachable(ss, t.Masters)
	var last error
	for _, m := range live {
		s := ss.get(m)
		// Listing the nodes proves the API server answers, and the
		// caller may use the list.
		out, err := s.run(ctx, kubectl("get", "nodes", "-o", "json"), h.d.sudo(remote.RunOpts{Timeout: 20 * time.Second}))
		var nodes map[string]nodeState
		if err == nil {
			nodes, err = parseNodes(out)
		}
		if last = err; err == nil {
			h.nodesAtConnect = nodes
			return ss, s, nil
		}
	}
	if len(live) > 0 {
		// The masters answer over SSH but no API server does yet: they
		// just booted (their cloud restarted) and are starting their
		// static pods. Wait, bounded, with the wait in the progress.
		s, err := h.waitAnyAPI(ctx, ss, live, last)
		if err == nil {
			return ss, s, nil
		}
		last = err
	}
	ss.Close()
	return nil, nil, fmt.Errorf("no master of the HA control plane answers (reachable over SSH: %v; last error: %v); the cluster has lost its control plane",
		orNone(sortedNames(live)), last)
}

func reachable(ss *sessions, ns []*Node) []*Node {
	var out []*Node
	for _, n := range ns {
		if ss.get(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

func masterIPs(ms []*Node) string {
	var ips []string
	for _, m := range ms {
		ips = append(ips, m.IP)
	}
	return strings.Join(ips, ",")
}

// setupHA configures HAProxy and keepalived on every master and waits for
// the VIP (on the first master, the highest priority, when it is up).
func (h *hook) setupHA(ctx context.Context, ss *sessions) error {
	t := h.topo
	if h.p.LB.Dedicated() {
		return h.setupDedicatedLBs(ctx)
	}
	h.note(ctx, "HA control plane: HAProxy on :%d and keepalived (virtual_router_id %d, VIP %s) on %d masters", h.p.HA.LBPort, h.p.vrid(h.op.Instance.ID), t.VIP, len(t.Masters))
	if _, err := h.configureLB(ctx, ss, t.Masters, t.Masters, t.Masters, true); err != nil {
		return err
	}
	holder, err := h.waitVIP(ctx, ss, t.Masters, t.Masters[:1], vipWait)
	if err != nil {
		return err
	}
	h.note(ctx, "the VIP %s is held by %s", t.VIP, holder.Name)
	return nil
}

// certKey is the certificate key of the control-plane certificates
// uploaded for a hook's control-plane joins: kubeadm init --upload-certs'
// (the install script reports it) or one upload for all the joins of the
// hook; the certificates are deleted after the last join.
type certKey struct {
	mu       sync.Mutex
	key      string
	uploaded bool // by this hook: kubeadm-certs is deleted afterwards
}

func (c *certKey) set(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.uploaded = key, true
}

// certificateKey returns the hook's certificate key, uploading the
// certificates with a fresh one the first time (kubeadm keeps them 2 h).
func (h *hook) certificateKey(ctx context.Context, ms *session) (string, error) {
	h.certs.mu.Lock()
	defer h.certs.mu.Unlock()
	if h.certs.key != "" {
		return h.certs.key, nil
	}
	res, err := ms.x.Run(ctx, remote.Command("kubeadm", "init", "phase", "upload-certs", "--upload-certs", "--kubeconfig", adminConf), h.d.sudo(remote.RunOpts{}))
	if err != nil {
		return "", fmt.Errorf("kubeadm init phase upload-certs on %s: %w", ms.node.Name, err)
	}
	all := certKeyRE.FindAllStringSubmatch(res.Stdout, -1)
	if len(all) == 0 {
		return "", fmt.Errorf("kubeadm init phase upload-certs on %s printed no certificate key", ms.node.Name)
	}
	h.certs.key, h.certs.uploaded = all[len(all)-1][1], true
	if h.tokens != nil {
		h.tokens.setCertOwners(nil) // new certificates, owned by a new token
	}
	ms.x.AddSecrets(h.certs.key)
	return h.certs.key, nil
}

// dropCerts deletes the uploaded control-plane certificates (they stay
// encrypted in the cluster for 2 h otherwise), in the background when the
// hook allows, with the token of the join n when it is the hook's (nil:
// none); the key is forgotten.
func (h *hook) dropCerts(ctx context.Context, ms *session, n *Node) {
	h.certs.mu.Lock()
	uploaded := h.certs.uploaded
	h.certs.key, h.certs.uploaded = "", false
	h.certs.mu.Unlock()
	if !uploaded {
		return
	}
	if h.tokens != nil && h.tokens.alsoDropCerts(ctx, n) {
		return // with the tokens, in one round trip
	}
	ctx = context.WithoutCancel(ctx)
	del := func() {
		if _, err := ms.run(ctx, remote.Command("sh", "-c", dropScript, "drop-certs", "1"), h.d.sudo(remote.RunOpts{})); err != nil {
			h.log.Warn("could not delete the uploaded certificates (they expire in 2 h)", "err", err)
		}
	}
	if h.cleanups == nil {
		del()
		return
	}
	h.cleanups.Go(del)
}

// cpView is what a control-plane join's checks read in one round trip:
// the cluster's nodes and its etcd.
type cpView struct {
	nodes map[string]nodeState
	etcd  *etcdView
}

// clusterView reads the nodes and etcd through the master ms.
func (h *hook) clusterView(ctx context.Context, ms *session) (*cpView, error) {
	nodes, v, err := h.d.clusterState(ctx, ms, h.topo.Masters)
	if apiUnreachable(err) {
		if err := h.waitAPI(ctx, ms, err); err != nil {
			return nil, err
		}
		nodes, v, err = h.d.clusterState(ctx, ms, h.topo.Masters)
	}
	if err != nil {
		return nil, err
	}
	return &cpView{nodes: nodes, etcd: v}, nil
}

// etcdReadyFor says whether a member may be added for n: every member but
// n's own (a stale one is removed first) is healthy; with force, a quorum.
func etcdReadyFor(v *etcdView, n *Node, force bool) error {
	own, _ := v.member(n)
	others, healthy := 0, 0
	for _, m := range v.Members {
		if m.ID == own.ID && own.ID != 0 {
			continue
		}
		others++
		if v.Healthy[m.ID] {
			healthy++
		}
	}
	if healthy == others || (force && healthy >= quorum(others+1)) {
		return nil
	}
	return fmt.Errorf("etcd members not healthy: %s", strings.Join(v.unhealthy(), ", "))
}

// cpPoll is how often a control-plane join's checks look again: each look
// is one SSH round trip, the join is the build's critical path.
const cpPoll = 250 * time.Millisecond

// waitEtcdReady waits until a member may be added for n (etcdReadyFor),
// starting from view when it is not nil (the check after the previous
// join), and returns the view that said so.
func (h *hook) waitEtcdReady(ctx context.Context, ms *session, n *Node, force bool, view *cpView) (*cpView, error) {
	deadline := time.Now().Add(etcdHealthWait)
	for {
		var err error
		if view == nil {
			view, err = h.clusterView(ctx, ms)
		}
		if err == nil {
			if err = etcdReadyFor(view.etcd, n, force); err == nil {
				return view, nil
			}
		}
		view = nil
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("before joining %s as a control-plane node: %w (waited %v; a control-plane join adds an etcd member and must not start while the cluster is short of healthy members)", n.Name, err, etcdHealthWait)
		}
		if err := sleep(ctx, cpPoll); err != nil {
			return nil, err
		}
	}
}

// joinControlPlane joins one master as a control-plane node: after etcd is
// healthy (view: what the check after the previous join read, nil to look
// now), with the hook's certificate key and a bootstrap token of its own;
// done when its Node is Ready and its etcd member started and healthy. It
// returns what that last check read: the next join's starting point.
func (h *hook) joinControlPlane(ctx context.Context, ss *sessions, ms *session, n *Node, script []byte, caHash string, force bool, view *cpView, pool *tokenPool, last bool) (any, *cpView, error) {
	s := ss.get(n)
	note := h.nodeNote(ctx, n)
	used := sync.OnceFunc(func() { pool.used(ctx, n) })
	defer used()
	view, err := h.waitEtcdReady(ctx, ms, n, force, view)
	if err != nil {
		return nil, nil, err
	}
	v := view.etcd
	mem, isMember := v.member(n)
	if st, ok := view.nodes[n.Name]; ok && st.Ready && isMember && mem.Name != "" && v.Healthy[mem.ID] {
		return map[string]any{"status": "already-joined"}, view, nil
	}
	if isMember {
		// Left by a join that died half-way, or by the VM this one replaces.
		// The join's checks do not read the leader; the removal moves
		// leadership off the member first.
		if full, err := h.d.etcdState(ctx, ms, h.topo.Masters); err == nil {
			v = full
		}
		if err := h.d.removeEtcdMember(ctx, ms, v, n, h.topo.Masters, note); err != nil {
			return nil, nil, err
		}
	}
	pr, ok, err := h.prep.wait(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	reset := pr.KubeletConf || pr.ControlPlane
	if !ok || !pr.Checked {
		half, err := s.run(ctx, "test -e "+kubeletConf+" -o -e /etc/kubernetes/manifests/etcd.yaml && echo half-joined || true", h.d.sudo(remote.RunOpts{}))
		if err != nil {
			return nil, nil, err
		}
		reset = strings.TrimSpace(half) == "half-joined"
	}
	if reset {
		note("resetting a half-joined control-plane node")
		if _, err := s.run(ctx, "kubeadm reset -f", h.d.sudo(remote.RunOpts{})); err != nil {
			return nil, nil, fmt.Errorf("kubeadm reset on %s: %w", n.Name, err)
		}
	}
	if err := h.prepared(ctx, s, script); err != nil {
		return nil, nil, err
	}
	key, err := h.certificateKey(ctx, ms)
	if err != nil {
		return nil, nil, err
	}
	ss.addSecrets(key)
	tok, err := pool.get(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	ss.addSecrets(tok)
	args := []string{"-m", masterIPs(h.topo.Masters), "-i", h.topo.EndpointIP, "-t", tok, "-s", caHash, "-k", key,
		"--api-port", strconv.Itoa(h.topo.EndpointPort), "--control-plane-join", "--node-name", n.Name, "--node-ip", n.IP}
	h.gate.open() // the join is under way: the first master's other work may start
	// The token and the certificates are not needed once the kubelet has
	// bootstrapped (the script says so), or once the join ended.
	done := sync.OnceFunc(func() {
		if last {
			h.dropCerts(ctx, ms, n) // with n's token, in one round trip
		}
		used()
	})
	r, err := h.d.runScript(ctx, s, args, scriptEnv(h.p, h.topo), append(proxySecrets(h.p), tok, key), func(msg string) {
		if strings.HasPrefix(msg, bootstrappedLine) {
			go done() // not in the output's reader; done() below waits for it
		}
		note(msg)
	})
	done()
	if err != nil {
		return nil, nil, err
	}
	note("waiting for the node to be Ready and its etcd member healthy")
	deadline := time.Now().Add(max(h.d.o.NodeWait, etcdHealthWait))
	for {
		view, err = h.clusterView(ctx, ms)
		if err == nil {
			mem, ok := view.etcd.member(n)
			switch {
			case !view.nodes[n.Name].Ready:
				err = fmt.Errorf("node %s is not Ready", n.Name)
			case !ok || mem.Name == "" || !view.etcd.Healthy[mem.ID]:
				err = fmt.Errorf("the etcd member of %s is not started and healthy yet", n.Name)
			default:
				note(fmt.Sprintf("etcd member %s started and healthy (%d members)", mem.label(), len(view.etcd.Members)))
				return joinOutput{Status: r["status"], Role: r["role"], Reset: reset, kubeadmTime: kubeadmTimeOf(r)}, view, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("after joining %s: %w", n.Name, err)
		}
		if err := sleep(ctx, cpPoll); err != nil {
			return nil, nil, err
		}
	}
}

// joinMasters joins the masters one at a time, each only after the one
// before is Ready and etcd healthy (the check after a join is the next
// one's check before); the first failure stops the others. The
// control-plane certificates go after the last join. It returns the last
// check's etcd (nil when no join ran in this call).
func (h *hook) joinMasters(ctx context.Context, ss *sessions, ms *session, masters []*Node, script []byte, caHash string, force bool, view *cpView) (*etcdView, error) {
	defer h.dropCerts(ctx, ms, nil)
	pool := h.tokens
	if pool == nil {
		pool = h.newTokenPool(ms, masters)
		defer pool.finish(ctx)
	}
	for i, n := range masters {
		ran := false
		if err := h.perNode(ctx, []*Node{n}, 1, "kubeadm join --control-plane", func(ctx context.Context, n *Node) (any, error) {
			out, v, err := h.joinControlPlane(ctx, ss, ms, n, script, caHash, force, view, pool, i == len(masters)-1)
			view, ran = v, true
			return out, err
		}); err != nil {
			return nil, err
		}
		if !ran {
			view = nil // done in an earlier run: the next join looks itself
		}
	}
	if view == nil {
		return nil, nil
	}
	return view.etcd, nil
}

// healMastersStart is heal_start for masters of an HA control plane: the
// quorum check first (nothing is changed when it fails), the VIP onto a
// surviving master, the victims' etcd members removed (leadership moved off
// first), their Nodes deleted and their API servers taken out of HAProxy on
// the surviving masters.
func (h *hook) healMastersStart(ctx context.Context, victims, workers []*Node) error {
	t := h.topo
	force := h.p.Force
	survivors := t.Without(vnfcIDs(victims)...).Masters
	ss, failed, err := h.d.connectSome(ctx, h, plansFor(h.p, t.Masters, false), deadMasterWait)
	if err != nil {
		return err
	}
	defer ss.Close()
	live := reachable(ss, survivors)
	// Victims whose server does not answer at all are dead VMs: their
	// Nodes go without a drain (removeNodes).
	down := map[string]bool{}
	for _, v := range victims {
		if err := failed[v.VnfcID]; err != nil && serverDown(err) {
			down[v.Name] = true
		}
	}
	if len(live) == 0 {
		return fmt.Errorf("refusing to heal %s: no other master is reachable (%s); with every master gone the cluster cannot be healed master by master: heal the entire VNF", strings.Join(sortedNames(victims), ", "), describeFailures(failed))
	}
	var ctl *session
	var v *etcdView
	var lastErr error
	for _, m := range live {
		if v, lastErr = h.d.etcdState(ctx, ss.get(m), t.Masters); lastErr == nil {
			ctl = ss.get(m)
			break
		}
	}
	if ctl == nil {
		return fmt.Errorf("refusing to heal %s: etcd cannot be read on any surviving master: %v", strings.Join(sortedNames(victims), ", "), lastErr)
	}
	ok, remaining, healthy := quorumCheck(v, victims)
	h.note(ctx, "etcd: %d members, %d healthy (leader %x); after removing %s: %d members, %d healthy, quorum %d",
		len(v.Members), v.healthyCount(nil), v.Leader, strings.Join(sortedNames(victims), ", "), remaining, healthy, quorum(remaining))
	if !ok {
		msg := fmt.Sprintf("healing %s would lose etcd quorum: %d healthy member(s) would be left of %d (quorum %d, and %d while the replacement joins); unhealthy members: %s. "+
			"Bring the failed masters back first (or restore etcd from a snapshot)",
			strings.Join(sortedNames(victims), ", "), healthy, remaining, quorum(remaining), quorum(remaining+1), orNoneStr(v.unhealthy()))
		if !force {
			return fmt.Errorf("refusing the heal: %s; additionalParams.force: true heals anyway (the Kubernetes API stops until etcd regains quorum)", msg)
		}
		h.note(ctx, "force: %s", msg)
	}
	if h.p.LB.Dedicated() {
		// The VIP is on a load balancer: only HAProxy's backends change.
		if err := h.reloadDedicatedLBs(ctx, survivors, victims); err != nil {
			return err
		}
		return h.removeEtcdAndNodes(ctx, ctl, victims, workers, down)
	}
	// The VIP must be on a surviving master before anything goes
	// (cluster-api#4365: remediating the VIP holder dropped the API).
	for _, holder := range h.vipHolders(ctx, ss, t.Masters) {
		if indexOf(victims, holder) < len(victims) {
			h.note(ctx, "%s holds the VIP: stopping its keepalived so that a surviving master takes it over", holder.Name)
			if _, err := ss.get(holder).run(ctx, "systemctl stop keepalived", h.d.sudo(remote.RunOpts{})); err != nil {
				return fmt.Errorf("stopping keepalived on %s: %w", holder.Name, err)
			}
		}
	}
	holder, err := h.waitVIP(ctx, ss, reachable(ss, t.Masters), survivors, vipWait)
	if err != nil {
		return err
	}
	h.note(ctx, "the VIP %s is held by %s", t.VIP, holder.Name)
	// Out of HAProxy before their etcd members go: an API server whose
	// member was removed answers every request with an error.
	h.note(ctx, "taking %s out of HAProxy on %s", strings.Join(sortedNames(victims), ", "), strings.Join(sortedNames(live), ", "))
	if _, err := h.configureLB(ctx, ss, live, survivors, t.Masters, false); err != nil {
		return err
	}
	return h.removeEtcdAndNodes(ctx, ctl, victims, workers, down)
}

// removeEtcdAndNodes drains and deletes the victims' and workers' Nodes
// (those in down without a drain), then removes the victims' etcd members
// (one at a time). Drains first: a live victim's kubelet confirms its pods'
// deletions through the API, which stops answering on that master once its
// etcd member is gone (the drain then waited out drain_timeout); and a
// drain that fails leaves etcd as it was.
func (h *hook) removeEtcdAndNodes(ctx context.Context, ctl *session, victims, workers []*Node, down map[string]bool) error {
	t := h.topo
	if err := h.removeNodes(ctx, ctl, append(slices.Clone(victims), workers...), down); err != nil {
		return err
	}
	for _, victim := range victims {
		v, err := h.d.etcdState(ctx, ctl, t.Masters)
		if err != nil {
			return err
		}
		if err := h.d.removeEtcdMember(ctx, ctl, v, victim, t.Masters, func(msg string) { h.note(ctx, "%s", msg) }); err != nil {
			return err
		}
	}
	return nil
}

func describeFailures(failed map[string]error) string {
	var out []string
	for _, id := range slices.Sorted(mapKeys(failed)) {
		out = append(out, fmt.Sprintf("%s: %v", id, failed[id]))
	}
	return orNoneStr(out)
}

func orNoneStr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// healMastersEnd is heal_end for masters of an HA control plane: each
// replacement joins as a control-plane node (one at a time, fresh
// certificate key), gets HAProxy and keepalived, and is put back into
// HAProxy on every master; then the etcd member list must be whole.
func (h *hook) healMastersEnd(ctx context.Context, victims, workers []*Node, before map[string]serverAddr) error {
	t := h.topo
	force := h.p.Force
	var plans []kube.Plan
	for _, p := range plansFor(h.p, append(slices.Clone(victims), workers...), true) {
		if b, ok := before[p.Key]; ok && b.ServerID == p.ServerID && b.Addr == p.Addr {
			p.Repin = true
		}
		plans = append(plans, p)
	}
	ss, ms, err := h.connectControl(ctx, plans)
	if err != nil {
		return err
	}
	defer ss.Close()
	all := t.All()
	targets := append(slices.Clone(victims), workers...)
	if err := h.d.writeHostsAll(ctx, ss, targets, all); err != nil {
		return err
	}
	script, err := h.script(ctx)
	if err != nil {
		return err
	}
	_, hash, err := h.d.caCert(ctx, ms)
	if err != nil {
		return err
	}
	for _, n := range victims {
		if _, err := h.joinMasters(ctx, ss, ms, []*Node{n}, script, hash, force, nil); err != nil {
			return err
		}
		if h.p.LB.Dedicated() {
			continue
		}
		if _, err := h.configureLB(ctx, ss, []*Node{n}, t.Masters, t.Masters, true); err != nil {
			return err
		}
	}
	if h.p.LB.Dedicated() {
		if err := h.reloadDedicatedLBs(ctx, t.Masters, nil); err != nil {
			return err
		}
	} else {
		live := reachable(ss, t.Masters)
		h.note(ctx, "putting %s back into HAProxy on %s", strings.Join(sortedNames(victims), ", "), strings.Join(sortedNames(live), ", "))
		if _, err := h.configureLB(ctx, ss, live, t.Masters, t.Masters, false); err != nil {
			return err
		}
	}
	v, err := h.d.waitEtcdWhole(ctx, ms, t.Masters, etcdHealthWait)
	if err != nil {
		if !force {
			return err
		}
		h.note(ctx, "force: %v", err)
	} else {
		h.note(ctx, "etcd is whole again: %d members, all healthy", len(v.Members))
	}
	if len(workers) > 0 {
		return h.joinWorkers(ctx, ss, ms, workers, script, hash, nil)
	}
	return nil
}

// serverDown tells whether an SSH connect failed because nothing answered at
// the address (refused, timed out, unreachable), not because of what answered
// (authentication, host key).
func serverDown(err error) bool {
	var ce *remote.ConnectError
	var oe *net.OpError
	return errors.As(err, &ce) && errors.As(err, &oe)
}
