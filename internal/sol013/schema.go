package sol013

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Kind is the JSON type of an attribute.
type Kind int

// Attribute kinds. KindAny is a value of unknown type (a free-form member
// such as metadata/<key>): every operator and every sub-path is allowed.
// KindDateTime is a string holding an RFC 3339 date-time (OpenAPI format
// date-time): filters compare it as an instant, not as text.
const (
	KindAny Kind = iota
	KindString
	KindNumber
	KindBoolean
	KindObject
	KindArray
	KindDateTime
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindBoolean:
		return "boolean"
	case KindObject:
		return "object"
	case KindArray:
		return "array"
	case KindDateTime:
		return "date-time"
	}
	return "any"
}

// Field describes an attribute: its kind, the element of an array, the
// properties of an object. A FreeForm object (metadata, extensions,
// additionalParams, ...) also allows attributes not listed in Props; they
// are of KindAny.
type Field struct {
	Kind     Kind
	Elem     *Field            // KindArray: element; nil means KindAny
	Props    map[string]*Field // KindObject: known properties
	FreeForm bool
}

// anyField is what unknown members of free-form objects look like.
var anyField = &Field{Kind: KindAny, FreeForm: true}

// FieldsFromOpenAPI builds the attribute tree of an OpenAPI schema. It
// follows properties, items and allOf/oneOf/anyOf (merging the branches'
// properties); an object with additionalProperties or without declared
// properties is free-form. A nil schema yields a KindAny field. Recursive
// schemas produce a cyclic tree, which Lookup handles.
func FieldsFromOpenAPI(s *openapi3.Schema) *Field {
	return fromSchema(s, map[*openapi3.Schema]*Field{})
}

func fromSchema(s *openapi3.Schema, seen map[*openapi3.Schema]*Field) *Field {
	if s == nil {
		return anyField
	}
	if f, ok := seen[s]; ok {
		return f
	}
	f := &Field{}
	seen[s] = f // before descending, so that cycles terminate

	switch typeOf(s) {
	case "string":
		f.Kind = KindString
		if s.Format == "date-time" {
			f.Kind = KindDateTime
		}
	case "number", "integer":
		f.Kind = KindNumber
	case "boolean":
		f.Kind = KindBoolean
	case "array":
		f.Kind = KindArray
		if s.Items != nil {
			f.Elem = fromSchema(s.Items.Value, seen)
		}
	case "object":
		f.Kind = KindObject
	}

	// Composition: the branches' properties are all filterable. Branches
	// of a different kind (rare in ETSI schemas) make the field KindAny.
	var branches []*openapi3.SchemaRef
	branches = append(branches, s.AllOf...)
	branches = append(branches, s.OneOf...)
	branches = append(branches, s.AnyOf...)
	for _, br := range branches {
		if br == nil || br.Value == nil {
			continue
		}
		bf := fromSchema(br.Value, seen)
		mergeField(f, bf)
	}

	if f.Kind == KindObject || (f.Kind == KindAny && len(s.Properties) > 0) {
		f.Kind = KindObject
		for name, ref := range s.Properties {
			var ps *openapi3.Schema
			if ref != nil {
				ps = ref.Value
			}
			if f.Props == nil {
				f.Props = map[string]*Field{}
			}
			f.Props[name] = fromSchema(ps, seen)
		}
		ap := s.AdditionalProperties
		if (ap.Has != nil && *ap.Has) || ap.Schema != nil || len(f.Props) == 0 {
			f.FreeForm = true
		}
	}
	if f.Kind == KindAny {
		f.FreeForm = true
	}
	return f
}

// typeOf returns the schema's single type ignoring "null" (OpenAPI 3.1
// nullable), or "" when there is none or several.
func typeOf(s *openapi3.Schema) string {
	var t string
	for _, x := range s.Type.Slice() {
		if x == "null" {
			continue
		}
		if t != "" {
			return ""
		}
		t = x
	}
	return t
}

// mergeField folds a composition branch b into f.
func mergeField(f, b *Field) {
	if b == f {
		return
	}
	switch {
	case f.Kind == KindAny && len(f.Props) == 0 && f.Elem == nil:
		f.Kind = b.Kind
	case b.Kind == KindAny:
		return
	case f.Kind != b.Kind:
		*f = Field{Kind: KindAny, FreeForm: true}
		return
	}
	switch f.Kind {
	case KindArray:
		if f.Elem == nil {
			f.Elem = b.Elem
		}
	case KindObject:
		if f.Props == nil {
			f.Props = map[string]*Field{}
		}
		for k, v := range b.Props {
			if _, ok := f.Props[k]; !ok {
				f.Props[k] = v
			}
		}
		f.FreeForm = f.FreeForm || b.FreeForm
	}
}

// leaf strips array wrappers: filters compare against array elements.
func (f *Field) leaf() *Field {
	for f != nil && f.Kind == KindArray {
		f = f.Elem
	}
	if f == nil {
		return anyField
	}
	return f
}

// crossesArray reports whether path passes through an array below f.
func (f *Field) crossesArray(path []string) bool {
	cur := f
	for _, seg := range path {
		if cur == nil || cur.Kind == KindArray {
			return true
		}
		cur = cur.Props[seg]
	}
	return cur != nil && cur.Kind == KindArray
}

// Lookup returns the field at path, descending through arrays as filters
// do. Unknown attributes give an error that names the attribute and lists
// the valid names at that level.
func (f *Field) Lookup(path []string) (*Field, error) {
	cur := f
	for i, seg := range path {
		cur = cur.leaf()
		switch {
		case cur.Kind == KindAny:
			return anyField, nil
		case cur.Kind == KindObject:
			if next, ok := cur.Props[seg]; ok {
				cur = next
				continue
			}
			if cur.FreeForm {
				return anyField, nil
			}
			where := "top-level attributes"
			if i > 0 {
				where = fmt.Sprintf("attributes of %q", strings.Join(path[:i], "/"))
			}
			return nil, fmt.Errorf("unknown attribute %q; valid %s are %s", strings.Join(path[:i+1], "/"), where, nameList(cur.Props))
		default:
			return nil, fmt.Errorf("attribute %q is a %s and has no attribute %q", strings.Join(path[:i], "/"), cur.Kind, seg)
		}
	}
	if cur == nil {
		return anyField, nil
	}
	return cur, nil
}

// nameList lists up to 25 property names for error messages.
func nameList(props map[string]*Field) string {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	const max = 25
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
