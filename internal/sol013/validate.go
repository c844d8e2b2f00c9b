package sol013

import (
	"fmt"
	"slices"
)

// ValidationError reports a filter term that is well-formed but does not
// fit the resource's attributes.
type ValidationError struct {
	Offset int    // byte offset of the term in the filter
	Attr   string // attribute path as written
	Msg    string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("filter: %s (in the expression at offset %d)", e.Msg, e.Offset)
}

// Validate checks every term against the attribute tree: the attribute must
// exist, must not be an object, and operator and values must fit its kind.
// It records each attribute's kind in its term, so that Match then compares
// date-time attributes as instants (SQL validates by itself). A nil root
// allows everything. Errors are *ValidationError.
func (f *Filter) Validate(root *Field) error {
	if f == nil {
		return nil
	}
	for i := range f.Terms {
		k, err := f.Terms[i].validate(root)
		if err != nil {
			return err
		}
		f.Terms[i].kind = k
	}
	return nil
}

func (t Term) validate(root *Field) (Kind, error) {
	attr := t.attr()
	bad := func(format string, args ...any) error {
		return &ValidationError{Offset: t.Offset, Attr: attr, Msg: fmt.Sprintf(format, args...)}
	}
	fld, err := root.Lookup(t.Path)
	if err != nil {
		return KindAny, bad("%s", err.Error())
	}
	leaf := fld.leaf()
	return leaf.Kind, t.validateKind(leaf, bad)
}

func (t Term) validateKind(leaf *Field, bad func(string, ...any) error) error {
	attr := t.attr()
	switch leaf.Kind {
	case KindObject:
		example := attr + "/<key>"
		if len(leaf.Props) > 0 {
			names := make([]string, 0, len(leaf.Props))
			for k := range leaf.Props {
				names = append(names, k)
			}
			slices.Sort(names)
			example = attr + "/" + names[0]
		}
		return bad("attribute %q is an object and cannot be compared; filter on one of its attributes, e.g. %s", attr, example)
	case KindBoolean:
		if t.Op.ordering() || t.Op.positive() == OpCont {
			return bad("operator %s cannot be used on the boolean attribute %q; use eq, neq, in or nin", t.Op, attr)
		}
		for _, v := range t.Values {
			if v != "true" && v != "false" {
				return bad("value %q is not a boolean; attribute %q takes true or false", v, attr)
			}
		}
	case KindNumber:
		if t.Op.positive() == OpCont {
			return bad("operator %s works on strings but %q is a number; use eq, neq, gt, gte, lt, lte, in or nin", t.Op, attr)
		}
		for _, v := range t.Values {
			if _, ok := filterNumber(v); !ok {
				return bad("value %q is not a number; attribute %q is numeric (write numbers like 42, -1.5 or 1e3)", v, attr)
			}
		}
	case KindDateTime:
		if t.Op.positive() == OpCont {
			return bad("operator %s cannot be used on the date-time attribute %q; compare instants with eq, neq, gt, gte, lt, lte, in or nin", t.Op, attr)
		}
		for _, v := range t.Values {
			if _, ok := parseInstant(v); !ok {
				return bad("value %q is not an RFC 3339 date-time; attribute %q is compared as an instant (write e.g. 2024-05-01T12:00:00Z or 2024-05-01T14:00:00.5+02:00, with '+' percent-encoded as %%2B)", v, attr)
			}
		}
	}
	return nil
}
