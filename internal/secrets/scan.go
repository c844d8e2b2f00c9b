package secrets

import (
	"encoding/json"
	"strings"
	"sync"
)

// secretScan finds, in the bytes of a JSON document, the members whose key
// is secret (IsSecretKey) and whose value is not null — the values SealDoc
// seals and OpenDoc opens — without decoding the document: the rest of it
// is only scanned, and copied only when a value is replaced. It does not look
// inside such a value (SealDoc seals it whole). The document must be valid
// JSON (json.Valid): the scan checks its structure, not every token.
type secretScan struct {
	masker // src, and its token scanners
	base   Place
	// path leads from the document to the value being scanned.
	path    []pathSeg
	pathBuf [16]pathSeg // path's first levels, allocated with s
	// visit is called with each secret member's value (its bytes in src)
	// and the function that makes its place; it returns what replaces the
	// value, or nil to keep it.
	visit func(val []byte, at func() Place) ([]byte, error)
	out   []byte // nil until the first replacement
	last  int    // src[:last] is in out
	// strict: every token is checked as json.Valid checks it, and the
	// secret members are only noted (found) until the whole document has
	// passed, so that visit never runs for a document that is not JSON.
	strict bool
	depth  int // containers around the value being scanned (strict)
	found  []foundSecret
}

// foundSecret is a secret member's value, src[start:end], at its place.
type foundSecret struct {
	start, end int
	at         Place
}

type pathSeg struct {
	key  []byte // the member's key, decoded
	elem bool   // an array element ("*"), not a member
}

// scanSecrets returns raw with every secret member's value replaced as visit
// says; raw itself when nothing was replaced.
func scanSecrets(raw []byte, base Place, visit func(val []byte, at func() Place) ([]byte, error)) ([]byte, error) {
	return scan(raw, base, visit, false)
}

// scanValidSecrets is scanSecrets for a document not known to be valid
// JSON: it checks it in the same pass, as json.Valid would, and calls visit
// only once it has passed; errInvalid when it has not (the caller's
// encoding/json then says why, and the scan was not stricter than it).
func scanValidSecrets(raw []byte, base Place, visit func(val []byte, at func() Place) ([]byte, error)) ([]byte, error) {
	return scan(raw, base, visit, true)
}

func scan(raw []byte, base Place, visit func(val []byte, at func() Place) ([]byte, error), strict bool) ([]byte, error) {
	s := scanPool.Get().(*secretScan)
	defer func() {
		found := s.found[:0]
		clear(s.found)                // keeps nothing of raw
		*s = secretScan{found: found} // keeps nothing of raw, visit or out
		scanPool.Put(s)
	}()
	s.masker, s.base, s.visit, s.strict = masker{src: raw}, base, visit, strict
	s.path = s.pathBuf[:0]
	end, err := s.value(s.ws(0))
	if err == nil && s.ws(end) != len(raw) {
		err = errNotJSON
	}
	if err != nil {
		if strict {
			return nil, errInvalid
		}
		return nil, err
	}
	for _, f := range s.found {
		with, err := visit(raw[f.start:f.end], func() Place { return f.at })
		if err != nil {
			return nil, err
		}
		if with != nil {
			s.out = append(append(s.out, raw[s.last:f.start]...), with...)
			s.last = f.end
		}
	}
	if s.out == nil {
		return raw, nil
	}
	return append(s.out, raw[s.last:]...), nil
}

// scanPool keeps the scanners (their first path levels are most of their
// size): every document an operation seals, opens or scrubs is scanned.
var scanPool = sync.Pool{New: func() any { return new(secretScan) }}

// at is the place of the value the path leads to.
func (s *secretScan) at() Place {
	var b strings.Builder
	b.WriteString(s.base.Path)
	for _, seg := range s.path {
		b.WriteByte('/')
		if seg.elem {
			b.WriteByte('*')
		} else {
			b.WriteString(pointerEscaper.Replace(string(seg.key)))
		}
	}
	return Place{Row: s.base.Row, Path: b.String()}
}

// value scans the value at src[i] and returns where it ends.
func (s *secretScan) value(i int) (int, error) {
	if i >= len(s.src) {
		return i, errNotJSON
	}
	switch s.src[i] {
	case '{':
		if s.depth++; s.strict && s.depth > maxDepth {
			return i, errInvalid
		}
		defer func() { s.depth-- }()
		return s.object(i)
	case '[':
		if s.depth++; s.strict && s.depth > maxDepth {
			return i, errInvalid
		}
		s.path = append(s.path, pathSeg{elem: true})
		defer func() { s.path = s.path[:len(s.path)-1]; s.depth-- }()
		i = s.ws(i + 1)
		if i < len(s.src) && s.src[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := s.value(i)
			if err != nil {
				return end, err
			}
			var done bool
			if i, done, err = s.after(end, ']'); done || err != nil {
				return i, err
			}
		}
	default: // a string, number, true, false or null
		if s.strict {
			return s.checked(s.validValue(i, s.depth))
		}
		return s.skip(i)
	}
}

// checked is a validating scan's (end, ok) as (end, err).
func (s *secretScan) checked(end int, ok bool) (int, error) {
	if !ok {
		return end, errInvalid
	}
	return end, nil
}

// after reads what follows a member or an element ending at end: a comma
// (the index of the next one) or close (done: the index after it).
func (s *secretScan) after(end int, close byte) (i int, done bool, err error) {
	i = s.ws(end)
	switch {
	case i >= len(s.src):
		return i, false, errNotJSON
	case s.src[i] == ',':
		return s.ws(i + 1), false, nil
	case s.src[i] == close:
		return i + 1, true, nil
	}
	return i, false, errNotJSON
}

func (s *secretScan) object(i int) (int, error) {
	i = s.ws(i + 1)
	if i < len(s.src) && s.src[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(s.src) || s.src[i] != '"' {
			return i, errNotJSON
		}
		if s.strict {
			if end, err := s.checked(s.validString(i)); err != nil {
				return end, err
			}
		}
		end, plain, err := s.str(i)
		if err != nil {
			return end, err
		}
		key := s.src[i+1 : end-1]
		if !plain {
			var k string
			if err := json.Unmarshal(s.src[i:end], &k); err != nil {
				return i, err
			}
			key = []byte(k)
		}
		i = s.ws(end)
		if i >= len(s.src) || s.src[i] != ':' {
			return i, errNotJSON
		}
		i = s.ws(i + 1)
		s.path = append(s.path, pathSeg{key: key})
		if i < len(s.src) && s.src[i] != 'n' && isSecretKey(key) && s.strict {
			if end, err = s.checked(s.validValue(i, s.depth)); err == nil {
				s.found = append(s.found, foundSecret{start: i, end: end, at: s.at()})
			}
		} else if i < len(s.src) && s.src[i] != 'n' && isSecretKey(key) {
			end, err = s.skip(i)
			if err == nil {
				var with []byte
				if with, err = s.visit(s.src[i:end], s.at); with != nil && err == nil {
					s.out = append(append(s.out, s.src[s.last:i]...), with...)
					s.last = end
				}
			}
		} else {
			end, err = s.value(i)
		}
		s.path = s.path[:len(s.path)-1]
		if err != nil {
			return end, err
		}
		var done bool
		if i, done, err = s.after(end, '}'); done || err != nil {
			return i, err
		}
	}
}

// jsonString is the string value of the JSON string token tok, and
// whether tok is one.
func jsonString(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	if _, plain, err := (&masker{src: tok}).str(0); err == nil && plain {
		return string(tok[1 : len(tok)-1]), true
	}
	var v string
	if json.Unmarshal(tok, &v) != nil {
		return "", false
	}
	return v, true
}

// canonical is the JSON encoding of the value tok — json.Marshal of what
// decoding it with UseNumber gives, the plaintext SealDoc seals: strings
// that encoding/json writes as they are, numbers, true and false are tok
// itself.
func canonical(tok []byte) ([]byte, error) {
	switch tok[0] {
	case '{', '[':
	case '"':
		if _, plain, err := (&masker{src: tok}).str(0); err == nil && plain {
			return tok, nil
		}
	default:
		return tok, nil
	}
	v, err := decodeNumbers(tok)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
