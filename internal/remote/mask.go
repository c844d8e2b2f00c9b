package remote

import (
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Mask replaces secret values in error text, output lines and logs.
const Mask = secrets.Mask

// MinSecretLen is the shortest value masked: masking a one- or two-letter
// "secret" everywhere would garble every message without protecting much
// (internal/secrets applies the same rule).
const MinSecretLen = 4

// masker replaces secrets in text. Besides each secret itself it masks the
// forms a secret takes inside command lines built with Quote (once and twice
// quoted, as in sudo sh -c '...'), and, for a multi-line secret such as a
// private key, each of its lines (output is masked line by line).
type masker struct {
	raw  []string // the secrets as given
	vals []string // what is replaced: distinct, longest first
	r    *strings.Replacer
	max  int // longest value, in bytes
}

func newMasker(lists ...[]string) *masker {
	seen := map[string]bool{}
	var raw, vals []string
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	for _, l := range lists {
		for _, s := range l {
			if len(s) < MinSecretLen {
				continue
			}
			raw = append(raw, s)
			add(s)
			add(quoteBody(s))
			add(quoteBody(quoteBody(s)))
			if strings.ContainsAny(s, "\r\n") {
				for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
					// Short lines of a multi-line secret (a lone "}" or
					// "-----") would mask unrelated text without protecting
					// anything.
					if line = strings.TrimSpace(line); len(line) >= 8 {
						add(line)
					}
				}
			}
		}
	}
	// Longest first, so that a secret containing another one is masked as a
	// whole (strings.Replacer tries the old strings in argument order).
	slices.SortStableFunc(vals, func(a, b string) int { return len(b) - len(a) })
	m := &masker{raw: raw, vals: vals}
	if len(vals) > 0 {
		m.max = len(vals[0])
		pairs := make([]string, 0, 2*len(vals))
		for _, v := range vals {
			pairs = append(pairs, v, Mask)
		}
		m.r = strings.NewReplacer(pairs...)
	}
	return m
}

// with returns a masker for m's secrets plus extra.
func (m *masker) with(extra []string) *masker {
	if len(extra) == 0 {
		return m
	}
	return newMasker(m.raw, extra)
}

func (m *masker) mask(s string) string {
	if m == nil || m.r == nil || s == "" {
		return s
	}
	return m.r.Replace(s)
}
