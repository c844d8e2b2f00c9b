package kubeadm

import (
	"crypto/rand"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// Defaults of the HA control plane.
const (
	// DefaultLBPort is HAProxy's API frontend on every master (Tacker's
	// 16443): the VIP's port. The API servers keep APIPort.
	DefaultLBPort = 16443
	// DefaultAdvertInt is keepalived's VRRP advertisement interval (s).
	DefaultAdvertInt = 1
	// DefaultEtcdLBPort is HAProxy's etcd frontend on the VIP: etcd's client
	// port behind the VIP for etcd clients outside the masters (the seed's
	// "signal distribution settings for k8s-api and etcd"). Not 2379, which
	// the stacked etcd members use on the masters.
	DefaultEtcdLBPort = 12379
	// EtcdClientPort is etcd's client port on every master.
	EtcdClientPort = 2379

	haproxyCfgPath = "/etc/haproxy/haproxy.cfg"
	keepalivedPath = "/etc/keepalived/keepalived.conf"
	lbCheckPath    = "/etc/keepalived/check_k8s_api_lb.sh"
	haproxyBackend = "k8s-api"
	haproxyEtcd    = "etcd"
	// HAProxy's copies of kubeadm's etcd CA and healthcheck-client pair (a
	// client certificate of the etcd CA made for health checks): etcd
	// wants a client certificate on every connection, health checks too.
	etcdCheckCAFile   = "etcd-ca.crt"
	etcdCheckCertFile = "etcd-healthcheck-client.pem"
	etcdCheckCAPath   = "/etc/haproxy/" + etcdCheckCAFile
	etcdCheckCertPath = "/etc/haproxy/" + etcdCheckCertFile
	haproxyAdminSock  = "/run/haproxy/admin.sock"
	managedMarker     = "# Managed by mini-VNFM (kubeadm driver)"
)

// HAParams are k8s_cluster_installation_param.ha: the load balancer and VRRP
// settings of an HA control plane.
type HAParams struct {
	// LBPort is HAProxy's frontend port on the VIP (ha.lb_port, default
	// 16443; not 6443, which the API servers use on the same hosts).
	LBPort int `json:"lb_port"`
	// VirtualRouterID is keepalived's virtual_router_id (ha.virtual_router_id,
	// 1..255); 0: derived from the VNF instance id (VRID).
	VirtualRouterID int `json:"virtual_router_id,omitempty"`
	// Interface is the VRRP interface (ha.vrrp_interface); empty: the
	// interface holding the node address, found on each master.
	Interface string `json:"vrrp_interface,omitempty"`
	// Unicast sends VRRP adverts to the other masters instead of the VRRP
	// multicast group (ha.vrrp_unicast), for networks without multicast.
	Unicast bool `json:"vrrp_unicast,omitempty"`
	// AdvertInt is the advertisement interval in seconds (ha.vrrp_advert_int,
	// 1..10, default 1). Failover takes about 2-3 intervals.
	AdvertInt int `json:"vrrp_advert_int"`
	// EtcdLBPort is HAProxy's etcd frontend port on the VIP (ha.etcd_lb_port,
	// default 12379); 0: no etcd frontend.
	EtcdLBPort int `json:"etcd_lb_port"`
}

var haKeys = []string{"lb_port", "virtual_router_id", "vrrp_interface", "vrrp_unicast", "vrrp_advert_int", "lb_topology", "lb_vdu_id", "etcd_lb_port"}

// masterPorts are the ports Kubernetes uses on a master (API server, etcd
// client and peer, kubelet, controller-manager, scheduler).
var masterPorts = []int{APIPort, EtcdClientPort, 2380, 10250, 10257, 10259}

var ifaceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$`)

func haParams(o *kube.Obj) HAParams {
	h := HAParams{LBPort: DefaultLBPort, AdvertInt: DefaultAdvertInt, EtcdLBPort: DefaultEtcdLBPort}
	if o == nil {
		return h
	}
	o.Keys(haKeys, nil)
	if n, ok := o.Int("lb_port", math.MinInt32, math.MaxInt32); ok {
		if n < 1 || n > 65535 {
			o.Addf("lb_port", "%d is not a TCP port", n)
		} else if slices.Contains(masterPorts, n) {
			o.Addf("lb_port", "%d is used by Kubernetes on the masters (API server 6443, etcd 2379/2380, kubelet 10250, controller-manager 10257, scheduler 10259); HAProxy runs beside them: pick another port such as 16443", n)
		} else {
			h.LBPort = n
		}
	}
	if n, ok := o.Int("virtual_router_id", math.MinInt32, math.MaxInt32); ok {
		if n < 1 || n > 255 {
			o.Addf("virtual_router_id", "%d is out of VRRP's range 1..255", n)
		} else {
			h.VirtualRouterID = n
		}
	}
	h.Interface = o.String("vrrp_interface", false)
	if h.Interface != "" && !ifaceRE.MatchString(h.Interface) {
		o.Addf("vrrp_interface", "%q is not a network interface name", h.Interface)
	}
	h.Unicast = o.Bool("vrrp_unicast")
	if n, ok := o.Int("etcd_lb_port", math.MinInt32, math.MaxInt32); ok {
		if n < 0 || n > 65535 {
			o.Addf("etcd_lb_port", "%d is not a TCP port (0: no etcd frontend)", n)
		} else {
			h.EtcdLBPort = n
		}
	}
	if n, ok := o.Int("vrrp_advert_int", 1, 10); ok {
		h.AdvertInt = n
	}
	return h
}

// checkEtcdLBPort checks the etcd frontend's port against the topology:
// beside Kubernetes on the masters (colocated) it must not be one of theirs.
func checkEtcdLBPort(ha, top *kube.Obj, p *Params) {
	n := p.HA.EtcdLBPort
	switch {
	case n == 0:
	case n == p.HA.LBPort:
		top.Addf("ha.etcd_lb_port", "%d is also ha.lb_port, the Kubernetes API frontend: pick another port such as %d", n, DefaultEtcdLBPort)
	case !p.LB.Dedicated() && slices.Contains(masterPorts, n):
		top.Addf("ha.etcd_lb_port", "%d is used by Kubernetes on the masters, where HAProxy runs with ha.lb_topology colocated: pick another port such as %d (0: no etcd frontend)", n, DefaultEtcdLBPort)
	}
}

// DeriveVRID is the virtual_router_id of a cluster that does not set one:
// 1..255 from an FNV-1a hash of the VNF instance id, so that clusters sharing
// a network get different ids unless they collide by chance (1 in 255 for a
// pair; then set ha.virtual_router_id on one of them).
func DeriveVRID(instanceID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte("mini-vnfm/vrrp/" + instanceID))
	return int(h.Sum32()%255) + 1
}

// vrid is the cluster's virtual_router_id.
func (p *Params) vrid(instanceID string) int {
	if p.HA.VirtualRouterID != 0 {
		return p.HA.VirtualRouterID
	}
	return DeriveVRID(instanceID)
}

// newVRRPSecret makes keepalived's auth_pass (PASS authentication takes at
// most 8 characters).
func newVRRPSecret() (string, error) {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	b := make([]byte, 8)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		b[i] = alphabet[n.Int64()]
	}
	return string(b), nil
}

var authPassRE = regexp.MustCompile(`(?m)^\s*auth_pass\s+([A-Za-z0-9]{1,8})\s*$`)

// vrrpSecretOf reads the auth_pass of a keepalived.conf the driver wrote.
func vrrpSecretOf(conf string) string {
	if !strings.Contains(conf, managedMarker) {
		return ""
	}
	if m := authPassRE.FindStringSubmatch(conf); m != nil {
		return m[1]
	}
	return ""
}

// lbMember is one API server behind HAProxy.
type lbMember struct {
	Name string
	IP   string
}

// etcdFrontend is HAProxy's etcd section: the frontend port and the files
// its health checks present (the etcd CA, a client certificate and key).
type etcdFrontend struct {
	Port     int
	CAFile   string
	CertFile string
}

// haproxyConfig renders /etc/haproxy/haproxy.cfg: a TCP frontend on the LB
// port passing TLS through to every API server, with HTTPS health checks of
// /healthz; with etcd, a second TCP frontend passing TLS through to every
// master's etcd client port, health-checked by GET /health with a client
// certificate (an unhealthy member, e.g. one without a leader, answers 503
// and leaves the rotation). No HTTP statistics page; the admin socket is
// root's only.
func haproxyConfig(clusterID string, port int, members []lbMember, etcd *etcdFrontend) string {
	var b strings.Builder
	fmt.Fprintf(&b, `%s: Kubernetes API load balancer of VNF instance %s.
# Rewritten and reloaded on every control-plane membership change; local edits are lost.
global
	log /dev/log local0
	chroot /var/lib/haproxy
	stats socket %s mode 600 level admin
	stats timeout 30s
	user haproxy
	group haproxy
	daemon

defaults
	log global
	mode tcp
	option tcplog
	option dontlognull
	# A master that died is silent (no reset): a connection to it fails only
	# at the connect timeout. Short attempts, each retry on another master,
	# so a client through the VIP is served before the health checks mark
	# the dead one down.
	retries 2
	option redispatch 1
	timeout connect 2s
	timeout client 1h
	timeout server 1h
	timeout check 3s
`, managedMarker, clusterID, haproxyAdminSock)
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b lbMember) int { return strings.Compare(a.Name, b.Name) })
	haproxyTCPProxy(&b, haproxyBackend, port, "/healthz", sorted, APIPort, "verify none")
	if etcd != nil {
		haproxyTCPProxy(&b, haproxyEtcd, etcd.Port, "/health", sorted, EtcdClientPort,
			fmt.Sprintf("verify required ca-file %s crt %s", etcd.CAFile, etcd.CertFile))
	}
	return b.String()
}

// haproxyTCPProxy writes a TCP frontend on port and its backend of the
// members' backendPort, each checked by an HTTPS GET of checkURI (with the
// server options checkTLS) every second: down after 2 failures, up after
// 2 successes, its sessions closed when it goes down.
func haproxyTCPProxy(b *strings.Builder, name string, port int, checkURI string, members []lbMember, backendPort int, checkTLS string) {
	fmt.Fprintf(b, `
frontend %s
	bind *:%d
	default_backend %s

backend %s
	balance roundrobin
	option httpchk
	http-check connect ssl
	http-check send meth GET uri %s
	http-check expect status 200
	default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
`, name, port, name, name, checkURI)
	for _, m := range members {
		fmt.Fprintf(b, "\tserver %s %s:%d check %s\n", m.Name, m.IP, backendPort, checkTLS)
	}
}

// vrrpNode is one master's VRRP settings.
type vrrpNode struct {
	Name      string
	IP        string
	Interface string
	Priority  int
	Master    bool // state MASTER (the first master), else BACKUP
}

// vrrpConfig is the cluster-wide VRRP instance.
type vrrpConfig struct {
	ClusterID string
	VRID      int
	VIP       netip.Prefix // the VIP with the subnet's prefix length
	Secret    string
	AdvertInt int
	LBPort    int
	Peers     []string // unicast peers (all masters' addresses); nil: multicast
}

// priorityOf gives masters falling priorities in master order: 100+n for
// the first of n down to 101 for the last (all below 255, so each starts in
// BACKUP and the highest live priority wins the election).
func priorityOf(index, n int) int { return 100 + n - index }

// keepalivedConfig renders /etc/keepalived/keepalived.conf of one master.
// The track script fails when HAProxy's frontend does not answer locally:
// without a weight the instance then goes to FAULT and gives the VIP up at
// once (about 2 s) instead of waiting for its lowered priority to lose.
func keepalivedConfig(v vrrpConfig, n vrrpNode) string {
	state := "BACKUP"
	if n.Master {
		state = "MASTER"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `%s: Kubernetes API virtual IP of VNF instance %s.
# Rewritten on every control-plane membership change; local edits are lost.
global_defs {
	router_id %s
	enable_script_security
	script_user root
	vrrp_garp_master_delay 1
	vrrp_garp_master_refresh 60
}

vrrp_script chk_k8s_api_lb {
	script "%s"
	interval 1
	timeout 2
	fall 2
	rise 2
}

vrrp_instance K8S_API_%d {
	state %s
	interface %s
	virtual_router_id %d
	priority %d
	advert_int %d
	authentication {
		auth_type PASS
		auth_pass %s
	}
`, managedMarker, v.ClusterID, n.Name, lbCheckPath, v.VRID, state, n.Interface, v.VRID, n.Priority, v.AdvertInt, v.Secret)
	if len(v.Peers) > 0 {
		fmt.Fprintf(&b, "\tunicast_src_ip %s\n\tunicast_peer {\n", n.IP)
		for _, p := range v.Peers {
			if p != n.IP {
				fmt.Fprintf(&b, "\t\t%s\n", p)
			}
		}
		b.WriteString("\t}\n")
	}
	fmt.Fprintf(&b, `	virtual_ipaddress {
		%s dev %s
	}
	track_script {
		chk_k8s_api_lb
	}
}
`, v.VIP, n.Interface)
	return b.String()
}

// lbCheckScript is keepalived's track script: HAProxy's frontend accepts a
// connection on the loopback. (A process check such as `killall -0 haproxy`
// would not notice a HAProxy that stopped listening.)
func lbCheckScript(port int) string {
	return fmt.Sprintf(`#!/bin/bash
%s: keepalived track script.
# Exit 0 when HAProxy's Kubernetes API frontend accepts connections locally.
exec timeout 2 bash -c '</dev/tcp/127.0.0.1/%d' 2>/dev/null
`, managedMarker, port)
}

// ifaceAddr is an IPv4 address of an interface (`ip -o -4 addr show`).
type ifaceAddr struct {
	Iface     string
	Prefix    netip.Prefix // address/len
	Secondary bool
}

// parseIPAddr reads `ip -o -4 addr show` lines:
// "2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\   valid_lft ...".
func parseIPAddr(out string) []ifaceAddr {
	var res []ifaceAddr
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "inet" {
			continue
		}
		pfx, err := netip.ParsePrefix(f[3])
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(f[1], "@")
		res = append(res, ifaceAddr{Iface: name, Prefix: pfx, Secondary: slices.Contains(f, "secondary")})
	}
	return res
}

// vrrpPlacement finds, from a master's addresses, the interface holding its
// node address (or the one configured) and the VIP with the subnet's prefix
// length; the VIP must lie in that subnet (VRRP moves it within one L2
// segment).
func vrrpPlacement(addrs []ifaceAddr, nodeIP, vip, iface string) (string, netip.Prefix, error) {
	ip, err := netip.ParseAddr(nodeIP)
	if err != nil {
		return "", netip.Prefix{}, fmt.Errorf("node address %q: %v", nodeIP, err)
	}
	v, err := netip.ParseAddr(vip)
	if err != nil {
		return "", netip.Prefix{}, fmt.Errorf("VIP %q: %v", vip, err)
	}
	for _, a := range addrs {
		if a.Prefix.Addr() != ip {
			continue
		}
		name := a.Iface
		if iface != "" && iface != name {
			return "", netip.Prefix{}, fmt.Errorf("%s.ha.vrrp_interface is %s, but the node address %s is on %s", ParamKey, iface, nodeIP, name)
		}
		if !a.Prefix.Masked().Contains(v) {
			return "", netip.Prefix{}, fmt.Errorf("the VIP %s is not in the masters' subnet %s (node address %s on %s): the VIP port (cluster_cp_name) must be on the masters' network", vip, a.Prefix.Masked(), nodeIP, name)
		}
		if a.Prefix.Bits() >= 31 {
			return "", netip.Prefix{}, fmt.Errorf("the node address %s is a /%d: no room for a VIP on %s", a.Prefix, a.Prefix.Bits(), name)
		}
		return name, netip.PrefixFrom(v, a.Prefix.Bits()), nil
	}
	return "", netip.Prefix{}, fmt.Errorf("no interface holds the node address %s (ip -4 addr shows %s)", nodeIP, describeAddrs(addrs))
}

func describeAddrs(addrs []ifaceAddr) string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.Iface+" "+a.Prefix.String())
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// holdsVIP reports whether the addresses include the VIP.
func holdsVIP(addrs []ifaceAddr, vip string) bool {
	for _, a := range addrs {
		if a.Prefix.Addr().String() == vip {
			return true
		}
	}
	return false
}
