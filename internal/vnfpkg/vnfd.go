package vnfpkg

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// toscaVersions are the tosca_definitions_version values accepted.
var toscaVersions = []string{"tosca_simple_yaml_1_0", "tosca_simple_yaml_1_1", "tosca_simple_yaml_1_2", "tosca_simple_yaml_1_3", "tosca_2_0"}

// vfile is one loaded VNFD file.
type vfile struct {
	path string
	root val
}

// reader reads the SOL001 VNFD of a package.
type reader struct {
	p        *Package
	files    []*vfile
	byPath   map[string]*vfile
	nodes    *typeSystem
	policies *typeSystem
	arts     *typeSystem
}

func (p *Package) readVnfd() error {
	r := &reader{p: p, byPath: map[string]*vfile{},
		nodes:    &typeSystem{builtin: builtinNodeTypes, defs: map[string]*typeDef{}},
		policies: &typeSystem{builtin: builtinPolicyTypes, defs: map[string]*typeDef{}},
		arts:     &typeSystem{builtin: builtinArtifactTypes, defs: map[string]*typeDef{}},
	}
	if err := r.load(p.entry, val{}); err != nil {
		return err
	}
	if err := r.collectTypes(); err != nil {
		return err
	}
	vnfd, err := r.build()
	if err != nil {
		return err
	}
	p.summary = vnfd
	if p.meta != nil {
		p.vnfdFiles = append(p.vnfdFiles, metaPath)
	}
	for _, f := range r.files {
		p.vnfdFiles = append(p.vnfdFiles, f.path)
	}
	slices.Sort(p.vnfdFiles)
	return p.readHOTs()
}

// load parses a VNFD file and, depth first, its imports.
func (r *reader) load(name string, from val) error {
	if _, ok := r.byPath[name]; ok {
		return nil
	}
	if len(r.files) >= r.p.opts.MaxYAMLFiles {
		return from.errf("the VNFD imports more than %d files", r.p.opts.MaxYAMLFiles)
	}
	root, err := r.p.parseYAML(name)
	if err != nil {
		return err
	}
	v := newVal(name, root, "")
	if !v.isMap() {
		return v.errf("a VNFD file must hold a YAML mapping (tosca_definitions_version, imports, node_types, topology_template), got %s", v.kind())
	}
	ver := v.get("tosca_definitions_version")
	if !ver.exists() {
		if name == r.p.entry {
			return errorf(name, "tosca_definitions_version is missing; start the file with `tosca_definitions_version: tosca_simple_yaml_1_3` (or 1_2)")
		}
	} else {
		s, err := ver.str()
		if err != nil {
			return err
		}
		if !slices.Contains(toscaVersions, s) {
			return ver.errf("unsupported tosca_definitions_version %q; use one of %s", s, quoteList(toscaVersions))
		}
	}
	f := &vfile{path: name, root: v}
	r.files = append(r.files, f)
	r.byPath[name] = f
	imports, err := v.get("imports").list()
	if err != nil {
		return err
	}
	for _, imp := range imports {
		ref, err := importRef(imp)
		if err != nil {
			return err
		}
		if isURI(ref) {
			if isETSITypeFile(ref) {
				continue
			}
			return imp.errf("imports %q from the network; the VNFM reads only files inside the package: add the file to the package and import it by relative path", ref)
		}
		if strings.HasPrefix(ref, "/") || strings.Contains(ref, "\\") {
			return imp.errf("import %q must be a path relative to this file, with / as separator", ref)
		}
		target := path.Join(path.Dir(name), ref)
		if target == ".." || strings.HasPrefix(target, "../") {
			return imp.errf("import %q points outside the package", ref)
		}
		if !r.p.Has(target) {
			if isETSITypeFile(ref) {
				continue // the ETSI SOL001 types are built in
			}
			if c := path.Clean(ref); r.p.Has(c) {
				r.p.warnf("%s:%d: import %q was found only relative to the package root; imports are relative to the importing file", name, imp.pos().Line, ref)
				target = c
			} else {
				return imp.errf("imports %q (%s relative to this file), which is not in the package; add the file or fix the path", ref, target)
			}
		}
		if !isYAMLName(target) {
			return imp.errf("import %q is not a YAML file (.yaml or .yml)", ref)
		}
		if err := r.load(target, imp); err != nil {
			return err
		}
	}
	return nil
}

// importRef reads one imports entry: "file.yaml", {file: f.yaml} or
// {name: {file: f.yaml}} / {name: f.yaml}.
func importRef(v val) (string, error) {
	if v.isMap() {
		if f := v.get("file"); f.exists() {
			return f.str()
		}
		ps := pairs(v.n)
		if len(ps) == 1 {
			inner := v.sub(ps[0])
			if inner.isMap() {
				return inner.get("file").str()
			}
			return inner.str()
		}
		return "", v.errf("cannot read this import; write `- path/to/file.yaml` or `- file: path/to/file.yaml`")
	}
	s, err := v.str()
	if err == nil && s == "" {
		return "", v.errf("empty import")
	}
	return s, err
}

// collectTypes gathers node_types, policy_types and artifact_types.
func (r *reader) collectTypes() error {
	for _, sect := range []struct {
		key string
		ts  *typeSystem
	}{{"node_types", r.nodes}, {"policy_types", r.policies}, {"artifact_types", r.arts}} {
		for _, f := range r.files {
			es, err := f.root.get(sect.key).entries()
			if err != nil {
				return err
			}
			for _, e := range es {
				def := f.root.get(sect.key).sub(e)
				if _, builtin := sect.ts.builtin[e.key]; builtin {
					continue // an ETSI type file in the package: built-in knowledge wins
				}
				if prev, dup := sect.ts.defs[e.key]; dup {
					return errNode(f.path, e.k, "type %s is defined twice (also in %s:%d); keep one definition", e.key, prev.file, prev.v.pos().Line)
				}
				if !def.isMap() {
					return def.errf("type %s must be a mapping (derived_from, properties, ...), got %s", e.key, def.kind())
				}
				parent, err := def.get("derived_from").optStr()
				if err != nil {
					return err
				}
				sect.ts.defs[e.key] = &typeDef{name: e.key, parent: parent, file: f.path, v: def}
			}
		}
		for _, name := range sortedKeys(sect.ts.defs) {
			d := sect.ts.defs[name]
			cur, steps := d, 0
			for {
				if cur.parent == "" {
					break
				}
				if _, ok := sect.ts.builtin[cur.parent]; ok {
					break
				}
				next, ok := sect.ts.defs[cur.parent]
				if !ok {
					if sect.key == "artifact_types" || isETSITypeFile(cur.file) {
						break // lenient for artifacts and the ETSI files' own types
					}
					return cur.v.get("derived_from").errf("type %s derives from %s, which is neither a SOL001 type nor defined in the package; import the file that defines it or fix the name", cur.name, cur.parent)
				}
				if steps++; steps > 32 {
					return d.v.get("derived_from").errf("type %s has a derived_from cycle", d.name)
				}
				cur = next
			}
		}
	}
	return nil
}

// flavourDoc is a topology template defining a deployment flavour.
type flavourDoc struct {
	id   string
	file *vfile
	tt   val
}

// vnfInfo is the VNF node's descriptor properties.
type vnfInfo struct {
	props map[string]val // merged: flavour < top < type defaults
}

func (r *reader) build() (*model.Vnfd, error) {
	entry := r.byPath[r.p.entry]
	var top val
	var flavours []flavourDoc
	seenFlavour := map[string]flavourDoc{}
	for _, f := range r.files {
		tt := f.root.get("topology_template")
		if !tt.exists() {
			continue
		}
		if !tt.isMap() {
			return nil, tt.errf("topology_template must be a mapping, got %s", tt.kind())
		}
		sm := tt.get("substitution_mappings")
		if !sm.exists() {
			if f == entry {
				top = tt
				continue
			}
			return nil, tt.errf("this topology_template has no substitution_mappings; a deployment flavour file needs `substitution_mappings: {node_type: <VNF type>, properties: {flavour_id: <id>}}` (only the entry file %s may have a topology_template without it)", r.p.entry)
		}
		if !sm.isMap() {
			return nil, sm.errf("substitution_mappings must be a mapping, got %s", sm.kind())
		}
		fidV := sm.get("properties").get("flavour_id")
		fid, err := fidV.optStr()
		if err != nil {
			return nil, err
		}
		if fid == "" {
			// Fall back to the VNF type's flavour_id default.
			if nt, _ := sm.get("node_type").optStr(); nt != "" {
				if d := r.typeDefault(nt, "flavour_id"); d.exists() {
					fid, _ = d.optStr()
				}
			}
		}
		if fid == "" {
			return nil, sm.errf("substitution_mappings has no properties.flavour_id; add `properties: {flavour_id: <id>}` naming the deployment flavour this file defines")
		}
		if prev, dup := seenFlavour[fid]; dup {
			return nil, fidV.errf("flavour %q is defined twice (also in %s); give each flavour file its own flavour_id", fid, prev.file.path)
		}
		fd := flavourDoc{id: fid, file: f, tt: tt}
		seenFlavour[fid] = fd
		flavours = append(flavours, fd)
	}
	var topVNF *nodeTpl
	if top.exists() {
		vnfs, err := r.nodesOfKind(top, typeVNF)
		if err != nil {
			return nil, err
		}
		if len(vnfs) > 1 {
			return nil, vnfs[1].v.errf("the topology_template has %d VNF nodes (%s, %s, ...); keep one node derived from tosca.nodes.nfv.VNF", len(vnfs), vnfs[0].name, vnfs[1].name)
		}
		if len(vnfs) == 1 {
			topVNF = vnfs[0]
		}
	}
	if len(flavours) == 0 {
		if topVNF == nil {
			return nil, errorf(r.p.entry, "the VNFD defines no deployment flavour: add one file per flavour with `topology_template.substitution_mappings.properties.flavour_id: <id>` (Tacker style) and import it from %s, or put a VNF node with a flavour_id in this file's topology_template", r.p.entry)
		}
		fid, err := r.vnfProp(topVNF, "flavour_id").optStr()
		if err != nil {
			return nil, err
		}
		if fid == "" {
			return nil, topVNF.v.errf("the VNF node has no flavour_id and no file defines a flavour; set properties.flavour_id or add flavour files with substitution_mappings.properties.flavour_id")
		}
		flavours = append(flavours, flavourDoc{id: fid, file: entry, tt: top})
	}
	slices.SortFunc(flavours, func(a, b flavourDoc) int { return strings.Compare(a.id, b.id) })

	vnfd := &model.Vnfd{Flavours: map[string]*model.Flavour{}}
	vnfd.Description, _ = entry.root.get("description").optStr()
	var fls []*flavourCtx
	for _, fd := range flavours {
		fc, err := r.readFlavour(fd, topVNF)
		if err != nil {
			return nil, err
		}
		fls = append(fls, fc)
		vnfd.Flavours[fd.id] = fc.fl
	}
	// Descriptor properties: top VNF node, else the flavours' VNF nodes
	// (which must agree), else the VNF type's defaults.
	required := []struct {
		key string
		dst *string
	}{{"descriptor_id", &vnfd.ID}, {"provider", &vnfd.Provider}, {"product_name", &vnfd.ProductName},
		{"software_version", &vnfd.SoftwareVersion}, {"descriptor_version", &vnfd.Version}}
	for _, q := range required {
		var src val
		for _, n := range append([]*nodeTpl{topVNF}, vnfNodes(fls)...) {
			if n == nil {
				continue
			}
			v := r.vnfProp(n, q.key)
			s, err := v.optStr()
			if err != nil {
				return nil, err
			}
			if s == "" {
				continue
			}
			if *q.dst == "" {
				*q.dst, src = s, v
			} else if s != *q.dst {
				return nil, v.errf("%s is %q here but %q in %s:%d; the deployment flavours of one VNFD must agree", q.key, s, *q.dst, src.file, src.pos().Line)
			}
		}
		for _, fc := range fls {
			if *q.dst != "" {
				break
			}
			// substitution_mappings.properties, then the VNF type's default.
			sm := fc.fd.tt.get("substitution_mappings")
			v := sm.get("properties").get(q.key)
			if !v.exists() || v.isFunc() {
				if nt, _ := sm.get("node_type").optStr(); nt != "" {
					v = r.typeDefault(nt, q.key)
				}
			}
			s, err := v.optStr()
			if err != nil {
				return nil, err
			}
			*q.dst = s
		}
		if *q.dst == "" {
			if topVNF != nil {
				return nil, topVNF.v.errf("the VNF node has no %s; set it in its properties (%s) or as the default of the VNF node type %s", q.key, q.key, topVNF.typ)
			}
			return nil, errorf(r.p.entry, "the VNF node has no %s; set it in the VNF node's properties (topology_template.node_templates.VNF.properties.%s) or as the default of the VNF node type", q.key, q.key)
		}
	}
	for _, n := range append([]*nodeTpl{topVNF}, vnfNodes(fls)...) {
		if n == nil {
			continue
		}
		if vi := r.vnfProp(n, "vnfm_info"); vi.exists() && !vi.isFunc() {
			list, err := vi.strList()
			if err != nil {
				return nil, err
			}
			vnfd.VnfmInfo = list
			break
		}
	}
	// The VNF type's flavour_id valid_values should match the flavours.
	for _, n := range append([]*nodeTpl{topVNF}, vnfNodes(fls)...) {
		if n == nil {
			continue
		}
		for _, d := range r.nodes.chain(n.typ) {
			cons, _ := d.v.get("properties").get("flavour_id").get("constraints").list()
			for _, c := range cons {
				vv, _ := c.get("valid_values").strList()
				for _, fid := range vv {
					if _, ok := vnfd.Flavours[fid]; !ok {
						r.p.warnf("%s:%d: flavour_id lists %q in valid_values but no file defines that flavour (substitution_mappings.properties.flavour_id: %s)", d.file, c.pos().Line, fid, fid)
					}
				}
			}
		}
		break
	}
	return vnfd, nil
}

func vnfNodes(fls []*flavourCtx) []*nodeTpl {
	var out []*nodeTpl
	for _, f := range fls {
		if f.vnf != nil {
			out = append(out, f.vnf)
		}
	}
	return out
}

// vnfProp returns a VNF node's property: the template's literal value, else
// the node type chain's default.
func (r *reader) vnfProp(n *nodeTpl, key string) val {
	v := n.v.get("properties").get(key)
	if v.exists() && !v.isFunc() {
		return v
	}
	if d := r.typeDefault(n.typ, key); d.exists() {
		return d
	}
	return v
}

// typeDefault returns the default of a property in a node type chain.
func (r *reader) typeDefault(typ, key string) val {
	for _, d := range r.nodes.chain(typ) {
		if def := d.v.get("properties").get(key).get("default"); def.exists() {
			return def
		}
	}
	return val{}
}

// nodeTpl is a node template.
type nodeTpl struct {
	name string
	typ  string
	kind string // the SOL001 type it derives from, "" for others
	v    val
}

var nodeKinds = []string{typeVNF, typeVDU, typeBlockStorage, typeVduCp, typeExtCp, typeVipCp, typeVL}

// nodeTemplates reads a topology template's node_templates.
func (r *reader) nodeTemplates(tt val) ([]*nodeTpl, error) {
	nts := tt.get("node_templates")
	es, err := nts.entries()
	if err != nil {
		return nil, err
	}
	out := make([]*nodeTpl, 0, len(es))
	for _, e := range es {
		v := nts.sub(e)
		if !v.isMap() {
			return nil, v.errf("node template %s must be a mapping (type, properties, ...), got %s", e.key, v.kind())
		}
		typ, err := v.get("type").str()
		if err != nil {
			return nil, err
		}
		if !r.nodes.known(typ) {
			return nil, v.get("type").errf("node template %s has type %s, which is neither a SOL001 type nor defined in the package's node_types%s", e.key, typ, r.suggest(typ))
		}
		n := &nodeTpl{name: e.key, typ: typ, v: v}
		for _, k := range nodeKinds {
			if r.nodes.derivesFrom(typ, k) {
				n.kind = k
				break
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// suggest proposes a known type differing only in case.
func (r *reader) suggest(typ string) string {
	for _, ts := range []*typeSystem{r.nodes, r.policies} {
		for n := range ts.builtin {
			if strings.EqualFold(n, typ) {
				return fmt.Sprintf(" (did you mean %s?)", n)
			}
		}
	}
	return "; check the spelling (e.g. tosca.nodes.nfv.Vdu.Compute, tosca.nodes.nfv.VduCp) or import the file that defines it"
}

func (r *reader) nodesOfKind(tt val, kind string) ([]*nodeTpl, error) {
	all, err := r.nodeTemplates(tt)
	if err != nil {
		return nil, err
	}
	var out []*nodeTpl
	for _, n := range all {
		if n.kind == kind {
			out = append(out, n)
		}
	}
	return out, nil
}

// requirement is one entry of a node template's requirements list.
type requirement struct {
	name, target string
	v            val
}

// requirements reads a node template's requirements: a list of single-key
// maps whose value is a node name or {node: name, ...}.
func requirements(n *nodeTpl) ([]requirement, error) {
	rv := n.v.get("requirements")
	if rv.exists() && rv.isMap() {
		return nil, rv.errf("requirements of %s must be a list of single-key maps (- virtual_binding: VDU1), not a mapping", n.name)
	}
	items, err := rv.list()
	if err != nil {
		return nil, err
	}
	var out []requirement
	for _, it := range items {
		if !it.isMap() || len(pairs(it.n)) != 1 {
			return nil, it.errf("each requirement of %s must be a single-key map such as `- virtual_binding: VDU1`, got %s", n.name, it.kind())
		}
		e := pairs(it.n)[0]
		tv := it.sub(e)
		var target string
		switch {
		case tv.isMap():
			target, err = tv.get("node").optStr()
		case tv.exists():
			target, err = tv.str()
		}
		if err != nil {
			return nil, err
		}
		out = append(out, requirement{name: e.key, target: target, v: tv})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
