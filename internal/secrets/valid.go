package secrets

import "errors"

// errInvalid is what the validating scan (secretScan.valid) says of a
// document it does not take as valid JSON; the caller then asks
// encoding/json, which words the error (or, should the scan be stricter
// than it, takes the document).
var errInvalid = errors.New("secrets: not valid JSON as scanned")

// maxDepth is encoding/json's limit of nested containers.
const maxDepth = 10000

// validDoc reports whether raw is valid JSON, as json.Valid does, in a
// tighter loop than encoding/json's state machine (several times faster).
func validDoc(raw []byte) bool {
	m := masker{src: raw}
	end, ok := m.validValue(m.ws(0), 0)
	return ok && m.ws(end) == len(raw)
}

// validValue checks, as json.Valid does, the value at src[i] — its strings'
// escapes and control characters, its numbers' grammar, its literals, its
// containers' structure — and returns where it ends. depth is the number of
// containers around it. It does not decide about UTF-8, nor does
// encoding/json.
func (m *masker) validValue(i, depth int) (int, bool) {
	if i >= len(m.src) {
		return i, false
	}
	switch c := m.src[i]; {
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return i, false
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = m.ws(i + 1)
		if i < len(m.src) && m.src[i] == close {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i, ok = m.validString(i); !ok {
					return i, false
				}
				if i = m.ws(i); i >= len(m.src) || m.src[i] != ':' {
					return i, false
				}
				i = m.ws(i + 1)
			}
			if i, ok = m.validValue(i, depth+1); !ok {
				return i, false
			}
			if i = m.ws(i); i >= len(m.src) {
				return i, false
			}
			switch m.src[i] {
			case ',':
				i = m.ws(i + 1)
			case close:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return m.validString(i)
	case c == '-' || '0' <= c && c <= '9':
		return m.validNumber(i)
	case c == 't':
		return m.literal(i, "true")
	case c == 'f':
		return m.literal(i, "false")
	case c == 'n':
		return m.literal(i, "null")
	}
	return i, false
}

func (m *masker) literal(i int, lit string) (int, bool) {
	if len(m.src)-i < len(lit) || string(m.src[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// validString checks the string at src[i] and returns where it ends.
func (m *masker) validString(i int) (int, bool) {
	if i >= len(m.src) || m.src[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(m.src); j++ {
		switch c := m.src[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		case c == '\\':
			if j++; j >= len(m.src) {
				return j, false
			}
			switch m.src[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(m.src)-j <= 4 {
					return j, false
				}
				for _, h := range m.src[j+1 : j+5] {
					if !isHex(h) {
						return j, false
					}
				}
				j += 4
			default:
				return j, false
			}
		}
	}
	return len(m.src), false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber checks the number at src[i] — -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? —
// and returns where it ends; what follows is the structure's to judge.
func (m *masker) validNumber(i int) (int, bool) {
	digits := func(i int) int {
		for i < len(m.src) && '0' <= m.src[i] && m.src[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(m.src) && m.src[i] == '-' {
		i++
	}
	switch {
	case i >= len(m.src):
		return i, false
	case m.src[i] == '0':
		i++
	case '1' <= m.src[i] && m.src[i] <= '9':
		i = digits(i + 1)
	default:
		return i, false
	}
	if i < len(m.src) && m.src[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(m.src) && (m.src[i] == 'e' || m.src[i] == 'E') {
		i++
		if i < len(m.src) && (m.src[i] == '+' || m.src[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
