package ossim

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A minimal Octavia (load-balancer v2 API, /load-balancer/v2/lbaas/...):
// load balancers with a VIP port on a Neutron subnet, listeners, pools,
// members and health monitors, with Octavia's provisioning life cycle — a
// load balancer is created PENDING_CREATE and becomes ACTIVE after the
// simulator's latency (an amphora boots); every change to it or to one of
// its children puts it in PENDING_UPDATE until it settles, and while it is
// pending it is immutable (409), so clients wait for ACTIVE as they must
// with the real service. Deletes go through PENDING_DELETE; a load
// balancer with children is deleted only with cascade. Operating status:
// ONLINE once active (members NO_MONITOR without a health monitor). No
// traffic is balanced. The same objects back the Heat types
// OS::Octavia::LoadBalancer, Listener, Pool, PoolMember and HealthMonitor.

const (
	provActive        = "ACTIVE"
	provPendingCreate = "PENDING_CREATE"
	provPendingUpdate = "PENDING_UPDATE"
	provPendingDelete = "PENDING_DELETE"
)

// lbCommon is what every Octavia object has.
type lbCommon struct {
	id, name, description, project string
	adminUp                        bool
	prov, op                       string
	created, updated               time.Time
	tags                           []string
}

type loadBalancer struct {
	lbCommon
	vipSubnet, vipNetwork, vipPort string
	vipAddr                        netip.Addr
	provider, flavorID, az         string
}

type lbListener struct {
	lbCommon
	lbID         string
	protocol     string
	port         int
	defaultPool  string
	connLimit    int
	allowedCIDRs []string
}

type lbPool struct {
	lbCommon
	lbID, listenerID string
	protocol         string
	algorithm        string
	persistence      map[string]any
	monitorID        string
	members          []string
}

type lbMember struct {
	lbCommon
	poolID      string
	address     netip.Addr
	port        int
	subnetID    string
	weight      int
	backup      bool
	monitorAddr string
	monitorPort int
}

type lbMonitor struct {
	lbCommon
	poolID                     string
	typ                        string
	delay, timeout             int
	maxRetries, maxRetriesDown int
	httpMethod, urlPath, codes string
}

type octaviaState struct {
	lbs       map[string]*loadBalancer
	listeners map[string]*lbListener
	pools     map[string]*lbPool
	members   map[string]*lbMember
	monitors  map[string]*lbMonitor
}

// oct is the Octavia state (s.mu held).
func (s *Sim) oct() *octaviaState {
	if s.octavia == nil {
		s.octavia = &octaviaState{lbs: map[string]*loadBalancer{}, listeners: map[string]*lbListener{}, pools: map[string]*lbPool{},
			members: map[string]*lbMember{}, monitors: map[string]*lbMonitor{}}
	}
	return s.octavia
}

var (
	listenerProtocols = []string{"HTTP", "HTTPS", "TCP", "UDP", "TERMINATED_HTTPS", "SCTP", "PROMETHEUS"}
	poolProtocols     = []string{"HTTP", "HTTPS", "TCP", "UDP", "PROXY", "PROXYV2", "SCTP"}
	lbAlgorithms      = []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"}
	monitorTypes      = []string{"HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP"}
	// pool protocols a listener protocol accepts (Octavia's VALID_LISTENER_POOL_PROTOCOL_MAP).
	listenerPools = map[string][]string{
		"HTTP": {"HTTP", "PROXY", "PROXYV2"}, "HTTPS": {"HTTPS", "PROXY", "PROXYV2", "TCP"}, "TCP": {"TCP", "HTTP", "HTTPS", "PROXY", "PROXYV2"},
		"TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"}, "UDP": {"UDP"}, "SCTP": {"SCTP"}, "PROMETHEUS": {},
	}
)

func octErr(code int, format string, args ...any) *apiError {
	typ := "Client"
	if code >= 500 {
		typ = "Server"
	}
	return errf(code, typ, format, args...)
}

func immutable(lb *loadBalancer) *apiError {
	return octErr(409, "Load Balancer %s is immutable and cannot be updated.", lb.id)
}

func (s *Sim) newCommon(project string, b map[string]any) lbCommon {
	now := s.now()
	c := lbCommon{id: uuid.NewString(), name: str(b, "name"), description: str(b, "description"), project: project, adminUp: true,
		prov: provPendingCreate, op: "OFFLINE", created: now, updated: now, tags: stringList(b["tags"])}
	if v := boolPtr(b, "admin_state_up"); v != nil {
		c.adminUp = *v
	}
	return c
}

// intField reads an integer body field (JSON numbers and numeric strings).
func intField(b map[string]any, k string) (int, bool, error) {
	v, ok := b[k]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch t := v.(type) {
	case float64:
		if t != float64(int(t)) {
			return 0, true, octErr(400, "Invalid input for field/attribute %s. Value: '%v'. Value must be an integer", k, v)
		}
		return int(t), true, nil
	case int:
		return t, true, nil
	case string:
		n, err := strconv.Atoi(t)
		if err != nil {
			return 0, true, octErr(400, "Invalid input for field/attribute %s. Value: '%v'. Value must be an integer", k, v)
		}
		return n, true, nil
	}
	return 0, true, octErr(400, "Invalid input for field/attribute %s. Value: '%v'. Value must be an integer", k, v)
}

func requireInt(b map[string]any, k string, lo, hi int) (int, error) {
	n, ok, err := intField(b, k)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, octErr(400, "Invalid input for field/attribute %s. Value: 'None'. Mandatory field missing.", k)
	}
	if n < lo || n > hi {
		return 0, octErr(400, "Invalid input for field/attribute %s. Value: '%d'. Value should be between %d and %d", k, n, lo, hi)
	}
	return n, nil
}

func requireEnum(b map[string]any, k string, allowed []string) (string, error) {
	v := str(b, k)
	if v == "" {
		return "", octErr(400, "Invalid input for field/attribute %s. Value: 'None'. Mandatory field missing.", k)
	}
	if !slices.Contains(allowed, v) {
		return "", octErr(400, "Invalid input for field/attribute %s. Value: '%s'. Value should be one of: %s", k, v, strings.Join(allowed, ", "))
	}
	return v, nil
}

// byRef finds an Octavia object by id, else by (non-empty) name.
func byRef[T any](m map[string]T, ref, kind string, name func(T) string) (T, error) {
	if x, ok := m[ref]; ok {
		return x, nil
	}
	for _, x := range m {
		if ref != "" && name(x) == ref {
			return x, nil
		}
	}
	var zero T
	return zero, octErr(404, "%s %s could not be found.", kind, ref)
}

func (s *Sim) lbOf(ref string) (*loadBalancer, error) {
	return byRef(s.oct().lbs, ref, "Load Balancer", func(x *loadBalancer) string { return x.name })
}

func (s *Sim) listenerOf(ref string) (*lbListener, error) {
	return byRef(s.oct().listeners, ref, "Listener", func(x *lbListener) string { return x.name })
}

func (s *Sim) poolOf(ref string) (*lbPool, error) {
	return byRef(s.oct().pools, ref, "Pool", func(x *lbPool) string { return x.name })
}

// mutable returns the load balancer, which must be ACTIVE to be changed.
func (s *Sim) mutable(lbID string) (*loadBalancer, error) {
	lb := s.oct().lbs[lbID]
	if lb == nil {
		return nil, octErr(404, "Load Balancer %s could not be found.", lbID)
	}
	if lb.prov != provActive {
		return nil, immutable(lb)
	}
	return lb, nil
}

// touch puts the load balancer in PENDING_UPDATE and settles it later.
func (s *Sim) touch(lb *loadBalancer) {
	lb.prov = provPendingUpdate
	lb.updated = s.now()
	s.settleLater(lb.id, s.opts.ResourceLatency)
}

// settleLater ends the load balancer's pending state after d: pending
// objects become ACTIVE (or go, when PENDING_DELETE).
func (s *Sim) settleLater(lbID string, d time.Duration) {
	s.goAsync(func(ctx context.Context) {
		if sleep(ctx, d) != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.settle(lbID)
	})
}

func (s *Sim) settle(lbID string) {
	o := s.oct()
	lb := o.lbs[lbID]
	if lb == nil {
		return
	}
	if lb.prov == provPendingDelete {
		s.removeLB(lb)
		return
	}
	settled := func(c *lbCommon, online string) bool {
		if c.prov == provPendingDelete {
			return false
		}
		c.prov = provActive
		c.op = online
		if !c.adminUp {
			c.op = "OFFLINE"
		}
		return true
	}
	for _, p := range o.pools {
		if p.lbID != lbID {
			continue
		}
		if p.prov == provPendingDelete {
			s.removePool(p)
			continue
		}
		for _, mid := range slices.Clone(p.members) {
			m := o.members[mid]
			if m.prov == provPendingDelete {
				delete(o.members, mid)
				p.members = slices.DeleteFunc(p.members, func(x string) bool { return x == mid })
				continue
			}
			st := "NO_MONITOR"
			if p.monitorID != "" {
				st = "ONLINE"
			}
			settled(&m.lbCommon, st)
		}
		if hm := o.monitors[p.monitorID]; hm != nil {
			if hm.prov == provPendingDelete {
				delete(o.monitors, hm.id)
				p.monitorID = ""
			} else {
				settled(&hm.lbCommon, "ONLINE")
			}
		}
		settled(&p.lbCommon, "ONLINE")
	}
	for _, l := range o.listeners {
		if l.lbID != lbID {
			continue
		}
		if l.prov == provPendingDelete {
			delete(o.listeners, l.id)
			continue
		}
		settled(&l.lbCommon, "ONLINE")
	}
	settled(&lb.lbCommon, "ONLINE")
	lb.updated = s.now()
}

func (s *Sim) removePool(p *lbPool) {
	o := s.oct()
	for _, mid := range p.members {
		delete(o.members, mid)
	}
	delete(o.monitors, p.monitorID)
	for _, l := range o.listeners {
		if l.defaultPool == p.id {
			l.defaultPool = ""
		}
	}
	delete(o.pools, p.id)
}

func (s *Sim) removeLB(lb *loadBalancer) {
	o := s.oct()
	for _, p := range o.pools {
		if p.lbID == lb.id {
			s.removePool(p)
		}
	}
	for _, l := range o.listeners {
		if l.lbID == lb.id {
			delete(o.listeners, l.id)
		}
	}
	if lb.vipPort != "" {
		s.deletePort(lb.vipPort)
	}
	delete(o.lbs, lb.id)
}

// ---- create ----

func (s *Sim) createLB(project string, b map[string]any) (*loadBalancer, error) {
	lb := &loadBalancer{lbCommon: s.newCommon(project, b), provider: "amphora", flavorID: str(b, "flavor_id"), az: str(b, "availability_zone")}
	if v := str(b, "provider"); v != "" {
		if v != "amphora" && v != "octavia" && v != "ovn" {
			return nil, octErr(400, "Provider '%s' is not enabled.", v)
		}
		lb.provider = v
	}
	subnetRef, netRef, portRef := str(b, "vip_subnet_id"), str(b, "vip_network_id"), str(b, "vip_port_id")
	if subnetRef == "" && netRef == "" && portRef == "" {
		return nil, octErr(400, "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")
	}
	var want netip.Addr
	if v := str(b, "vip_address"); v != "" {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, octErr(400, "Invalid input for field/attribute vip_address. Value: '%s'. Value should be IPv4 or IPv6 format", v)
		}
		want = a
	}
	if portRef != "" {
		p := s.ports[portRef]
		if p == nil || len(p.fixed) == 0 {
			return nil, octErr(400, "Validation failure: Port %s could not be found or has no fixed IP.", portRef)
		}
		lb.vipPort, lb.vipNetwork, lb.vipSubnet, lb.vipAddr = p.id, p.networkID, p.fixed[0].subnetID, p.fixed[0].ip
	} else {
		var sn *subnet
		if subnetRef != "" {
			x, err := s.findSubnet(subnetRef)
			if err != nil {
				return nil, octErr(400, "Validation failure: Subnet %s not found.", subnetRef)
			}
			sn = x
		} else {
			n, err := s.findNetwork(netRef)
			if err != nil || len(n.subnets) == 0 {
				return nil, octErr(400, "Validation failure: Network %s not found or has no subnet.", netRef)
			}
			sn = s.subnets[n.subnets[0]]
		}
		fixed := map[string]any{"subnet_id": sn.id}
		if want.IsValid() {
			fixed["ip_address"] = want.String()
		}
		p, err := s.createPort(project, portRequest{NetworkID: sn.networkID, Name: "octavia-lb-" + lb.id, DeviceID: "lb-" + lb.id,
			DeviceOwner: "Octavia", FixedIPs: []map[string]any{fixed}})
		if err != nil {
			return nil, err
		}
		lb.vipPort, lb.vipNetwork, lb.vipSubnet, lb.vipAddr = p.id, sn.networkID, sn.id, p.fixed[0].ip
	}
	s.oct().lbs[lb.id] = lb
	s.settleLater(lb.id, s.opts.Latency)
	return lb, nil
}

func (s *Sim) createListener(project string, b map[string]any) (*lbListener, error) {
	proto, err := requireEnum(b, "protocol", listenerProtocols)
	if err != nil {
		return nil, err
	}
	port, err := requireInt(b, "protocol_port", 1, 65535)
	if err != nil {
		return nil, err
	}
	ref := str(b, "loadbalancer_id")
	if ref == "" {
		return nil, octErr(400, "Invalid input for field/attribute loadbalancer_id. Value: 'None'. Mandatory field missing.")
	}
	lb0, err := s.lbOf(ref)
	if err != nil {
		return nil, octErr(400, "Validation failure: Load Balancer %s not found.", ref)
	}
	o := s.oct()
	for _, l := range o.listeners {
		if l.lbID == lb0.id && l.port == port && (l.protocol == "UDP") == (proto == "UDP") && l.prov != provPendingDelete {
			return nil, octErr(409, "Another Listener on this Load Balancer is already using protocol_port %d", port)
		}
	}
	lb, err := s.mutable(lb0.id)
	if err != nil {
		return nil, err
	}
	l := &lbListener{lbCommon: s.newCommon(project, b), lbID: lb.id, protocol: proto, port: port, connLimit: -1, allowedCIDRs: stringList(b["allowed_cidrs"])}
	if n, ok, err := intField(b, "connection_limit"); err != nil {
		return nil, err
	} else if ok {
		l.connLimit = n
	}
	if dp := str(b, "default_pool_id"); dp != "" {
		p, err := s.poolOf(dp)
		if err != nil || p.lbID != lb.id {
			return nil, octErr(400, "Validation failure: Pool %s not found on load balancer %s.", dp, lb.id)
		}
		l.defaultPool = p.id
	}
	o.listeners[l.id] = l
	s.touch(lb)
	return l, nil
}

func (s *Sim) createPool(project string, b map[string]any) (*lbPool, error) {
	proto, err := requireEnum(b, "protocol", poolProtocols)
	if err != nil {
		return nil, err
	}
	alg, err := requireEnum(b, "lb_algorithm", lbAlgorithms)
	if err != nil {
		return nil, err
	}
	o := s.oct()
	p := &lbPool{lbCommon: s.newCommon(project, b), protocol: proto, algorithm: alg}
	if sp, ok := b["session_persistence"].(map[string]any); ok && len(sp) > 0 {
		if _, err := requireEnum(sp, "type", []string{"SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE"}); err != nil {
			return nil, err
		}
		p.persistence = sp
	}
	var l *lbListener
	switch lref, bref := str(b, "listener_id"), str(b, "loadbalancer_id"); {
	case lref != "":
		if l, err = s.listenerOf(lref); err != nil {
			return nil, octErr(400, "Validation failure: Listener %s not found.", lref)
		}
		if !slices.Contains(listenerPools[l.protocol], proto) {
			return nil, octErr(400, "Validation failure: The pool protocol '%s' is invalid while the listener protocol is '%s'.", proto, l.protocol)
		}
		if l.defaultPool != "" {
			return nil, octErr(409, "Listener %s is already using default pool %s.", l.id, l.defaultPool)
		}
		p.lbID, p.listenerID = l.lbID, l.id
	case bref != "":
		lb, err := s.lbOf(bref)
		if err != nil {
			return nil, octErr(400, "Validation failure: Load Balancer %s not found.", bref)
		}
		p.lbID = lb.id
	default:
		return nil, octErr(400, "Validation failure: Either listener_id or loadbalancer_id must be specified.")
	}
	lb, err := s.mutable(p.lbID)
	if err != nil {
		return nil, err
	}
	if l != nil {
		l.defaultPool = p.id
	}
	o.pools[p.id] = p
	s.touch(lb)
	return p, nil
}

func (s *Sim) createMember(project, poolID string, b map[string]any) (*lbMember, error) {
	p, err := s.poolOf(poolID)
	if err != nil {
		return nil, err
	}
	addr, err := netip.ParseAddr(str(b, "address"))
	if err != nil {
		return nil, octErr(400, "Invalid input for field/attribute address. Value: '%s'. Value should be IPv4 or IPv6 format", str(b, "address"))
	}
	port, err := requireInt(b, "protocol_port", 1, 65535)
	if err != nil {
		return nil, err
	}
	o := s.oct()
	for _, mid := range p.members {
		if m := o.members[mid]; m != nil && m.address == addr && m.port == port && m.prov != provPendingDelete {
			return nil, octErr(409, "Another member on this pool is already using ip %s on protocol_port %d", addr, port)
		}
	}
	m := &lbMember{lbCommon: s.newCommon(project, b), poolID: p.id, address: addr, port: port, weight: 1,
		monitorAddr: str(b, "monitor_address")}
	if ref := str(b, "subnet_id"); ref != "" {
		sn, err := s.findSubnet(ref)
		if err != nil {
			return nil, octErr(400, "Validation failure: Subnet %s not found.", ref)
		}
		m.subnetID = sn.id
	}
	if n, ok, err := intField(b, "weight"); err != nil {
		return nil, err
	} else if ok {
		if n < 0 || n > 256 {
			return nil, octErr(400, "Invalid input for field/attribute weight. Value: '%d'. Value should be between 0 and 256", n)
		}
		m.weight = n
	}
	if n, ok, err := intField(b, "monitor_port"); err != nil {
		return nil, err
	} else if ok {
		m.monitorPort = n
	}
	if v := boolPtr(b, "backup"); v != nil {
		m.backup = *v
	}
	lb, err := s.mutable(p.lbID)
	if err != nil {
		return nil, err
	}
	o.members[m.id] = m
	p.members = append(p.members, m.id)
	s.touch(lb)
	return m, nil
}

func (s *Sim) createMonitor(project string, b map[string]any) (*lbMonitor, error) {
	ref := str(b, "pool_id")
	if ref == "" {
		return nil, octErr(400, "Invalid input for field/attribute pool_id. Value: 'None'. Mandatory field missing.")
	}
	p, err := s.poolOf(ref)
	if err != nil {
		return nil, octErr(400, "Validation failure: Pool %s not found.", ref)
	}
	typ, err := requireEnum(b, "type", monitorTypes)
	if err != nil {
		return nil, err
	}
	hm := &lbMonitor{lbCommon: s.newCommon(project, b), poolID: p.id, typ: typ}
	if hm.delay, err = requireInt(b, "delay", 0, 1<<31-1); err != nil {
		return nil, err
	}
	if hm.timeout, err = requireInt(b, "timeout", 0, 1<<31-1); err != nil {
		return nil, err
	}
	if hm.maxRetries, err = requireInt(b, "max_retries", 1, 10); err != nil {
		return nil, err
	}
	hm.maxRetriesDown = 3
	if n, ok, err := intField(b, "max_retries_down"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 || n > 10 {
			return nil, octErr(400, "Invalid input for field/attribute max_retries_down. Value: '%d'. Value should be between 1 and 10", n)
		}
		hm.maxRetriesDown = n
	}
	if hm.timeout > hm.delay {
		return nil, octErr(400, "Validation failure: The delay value must be greater than or equal to the timeout value.")
	}
	if typ == "HTTP" || typ == "HTTPS" {
		hm.httpMethod, hm.urlPath, hm.codes = cmpOr(str(b, "http_method"), "GET"), cmpOr(str(b, "url_path"), "/"), cmpOr(str(b, "expected_codes"), "200")
	}
	if p.monitorID != "" {
		return nil, octErr(409, "This Pool %s already has a Health Monitor.", p.id)
	}
	lb, err := s.mutable(p.lbID)
	if err != nil {
		return nil, err
	}
	s.oct().monitors[hm.id] = hm
	p.monitorID = hm.id
	s.touch(lb)
	return hm, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ---- update / delete ----

func applyCommon(c *lbCommon, b map[string]any) {
	if v, ok := b["name"]; ok {
		c.name = toString(v)
	}
	if v, ok := b["description"]; ok {
		c.description = toString(v)
	}
	if v := boolPtr(b, "admin_state_up"); v != nil {
		c.adminUp = *v
	}
	if v, ok := b["tags"]; ok {
		c.tags = stringList(v)
	}
}

// octUpdate changes an object of a collection (its load balancer must be
// ACTIVE); the object and its load balancer go PENDING_UPDATE.
func (s *Sim) octUpdate(coll, id, poolID string, b map[string]any) (map[string]any, error) {
	o := s.oct()
	var lbID string
	var c *lbCommon
	apply := func() error { return nil }
	switch coll {
	case "loadbalancers":
		lb := o.lbs[id]
		if lb == nil {
			return nil, octErr(404, "Load Balancer %s could not be found.", id)
		}
		lbID, c = lb.id, &lb.lbCommon
	case "listeners":
		l := o.listeners[id]
		if l == nil {
			return nil, octErr(404, "Listener %s could not be found.", id)
		}
		lbID, c = l.lbID, &l.lbCommon
		apply = func() error {
			if n, ok, err := intField(b, "connection_limit"); err != nil {
				return err
			} else if ok {
				l.connLimit = n
			}
			if v, ok := b["default_pool_id"]; ok {
				l.defaultPool = toString(v)
			}
			if v, ok := b["allowed_cidrs"]; ok {
				l.allowedCIDRs = stringList(v)
			}
			return nil
		}
	case "pools":
		p := o.pools[id]
		if p == nil {
			return nil, octErr(404, "Pool %s could not be found.", id)
		}
		lbID, c = p.lbID, &p.lbCommon
		apply = func() error {
			if _, ok := b["lb_algorithm"]; ok {
				alg, err := requireEnum(b, "lb_algorithm", lbAlgorithms)
				if err != nil {
					return err
				}
				p.algorithm = alg
			}
			if sp, ok := b["session_persistence"].(map[string]any); ok {
				p.persistence = sp
			}
			return nil
		}
	case "members":
		m := o.members[id]
		if m == nil || m.poolID != poolID {
			return nil, octErr(404, "Member %s not found.", id)
		}
		lbID, c = o.pools[m.poolID].lbID, &m.lbCommon
		apply = func() error {
			if n, ok, err := intField(b, "weight"); err != nil {
				return err
			} else if ok {
				m.weight = n
			}
			if v := boolPtr(b, "backup"); v != nil {
				m.backup = *v
			}
			return nil
		}
	case "healthmonitors":
		hm := o.monitors[id]
		if hm == nil {
			return nil, octErr(404, "Health Monitor %s not found.", id)
		}
		lbID, c = o.pools[hm.poolID].lbID, &hm.lbCommon
		apply = func() error {
			for k, dst := range map[string]*int{"delay": &hm.delay, "timeout": &hm.timeout, "max_retries": &hm.maxRetries, "max_retries_down": &hm.maxRetriesDown} {
				if n, ok, err := intField(b, k); err != nil {
					return err
				} else if ok {
					*dst = n
				}
			}
			for k, dst := range map[string]*string{"http_method": &hm.httpMethod, "url_path": &hm.urlPath, "expected_codes": &hm.codes} {
				if v, ok := b[k]; ok {
					*dst = toString(v)
				}
			}
			return nil
		}
	default:
		return nil, octErr(404, "The resource could not be found.")
	}
	lb, err := s.mutable(lbID)
	if err != nil {
		return nil, err
	}
	if err := apply(); err != nil {
		return nil, err
	}
	applyCommon(c, b)
	c.updated = s.now()
	if c != &lb.lbCommon {
		c.prov = provPendingUpdate
	}
	s.touch(lb)
	return s.octGet(coll, id, poolID)
}

func (s *Sim) octDelete(coll, id, poolID string, cascade bool) error {
	o := s.oct()
	switch coll {
	case "loadbalancers":
		lb := o.lbs[id]
		if lb == nil {
			return octErr(404, "Load Balancer %s could not be found.", id)
		}
		if lb.prov != provActive && lb.prov != "ERROR" {
			return immutable(lb)
		}
		if !cascade {
			for _, l := range o.listeners {
				if l.lbID == id {
					return octErr(400, "Cannot delete Load Balancer %s - it has children", id)
				}
			}
			for _, p := range o.pools {
				if p.lbID == id {
					return octErr(400, "Cannot delete Load Balancer %s - it has children", id)
				}
			}
		}
		lb.prov = provPendingDelete
		s.settleLater(id, s.opts.ResourceLatency)
		return nil
	case "listeners":
		l := o.listeners[id]
		if l == nil {
			return octErr(404, "Listener %s could not be found.", id)
		}
		lb, err := s.mutable(l.lbID)
		if err != nil {
			return err
		}
		l.prov = provPendingDelete
		s.touch(lb)
	case "pools":
		p := o.pools[id]
		if p == nil {
			return octErr(404, "Pool %s could not be found.", id)
		}
		lb, err := s.mutable(p.lbID)
		if err != nil {
			return err
		}
		p.prov = provPendingDelete
		s.touch(lb)
	case "members":
		m := o.members[id]
		if m == nil || m.poolID != poolID {
			return octErr(404, "Member %s not found.", id)
		}
		lb, err := s.mutable(o.pools[m.poolID].lbID)
		if err != nil {
			return err
		}
		m.prov = provPendingDelete
		s.touch(lb)
	case "healthmonitors":
		hm := o.monitors[id]
		if hm == nil {
			return octErr(404, "Health Monitor %s not found.", id)
		}
		lb, err := s.mutable(o.pools[hm.poolID].lbID)
		if err != nil {
			return err
		}
		hm.prov = provPendingDelete
		s.touch(lb)
	default:
		return octErr(404, "The resource could not be found.")
	}
	return nil
}

// ---- JSON ----

func idRefs(ids ...string) []any {
	out := []any{}
	for _, id := range ids {
		if id != "" {
			out = append(out, map[string]any{"id": id})
		}
	}
	return out
}

// idsOf is the ids of idRefs.
func idsOf(refs any) []string {
	var out []string
	list, _ := refs.([]any)
	for _, r := range list {
		if m, _ := r.(map[string]any); m != nil {
			if id, _ := m["id"].(string); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// octaviaTime is Octavia's timestamp: UTC without a zone designator.
func octaviaTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}

func commonJSON(c *lbCommon) map[string]any {
	tags := c.tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"id": c.id, "name": c.name, "description": c.description, "project_id": c.project, "tenant_id": c.project,
		"admin_state_up": c.adminUp, "provisioning_status": c.prov, "operating_status": c.op,
		"created_at": octaviaTime(c.created), "updated_at": octaviaTime(c.updated), "tags": tags}
}

func (s *Sim) lbJSON(lb *loadBalancer) map[string]any {
	o := s.oct()
	var listeners, pools []string
	for _, l := range o.listeners {
		if l.lbID == lb.id {
			listeners = append(listeners, l.id)
		}
	}
	for _, p := range o.pools {
		if p.lbID == lb.id {
			pools = append(pools, p.id)
		}
	}
	sort.Strings(listeners)
	sort.Strings(pools)
	j := commonJSON(&lb.lbCommon)
	j["vip_address"], j["vip_port_id"], j["vip_subnet_id"], j["vip_network_id"] = lb.vipAddr.String(), lb.vipPort, lb.vipSubnet, lb.vipNetwork
	j["vip_qos_policy_id"], j["additional_vips"] = nil, []any{}
	j["provider"], j["flavor_id"], j["availability_zone"] = lb.provider, strOrNil(lb.flavorID), strOrNil(lb.az)
	j["listeners"], j["pools"] = idRefs(listeners...), idRefs(pools...)
	return j
}

func (s *Sim) listenerJSON(l *lbListener) map[string]any {
	o := s.oct()
	var pools []string
	for _, p := range o.pools {
		if p.listenerID == l.id {
			pools = append(pools, p.id)
		}
	}
	sort.Strings(pools)
	j := commonJSON(&l.lbCommon)
	cidrs := l.allowedCIDRs
	if cidrs == nil {
		cidrs = []string{}
	}
	j["protocol"], j["protocol_port"], j["connection_limit"] = l.protocol, l.port, l.connLimit
	j["default_pool_id"], j["loadbalancers"], j["l7policies"], j["allowed_cidrs"] = strOrNil(l.defaultPool), idRefs(l.lbID), []any{}, cidrs
	j["insert_headers"], j["default_tls_container_ref"], j["sni_container_refs"] = map[string]any{}, nil, []any{}
	j["timeout_client_data"], j["timeout_member_connect"], j["timeout_member_data"], j["timeout_tcp_inspect"] = 50000, 5000, 50000, 0
	return j
}

func (s *Sim) poolJSON(p *lbPool) map[string]any {
	j := commonJSON(&p.lbCommon)
	j["protocol"], j["lb_algorithm"], j["loadbalancers"], j["listeners"] = p.protocol, p.algorithm, idRefs(p.lbID), idRefs(p.listenerID)
	j["members"], j["healthmonitor_id"] = idRefs(p.members...), strOrNil(p.monitorID)
	if p.persistence != nil {
		j["session_persistence"] = p.persistence
	} else {
		j["session_persistence"] = nil
	}
	j["tls_enabled"] = false
	return j
}

func (s *Sim) memberJSON(m *lbMember) map[string]any {
	j := commonJSON(&m.lbCommon)
	j["address"], j["protocol_port"], j["weight"], j["backup"] = m.address.String(), m.port, m.weight, m.backup
	j["subnet_id"], j["monitor_address"], j["pool_id"] = strOrNil(m.subnetID), strOrNil(m.monitorAddr), m.poolID
	if m.monitorPort != 0 {
		j["monitor_port"] = m.monitorPort
	} else {
		j["monitor_port"] = nil
	}
	return j
}

func (s *Sim) monitorJSON(hm *lbMonitor) map[string]any {
	j := commonJSON(&hm.lbCommon)
	j["type"], j["delay"], j["timeout"], j["max_retries"], j["max_retries_down"] = hm.typ, hm.delay, hm.timeout, hm.maxRetries, hm.maxRetriesDown
	j["http_method"], j["url_path"], j["expected_codes"], j["pools"] = strOrNil(hm.httpMethod), strOrNil(hm.urlPath), strOrNil(hm.codes), idRefs(hm.poolID)
	return j
}

func (s *Sim) octGet(coll, id, poolID string) (map[string]any, error) {
	o := s.oct()
	switch coll {
	case "loadbalancers":
		if lb := o.lbs[id]; lb != nil {
			return s.lbJSON(lb), nil
		}
		return nil, octErr(404, "Load Balancer %s could not be found.", id)
	case "listeners":
		if l := o.listeners[id]; l != nil {
			return s.listenerJSON(l), nil
		}
		return nil, octErr(404, "Listener %s could not be found.", id)
	case "pools":
		if p := o.pools[id]; p != nil {
			return s.poolJSON(p), nil
		}
		return nil, octErr(404, "Pool %s could not be found.", id)
	case "members":
		if m := o.members[id]; m != nil && m.poolID == poolID {
			return s.memberJSON(m), nil
		}
		return nil, octErr(404, "Member %s not found.", id)
	case "healthmonitors":
		if hm := o.monitors[id]; hm != nil {
			return s.monitorJSON(hm), nil
		}
		return nil, octErr(404, "Health Monitor %s not found.", id)
	}
	return nil, octErr(404, "The resource could not be found.")
}

func (s *Sim) octList(coll, poolID string) ([]map[string]any, error) {
	o := s.oct()
	var out []map[string]any
	switch coll {
	case "loadbalancers":
		for _, lb := range o.lbs {
			out = append(out, s.lbJSON(lb))
		}
	case "listeners":
		for _, l := range o.listeners {
			out = append(out, s.listenerJSON(l))
		}
	case "pools":
		for _, p := range o.pools {
			out = append(out, s.poolJSON(p))
		}
	case "members":
		p := o.pools[poolID]
		if p == nil {
			return nil, octErr(404, "Pool %s could not be found.", poolID)
		}
		for _, mid := range p.members {
			out = append(out, s.memberJSON(o.members[mid]))
		}
	case "healthmonitors":
		for _, hm := range o.monitors {
			out = append(out, s.monitorJSON(hm))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ci, cj := fmt.Sprint(out[i]["created_at"]), fmt.Sprint(out[j]["created_at"])
		if ci != cj {
			return ci < cj
		}
		return out[i]["id"].(string) < out[j]["id"].(string)
	})
	return out, nil
}

// statusTree is GET /loadbalancers/{id}/status.
func (s *Sim) statusTree(lb *loadBalancer) map[string]any {
	o := s.oct()
	st := func(c *lbCommon) map[string]any {
		return map[string]any{"id": c.id, "name": c.name, "provisioning_status": c.prov, "operating_status": c.op}
	}
	var listeners []any
	for _, l := range o.listeners {
		if l.lbID != lb.id {
			continue
		}
		lj := st(&l.lbCommon)
		var pools []any
		for _, p := range o.pools {
			if p.listenerID != l.id {
				continue
			}
			pj := st(&p.lbCommon)
			var members []any
			for _, mid := range p.members {
				m := o.members[mid]
				mj := st(&m.lbCommon)
				mj["address"], mj["protocol_port"] = m.address.String(), m.port
				members = append(members, mj)
			}
			pj["members"] = orDefault(members, []any{})
			if hm := o.monitors[p.monitorID]; hm != nil {
				hj := st(&hm.lbCommon)
				hj["type"] = hm.typ
				pj["health_monitor"] = hj
			}
			pools = append(pools, pj)
		}
		lj["pools"] = orDefault(pools, []any{})
		listeners = append(listeners, lj)
	}
	lbj := st(&lb.lbCommon)
	lbj["listeners"] = orDefault(listeners, []any{})
	return map[string]any{"statuses": map[string]any{"loadbalancer": lbj}}
}

// ---- API ----

func octaviaErr(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = octErr(500, "%v", err)
	}
	writeJSON(w, ae.code, map[string]any{"faultcode": ae.typ, "faultstring": ae.msg, "debuginfo": nil})
}

var octaviaCollections = map[string]string{"loadbalancers": "loadbalancer", "listeners": "listener", "pools": "pool",
	"healthmonitors": "healthmonitor", "members": "member"}

// serveOctavia serves /load-balancer: the version document and
// /v2/lbaas/{loadbalancers,listeners,pools,pools/{id}/members,healthmonitors}
// (also under /v2.0).
func (s *Sim) serveOctavia(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	segs := pathSegments(r.URL.Path, "/load-balancer")
	if len(segs) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{"id": "v2.0", "status": "CURRENT",
			"updated": "2023-08-01T00:00:00Z", "links": []any{map[string]any{"href": base + "/load-balancer/v2", "rel": "self"}}}}})
		return
	}
	if segs[0] != "v2" && segs[0] != "v2.0" {
		octaviaErr(w, octErr(404, "The resource could not be found."))
		return
	}
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	project := tok.account.ProjectID
	segs = segs[1:]
	if len(segs) == 0 || segs[0] != "lbaas" {
		octaviaErr(w, octErr(404, "The resource could not be found."))
		return
	}
	segs = segs[1:]
	var coll, id, poolID, sub string
	switch {
	case len(segs) >= 3 && segs[0] == "pools" && segs[2] == "members":
		coll, poolID = "members", segs[1]
		if len(segs) == 4 {
			id = segs[3]
		} else if len(segs) > 4 {
			coll = ""
		}
	case len(segs) == 1 || len(segs) == 2:
		coll = segs[0]
		if len(segs) == 2 {
			id = segs[1]
		}
	case len(segs) == 3 && segs[0] == "loadbalancers" && (segs[2] == "status" || segs[2] == "stats"):
		coll, id, sub = segs[0], segs[1], segs[2]
	}
	one, known := octaviaCollections[coll]
	if !known {
		octaviaErr(w, octErr(404, "The resource could not be found."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	plural := coll
	switch {
	case sub != "":
		if r.Method != http.MethodGet {
			octaviaErr(w, octErr(405, "The method is not allowed for the requested URL."))
			return
		}
		lb := s.oct().lbs[id]
		if lb == nil {
			octaviaErr(w, octErr(404, "Load Balancer %s could not be found.", id))
			return
		}
		if sub == "status" {
			writeJSON(w, http.StatusOK, s.statusTree(lb))
		} else {
			writeJSON(w, http.StatusOK, map[string]any{"stats": map[string]any{"active_connections": 0, "bytes_in": 0, "bytes_out": 0,
				"request_errors": 0, "total_connections": 0}})
		}
	case r.Method == http.MethodGet && id == "":
		items, err := s.octList(coll, poolID)
		if err != nil {
			octaviaErr(w, err)
			return
		}
		q := r.URL.Query()
		out := []map[string]any{}
		for _, it := range items {
			// Octavia filters listeners and pools by their load balancer
			// (the JSON has it as loadbalancers[].id, not a field).
			if lbIDs := q["loadbalancer_id"]; len(lbIDs) > 0 && (coll == "listeners" || coll == "pools") &&
				!slices.ContainsFunc(idsOf(it["loadbalancers"]), func(id string) bool { return slices.Contains(lbIDs, id) }) {
				continue
			}
			if matchNeutronFilters(it, q) {
				out = append(out, selectFields(it, q["fields"]))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{plural: out, plural + "_links": []any{}})
	case r.Method == http.MethodGet:
		item, err := s.octGet(coll, id, poolID)
		if err != nil {
			octaviaErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{one: selectFields(item, r.URL.Query()["fields"])})
	case r.Method == http.MethodPost && id == "":
		var body map[string]map[string]any
		if err := readJSON(r, &body); err != nil || body[one] == nil {
			octaviaErr(w, octErr(400, "Invalid input for field/attribute %s. Value: 'None'. Mandatory field missing.", one))
			return
		}
		b := body[one]
		var item map[string]any
		var err error
		switch coll {
		case "loadbalancers":
			var lb *loadBalancer
			if lb, err = s.createLB(project, b); err == nil {
				item = s.lbJSON(lb)
			}
		case "listeners":
			var l *lbListener
			if l, err = s.createListener(project, b); err == nil {
				item = s.listenerJSON(l)
			}
		case "pools":
			var p *lbPool
			if p, err = s.createPool(project, b); err == nil {
				item = s.poolJSON(p)
			}
		case "members":
			var m *lbMember
			if m, err = s.createMember(project, poolID, b); err == nil {
				item = s.memberJSON(m)
			}
		case "healthmonitors":
			var hm *lbMonitor
			if hm, err = s.createMonitor(project, b); err == nil {
				item = s.monitorJSON(hm)
			}
		}
		if err != nil {
			octaviaErr(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{one: item})
	case r.Method == http.MethodPut && id != "":
		var body map[string]map[string]any
		if err := readJSON(r, &body); err != nil || body[one] == nil {
			octaviaErr(w, octErr(400, "Invalid input for field/attribute %s. Value: 'None'. Mandatory field missing.", one))
			return
		}
		item, err := s.octUpdate(coll, id, poolID, body[one])
		if err != nil {
			octaviaErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{one: item})
	case r.Method == http.MethodDelete && id != "":
		cascade := r.URL.Query().Get("cascade") == "true" || r.URL.Query().Get("cascade") == "True"
		if err := s.octDelete(coll, id, poolID, cascade); err != nil {
			octaviaErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		octaviaErr(w, octErr(405, "The method is not allowed for the requested URL."))
	}
}

// ---- Heat ----

// octaviaWait waits until the load balancer is no longer pending (s.mu not
// held); gone reports it does not exist (any more).
func (s *Sim) octaviaWait(ctx context.Context, lbID string) (gone bool, err error) {
	for {
		s.mu.Lock()
		lb := s.oct().lbs[lbID]
		prov := ""
		if lb != nil {
			prov = lb.prov
		}
		s.mu.Unlock()
		switch {
		case lb == nil:
			return true, nil
		case prov == provActive:
			return false, nil
		case prov == "ERROR":
			return false, fmt.Errorf("Load Balancer %s is in ERROR", lbID)
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// octaviaRetry runs op until it is not refused for an immutable load
// balancer (Heat's Octavia resources retry on 409 the same way), then waits
// for the load balancer to settle.
func (s *Sim) octaviaRetry(ctx context.Context, op func() (lbID string, err error)) error {
	for {
		s.mu.Lock()
		lbID, err := op()
		s.mu.Unlock()
		if ae, ok := err.(*apiError); ok && ae.code == 409 && strings.Contains(ae.msg, "is immutable") {
			if err := sleep(ctx, 5*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		_, err = s.octaviaWait(ctx, lbID)
		return err
	}
}

func heatRef(p map[string]any, keys ...string) string {
	for _, k := range keys {
		if v := toString(p[k]); v != "" {
			return v
		}
	}
	return ""
}

// octParent finds an object's load balancer (and pool, for a member).
func (s *Sim) octParent(coll, id string) (lbID, poolID string, ok bool) {
	o := s.oct()
	switch coll {
	case "loadbalancers":
		if lb := o.lbs[id]; lb != nil {
			return lb.id, "", true
		}
	case "listeners":
		if l := o.listeners[id]; l != nil {
			return l.lbID, "", true
		}
	case "pools":
		if p := o.pools[id]; p != nil {
			return p.lbID, "", true
		}
	case "members":
		if m := o.members[id]; m != nil {
			return o.pools[m.poolID].lbID, m.poolID, true
		}
	case "healthmonitors":
		if hm := o.monitors[id]; hm != nil {
			return o.pools[hm.poolID].lbID, "", true
		}
	}
	return "", "", false
}

// octaviaHeatUpdate is the update of an Octavia Heat resource: replaced
// when a replaceOn property changed, else the changed properties (API key
// → Heat property) are sent once the load balancer is mutable.
func octaviaHeatUpdate(ctx context.Context, s *Sim, r *resource, old map[string]any, coll string, replaceOn []string, keys map[string]string) (bool, error) {
	if changed(old, r.props, replaceOn...) {
		return true, nil
	}
	b := map[string]any{}
	for k, src := range keys {
		if changed(old, r.props, src) {
			b[k] = r.props[src]
		}
	}
	if len(b) == 0 {
		return false, nil
	}
	return false, s.octaviaRetry(ctx, func() (string, error) {
		lbID, poolID, ok := s.octParent(coll, r.physID)
		if !ok {
			return "", octErr(404, "%s %s could not be found.", coll, r.physID)
		}
		_, err := s.octUpdate(coll, r.physID, poolID, b)
		return lbID, err
	})
}

// octaviaHeatDelete deletes an Octavia Heat resource's object (gone is done).
func octaviaHeatDelete(ctx context.Context, s *Sim, r *resource, coll string) error {
	s.mu.Lock()
	lbID, poolID, ok := s.octParent(coll, r.physID)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return octaviaDelete(ctx, s, lbID, func() error { return s.octDelete(coll, r.physID, poolID, false) }, coll == "loadbalancers")
}

// octaviaHeatAttr reads an attribute of an Octavia Heat resource's object.
func octaviaHeatAttr(s *Sim, r *resource, coll, name string) (any, error) {
	_, poolID, ok := s.octParent(coll, r.physID)
	if !ok {
		return nil, nil
	}
	j, err := s.octGet(coll, r.physID, poolID)
	if err != nil {
		return nil, nil
	}
	j = normalize(roundTrip(j)).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type lbRes struct{}

func (lbRes) schema() ([]string, []string) {
	return []string{"vip_subnet", "vip_network", "vip_address", "name", "description", "provider", "admin_state_up", "flavor",
		"availability_zone", "tenant_id"}, nil
}

func (lbRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	b := map[string]any{"name": toString(p["name"]), "description": toString(p["description"]), "vip_address": toString(p["vip_address"]),
		"provider": toString(p["provider"]), "flavor_id": toString(p["flavor"]), "availability_zone": toString(p["availability_zone"])}
	if b["name"] == "" {
		b["name"] = physicalName(r)
	}
	if v, ok := p["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	b["vip_subnet_id"], b["vip_network_id"] = toString(p["vip_subnet"]), toString(p["vip_network"])
	if b["vip_subnet_id"] == "" && b["vip_network_id"] == "" {
		return validationErr("Property error: OS::Octavia::LoadBalancer.properties: At least one of the following properties must be specified: vip_subnet, vip_network.")
	}
	return s.octaviaRetry(ctx, func() (string, error) {
		lb, err := s.createLB(r.st.project, b)
		if err != nil {
			return "", err
		}
		r.physID = lb.id
		return lb.id, nil
	})
}

func (lbRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	return octaviaHeatUpdate(ctx, s, r, old, "loadbalancers", []string{"vip_subnet", "vip_network", "vip_address", "provider", "flavor", "availability_zone"},
		map[string]string{"name": "name", "description": "description", "admin_state_up": "admin_state_up"})
}

func (lbRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return octaviaHeatDelete(ctx, s, r, "loadbalancers")
}

// octaviaDelete deletes an object (retrying while its load balancer is
// immutable; already gone is done) and waits for the deletion to settle.
func octaviaDelete(ctx context.Context, s *Sim, lbID string, del func() error, wholeLB bool) error {
	for {
		s.mu.Lock()
		err := del()
		s.mu.Unlock()
		if ae, ok := err.(*apiError); ok && ae.code == 404 {
			return nil
		}
		if ae, ok := err.(*apiError); ok && ae.code == 409 && strings.Contains(ae.msg, "is immutable") {
			if err := sleep(ctx, 5*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if !wholeLB {
		_, err := s.octaviaWait(ctx, lbID)
		return err
	}
	for {
		if gone, err := s.octaviaWait(ctx, lbID); gone || err != nil {
			return err
		}
	}
}

func (lbRes) attr(s *Sim, r *resource, name string) (any, error) {
	return octaviaHeatAttr(s, r, "loadbalancers", name)
}

type listenerRes struct{}

func (listenerRes) schema() ([]string, []string) {
	return []string{"loadbalancer", "protocol", "protocol_port", "default_pool", "name", "description", "admin_state_up",
		"connection_limit", "default_tls_container_ref", "sni_container_refs", "tenant_id", "allowed_cidrs"}, []string{"protocol", "protocol_port"}
}

func (listenerRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	ref := heatRef(p, "loadbalancer")
	if ref == "" {
		return validationErr("Property error: OS::Octavia::Listener.properties: Property loadbalancer not assigned")
	}
	b := map[string]any{"name": cmpOr(toString(p["name"]), physicalName(r)), "description": toString(p["description"]),
		"protocol": toString(p["protocol"]), "protocol_port": p["protocol_port"], "connection_limit": p["connection_limit"],
		"allowed_cidrs": p["allowed_cidrs"], "default_pool_id": toString(p["default_pool"])}
	if v, ok := p["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	return s.octaviaRetry(ctx, func() (string, error) {
		lb, err := s.lbOf(ref)
		if err != nil {
			return "", err
		}
		b["loadbalancer_id"] = lb.id
		l, err := s.createListener(r.st.project, b)
		if err != nil {
			return "", err
		}
		r.physID = l.id
		return l.lbID, nil
	})
}

func (listenerRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	return octaviaHeatUpdate(ctx, s, r, old, "listeners", []string{"loadbalancer", "protocol", "protocol_port"}, map[string]string{"name": "name", "description": "description", "admin_state_up": "admin_state_up",
		"connection_limit": "connection_limit", "allowed_cidrs": "allowed_cidrs", "default_pool_id": "default_pool"})
}

func (listenerRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return octaviaHeatDelete(ctx, s, r, "listeners")
}

func (listenerRes) attr(s *Sim, r *resource, name string) (any, error) {
	return octaviaHeatAttr(s, r, "listeners", name)
}

type poolRes struct{}

func (poolRes) schema() ([]string, []string) {
	return []string{"lb_algorithm", "protocol", "listener", "loadbalancer", "name", "description", "admin_state_up",
		"session_persistence", "tls_enabled"}, []string{"lb_algorithm", "protocol"}
}

func (poolRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	lref, bref := heatRef(p, "listener"), heatRef(p, "loadbalancer")
	if lref == "" && bref == "" {
		return validationErr("Property error: OS::Octavia::Pool.properties: At least one of the following properties must be specified: listener, loadbalancer.")
	}
	b := map[string]any{"name": cmpOr(toString(p["name"]), physicalName(r)), "description": toString(p["description"]),
		"protocol": toString(p["protocol"]), "lb_algorithm": toString(p["lb_algorithm"]), "session_persistence": p["session_persistence"]}
	if v, ok := p["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	return s.octaviaRetry(ctx, func() (string, error) {
		if lref != "" {
			l, err := s.listenerOf(lref)
			if err != nil {
				return "", err
			}
			b["listener_id"] = l.id
		} else {
			lb, err := s.lbOf(bref)
			if err != nil {
				return "", err
			}
			b["loadbalancer_id"] = lb.id
		}
		pl, err := s.createPool(r.st.project, b)
		if err != nil {
			return "", err
		}
		r.physID = pl.id
		return pl.lbID, nil
	})
}

func (poolRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	return octaviaHeatUpdate(ctx, s, r, old, "pools", []string{"listener", "loadbalancer", "protocol"}, map[string]string{"name": "name", "description": "description", "admin_state_up": "admin_state_up",
		"lb_algorithm": "lb_algorithm", "session_persistence": "session_persistence"})
}

func (poolRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return octaviaHeatDelete(ctx, s, r, "pools")
}

func (poolRes) attr(s *Sim, r *resource, name string) (any, error) {
	return octaviaHeatAttr(s, r, "pools", name)
}

type memberRes struct{}

func (memberRes) schema() ([]string, []string) {
	return []string{"pool", "address", "protocol_port", "subnet", "weight", "admin_state_up", "monitor_address", "monitor_port",
		"backup", "tags"}, []string{"pool", "address", "protocol_port"}
}

func (memberRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	b := map[string]any{"address": toString(p["address"]), "protocol_port": p["protocol_port"], "subnet_id": toString(p["subnet"]),
		"weight": p["weight"], "monitor_address": toString(p["monitor_address"]), "monitor_port": p["monitor_port"], "tags": p["tags"]}
	if v, ok := p["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	if v, ok := p["backup"]; ok {
		b["backup"] = v
	}
	ref := toString(p["pool"])
	return s.octaviaRetry(ctx, func() (string, error) {
		pl, err := s.poolOf(ref)
		if err != nil {
			return "", err
		}
		m, err := s.createMember(r.st.project, pl.id, b)
		if err != nil {
			return "", err
		}
		r.physID = m.id
		return pl.lbID, nil
	})
}

func (memberRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	return octaviaHeatUpdate(ctx, s, r, old, "members", []string{"pool", "address", "protocol_port", "subnet"}, map[string]string{"weight": "weight", "admin_state_up": "admin_state_up", "backup": "backup"})
}

func (memberRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return octaviaHeatDelete(ctx, s, r, "members")
}

func (memberRes) attr(s *Sim, r *resource, name string) (any, error) {
	return octaviaHeatAttr(s, r, "members", name)
}

type monitorRes struct{}

func (monitorRes) schema() ([]string, []string) {
	return []string{"pool", "type", "delay", "timeout", "max_retries", "max_retries_down", "http_method", "url_path",
		"expected_codes", "admin_state_up", "http_version", "domain_name", "tenant_id"}, []string{"pool", "type", "delay", "timeout", "max_retries"}
}

func (monitorRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	b := map[string]any{"type": toString(p["type"]), "delay": p["delay"], "timeout": p["timeout"], "max_retries": p["max_retries"],
		"max_retries_down": p["max_retries_down"], "http_method": toString(p["http_method"]), "url_path": toString(p["url_path"]),
		"expected_codes": toString(p["expected_codes"])}
	if v, ok := p["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	ref := toString(p["pool"])
	return s.octaviaRetry(ctx, func() (string, error) {
		pl, err := s.poolOf(ref)
		if err != nil {
			return "", err
		}
		b["pool_id"] = pl.id
		hm, err := s.createMonitor(r.st.project, b)
		if err != nil {
			return "", err
		}
		r.physID = hm.id
		return pl.lbID, nil
	})
}

func (monitorRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	return octaviaHeatUpdate(ctx, s, r, old, "healthmonitors", []string{"pool", "type"}, map[string]string{"delay": "delay", "timeout": "timeout", "max_retries": "max_retries",
		"max_retries_down": "max_retries_down", "http_method": "http_method", "url_path": "url_path", "expected_codes": "expected_codes",
		"admin_state_up": "admin_state_up"})
}

func (monitorRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return octaviaHeatDelete(ctx, s, r, "healthmonitors")
}

func (monitorRes) attr(s *Sim, r *resource, name string) (any, error) {
	return octaviaHeatAttr(s, r, "healthmonitors", name)
}
