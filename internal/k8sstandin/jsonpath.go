package k8sstandin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A small JSONPath template engine covering what scripts use with kubectl:
// {.a.b}, {.items[*].metadata.name}, {.items[0].x}, {.data.ca\.crt},
// {range .items[*]}...{end}, and string literals like {"\n"}.

type jpNode struct {
	text  string   // literal text
	path  string   // a {.path} expression
	rng   string   // range expression
	body  []jpNode // range body
	isLit bool
}

func parseJSONPath(tmpl string) ([]jpNode, error) {
	nodes, rest, err := jpParse(tmpl, false)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("unexpected {end}")
	}
	return nodes, nil
}

func jpParse(s string, inRange bool) ([]jpNode, string, error) {
	var out []jpNode
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			out = append(out, jpNode{text: s, isLit: true})
			return out, "", nil
		}
		if i > 0 {
			out = append(out, jpNode{text: s[:i], isLit: true})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, "", fmt.Errorf("unclosed action")
		}
		expr := strings.TrimSpace(s[i+1 : i+j])
		s = s[i+j+1:]
		switch {
		case expr == "end":
			if !inRange {
				return nil, "", fmt.Errorf("not in range, nothing to end")
			}
			return out, s, nil
		case strings.HasPrefix(expr, "range "):
			body, rest, err := jpParse(s, true)
			if err != nil {
				return nil, "", err
			}
			out = append(out, jpNode{rng: strings.TrimSpace(strings.TrimPrefix(expr, "range ")), body: body})
			s = rest
		case strings.HasPrefix(expr, `"`) || strings.HasPrefix(expr, "'"):
			lit, err := strconv.Unquote(`"` + strings.Trim(expr, `"'`) + `"`)
			if err != nil {
				return nil, "", fmt.Errorf("bad literal %s", expr)
			}
			out = append(out, jpNode{text: lit, isLit: true})
		default:
			out = append(out, jpNode{path: expr})
		}
	}
	if inRange {
		return nil, "", fmt.Errorf("range without end")
	}
	return out, "", nil
}

// jpSegments splits ".a.b[*].c\.d" into steps: field names and "[...]".
func jpSegments(path string) []string {
	path = strings.TrimPrefix(strings.TrimPrefix(path, "$"), "@")
	var segs []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '\\' && i+1 < len(path):
			cur.WriteByte(path[i+1])
			i++
		case c == '.':
			flush()
		case c == '[':
			flush()
			j := strings.IndexByte(path[i:], ']')
			if j < 0 {
				cur.WriteString(path[i:])
				i = len(path)
				continue
			}
			segs = append(segs, path[i:i+j+1])
			i += j
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return segs
}

func jpEval(v any, path string) []any {
	cur := []any{v}
	for _, seg := range jpSegments(path) {
		var next []any
		for _, x := range cur {
			if strings.HasPrefix(seg, "[") {
				idx := strings.Trim(seg[1:len(seg)-1], `'"`)
				switch arr := x.(type) {
				case []any:
					if idx == "*" {
						next = append(next, arr...)
					} else if n, err := strconv.Atoi(idx); err == nil {
						if n < 0 {
							n += len(arr)
						}
						if n >= 0 && n < len(arr) {
							next = append(next, arr[n])
						}
					}
				case map[string]any:
					if idx == "*" {
						for _, val := range arr {
							next = append(next, val)
						}
					} else if val, ok := arr[idx]; ok {
						next = append(next, val)
					}
				}
				continue
			}
			if m, ok := x.(map[string]any); ok {
				if val, ok := m[seg]; ok {
					next = append(next, val)
				}
			}
		}
		cur = next
	}
	return cur
}

func jpString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func jpExec(nodes []jpNode, data any, b *strings.Builder) {
	for _, n := range nodes {
		switch {
		case n.isLit:
			b.WriteString(n.text)
		case n.rng != "":
			for _, item := range jpEval(data, n.rng) {
				jpExec(n.body, item, b)
			}
		default:
			vals := jpEval(data, n.path)
			for i, v := range vals {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(jpString(v))
			}
		}
	}
}

// renderJSONPath applies a kubectl -o jsonpath template.
func renderJSONPath(tmpl string, data any) (string, error) {
	nodes, err := parseJSONPath(tmpl)
	if err != nil {
		return "", fmt.Errorf("error parsing jsonpath %s, %v", tmpl, err)
	}
	var b strings.Builder
	jpExec(nodes, data, &b)
	return b.String(), nil
}
