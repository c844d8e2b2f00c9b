package kubeadm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Waiting shows: a step that waits for a node's SSH or for the cluster's
// API server (a node still booting, or the cluster's nodes rebooted after
// their cloud restarted) says so in the op occurrence's progress — which
// node, its address, the attempt and the last error — instead of looking
// idle until it gives up.

// apiWait bounds the wait for an API server that does not answer.
const apiWait = 3 * time.Minute

// apiUnreachable reports an API server that did not answer (rather than
// answering with an error).
func apiUnreachable(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	for _, m := range []string{"Unable to connect to the server", "connection refused", "was refused - did you specify the right host or port", "the server is currently unable to handle the request",
		"TLS handshake timeout", "ServiceUnavailable", "etcdserver: request timed out", "etcdserver: leader changed",
		// A connection through the VIP cut by HAProxy or a keepalived failover.
		"connection reset by peer", "http2: client connection lost"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// clusterNodes lists the cluster's nodes through a master, waiting first
// for an API server that does not answer yet.
func (h *hook) clusterNodes(ctx context.Context, ms *session) (map[string]nodeState, error) {
	nodes, err := h.d.clusterNodes(ctx, ms)
	if !apiUnreachable(err) {
		return nodes, err
	}
	if err := h.waitAPI(ctx, ms, err); err != nil {
		return nil, err
	}
	return h.d.clusterNodes(ctx, ms)
}

// waitAPI polls the API server's /healthz through a master until it answers,
// at most apiWait, with the wait in the progress.
func (h *hook) waitAPI(ctx context.Context, ms *session, last error) error {
	start := time.Now()
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		h.note(ctx, "waiting for the Kubernetes API server through %s at %s: attempt %d, last error: %s",
			ms.node.Name, ms.node.SSHAddr, attempt, firstLine(last))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		_, err := ms.run(ctx, kubectl("get", "--raw", "/healthz"), h.d.sudo(remote.RunOpts{Timeout: 20 * time.Second}))
		if err == nil {
			h.note(ctx, "the Kubernetes API server answers again through %s (after %s)", ms.node.Name, time.Since(start).Round(time.Second))
			return nil
		}
		last = err
		if time.Since(start) > apiWait {
			return fmt.Errorf("the Kubernetes API server did not answer through %s at %s for %s (attempt %d): %w",
				ms.node.Name, ms.node.SSHAddr, apiWait, attempt, err)
		}
	}
}

// waitAnyAPI polls /healthz through each of the masters in turn until one
// answers, at most apiWait, with the wait in the progress; it returns that
// master's session.
func (h *hook) waitAnyAPI(ctx context.Context, ss *sessions, masters []*Node, last error) (*session, error) {
	start := time.Now()
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		h.note(ctx, "waiting for a Kubernetes API server through the masters %s: attempt %d, last error: %s",
			strings.Join(sortedNames(masters), ", "), attempt, firstLine(last))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		for _, m := range masters {
			s := ss.get(m)
			if _, last = s.run(ctx, kubectl("get", "--raw", "/healthz"), h.d.sudo(remote.RunOpts{Timeout: 20 * time.Second})); last == nil {
				h.note(ctx, "the Kubernetes API server answers through %s (after %s)", m.Name, time.Since(start).Round(time.Second))
				return s, nil
			}
		}
		if time.Since(start) > apiWait {
			return nil, fmt.Errorf("no Kubernetes API server answered through %s for %s (attempt %d): %w",
				strings.Join(sortedNames(masters), ", "), apiWait, attempt, last)
		}
	}
}

// firstLine keeps a progress message to one line of the error.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		// The stderr tail's last line says most ("Unable to connect ...").
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

// runKube runs an idempotent kubectl command (get, cordon, uncordon, delete
// --ignore-not-found) through a master and runs it again while the API
// server does not answer — a request through the VIP can meet a reset from
// HAProxy or a keepalived failover — for at most apiWait. Other errors,
// including the API server's own refusals, return at once.
func (d *Driver) runKube(ctx context.Context, m *session, cmd string, o remote.RunOpts) (string, error) {
	start := time.Now()
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		out, err := m.run(ctx, cmd, o)
		if !apiUnreachable(err) || time.Since(start) > apiWait || ctx.Err() != nil {
			return out, err
		}
		m.log.Warn("the Kubernetes API server did not answer; trying again", "node", m.node.Name, "attempt", attempt, "error", firstLine(err))
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
