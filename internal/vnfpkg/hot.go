package vnfpkg

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"go.yaml.in/yaml/v3"
)

const baseHOTDir = "BaseHOT"

// readHOTs finds each flavour's Heat base template (BaseHOT/<flavourId>/ one
// top template, BaseHOT/<flavourId>/nested/ the templates it uses), checks
// the templates parse, that every template and get_file they reference is in
// the package, and that get_param [nfv, VDU|CP, <id>, ...] names nodes of the
// flavour.
func (p *Package) readHOTs() error {
	hotDirs := map[string]bool{}
	for _, n := range p.names {
		if rest, ok := strings.CutPrefix(n, baseHOTDir+"/"); ok {
			if fid, _, ok := strings.Cut(rest, "/"); ok {
				hotDirs[fid] = true
			}
		}
	}
	for _, fid := range sortedKeys(hotDirs) {
		if _, ok := p.summary.Flavours[fid]; !ok {
			p.warnf("%s/%s/ is ignored: the VNFD has no flavour %q (flavours: %s)", baseHOTDir, fid, fid, quoteList(sortedKeys(p.summary.Flavours)))
		}
	}
	for _, fid := range sortedKeys(p.summary.Flavours) {
		if !hotDirs[fid] {
			if len(hotDirs) > 0 {
				p.warnf("flavour %s has no Heat template (%s/%s/<top>.yaml)", fid, baseHOTDir, fid)
			}
			continue
		}
		h, err := p.readHOT(fid)
		if err != nil {
			return err
		}
		p.summary.Flavours[fid].HOT = h
	}
	return nil
}

func (p *Package) readHOT(fid string) (*model.HOT, error) {
	dir := baseHOTDir + "/" + fid
	nestedDir := dir + "/nested"
	var tops, nested []string
	for _, n := range p.names {
		switch {
		case path.Dir(n) == dir && isYAMLName(n):
			tops = append(tops, n)
		case strings.HasPrefix(n, nestedDir+"/") && isYAMLName(n):
			nested = append(nested, n)
		}
	}
	switch len(tops) {
	case 0:
		return nil, errorf(dir, "the directory has no top Heat template; put exactly one <name>.yaml in %s/ and the templates it uses in %s/", dir, nestedDir)
	case 1:
	default:
		return nil, errorf(dir, "the directory has %d top-level templates (%s) but a flavour has one top Heat template; move the nested ones to %s/", len(tops), quoteList(tops), nestedDir)
	}
	h := &model.HOT{Top: tops[0], Nested: nested, Files: map[string]string{}}
	fl := p.summary.Flavours[fid]
	done := map[string]bool{}
	queue := append([]string{h.Top}, nested...)
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		if done[t] {
			continue
		}
		done[t] = true
		root, err := p.parseYAML(t)
		if err != nil {
			return nil, err
		}
		v := newVal(t, root, "")
		if !v.isMap() || !v.get("heat_template_version").exists() {
			return nil, v.errf("not a Heat template: a HOT is a mapping starting with heat_template_version")
		}
		if _, err := v.get("resources").entries(); err != nil {
			return nil, err
		}
		refs := heatRefs(root)
		for _, ref := range refs {
			target, err := p.resolveHeatRef(t, nestedDir, ref)
			if err != nil {
				return nil, err
			}
			if prev, ok := h.Files[ref.value]; ok && prev != target {
				return nil, errNode(t, ref.n, "%q refers to %s here but to %s elsewhere; Heat keys files by the name as written, so give the templates distinct names", ref.value, target, prev)
			}
			h.Files[ref.value] = target
			if ref.template {
				queue = append(queue, target)
			}
		}
		if t == h.Top {
			if err := checkNfvParams(t, v, fl); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range nested {
		if _, ok := h.Files[path.Base(n)]; !ok && !slices.Contains(mapValues(h.Files), n) {
			h.Files[path.Base(n)] = n // Tacker passes every nested template by its bare name
		}
	}
	return h, nil
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// heatRef is a template (resource type) or get_file reference.
type heatRef struct {
	value    string
	template bool
	n        *yaml.Node
}

// heatRefs finds `type: x.yaml` and `get_file: path` in a template.
func heatRefs(root *yaml.Node) []heatRef {
	var out []heatRef
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 128 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], deref(n.Content[i+1])
				if v != nil && v.Kind == yaml.ScalarNode && k.Kind == yaml.ScalarNode {
					switch {
					case k.Value == "type" && isYAMLName(v.Value) && !strings.Contains(v.Value, "::"):
						out = append(out, heatRef{value: v.Value, template: true, n: v})
					case k.Value == "get_file":
						out = append(out, heatRef{value: v.Value, n: v})
					}
				}
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1) // aliases are not followed: their target is walked where it is defined
		}
	}
	walk(root, 0)
	return out
}

// resolveHeatRef finds the package file a template reference names:
// relative to the referencing template, else (a bare name) in nested/.
func (p *Package) resolveHeatRef(from, nestedDir string, ref heatRef) (string, error) {
	what := "template"
	if !ref.template {
		what = "file"
	}
	if isURI(ref.value) {
		return "", errNode(from, ref.n, "%s %q is a URL; Heat gets only the files of the package: add it to %s/", what, ref.value, nestedDir)
	}
	if strings.HasPrefix(ref.value, "/") || strings.Contains(ref.value, "\\") {
		return "", errNode(from, ref.n, "%s %q must be a relative path with / as separator", what, ref.value)
	}
	cands := []string{path.Join(path.Dir(from), ref.value)}
	if !strings.Contains(ref.value, "/") && path.Dir(from) != nestedDir {
		cands = append(cands, nestedDir+"/"+ref.value)
	}
	for _, c := range cands {
		if c != ".." && !strings.HasPrefix(c, "../") && p.Has(c) {
			return c, nil
		}
	}
	return "", errNode(from, ref.n, "%s %q is not in the package (looked for %s); add it to %s/", what, ref.value, strings.Join(cands, " and "), nestedDir)
}

// checkNfvParams checks get_param [nfv, VDU|CP, <id>, <prop>] references
// against the flavour, and that the template declares the nfv parameter.
func checkNfvParams(file string, v val, fl *model.Flavour) error {
	cps := map[string]bool{}
	for _, vdu := range fl.VDUs {
		for _, cp := range vdu.CPs {
			cps[cp.ID] = true
		}
	}
	for id := range fl.ExtCPs {
		cps[id] = true
	}
	for id := range fl.VipCPs {
		cps[id] = true
	}
	used := false
	var err error
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || err != nil || depth > 128 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, a := n.Content[i], deref(n.Content[i+1])
				if k.Value != "get_param" || a == nil || a.Kind != yaml.SequenceNode || len(a.Content) < 3 {
					continue
				}
				if first := deref(a.Content[0]); first == nil || first.Value != "nfv" {
					continue
				}
				used = true
				kind, id := deref(a.Content[1]), deref(a.Content[2])
				if kind == nil || id == nil || kind.Kind != yaml.ScalarNode || id.Kind != yaml.ScalarNode {
					continue
				}
				switch kind.Value {
				case "VDU":
					if _, ok := fl.VDUs[id.Value]; !ok {
						err = errNode(file, id, "get_param [nfv, VDU, %s, ...]: flavour %s has no VDU %q (VDUs: %s)", id.Value, fl.ID, id.Value, quoteList(sortedKeys(fl.VDUs)))
					}
				case "CP":
					if !cps[id.Value] {
						err = errNode(file, id, "get_param [nfv, CP, %s, ...]: flavour %s has no connection point %q (CPs: %s)", id.Value, fl.ID, id.Value, quoteList(sortedKeys(cps)))
					}
				default:
					err = errNode(file, kind, "get_param [nfv, %s, ...]: the nfv parameter has only VDU and CP entries", kind.Value)
				}
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(v.n, 0)
	if err != nil {
		return err
	}
	if used {
		pt := v.get("parameters").get("nfv")
		if !pt.exists() {
			return v.errf("the template uses get_param [nfv, ...] but declares no nfv parameter; add `parameters: {nfv: {type: json}}`")
		}
		if t, _ := pt.get("type").optStr(); t != "json" {
			return pt.errf("the nfv parameter must have `type: json`")
		}
	}
	return nil
}

// HeatTemplate is what the OpenStack driver sends to Heat for a flavour.
type HeatTemplate struct {
	Path     string            // package path of the top template
	Template []byte            // the top template
	Files    map[string]string // Heat `files`: name as referenced → content
}

// HeatTemplate returns the flavour's base HOT and its files.
func (p *Package) HeatTemplate(flavourID string) (*HeatTemplate, error) {
	fl := p.summary.Flavours[flavourID]
	if fl == nil {
		return nil, fmt.Errorf("vnfpkg: the VNFD has no flavour %q", flavourID)
	}
	if fl.HOT == nil {
		return nil, fmt.Errorf("vnfpkg: flavour %q has no Heat template (%s/%s/)", flavourID, baseHOTDir, flavourID)
	}
	top, err := p.ReadFile(fl.HOT.Top)
	if err != nil {
		return nil, err
	}
	ht := &HeatTemplate{Path: fl.HOT.Top, Template: top, Files: map[string]string{}}
	for k, f := range fl.HOT.Files {
		b, err := p.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ht.Files[k] = string(b)
	}
	return ht, nil
}
