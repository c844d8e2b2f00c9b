package vnfpkg

import (
	"cmp"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// flavourCtx reads one deployment flavour's topology template.
type flavourCtx struct {
	r     *reader
	fd    flavourDoc
	file  string
	nodes map[string]*nodeTpl
	all   []*nodeTpl
	vnf   *nodeTpl
	fl    *model.Flavour
}

func (r *reader) readFlavour(fd flavourDoc, topVNF *nodeTpl) (*flavourCtx, error) {
	all, err := r.nodeTemplates(fd.tt)
	if err != nil {
		return nil, err
	}
	fc := &flavourCtx{r: r, fd: fd, file: fd.file.path, nodes: map[string]*nodeTpl{}, all: all,
		fl: &model.Flavour{ID: fd.id, VDUs: map[string]*model.VDU{}, Interfaces: map[string]string{}}}
	for _, n := range all {
		fc.nodes[n.name] = n
		if n.kind == typeVNF {
			if fc.vnf != nil {
				return nil, n.v.errf("flavour %s has two VNF nodes (%s and %s); keep one node derived from tosca.nodes.nfv.VNF", fd.id, fc.vnf.name, n.name)
			}
			fc.vnf = n
		}
	}
	if nt := fd.tt.get("substitution_mappings").get("node_type"); nt.exists() {
		s, err := nt.str()
		if err != nil {
			return nil, err
		}
		if !r.nodes.known(s) {
			return nil, nt.errf("substitution_mappings.node_type %s is not defined; define it in node_types (derived_from: tosca.nodes.nfv.VNF) or import the types file", s)
		}
		if !r.nodes.derivesFrom(s, typeVNF) {
			return nil, nt.errf("substitution_mappings.node_type %s does not derive from tosca.nodes.nfv.VNF", s)
		}
	}
	for _, kind := range []string{typeVL, typeBlockStorage, typeVDU, typeVduCp, typeVipCp, typeExtCp} {
		for _, n := range all {
			if n.kind != kind {
				continue
			}
			var err error
			switch kind {
			case typeVL:
				err = fc.readVL(n)
			case typeBlockStorage:
				err = fc.readStorage(n)
			case typeVDU:
				err = fc.readVDU(n)
			case typeVduCp:
				err = fc.readVduCp(n)
			case typeVipCp:
				err = fc.readVipCp(n)
			case typeExtCp:
				err = fc.readExtCpNode(n)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	for _, n := range all {
		if n.kind != "" {
			continue
		}
		for _, t := range untranslatedNodeTypes {
			if r.nodes.derivesFrom(n.typ, t) {
				fc.untranslated(n.name, n.typ)
				break
			}
		}
	}
	for _, v := range fc.fl.VDUs {
		slices.SortStableFunc(v.CPs, func(a, b model.VduCP) int {
			ao, bo := math.MaxInt, math.MaxInt
			if a.Order != nil {
				ao = *a.Order
			}
			if b.Order != nil {
				bo = *b.Order
			}
			return cmp.Or(cmp.Compare(ao, bo), strings.Compare(a.ID, b.ID))
		})
	}
	if err := fc.readExtCPs(); err != nil {
		return nil, err
	}
	for _, src := range []*nodeTpl{fc.vnf, topVNF} {
		if src == nil {
			continue
		}
		d, err := r.vnfProp(src, "flavour_description").optStr()
		if err != nil {
			return nil, err
		}
		if d != "" {
			fc.fl.Description = d
			break
		}
	}
	if err := fc.bindHooks(topVNF); err != nil {
		return nil, err
	}
	if err := fc.readPolicies(); err != nil {
		return nil, err
	}
	return fc, nil
}

// untranslatedNodeTypes describe VIM resources a generated Heat template
// would have to create but the VNFM does not translate (TOSCA normative
// compute and network nodes, object and file storage, container nodes).
var untranslatedNodeTypes = []string{"tosca.nodes.Compute", "tosca.nodes.BlockStorage", "tosca.nodes.network.Network",
	"tosca.nodes.network.Port", "tosca.nodes.LoadBalancer", "tosca.nodes.nfv.Vdu.VirtualObjectStorage",
	"tosca.nodes.nfv.Vdu.VirtualFileStorage", "tosca.nodes.nfv.Vdu.OsContainer", "tosca.nodes.nfv.Mciop",
	"tosca.nodes.nfv.VirtualCp", "tosca.nodes.nfv.Vdu.OsContainerDeployableUnit"}

func (fc *flavourCtx) untranslated(name, typ string) {
	if fc.fl.Untranslated == nil {
		fc.fl.Untranslated = map[string]string{}
	}
	fc.fl.Untranslated[name] = typ
}

// artifactFile resolves an artifact file path written in the flavour file
// (relative to it) to a package path.
func (fc *flavourCtx) artifactFile(v val) (string, error) {
	f, err := v.str()
	if err != nil {
		return "", err
	}
	if isURI(f) {
		return "", nil
	}
	if strings.HasPrefix(f, "/") || strings.Contains(f, "\\") {
		return "", v.errf("artifact file %q must be a path relative to this file, with / as separator", f)
	}
	p := path.Join(path.Dir(v.file), f)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", v.errf("artifact file %q points outside the package", f)
	}
	return p, nil
}

func (fc *flavourCtx) readVDU(n *nodeTpl) error {
	props := n.v.get("properties")
	vdu := &model.VDU{ID: n.name}
	var err error
	if vdu.Name, err = props.get("name").optStr(); err != nil {
		return err
	}
	if vdu.Name == "" {
		vdu.Name = n.name
	}
	if vdu.Description, err = props.get("description").optStr(); err != nil {
		return err
	}
	vp := props.get("vdu_profile")
	if !vp.exists() {
		return n.v.errf("VDU %s has no properties.vdu_profile; add `vdu_profile: {min_number_of_instances: 1, max_number_of_instances: 1}`", n.name)
	}
	if vdu.MinInstances, err = vp.get("min_number_of_instances").integer(); err != nil {
		return err
	}
	if vdu.MaxInstances, err = vp.get("max_number_of_instances").integer(); err != nil {
		return err
	}
	if vdu.MaxInstances < 1 || vdu.MinInstances > vdu.MaxInstances {
		return vp.errf("VDU %s: vdu_profile needs 0 <= min_number_of_instances <= max_number_of_instances and max >= 1 (got min %d, max %d)", n.name, vdu.MinInstances, vdu.MaxInstances)
	}
	vdu.InitialInstances = vdu.MinInstances
	if sw := props.get("sw_image_data"); sw.exists() {
		if vdu.SwImage, err = fc.swImage(n, sw); err != nil {
			return err
		}
	}
	vc := n.v.get("capabilities").get("virtual_compute").get("properties")
	racs := vc.get("requested_additional_capabilities")
	es, err := racs.entries()
	if err != nil {
		return err
	}
	for _, e := range es {
		name, err := racs.sub(e).get("requested_additional_capability_name").optStr()
		if err != nil {
			return err
		}
		if name != "" && vdu.Flavor == "" {
			vdu.Flavor = name
		}
	}
	if vdu.VirtualMemory, err = vc.get("virtual_memory").get("virtual_mem_size").optStr(); err != nil {
		return err
	}
	if vdu.VirtualCPUs, _, err = vc.get("virtual_cpu").get("num_virtual_cpu").optInt(); err != nil {
		return err
	}
	ls, err := vc.get("virtual_local_storage").list()
	if err != nil {
		return err
	}
	for _, l := range ls {
		s, err := l.get("size_of_storage").optStr()
		if err != nil {
			return err
		}
		if s != "" {
			vdu.LocalStorage = append(vdu.LocalStorage, s)
		}
	}
	reqs, err := requirements(n)
	if err != nil {
		return err
	}
	for _, rq := range reqs {
		if rq.name != "virtual_storage" {
			continue
		}
		t := fc.nodes[rq.target]
		if t == nil || t.kind != typeBlockStorage {
			if t != nil && strings.HasPrefix(t.typ, "tosca.nodes.nfv.Vdu.Virtual") {
				continue // object/file storage: not handled by the VNFM
			}
			return rq.v.errf("VDU %s requires virtual_storage %q, which is not a tosca.nodes.nfv.Vdu.VirtualBlockStorage node of flavour %s", n.name, rq.target, fc.fd.id)
		}
		vdu.Storages = append(vdu.Storages, rq.target)
	}
	if vdu.Flavor == "" {
		fc.r.p.warnf("%s:%d: VDU %s has no capabilities.virtual_compute.properties.requested_additional_capabilities.*.requested_additional_capability_name; the Heat template must then choose the compute flavor itself", fc.file, n.v.pos().Line, n.name)
	}
	fc.fl.VDUs[n.name] = vdu
	return nil
}

func (fc *flavourCtx) swImage(n *nodeTpl, sw val) (*model.SwImage, error) {
	img := &model.SwImage{}
	var err error
	if img.Name, err = sw.get("name").str(); err != nil {
		return nil, err
	}
	if img.Version, err = sw.get("version").optStr(); err != nil {
		return nil, err
	}
	if cs := sw.get("checksum"); cs.isMap() {
		if img.ChecksumAlg, err = cs.get("algorithm").optStr(); err != nil {
			return nil, err
		}
		if img.Checksum, err = cs.get("hash").optStr(); err != nil {
			return nil, err
		}
	} else if img.Checksum, err = cs.optStr(); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"container_format", &img.ContainerFormat}, {"disk_format", &img.DiskFormat}, {"operating_system", &img.OperatingSystem}} {
		if *f.dst, err = sw.get(f.key).optStr(); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"min_disk", &img.MinDisk}, {"min_ram", &img.MinRAM}, {"size", &img.Size}} {
		v := sw.get(f.key)
		s, err := v.optStr()
		if err != nil {
			return nil, err
		}
		if s == "" {
			continue
		}
		if *f.dst, err = parseSize(s); err != nil {
			return nil, v.errf("%s: %v", v.path, err)
		}
	}
	if af := n.v.get("artifacts").get("sw_image").get("file"); af.exists() {
		p, err := fc.artifactFile(af)
		if err != nil {
			return nil, err
		}
		if p != "" && !fc.r.p.Has(p) {
			return nil, af.errf("the sw_image artifact of %s is %s, which is not in the package; add the image or remove the artifact to use the image named %q from the VIM", n.name, p, img.Name)
		}
		img.File = p
	}
	return img, nil
}

// parseSize reads a TOSCA scalar-unit.size ("4 GB", "512 MiB", "10GiB").
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i <= 0 {
		return 0, fmt.Errorf("%q is not a size (write e.g. \"10 GB\")", truncate(s, 40))
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]float64{"b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30, "tb": 1e12, "tib": 1 << 40}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil || f*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size (units: B, kB, KiB, MB, MiB, GB, GiB, TB, TiB)", truncate(s, 40))
	}
	return int64(f * mult), nil
}

func (fc *flavourCtx) readStorage(n *nodeTpl) error {
	props := n.v.get("properties")
	st := &model.VirtualStorage{ID: n.name, Type: "BlockStorage"}
	data := props.get("virtual_block_storage_data")
	if !data.exists() {
		return n.v.errf("virtual storage %s has no properties.virtual_block_storage_data; add `virtual_block_storage_data: {size_of_storage: 10 GB}`", n.name)
	}
	sv := data.get("size_of_storage")
	var err error
	if st.SizeOfStorage, err = sv.str(); err != nil {
		return err
	}
	if st.Size, err = parseSize(st.SizeOfStorage); err != nil {
		return sv.errf("%s: %v", sv.path, err)
	}
	if st.RdmaEnabled, err = data.get("rdma_enabled").boolean(); err != nil {
		return err
	}
	if sw := props.get("sw_image_data"); sw.exists() {
		if st.SwImage, err = fc.swImage(n, sw); err != nil {
			return err
		}
	}
	if fc.fl.Storages == nil {
		fc.fl.Storages = map[string]*model.VirtualStorage{}
	}
	fc.fl.Storages[n.name] = st
	return nil
}

func (fc *flavourCtx) readVL(n *nodeTpl) error {
	props := n.v.get("properties")
	vl := &model.VirtualLink{ID: n.name}
	var err error
	if vl.Description, err = props.get("description").optStr(); err != nil {
		return err
	}
	if vl.LayerProtocols, err = props.get("connectivity_type").get("layer_protocols").strList(); err != nil {
		return err
	}
	pds, err := props.get("vl_profile").get("virtual_link_protocol_data").list()
	if err != nil {
		return err
	}
	for _, pd := range pds {
		var pr model.VirtualLinkProtocol
		if pr.LayerProtocol, err = pd.get("associated_layer_protocol").optStr(); err != nil {
			return err
		}
		l3 := pd.get("l3_protocol_data")
		for _, f := range []struct {
			key string
			dst *string
		}{{"ip_version", &pr.IPVersion}, {"cidr", &pr.CIDR}, {"gateway_ip", &pr.GatewayIP}} {
			if *f.dst, err = l3.get(f.key).optStr(); err != nil {
				return err
			}
		}
		if d := l3.get("dhcp_enabled"); d.exists() {
			b, err := d.boolean()
			if err != nil {
				return err
			}
			pr.DHCPEnabled = &b
		}
		vl.Protocols = append(vl.Protocols, pr)
	}
	if fc.fl.VirtualLinks == nil {
		fc.fl.VirtualLinks = map[string]*model.VirtualLink{}
	}
	fc.fl.VirtualLinks[n.name] = vl
	return nil
}

// checkVL validates a virtual_link requirement target.
func (fc *flavourCtx) checkVL(n *nodeTpl, rq requirement) error {
	if rq.target == "" {
		return nil
	}
	if _, ok := fc.fl.VirtualLinks[rq.target]; !ok {
		return rq.v.errf("%s: %s %q is not a tosca.nodes.nfv.VnfVirtualLink node of flavour %s (virtual links: %s)", n.name, rq.name, rq.target, fc.fd.id, quoteList(sortedKeys(fc.fl.VirtualLinks)))
	}
	return nil
}

func (fc *flavourCtx) readVduCp(n *nodeTpl) error {
	props := n.v.get("properties")
	cp := model.VduCP{ID: n.name}
	order, set, err := props.get("order").optInt()
	if err != nil {
		return err
	}
	if set {
		cp.Order = &order
	}
	if cp.LayerProtocols, err = props.get("layer_protocols").strList(); err != nil {
		return err
	}
	reqs, err := requirements(n)
	if err != nil {
		return err
	}
	var vdu *model.VDU
	for _, rq := range reqs {
		switch rq.name {
		case "virtual_binding":
			vdu = fc.fl.VDUs[rq.target]
			if vdu == nil {
				return rq.v.errf("%s: virtual_binding %q is not a VDU (tosca.nodes.nfv.Vdu.Compute) of flavour %s (VDUs: %s)", n.name, rq.target, fc.fd.id, quoteList(sortedKeys(fc.fl.VDUs)))
			}
		case "virtual_link":
			if err := fc.checkVL(n, rq); err != nil {
				return err
			}
			cp.VirtualLink = rq.target
		}
	}
	if vdu == nil {
		return n.v.errf("VduCp %s has no virtual_binding requirement; add `requirements: [virtual_binding: <VDU>]`", n.name)
	}
	vdu.CPs = append(vdu.CPs, cp)
	return nil
}

func (fc *flavourCtx) readVipCp(n *nodeTpl) error {
	vip := &model.VipCP{ID: n.name}
	var err error
	if vip.VipFunction, err = n.v.get("properties").get("vip_function").optStr(); err != nil {
		return err
	}
	reqs, err := requirements(n)
	if err != nil {
		return err
	}
	for _, rq := range reqs {
		switch rq.name {
		case "target":
			if !fc.isVduCp(rq.target) {
				return rq.v.errf("VipCp %s: target %q is not a VduCp of flavour %s", n.name, rq.target, fc.fd.id)
			}
			vip.Targets = append(vip.Targets, rq.target)
		case "virtual_link":
			if err := fc.checkVL(n, rq); err != nil {
				return err
			}
			vip.VirtualLink = rq.target
		}
	}
	if fc.fl.VipCPs == nil {
		fc.fl.VipCPs = map[string]*model.VipCP{}
	}
	fc.fl.VipCPs[n.name] = vip
	return nil
}

func (fc *flavourCtx) isVduCp(name string) bool {
	n := fc.nodes[name]
	return n != nil && n.kind == typeVduCp
}

func (fc *flavourCtx) readExtCpNode(n *nodeTpl) error {
	reqs, err := requirements(n)
	if err != nil {
		return err
	}
	ext := &model.ExtCP{ID: n.name, Kind: "VnfExtCp"}
	for _, rq := range reqs {
		if rq.name == "internal_virtual_link" {
			if err := fc.checkVL(n, rq); err != nil {
				return err
			}
			ext.VirtualLink = rq.target
		}
	}
	if fc.fl.ExtCPs == nil {
		fc.fl.ExtCPs = map[string]*model.ExtCP{}
	}
	fc.fl.ExtCPs[n.name] = ext
	return nil
}

// readExtCPs reads substitution_mappings.requirements: each maps a VNF
// requirement (virtual_link_external...) to [node, requirement].
func (fc *flavourCtx) readExtCPs() error {
	rm := fc.fd.tt.get("substitution_mappings").get("requirements")
	if rm.exists() && !rm.isMap() {
		return rm.errf("substitution_mappings.requirements must be a mapping such as `virtual_link_external1: [VDU1_CP1, virtual_link]`, got %s", rm.kind())
	}
	es, err := rm.entries()
	if err != nil {
		return err
	}
	for _, e := range es {
		v := rm.sub(e)
		parts, err := v.strList()
		if err == nil && len(parts) == 0 {
			// Tacker's CNF packages write `virtual_link_external: []`: the
			// requirement exists and nothing is mapped to it.
			continue
		}
		if err != nil || len(parts) > 2 {
			return v.errf("substitution_mappings.requirements.%s must be [<node template>, <requirement>] such as [VDU1_CP1, virtual_link]", e.key)
		}
		n := fc.nodes[parts[0]]
		if n == nil {
			return v.errf("substitution_mappings.requirements.%s names %q, which is not a node template of flavour %s", e.key, parts[0], fc.fd.id)
		}
		if fc.fl.ExtCPs == nil {
			fc.fl.ExtCPs = map[string]*model.ExtCP{}
		}
		switch n.kind {
		case typeVduCp:
			ext := &model.ExtCP{ID: n.name, Requirement: e.key, Kind: "VduCp"}
			for _, vdu := range fc.fl.VDUs {
				for _, cp := range vdu.CPs {
					if cp.ID == n.name {
						ext.VDU = vdu.ID
						if cp.VirtualLink != "" {
							return v.errf("%s is exposed as an external CP but is also attached to the internal virtual link %s; a CP connects to one network", n.name, cp.VirtualLink)
						}
					}
				}
			}
			fc.fl.ExtCPs[n.name] = ext
		case typeVipCp:
			fc.fl.ExtCPs[n.name] = &model.ExtCP{ID: n.name, Requirement: e.key, Kind: "VipCp"}
		case typeExtCp:
			fc.fl.ExtCPs[n.name].Requirement = e.key
		default:
			return v.errf("substitution_mappings.requirements.%s names %s, a %s; external CPs must be VduCp, VnfExtCp or VipCp nodes", e.key, n.name, n.typ)
		}
	}
	// A VduCp with neither a virtual link nor an external mapping has no
	// network to attach to.
	for _, id := range sortedKeys(fc.fl.VDUs) {
		for _, cp := range fc.fl.VDUs[id].CPs {
			if _, ext := fc.fl.ExtCPs[cp.ID]; !ext && cp.VirtualLink == "" {
				fc.r.p.warnf("%s: VduCp %s of flavour %s has no virtual_link and is not exposed in substitution_mappings.requirements, so it gets no network from the VNFD", fc.file, cp.ID, fc.fd.id)
			}
		}
	}
	return nil
}
