package sol013

import (
	"encoding/json"
	"strconv"
	"strings"
)

// decimal is an exact decimal number, normalised so that comparing two of
// them needs no arithmetic: value = ±0.digits × 10^exp, digits without
// leading or trailing zeros; zero has no digits. Exactness matters because
// PostgreSQL compares jsonb numbers as numeric, not float64.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxFilterExp bounds the exponent of numbers written in a filter so that
// every number we treat as numeric is also a valid PostgreSQL numeric.
const maxFilterExp = 1000

// filterNumber reports whether a filter value is a number, using JSON
// number syntax. Match and SQL both use it, so they agree on which values
// are compared numerically.
func filterNumber(v string) (decimal, bool) {
	return parseDecimal(v, maxFilterExp)
}

// parseDecimal parses a JSON number. Exponents beyond ±maxExp are refused.
func parseDecimal(s string, maxExp int64) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return d, false
	}
	var fracPart string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracPart = s[fs:i]
		if fracPart == "" {
			return d, false
		}
	}
	var e int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigit(s[i]) {
			if e <= maxExp {
				e = e*10 + int64(s[i]-'0')
			}
			i++
		}
		if i == es || e > maxExp {
			return d, false
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return d, false
	}
	digits := intPart + fracPart
	exp := int64(len(intPart)) + e
	trimmed := strings.TrimLeft(digits, "0")
	exp -= int64(len(digits) - len(trimmed))
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return decimal{}, true // zero; -0 == 0
	}
	d.digits, d.exp = trimmed, exp
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

func cmpDecimal(a, b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb || sa == 0 {
		return cmpInt(sa, sb)
	}
	c := 0
	switch {
	case a.exp != b.exp:
		c = cmpInt64(a.exp, b.exp)
	default:
		c = strings.Compare(a.digits, b.digits)
	}
	return c * sa
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// docNumber converts a number from a decoded JSON document.
func docNumber(x any) (decimal, bool) {
	// Documents are trusted, so the exponent bound only guards int64.
	const docMaxExp = 1 << 40
	switch n := x.(type) {
	case json.Number:
		return parseDecimal(n.String(), docMaxExp)
	case float64:
		return parseDecimal(strconv.FormatFloat(n, 'g', -1, 64), docMaxExp)
	case float32:
		return parseDecimal(strconv.FormatFloat(float64(n), 'g', -1, 32), docMaxExp)
	case int:
		return parseDecimal(strconv.Itoa(n), docMaxExp)
	case int64:
		return parseDecimal(strconv.FormatInt(n, 10), docMaxExp)
	}
	return decimal{}, false
}
