package sol013

import "strings"

// Match evaluates the filter on a document decoded by encoding/json (with
// or without UseNumber; UseNumber keeps numbers exact). It implements the
// semantics described in the package documentation and agrees with SQL.
// A nil filter matches every document.
func (f *Filter) Match(doc map[string]any) bool {
	if f == nil {
		return true
	}
	for _, t := range f.Terms {
		if !t.match(doc) {
			return false
		}
	}
	return true
}

func (t Term) match(doc map[string]any) bool {
	op := t.Op.positive()
	hit := false
	for _, x := range pathItems(doc, t.Path) {
		for _, s := range leafValues(x) {
			if t.kind == KindDateTime {
				if matchInstant(op, s, t.Values) {
					hit = true
					break
				}
				continue
			}
			if matchValue(op, s, t.Values) {
				hit = true
				break
			}
		}
		if hit {
			break
		}
	}
	return hit != t.Op.negated()
}

// pathItems returns the values reached by path. Like a PostgreSQL lax
// jsonpath member accessor, each step unwraps one level of array and
// ignores elements that are not objects.
func pathItems(doc map[string]any, path []string) []any {
	cur := []any{doc}
	for _, seg := range path {
		var next []any
		for _, x := range cur {
			switch x := x.(type) {
			case map[string]any:
				if v, ok := x[seg]; ok {
					next = append(next, v)
				}
			case []any:
				for _, e := range x {
					if m, ok := e.(map[string]any); ok {
						if v, ok := m[seg]; ok {
							next = append(next, v)
						}
					}
				}
			}
		}
		cur = next
	}
	return cur
}

// leafValues returns what a reached value is compared as: itself, or for an
// array its elements with nested arrays unwrapped once more (PostgreSQL
// unwraps once for the filter and once for the comparison).
func leafValues(x any) []any {
	arr, ok := x.([]any)
	if !ok {
		return []any{x}
	}
	var out []any
	for _, e := range arr {
		if inner, ok := e.([]any); ok {
			out = append(out, inner...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// matchValue applies a positive operator to one JSON value.
func matchValue(op Op, x any, values []string) bool {
	switch op {
	case OpEq, OpIn:
		for _, v := range values {
			if equalValue(x, v) {
				return true
			}
		}
	case OpCont:
		s, ok := x.(string)
		if !ok {
			return false
		}
		for _, v := range values {
			if strings.Contains(s, v) {
				return true
			}
		}
	case OpGt, OpGte, OpLt, OpLte:
		c, ok := compareValue(x, values[0])
		return ok && ordered(op, c)
	}
	return false
}

// matchInstant applies a positive operator to a date-time value.
func matchInstant(op Op, x any, values []string) bool {
	switch op {
	case OpEq, OpIn:
		for _, v := range values {
			if c, ok := compareInstant(x, v); ok && c == 0 {
				return true
			}
		}
		return false
	}
	c, ok := compareInstant(x, values[0])
	return ok && ordered(op, c)
}

func ordered(op Op, c int) bool {
	switch op {
	case OpGt:
		return c > 0
	case OpGte:
		return c >= 0
	case OpLt:
		return c < 0
	case OpLte:
		return c <= 0
	}
	return false
}

func equalValue(x any, v string) bool {
	switch x := x.(type) {
	case string:
		return x == v
	case bool:
		return (v == "true" && x) || (v == "false" && !x)
	case nil, map[string]any, []any:
		return false
	}
	c, ok := compareValue(x, v)
	return ok && c == 0
}

// compareValue orders a string or number from a document against a filter
// value; ok is false when they are not comparable.
func compareValue(x any, v string) (int, bool) {
	if s, ok := x.(string); ok {
		return strings.Compare(s, v), true
	}
	n, ok := docNumber(x)
	if !ok {
		return 0, false
	}
	fv, ok := filterNumber(v)
	if !ok {
		return 0, false
	}
	return cmpDecimal(n, fv), true
}
