package sol013

import (
	"fmt"
	"net/url"
	"strings"
)

// MaxSelectorPaths bounds the number of paths in fields/exclude_fields.
const MaxSelectorPaths = 100

// Selector is a parsed set of SOL013 §5.3 attribute selector parameters.
// The zero value (no selector given) behaves like exclude_default.
type Selector struct {
	AllFields, ExcludeDefault bool
	Fields, ExcludeFields     [][]string // attribute paths split at '/'
}

// SelectorError reports invalid attribute selector parameters.
type SelectorError struct {
	Param string // query parameter at fault
	Msg   string
}

func (e *SelectorError) Error() string { return "attribute selector: " + e.Msg }

// ParseSelector reads all_fields, exclude_default, fields and exclude_fields
// (also spelled exclude-fields, as the Tacker CLI sends it) from the query.
// Flags count as set when present without a value ("?all_fields") or with
// "true". It applies the SOL013/Tacker combination rules and checks every
// path against root (nil root: any path). Errors are *SelectorError.
func ParseSelector(q url.Values, root *Field) (*Selector, error) {
	s := &Selector{}
	for _, fl := range []struct {
		name string
		dst  *bool
	}{{"all_fields", &s.AllFields}, {"exclude_default", &s.ExcludeDefault}} {
		vals, ok := q[fl.name]
		if !ok {
			continue
		}
		for _, v := range vals {
			if v != "" && v != "true" {
				return nil, &SelectorError{Param: fl.name, Msg: fmt.Sprintf("%s is a flag and takes no value, got %q; write ?%s alone", fl.name, v, fl.name)}
			}
		}
		*fl.dst = true
	}
	_, hasFields := q["fields"]
	exclVals := append(append([]string(nil), q["exclude_fields"]...), q["exclude-fields"]...)
	hasExcl := len(exclVals) > 0

	switch {
	case s.AllFields && (hasFields || hasExcl || s.ExcludeDefault):
		return nil, &SelectorError{Param: "all_fields", Msg: "all_fields cannot be combined with fields, exclude_fields or exclude_default"}
	case hasFields && hasExcl:
		return nil, &SelectorError{Param: "fields", Msg: "fields and exclude_fields cannot be used together"}
	case hasExcl && s.ExcludeDefault:
		return nil, &SelectorError{Param: "exclude_fields", Msg: "exclude_fields and exclude_default cannot be used together"}
	}

	var err error
	if hasFields {
		if s.Fields, err = parsePathList("fields", q["fields"], root); err != nil {
			return nil, err
		}
	}
	if hasExcl {
		if s.ExcludeFields, err = parsePathList("exclude_fields", exclVals, root); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func parsePathList(param string, vals []string, root *Field) ([][]string, error) {
	var out [][]string
	for _, v := range vals {
		if v == "" {
			return nil, &SelectorError{Param: param, Msg: fmt.Sprintf("%s is empty; give a comma-separated list of attributes such as %s=a,b/c", param, param)}
		}
		for item := range strings.SplitSeq(v, ",") {
			path := strings.Split(item, "/")
			if item == "" || strings.Contains("/"+item+"/", "//") {
				return nil, &SelectorError{Param: param, Msg: fmt.Sprintf("%s contains an empty attribute name in %q; separate attributes with ',' and path segments with '/'", param, v)}
			}
			if len(path) > MaxPathDepth {
				return nil, &SelectorError{Param: param, Msg: fmt.Sprintf("%s: attribute path %q has more than %d segments", param, item, MaxPathDepth)}
			}
			if len(out) == MaxSelectorPaths {
				return nil, &SelectorError{Param: param, Msg: fmt.Sprintf("%s lists more than %d attributes", param, MaxSelectorPaths)}
			}
			if _, err := root.Lookup(path); err != nil {
				return nil, &SelectorError{Param: param, Msg: param + ": " + err.Error()}
			}
			out = append(out, path)
		}
	}
	return out, nil
}

// Apply trims doc in place. defaultExcluded lists the resource's
// default-excluded complex attributes (e.g. instantiatedVnfInfo for a
// VnfInstance).
//
//   - all_fields: nothing is removed.
//   - exclude_fields: exactly the listed paths are removed, inside arrays
//     too.
//   - fields: the default-excluded attributes are removed except those
//     listed; a listed sub-path (instantiatedVnfInfo/vnfcResourceInfo) keeps
//     only that branch of its default-excluded parent.
//   - exclude_default or nothing given: the default-excluded attributes are
//     removed.
//
// "id" and "_links" are never removed by the default exclusion.
func (s *Selector) Apply(doc map[string]any, defaultExcluded [][]string) {
	if s == nil {
		s = &Selector{}
	}
	if s.AllFields {
		return
	}
	if len(s.ExcludeFields) > 0 {
		for _, p := range s.ExcludeFields {
			editPath(doc, p, nil)
		}
		return
	}
	for _, d := range defaultExcluded {
		if len(d) == 0 || (len(d) == 1 && (d[0] == "id" || d[0] == "_links")) {
			continue
		}
		whole := false
		var keep [][]string
		for _, f := range s.Fields {
			if hasPrefix(d, f) { // f covers all of d
				whole = true
				break
			}
			if hasPrefix(f, d) {
				keep = append(keep, f[len(d):])
			}
		}
		switch {
		case whole:
		case len(keep) == 0:
			editPath(doc, d, nil)
		default:
			editPath(doc, d, keep)
		}
	}
}

// Drops reports whether Apply removes the top-level attribute attr
// whatever its value, so that a store need not read it at all.
func (s *Selector) Drops(attr string, defaultExcluded [][]string) bool {
	if s == nil {
		s = &Selector{}
	}
	if s.AllFields || attr == "id" || attr == "_links" {
		return false
	}
	if len(s.ExcludeFields) > 0 {
		for _, p := range s.ExcludeFields {
			if len(p) == 1 && p[0] == attr {
				return true
			}
		}
		return false
	}
	for _, d := range defaultExcluded {
		if len(d) != 1 || d[0] != attr {
			continue
		}
		for _, f := range s.Fields {
			if len(f) > 0 && f[0] == attr {
				return false // listed whole, or a branch of it
			}
		}
		return true
	}
	return false
}

func hasPrefix(path, prefix []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

// editPath walks path through objects and arrays and, at its last segment,
// deletes the member (keep == nil) or replaces it by its pruned copy.
func editPath(v any, path []string, keep [][]string) {
	switch x := v.(type) {
	case map[string]any:
		val, ok := x[path[0]]
		switch {
		case !ok:
		case len(path) > 1:
			editPath(val, path[1:], keep)
		case keep == nil:
			delete(x, path[0])
		default:
			x[path[0]] = prune(val, keep)
		}
	case []any:
		for _, e := range x {
			editPath(e, path, keep)
		}
	}
}

// prune returns a copy of v that holds only the branches in keep, looking
// through arrays. Values without such a branch (scalars) are kept as is.
func prune(v any, keep [][]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		sub := map[string][][]string{}
		for _, k := range keep {
			val, ok := x[k[0]]
			if !ok {
				continue
			}
			if len(k) == 1 {
				out[k[0]] = val
			} else {
				sub[k[0]] = append(sub[k[0]], k[1:])
			}
		}
		for name, ks := range sub {
			if _, whole := out[name]; !whole {
				out[name] = prune(x[name], ks)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e, keep)
		}
		return out
	}
	return v
}
