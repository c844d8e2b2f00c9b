package vnfpkg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// parseYAML reads and parses one YAML file of the package with the size,
// node-count and depth limits.
func (p *Package) parseYAML(name string) (*yaml.Node, error) {
	data, err := p.readFile(name, p.opts.MaxYAMLSize)
	if err != nil {
		return nil, err
	}
	return parseYAMLBytes(name, data, p.opts)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAMLBytes parses a single-document YAML file into a node tree whose
// aliases, expanded, stay within o's node and depth limits. It returns the
// document's content node.
func parseYAMLBytes(name string, data []byte, o Options) (root *yaml.Node, err error) {
	defer func() {
		if v := recover(); v != nil {
			root, err = nil, errorf(name, "cannot parse the YAML (%v)", v)
		}
	}()
	if int64(len(data)) > o.MaxYAMLSize {
		return nil, errorf(name, "the file is %s, more than the %s allowed for a YAML file", sizeString(int64(len(data))), sizeString(o.MaxYAMLSize))
	}
	if !utf8.Valid(data) && !bytes.HasPrefix(data, []byte{0xfe, 0xff}) && !bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return nil, errorf(name, "the file is not UTF-8 text")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errorf(name, "the file is empty; it must hold a YAML mapping (tosca_definitions_version: ...)")
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(name, err)
		}
		return nil, errNode(name, &extra, "the file holds more than one YAML document (a second one starts here after ---); keep one document per file")
	}
	if err := checkTree(name, &doc, o); err != nil {
		return nil, err
	}
	return deref(&doc), nil
}

func yamlError(name string, err error) *Error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return errAt(name, line, "invalid YAML: %s", m[2])
	}
	return errorf(name, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// checkTree bounds the expanded size and depth of a document and rejects
// duplicate mapping keys.
func checkTree(name string, doc *yaml.Node, o Options) error {
	c := &treeChecker{name: name, o: o, size: map[*yaml.Node]int{}, depth: map[*yaml.Node]int{}, busy: map[*yaml.Node]bool{}}
	size, _, err := c.walk(doc, 0)
	if err != nil {
		return err
	}
	if size > o.MaxYAMLNodes {
		return errorf(name, "the document expands to more than %d YAML nodes (aliases counted expanded); simplify it or remove anchor/alias chains", o.MaxYAMLNodes)
	}
	return nil
}

type treeChecker struct {
	name  string
	o     Options
	size  map[*yaml.Node]int
	depth map[*yaml.Node]int
	busy  map[*yaml.Node]bool
}

// walk returns the expanded node count (capped just over the limit) and
// depth of n. level is n's depth in the unexpanded tree.
func (c *treeChecker) walk(n *yaml.Node, level int) (int, int, error) {
	if n == nil {
		return 0, 0, nil
	}
	if s, ok := c.size[n]; ok {
		return s, c.depth[n], nil
	}
	if c.busy[n] {
		return 0, 0, errNode(c.name, n, "an alias refers to a node that contains it (recursive anchor); remove the cycle")
	}
	if level > c.o.MaxYAMLDepth {
		return 0, 0, errNode(c.name, n, "the YAML nests deeper than %d levels; flatten it", c.o.MaxYAMLDepth)
	}
	c.busy[n] = true
	defer delete(c.busy, n)
	size, depth := 1, 1
	if n.Kind == yaml.AliasNode {
		s, d, err := c.walk(n.Alias, level)
		if err != nil {
			return 0, 0, err
		}
		size, depth = s, d
	} else {
		if n.Kind == yaml.MappingNode {
			seen := map[string]*yaml.Node{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if prev, dup := seen[k.Value]; dup {
					return 0, 0, errNode(c.name, k, "key %q is defined twice in this mapping (first at line %d); YAML keeps only one, so remove or rename one", k.Value, prev.Line)
				}
				seen[k.Value] = k
			}
		}
		for _, ch := range n.Content {
			s, d, err := c.walk(ch, level+1)
			if err != nil {
				return 0, 0, err
			}
			size += s
			if size > c.o.MaxYAMLNodes {
				return 0, 0, errNode(c.name, n, "the document expands to more than %d YAML nodes (aliases counted expanded: an alias bomb?); remove the anchor/alias chains", c.o.MaxYAMLNodes)
			}
			depth = max(depth, d+1)
		}
	}
	if depth > c.o.MaxYAMLDepth {
		return 0, 0, errNode(c.name, n, "the YAML nests deeper than %d levels once aliases are expanded; flatten it", c.o.MaxYAMLDepth)
	}
	c.size[n], c.depth[n] = size, depth
	return size, depth, nil
}

// deref follows aliases and unwraps a document node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 64; i++ {
		switch {
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		case n.Kind == yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		default:
			return n
		}
	}
	return n
}

func isNullNode(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// kv is one mapping entry.
type kv struct {
	key  string
	k, v *yaml.Node
}

// pairs returns a mapping's entries in order, with YAML merge keys (<<)
// applied: explicit keys win over merged ones, earlier merges over later.
func pairs(n *yaml.Node) []kv {
	return pairsDepth(n, 0)
}

func pairsDepth(n *yaml.Node, depth int) []kv {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > 32 {
		return nil
	}
	var out, merged []kv
	have := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "") {
			src := deref(v)
			if src != nil && src.Kind == yaml.SequenceNode {
				for _, s := range src.Content {
					merged = append(merged, pairsDepth(s, depth+1)...)
				}
			} else {
				merged = append(merged, pairsDepth(src, depth+1)...)
			}
			continue
		}
		key := ""
		if k.Kind == yaml.ScalarNode {
			key = k.Value
		}
		have[key] = true
		out = append(out, kv{key, k, v})
	}
	for _, m := range merged {
		if !have[m.key] {
			have[m.key] = true
			out = append(out, m)
		}
	}
	return out
}

// val is a YAML value being read, with where it is for error messages.
type val struct {
	file string
	n    *yaml.Node // dereferenced; nil when absent
	at   *yaml.Node // position for errors when n is nil (the parent)
	path string     // dotted path for messages
}

func newVal(file string, n *yaml.Node, path string) val {
	return val{file: file, n: deref(n), at: n, path: path}
}

// pos is where errors about v point: a scalar's own position, the key of a
// mapping or list (its first line), the parent's key when v is absent.
func (v val) pos() *yaml.Node {
	if v.n != nil && (v.at == nil || v.n.Kind == yaml.ScalarNode || v.n.Kind == yaml.AliasNode) {
		return v.n
	}
	return v.at
}

func (v val) errf(format string, args ...any) *Error {
	return errNode(v.file, v.pos(), format, args...)
}

// exists reports whether the value is present and not null.
func (v val) exists() bool { return !isNullNode(v.n) }

func (v val) kind() string {
	switch {
	case v.n == nil:
		return "nothing"
	case v.n.Kind == yaml.MappingNode:
		return "a mapping"
	case v.n.Kind == yaml.SequenceNode:
		return "a list"
	case isNullNode(v.n):
		return "null"
	}
	return fmt.Sprintf("the scalar %q", truncate(v.n.Value, 60))
}

func (v val) child(key string) string {
	if v.path == "" {
		return key
	}
	return v.path + "." + key
}

// get returns the value of key in a mapping (absent when v is not one).
func (v val) get(key string) val {
	c := val{file: v.file, at: v.pos(), path: v.child(key)}
	for _, e := range pairs(v.n) {
		if e.key == key {
			c.n, c.at = deref(e.v), e.k
			if c.n == nil {
				c.n = e.v
			}
			return c
		}
	}
	return c
}

// isMap reports whether v is a mapping.
func (v val) isMap() bool { return v.n != nil && v.n.Kind == yaml.MappingNode }

// entries returns a mapping's entries; absent or null gives none, another
// kind an error.
func (v val) entries() ([]kv, error) {
	if !v.exists() {
		return nil, nil
	}
	if v.n.Kind != yaml.MappingNode {
		return nil, v.errf("%s must be a mapping, got %s", v.path, v.kind())
	}
	return pairs(v.n), nil
}

// sub returns the value of a mapping entry.
func (v val) sub(e kv) val {
	n := deref(e.v)
	if n == nil {
		n = e.v
	}
	return val{file: v.file, n: n, at: e.k, path: v.child(e.key)}
}

// list returns a sequence's items; absent or null gives none.
func (v val) list() ([]val, error) {
	if !v.exists() {
		return nil, nil
	}
	if v.n.Kind != yaml.SequenceNode {
		return nil, v.errf("%s must be a list, got %s", v.path, v.kind())
	}
	out := make([]val, len(v.n.Content))
	for i, c := range v.n.Content {
		out[i] = val{file: v.file, n: deref(c), at: c, path: fmt.Sprintf("%s[%d]", v.path, i)}
	}
	return out, nil
}

// isFunc reports whether v is a TOSCA function ({get_input: x}, ...),
// i.e. not a literal the VNFM can read at onboarding.
func (v val) isFunc() bool {
	if !v.isMap() {
		return false
	}
	ps := pairs(v.n)
	if len(ps) != 1 {
		return false
	}
	switch ps[0].key {
	case "get_input", "get_property", "get_attribute", "get_artifact", "get_operation_output", "concat", "join", "token", "get_nodes_of_type":
		return true
	}
	return false
}

// str returns a required scalar as a string.
func (v val) str() (string, error) {
	if !v.exists() {
		return "", v.errf("%s is missing", v.path)
	}
	if v.n.Kind != yaml.ScalarNode {
		return "", v.errf("%s must be a string, got %s", v.path, v.kind())
	}
	return v.n.Value, nil
}

// optStr returns an optional scalar ("" when absent or a function).
func (v val) optStr() (string, error) {
	if !v.exists() || v.isFunc() {
		return "", nil
	}
	return v.str()
}

// integer returns a required non-negative integer.
func (v val) integer() (int, error) {
	s, err := v.str()
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, v.errf("%s must be a non-negative integer, got %q", v.path, truncate(s, 40))
	}
	if n > 1<<20 {
		return 0, v.errf("%s is %d, which is unreasonably large", v.path, n)
	}
	return n, nil
}

// optInt returns an optional non-negative integer and whether it was set.
func (v val) optInt() (int, bool, error) {
	if !v.exists() || v.isFunc() {
		return 0, false, nil
	}
	n, err := v.integer()
	return n, err == nil, err
}

// boolean returns an optional boolean (false when absent).
func (v val) boolean() (bool, error) {
	if !v.exists() || v.isFunc() {
		return false, nil
	}
	s, err := v.str()
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off":
		return false, nil
	}
	return false, v.errf("%s must be true or false, got %q", v.path, truncate(s, 40))
}

// strList returns a list of scalars; a single scalar counts as a list of one.
func (v val) strList() ([]string, error) {
	if !v.exists() {
		return nil, nil
	}
	if v.n.Kind == yaml.ScalarNode {
		return []string{v.n.Value}, nil
	}
	items, err := v.list()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, err := it.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
