package secrets

import "strings"

// Place is where a sealed value lives: its row, named by table, primary key
// and column ("vnf_instances/<id>", "vims/<id>/auth_cred"), and its JSON
// path within the row's document ("/metadata/api_token"). Array elements
// are "*": a value stays bound to its field, not to a position that scale
// and heal operations shift. The place is part of every v3 value's GCM
// additional data.
type Place struct {
	Row  string
	Path string // JSON Pointer (RFC 6901), arrays as "*"; "" is the whole document
}

// At is the place of a whole document stored in row.
func At(row string) Place { return Place{Row: row} }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1", "*", "~2")

// Key is the place of a member of the object at p.
func (p Place) Key(k string) Place {
	return Place{Row: p.Row, Path: p.Path + "/" + pointerEscaper.Replace(k)}
}

// Elem is the place of every element of the array at p.
func (p Place) Elem() Place { return Place{Row: p.Row, Path: p.Path + "/*"} }

func (p Place) String() string {
	if p.Path == "" {
		return p.Row
	}
	return p.Row + " " + p.Path
}

// aad is the additional data of a v3 value: the header, then the place,
// separated by NUL (which neither contains).
func (p Place) aad(header string) []byte {
	return []byte(header + "\x00" + p.Row + "\x00" + p.Path)
}

// trail is a place under construction while a document is walked: the
// member key or array element that leads from its parent. The walk makes a
// Place only where it needs one (a secret key, a sealed value), so its cost
// stays linear in the document's size however deep the document nests; a
// Path string per level would copy the path at every level.
type trail struct {
	up   *trail
	key  string
	elem bool // an array element ("*"), not a member
}

// at is the place the trail leads to from base.
func (t *trail) at(base Place) Place {
	var segs []*trail
	for n := t; n != nil; n = n.up {
		segs = append(segs, n)
	}
	var b strings.Builder
	b.WriteString(base.Path)
	for i := len(segs) - 1; i >= 0; i-- {
		b.WriteByte('/')
		if segs[i].elem {
			b.WriteByte('*')
		} else {
			b.WriteString(pointerEscaper.Replace(segs[i].key))
		}
	}
	return Place{Row: base.Row, Path: b.String()}
}
