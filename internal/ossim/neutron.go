package ossim

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// apiError is an error with an HTTP status and a service-specific type name
// (Neutron's NeutronError.type, Heat's error.type).
type apiError struct {
	code int
	typ  string
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errf(code int, typ, format string, args ...any) *apiError {
	return &apiError{code: code, typ: typ, msg: fmt.Sprintf(format, args...)}
}

type network struct {
	id, name, project string
	subnets           []string
	external, shared  bool
	hostBacked        bool
	portSecurity      bool
	created, updated  time.Time
	revision          int
	segID             int
}

type ipPool struct{ start, end netip.Addr }

type subnet struct {
	id, name, networkID, project string
	cidr                         netip.Prefix
	gateway                      netip.Addr
	pools                        []ipPool
	enableDHCP                   bool
	created, updated             time.Time
	revision                     int
}

type fixedIP struct {
	subnetID string
	ip       netip.Addr
}

type addrPair struct{ ip, mac string }

type port struct {
	id, name, networkID, project string
	mac                          string
	fixed                        []fixedIP
	pairs                        []addrPair
	deviceID, deviceOwner        string
	status                       string
	sgs                          []string
	portSecurity                 bool
	vnicType                     string
	hostID                       string
	description                  string
	tags                         []string // the tag extension
	created, updated             time.Time
	revision                     int
}

type floatingIP struct {
	id, networkID, project string
	addr                   netip.Addr
	portID                 string
	fixedIP                netip.Addr
	description            string
	created, updated       time.Time
	revision               int
}

type secGroup struct {
	id, name, description, project string
	rules                          []*sgRule
	created, updated               time.Time
	revision                       int
}

type sgRule struct {
	id, groupID, direction, ethertype, protocol string
	portMin, portMax                            *int
	remoteIP, remoteGroup, description          string
	created                                     time.Time
}

// addNetwork creates a network with one subnet from a spec (s.mu held or
// during New).
func (s *Sim) addNetwork(ns NetworkSpec) (*network, error) {
	pfx, err := netip.ParsePrefix(ns.CIDR)
	if err != nil || !pfx.Addr().Is4() || pfx.Bits() > 29 {
		return nil, fmt.Errorf("ossim: network %s: invalid CIDR %q", ns.Name, ns.CIDR)
	}
	if ns.ID == "" {
		ns.ID = uuid.NewString()
	}
	now := s.now()
	n := &network{id: ns.ID, name: ns.Name, project: s.accounts[0].ProjectID, external: ns.External, shared: ns.Shared,
		portSecurity: true, created: now, updated: now, revision: 1, segID: 100 + len(s.nets)}
	s.nets[n.id] = n
	if _, err := s.addSubnet(n, ns.Name+"-subnet", pfx.Masked(), netip.Addr{}, nil, n.project); err != nil {
		return nil, err
	}
	return n, nil
}

func (s *Sim) addSubnet(n *network, name string, cidr netip.Prefix, gw netip.Addr, pools []ipPool, project string) (*subnet, error) {
	if !gw.IsValid() {
		gw = cidr.Addr().Next()
	}
	if !cidr.Contains(gw) {
		return nil, errf(400, "InvalidInput", "Invalid input for operation: Gateway IP %s is not in subnet %s.", gw, cidr)
	}
	for _, other := range n.subnets {
		if o := s.subnets[other]; o != nil && o.cidr.Overlaps(cidr) {
			return nil, errf(400, "InvalidInput", "Invalid input for operation: Requested subnet with cidr: %s for network: %s overlaps with another subnet.", cidr, n.id)
		}
	}
	if len(pools) == 0 {
		// Everything but the network address, the gateway and broadcast.
		first, last := cidr.Addr().Next(), lastAddr(cidr).Prev()
		if gw == first {
			first = first.Next()
		}
		pools = []ipPool{{first, last}}
	}
	now := s.now()
	sn := &subnet{id: uuid.NewString(), name: name, networkID: n.id, project: project, cidr: cidr, gateway: gw,
		pools: pools, enableDHCP: true, created: now, updated: now, revision: 0}
	s.subnets[sn.id] = sn
	n.subnets = append(n.subnets, sn.id)
	return sn, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// findNetwork looks a network up by id, then by name (s.mu held).
func (s *Sim) findNetwork(ref string) (*network, error) {
	if n := s.nets[ref]; n != nil {
		return n, nil
	}
	var found []*network
	for _, n := range s.nets {
		if n.name == ref {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return nil, errf(404, "NetworkNotFound", "Network %s could not be found.", ref)
	case 1:
		return found[0], nil
	}
	return nil, errf(409, "NeutronClientNoUniqueMatch", "Multiple network matches found for name '%s', use an ID to be more specific.", ref)
}

func (s *Sim) findSubnet(ref string) (*subnet, error) {
	if sn := s.subnets[ref]; sn != nil {
		return sn, nil
	}
	for _, sn := range s.subnets {
		if sn.name == ref {
			return sn, nil
		}
	}
	return nil, errf(404, "SubnetNotFound", "Subnet %s could not be found.", ref)
}

func (s *Sim) ipInUse(sn *subnet, ip netip.Addr) bool {
	if ip == sn.gateway {
		return true
	}
	for _, p := range s.ports {
		for _, f := range p.fixed {
			if f.subnetID == sn.id && f.ip == ip {
				return true
			}
		}
	}
	for _, f := range s.fips {
		if f.addr == ip && f.networkID == sn.networkID {
			return true
		}
	}
	return false
}

func (s *Sim) allocateIP(n *network, sn *subnet, want netip.Addr) (netip.Addr, error) {
	if want.IsValid() {
		if !sn.cidr.Contains(want) || want == sn.cidr.Addr() || want == lastAddr(sn.cidr) {
			return netip.Addr{}, errf(400, "InvalidIpForSubnet", "IP address %s is not a valid IP for the specified subnet.", want)
		}
		if s.ipInUse(sn, want) {
			return netip.Addr{}, errf(409, "IpAddressAlreadyAllocated", "IP address %s already allocated in subnet %s", want, sn.id)
		}
		return want, nil
	}
	for _, pl := range sn.pools {
		for a := pl.start; a.Compare(pl.end) <= 0; a = a.Next() {
			if !s.ipInUse(sn, a) {
				return a, nil
			}
		}
	}
	return netip.Addr{}, errf(409, "IpAddressGenerationFailure", "No more IP addresses available on network %s.", n.id)
}

// portRequest is a port create request (API or Heat).
type portRequest struct {
	NetworkID    string
	Name         string
	FixedIPs     []map[string]any // {subnet_id|subnet, ip_address}
	Pairs        []addrPair
	DeviceID     string
	DeviceOwner  string
	MAC          string
	SecGroups    *[]string
	PortSecurity *bool
	VnicType     string
	Description  string
}

func (s *Sim) defaultSecGroup(project string) *secGroup {
	for _, g := range s.sgroups {
		if g.name == "default" && g.project == project {
			return g
		}
	}
	now := s.now()
	g := &secGroup{id: uuid.NewString(), name: "default", description: "Default security group", project: project, created: now, updated: now}
	for _, et := range []string{"IPv4", "IPv6"} {
		g.rules = append(g.rules,
			&sgRule{id: uuid.NewString(), groupID: g.id, direction: "egress", ethertype: et, created: now},
			&sgRule{id: uuid.NewString(), groupID: g.id, direction: "ingress", ethertype: et, remoteGroup: g.id, created: now})
	}
	s.sgroups[g.id] = g
	return g
}

// createPort creates a port (s.mu held).
func (s *Sim) createPort(project string, req portRequest) (*port, error) {
	n, err := s.findNetwork(req.NetworkID)
	if err != nil {
		return nil, err
	}
	if q := s.faults.MaxPorts; q > 0 {
		used := 0
		for _, p := range s.ports {
			if p.project == project {
				used++
			}
		}
		if used >= q {
			return nil, errf(409, "OverQuota", "Quota exceeded for resources: ['port'].")
		}
	}
	now := s.now()
	p := &port{id: uuid.NewString(), name: req.Name, networkID: n.id, project: project, mac: req.MAC,
		deviceID: req.DeviceID, deviceOwner: req.DeviceOwner, status: "DOWN", portSecurity: n.portSecurity,
		vnicType: "normal", description: req.Description, created: now, updated: now, revision: 1}
	if p.mac == "" {
		p.mac = randomMAC()
	}
	if req.VnicType != "" {
		p.vnicType = req.VnicType
	}
	if req.PortSecurity != nil {
		p.portSecurity = *req.PortSecurity
	}
	if req.SecGroups != nil {
		for _, ref := range *req.SecGroups {
			g, err := s.findSecGroup(ref)
			if err != nil {
				return nil, err
			}
			p.sgs = append(p.sgs, g.id)
		}
	} else if p.portSecurity {
		p.sgs = []string{s.defaultSecGroup(project).id}
	}
	fixed, err := s.allocFixed(n, req.FixedIPs)
	if err != nil {
		return nil, err
	}
	p.fixed = fixed
	if len(req.Pairs) > 0 {
		if !p.portSecurity {
			return nil, errf(409, "AddressPairAndPortSecurityRequired", "Port Security must be enabled in order to have allowed address pairs on a port.")
		}
		p.pairs = req.Pairs
	}
	if p.deviceID != "" {
		p.status = "ACTIVE"
	}
	s.ports[p.id] = p
	return p, nil
}

// allocFixed turns requested fixed_ips into allocations; none requested =
// one address from the network's first subnet.
func (s *Sim) allocFixed(n *network, reqs []map[string]any) ([]fixedIP, error) {
	if len(reqs) == 0 {
		if len(n.subnets) == 0 {
			return nil, nil
		}
		sn := s.subnets[n.subnets[0]]
		ip, err := s.allocateIP(n, sn, netip.Addr{})
		if err != nil {
			return nil, err
		}
		return []fixedIP{{sn.id, ip}}, nil
	}
	var out []fixedIP
	for _, fr := range reqs {
		var sn *subnet
		ref, _ := fr["subnet_id"].(string)
		if ref == "" {
			ref, _ = fr["subnet"].(string)
		}
		var want netip.Addr
		if ipStr, _ := fr["ip_address"].(string); ipStr != "" {
			a, err := netip.ParseAddr(ipStr)
			if err != nil {
				return nil, errf(400, "InvalidInput", "Invalid input for operation: '%s' is not a valid IP address.", ipStr)
			}
			want = a
		}
		if ref != "" {
			x, err := s.findSubnet(ref)
			if err != nil {
				return nil, err
			}
			if x.networkID != n.id {
				return nil, errf(400, "InvalidInput", "Invalid input for operation: Failed to create port on network %s, because fixed_ips included invalid subnet %s.", n.id, x.id)
			}
			sn = x
		} else {
			for _, id := range n.subnets {
				if x := s.subnets[id]; x != nil && (!want.IsValid() || x.cidr.Contains(want)) {
					sn = x
					break
				}
			}
			if sn == nil {
				return nil, errf(400, "InvalidIpForNetwork", "IP address %s is not a valid IP for any of the subnets on the specified network.", want)
			}
		}
		ip, err := s.allocateIP(n, sn, want)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.ip == ip {
				return nil, errf(409, "IpAddressAlreadyAllocated", "IP address %s already allocated in subnet %s", ip, sn.id)
			}
		}
		out = append(out, fixedIP{sn.id, ip})
	}
	return out, nil
}

func (s *Sim) findSecGroup(ref string) (*secGroup, error) {
	if g := s.sgroups[ref]; g != nil {
		return g, nil
	}
	for _, g := range s.sgroups {
		if g.name == ref {
			return g, nil
		}
	}
	return nil, errf(404, "SecurityGroupNotFound", "Security group %s does not exist", ref)
}

// deletePort removes a port and the floating IP association (s.mu held).
func (s *Sim) deletePort(id string) {
	delete(s.ports, id)
	for _, f := range s.fips {
		if f.portID == id {
			f.portID, f.fixedIP = "", netip.Addr{}
		}
	}
}

func (s *Sim) createFIP(project, netRef, portID string, fixed, want netip.Addr) (*floatingIP, error) {
	n, err := s.findNetwork(netRef)
	if err != nil {
		return nil, err
	}
	if !n.external {
		return nil, errf(400, "BadRequest", "Bad floatingip request: Network %s is not a valid external network.", n.id)
	}
	if len(n.subnets) == 0 {
		return nil, errf(409, "ExternalGatewayForFloatingIPNotFound", "No subnet on external network %s.", n.id)
	}
	sn := s.subnets[n.subnets[0]]
	addr, err := s.allocateIP(n, sn, want)
	if err != nil {
		return nil, err
	}
	now := s.now()
	f := &floatingIP{id: uuid.NewString(), networkID: n.id, project: project, addr: addr, created: now, updated: now, revision: 0}
	if err := s.associateFIP(f, portID, fixed); err != nil {
		return nil, err
	}
	s.fips[f.id] = f
	return f, nil
}

func (s *Sim) associateFIP(f *floatingIP, portID string, fixed netip.Addr) error {
	if portID == "" {
		f.portID, f.fixedIP = "", netip.Addr{}
		return nil
	}
	p := s.ports[portID]
	if p == nil {
		return errf(404, "PortNotFound", "Port %s could not be found.", portID)
	}
	if len(p.fixed) == 0 {
		return errf(400, "BadRequest", "Bad floatingip request: Port %s does not have any IP addresses.", portID)
	}
	if !fixed.IsValid() {
		fixed = p.fixed[0].ip
	} else if !slices.ContainsFunc(p.fixed, func(x fixedIP) bool { return x.ip == fixed }) {
		return errf(400, "BadRequest", "Bad floatingip request: Port %s does not have fixed ip %s.", portID, fixed)
	}
	f.portID, f.fixedIP = portID, fixed
	return nil
}

// ---- JSON ----

func (s *Sim) networkJSON(n *network) map[string]any {
	return map[string]any{
		"id": n.id, "name": n.name, "status": "ACTIVE", "subnets": append([]string{}, n.subnets...),
		"admin_state_up": true, "tenant_id": n.project, "project_id": n.project, "shared": n.shared,
		"router:external": n.external, "mtu": 1450, "port_security_enabled": n.portSecurity,
		"provider:network_type": "vxlan", "provider:physical_network": nil, "provider:segmentation_id": n.segID,
		"availability_zones": []string{"nova"}, "availability_zone_hints": []string{},
		"ipv4_address_scope": nil, "ipv6_address_scope": nil, "is_default": false,
		"description": "", "tags": []string{}, "created_at": novaTime(n.created), "updated_at": novaTime(n.updated),
		"revision_number": n.revision,
	}
}

func (s *Sim) subnetJSON(sn *subnet) map[string]any {
	pools := []any{}
	for _, p := range sn.pools {
		pools = append(pools, map[string]any{"start": p.start.String(), "end": p.end.String()})
	}
	return map[string]any{
		"id": sn.id, "name": sn.name, "network_id": sn.networkID, "tenant_id": sn.project, "project_id": sn.project,
		"cidr": sn.cidr.String(), "ip_version": 4, "gateway_ip": sn.gateway.String(), "allocation_pools": pools,
		"enable_dhcp": sn.enableDHCP, "dns_nameservers": []string{}, "host_routes": []any{},
		"ipv6_ra_mode": nil, "ipv6_address_mode": nil, "subnetpool_id": nil, "service_types": []string{},
		"description": "", "tags": []string{}, "created_at": novaTime(sn.created), "updated_at": novaTime(sn.updated),
		"revision_number": sn.revision,
	}
}

func (s *Sim) portJSON(p *port) map[string]any {
	fixed := []any{}
	for _, f := range p.fixed {
		fixed = append(fixed, map[string]any{"subnet_id": f.subnetID, "ip_address": f.ip.String()})
	}
	pairs := []any{}
	for _, ap := range p.pairs {
		mac := ap.mac
		if mac == "" {
			mac = p.mac
		}
		pairs = append(pairs, map[string]any{"ip_address": ap.ip, "mac_address": mac})
	}
	sgs := append([]string{}, p.sgs...)
	host := p.hostID
	vifType := "unbound"
	if host != "" {
		vifType = "ovs"
	}
	return map[string]any{
		"id": p.id, "name": p.name, "network_id": p.networkID, "tenant_id": p.project, "project_id": p.project,
		"mac_address": p.mac, "fixed_ips": fixed, "allowed_address_pairs": pairs, "extra_dhcp_opts": []any{},
		"device_id": p.deviceID, "device_owner": p.deviceOwner, "status": p.status, "admin_state_up": true,
		"security_groups": sgs, "port_security_enabled": p.portSecurity, "binding:vnic_type": p.vnicType,
		"binding:host_id": host, "binding:vif_type": vifType, "binding:vif_details": map[string]any{}, "binding:profile": map[string]any{},
		"description": p.description, "tags": append([]string{}, p.tags...), "propagate_uplink_status": false,
		"created_at": novaTime(p.created), "updated_at": novaTime(p.updated), "revision_number": p.revision,
	}
}

func (s *Sim) fipJSON(f *floatingIP) map[string]any {
	var portID, fixed any
	status := "DOWN"
	if f.portID != "" {
		portID, fixed, status = f.portID, f.fixedIP.String(), "ACTIVE"
	}
	return map[string]any{
		"id": f.id, "floating_ip_address": f.addr.String(), "floating_network_id": f.networkID, "router_id": nil,
		"port_id": portID, "fixed_ip_address": fixed, "status": status, "tenant_id": f.project, "project_id": f.project,
		"description": f.description, "tags": []string{}, "port_forwardings": []any{}, "qos_policy_id": nil,
		"created_at": novaTime(f.created), "updated_at": novaTime(f.updated), "revision_number": f.revision,
	}
}

func intOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func strOrNil(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func (s *Sim) ruleJSON(r *sgRule, project string) map[string]any {
	return map[string]any{
		"id": r.id, "security_group_id": r.groupID, "direction": r.direction, "ethertype": r.ethertype,
		"protocol": strOrNil(r.protocol), "port_range_min": intOrNil(r.portMin), "port_range_max": intOrNil(r.portMax),
		"remote_ip_prefix": strOrNil(r.remoteIP), "remote_group_id": strOrNil(r.remoteGroup), "description": r.description,
		"tenant_id": project, "project_id": project, "created_at": novaTime(r.created), "updated_at": novaTime(r.created),
		"revision_number": 0, "tags": []string{},
	}
}

func (s *Sim) sgJSON(g *secGroup) map[string]any {
	rules := []any{}
	for _, r := range g.rules {
		rules = append(rules, s.ruleJSON(r, g.project))
	}
	return map[string]any{
		"id": g.id, "name": g.name, "description": g.description, "tenant_id": g.project, "project_id": g.project,
		"security_group_rules": rules, "stateful": true, "tags": []string{},
		"created_at": novaTime(g.created), "updated_at": novaTime(g.updated), "revision_number": g.revision,
	}
}

// servePortTags is Neutron's tag extension for ports: GET and PUT (replace)
// /ports/{id}/tags, PUT and DELETE /ports/{id}/tags/{tag}.
func (s *Sim) servePortTags(w http.ResponseWriter, r *http.Request, id string, rest []string) {
	if _, ok := s.authenticate(w, r); !ok {
		return
	}
	var body struct {
		Tags []string `json:"tags"`
	}
	if r.Method == http.MethodPut && len(rest) == 0 {
		if err := readJSON(r, &body); err != nil {
			neutronErr(w, errf(400, "BadRequest", "Invalid input: %v", err))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.ports[id]
	if p == nil {
		neutronErr(w, errf(404, "PortNotFound", "Port %s could not be found.", id))
		return
	}
	switch {
	case r.Method == http.MethodGet && len(rest) == 0:
	case r.Method == http.MethodPut && len(rest) == 0:
		p.tags = slices.Compact(slices.Sorted(slices.Values(body.Tags)))
	case r.Method == http.MethodPut && len(rest) == 1:
		if !slices.Contains(p.tags, rest[0]) {
			p.tags = append(p.tags, rest[0])
		}
		w.WriteHeader(http.StatusCreated)
		return
	case r.Method == http.MethodDelete && len(rest) == 1:
		if !slices.Contains(p.tags, rest[0]) {
			neutronErr(w, errf(404, "TagNotFound", "Tag %s could not be found.", rest[0]))
			return
		}
		p.tags = slices.DeleteFunc(p.tags, func(t string) bool { return t == rest[0] })
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		neutronErr(w, errf(405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL."))
		return
	}
	p.updated = s.now()
	writeJSON(w, http.StatusOK, map[string]any{"tags": append([]string{}, p.tags...)})
}

// ---- API ----

func neutronErr(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = errf(500, "InternalServerError", "%v", err)
	}
	writeJSON(w, ae.code, map[string]any{"NeutronError": map[string]any{"type": ae.typ, "message": ae.msg, "detail": ""}})
}

var neutronCollections = map[string]string{
	"networks": "network", "subnets": "subnet", "ports": "port", "floatingips": "floatingip",
	"security-groups": "security_group", "security-group-rules": "security_group_rule", "routers": "router",
}

func (s *Sim) serveNeutron(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	segs := pathSegments(r.URL.Path, "/networking")
	if len(segs) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
			"status": "CURRENT", "id": "v2.0", "links": []any{map[string]any{"href": base + "/networking/v2.0/", "rel": "self"}}}}})
		return
	}
	if segs[0] != "v2.0" {
		neutronErr(w, errf(404, "HTTPNotFound", "The resource could not be found."))
		return
	}
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	project := tok.account.ProjectID
	segs = segs[1:]
	if len(segs) == 0 {
		var res []any
		for c, one := range neutronCollections {
			res = append(res, map[string]any{"name": one, "collection": c, "links": []any{map[string]any{"href": base + "/networking/v2.0/" + c, "rel": "self"}}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"resources": res})
		return
	}
	if segs[0] == "extensions" {
		var exts []any
		for _, a := range []string{"allowed-address-pairs", "binding", "external-net", "port-security", "router", "security-group", "quotas", "standard-attr-revisions", "standard-attr-timestamp", "standard-attr-tag"} {
			exts = append(exts, map[string]any{"alias": a, "name": a, "description": a, "updated": "2013-01-01T00:00:00-00:00", "links": []any{}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"extensions": exts})
		return
	}
	coll := strings.TrimSuffix(segs[0], ".json")
	if coll == "routers" && len(segs) == 3 {
		s.serveRouterAction(w, r, segs[1], strings.TrimSuffix(segs[2], ".json"))
		return
	}
	if coll == "ports" && len(segs) >= 3 && segs[2] == "tags" {
		s.servePortTags(w, r, segs[1], segs[3:])
		return
	}
	one, known := neutronCollections[coll]
	if !known || len(segs) > 2 {
		neutronErr(w, errf(404, "HTTPNotFound", "The resource could not be found."))
		return
	}
	id := ""
	if len(segs) == 2 {
		id = segs[1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && id == "":
		items := s.neutronList(coll, project)
		s.writeNeutronList(w, r, base, coll, items)
	case r.Method == http.MethodGet:
		item, err := s.neutronGet(coll, id)
		if err != nil {
			neutronErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{one: selectFields(item, r.URL.Query()["fields"])})
	case r.Method == http.MethodPost && id == "":
		var body map[string]map[string]any
		if err := readJSON(r, &body); err != nil || body[one] == nil {
			neutronErr(w, errf(400, "BadRequest", "Bad %s request: Resource body required.", one))
			return
		}
		item, err := s.neutronCreate(coll, project, body[one])
		if err != nil {
			neutronErr(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{one: item})
	case r.Method == http.MethodPut && id != "":
		var body map[string]map[string]any
		if err := readJSON(r, &body); err != nil || body[one] == nil {
			neutronErr(w, errf(400, "BadRequest", "Bad %s request: Resource body required.", one))
			return
		}
		item, err := s.neutronUpdate(coll, id, body[one])
		if err != nil {
			neutronErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{one: item})
	case r.Method == http.MethodDelete && id != "":
		if err := s.neutronDelete(coll, id); err != nil {
			neutronErr(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		neutronErr(w, errf(405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL."))
	}
}

func (s *Sim) neutronList(coll, project string) []map[string]any {
	var items []map[string]any
	switch coll {
	case "routers":
		for _, r := range s.routerTable() {
			items = append(items, s.routerJSON(r))
		}
	case "networks":
		for _, n := range s.nets {
			if n.shared || n.external || n.project == project {
				items = append(items, s.networkJSON(n))
			}
		}
	case "subnets":
		for _, sn := range s.subnets {
			items = append(items, s.subnetJSON(sn))
		}
	case "ports":
		for _, p := range s.ports {
			items = append(items, s.portJSON(p))
		}
	case "floatingips":
		for _, f := range s.fips {
			items = append(items, s.fipJSON(f))
		}
	case "security-groups":
		s.defaultSecGroup(project)
		for _, g := range s.sgroups {
			items = append(items, s.sgJSON(g))
		}
	case "security-group-rules":
		for _, g := range s.sgroups {
			for _, rl := range g.rules {
				items = append(items, s.ruleJSON(rl, g.project))
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		ci, cj := fmt.Sprint(items[i]["created_at"]), fmt.Sprint(items[j]["created_at"])
		if ci != cj {
			return ci < cj
		}
		return items[i]["id"].(string) < items[j]["id"].(string)
	})
	return items
}

// writeNeutronList applies Neutron's generic filters (any attribute=value,
// fixed_ips=ip_address=..., fields=, limit/marker) and writes the page.
func (s *Sim) writeNeutronList(w http.ResponseWriter, r *http.Request, base, coll string, items []map[string]any) {
	q := r.URL.Query()
	var out []map[string]any
	for _, it := range items {
		if matchNeutronFilters(it, q) {
			out = append(out, it)
		}
	}
	key := strings.ReplaceAll(coll, "-", "_")
	resp := map[string]any{}
	if marker := q.Get("marker"); marker != "" {
		for i, it := range out {
			if it["id"] == marker {
				out = out[i+1:]
				break
			}
		}
	}
	if lim, err := strconv.Atoi(q.Get("limit")); err == nil && lim > 0 && len(out) > lim {
		out = out[:lim]
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("marker", out[len(out)-1]["id"].(string))
		resp[key+"_links"] = []any{map[string]any{"rel": "next", "href": base + "/networking/v2.0/" + coll + "?" + nq.Encode()}}
	}
	list := make([]any, 0, len(out))
	for _, it := range out {
		list = append(list, selectFields(it, q["fields"]))
	}
	resp[key] = list
	writeJSON(w, http.StatusOK, resp)
}

func matchNeutronFilters(it map[string]any, q url.Values) bool {
	for k, vals := range q {
		switch k {
		case "fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse":
			continue
		case "tags", "tags-any", "not-tags", "not-tags-any":
			// The tag extension's filters: comma-separated lists, all
			// (tags) or any (tags-any) of them, or the negations.
			have, _ := it["tags"].([]string)
			var want []string
			for _, v := range vals {
				want = append(want, strings.Split(v, ",")...)
			}
			has := func(t string) bool { return slices.Contains(have, t) }
			var ok bool
			switch k {
			case "tags":
				ok = !slices.ContainsFunc(want, func(t string) bool { return !has(t) })
			case "tags-any":
				ok = slices.ContainsFunc(want, has)
			case "not-tags":
				ok = slices.ContainsFunc(want, func(t string) bool { return !has(t) })
			case "not-tags-any":
				ok = !slices.ContainsFunc(want, has)
			}
			if !ok {
				return false
			}
			continue
		case "fixed_ips":
			ok := false
			fixed, _ := it["fixed_ips"].([]any)
			for _, v := range vals {
				kv := strings.SplitN(v, "=", 2)
				if len(kv) != 2 {
					continue
				}
				for _, f := range fixed {
					if fm, _ := f.(map[string]any); fm != nil && fmt.Sprint(fm[kv[0]]) == kv[1] {
						ok = true
					}
				}
			}
			if !ok {
				return false
			}
			continue
		}
		v, present := it[k]
		if !present {
			continue // unknown filters are ignored, like Neutron does for some
		}
		sv := fmt.Sprint(v)
		if v == nil {
			sv = ""
		}
		if list, isList := v.([]string); isList {
			if !slices.ContainsFunc(vals, func(x string) bool { return slices.Contains(list, x) }) {
				return false
			}
			continue
		}
		if !slices.Contains(vals, sv) {
			return false
		}
	}
	return true
}

func selectFields(it map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return it
	}
	out := map[string]any{}
	for _, f := range fields {
		if v, ok := it[f]; ok {
			out[f] = v
		}
	}
	return out
}

func (s *Sim) neutronGet(coll, id string) (map[string]any, error) {
	switch coll {
	case "routers":
		if r := s.routerTable()[id]; r != nil {
			return s.routerJSON(r), nil
		}
		return nil, errf(404, "RouterNotFound", "Router %s could not be found", id)
	case "networks":
		if n := s.nets[id]; n != nil {
			return s.networkJSON(n), nil
		}
		return nil, errf(404, "NetworkNotFound", "Network %s could not be found.", id)
	case "subnets":
		if sn := s.subnets[id]; sn != nil {
			return s.subnetJSON(sn), nil
		}
		return nil, errf(404, "SubnetNotFound", "Subnet %s could not be found.", id)
	case "ports":
		if p := s.ports[id]; p != nil {
			return s.portJSON(p), nil
		}
		return nil, errf(404, "PortNotFound", "Port %s could not be found.", id)
	case "floatingips":
		if f := s.fips[id]; f != nil {
			return s.fipJSON(f), nil
		}
		return nil, errf(404, "FloatingIPNotFound", "Floating IP %s could not be found", id)
	case "security-groups":
		if g := s.sgroups[id]; g != nil {
			return s.sgJSON(g), nil
		}
		return nil, errf(404, "SecurityGroupNotFound", "Security group %s does not exist", id)
	case "security-group-rules":
		for _, g := range s.sgroups {
			for _, rl := range g.rules {
				if rl.id == id {
					return s.ruleJSON(rl, g.project), nil
				}
			}
		}
		return nil, errf(404, "SecurityGroupRuleNotFound", "Security group rule %s does not exist", id)
	}
	return nil, errf(404, "HTTPNotFound", "The resource could not be found.")
}

func str(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return v
}

func boolPtr(m map[string]any, k string) *bool {
	if v, ok := m[k].(bool); ok {
		return &v
	}
	return nil
}

func listOfMaps(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func parsePairs(v any) []addrPair {
	var out []addrPair
	for _, m := range listOfMaps(v) {
		out = append(out, addrPair{ip: str(m, "ip_address"), mac: str(m, "mac_address")})
	}
	return out
}

func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		var out []string
		for _, x := range l {
			out = append(out, fmt.Sprint(x))
		}
		return out
	case string:
		if l == "" {
			return nil
		}
		return []string{l}
	}
	return nil
}

func (s *Sim) neutronCreate(coll, project string, b map[string]any) (map[string]any, error) {
	now := s.now()
	switch coll {
	case "routers":
		r, err := s.createRouter(project, b)
		if err != nil {
			return nil, err
		}
		return s.routerJSON(r), nil
	case "networks":
		n := &network{id: uuid.NewString(), name: str(b, "name"), project: project, portSecurity: true,
			created: now, updated: now, revision: 1, segID: 100 + len(s.nets)}
		if v := boolPtr(b, "shared"); v != nil {
			n.shared = *v
		}
		if v := boolPtr(b, "router:external"); v != nil {
			n.external = *v
		}
		if v := boolPtr(b, "port_security_enabled"); v != nil {
			n.portSecurity = *v
		}
		s.nets[n.id] = n
		return s.networkJSON(n), nil
	case "subnets":
		n, err := s.findNetwork(str(b, "network_id"))
		if err != nil {
			return nil, err
		}
		cidr, err := netip.ParsePrefix(str(b, "cidr"))
		if err != nil || !cidr.Addr().Is4() || cidr.Bits() > 30 {
			return nil, errf(400, "InvalidInput", "Invalid input for cidr. Reason: '%s' is not a valid IPv4 subnet.", str(b, "cidr"))
		}
		var gw netip.Addr
		if g := str(b, "gateway_ip"); g != "" {
			if gw, err = netip.ParseAddr(g); err != nil {
				return nil, errf(400, "InvalidInput", "Invalid input for gateway_ip. Reason: '%s' is not a valid IP address.", g)
			}
		}
		var pools []ipPool
		for _, pm := range listOfMaps(b["allocation_pools"]) {
			a, e1 := netip.ParseAddr(str(pm, "start"))
			z, e2 := netip.ParseAddr(str(pm, "end"))
			if e1 != nil || e2 != nil || !cidr.Contains(a) || !cidr.Contains(z) || z.Less(a) {
				return nil, errf(400, "InvalidAllocationPool", "The allocation pool %s-%s spans beyond the subnet cidr %s.", str(pm, "start"), str(pm, "end"), cidr)
			}
			pools = append(pools, ipPool{a, z})
		}
		sn, err := s.addSubnet(n, str(b, "name"), cidr.Masked(), gw, pools, project)
		if err != nil {
			return nil, err
		}
		if v := boolPtr(b, "enable_dhcp"); v != nil {
			sn.enableDHCP = *v
		}
		return s.subnetJSON(sn), nil
	case "ports":
		req := portRequest{NetworkID: str(b, "network_id"), Name: str(b, "name"), FixedIPs: listOfMaps(b["fixed_ips"]),
			Pairs: parsePairs(b["allowed_address_pairs"]), DeviceID: str(b, "device_id"), DeviceOwner: str(b, "device_owner"),
			MAC: str(b, "mac_address"), PortSecurity: boolPtr(b, "port_security_enabled"), VnicType: str(b, "binding:vnic_type"),
			Description: str(b, "description")}
		if req.NetworkID == "" {
			return nil, errf(400, "BadRequest", "Failed to parse request. Required attribute 'network_id' not specified")
		}
		if sg, ok := b["security_groups"]; ok {
			l := stringList(sg)
			req.SecGroups = &l
		}
		p, err := s.createPort(project, req)
		if err != nil {
			return nil, err
		}
		p.tags = stringList(b["tags"])
		return s.portJSON(p), nil
	case "floatingips":
		var fixed, want netip.Addr
		if v := str(b, "fixed_ip_address"); v != "" {
			fixed, _ = netip.ParseAddr(v)
		}
		if v := str(b, "floating_ip_address"); v != "" {
			want, _ = netip.ParseAddr(v)
		}
		f, err := s.createFIP(project, str(b, "floating_network_id"), str(b, "port_id"), fixed, want)
		if err != nil {
			return nil, err
		}
		f.description = str(b, "description")
		s.fipChanged(f)
		return s.fipJSON(f), nil
	case "security-groups":
		g := &secGroup{id: uuid.NewString(), name: str(b, "name"), description: str(b, "description"), project: project, created: now, updated: now}
		for _, et := range []string{"IPv4", "IPv6"} {
			g.rules = append(g.rules, &sgRule{id: uuid.NewString(), groupID: g.id, direction: "egress", ethertype: et, created: now})
		}
		s.sgroups[g.id] = g
		return s.sgJSON(g), nil
	case "security-group-rules":
		rl, err := s.addRule(str(b, "security_group_id"), b)
		if err != nil {
			return nil, err
		}
		return s.ruleJSON(rl, s.sgroups[rl.groupID].project), nil
	}
	return nil, errf(404, "HTTPNotFound", "The resource could not be found.")
}

func (s *Sim) addRule(groupRef string, b map[string]any) (*sgRule, error) {
	g, err := s.findSecGroup(groupRef)
	if err != nil {
		return nil, err
	}
	rl := &sgRule{id: uuid.NewString(), groupID: g.id, direction: str(b, "direction"), ethertype: str(b, "ethertype"),
		protocol: fmt.Sprint(orDefault(b["protocol"], "")), remoteIP: str(b, "remote_ip_prefix"), remoteGroup: str(b, "remote_group_id"),
		description: str(b, "description"), created: s.now()}
	if rl.direction == "" {
		rl.direction = "ingress"
	}
	if rl.direction != "ingress" && rl.direction != "egress" {
		return nil, errf(400, "InvalidInput", "Invalid input for direction. Reason: %s is not in valid_values.", rl.direction)
	}
	if rl.ethertype == "" {
		rl.ethertype = "IPv4"
	}
	for k, dst := range map[string]**int{"port_range_min": &rl.portMin, "port_range_max": &rl.portMax} {
		if v, ok := toNumber(b[k]); ok {
			n := int(v)
			*dst = &n
		}
	}
	g.rules = append(g.rules, rl)
	g.revision++
	return rl, nil
}

func orDefault(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

func (s *Sim) neutronUpdate(coll, id string, b map[string]any) (map[string]any, error) {
	now := s.now()
	switch coll {
	case "routers":
		r := s.routerTable()[id]
		if r == nil {
			return nil, errf(404, "RouterNotFound", "Router %s could not be found", id)
		}
		if err := s.updateRouter(r, b); err != nil {
			return nil, err
		}
		return s.routerJSON(r), nil
	case "networks":
		n := s.nets[id]
		if n == nil {
			return nil, errf(404, "NetworkNotFound", "Network %s could not be found.", id)
		}
		if v, ok := b["name"].(string); ok {
			n.name = v
		}
		if v := boolPtr(b, "port_security_enabled"); v != nil {
			n.portSecurity = *v
		}
		n.updated, n.revision = now, n.revision+1
		return s.networkJSON(n), nil
	case "subnets":
		sn := s.subnets[id]
		if sn == nil {
			return nil, errf(404, "SubnetNotFound", "Subnet %s could not be found.", id)
		}
		if v, ok := b["name"].(string); ok {
			sn.name = v
		}
		sn.updated, sn.revision = now, sn.revision+1
		return s.subnetJSON(sn), nil
	case "ports":
		p := s.ports[id]
		if p == nil {
			return nil, errf(404, "PortNotFound", "Port %s could not be found.", id)
		}
		if err := s.updatePort(p, b); err != nil {
			return nil, err
		}
		return s.portJSON(p), nil
	case "floatingips":
		f := s.fips[id]
		if f == nil {
			return nil, errf(404, "FloatingIPNotFound", "Floating IP %s could not be found", id)
		}
		if _, ok := b["port_id"]; ok {
			var fixed netip.Addr
			if v := str(b, "fixed_ip_address"); v != "" {
				fixed, _ = netip.ParseAddr(v)
			}
			old := *f
			if err := s.associateFIP(f, str(b, "port_id"), fixed); err != nil {
				return nil, err
			}
			s.fipMoved(&old, f)
		}
		if v, ok := b["description"].(string); ok {
			f.description = v
		}
		f.updated, f.revision = now, f.revision+1
		return s.fipJSON(f), nil
	case "security-groups":
		g := s.sgroups[id]
		if g == nil {
			return nil, errf(404, "SecurityGroupNotFound", "Security group %s does not exist", id)
		}
		if v, ok := b["name"].(string); ok {
			g.name = v
		}
		if v, ok := b["description"].(string); ok {
			g.description = v
		}
		g.updated, g.revision = now, g.revision+1
		return s.sgJSON(g), nil
	}
	return nil, errf(405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
}

// updatePort applies a port update (API or Heat) (s.mu held).
func (s *Sim) updatePort(p *port, b map[string]any) error {
	if v, ok := b["name"].(string); ok {
		p.name = v
	}
	if v, ok := b["description"].(string); ok {
		p.description = v
	}
	if v := boolPtr(b, "port_security_enabled"); v != nil {
		p.portSecurity = *v
		if !p.portSecurity {
			p.sgs = nil
		}
	}
	if v, ok := b["device_id"].(string); ok {
		p.deviceID = v
	}
	if v, ok := b["device_owner"].(string); ok {
		p.deviceOwner = v
	}
	if sg, ok := b["security_groups"]; ok {
		var ids []string
		for _, ref := range stringList(sg) {
			g, err := s.findSecGroup(ref)
			if err != nil {
				return err
			}
			ids = append(ids, g.id)
		}
		p.sgs = ids
	}
	if v, ok := b["allowed_address_pairs"]; ok {
		pairs := parsePairs(v)
		if len(pairs) > 0 && !p.portSecurity {
			return errf(409, "AddressPairAndPortSecurityRequired", "Port Security must be enabled in order to have allowed address pairs on a port.")
		}
		for _, ap := range pairs {
			if _, err := netip.ParsePrefix(ap.ip); err != nil {
				if _, err := netip.ParseAddr(ap.ip); err != nil {
					return errf(400, "InvalidInput", "Invalid input for allowed_address_pairs. Reason: '%s' is not a valid IP address.", ap.ip)
				}
			}
		}
		p.pairs = pairs
	}
	if v, ok := b["fixed_ips"]; ok {
		n := s.nets[p.networkID]
		old := p.fixed
		p.fixed = nil // free the old addresses for re-use in the request
		fixed, err := s.allocFixed(n, listOfMaps(v))
		if err != nil {
			p.fixed = old
			return err
		}
		p.fixed = fixed
	}
	p.updated, p.revision = s.now(), p.revision+1
	return nil
}

func (s *Sim) neutronDelete(coll, id string) error {
	switch coll {
	case "routers":
		return s.deleteRouter(id)
	case "networks":
		n := s.nets[id]
		if n == nil {
			return errf(404, "NetworkNotFound", "Network %s could not be found.", id)
		}
		for _, p := range s.ports {
			if p.networkID == id {
				return errf(409, "NetworkInUse", "Unable to complete operation on network %s. There are one or more ports still in use on the network.", id)
			}
		}
		for _, sid := range n.subnets {
			delete(s.subnets, sid)
		}
		delete(s.nets, id)
	case "subnets":
		sn := s.subnets[id]
		if sn == nil {
			return errf(404, "SubnetNotFound", "Subnet %s could not be found.", id)
		}
		for _, p := range s.ports {
			for _, f := range p.fixed {
				if f.subnetID == id {
					return errf(409, "SubnetInUse", "Unable to complete operation on subnet %s: One or more ports have an IP allocation from this subnet.", id)
				}
			}
		}
		if n := s.nets[sn.networkID]; n != nil {
			n.subnets = slices.DeleteFunc(n.subnets, func(x string) bool { return x == id })
		}
		delete(s.subnets, id)
	case "ports":
		p := s.ports[id]
		if p == nil {
			return errf(404, "PortNotFound", "Port %s could not be found.", id)
		}
		if p.deviceOwner == ownerRouterInterface || p.deviceOwner == ownerRouterGateway {
			return errf(409, "L3PortInUse", "Port %s has owner %s and therefore cannot be deleted directly via the port API.", id, p.deviceOwner)
		}
		if strings.HasPrefix(p.deviceOwner, "compute:") && s.servers[p.deviceID] != nil {
			s.detachPortFromServer(p)
		}
		s.deletePort(id)
	case "floatingips":
		f := s.fips[id]
		if f == nil {
			return errf(404, "FloatingIPNotFound", "Floating IP %s could not be found", id)
		}
		old := *f
		f.portID = ""
		s.fipMoved(&old, f)
		delete(s.fips, id)
	case "security-groups":
		g := s.sgroups[id]
		if g == nil {
			return errf(404, "SecurityGroupNotFound", "Security group %s does not exist", id)
		}
		for _, p := range s.ports {
			if slices.Contains(p.sgs, id) {
				return errf(409, "SecurityGroupInUse", "Security Group %s in use.", id)
			}
		}
		delete(s.sgroups, id)
	case "security-group-rules":
		for _, g := range s.sgroups {
			for i, rl := range g.rules {
				if rl.id == id {
					g.rules = append(g.rules[:i], g.rules[i+1:]...)
					return nil
				}
			}
		}
		return errf(404, "SecurityGroupRuleNotFound", "Security group rule %s does not exist", id)
	default:
		return errf(405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL.")
	}
	return nil
}
