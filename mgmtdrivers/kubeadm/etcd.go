package kubeadm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// etcdctlScript runs etcdctl with the stacked etcd's client certificate: the
// host's etcdctl (Debian/Ubuntu etcd-client) when installed, else the one in
// the node's etcd static pod (kubectl exec). $1 is the node name, the rest
// etcdctl's arguments.
const etcdctlScript = `node=$1; shift
set -- --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \
	--key=/etc/kubernetes/pki/etcd/healthcheck-client.key --dial-timeout=2s --command-timeout=3s "$@"
if command -v etcdctl >/dev/null 2>&1; then
	ETCDCTL_API=3 exec etcdctl "$@"
fi
exec kubectl --kubeconfig ` + adminConf + ` -n kube-system exec "etcd-$node" -- env ETCDCTL_API=3 etcdctl "$@"`

// etcdMember is an entry of `etcdctl member list -w json`.
type etcdMember struct {
	ID         uint64   `json:"ID"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

func (m etcdMember) label() string {
	name := m.Name
	if name == "" {
		name = "(not started)"
	}
	return fmt.Sprintf("%s %x", name, m.ID)
}

// etcdView is the stacked etcd as one master sees it.
type etcdView struct {
	Members []etcdMember
	Healthy map[uint64]bool
	Errors  map[uint64]string
	Leader  uint64
}

func (v *etcdView) healthyCount(except func(etcdMember) bool) int {
	n := 0
	for _, m := range v.Members {
		if v.Healthy[m.ID] && (except == nil || !except(m)) {
			n++
		}
	}
	return n
}

func (v *etcdView) unhealthy() []string {
	var out []string
	for _, m := range v.Members {
		if !v.Healthy[m.ID] {
			e := v.Errors[m.ID]
			if e == "" {
				e = "no answer"
			}
			out = append(out, m.label()+" ("+e+")")
		}
	}
	return out
}

// member finds the member of a node by name or peer URL.
func (v *etcdView) member(n *Node) (etcdMember, bool) {
	peer := etcdPeerURL(n.IP)
	for _, m := range v.Members {
		if m.Name == n.Name || slices.Contains(m.PeerURLs, peer) {
			return m, true
		}
	}
	return etcdMember{}, false
}

func etcdPeerURL(ip string) string   { return "https://" + net.JoinHostPort(ip, "2380") }
func etcdClientURL(ip string) string { return "https://" + net.JoinHostPort(ip, "2379") }

// quorum is the number of healthy members n members need.
func quorum(n int) int { return n/2 + 1 }

func (d *Driver) etcdctl(ctx context.Context, s *session, args ...string) (remote.Result, error) {
	cmd := remote.Command("sh", append([]string{"-c", etcdctlScript, "etcdctl", s.node.Name}, args...)...)
	return s.x.Run(ctx, cmd, d.sudo(remote.RunOpts{Timeout: 45 * time.Second}))
}

// etcdStateScript reads etcd in one session: the member list through the
// endpoints $2, then, after a marker line, each member's health and, after
// another, unless $4 = 0, the endpoints' status (for the leader). With $3 =
// 1 the cluster's nodes come first (kubectl get nodes, read beside etcd: one
// process less one after another in a control-plane join's checks), ended
// by a marker: a join's checks are one round trip (they need no leader).
// The etcdctl is the host's (Debian/Ubuntu etcd-client) when installed,
// else the one in the node's etcd static pod (kubectl exec); $1 is the node
// name.
const etcdStateScript = `node=$1 eps=$2 withnodes=${3:-0} withstatus=${4:-1}
tls="--cacert=` + etcdPKIDir + `/ca.crt --cert=` + etcdPKIDir + `/healthcheck-client.crt --key=` + etcdPKIDir + `/healthcheck-client.key --dial-timeout=2s --command-timeout=3s"
e() {
	if command -v etcdctl >/dev/null 2>&1; then
		ETCDCTL_API=3 etcdctl $tls "$@"
	else
		kubectl --kubeconfig ` + adminConf + ` -n kube-system exec "etcd-$node" -- env ETCDCTL_API=3 etcdctl $tls "$@"
	fi
}
etcd() {
	ml=$(e --endpoints="$eps" member list -w json) || return $?
	printf '%s\n' "$ml"
	urls=$(printf '%s\n' "$ml" | grep -o '"clientURLs":\[[^]]*\]' | grep -o 'https*://[^"]*' | sort -u | paste -sd, -)
	[ -n "$urls" ] || return 0
	echo '` + etcdHealthMark + `'
	e --endpoints="$urls" endpoint health -w json || true
	[ "$withstatus" = 1 ] || return 0
	echo '` + etcdStatusMark + `'
	e --endpoints="$urls" endpoint status -w json 2>/dev/null || true
}
if [ "$withnodes" != 1 ]; then
	etcd
	exit $?
fi
nodes=$(mktemp)
trap 'rm -f "$nodes"' EXIT
kubectl --kubeconfig ` + adminConf + ` get nodes -o json >"$nodes" &
kubectl=$!
out=$(etcd)
rc=$?
wait "$kubectl" || exit $?
cat "$nodes"
echo '` + nodesEndMark + `'
printf '%s\n' "$out"
exit $rc`

// Marker lines of etcdStateScript's output.
const (
	nodesEndMark   = "--- mini-vnfm nodes end ---"
	etcdHealthMark = "--- mini-vnfm etcd health ---"
	etcdStatusMark = "--- mini-vnfm etcd status ---"
)

// etcdState reads the member list, each member's health and the leader,
// through the master s (any endpoint of masters that answers), in one
// session.
func (d *Driver) etcdState(ctx context.Context, s *session, masters []*Node) (*etcdView, error) {
	_, v, err := d.etcdProbe(ctx, s, masters, false)
	return v, err
}

// clusterState is the cluster's nodes and etcd as the master s sees them,
// read in one session.
func (d *Driver) clusterState(ctx context.Context, s *session, masters []*Node) (map[string]nodeState, *etcdView, error) {
	return d.etcdProbe(ctx, s, masters, true)
}

func (d *Driver) etcdProbe(ctx context.Context, s *session, masters []*Node, withNodes bool) (map[string]nodeState, *etcdView, error) {
	var eps []string
	for _, m := range masters {
		eps = append(eps, etcdClientURL(m.IP))
	}
	if s.node != nil {
		eps = append([]string{"https://127.0.0.1:2379"}, eps...)
	}
	// With the nodes (a join's checks), no leader.
	nodesFlag, statusFlag := "0", "1"
	if withNodes {
		nodesFlag, statusFlag = "1", "0"
	}
	cmd := remote.Command("sh", "-c", etcdStateScript, "etcd-state", s.node.Name, strings.Join(eps, ","), nodesFlag, statusFlag)
	res, err := s.x.Run(ctx, cmd, d.sudo(remote.RunOpts{Timeout: 45 * time.Second}))
	out := res.Stdout
	var nodes map[string]nodeState
	if withNodes {
		nodesOut, rest, found := strings.Cut(out, nodesEndMark+"\n")
		if !found {
			if err == nil {
				err = errors.New("no node list in the output")
			}
			return nil, nil, fmt.Errorf("listing the cluster's nodes on %s: %w", s.node.Name, err)
		}
		if nodes, err = parseNodes(nodesOut); err != nil {
			return nil, nil, fmt.Errorf("listing the cluster's nodes on %s: %w", s.node.Name, err)
		}
		out, err = rest, nil
		if res.ExitCode != 0 {
			err = fmt.Errorf("exit status %d: %s", res.ExitCode, lastLine(res.Stderr))
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("etcd member list on %s: %w", s.node.Name, err)
	}
	listOut, rest, _ := strings.Cut(out, etcdHealthMark+"\n")
	healthOut, statusOut, _ := strings.Cut(rest, etcdStatusMark+"\n")
	var ml struct {
		Members []etcdMember `json:"members"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(listOut)), &ml); err != nil {
		return nil, nil, fmt.Errorf("etcd member list on %s: unexpected output %.200q: %v", s.node.Name, listOut, err)
	}
	v := &etcdView{Members: ml.Members, Healthy: map[uint64]bool{}, Errors: map[uint64]string{}}
	byURL := map[string]uint64{}
	for _, m := range v.Members {
		for _, u := range m.ClientURLs {
			byURL[u] = m.ID
		}
	}
	if len(byURL) == 0 {
		return nodes, v, nil
	}
	// Health: etcdctl exits 1 when any endpoint is unhealthy; the JSON is
	// printed all the same.
	var hl []struct {
		Endpoint string `json:"endpoint"`
		Health   bool   `json:"health"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(firstJSON(healthOut)), &hl); err != nil {
		return nil, nil, fmt.Errorf("etcd endpoint health on %s: unexpected output %.200q (%s)", s.node.Name, healthOut, lastLine(res.Stderr))
	}
	for _, e := range hl {
		id, ok := byURL[e.Endpoint]
		if !ok {
			continue
		}
		if e.Health {
			v.Healthy[id] = true
		} else {
			v.Errors[id] = e.Error
		}
	}
	var sl []struct {
		Status struct {
			Leader uint64 `json:"leader"`
		} `json:"Status"`
	}
	if json.Unmarshal([]byte(firstJSON(statusOut)), &sl) == nil {
		for _, st := range sl {
			if st.Status.Leader != 0 {
				v.Leader = st.Status.Leader
				break
			}
		}
	}
	return nodes, v, nil
}

func firstJSON(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "[") || strings.HasPrefix(l, "{") {
			return l
		}
	}
	return strings.TrimSpace(s)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// waitEtcdWhole waits until etcd has exactly the masters as members, each
// started and healthy.
func (d *Driver) waitEtcdWhole(ctx context.Context, s *session, masters []*Node, within time.Duration) (*etcdView, error) {
	deadline := time.Now().Add(within)
	for {
		v, err := d.etcdState(ctx, s, masters)
		var problem string
		switch {
		case err != nil:
			problem = err.Error()
		default:
			problem = etcdWholeProblem(v, masters)
		}
		if problem == "" {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("etcd is not whole after %v: %s", within, problem)
		}
		if err := sleep(ctx, cpPoll); err != nil {
			return nil, err
		}
	}
}

// etcdWholeProblem says what keeps the member list from matching the
// masters, all healthy ("" when it does).
func etcdWholeProblem(v *etcdView, masters []*Node) string {
	var problems []string
	seen := map[uint64]bool{}
	for _, m := range masters {
		mem, ok := v.member(m)
		switch {
		case !ok:
			problems = append(problems, m.Name+" is not a member")
		case mem.Name == "":
			problems = append(problems, m.Name+" has not started its member")
		case !v.Healthy[mem.ID]:
			problems = append(problems, m.Name+" is unhealthy ("+v.Errors[mem.ID]+")")
		}
		if ok {
			seen[mem.ID] = true
		}
	}
	for _, mem := range v.Members {
		if !seen[mem.ID] {
			problems = append(problems, "member "+mem.label()+" is no master of this VNF")
		}
	}
	return strings.Join(problems, "; ")
}

// QuorumCheck decides whether removing the members of victims keeps etcd
// serving: the healthy members left must be a quorum of the members left,
// and still of one more (the replacement, added before it starts).
func quorumCheck(v *etcdView, victims []*Node) (ok bool, remaining, healthyLeft int) {
	isVictim := func(m etcdMember) bool {
		for _, n := range victims {
			if mem, ok := v.member(n); ok && mem.ID == m.ID {
				return true
			}
		}
		return false
	}
	removed := 0
	for _, m := range v.Members {
		if isVictim(m) {
			removed++
		}
	}
	remaining = len(v.Members) - removed
	healthyLeft = v.healthyCount(isVictim)
	return remaining > 0 && healthyLeft >= quorum(remaining) && healthyLeft >= quorum(remaining+1), remaining, healthyLeft
}

// removeEtcdMember moves leadership off the member if it leads and is
// healthy, then removes it (by its id, found by name or peer URL) through
// the healthy master s.
func (d *Driver) removeEtcdMember(ctx context.Context, s *session, v *etcdView, victim *Node, masters []*Node, note func(string)) error {
	mem, ok := v.member(victim)
	if !ok {
		note("no etcd member for " + victim.Name + " (already removed)")
		return nil
	}
	var eps []string
	for _, m := range v.Members {
		if m.ID != mem.ID && v.Healthy[m.ID] {
			eps = append(eps, m.ClientURLs...)
		}
	}
	if len(eps) == 0 {
		return fmt.Errorf("no healthy etcd member left to remove %s through", mem.label())
	}
	if v.Leader == mem.ID && v.Healthy[mem.ID] && len(mem.ClientURLs) > 0 {
		var to etcdMember
		for _, m := range v.Members {
			if m.ID != mem.ID && v.Healthy[m.ID] && m.Name != "" {
				to = m
				break
			}
		}
		if to.ID != 0 {
			note(fmt.Sprintf("moving etcd leadership from %s to %s", mem.label(), to.label()))
			if _, err := d.etcdctl(ctx, s, "--endpoints="+strings.Join(mem.ClientURLs, ","), "move-leader", fmt.Sprintf("%x", to.ID)); err != nil {
				return fmt.Errorf("moving etcd leadership off %s: %w", victim.Name, err)
			}
		}
	}
	note(fmt.Sprintf("removing etcd member %s (peer %s)", mem.label(), strings.Join(mem.PeerURLs, ",")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := d.etcdctl(ctx, s, "--endpoints="+strings.Join(eps, ","), "member", "remove", fmt.Sprintf("%x", mem.ID))
		if err == nil || strings.Contains(res.Stderr, "member not found") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing etcd member %s of %s: %w", mem.label(), victim.Name, err)
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}
