package kubeadm

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Node-side files of the load balancer, staged before they replace the live
// ones.
const (
	stagedHAProxy    = remoteDir + "/haproxy.cfg.new"
	stagedKeepalived = remoteDir + "/keepalived.conf.new"
	stagedLBCheck    = remoteDir + "/check_k8s_api_lb.sh.new"
	stagedEtcdCA     = remoteDir + "/" + etcdCheckCAFile + ".new"
	stagedEtcdCert   = remoteDir + "/" + etcdCheckCertFile + ".new"
)

// lbApplyScript installs the staged configurations: checked by the daemon
// first, then put in place and reloaded (HAProxy: a new process takes over
// the listener; keepalived: SIGHUP), or started. Unchanged files on a
// running daemon are left alone. $1/$2: 1 to apply HAProxy / keepalived;
// $3: HAProxy's API frontend port, probed afterwards; $4: 1 to install the
// staged etcd health-check certificates (a change reloads HAProxy); $5:
// HAProxy's etcd frontend port, probed too (0: none). Prints VNFM_HA lines.
const lbApplyScript = `set -eu
dir=` + remoteDir + `
apply_h=$1 apply_k=$2 port=$3 apply_e=${4:-0} eport=${5:-0}
if ! command -v haproxy >/dev/null 2>&1 || ! command -v keepalived >/dev/null 2>&1; then
	echo "installing haproxy and keepalived" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q haproxy keepalived >/dev/null
fi
unit() { # unit name, live file, staged file, mode, 1 to reload even if unchanged
	if [ "${5:-0}" != 1 ] && cmp -s "$3" "$2" && systemctl is-active -q "$1"; then
		rm -f "$3"
		echo "VNFM_HA $1=unchanged"
		return 0
	fi
	install -D -m "$4" -o root -g root "$3" "$2"
	rm -f "$3"
	systemctl enable "$1" >/dev/null 2>&1 || true
	if systemctl is-active -q "$1"; then
		systemctl reload "$1"
		echo "VNFM_HA $1=reloaded"
	else
		systemctl start "$1"
		echo "VNFM_HA $1=started"
	fi
}
certs=0
if [ "$apply_e" = 1 ]; then
	for f in ` + etcdCheckCAFile + ` ` + etcdCheckCertFile + `; do
		if ! cmp -s "$dir/$f.new" "/etc/haproxy/$f"; then
			install -D -m 0600 -o root -g root "$dir/$f.new" "/etc/haproxy/$f"
			certs=1
		fi
		rm -f "$dir/$f.new"
	done
fi
if [ "$apply_h" = 1 ]; then
	if ! out=$(haproxy -c -q -f "$dir/haproxy.cfg.new" 2>&1); then
		echo "haproxy rejects the configuration: $out" >&2
		exit 1
	fi
	unit haproxy ` + haproxyCfgPath + ` "$dir/haproxy.cfg.new" 0644 "$certs"
fi
if [ "$apply_k" = 1 ]; then
	install -D -m 0755 -o root -g root "$dir/check_k8s_api_lb.sh.new" ` + lbCheckPath + `
	rm -f "$dir/check_k8s_api_lb.sh.new"
	if ! out=$(keepalived -t -l -f "$dir/keepalived.conf.new" 2>&1); then
		echo "keepalived rejects the configuration: $out" >&2
		exit 1
	fi
	unit keepalived ` + keepalivedPath + ` "$dir/keepalived.conf.new" 0600
fi
for p in $port $eport; do
	[ "$p" != 0 ] || continue
	ok=0
	for i in $(seq 1 50); do
		if timeout 1 bash -c "</dev/tcp/127.0.0.1/$p" 2>/dev/null; then
			ok=1
			break
		fi
		sleep 0.1
	done
	if [ "$ok" != 1 ]; then
		echo "HAProxy does not accept connections on port $p" >&2
		exit 1
	fi
done
systemctl is-active -q keepalived || { echo "keepalived is not running" >&2; exit 1; }
`

// addrsOf lists a node's IPv4 addresses.
func (d *Driver) addrsOf(ctx context.Context, s *session) ([]ifaceAddr, error) {
	out, err := s.run(ctx, "ip -o -4 addr show", d.sudo(remote.RunOpts{Timeout: 30 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("reading the addresses of %s: %w", s.node.Name, err)
	}
	return parseIPAddr(out), nil
}

// vrrpSecret is the cluster's VRRP password: the one on the masters already
// (a retry, a heal), else a new one. It lives only in the masters'
// keepalived.conf (root's).
func (h *hook) vrrpSecret(ctx context.Context, ss *sessions, masters []*Node) (string, error) {
	for _, m := range masters {
		s := ss.get(m)
		if s == nil {
			continue
		}
		res, err := s.x.Run(ctx, "cat "+keepalivedPath+" 2>/dev/null || true", h.d.sudo(remote.RunOpts{}))
		if err != nil {
			continue
		}
		if sec := vrrpSecretOf(res.Stdout); sec != "" {
			ss.addSecrets(sec)
			return sec, nil
		}
	}
	sec, err := newVRRPSecret()
	if err != nil {
		return "", err
	}
	ss.addSecrets(sec)
	return sec, nil
}

func lbMembers(masters []*Node) []lbMember {
	out := make([]lbMember, 0, len(masters))
	for _, m := range masters {
		out = append(out, lbMember{Name: m.Name, IP: m.IP})
	}
	return out
}

// lbResult says what the load balancer step did on one master.
type lbResult struct {
	HAProxy    string `json:"haproxy,omitempty"`    // started, reloaded, unchanged
	Keepalived string `json:"keepalived,omitempty"` // started, reloaded, unchanged
	Interface  string `json:"interface,omitempty"`
	Priority   int    `json:"priority,omitempty"`
}

// configureLB writes HAProxy (backends: the API servers of backends) and,
// with keepalived, the VRRP instance on each target master, in parallel, and
// (re)loads them. order is the full master list that fixes the priorities.
func (h *hook) configureLB(ctx context.Context, ss *sessions, targets, backends, order []*Node, keepalived bool) (map[string]lbResult, error) {
	var secret string
	if keepalived {
		var err error
		if secret, err = h.vrrpSecret(ctx, ss, order); err != nil {
			return nil, err
		}
	}
	etls, err := h.etcdCheckTLS(ctx, ss)
	if err != nil {
		return nil, err
	}
	var ef *etcdFrontend
	if etls != nil {
		ef = &etcdFrontend{Port: h.p.HA.EtcdLBPort, CAFile: etcdCheckCAPath, CertFile: etcdCheckCertPath}
	}
	hcfg := haproxyConfig(h.op.Instance.ID, h.p.HA.LBPort, lbMembers(backends), ef)
	var peers []string
	if h.p.HA.Unicast {
		for _, m := range order {
			peers = append(peers, m.IP)
		}
	}
	var mu sync.Mutex
	results := map[string]lbResult{}
	errs := remote.ForEach(ctx, targets, 16, func(ctx context.Context, n *Node) error {
		s := ss.get(n)
		if s == nil {
			return fmt.Errorf("no connection to %s", n.Name)
		}
		var r lbResult
		// The staging directory once, then one upload per file.
		if err := h.d.stagingDir(ctx, s); err != nil {
			return err
		}
		if err := s.x.UploadAsRoot(ctx, stagedHAProxy, []byte(hcfg), 0o600); err != nil {
			return err
		}
		e, eport := "0", "0"
		if etls != nil {
			if err := s.x.UploadAsRoot(ctx, stagedEtcdCA, []byte(etls.CA), 0o600); err != nil {
				return err
			}
			if err := s.x.UploadAsRoot(ctx, stagedEtcdCert, []byte(etls.ClientPEM), 0o600); err != nil {
				return err
			}
			e, eport = "1", strconv.Itoa(h.p.HA.EtcdLBPort)
		}
		if keepalived {
			addrs, err := h.d.addrsOf(ctx, s)
			if err != nil {
				return err
			}
			iface, vip, err := vrrpPlacement(addrs, n.IP, h.topo.VIP, h.p.HA.Interface)
			if err != nil {
				return fmt.Errorf("keepalived on %s: %w", n.Name, err)
			}
			idx := indexOf(order, n)
			r.Interface, r.Priority = iface, priorityOf(idx, len(order))
			kcfg := keepalivedConfig(vrrpConfig{ClusterID: h.op.Instance.ID, VRID: h.p.vrid(h.op.Instance.ID), VIP: vip, Secret: secret,
				AdvertInt: h.p.HA.AdvertInt, LBPort: h.p.HA.LBPort, Peers: peers},
				vrrpNode{Name: n.Name, IP: n.IP, Interface: iface, Priority: r.Priority, Master: idx == 0})
			if err := s.x.UploadAsRoot(ctx, stagedKeepalived, []byte(kcfg), 0o600); err != nil {
				return err
			}
			if err := s.x.UploadAsRoot(ctx, stagedLBCheck, []byte(lbCheckScript(h.p.HA.LBPort)), 0o700); err != nil {
				return err
			}
		}
		k := "0"
		if keepalived {
			k = "1"
		}
		cmd := remote.Command("sh", "-c", lbApplyScript, "lb-apply", "1", k, strconv.Itoa(h.p.HA.LBPort), e, eport)
		res, err := s.x.Run(ctx, cmd, h.d.sudo(remote.RunOpts{Env: scriptEnv(h.p, h.topo), Secrets: proxySecrets(h.p), Timeout: 10 * time.Minute}))
		if err != nil {
			return fmt.Errorf("configuring HAProxy/keepalived on %s: %w", n.Name, err)
		}
		for _, l := range strings.Split(res.Stdout, "\n") {
			if kv, ok := strings.CutPrefix(strings.TrimSpace(l), "VNFM_HA "); ok {
				unit, what, _ := strings.Cut(kv, "=")
				switch unit {
				case "haproxy":
					r.HAProxy = what
				case "keepalived":
					r.Keepalived = what
				}
			}
		}
		etcdNote := ""
		if etls != nil {
			etcdNote = fmt.Sprintf(", etcd on :%d", h.p.HA.EtcdLBPort)
		}
		h.nodeNote(ctx, n)(fmt.Sprintf("HAProxy %s (%d API servers on :%d%s)%s", r.HAProxy, len(backends), h.p.HA.LBPort, etcdNote,
			map[bool]string{true: fmt.Sprintf(", keepalived %s (%s, priority %d)", r.Keepalived, r.Interface, r.Priority), false: ""}[keepalived]))
		h.log.Info("load balancer configured", "node", n.Name, "haproxy", r.HAProxy, "keepalived", r.Keepalived, "backends", len(backends))
		mu.Lock()
		results[n.Name] = r
		mu.Unlock()
		return nil
	})
	return results, remote.JoinErrors(targets, errs, func(n *Node) string { return n.Name })
}

func indexOf(ns []*Node, n *Node) int {
	for i, x := range ns {
		if x.VnfcID == n.VnfcID {
			return i
		}
	}
	return len(ns)
}

func (d *Driver) uploadStaged(ctx context.Context, s *session, path, content string, mode fs.FileMode) error {
	if err := d.stagingDir(ctx, s); err != nil {
		return err
	}
	return s.x.UploadAsRoot(ctx, path, []byte(content), mode)
}

// stagingDir makes the driver's directory on a node (root's only: staged
// files hold secrets).
func (d *Driver) stagingDir(ctx context.Context, s *session) error {
	_, err := s.run(ctx, remote.Command("install", "-d", "-m", "0700", remoteDir), d.sudo(remote.RunOpts{}))
	return err
}

// vipHolders lists the reachable masters holding the VIP.
func (h *hook) vipHolders(ctx context.Context, ss *sessions, masters []*Node) []*Node {
	var mu sync.Mutex
	var out []*Node
	remote.ForEach(ctx, masters, 16, func(ctx context.Context, n *Node) error {
		s := ss.get(n)
		if s == nil {
			return nil
		}
		addrs, err := h.d.addrsOf(ctx, s)
		if err == nil && holdsVIP(addrs, h.topo.VIP) {
			mu.Lock()
			out = append(out, n)
			mu.Unlock()
		}
		return nil
	})
	return out
}

// waitVIP waits until one of the candidates holds the VIP (and no master
// outside them does) and returns it.
func (h *hook) waitVIP(ctx context.Context, ss *sessions, masters, candidates []*Node, within time.Duration) (*Node, error) {
	deadline := time.Now().Add(within)
	for {
		holders := h.vipHolders(ctx, ss, masters)
		if len(holders) == 1 && indexOf(candidates, holders[0]) < len(candidates) {
			return holders[0], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the VIP %s is held by %v after %v, want one of %v (is VRRP (IP protocol 112) allowed between the masters, and the VIP in their ports' allowed_address_pairs?)",
				h.topo.VIP, orNone(sortedNames(holders)), within, sortedNames(candidates))
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func orNone(s []string) any {
	if len(s) == 0 {
		return "no master"
	}
	return s
}
