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
