package ossim

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// hotTemplate is a parsed HOT (heat_template_version) template.
type hotTemplate struct {
	version     string
	description string
	params      map[string]*paramDef
	resources   map[string]map[string]any
	outputs     map[string]map[string]any
	raw         map[string]any
}

type paramDef struct {
	name, typ, desc string
	def             any
	hasDef          bool
	hidden          bool
	allowed         []any
}

var hotSections = map[string]bool{
	"heat_template_version": true, "description": true, "parameter_groups": true, "parameters": true,
	"resources": true, "outputs": true, "conditions": true,
}

func validationErr(format string, args ...any) *apiError {
	return errf(400, "StackValidationFailed", format, args...)
}

// loadDocument turns a template or environment given as an object or as
// YAML/JSON text into a normalised map.
func loadDocument(v any, what string) (map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return normalize(t).(map[string]any), nil
	case string:
		if strings.TrimSpace(t) == "" {
			return nil, nil
		}
		var m any
		if err := yaml.Unmarshal([]byte(t), &m); err != nil {
			return nil, errf(400, "HTTPBadRequest", "Error parsing %s: %v", what, err)
		}
		mm, ok := normalize(m).(map[string]any)
		if !ok {
			return nil, errf(400, "HTTPBadRequest", "The %s is not a JSON object or YAML mapping.", what)
		}
		return mm, nil
	}
	return nil, errf(400, "HTTPBadRequest", "The %s must be an object or a string.", what)
}

// normalize makes YAML and JSON values uniform: map[string]any, []any,
// float64 numbers, strings, bools, nil.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = normalize(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = normalize(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case uint64:
		return float64(t)
	case float32:
		return float64(t)
	case json.Number:
		f, _ := t.Float64()
		return f
	}
	return v
}

func parseTemplate(v any) (*hotTemplate, error) {
	raw, err := loadDocument(v, "template")
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errf(400, "HTTPBadRequest", "No template specified")
	}
	ver, ok := raw["heat_template_version"]
	if !ok {
		if _, cfn := raw["AWSTemplateFormatVersion"]; cfn {
			return nil, errf(400, "InvalidTemplateVersion", "The simulator only supports HOT templates (heat_template_version).")
		}
		return nil, errf(400, "InvalidTemplateVersion", "The template version is invalid: Template format version not found.")
	}
	t := &hotTemplate{version: fmt.Sprint(ver), params: map[string]*paramDef{}, resources: map[string]map[string]any{},
		outputs: map[string]map[string]any{}, raw: raw}
	for k := range raw {
		if !hotSections[k] {
			return nil, validationErr("The template section is invalid: %s", k)
		}
	}
	t.description, _ = raw["description"].(string)
	if ps, ok := raw["parameters"]; ok && ps != nil {
		pm, ok := ps.(map[string]any)
		if !ok {
			return nil, validationErr("The template section is invalid: parameters")
		}
		for name, pv := range pm {
			d, ok := pv.(map[string]any)
			if !ok {
				return nil, validationErr("Parameter '%s' is invalid: must be a mapping", name)
			}
			p := &paramDef{name: name, typ: "string"}
			if ty, ok := d["type"].(string); ok {
				p.typ = ty
			} else {
				return nil, validationErr("Parameter '%s' is invalid: Missing parameter type for parameter: %s", name, name)
			}
			switch p.typ {
			case "string", "number", "json", "comma_delimited_list", "boolean":
			default:
				return nil, validationErr("Parameter '%s' is invalid: Invalid type (%s)", name, p.typ)
			}
			p.def, p.hasDef = d["default"]
			p.hidden, _ = d["hidden"].(bool)
			p.desc, _ = d["description"].(string)
			for _, c := range listOfMaps(d["constraints"]) {
				if av, ok := c["allowed_values"].([]any); ok {
					p.allowed = av
				}
			}
			t.params[name] = p
		}
	}
	if rs, ok := raw["resources"]; ok && rs != nil {
		rm, ok := rs.(map[string]any)
		if !ok {
			return nil, validationErr("The template section is invalid: resources")
		}
		for name, rv := range rm {
			d, ok := rv.(map[string]any)
			if !ok {
				return nil, validationErr("Resource %s is invalid: must be a mapping", name)
			}
			if ty, ok := d["type"].(string); !ok || ty == "" {
				return nil, validationErr("Resource %s: type is not a string", name)
			}
			for k := range d {
				switch k {
				case "type", "properties", "depends_on", "metadata", "deletion_policy", "update_policy", "description", "condition", "external_id":
				default:
					return nil, validationErr("\"%s\" is not a valid keyword inside a resource definition", k)
				}
			}
			t.resources[name] = d
		}
	}
	if os, ok := raw["outputs"]; ok && os != nil {
		om, ok := os.(map[string]any)
		if !ok {
			return nil, validationErr("The template section is invalid: outputs")
		}
		for name, ov := range om {
			d, ok := ov.(map[string]any)
			if !ok {
				return nil, validationErr("Output %s is invalid: must be a mapping", name)
			}
			t.outputs[name] = d
		}
	}
	// References must name resources of this template, and no cycles.
	for name, d := range t.resources {
		for _, ref := range refsOf(d) {
			if _, ok := t.resources[ref]; !ok {
				return nil, validationErr("The specified reference \"%s\" (in %s) is incorrect.", ref, name)
			}
		}
	}
	for name, d := range t.outputs {
		for _, ref := range refsOf(d) {
			if _, ok := t.resources[ref]; !ok {
				return nil, validationErr("The specified reference \"%s\" (in %s) is incorrect.", ref, name)
			}
		}
	}
	if cyc := t.cycle(); cyc != "" {
		return nil, validationErr("Circular Dependency Found: %s", cyc)
	}
	return t, nil
}

// resourceNames lists the template's resources sorted by name.
func (t *hotTemplate) resourceNames() []string {
	names := make([]string, 0, len(t.resources))
	for n := range t.resources {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// deps returns the resources a resource depends on (references and
// depends_on).
func (t *hotTemplate) deps(name string) []string {
	d := t.resources[name]
	seen := map[string]bool{}
	var out []string
	for _, r := range refsOf(d) {
		if !seen[r] && r != name {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

func (t *hotTemplate) cycle() string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var path []string
	var visit func(n string) string
	visit = func(n string) string {
		color[n] = grey
		path = append(path, n)
		for _, d := range t.deps(n) {
			switch color[d] {
			case grey:
				return strings.Join(append(path, d), " -> ")
			case white:
				if c := visit(d); c != "" {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return ""
	}
	for _, n := range t.resourceNames() {
		if color[n] == white {
			if c := visit(n); c != "" {
				return c
			}
		}
	}
	return ""
}

// refsOf finds the resources a definition refers to: get_resource,
// get_attr and depends_on.
func refsOf(v any) []string {
	var out []string
	var walk func(x any, top bool)
	walk = func(x any, top bool) {
		switch t := x.(type) {
		case map[string]any:
			if top {
				for _, d := range stringList(t["depends_on"]) {
					out = append(out, d)
				}
			}
			if len(t) == 1 {
				if r, ok := t["get_resource"].(string); ok {
					out = append(out, r)
					return
				}
				if args, ok := t["get_attr"].([]any); ok && len(args) > 0 {
					if r, ok := args[0].(string); ok {
						out = append(out, r)
					}
					for _, a := range args[1:] {
						walk(a, false)
					}
					return
				}
			}
			for k, y := range t {
				if top && k == "depends_on" {
					continue
				}
				walk(y, false)
			}
		case []any:
			for _, y := range t {
				walk(y, false)
			}
		}
	}
	walk(v, true)
	return out
}

// convertParam converts a supplied parameter value to its declared type.
func convertParam(p *paramDef, v any) (any, error) {
	bad := func(format string, args ...any) error {
		return validationErr("Parameter '%s' is invalid: %s", p.name, fmt.Sprintf(format, args...))
	}
	var out any
	switch p.typ {
	case "string":
		switch t := v.(type) {
		case string:
			out = t
		case float64:
			out = strconv.FormatFloat(t, 'f', -1, 64)
		case bool:
			out = strconv.FormatBool(t)
		case nil:
			out = ""
		default:
			b, _ := json.Marshal(t)
			out = string(b)
		}
	case "number":
		switch t := v.(type) {
		case float64:
			out = t
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
			if err != nil {
				return nil, bad("Value '%s' is not an integer", t)
			}
			out = f
		default:
			return nil, bad("Value '%v' is not an integer", v)
		}
	case "json":
		switch t := v.(type) {
		case map[string]any, []any:
			out = t
		case string:
			if strings.TrimSpace(t) == "" {
				out = map[string]any{}
				break
			}
			var x any
			if err := json.Unmarshal([]byte(t), &x); err != nil {
				return nil, bad("Value must be valid JSON: %v", err)
			}
			out = normalize(x)
		case nil:
			out = map[string]any{}
		default:
			return nil, bad("Value must be valid JSON")
		}
	case "comma_delimited_list":
		switch t := v.(type) {
		case string:
			l := []any{}
			if strings.TrimSpace(t) != "" {
				for _, x := range strings.Split(t, ",") {
					l = append(l, strings.TrimSpace(x))
				}
			}
			out = l
		case []any:
			l := []any{}
			for _, x := range t {
				l = append(l, fmt.Sprint(x))
			}
			out = l
		default:
			return nil, bad("Value must be a comma-delimited list string")
		}
	case "boolean":
		switch t := v.(type) {
		case bool:
			out = t
		case string:
			switch strings.ToLower(strings.TrimSpace(t)) {
			case "true", "yes", "on", "y", "t", "1":
				out = true
			case "false", "no", "off", "n", "f", "0":
				out = false
			default:
				return nil, bad("Unrecognized value '%s', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'", t)
			}
		case float64:
			out = t != 0
		default:
			return nil, bad("Unrecognized value '%v'", v)
		}
	}
	if len(p.allowed) > 0 {
		ok := false
		for _, a := range p.allowed {
			if fmt.Sprint(a) == fmt.Sprint(out) {
				ok = true
			}
		}
		if !ok {
			return nil, bad("\"%v\" is not an allowed value %v", out, p.allowed)
		}
	}
	return out, nil
}

// paramString is how Heat shows a parameter value in a stack's
// "parameters" (all strings).
func paramString(p *paramDef, v any) string {
	if p != nil && p.hidden {
		return "******"
	}
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		if t {
			return "True"
		}
		return "False"
	case nil:
		return ""
	case []any:
		if p != nil && p.typ == "comma_delimited_list" {
			var parts []string
			for _, x := range t {
				parts = append(parts, fmt.Sprint(x))
			}
			return strings.Join(parts, ",")
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ---- intrinsic functions ----

var hotFunctions = map[string]bool{
	"get_param": true, "get_resource": true, "get_attr": true, "get_file": true, "str_replace": true,
	"str_replace_strict": true, "str_replace_vstrict": true, "list_join": true, "str_split": true,
	"map_merge": true, "list_concat": true, "list_concat_unique": true, "repeat": true, "digest": true,
	"map_replace": true, "contains": true, "equals": true, "not": true, "and": true, "or": true, "if": true, "yaql": true,
}

// scope evaluates intrinsic functions within one stack (s.mu held).
type scope struct {
	s  *Sim
	st *stack
}

func (sc scope) resolve(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 1 {
			for fn, arg := range t {
				if hotFunctions[fn] {
					return sc.call(fn, arg)
				}
			}
		}
		out := make(map[string]any, len(t))
		for k, x := range t {
			r, err := sc.resolve(x)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			r, err := sc.resolve(x)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// traverse follows a get_param/get_attr path; a missing element gives nil
// (Heat returns an empty value, not an error).
func traverse(v any, path []any) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[fmt.Sprint(p)]
		case []any:
			var idx int
			switch k := p.(type) {
			case float64:
				idx = int(k)
			case string:
				n, err := strconv.Atoi(k)
				if err != nil {
					return nil
				}
				idx = n
			default:
				return nil
			}
			if idx < 0 || idx >= len(c) {
				return nil
			}
			v = c[idx]
		default:
			return nil
		}
	}
	return v
}

func toString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func toNumber(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case int:
		return float64(t), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return f, err == nil
	}
	return 0, false
}

func (sc scope) call(fn string, arg any) (any, error) {
	bad := func(format string, args ...any) (any, error) {
		return nil, validationErr("%s: %s", fn, fmt.Sprintf(format, args...))
	}
	switch fn {
	case "get_param":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		var name string
		var path []any
		switch t := a.(type) {
		case string:
			name = t
		case []any:
			if len(t) == 0 {
				return bad("Function \"get_param\" must have arguments")
			}
			name = toString(t[0])
			path = t[1:]
		default:
			return bad("Arguments to \"get_param\" must be a string or a list")
		}
		v, ok := sc.st.paramValue(name)
		if !ok {
			return nil, validationErr("The Parameter (%s) was not provided.", name)
		}
		if len(path) > 0 {
			r := traverse(v, path)
			if r == nil {
				return "", nil
			}
			return r, nil
		}
		return v, nil
	case "get_resource":
		name, ok := arg.(string)
		if !ok {
			return bad("Argument to \"get_resource\" must be a string")
		}
		r := sc.st.res[name]
		if r == nil {
			return nil, validationErr("The specified reference \"%s\" is incorrect.", name)
		}
		return r.physID, nil
	case "get_attr":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		args, ok := a.([]any)
		if !ok || len(args) < 2 {
			return bad("Arguments to \"get_attr\" must be a list of at least 2 items")
		}
		r := sc.st.res[toString(args[0])]
		if r == nil {
			return nil, validationErr("The specified reference \"%s\" is incorrect.", toString(args[0]))
		}
		return sc.s.resourceAttr(r, toString(args[1]), args[2:])
	case "get_file":
		name, ok := arg.(string)
		if !ok {
			return bad("Argument to \"get_file\" must be a string")
		}
		content, ok := sc.st.files[name]
		if !ok {
			return nil, validationErr("No content found in the \"files\" section for get_file path: %s", name)
		}
		return content, nil
	case "str_replace", "str_replace_strict", "str_replace_vstrict":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		m, ok := a.(map[string]any)
		if !ok {
			return bad("Arguments to \"%s\" must be a map", fn)
		}
		tmpl, ok := m["template"].(string)
		if !ok {
			if m["template"] == nil {
				return bad("\"template\" parameter must be a string")
			}
			tmpl = toString(m["template"])
		}
		params, _ := m["params"].(map[string]any)
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return len(keys[i]) > len(keys[j]) || (len(keys[i]) == len(keys[j]) && keys[i] < keys[j])
		})
		out := tmpl
		for _, k := range keys {
			if fn != "str_replace" && !strings.Contains(tmpl, k) {
				return bad("The following params were not found in the template: %s", k)
			}
			out = strings.ReplaceAll(out, k, toString(params[k]))
		}
		return out, nil
	case "list_join":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		l, ok := a.([]any)
		if !ok || len(l) < 1 {
			return bad("Incorrect arguments to \"list_join\" should be: [delimiter, list, ...]")
		}
		delim := toString(l[0])
		var parts []string
		for _, x := range l[1:] {
			items, ok := x.([]any)
			if !ok {
				if x == nil {
					continue
				}
				return bad("Incorrect arguments: items to join must be lists")
			}
			for _, it := range items {
				parts = append(parts, toString(it))
			}
		}
		return strings.Join(parts, delim), nil
	case "str_split":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		l, ok := a.([]any)
		if !ok || len(l) < 2 {
			return bad("Incorrect arguments to \"str_split\" should be: [delimiter, string, index?]")
		}
		parts := strings.Split(toString(l[1]), toString(l[0]))
		if len(l) > 2 {
			i, ok := toNumber(l[2])
			if !ok || int(i) < 0 || int(i) >= len(parts) {
				return bad("Incorrect index to \"str_split\"")
			}
			return parts[int(i)], nil
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "map_merge":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		l, ok := a.([]any)
		if !ok {
			return bad("Incorrect arguments to \"map_merge\" should be a list of maps")
		}
		out := map[string]any{}
		for _, x := range l {
			m, ok := x.(map[string]any)
			if !ok && x != nil {
				return bad("Incorrect arguments to \"map_merge\" should be a list of maps")
			}
			for k, v := range m {
				out[k] = v
			}
		}
		return out, nil
	case "list_concat", "list_concat_unique":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		l, ok := a.([]any)
		if !ok {
			return bad("Incorrect arguments to \"%s\" should be a list of lists", fn)
		}
		out := []any{}
		seen := map[string]bool{}
		for _, x := range l {
			items, ok := x.([]any)
			if !ok && x != nil {
				return bad("Incorrect arguments to \"%s\" should be a list of lists", fn)
			}
			for _, it := range items {
				k := toString(it)
				if fn == "list_concat_unique" && seen[k] {
					continue
				}
				seen[k] = true
				out = append(out, it)
			}
		}
		return out, nil
	case "repeat":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		m, ok := a.(map[string]any)
		if !ok {
			return bad("Arguments to \"repeat\" must be a map")
		}
		fe, _ := m["for_each"].(map[string]any)
		if len(fe) != 1 {
			return bad("The simulator supports \"repeat\" with one for_each variable")
		}
		out := []any{}
		for k, lv := range fe {
			items, _ := lv.([]any)
			for _, it := range items {
				out = append(out, substitute(m["template"], k, it))
			}
		}
		return out, nil
	case "digest":
		a, err := sc.resolve(arg)
		if err != nil {
			return nil, err
		}
		l, ok := a.([]any)
		if !ok || len(l) != 2 {
			return bad("Argument to \"digest\" must be [algorithm, value]")
		}
		var h hash.Hash
		switch toString(l[0]) {
		case "md5":
			h = md5.New()
		case "sha1":
			h = sha1.New()
		case "sha256":
			h = sha256.New()
		case "sha512":
			h = sha512.New()
		default:
			return bad("Algorithm must be one of md5, sha1, sha256, sha512")
		}
		h.Write([]byte(toString(l[1])))
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	return nil, validationErr("The function \"%s\" is not supported by the simulator", fn)
}

// substitute replaces a repeat variable in strings, keys and values.
func substitute(v any, key string, val any) any {
	switch t := v.(type) {
	case string:
		if t == key {
			return val
		}
		return strings.ReplaceAll(t, key, toString(val))
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			out[strings.ReplaceAll(k, key, toString(val))] = substitute(x, key, val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = substitute(x, key, val)
		}
		return out
	}
	return v
}
