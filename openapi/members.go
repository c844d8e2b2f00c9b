package openapi

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// A request body member the document does not describe would be dropped
// without a word by the handlers' decoding — a misspelt optional attribute
// ("instantiationLevelID") then changes nothing and the client never learns
// why. The document's schemas leave additionalProperties unset (as SOL003's
// do) and the response checks share them, so the request side is checked
// here instead: an object whose schema names its properties accepts those
// only; a free-form object (KeyValuePairs, additionalParams, or any schema
// without properties) accepts anything, its content being the driver's to
// judge.

// unknownMembers lists, for the JSON value v checked against s, every
// member of an object that the object's schema does not describe, as
// issues at the object's path.
func unknownMembers(s *openapi3.Schema, v any, path []string, out []issue) []issue {
	if s == nil {
		return out
	}
	switch v := v.(type) {
	case map[string]any:
		props, free := members(s)
		if free {
			return out
		}
		keys := sortedKeys(v)
		var bad []string
		for _, k := range keys {
			if _, ok := props[k]; !ok {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			out = append(out, issue{path: slices.Clone(path), msg: Unsupported(bad, sortedKeys(props))})
		}
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				out = unknownMembers(ps, v[k], append(slices.Clip(path), k), out)
			}
		}
	case []any:
		if s.Items == nil || s.Items.Value == nil {
			return out
		}
		for i, e := range v {
			out = unknownMembers(s.Items.Value, e, append(slices.Clip(path), strconv.Itoa(i)), out)
		}
	}
	return out
}

// memberSets caches members by schema: a loaded document does not change.
var memberSets sync.Map // *openapi3.Schema → memberSet

type memberSet struct {
	props map[string]*openapi3.Schema
	free  bool
}

// members returns the properties an object of schema s may have — its
// own, its allOf parts', and those of its object alternatives (oneOf,
// anyOf) — or free when s lets any member through.
func members(s *openapi3.Schema) (props map[string]*openapi3.Schema, free bool) {
	if m, ok := memberSets.Load(s); ok {
		ms := m.(memberSet)
		return ms.props, ms.free
	}
	props, free = collectMembers(s)
	memberSets.Store(s, memberSet{props, free})
	return props, free
}

func collectMembers(s *openapi3.Schema) (props map[string]*openapi3.Schema, free bool) {
	props = map[string]*openapi3.Schema{}
	var walk func(s *openapi3.Schema, depth int) bool
	walk = func(s *openapi3.Schema, depth int) bool {
		if s == nil || depth > 8 {
			return false
		}
		ap := s.AdditionalProperties
		if (ap.Has != nil && *ap.Has) || ap.Schema != nil {
			return true
		}
		for k, p := range s.Properties {
			if _, seen := props[k]; !seen && p != nil {
				props[k] = p.Value
			}
		}
		for _, parts := range [][]*openapi3.SchemaRef{s.AllOf, s.OneOf, s.AnyOf} {
			for _, p := range parts {
				if p == nil || p.Value == nil {
					continue
				}
				// Alternatives of another type (CancelModeRequest's bare
				// string) say nothing about an object's members.
				if t := p.Value.Type; t != nil && len(t.Slice()) > 0 && !t.Is("object") {
					continue
				}
				if walk(p.Value, depth+1) {
					return true
				}
			}
		}
		return false
	}
	if walk(s, 0) {
		return nil, true
	}
	return props, len(props) == 0 // an object schema that names no member is free-form
}

// Unsupported words the problem of members bad of an object whose members
// may be known: which members, a likely intended name for each misspelt
// one, and what the object accepts. The API's other JSON bodies (those not
// described by this document) use it too, so that every such problem reads
// the same.
func Unsupported(bad, known []string) string {
	quoted := make([]string, len(bad))
	for i, b := range bad {
		quoted[i] = strconv.Quote(b)
		if m := closest(b, known); m != "" {
			quoted[i] += fmt.Sprintf(" (did you mean %q?)", m)
		}
	}
	if len(bad) == 1 {
		return fmt.Sprintf("unsupported attribute %s (not in this API: remove it or correct its name); supported here: %s",
			quoted[0], strings.Join(known, ", "))
	}
	return fmt.Sprintf("unsupported attributes %s (not in this API: remove them or correct their names); supported here: %s",
		strings.Join(quoted, ", "), strings.Join(known, ", "))
}

// closest is the known name that b most likely misspells: the same but for
// case, underscores or hyphens, or at most two edits away (one for short
// names); "" if none is that close.
func closest(b string, known []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, k := range known {
		if norm(k) == norm(b) {
			return k
		}
	}
	best, bestD := "", 3
	if len(b) <= 5 {
		bestD = 2
	}
	for _, k := range known {
		if d := editDistance(strings.ToLower(b), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
