package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sync"
)

// AppendMasked appends to dst what MaskJSON makes of the valid JSON document
// raw — json.Marshal(MaskDoc(v)) for v decoded from raw with UseNumber —
// without decoding it: object members sorted by key (the last of duplicate
// keys kept), every non-null value under a secret key replaced by Mask,
// numbers as written, strings as encoding/json writes them, no white space.
// A string that encoding/json would write as it is (printable ASCII without
// escapes, '<', '>' or '&') is copied; only others are decoded and encoded
// again. raw must be valid JSON (json.Valid): an error says when it is not
// parsable, but not every invalid document is caught.
func AppendMasked(dst, raw []byte) ([]byte, error) {
	ms := membersPool.Get().(*[]member)
	m := masker{src: raw, members: (*ms)[:0]}
	defer func() {
		if cap(m.members) > maxPooledMembers {
			return // a huge document's stack is not kept
		}
		clear(m.members[:cap(m.members)]) // keeps nothing of raw
		*ms = m.members[:0]
		membersPool.Put(ms)
	}()
	i := m.ws(0)
	dst, i, err := m.value(dst, i)
	if err != nil {
		return dst, err
	}
	if m.ws(i) != len(raw) {
		return dst, errNotJSON
	}
	return dst, nil
}

var errNotJSON = errors.New("secrets: not a JSON document")

// membersPool keeps the maskers' member stacks: grown from nothing at every
// call, they were most of what masking an instance's document allocated.
var membersPool = sync.Pool{New: func() any { return new([]member) }}

const maxPooledMembers = 1024

type masker struct {
	src []byte
	// members is a stack of the members of the objects being written.
	members []member
	// An object's members are found (skip) before they are written in
	// key order, so every object level scans what it holds once more:
	// quadratic in the nesting depth. Past memoDepth levels of objects,
	// ends remembers where every container skip has scanned ends, which
	// makes each later skip of it one lookup and the whole linear.
	depth int
	ends  map[int]int
}

const memoDepth = 16

type member struct {
	key        []byte // decoded, for sorting and IsSecretKey
	keyTok     []byte // as written in src, quotes included
	keyPlain   bool   // keyTok is what encoding/json writes for key
	start, end int    // the value in src
	null       bool
}

func (m *masker) ws(i int) int {
	for i < len(m.src) {
		switch m.src[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value appends the value at src[i] and returns where it ends.
func (m *masker) value(dst []byte, i int) ([]byte, int, error) {
	if i >= len(m.src) {
		return dst, i, errNotJSON
	}
	switch c := m.src[i]; {
	case c == '{':
		return m.object(dst, i)
	case c == '[':
		dst = append(dst, '[')
		i = m.ws(i + 1)
		if i < len(m.src) && m.src[i] == ']' {
			return append(dst, ']'), i + 1, nil
		}
		for {
			var err error
			if dst, i, err = m.value(dst, i); err != nil {
				return dst, i, err
			}
			i = m.ws(i)
			if i >= len(m.src) {
				return dst, i, errNotJSON
			}
			switch m.src[i] {
			case ',':
				dst = append(dst, ',')
				i = m.ws(i + 1)
			case ']':
				return append(dst, ']'), i + 1, nil
			default:
				return dst, i, errNotJSON
			}
		}
	case c == '"':
		end, plain, err := m.str(i)
		if err != nil {
			return dst, end, err
		}
		if plain {
			return append(dst, m.src[i:end]...), end, nil
		}
		dst, err = appendString(dst, m.src[i:end])
		return dst, end, err
	default: // a number, true, false or null: as written
		end := i
		for end < len(m.src) && !isDelim(m.src[end]) {
			end++
		}
		if end == i {
			return dst, i, errNotJSON
		}
		return append(dst, m.src[i:end]...), end, nil
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
		return true
	}
	return false
}

// str finds the end of the string at src[i] (after its closing quote) and
// whether encoding/json writes it as it is written here.
func (m *masker) str(i int) (end int, plain bool, err error) {
	plain = true
	for j := i + 1; j < len(m.src); j++ {
		switch c := m.src[j]; {
		case c == '"':
			return j + 1, plain, nil
		case c == '\\':
			plain = false
			j++
		case c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&':
			plain = false
		}
	}
	return len(m.src), false, errNotJSON
}

// appendString appends the string token tok as encoding/json writes it.
func appendString(dst, tok []byte) ([]byte, error) {
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return dst, err
	}
	b, err := json.Marshal(s)
	return append(dst, b...), err
}

// skip returns where the value at src[i] ends.
func (m *masker) skip(i int) (int, error) {
	if i >= len(m.src) {
		return i, errNotJSON
	}
	switch m.src[i] {
	case '"':
		end, _, err := m.str(i)
		return end, err
	case '{', '[':
	default: // a number, true, false or null
		end := i
		for end < len(m.src) && !isDelim(m.src[end]) {
			end++
		}
		if end == i {
			return i, errNotJSON
		}
		return end, nil
	}
	if end, ok := m.ends[i]; ok {
		return end, nil
	}
	var open []int // the containers being scanned, when ends is kept
	depth := 0
	for i < len(m.src) {
		switch m.src[i] {
		case '"':
			end, _, err := m.str(i)
			if err != nil {
				return end, err
			}
			i = end
			continue
		case '{', '[':
			if m.ends != nil {
				if end, ok := m.ends[i]; ok {
					i = end // scanned before: jump over it
					continue
				}
				open = append(open, i)
			}
			depth++
		case '}', ']':
			if m.ends != nil {
				m.ends[open[len(open)-1]] = i + 1
				open = open[:len(open)-1]
			}
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return i, errNotJSON
}

func (m *masker) object(dst []byte, i int) ([]byte, int, error) {
	base := len(m.members)
	m.depth++
	if m.depth > memoDepth && m.ends == nil {
		m.ends = make(map[int]int)
	}
	defer func() { m.members = m.members[:base]; m.depth-- }()
	i = m.ws(i + 1)
	if i < len(m.src) && m.src[i] == '}' {
		return append(dst, "{}"...), i + 1, nil
	}
	for {
		if i >= len(m.src) || m.src[i] != '"' {
			return dst, i, errNotJSON
		}
		end, plain, err := m.str(i)
		if err != nil {
			return dst, end, err
		}
		mb := member{keyTok: m.src[i:end], key: m.src[i+1 : end-1], keyPlain: plain}
		if !plain {
			var k string
			if err := json.Unmarshal(mb.keyTok, &k); err != nil {
				return dst, i, err
			}
			mb.key = []byte(k)
		}
		i = m.ws(end)
		if i >= len(m.src) || m.src[i] != ':' {
			return dst, i, errNotJSON
		}
		i = m.ws(i + 1)
		mb.start = i
		if i, err = m.skip(i); err != nil {
			return dst, i, err
		}
		mb.end = i
		mb.null = i-mb.start == 4 && string(m.src[mb.start:i]) == "null"
		m.members = append(m.members, mb)
		i = m.ws(i)
		if i >= len(m.src) {
			return dst, i, errNotJSON
		}
		if m.src[i] == '}' {
			i++
			break
		}
		if m.src[i] != ',' {
			return dst, i, errNotJSON
		}
		i = m.ws(i + 1)
	}
	ms := m.members[base:]
	// Stable: of duplicate keys the last is kept, as decoding keeps it.
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	n := len(ms)
	dst = append(dst, '{')
	first := true
	for k := 0; k < n; k++ {
		mb := m.members[base+k] // m.members may grow (and move) below
		if k+1 < n && bytes.Equal(mb.key, m.members[base+k+1].key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if mb.keyPlain {
			dst = append(dst, mb.keyTok...)
		} else {
			b, err := json.Marshal(string(mb.key))
			if err != nil {
				return dst, i, err
			}
			dst = append(dst, b...)
		}
		dst = append(dst, ':')
		if !mb.null && isSecretKey(mb.key) {
			dst = append(dst, `"`+Mask+`"`...)
			continue
		}
		var err error
		if dst, _, err = m.value(dst, mb.start); err != nil {
			return dst, i, err
		}
	}
	return append(dst, '}'), i, nil
}
