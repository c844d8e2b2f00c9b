package sol013

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SQLColumns maps attribute paths (segments joined by "/") to plain SQL
// columns that a store keeps next to the jsonb document, e.g.
// "operationState" → "operation_state". The column's SQL type follows the
// attribute's kind: text for strings, a numeric type (bigint, numeric) for
// numbers, boolean for booleans. Only attributes outside arrays can be
// mapped.
//
// For SQL to agree with Match, a mapped column must hold the attribute's
// value whenever the document has a value of the schema's JSON type there,
// and NULL otherwise (e.g. a generated column). A date-time attribute
// (KindDateTime) maps to a timestamptz column: both sides compare instants.
// gt/gte/lt/lte on text columns compare with COLLATE "C" (byte order), so
// only an index with that collation helps them.
//
// Keys and column expressions come from the program, never from a request.
type SQLColumns map[string]string

// SQL translates the filter into a PostgreSQL boolean expression for a
// WHERE clause, with the same semantics as Match. docColumn is the jsonb
// document column (a trusted SQL expression). Placeholders are numbered from
// $argOffset+1, so pass the number of arguments already in the statement.
// Every user-supplied string (values and attribute names) travels in args,
// which are all Go strings; nothing from the filter is spliced into the SQL
// text.
//
// The result is meant to be ANDed into a WHERE clause: a term on a NULL
// column or document may evaluate to NULL instead of false, which WHERE
// treats alike; do not negate the expression.
//
// SQL validates the filter against root first, so invalid filters give a
// *ValidationError (a client error); other errors indicate a bad cols
// mapping or a Filter built in code with text PostgreSQL cannot hold. A nil
// or empty filter yields "TRUE".
func (f *Filter) SQL(docColumn string, cols SQLColumns, root *Field, argOffset int) (string, []any, error) {
	return f.SQLIndexed(docColumn, cols, nil, root, argOffset)
}

// JSONColumns maps top-level attributes whose value a store also keeps in
// a jsonb column of its own (e.g. "metadata" → "metadata") to that column:
// the attribute's value as the document has it, object members whose value
// is null aside (they never match a term), NULL when the attribute is
// missing. Keys and columns come from the program, never from a request.
type JSONColumns map[string]string

// SQLIndexed is SQL that also tests, for an eq or in term on a path inside
// an attribute of jcols whose values are all plain strings (not numbers or
// booleans, which the document may hold as either type), the column with
// the same comparison written as a constant jsonpath: `col @? path`, which
// a GIN index (jsonb_path_ops) on the column answers. That test is true
// whenever the term is, so the result is the same as SQL's; only the plan
// changes. The jsonpath is an argument like every value.
func (f *Filter) SQLIndexed(docColumn string, cols SQLColumns, jcols JSONColumns, root *Field, argOffset int) (string, []any, error) {
	if f == nil || len(f.Terms) == 0 {
		return "TRUE", nil, nil
	}
	if err := f.Validate(root); err != nil {
		return "", nil, err
	}
	b := sqlBuilder{next: argOffset + 1}
	conds := make([]string, 0, len(f.Terms))
	for _, t := range f.Terms {
		if err := t.checkText(); err != nil {
			return "", nil, err
		}
		var cond string
		if col, ok := cols[t.attr()]; ok {
			fld, err := root.Lookup(t.Path)
			if err != nil || root.crossesArray(t.Path) {
				return "", nil, fmt.Errorf("sol013: column mapping for %q: not a plain attribute of the schema (unknown, free-form or inside an array)", t.attr())
			}
			c, err := b.columnCond(t, col, fld.Kind)
			if err != nil {
				return "", nil, err
			}
			cond = c
		} else if t.kind == KindDateTime { // recorded by Validate
			cond = b.docInstantCond(t, docColumn)
		} else {
			cond = b.docCond(t, docColumn)
			if col, ok := jcols[t.Path[0]]; ok && (t.Op == OpEq || t.Op == OpIn) && plainStrings(t.Values) {
				cond = "(" + cond + " AND " + col + " @? " + b.arg(columnPath(t.Path[1:], t.Values)) + "::jsonpath)"
			}
		}
		// A NULL column means a missing attribute: the positive condition
		// is then NULL, which WHERE treats as false, and COALESCE makes its
		// negation true, as in Match. Positive conditions stay bare so that
		// the planner can use indexes on mapped columns.
		if t.Op.negated() {
			cond = "NOT COALESCE(" + cond + ", false)"
		}
		conds = append(conds, cond)
	}
	return strings.Join(conds, " AND "), b.args, nil
}

type sqlBuilder struct {
	next int
	args []any
}

// arg adds a string argument and returns its placeholder, typed as text so
// that any driver can send it as a plain string.
func (b *sqlBuilder) arg(v string) string {
	b.args = append(b.args, v)
	p := "$" + strconv.Itoa(b.next) + "::text"
	b.next++
	return p
}

// columnCond builds the positive condition for a term on a plain column.
// The result may be NULL when the column is NULL.
func (b *sqlBuilder) columnCond(t Term, col string, kind Kind) (string, error) {
	var cast string
	switch kind {
	case KindString:
	case KindNumber:
		cast = "::numeric"
		if ints, ok := int64Values(t.Values); ok {
			// Compare as bigint when possible: an index on an integer
			// column is not used for a comparison with numeric.
			t.Values, cast = ints, "::bigint"
		}
	case KindBoolean:
		cast = "::boolean"
	case KindDateTime:
		cast = "::timestamptz"
		t.Values = instantValues(t.Values)
	default:
		return "", fmt.Errorf("sol013: column mapping for %q: a %s attribute cannot be mapped to a column", t.attr(), kind)
	}
	col = "(" + col + ")"
	op := t.Op.positive()
	switch op {
	case OpEq:
		return col + " = " + b.arg(t.Values[0]) + cast, nil
	case OpIn:
		ps := make([]string, len(t.Values))
		for i, v := range t.Values {
			ps[i] = b.arg(v) + cast
		}
		return col + " IN (" + strings.Join(ps, ", ") + ")", nil
	case OpCont: // only strings pass Validate
		ps := make([]string, len(t.Values))
		for i, v := range t.Values {
			ps[i] = "strpos(" + col + ", " + b.arg(v) + ") > 0"
		}
		return "(" + strings.Join(ps, " OR ") + ")", nil
	}
	rhs := b.arg(t.Values[0]) + cast
	if kind == KindString {
		// Byte order, as in Match and in jsonpath on a UTF-8 database.
		rhs += ` COLLATE "C"`
	}
	return col + " " + sqlCmp[op] + " " + rhs, nil
}

var sqlCmp = map[Op]string{OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}

// docCond builds the positive condition for a term on the jsonb document.
// The jsonpath and its variables are arguments; the path's keys are quoted
// jsonpath string literals and the values are jsonpath variables.
func (b *sqlBuilder) docCond(t Term, doc string) string {
	path := jsonPath(t.Path)
	op := t.Op.positive()
	if op == OpCont {
		// jsonpath has no substring operator that takes a variable, so
		// enumerate the compared values ([*][*] unwraps exactly like the
		// ? filter below does) and test them in SQL.
		from := "jsonb_path_query(" + doc + ", " + b.arg(path+"[*][*]") + "::jsonpath)"
		ps := make([]string, len(t.Values))
		for i, v := range t.Values {
			ps[i] = "strpos(sol013_v #>> '{}', " + b.arg(v) + ") > 0"
		}
		return "EXISTS (SELECT 1 FROM " + from + " AS sol013(sol013_v) WHERE jsonb_typeof(sol013_v) = 'string' AND (" +
			strings.Join(ps, " OR ") + "))"
	}
	// One variable per JSON type the value can be read as; jsonpath
	// comparisons between different types are never true, which gives the
	// "compare by the document's type" rule of Match.
	vars := map[string]json.RawMessage{}
	var preds []string
	cmp := "=="
	if op.ordering() {
		cmp = map[Op]string{OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}[op]
	}
	for i, v := range t.Values {
		s, _ := json.Marshal(v) // cannot fail for a string
		name := "s" + strconv.Itoa(i)
		vars[name] = s
		preds = append(preds, "@ "+cmp+" $"+name)
		if _, ok := filterNumber(v); ok {
			name = "n" + strconv.Itoa(i)
			vars[name] = json.RawMessage(v) // JSON number syntax, checked
			preds = append(preds, "@ "+cmp+" $"+name)
		}
		if !op.ordering() && (v == "true" || v == "false") {
			name = "b" + strconv.Itoa(i)
			vars[name] = json.RawMessage(v)
			preds = append(preds, "@ "+cmp+" $"+name)
		}
	}
	varsJSON, _ := json.Marshal(vars) // RawMessages are valid JSON
	return "jsonb_path_exists(" + doc + ", " + b.arg(path+" ? ("+strings.Join(preds, " || ")+")") +
		"::jsonpath, " + b.arg(string(varsJSON)) + "::jsonb)"
}

// docInstantCond builds the positive condition for a term on a date-time
// attribute of the jsonb document: every reached string that has the shape
// of a date-time is cast to timestamptz (CASE keeps the cast from running
// on anything else) and compared with the filter's instants.
func (b *sqlBuilder) docInstantCond(t Term, doc string) string {
	from := "jsonb_path_query(" + doc + ", " + b.arg(jsonPath(t.Path)+"[*][*]") + "::jsonpath)"
	v := "CASE WHEN jsonb_typeof(sol013_v) = 'string' AND (sol013_v #>> '{}') ~ " + b.arg(instantPattern) +
		" THEN (sol013_v #>> '{}')::timestamptz END"
	vals := instantValues(t.Values)
	var pred string
	switch op := t.Op.positive(); op {
	case OpEq:
		pred = v + " = " + b.arg(vals[0]) + "::timestamptz"
	case OpIn:
		ps := make([]string, len(vals))
		for i, x := range vals {
			ps[i] = b.arg(x) + "::timestamptz"
		}
		pred = v + " IN (" + strings.Join(ps, ", ") + ")"
	default:
		pred = v + " " + sqlCmp[op] + " " + b.arg(vals[0]) + "::timestamptz"
	}
	return "EXISTS (SELECT 1 FROM " + from + " AS sol013(sol013_v) WHERE " + pred + ")"
}

// plainStrings reports whether no value can be read as a JSON number or
// boolean: docCond then compares with strings only.
func plainStrings(vals []string) bool {
	for _, v := range vals {
		if _, ok := filterNumber(v); ok || v == "true" || v == "false" {
			return false
		}
	}
	return true
}

// columnPath is the jsonpath, on the column that holds an attribute, of
// an eq/in term on path inside it with string values: docCond's test with
// the values as jsonpath string literals instead of variables.
func columnPath(path []string, vals []string) string {
	preds := make([]string, len(vals))
	for i, v := range vals {
		preds[i] = "@ == " + jsonPathString(v)
	}
	return jsonPath(path) + " ? (" + strings.Join(preds, " || ") + ")"
}

// instantValues normalises date-time filter values (checked by Validate)
// to UTC at microsecond precision.
func instantValues(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if t, ok := parseInstant(v); ok {
			out[i] = sqlInstant(t)
		} else {
			out[i] = v // unreachable after Validate; PostgreSQL reports it
		}
	}
	return out
}

// int64Values rewrites numeric filter values as plain integers ("1e1" →
// "10") if all of them are integers in the int64 range.
func int64Values(vals []string) ([]string, bool) {
	out := make([]string, len(vals))
	for i, v := range vals {
		d, ok := filterNumber(v)
		if ok && d.digits == "" {
			out[i] = "0"
			continue
		}
		if !ok || d.exp < int64(len(d.digits)) || d.exp > 19 {
			return nil, false // not a number, a fraction, or too large
		}
		s := d.digits + strings.Repeat("0", int(d.exp)-len(d.digits))
		if d.neg {
			s = "-" + s
		}
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// checkText refuses strings that PostgreSQL text cannot hold. ParseFilter
// never produces them; this guards filters built in code.
func (t Term) checkText() error {
	for _, s := range append(append([]string(nil), t.Path...), t.Values...) {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("sol013: term %s contains invalid UTF-8 or NUL", t)
		}
	}
	return nil
}

// jsonPath renders an attribute path as a lax jsonpath with every key
// quoted, so that no key can change the path's structure.
func jsonPath(path []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range path {
		b.WriteString(".")
		b.WriteString(jsonPathString(seg))
	}
	return b.String()
}

// jsonPathString quotes s as a jsonpath string literal.
func jsonPathString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
