package ossim

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"
)

// resType implements one Heat resource type. create, update and delete run
// without s.mu; attr runs with it held. r.props holds the resolved
// properties (the new ones during update; old ones are passed).
type resType interface {
	create(ctx context.Context, s *Sim, r *resource) error
	update(ctx context.Context, s *Sim, r *resource, old map[string]any) (replace bool, err error)
	delete(ctx context.Context, s *Sim, r *resource) error
	attr(s *Sim, r *resource, name string) (any, error)
}

// schemaType lists a type's properties (unknown ones fail validation).
type schemaType interface {
	schema() (allowed, required []string)
}

// faultAwareType handles injected faults itself (servers go to ERROR).
type faultAwareType interface{ faultAware() }

// nestedStackType marks types backed by a nested stack: always updated
// recursively, replaced only when unhealthy.
type nestedStackType interface{ nestedStack() }

// pathAttrType resolves attributes that take the rest of the path
// (group outputs_list etc.).
type pathAttrType interface {
	attrPath(s *Sim, r *resource, name string, path []any) (any, error)
}

var resourceTypes = map[string]resType{
	"OS::Nova::Server":                   serverRes{},
	"OS::Nova::ServerGroup":              serverGroupRes{},
	"OS::Neutron::Port":                  portRes{},
	"OS::Neutron::FloatingIP":            fipRes{},
	"OS::Neutron::FloatingIPAssociation": fipAssocRes{},
	"OS::Neutron::Net":                   netRes{},
	"OS::Neutron::Subnet":                subnetRes{},
	"OS::Neutron::SecurityGroup":         sgRes{},
	"OS::Neutron::SecurityGroupRule":     sgRuleRes{},
	"OS::Neutron::Router":                routerRes{},
	"OS::Neutron::RouterInterface":       routerIfaceRes{},
	"OS::Octavia::LoadBalancer":          lbRes{},
	"OS::Octavia::Listener":              listenerRes{},
	"OS::Octavia::Pool":                  poolRes{},
	"OS::Octavia::PoolMember":            memberRes{},
	"OS::Octavia::HealthMonitor":         monitorRes{},
	"OS::Heat::AutoScalingGroup":         groupRes{asg: true},
	"OS::Heat::ResourceGroup":            groupRes{},
	"OS::Heat::ScalingPolicy":            policyRes{},
	"OS::Heat::None":                     noneRes{},
	"OS::Heat::Value":                    valueRes{},
	"OS::Heat::RandomString":             randomRes{},
	"OS::Heat::CloudConfig":              configRes{cloud: true},
	"OS::Heat::SoftwareConfig":           configRes{},
}

// resolveType maps a type name to its implementation, following the
// environment's resource_registry and template files (s.mu held).
func (s *Sim) resolveType(st *stack, typ string) (resType, error) {
	seen := map[string]bool{}
	for !seen[typ] {
		seen[typ] = true
		if h, ok := resourceTypes[typ]; ok {
			return h, nil
		}
		if reg, ok := st.env["resource_registry"].(map[string]any); ok {
			if m, ok := reg[typ].(string); ok {
				typ = m
				continue
			}
		}
		if _, ok := st.files[typ]; ok {
			return templateRes{file: typ}, nil
		}
		if isTemplateRef(typ) {
			return nil, errf(400, "NotFound", "Could not fetch remote template \"%s\": Invalid URL scheme ", typ)
		}
	}
	return nil, errf(404, "ResourceTypeNotFound", "The Resource Type (%s) could not be found.", typ)
}

func isTemplateRef(t string) bool {
	return strings.HasSuffix(t, ".yaml") || strings.HasSuffix(t, ".yml") || strings.HasSuffix(t, ".template") || strings.Contains(t, "://")
}

func validateProps(typ string, h resType, props map[string]any) error {
	sc, ok := h.(schemaType)
	if !ok {
		return nil
	}
	allowed, required := sc.schema()
	for k := range props {
		if !contains(allowed, k) {
			return validationErr("Property error: %s.properties: Unknown Property %s", typ, k)
		}
	}
	for _, k := range required {
		if v, ok := props[k]; !ok || v == nil || v == "" {
			return validationErr("Property error: %s.properties: Property %s not assigned", typ, k)
		}
	}
	return nil
}

func physicalName(r *resource) string {
	return fmt.Sprintf("%s-%s-%s", r.st.name, r.name, shortID())
}

func changed(old, cur map[string]any, keys ...string) bool {
	for _, k := range keys {
		if !reflect.DeepEqual(old[k], cur[k]) {
			return true
		}
	}
	return false
}

func num(m map[string]any, k string, def int) int {
	if f, ok := toNumber(m[k]); ok {
		return int(f)
	}
	return def
}

// ---- template resources (nested stacks from files) ----

type templateRes struct{ file string }

func (templateRes) nestedStack() {}

func (t templateRes) parse(s *Sim, r *resource) (*hotTemplate, error) {
	s.mu.Lock()
	content, ok := r.st.files[t.file]
	s.mu.Unlock()
	if !ok {
		return nil, errf(400, "NotFound", "Could not fetch remote template \"%s\": Invalid URL scheme ", t.file)
	}
	return parseTemplate(content)
}

func (t templateRes) create(ctx context.Context, s *Sim, r *resource) error {
	tmpl, err := t.parse(s, r)
	if err != nil {
		return err
	}
	return s.createNested(ctx, r, tmpl, r.props)
}

func (t templateRes) update(ctx context.Context, s *Sim, r *resource, _ map[string]any) (bool, error) {
	tmpl, err := t.parse(s, r)
	if err != nil {
		return false, err
	}
	return false, s.updateNested(ctx, r, tmpl, r.props)
}

func (templateRes) delete(ctx context.Context, s *Sim, r *resource) error {
	return s.deleteNested(ctx, r)
}

func (templateRes) attr(s *Sim, r *resource, name string) (any, error) {
	if r.nested == nil {
		return nil, nil
	}
	if name == "OS::stack_id" {
		return r.nested.id, nil
	}
	return s.outputValue(r.nested, name), nil
}

// ---- AutoScalingGroup / ResourceGroup ----

type groupRes struct{ asg bool }

func (groupRes) nestedStack() {}

func (g groupRes) schema() ([]string, []string) {
	if g.asg {
		return []string{"min_size", "max_size", "desired_capacity", "resource", "cooldown", "rolling_updates"}, []string{"min_size", "max_size", "resource"}
	}
	return []string{"count", "resource_def", "removal_policies", "removal_policies_mode", "index_var", "rolling_update", "batch_create", "update_policy"}, []string{"resource_def"}
}

func (g groupRes) bounds(props map[string]any) (min, max, desired int, err error) {
	if !g.asg {
		n := num(props, "count", 1)
		if n < 0 {
			return 0, 0, 0, validationErr("Property error: count: %d is out of range (min: 0, max: None)", n)
		}
		return 0, n, n, nil
	}
	min, max = num(props, "min_size", 0), num(props, "max_size", 0)
	desired = num(props, "desired_capacity", min)
	if min < 0 || max < min {
		return 0, 0, 0, validationErr("min_size can not be greater than max_size")
	}
	if desired < min || desired > max {
		return 0, 0, 0, validationErr("desired_capacity must be between min_size and max_size")
	}
	return min, max, desired, nil
}

// memberDef is the definition of member name (s.mu not needed).
func (g groupRes) memberDef(props map[string]any, name string) map[string]any {
	key := "resource"
	if !g.asg {
		key = "resource_def"
	}
	def, _ := props[key].(map[string]any)
	out := map[string]any{"type": def["type"]}
	if p, ok := def["properties"]; ok {
		if g.asg {
			out["properties"] = p
		} else {
			idx := "%index%"
			if v, ok := props["index_var"].(string); ok && v != "" {
				idx = v
			}
			out["properties"] = substitute(p, idx, name)
		}
	}
	if md, ok := def["metadata"]; ok {
		out["metadata"] = md
	}
	return out
}

func (g groupRes) template(props map[string]any, names []string) (*hotTemplate, error) {
	res := map[string]any{}
	for _, n := range names {
		res[n] = g.memberDef(props, n)
	}
	return parseTemplate(map[string]any{"heat_template_version": "2015-04-30", "resources": res})
}

func (g groupRes) create(ctx context.Context, s *Sim, r *resource) error {
	_, _, n, err := g.bounds(r.props)
	if err != nil {
		return err
	}
	names := make([]string, n)
	for i := range names {
		if g.asg {
			names[i] = shortID()
		} else {
			names[i] = strconv.Itoa(i)
		}
	}
	tmpl, err := g.template(r.props, names)
	if err != nil {
		return err
	}
	return s.createNested(ctx, r, tmpl, nil)
}

// memberOrder lists the group's members oldest first as Heat removes them:
// failed (and marked unhealthy) members first, then by (creation time to
// the second, name) (s.mu held).
func memberOrder(ns *stack) []*resource {
	var ms []*resource
	for _, m := range ns.res {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		fi, fj := ms[i].status == "FAILED", ms[j].status == "FAILED"
		if fi != fj {
			return fi
		}
		ci, cj := ms[i].created.Truncate(time.Second), ms[j].created.Truncate(time.Second)
		if !ci.Equal(cj) {
			return ci.Before(cj)
		}
		return ms[i].name < ms[j].name
	})
	return ms
}

func (g groupRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	min, max, desired, err := g.bounds(r.props)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	target := desired
	if g.asg && !changed(old, r.props, "desired_capacity", "min_size", "max_size") && r.nested != nil {
		// Heat keeps the current size (e.g. after signals) unless the
		// capacity properties change.
		target = len(r.nested.res)
	}
	if target < min {
		target = min
	}
	if target > max {
		target = max
	}
	s.mu.Unlock()
	return false, g.resize(ctx, s, r, target)
}

// resize makes the group have target members: it removes the oldest (ASG) or
// highest-numbered (ResourceGroup) members and adds new ones; kept members
// get the current definition (and are updated recursively).
func (g groupRes) resize(ctx context.Context, s *Sim, r *resource, target int) error {
	s.mu.Lock()
	var names []string
	if r.nested != nil {
		if g.asg {
			ms := memberOrder(r.nested)
			if len(ms) > target {
				ms = ms[len(ms)-target:]
			}
			for _, m := range ms {
				names = append(names, m.name)
			}
			for len(names) < target {
				names = append(names, shortID())
			}
		} else {
			for i := 0; i < target; i++ {
				names = append(names, strconv.Itoa(i))
			}
		}
	}
	s.mu.Unlock()
	if r.nested == nil {
		return g.create(ctx, s, r)
	}
	tmpl, err := g.template(r.props, names)
	if err != nil {
		return err
	}
	return s.updateNested(ctx, r, tmpl, nil)
}

func (groupRes) delete(ctx context.Context, s *Sim, r *resource) error { return s.deleteNested(ctx, r) }

func (g groupRes) attr(s *Sim, r *resource, name string) (any, error) {
	return g.attrPath(s, r, name, nil)
}

func (g groupRes) attrPath(s *Sim, r *resource, name string, path []any) (any, error) {
	ns := r.nested
	if ns == nil {
		return nil, nil
	}
	ms := memberOrder(ns)
	if !g.asg {
		sort.Slice(ms, func(i, j int) bool {
			a, _ := strconv.Atoi(ms[i].name)
			b, _ := strconv.Atoi(ms[j].name)
			return a < b
		})
	}
	switch {
	case name == "current_size":
		return float64(len(ms)), nil
	case name == "refs":
		out := []any{}
		for _, m := range ms {
			out = append(out, m.physID)
		}
		return traverse(out, path), nil
	case name == "refs_map":
		out := map[string]any{}
		for _, m := range ms {
			out[m.name] = m.physID
		}
		return traverse(out, path), nil
	case name == "outputs_list" || name == "outputs":
		if len(path) == 0 {
			return nil, nil
		}
		key := toString(path[0])
		list, m := []any{}, map[string]any{}
		for _, mem := range ms {
			v, _ := s.resourceAttr(mem, key, nil)
			list = append(list, v)
			m[mem.name] = v
		}
		if name == "outputs" {
			return traverse(m, path[1:]), nil
		}
		return traverse(list, path[1:]), nil
	case strings.HasPrefix(name, "resource."):
		parts := strings.SplitN(strings.TrimPrefix(name, "resource."), ".", 2)
		mem := ns.res[parts[0]]
		if mem == nil {
			return nil, nil
		}
		if len(parts) == 1 {
			if len(path) == 0 {
				return mem.physID, nil
			}
			return s.resourceAttr(mem, toString(path[0]), path[1:])
		}
		return s.resourceAttr(mem, parts[1], path)
	case !g.asg:
		// ResourceGroup: any other attribute is the list of the members'.
		out := []any{}
		for _, mem := range ms {
			v, _ := s.resourceAttr(mem, name, path)
			out = append(out, v)
		}
		return out, nil
	}
	return nil, nil
}

// ---- ScalingPolicy ----

type policyRes struct{}

func (policyRes) schema() ([]string, []string) {
	return []string{"auto_scaling_group_id", "adjustment_type", "scaling_adjustment", "cooldown", "min_adjustment_step"},
		[]string{"auto_scaling_group_id", "adjustment_type", "scaling_adjustment"}
}

func (policyRes) create(ctx context.Context, s *Sim, r *resource) error {
	switch str(r.props, "adjustment_type") {
	case "change_in_capacity", "exact_capacity", "percent_change_in_capacity":
	default:
		return validationErr("Property error: adjustment_type: \"%v\" is not an allowed value [change_in_capacity, exact_capacity, percent_change_in_capacity]", r.props["adjustment_type"])
	}
	s.mu.Lock()
	r.physID = uuid.NewString()
	s.mu.Unlock()
	return sleep(ctx, s.opts.ResourceLatency)
}

func (policyRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return false, nil
}

func (policyRes) delete(context.Context, *Sim, *resource) error { return nil }

func (policyRes) attr(s *Sim, r *resource, name string) (any, error) {
	st := r.st
	u := fmt.Sprintf("%s/v1/%s/stacks/%s/%s/resources/%s/signal", s.lastBase, st.project, st.name, st.id, r.name)
	switch name {
	case "alarm_url", "signal_url":
		return u, nil
	}
	return nil, nil
}

// ---- Nova ----

type serverRes struct{}

func (serverRes) faultAware() {}

func (serverRes) schema() ([]string, []string) {
	return []string{"name", "flavor", "image", "networks", "user_data", "user_data_format", "metadata", "key_name",
		"availability_zone", "scheduler_hints", "config_drive", "security_groups", "admin_pass", "block_device_mapping",
		"block_device_mapping_v2", "software_config_transport", "personality", "flavor_update_policy", "image_update_policy",
		"user_data_update_policy", "deployment_swift_data", "tags", "diskConfig", "reservation_id"}, []string{"flavor"}
}

func (serverRes) request(s *Sim, r *resource) (serverRequest, error) {
	p := r.props
	req := serverRequest{Name: toString(p["name"]), Flavor: toString(p["flavor"]), Image: toString(p["image"]),
		KeyName: toString(p["key_name"]), AZ: toString(p["availability_zone"])}
	if req.Name == "" {
		req.Name = physicalName(r)
	}
	ud := toString(p["user_data"])
	// Like Heat, a user_data that names a software config (SOFTWARE_CONFIG,
	// or RAW with a config's id, as get_resource of OS::Heat::CloudConfig
	// gives) is replaced by the config itself.
	if f := str(p, "user_data_format"); f == "SOFTWARE_CONFIG" || f == "RAW" {
		if c, ok := s.swConfigs[ud]; ok {
			ud = c
		}
	}
	req.UserData = ud
	if md, ok := p["metadata"].(map[string]any); ok {
		req.Metadata = map[string]string{}
		for k, v := range md {
			req.Metadata[k] = toString(v)
		}
	}
	if hints, ok := p["scheduler_hints"].(map[string]any); ok {
		req.Group = toString(hints["group"])
	}
	req.SecurityGroups = stringList(p["security_groups"])
	for _, n := range listOfMaps(p["networks"]) {
		sn := serverNet{PortID: toString(n["port"]), NetworkID: toString(n["network"]), FixedIP: toString(n["fixed_ip"])}
		if sn.NetworkID == "" {
			sn.NetworkID = toString(n["uuid"])
		}
		if sn.NetworkID == "" && toString(n["subnet"]) != "" {
			sub, err := s.findSubnet(toString(n["subnet"]))
			if err != nil {
				return req, err
			}
			sn.NetworkID = sub.networkID
		}
		if sn.PortID == "" && sn.NetworkID == "" {
			continue // allocate_network: none / auto
		}
		req.Networks = append(req.Networks, sn)
	}
	return req, nil
}

func (h serverRes) create(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	req, err := h.request(s, r)
	var sv *server
	if err == nil {
		sv, err = s.createServer(r.st.project, r.st.owner, req)
	}
	if err == nil {
		r.physID = sv.id
	}
	fault := r.fault
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.bootServer(ctx, sv, fault); err != nil {
		return &inErrorState{msg: err.Error()}
	}
	return nil
}

func (h serverRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	p := r.props
	if changed(old, p, "networks", "user_data", "user_data_format", "key_name", "availability_zone", "scheduler_hints",
		"config_drive", "admin_pass", "block_device_mapping", "block_device_mapping_v2", "personality") {
		return true, nil
	}
	s.mu.Lock()
	sv := s.servers[r.physID]
	if sv == nil {
		s.mu.Unlock()
		return true, nil
	}
	if changed(old, p, "name") {
		sv.name = toString(p["name"])
		if sv.name == "" {
			sv.name = physicalName(r)
		}
	}
	if changed(old, p, "metadata") {
		sv.metadata = map[string]string{}
		if md, ok := p["metadata"].(map[string]any); ok {
			for k, v := range md {
				sv.metadata[k] = toString(v)
			}
		}
	}
	resize := changed(old, p, "flavor")
	rebuild := changed(old, p, "image")
	if resize {
		fl := s.findFlavor(toString(p["flavor"]))
		if fl == nil {
			s.mu.Unlock()
			return false, errf(400, "BadRequest", "Flavor %s could not be found.", toString(p["flavor"]))
		}
		sv.flavor = fl
		sv.status, sv.task = "RESIZE", "resize_prep"
	}
	if rebuild {
		sv.image, sv.status, sv.task = toString(p["image"]), "REBUILD", "rebuilding"
	}
	sv.updated = s.now()
	s.mu.Unlock()
	if rebuild {
		if err := s.rebuildServer(ctx, sv); err != nil {
			return false, &inErrorState{msg: err.Error()}
		}
		return false, nil
	}
	if resize {
		if err := sleep(ctx, s.opts.Latency); err != nil {
			return false, err
		}
		s.setServerState(sv, "ACTIVE", "active", "", 1)
	}
	return false, nil
}

func (serverRes) delete(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	id := r.physID
	s.mu.Unlock()
	if id == "" {
		return nil
	}
	return s.deleteServer(ctx, id)
}

func (serverRes) attr(s *Sim, r *resource, name string) (any, error) {
	sv := s.servers[r.physID]
	if sv == nil {
		return nil, nil
	}
	switch name {
	case "name":
		return sv.name, nil
	case "first_address":
		for _, pid := range sv.ports {
			if p := s.ports[pid]; p != nil && len(p.fixed) > 0 {
				return p.fixed[0].ip.String(), nil
			}
		}
		return "", nil
	case "networks":
		out := map[string]any{}
		for _, pid := range sv.ports {
			p := s.ports[pid]
			if p == nil {
				continue
			}
			var ips []any
			for _, f := range p.fixed {
				ips = append(ips, f.ip.String())
			}
			if n := s.nets[p.networkID]; n != nil {
				l, _ := out[n.name].([]any)
				out[n.name] = append(l, ips...)
			}
			l, _ := out[p.networkID].([]any)
			out[p.networkID] = append(l, ips...)
		}
		return out, nil
	case "addresses":
		j := s.serverJSON(sv, s.lastBase)["addresses"].(map[string]any)
		out := map[string]any{}
		for net, l := range j {
			var list []any
			for _, a := range l.([]any) {
				am := a.(map[string]any)
				c := map[string]any{}
				for k, v := range am {
					c[k] = v
				}
				for _, pid := range sv.ports {
					if p := s.ports[pid]; p != nil && p.mac == am["OS-EXT-IPS-MAC:mac_addr"] {
						c["port"] = p.id
					}
				}
				list = append(list, c)
			}
			out[net] = list
		}
		return out, nil
	case "show":
		return normalize(roundTrip(s.serverJSON(sv, s.lastBase))), nil
	case "accessIPv4", "accessIPv6":
		return "", nil
	case "instance_name":
		return fmt.Sprintf("instance-%08x", sv.seq), nil
	case "console_urls":
		return map[string]any{}, nil
	}
	return nil, nil
}

type serverGroupRes struct{}

func (serverGroupRes) schema() ([]string, []string) {
	return []string{"name", "policies", "rules", "policy"}, nil
}

func (serverGroupRes) create(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	name := toString(r.props["name"])
	if name == "" {
		name = physicalName(r)
	}
	pol := stringList(r.props["policies"])
	if p := toString(r.props["policy"]); p != "" {
		pol = []string{p}
	}
	g := s.addServerGroup(r.st.project, name, pol)
	r.physID = g.id
	s.mu.Unlock()
	return sleep(ctx, s.opts.ResourceLatency)
}

func (serverGroupRes) update(_ context.Context, _ *Sim, _ *resource, _ map[string]any) (bool, error) {
	return true, nil
}

func (serverGroupRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	delete(s.srvGroups, r.physID)
	s.mu.Unlock()
	return nil
}

func (serverGroupRes) attr(s *Sim, r *resource, name string) (any, error) {
	g := s.srvGroups[r.physID]
	if g == nil || name != "show" {
		return nil, nil
	}
	return map[string]any{"id": g.id, "name": g.name, "policies": toAnyList(g.policies), "members": toAnyList(g.members)}, nil
}

func toAnyList(l []string) []any {
	out := make([]any, len(l))
	for i, x := range l {
		out[i] = x
	}
	return out
}

// ---- Neutron ----

type portRes struct{}

func (portRes) schema() ([]string, []string) {
	return []string{"network", "network_id", "fixed_ips", "allowed_address_pairs", "name", "mac_address", "security_groups",
		"port_security_enabled", "binding:vnic_type", "value_specs", "device_id", "device_owner", "admin_state_up",
		"qos_policy", "replacement_policy", "dns_name", "tags", "description", "no_fixed_ips", "binding:profile"}, nil
}

func portNet(p map[string]any) string {
	if n := toString(p["network"]); n != "" {
		return n
	}
	return toString(p["network_id"])
}

func (portRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	if portNet(p) == "" {
		return validationErr("Property error: OS::Neutron::Port.properties: Property network not assigned")
	}
	s.mu.Lock()
	name := toString(p["name"])
	if name == "" {
		name = physicalName(r)
	}
	req := portRequest{NetworkID: portNet(p), Name: name, FixedIPs: listOfMaps(p["fixed_ips"]),
		Pairs: parsePairs(p["allowed_address_pairs"]), MAC: toString(p["mac_address"]), PortSecurity: boolPtr(p, "port_security_enabled"),
		VnicType: toString(p["binding:vnic_type"]), DeviceID: toString(p["device_id"]), DeviceOwner: toString(p["device_owner"]),
		Description: toString(p["description"])}
	if sg, ok := p["security_groups"]; ok {
		l := stringList(sg)
		req.SecGroups = &l
	}
	port, err := s.createPort(r.st.project, req)
	if err == nil {
		r.physID = port.id
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (portRes) update(ctx context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	p := r.props
	if portNet(old) != portNet(p) || changed(old, p, "mac_address", "binding:vnic_type") {
		return true, nil
	}
	s.mu.Lock()
	port := s.ports[r.physID]
	if port == nil {
		s.mu.Unlock()
		return true, nil
	}
	b := map[string]any{}
	for _, k := range []string{"fixed_ips", "allowed_address_pairs", "security_groups", "port_security_enabled", "description"} {
		if changed(old, p, k) {
			b[k] = orDefault(p[k], []any{})
		}
	}
	if changed(old, p, "name") {
		n := toString(p["name"])
		if n == "" {
			n = physicalName(r)
		}
		b["name"] = n
	}
	err := s.updatePort(port, b)
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	return false, sleep(ctx, s.opts.ResourceLatency)
}

func (portRes) delete(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	if p := s.ports[r.physID]; p != nil {
		s.unrouteFIPsOfPort(p)
		if p.deviceID != "" {
			s.detachPortFromServer(p)
		}
		s.deletePort(p.id)
	}
	s.mu.Unlock()
	return sleep(ctx, s.opts.ResourceLatency)
}

func (portRes) attr(s *Sim, r *resource, name string) (any, error) {
	p := s.ports[r.physID]
	if p == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.portJSON(p))).(map[string]any)
	switch name {
	case "show":
		return j, nil
	case "subnets":
		var out []any
		for _, f := range p.fixed {
			if sn := s.subnets[f.subnetID]; sn != nil {
				out = append(out, normalize(roundTrip(s.subnetJSON(sn))))
			}
		}
		return out, nil
	}
	return j[name], nil
}

// roundTrip turns typed values into plain JSON-like ones.
func roundTrip(v map[string]any) map[string]any {
	out := map[string]any{}
	for k, x := range v {
		switch t := x.(type) {
		case []string:
			out[k] = toAnyList(t)
		case map[string]string:
			m := map[string]any{}
			for a, b := range t {
				m[a] = b
			}
			out[k] = m
		case int:
			out[k] = float64(t)
		case map[string]any:
			out[k] = roundTrip(t)
		case []any:
			l := make([]any, len(t))
			for i, y := range t {
				if m, ok := y.(map[string]any); ok {
					l[i] = roundTrip(m)
				} else {
					l[i] = y
				}
			}
			out[k] = l
		default:
			out[k] = x
		}
	}
	return out
}

type fipRes struct{}

func (fipRes) schema() ([]string, []string) {
	return []string{"floating_network", "floating_network_id", "port_id", "fixed_ip_address", "floating_ip_address",
		"value_specs", "dns_name", "dns_domain", "floating_subnet"}, nil
}

func (fipRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	netRef := toString(p["floating_network"])
	if netRef == "" {
		netRef = toString(p["floating_network_id"])
	}
	if netRef == "" {
		return validationErr("Property error: OS::Neutron::FloatingIP.properties: Property floating_network not assigned")
	}
	var fixed, want netip.Addr
	if v := toString(p["fixed_ip_address"]); v != "" {
		fixed, _ = netip.ParseAddr(v)
	}
	if v := toString(p["floating_ip_address"]); v != "" {
		want, _ = netip.ParseAddr(v)
	}
	s.mu.Lock()
	f, err := s.createFIP(r.st.project, netRef, toString(p["port_id"]), fixed, want)
	if err == nil {
		r.physID = f.id
		s.fipChanged(f)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (fipRes) update(_ context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	p := r.props
	if changed(old, p, "floating_network", "floating_network_id", "floating_ip_address") {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fips[r.physID]
	if f == nil {
		return true, nil
	}
	var fixed netip.Addr
	if v := toString(p["fixed_ip_address"]); v != "" {
		fixed, _ = netip.ParseAddr(v)
	}
	prev := *f
	if err := s.associateFIP(f, toString(p["port_id"]), fixed); err != nil {
		return false, err
	}
	s.fipMoved(&prev, f)
	return false, nil
}

func (fipRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.fips[r.physID]; f != nil {
		prev := *f
		f.portID = ""
		s.fipMoved(&prev, f)
		delete(s.fips, f.id)
	}
	return nil
}

func (fipRes) attr(s *Sim, r *resource, name string) (any, error) {
	f := s.fips[r.physID]
	if f == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.fipJSON(f))).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type fipAssocRes struct{}

func (fipAssocRes) schema() ([]string, []string) {
	return []string{"floatingip_id", "port_id", "fixed_ip_address"}, []string{"floatingip_id", "port_id"}
}

func (fipAssocRes) create(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fips[toString(r.props["floatingip_id"])]
	if f == nil {
		return errf(404, "FloatingIPNotFound", "Floating IP %s could not be found", toString(r.props["floatingip_id"]))
	}
	var fixed netip.Addr
	if v := toString(r.props["fixed_ip_address"]); v != "" {
		fixed, _ = netip.ParseAddr(v)
	}
	prev := *f
	if err := s.associateFIP(f, toString(r.props["port_id"]), fixed); err != nil {
		return err
	}
	s.fipMoved(&prev, f)
	r.physID = f.id + ":" + f.portID
	return nil
}

func (fipAssocRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return true, nil
}

func (fipAssocRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fid, _, _ := strings.Cut(r.physID, ":")
	if f := s.fips[fid]; f != nil {
		prev := *f
		f.portID, f.fixedIP = "", netip.Addr{}
		s.fipMoved(&prev, f)
	}
	return nil
}

func (fipAssocRes) attr(*Sim, *resource, string) (any, error) { return nil, nil }

type netRes struct{}

func (netRes) schema() ([]string, []string) {
	return []string{"name", "shared", "admin_state_up", "port_security_enabled", "value_specs", "dhcp_agent_ids",
		"tenant_id", "qos_policy", "tags", "dns_domain", "availability_zone_hints"}, nil
}

func (netRes) create(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	b := map[string]any{"name": toString(r.props["name"])}
	if b["name"] == "" {
		b["name"] = physicalName(r)
	}
	for _, k := range []string{"shared", "port_security_enabled"} {
		if v, ok := r.props[k]; ok {
			b[k] = v
		}
	}
	j, err := s.neutronCreate("networks", r.st.project, b)
	if err == nil {
		r.physID = j["id"].(string)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (netRes) update(_ context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	if changed(old, r.props, "shared", "tenant_id") {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := map[string]any{}
	if n := toString(r.props["name"]); n != "" {
		b["name"] = n
	}
	if v, ok := r.props["port_security_enabled"]; ok {
		b["port_security_enabled"] = v
	}
	_, err := s.neutronUpdate("networks", r.physID, b)
	return false, err
}

func (netRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nets[r.physID] == nil {
		return nil
	}
	return s.neutronDelete("networks", r.physID)
}

func (netRes) attr(s *Sim, r *resource, name string) (any, error) {
	n := s.nets[r.physID]
	if n == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.networkJSON(n))).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type subnetRes struct{}

func (subnetRes) schema() ([]string, []string) {
	return []string{"network", "network_id", "cidr", "gateway_ip", "ip_version", "enable_dhcp", "allocation_pools", "name",
		"dns_nameservers", "host_routes", "value_specs", "tenant_id", "ipv6_address_mode", "ipv6_ra_mode", "subnetpool",
		"prefixlen", "tags", "segment"}, nil
}

func (subnetRes) create(ctx context.Context, s *Sim, r *resource) error {
	p := r.props
	s.mu.Lock()
	b := map[string]any{"network_id": portNet(p), "cidr": toString(p["cidr"]), "name": toString(p["name"]),
		"gateway_ip": toString(p["gateway_ip"]), "allocation_pools": orDefault(p["allocation_pools"], []any{})}
	if b["name"] == "" {
		b["name"] = physicalName(r)
	}
	if v, ok := p["enable_dhcp"]; ok {
		b["enable_dhcp"] = v
	}
	j, err := s.neutronCreate("subnets", r.st.project, b)
	if err == nil {
		r.physID = j["id"].(string)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (subnetRes) update(_ context.Context, s *Sim, r *resource, old map[string]any) (bool, error) {
	if changed(old, r.props, "network", "network_id", "cidr", "ip_version", "allocation_pools", "gateway_ip") {
		return true, nil
	}
	return false, nil
}

func (subnetRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subnets[r.physID] == nil {
		return nil
	}
	return s.neutronDelete("subnets", r.physID)
}

func (subnetRes) attr(s *Sim, r *resource, name string) (any, error) {
	sn := s.subnets[r.physID]
	if sn == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.subnetJSON(sn))).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type sgRes struct{}

func (sgRes) schema() ([]string, []string) {
	return []string{"name", "description", "rules", "stateful"}, nil
}

func (sgRes) create(ctx context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	name := toString(r.props["name"])
	if name == "" {
		name = physicalName(r)
	}
	j, err := s.neutronCreate("security-groups", r.st.project, map[string]any{"name": name, "description": toString(r.props["description"])})
	if err == nil {
		r.physID = j["id"].(string)
		for _, rule := range listOfMaps(r.props["rules"]) {
			b := map[string]any{}
			for k, v := range rule {
				b[k] = v
			}
			if rg := toString(rule["remote_group_id"]); rg == "" && toString(rule["remote_mode"]) == "remote_group_id" {
				b["remote_group_id"] = r.physID
			}
			if _, err = s.addRule(r.physID, b); err != nil {
				break
			}
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return sleep(ctx, s.opts.ResourceLatency)
}

func (sgRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) { return true, nil }

func (sgRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sgroups[r.physID] == nil {
		return nil
	}
	return s.neutronDelete("security-groups", r.physID)
}

func (sgRes) attr(s *Sim, r *resource, name string) (any, error) {
	g := s.sgroups[r.physID]
	if g == nil {
		return nil, nil
	}
	j := normalize(roundTrip(s.sgJSON(g))).(map[string]any)
	if name == "show" {
		return j, nil
	}
	return j[name], nil
}

type sgRuleRes struct{}

func (sgRuleRes) schema() ([]string, []string) {
	return []string{"security_group", "direction", "ethertype", "protocol", "port_range_min", "port_range_max",
		"remote_ip_prefix", "remote_group", "remote_mode", "description"}, []string{"security_group"}
}

func (sgRuleRes) create(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := map[string]any{}
	for k, v := range r.props {
		b[k] = v
	}
	b["remote_group_id"] = toString(r.props["remote_group"])
	rl, err := s.addRule(toString(r.props["security_group"]), b)
	if err != nil {
		return err
	}
	r.physID = rl.id
	return nil
}

func (sgRuleRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return true, nil
}

func (sgRuleRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.neutronDelete("security-group-rules", r.physID)
	return nil
}

func (sgRuleRes) attr(*Sim, *resource, string) (any, error) { return nil, nil }

// ---- Heat utility types ----

type noneRes struct{}

func (noneRes) create(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	r.physID = uuid.NewString()
	s.mu.Unlock()
	return nil
}
func (noneRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return false, nil
}
func (noneRes) delete(context.Context, *Sim, *resource) error { return nil }
func (noneRes) attr(*Sim, *resource, string) (any, error)     { return nil, nil }

type valueRes struct{}

func (valueRes) schema() ([]string, []string) { return []string{"value", "type"}, []string{"value"} }
func (valueRes) create(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	r.physID = uuid.NewString()
	s.mu.Unlock()
	return nil
}
func (valueRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return false, nil
}
func (valueRes) delete(context.Context, *Sim, *resource) error { return nil }
func (valueRes) attr(_ *Sim, r *resource, name string) (any, error) {
	if name == "value" {
		return r.props["value"], nil
	}
	return nil, nil
}

type randomRes struct{}

func (randomRes) schema() ([]string, []string) {
	return []string{"length", "character_classes", "character_sequences", "salt"}, nil
}
func (randomRes) create(_ context.Context, s *Sim, r *resource) error {
	n := num(r.props, "length", 32)
	v := ""
	for len(v) < n {
		v += uuid.NewString()[:8]
	}
	s.mu.Lock()
	r.data["value"] = v[:n]
	r.physID = v[:n]
	s.mu.Unlock()
	return nil
}
func (h randomRes) update(_ context.Context, _ *Sim, r *resource, old map[string]any) (bool, error) {
	return changed(old, r.props, "length", "character_classes", "character_sequences", "salt"), nil
}
func (randomRes) delete(context.Context, *Sim, *resource) error { return nil }
func (randomRes) attr(_ *Sim, r *resource, name string) (any, error) {
	if name == "value" {
		return r.data["value"], nil
	}
	return nil, nil
}

type configRes struct{ cloud bool }

func (c configRes) schema() ([]string, []string) {
	if c.cloud {
		return []string{"cloud_config"}, nil
	}
	return []string{"config", "group", "inputs", "outputs", "options"}, nil
}

func (c configRes) text(r *resource) string {
	if !c.cloud {
		return toString(r.props["config"])
	}
	b, _ := yaml.Marshal(r.props["cloud_config"])
	return "#cloud-config\n" + string(b)
}

func (c configRes) create(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.physID = uuid.NewString()
	s.swConfigs[r.physID] = c.text(r)
	return nil
}
func (configRes) update(context.Context, *Sim, *resource, map[string]any) (bool, error) {
	return true, nil
}
func (configRes) delete(_ context.Context, s *Sim, r *resource) error {
	s.mu.Lock()
	delete(s.swConfigs, r.physID)
	s.mu.Unlock()
	return nil
}
func (c configRes) attr(s *Sim, r *resource, name string) (any, error) {
	if name == "config" {
		return s.swConfigs[r.physID], nil
	}
	return nil, nil
}
