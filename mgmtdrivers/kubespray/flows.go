package kubespray

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// install is instantiate_end (and the second half of an entire heal).
//
// The external load balancer comes before cluster.yml: the inventory names
// it as loadbalancer_apiserver, so the cluster's control-plane endpoint and
// the API server certificate are the load balancer's address (what the VIM
// is registered with, CA included), and kubeadm joins go through it. Its
// configuration only needs the nodes' addresses.
func (s *session) install(ctx context.Context) error {
	if _, err := s.ansible(ctx); err != nil {
		return err
	}
	if err := s.prepareNodes(ctx, s.c.All()); err != nil {
		return err
	}
	if err := s.writeInventory(ctx, s.c.Masters, s.c.Workers); err != nil {
		return err
	}
	if err := s.step(ctx, "external-lb", "install the external load balancer", func() error {
		return s.configureLB(ctx, s.c.Workers)
	}); err != nil {
		return err
	}
	if err := s.step(ctx, "cluster.yml", "ansible-playbook cluster.yml", func() error {
		return s.playbook(ctx, "cluster.yml")
	}); err != nil {
		return err
	}
	return s.step(ctx, "vim", "register the Kubernetes VIM through the load balancer", func() error {
		return s.registerVim(ctx)
	})
}

// teardown is terminate_end (and the first half of an entire heal): the VIM
// and the cluster's inventory directory (with its Ansible key) go. The
// nodes are not reset: their VMs are deleted.
func (s *session) teardown(ctx context.Context) error {
	if err := s.step(ctx, "vim-delete", "delete the Kubernetes VIM", func() error { return s.removeVim(ctx) }); err != nil {
		return err
	}
	return s.step(ctx, "inventory-delete", "remove the inventory directory "+s.inv, func() error {
		c, err := s.ansible(ctx)
		if err != nil {
			return err
		}
		// Only this cluster's own directory: <transferring_inventory_path>/<vnfInstanceId>.
		if _, err := c.Run(ctx, remote.Command("rm", "-rf", "--", s.inv), remote.RunOpts{Timeout: 2 * time.Minute}); err != nil {
			return fmt.Errorf("kubespray: removing %s on the Ansible server: %w", s.inv, err)
		}
		return nil
	})
}

// removeWorkers takes workers out of the cluster before their VMs go (scale
// in, or the first half of a worker heal): their load balancer routes
// first, then a bounded drain, then remove-node.yml while they are still in
// the inventory, then the inventory without them.
func (s *session) removeWorkers(ctx context.Context, victims []*Node) error {
	if len(victims) == 0 {
		return nil
	}
	ids := make([]string, len(victims))
	for i, v := range victims {
		ids[i] = v.VnfcID
	}
	remaining := without(s.c.Workers, ids)
	vnames := strings.Join(names(victims), ",")
	if err := s.step(ctx, "external-lb", "remove the routes of "+vnames+" from the load balancer", func() error {
		return s.configureLB(ctx, remaining)
	}); err != nil {
		return err
	}
	// A victim that does not answer (a dead VM being healed) is neither
	// drained (its pods could not confirm their end) nor reset; deleting
	// its Node object lets its pods be rescheduled.
	gone := s.unreachable(ctx, victims)
	if len(gone) > 0 {
		s.log.Warn("nodes to remove do not answer; removing them without drain and reset", "nodes", gone)
		s.note(ctx, "not answering, removed without drain and reset: "+strings.Join(gone, ","))
	}
	for _, v := range victims {
		if slices.Contains(gone, v.Name) {
			continue
		}
		if err := s.step(ctx, "drain/"+v.Name, "drain "+v.Name, func() error {
			k, err := s.kubectl(ctx)
			if err != nil {
				return err
			}
			return k.Drain(ctx, v.Name, s.d.o.DrainTimeout)
		}); err != nil {
			return err
		}
	}
	if err := s.step(ctx, "remove-node.yml", "ansible-playbook remove-node.yml -e node="+vnames, func() error {
		if err := s.writeInventory(ctx, s.c.Masters, s.c.Workers); err != nil {
			return err
		}
		// The driver drained the nodes itself, bounded and with its own
		// error reporting.
		args := []string{"-e", "node=" + vnames, "-e", "skip_confirmation=yes", "-e", "drain_nodes=false"}
		if len(gone) > 0 {
			args = append(args, "-e", "reset_nodes=false", "-e", "allow_ungraceful_removal=true")
		}
		return s.playbook(ctx, "remove-node.yml", args...)
	}); err != nil {
		return err
	}
	if err := s.writeInventory(ctx, s.c.Masters, remaining); err != nil {
		return err
	}
	k, err := s.kubectl(ctx)
	if err != nil {
		return err
	}
	for _, v := range victims {
		ok, err := k.NodeExists(ctx, v.Name)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("kubespray: node %s is still in the cluster after remove-node.yml", v.Name)
		}
	}
	return nil
}

// unreachable returns the nodes that do not answer SSH (a dead VM being
// healed): remove-node.yml must not try to reset them.
func (s *session) unreachable(ctx context.Context, nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		p := nodePlan(n, -1)
		p.ConnectTimeout = 10 * time.Second
		c, err := s.dialer().Open(ctx, p)
		if err == nil {
			_ = c.Close()
			continue
		}
		if kube.IsHostKeyMismatch(err) {
			s.log.Warn("node presents another host key; not touching it", "node", n.Name, "err", err)
		}
		out = append(out, n.Name)
	}
	return out
}

// addWorkers joins new workers (scale out, or the second half of a worker
// heal): their host keys pinned and the cluster key authorised, the
// inventory with them, facts.yml, scale.yml --limit them, their load
// balancer routes.
func (s *session) addWorkers(ctx context.Context, added []*Node) error {
	if len(added) == 0 {
		return nil
	}
	if err := s.prepareNodes(ctx, added); err != nil {
		return err
	}
	if err := s.writeInventory(ctx, s.c.Masters, s.c.Workers); err != nil {
		return err
	}
	anames := strings.Join(names(added), ",")
	if err := s.step(ctx, "facts.yml", "ansible-playbook facts.yml", func() error {
		return s.playbook(ctx, "facts.yml")
	}); err != nil {
		return err
	}
	if err := s.step(ctx, "scale.yml", "ansible-playbook scale.yml --limit "+anames, func() error {
		return s.playbook(ctx, "scale.yml", "--limit", anames)
	}); err != nil {
		return err
	}
	k, err := s.kubectl(ctx)
	if err != nil {
		return err
	}
	nodes, err := k.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range added {
		if !slices.Contains(nodes, n.Name) {
			return fmt.Errorf("kubespray: node %s is not in the cluster after scale.yml (nodes: %s)", n.Name, strings.Join(nodes, ", "))
		}
	}
	return s.step(ctx, "external-lb-add", "add the routes of "+anames+" to the load balancer", func() error {
		return s.configureLB(ctx, s.c.Workers)
	})
}
