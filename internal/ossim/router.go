package ossim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Neutron routers (the router extension): a router with an optional
// external gateway (a port on an external network, enable_snat) and
// interfaces, each a port holding a subnet's gateway address (or a given
// port). Nothing is routed (the hosts have only their own network); the
// records, ports and errors are Neutron's, so a base HOT with
// OS::Neutron::Router and OS::Neutron::RouterInterface deploys as on a
// real cloud.

// Device owners of router ports.
const (
	ownerRouterInterface = "network:router_interface"
	ownerRouterGateway   = "network:router_gateway"
)

type router struct {
	id, name, project, description string
	adminUp                        bool
	gwNetwork                      string // external network id; "" without a gateway
	gwPort                         string
	enableSNAT                     bool
	created, updated               time.Time
	revision                       int
}

// routers is the simulator's router table (s.mu held).
func (s *Sim) routerTable() map[string]*router {
	if s.routers == nil {
		s.routers = map[string]*router{}
	}
	return s.routers
}

func (s *Sim) findRouter(ref string) (*router, error) {
	rs := s.routerTable()
	if r := rs[ref]; r != nil {
		return r, nil
	}
	var found []*router
	for _, r := range rs {
		if r.name == ref && ref != "" {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return nil, errf(404, "RouterNotFound", "Router %s could not be found", ref)
	case 1:
		return found[0], nil
	}
	return nil, errf(409, "NeutronClientNoUniqueMatch", "Multiple router matches found for name '%s', use an ID to be more specific.", ref)
}

func (s *Sim) routerJSON(r *router) map[string]any {
	var gw any
	if r.gwNetwork != "" {
		ips := []any{}
		if p := s.ports[r.gwPort]; p != nil {
			for _, f := range p.fixed {
				ips = append(ips, map[string]any{"subnet_id": f.subnetID, "ip_address": f.ip.String()})
			}
		}
		gw = map[string]any{"network_id": r.gwNetwork, "enable_snat": r.enableSNAT, "external_fixed_ips": ips}
	}
	return map[string]any{
		"id": r.id, "name": r.name, "status": "ACTIVE", "admin_state_up": r.adminUp, "tenant_id": r.project, "project_id": r.project,
		"external_gateway_info": gw, "routes": []any{}, "distributed": false, "ha": false, "availability_zones": []string{"nova"},
		"availability_zone_hints": []string{}, "flavor_id": nil, "description": r.description, "tags": []string{},
		"created_at": novaTime(r.created), "updated_at": novaTime(r.updated), "revision_number": r.revision,
	}
}

// setGateway gives the router a gateway port on an external network (or
// removes it for info nil).
func (s *Sim) setGateway(r *router, info map[string]any) error {
	if info == nil {
		if r.gwPort != "" {
			s.deletePort(r.gwPort)
		}
		r.gwNetwork, r.gwPort, r.enableSNAT = "", "", false
		return nil
	}
	ref := str(info, "network_id")
	if ref == "" {
		ref = str(info, "network")
	}
	n, err := s.findNetwork(ref)
	if err != nil {
		return errf(404, "ExternalGatewayForFloatingIPNotFound", "External network %s could not be found.", ref)
	}
	if !n.external {
		return errf(400, "BadRequest", "Bad router request: Network %s is not an external network.", n.id)
	}
	snat := true
	if v := boolPtr(info, "enable_snat"); v != nil {
		snat = *v
	}
	if n.id == r.gwNetwork {
		r.enableSNAT = snat
		return nil
	}
	var fixed []map[string]any
	for _, f := range listOfMaps(info["external_fixed_ips"]) {
		e := map[string]any{}
		if v := str(f, "subnet_id"); v != "" {
			e["subnet_id"] = v
		} else if v := str(f, "subnet"); v != "" {
			e["subnet_id"] = v
		}
		if v := str(f, "ip_address"); v != "" {
			e["ip_address"] = v
		}
		fixed = append(fixed, e)
	}
	p, err := s.createPort(r.project, portRequest{NetworkID: n.id, FixedIPs: fixed, DeviceID: r.id, DeviceOwner: ownerRouterGateway,
		SecGroups: &[]string{}})
	if err != nil {
		return err
	}
	if r.gwPort != "" {
		s.deletePort(r.gwPort)
	}
	r.gwNetwork, r.gwPort, r.enableSNAT = n.id, p.id, snat
	return nil
}

func (s *Sim) createRouter(project string, b map[string]any) (*router, error) {
	now := s.now()
	r := &router{id: uuid.NewString(), name: str(b, "name"), project: project, description: str(b, "description"), adminUp: true,
		created: now, updated: now, revision: 1}
	if v := boolPtr(b, "admin_state_up"); v != nil {
		r.adminUp = *v
	}
	if gw, ok := b["external_gateway_info"].(map[string]any); ok {
		if err := s.setGateway(r, gw); err != nil {
			return nil, err
		}
	}
	s.routerTable()[r.id] = r
	return r, nil
}

func (s *Sim) updateRouter(r *router, b map[string]any) error {
	if v, ok := b["name"]; ok {
		r.name = toString(v)
	}
	if v, ok := b["description"]; ok {
		r.description = toString(v)
	}
	if v := boolPtr(b, "admin_state_up"); v != nil {
		r.adminUp = *v
	}
	if v, ok := b["external_gateway_info"]; ok {
		gw, _ := v.(map[string]any)
		if len(gw) == 0 {
			gw = nil
		}
		if gw == nil && r.gwNetwork != "" && s.routerHasFIPs(r) {
			return errf(409, "RouterExternalGatewayInUseByFloatingIp", "Gateway cannot be updated for router %s, since a gateway to external network %s is required by one or more floating IPs.", r.id, r.gwNetwork)
		}
		if err := s.setGateway(r, gw); err != nil {
			return err
		}
	}
	r.updated = s.now()
	r.revision++
	return nil
}

// routerHasFIPs reports whether a floating IP of the router's external
// network is bound to a port on one of its interfaces' subnets.
func (s *Sim) routerHasFIPs(r *router) bool {
	subnets := map[string]bool{}
	for _, p := range s.routerPorts(r.id) {
		for _, f := range p.fixed {
			subnets[f.subnetID] = true
		}
	}
	for _, f := range s.fips {
		if f.networkID != r.gwNetwork || f.portID == "" {
			continue
		}
		if p := s.ports[f.portID]; p != nil {
			for _, x := range p.fixed {
				if subnets[x.subnetID] {
					return true
				}
			}
		}
	}
	return false
}

// routerPorts lists the router's interface ports, oldest first.
func (s *Sim) routerPorts(id string) []*port {
	var out []*port
	for _, p := range s.ports {
		if p.deviceID == id && p.deviceOwner == ownerRouterInterface {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *port) int { return cmpTimeID(a.created, b.created, a.id, b.id) })
	return out
}

func cmpTimeID(a, b time.Time, ai, bi string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(ai, bi)
}

func (s *Sim) deleteRouter(id string) error {
	r := s.routerTable()[id]
	if r == nil {
		return errf(404, "RouterNotFound", "Router %s could not be found", id)
	}
	if len(s.routerPorts(id)) > 0 {
		return errf(409, "RouterInUse", "Router %s still has ports", id)
	}
	if r.gwPort != "" {
		s.deletePort(r.gwPort)
	}
	delete(s.routers, id)
	return nil
}

// addInterface attaches a subnet (a new port with its gateway address) or
// an existing port to the router.
func (s *Sim) addInterface(r *router, b map[string]any) (map[string]any, error) {
	subnetRef, portRef := str(b, "subnet_id"), str(b, "port_id")
	if (subnetRef == "") == (portRef == "") {
		return nil, errf(400, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.")
	}
	var p *port
	if portRef != "" {
		p = s.ports[portRef]
		if p == nil {
			return nil, errf(404, "PortNotFound", "Port %s could not be found.", portRef)
		}
		if p.deviceID != "" {
			return nil, errf(409, "PortInUse", "Unable to complete operation on port %s for network %s. Port already has an attached device %s.", p.id, p.networkID, p.deviceID)
		}
		if len(p.fixed) == 0 {
			return nil, errf(400, "BadRequest", "Bad router request: Router port must have at least one fixed IP.")
		}
		for _, f := range p.fixed {
			if err := s.checkInterfaceSubnet(r, f.subnetID); err != nil {
				return nil, err
			}
		}
		p.deviceID, p.deviceOwner, p.status = r.id, ownerRouterInterface, "ACTIVE"
		p.updated = s.now()
		p.revision++
	} else {
		sn, err := s.findSubnet(subnetRef)
		if err != nil {
			return nil, err
		}
		if !sn.gateway.IsValid() {
			return nil, errf(400, "BadRequest", "Bad router request: Subnet for router interface must have a gateway IP.")
		}
		if err := s.checkInterfaceSubnet(r, sn.id); err != nil {
			return nil, err
		}
		for _, o := range s.ports {
			for _, f := range o.fixed {
				if f.subnetID == sn.id && f.ip == sn.gateway {
					return nil, errf(409, "IpAddressInUse", "Unable to complete operation for network %s. The IP address %s is in use.", sn.networkID, sn.gateway)
				}
			}
		}
		now := s.now()
		p = &port{id: uuid.NewString(), networkID: sn.networkID, project: r.project, mac: randomMAC(), deviceID: r.id,
			deviceOwner: ownerRouterInterface, status: "ACTIVE", vnicType: "normal", created: now, updated: now, revision: 1,
			fixed: []fixedIP{{subnetID: sn.id, ip: sn.gateway}}}
		s.ports[p.id] = p
	}
	r.updated = s.now()
	r.revision++
	var ids []string
	for _, f := range p.fixed {
		ids = append(ids, f.subnetID)
	}
	return map[string]any{"id": r.id, "tenant_id": r.project, "project_id": r.project, "port_id": p.id, "network_id": p.networkID,
		"subnet_id": ids[0], "subnet_ids": ids}, nil
}

// checkInterfaceSubnet refuses a second interface on a subnet and
// overlapping subnets on one router.
func (s *Sim) checkInterfaceSubnet(r *router, subnetID string) error {
	sn := s.subnets[subnetID]
	if sn == nil {
		return errf(404, "SubnetNotFound", "Subnet %s could not be found.", subnetID)
	}
	for _, p := range s.routerPorts(r.id) {
		for _, f := range p.fixed {
			if f.subnetID == subnetID {
				return errf(400, "BadRequest", "Bad router request: Router already has a port on subnet %s.", subnetID)
			}
			if o := s.subnets[f.subnetID]; o != nil && o.cidr.Overlaps(sn.cidr) {
				return errf(400, "BadRequest", "Bad router request: Cidr %s of subnet %s overlaps with cidr %s of subnet %s.", sn.cidr, sn.id, o.cidr, o.id)
			}
		}
	}
	return nil
}

// removeInterface detaches a subnet or port; a port the router created for
// a subnet is deleted, a given port is only released.
func (s *Sim) removeInterface(r *router, b map[string]any) (map[string]any, error) {
	subnetRef, portRef := str(b, "subnet_id"), str(b, "port_id")
	if subnetRef == "" && portRef == "" {
		return nil, errf(400, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.")
	}
	for _, p := range s.routerPorts(r.id) {
		match := p.id == portRef
		for _, f := range p.fixed {
			if f.subnetID == subnetRef {
				match = true
			}
		}
		if !match {
			continue
		}
		if portRef != "" && p.id != portRef {
			return nil, errf(409, "SubnetMismatchForPort", "Subnet %s does not match with the port %s.", subnetRef, portRef)
		}
		var ids []string
		for _, f := range p.fixed {
			ids = append(ids, f.subnetID)
		}
		out := map[string]any{"id": r.id, "tenant_id": r.project, "project_id": r.project, "port_id": p.id, "network_id": p.networkID,
			"subnet_id": ids[0], "subnet_ids": ids}
		s.deletePort(p.id)
		r.updated = s.now()
		r.revision++
		return out, nil
	}
	if portRef != "" {
		return nil, errf(404, "RouterInterfaceNotFound", "Router %s does not have an interface with id %s", r.id, portRef)
	}
	return nil, errf(404, "RouterInterfaceNotFoundForSubnet", "Router %s has no interface on subnet %s", r.id, subnetRef)
}

// serveRouterAction handles PUT /routers/{id}/add_router_interface and
// remove_router_interface (s.mu not held).
func (s *Sim) serveRouterAction(w http.ResponseWriter, r *http.Request, id, action string) {
	if r.Method != http.MethodPut {
		neutronErr(w, errf(405, "HTTPMethodNotAllowed", "The method is not allowed for the requested URL."))
		return
	}
	var body map[string]any
	if err := readJSON(r, &body); err != nil {
		neutronErr(w, errf(400, "BadRequest", "Bad router request: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.routerTable()[id]
	if rt == nil {
		neutronErr(w, errf(404, "RouterNotFound", "Router %s could not be found", id))
		return
	}
	var out map[string]any
	var err error
	switch action {
	case "add_router_interface":
		out, err = s.addInterface(rt, body)
	case "remove_router_interface":
		out, err = s.removeInterface(rt, body)
	default:
		err = errf(404, "HTTPNotFound", "The resource could not be found.")
	}
	if err != nil {
		neutronErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// ---- Heat ----

type routerRes struct{}

func (routerRes) schema() ([]string, []string) {
	return []string{"name", "external_gateway_info", "admin_state_up", "value_specs", "distributed", "ha", "l3_agent_ids",
		"availability_zone_hints", "tags"}, nil
}

func (routerRes) create(ctx context.Context, s *Sim, r *resource) error {
	b := map[string]any{"name": toString(r.props["name"])}
	if b["name"] == "" {
		b["name"] = physicalName(r)
	}
	if v, ok := r.props["admin_state_up"]; ok {
		b["admin_state_up"] = v
	}
	if gw, ok := r.props["external_gateway_info"].(map[string]any); ok && len(gw) > 0 {
		b["external_gateway_info"] = gw
	}
	s.mu.Lock()
	rt, err := s.createRouter(r.st.project, b)
	if err == nil {
		r.physID = rt.id
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (routerRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	if changed(old, r.props, "distributed", "ha") {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.routerTable()[r.physID]
	if rt == nil {
		return true, nil
	}
	b := map[string]any{}
	if changed(old, r.props, "name") {
		n := toString(r.props["name"])
		if n == "" {
			n = physicalName(r)
		}
		b["name"] = n
	}
	if changed(old, r.props, "admin_state_up") {
		b["admin_state_up"] = orDefault(r.props["admin_state_up"], true)
	}
	if changed(old, r.props, "external_gateway_info") {
		gw, _ := r.props["external_gateway_info"].(map[string]any)
		b["external_gateway_info"] = gw
	}
	return false, s.updateRouter(rt, b)
}

func (routerRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.routerTable()[r.physID] == nil {
		return nil
	}
	return s.deleteRouter(r.physID)
}

func (routerRes) attr(s *Sim, r *resource, name string) (any, error) {
	rt := s.routerTable()[r.physID]
	if rt == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.routerJSON(rt))).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type routerIfaceRes struct{}

func (routerIfaceRes) schema() ([]string, []string) {
	return []string{"router", "router_id", "subnet", "subnet_id", "port", "port_id"}, nil
}

func (routerIfaceRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	routerRef := toString(orDefault(p["router"], p["router_id"]))
	subnetRef := toString(orDefault(p["subnet"], p["subnet_id"]))
	portRef := toString(orDefault(p["port"], p["port_id"]))
	if routerRef == "" {
		return validationErr("Property error: OS::Neutron::RouterInterface.properties: Property router not assigned")
	}
	if (subnetRef == "") == (portRef == "") {
		return validationErr("Property error: OS::Neutron::RouterInterface.properties: Exactly one of subnet or port should be specified.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt, err := s.findRouter(routerRef)
	if err != nil {
		return err
	}
	b := map[string]any{}
	key := ""
	if subnetRef != "" {
		sn, err := s.findSubnet(subnetRef)
		if err != nil {
			return err
		}
		b["subnet_id"], key = sn.id, "subnet_id="+sn.id
	} else {
		b["port_id"], key = portRef, "port_id="+portRef
	}
	if _, err := s.addInterface(rt, b); err != nil {
		return err
	}
	// Heat's resource id: "<router id>:subnet_id=<id>" or ":port_id=<id>".
	r.physID = rt.id + ":" + key
	return nil
}

func (routerIfaceRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return true, nil
}

func (routerIfaceRes) delete(_ context.Context, s *Sim, r *resource) error {
	rid, key, ok := strings.Cut(r.physID, ":")
	if !ok {
		return nil
	}
	k, v, _ := strings.Cut(key, "=")
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.routerTable()[rid]
	if rt == nil {
		return nil
	}
	_, err := s.removeInterface(rt, map[string]any{k: v})
	if ae, ok := err.(*apiError); ok && ae.code == 404 {
		return nil
	}
	return err
}

func (routerIfaceRes) attr(*Sim, *resource, string) (any, error) { return nil, nil }
