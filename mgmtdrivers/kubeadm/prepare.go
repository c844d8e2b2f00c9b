package kubeadm

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// The cluster build's critical path is kubeadm init on the first master,
// then the control-plane joins. What does not need the first master runs
// beside it, started at once on every node: /etc/hosts, the install script,
// its --prepare run (proxy settings, packages: minutes on a fresh VM) and
// the pre-flight look at what the node holds (a kubelet.conf or control-plane
// manifests left by a join that died half-way). A join then waits only for
// its own node's preparation. Nothing here is a checkpoint: every part is
// idempotent and runs again on a retry.

// nodePrep is what a node's preparation found.
type nodePrep struct {
	// Checked: the install script reported the node's state (--prepare);
	// an older script in a package cannot, and the join looks itself.
	Checked bool
	// KubeletConf: the node holds a kubelet.conf (it joined, or began to).
	KubeletConf bool
	// ControlPlane: the node holds control-plane static pod manifests.
	ControlPlane bool
}

// preparation is the preparation of a set of nodes, running in the
// background; wait gives one node's result.
type preparation struct {
	done map[string]chan struct{} // by VNFC id, closed when the node's preparation ended
	mu   sync.Mutex
	res  map[string]nodePrep
	errs map[string]error
	all  sync.WaitGroup
}

// prepareNodes starts the preparation of nodes (at most 16 at a time);
// listed are the nodes /etc/hosts names. The nodes in lean get /etc/hosts
// and the script only: the first master, whose kubeadm init waits for its
// preparation, runs the script's preparation as part of the init anyway;
// the others start once after opens (nil: at once), so that the lean ones
// have the machines to themselves until then.
func (h *hook) prepareNodes(ctx context.Context, ss *sessions, nodes, listed []*Node, script []byte, after *gate, lean ...*Node) *preparation {
	p := &preparation{done: map[string]chan struct{}{}, res: map[string]nodePrep{}, errs: map[string]error{}}
	for _, n := range nodes {
		p.done[n.VnfcID] = make(chan struct{})
	}
	p.all.Go(func() {
		remote.ForEach(ctx, nodes, 16, func(ctx context.Context, n *Node) error {
			isLean := slices.Contains(lean, n)
			if after != nil && !isLean {
				select {
				case <-after.c:
				case <-ctx.Done():
				}
			}
			r, err := h.prepareNode(ctx, ss, n, listed, script, isLean)
			p.mu.Lock()
			p.res[n.VnfcID], p.errs[n.VnfcID] = r, err
			p.mu.Unlock()
			close(p.done[n.VnfcID])
			return err
		})
		// Nodes ForEach never started (cancelled) end too.
		for _, n := range nodes {
			select {
			case <-p.done[n.VnfcID]:
			default:
				p.mu.Lock()
				p.errs[n.VnfcID] = fmt.Errorf("preparing %s: %w", n.Name, context.Cause(ctx))
				p.mu.Unlock()
				close(p.done[n.VnfcID])
			}
		}
	})
	return p
}

// wait waits for a node's preparation. A node it does not cover (nil
// preparation included) needs its own checks: ok is false.
func (p *preparation) wait(ctx context.Context, n *Node) (r nodePrep, ok bool, err error) {
	if p == nil {
		return nodePrep{}, false, nil
	}
	ch, found := p.done[n.VnfcID]
	if !found {
		return nodePrep{}, false, nil
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return nodePrep{}, false, context.Cause(ctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.res[n.VnfcID], true, p.errs[n.VnfcID]
}

// finish waits until every node's preparation ended.
func (p *preparation) finish() {
	if p != nil {
		p.all.Wait()
	}
}

// prepareNode writes /etc/hosts, uploads the install script and, unless
// lean, runs its --prepare (an older script in a package without it:
// nothing more).
func (h *hook) prepareNode(ctx context.Context, ss *sessions, n *Node, listed []*Node, script []byte, lean bool) (nodePrep, error) {
	s := ss.get(n)
	if s == nil {
		return nodePrep{}, fmt.Errorf("no connection to %s", n.Name)
	}
	if err := h.d.writeHostsAndScript(ctx, s, listed, script); err != nil {
		return nodePrep{}, err
	}
	if lean || !bytes.Contains(script, []byte("--prepare")) {
		return nodePrep{}, nil
	}
	args := []string{"--prepare", "-i", h.topo.EndpointIP, "--api-port", strconv.Itoa(h.topo.EndpointPort), "--node-name", n.Name, "--node-ip", n.IP}
	if n.Role == Master {
		args = append(args, "-m", masterIPs(h.topo.Masters))
	} else {
		args = append(args, "-w", n.IP)
	}
	r, err := h.d.runScript(ctx, s, args, scriptEnv(h.p, h.topo), proxySecrets(h.p), nil)
	if err != nil {
		return nodePrep{}, err
	}
	return nodePrep{Checked: true, KubeletConf: r["kubelet_conf"] == "present", ControlPlane: r["control_plane"] == "present"}, nil
}

// kubeadmTime is how long kubeadm itself ran in a node's install (the
// install script's kubeadm_started and kubeadm_seconds), kept in the node's
// checkpoint output: the rest of the node's time is the driver's and the
// script's. Absent when kubeadm did not run (already installed).
type kubeadmTime struct {
	Started float64 `json:"kubeadmStarted,omitempty"` // Unix time
	Seconds float64 `json:"kubeadmSeconds,omitempty"`
}

func kubeadmTimeOf(r map[string]string) kubeadmTime {
	var k kubeadmTime
	k.Started, _ = strconv.ParseFloat(r["kubeadm_started"], 64)
	k.Seconds, _ = strconv.ParseFloat(r["kubeadm_seconds"], 64)
	return k
}
