package hotgen

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// omap is a YAML mapping that keeps its keys in the order they were added
// (Heat does not care; people reading a generated template do).
type omap struct {
	keys []string
	vals map[string]any
}

func newMap() *omap { return &omap{vals: map[string]any{}} }

// set adds or replaces a key; it returns the map for chaining.
func (m *omap) set(k string, v any) *omap {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
	return m
}

func (m *omap) get(k string) any { return m.vals[k] }

func (m *omap) has(k string) bool { _, ok := m.vals[k]; return ok }

// sub returns the map under k, creating it.
func (m *omap) sub(k string) *omap {
	if s, ok := m.vals[k].(*omap); ok {
		return s
	}
	s := newMap()
	m.set(k, s)
	return s
}

// node builds the YAML node of a value once (a MarshalYAML per level
// would encode every subtree again at each level above it).
func node(v any) (*yaml.Node, error) {
	switch t := v.(type) {
	case *omap:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range t.keys {
			vn, err := node(t.vals[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, vn)
		}
		return n, nil
	case flow:
		n, err := node([]any(t))
		if err != nil {
			return nil, err
		}
		n.Style = yaml.FlowStyle
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range t {
			en, err := node(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, en)
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(t)}, nil
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(t, 10)}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	default:
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			return nil, err
		}
		return &n, nil
	}
}

// flow is a list rendered on one line ([nfv, VDU, x, flavor]), as people
// write Heat function arguments.
type flow []any

// Heat intrinsic functions.
func getParam(path ...any) *omap {
	if len(path) == 1 {
		return newMap().set("get_param", path[0])
	}
	return newMap().set("get_param", flow(path))
}

func getResource(name string) *omap { return newMap().set("get_resource", name) }

func getAttr(path ...any) *omap { return newMap().set("get_attr", flow(path)) }

func render(m *omap) (string, error) {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	n, err := node(m)
	if err != nil {
		return "", err
	}
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}
