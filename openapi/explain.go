package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// This file turns kin-openapi validation errors into short sentences for
// ProblemDetails.detail. kin's own Error() strings name Go-side concepts
// ("doesn't match schema", schema dumps); clients need the JSON pointer of
// the field and what is expected instead.

// maxIssues bounds Detail: the first problems are enough to fix a request,
// and a broken body can otherwise produce dozens.
const maxIssues = 3

func newRequestError(issues []string) *RequestError {
	seen := make(map[string]bool, len(issues))
	uniq := issues[:0:0]
	for _, s := range issues {
		if !seen[s] {
			seen[s] = true
			uniq = append(uniq, s)
		}
	}
	if len(uniq) == 0 {
		uniq = []string{"the request does not match the API description"}
	}
	shown := uniq
	if len(shown) > maxIssues {
		shown = shown[:maxIssues]
	}
	// Name the part of the request once per run of issues about it:
	// `request body: /a: ...; /b: ...`.
	parts := make([]string, len(shown))
	prev := ""
	for i, s := range shown {
		prefix, rest, ok := strings.Cut(s, ": ")
		if ok && prefix == prev {
			s = rest
		}
		if ok {
			prev = prefix
		} else {
			prev = ""
		}
		parts[i] = s
	}
	detail := strings.Join(parts, "; ")
	switch n := len(uniq) - len(shown); {
	case n == 1:
		detail += " (and 1 more problem)"
	case n > 1:
		detail += fmt.Sprintf(" (and %d more problems)", n)
	}
	return &RequestError{Detail: detail, Issues: uniq}
}

// Explain renders an error returned by kin-openapi validation
// (openapi3filter.ValidateRequest or ValidateResponse, or a schema visit) as
// short sentences, each naming the JSON pointer of a problem and what was
// expected. Validate uses it for RequestError; tests use it for responses.
func Explain(err error) []string {
	if err == nil {
		return nil
	}
	return explain(err)
}

// explain flattens the error tree returned by openapi3filter.
func explain(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		var reqErr *openapi3filter.RequestError
		var respErr *openapi3filter.ResponseError
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, x := range e {
				walk(x)
			}
			return
		case *openapi3filter.SecurityRequirementsError:
			out = append(out, "authorization: the credentials are not accepted")
			return
		}
		switch {
		case errors.As(err, &reqErr):
			out = append(out, explainRequestError(reqErr)...)
		case errors.As(err, &respErr):
			out = append(out, explainResponseError(respErr)...)
		case isSchemaError(err):
			for _, is := range schemaIssues(err) {
				out = append(out, is.String())
			}
		default:
			out = append(out, firstLine(err.Error()))
		}
	}
	walk(err)
	return out
}

func explainResponseError(e *openapi3filter.ResponseError) []string {
	if e.Err == nil {
		return []string{firstLine(e.Reason)}
	}
	if !isSchemaError(e.Err) {
		return []string{firstLine(e.Reason) + ": " + firstLine(e.Err.Error())}
	}
	prefix := "response"
	switch {
	case strings.HasPrefix(e.Reason, "response body"):
		prefix = "response body"
	case strings.HasPrefix(e.Reason, "response header "):
		prefix = strings.TrimSuffix(e.Reason, " doesn't match schema")
	}
	var out []string
	for _, is := range schemaIssues(e.Err) {
		out = append(out, prefix+": "+is.String())
	}
	return out
}

func explainRequestError(e *openapi3filter.RequestError) []string {
	prefix := "request"
	switch {
	case e.Parameter != nil:
		switch e.Parameter.In {
		case openapi3.ParameterInHeader:
			prefix = fmt.Sprintf("header %q", e.Parameter.Name)
		default:
			prefix = fmt.Sprintf("%s parameter %q", e.Parameter.In, e.Parameter.Name)
		}
	case e.RequestBody != nil:
		prefix = "request body"
	}
	if e.Err == nil {
		return []string{prefix + ": " + firstLine(e.Reason)}
	}
	if errors.Is(e.Err, openapi3filter.ErrInvalidRequired) {
		return []string{prefix + " is required"}
	}
	if errors.Is(e.Err, openapi3filter.ErrInvalidEmptyValue) {
		return []string{prefix + ": must not be empty"}
	}
	var pe *openapi3filter.ParseError
	if errors.As(e.Err, &pe) && !isSchemaError(e.Err) {
		return []string{prefix + ": cannot be parsed: " + firstLine(pe.Error())}
	}
	var out []string
	for _, is := range schemaIssues(e.Err) {
		out = append(out, prefix+": "+is.String())
	}
	return out
}

func isSchemaError(err error) bool {
	var se *openapi3.SchemaError
	var me openapi3.MultiError
	return errors.As(err, &se) || errors.As(err, &me)
}

// issue is one problem at a JSON pointer (path segments, unescaped).
type issue struct {
	path []string
	msg  string
}

func (is issue) String() string {
	if len(is.path) == 0 {
		return is.msg
	}
	return pointer(is.path) + ": " + is.msg
}

func pointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(seg, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func schemaIssues(err error) []issue {
	var out []issue
	switch e := err.(type) {
	case nil:
	case openapi3.MultiError:
		for _, x := range e {
			out = append(out, schemaIssues(x)...)
		}
	case *openapi3.SchemaError:
		out = append(out, explainSchemaError(e)...)
	default:
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			return explainSchemaError(se)
		}
		out = append(out, issue{msg: firstLine(err.Error())})
	}
	return out
}

func explainSchemaError(se *openapi3.SchemaError) []issue {
	path := se.JSONPointer()
	switch se.SchemaField {
	case "required":
		if len(path) == 0 {
			return []issue{{msg: firstLine(se.Reason)}}
		}
		return []issue{{path: path[:len(path)-1], msg: fmt.Sprintf("%q is required", path[len(path)-1])}}
	case "oneOf", "anyOf":
		return explainAlternatives(se, path)
	case "additionalProperties", "readOnly", "writeOnly", "properties":
		return []issue{{path: path, msg: firstLine(se.Reason)}}
	}
	if se.Schema == nil {
		return []issue{{path: path, msg: firstLine(se.Reason)}}
	}
	return []issue{{path: path, msg: fmt.Sprintf("must be %s, got %s", describeSchema(se.Schema), describeValue(se.Value, lastSeg(path)))}}
}

// explainAlternatives handles oneOf/anyOf, whose kin errors say only that no
// alternative matched.
func explainAlternatives(se *openapi3.SchemaError, path []string) []issue {
	s := se.Schema
	if s == nil {
		return []issue{{path: path, msg: firstLine(se.Reason)}}
	}
	alts, isOneOf := s.OneOf, true
	if se.SchemaField == "anyOf" {
		alts, isOneOf = s.AnyOf, false
	}

	// "Exactly one / at least one of these members": alternatives that only
	// list required members (IpAddressData, ExtManagedVirtualLinkData, ...).
	if keys, ok := requiredOnly(alts); ok {
		obj, _ := se.Value.(map[string]any)
		var present []string
		for _, k := range keys {
			if _, ok := obj[k]; ok {
				present = append(present, k)
			}
		}
		switch {
		case !isOneOf:
			return []issue{{path: path, msg: fmt.Sprintf("at least one of %s is required", quoteList(keys))}}
		case len(present) == 0:
			return []issue{{path: path, msg: fmt.Sprintf("exactly one of %s is required, got none", quoteList(keys))}}
		default:
			return []issue{{path: path, msg: fmt.Sprintf("exactly one of %s is allowed, got %s", quoteList(keys), quoteList(present))}}
		}
	}

	// If exactly one alternative has the JSON type of the value, the client
	// meant that one: report why it does not fit.
	var match *openapi3.SchemaRef
	n := 0
	vt := jsonType(se.Value)
	for _, alt := range alts {
		if alt == nil || alt.Value == nil || alt.Value.Type.IsEmpty() {
			continue // an untyped alternative says nothing about intent
		}
		t := alt.Value.Type
		if t.Permits(vt) || vt == openapi3.TypeInteger && t.Permits(openapi3.TypeNumber) || vt == openapi3.TypeNumber && t.Permits(openapi3.TypeInteger) {
			match = alt
			n++
		}
	}
	if n == 1 {
		if err := match.Value.VisitJSON(se.Value, openapi3.MultiErrors(), openapi3.DisableSchemaErrorDetails()); err != nil {
			var out []issue
			for _, is := range schemaIssues(err) {
				out = append(out, issue{path: append(append([]string(nil), path...), is.path...), msg: is.msg})
			}
			if len(out) > 0 {
				return out
			}
		}
	}

	descs := make([]string, 0, len(alts))
	for _, alt := range alts {
		descs = append(descs, describeRef(alt))
	}
	return []issue{{path: path, msg: fmt.Sprintf("must be %s, got %s", strings.Join(descs, " or "), describeValue(se.Value, lastSeg(path)))}}
}

// requiredOnly reports whether every alternative just requires one member,
// and returns those members.
func requiredOnly(alts openapi3.SchemaRefs) ([]string, bool) {
	if len(alts) == 0 {
		return nil, false
	}
	var keys []string
	for _, alt := range alts {
		if alt == nil || alt.Value == nil {
			return nil, false
		}
		v := alt.Value
		if len(v.Required) != 1 || !v.Type.IsEmpty() || len(v.Properties) > 0 || len(v.OneOf)+len(v.AnyOf)+len(v.AllOf) > 0 {
			return nil, false
		}
		keys = append(keys, v.Required[0])
	}
	return keys, true
}

func describeRef(ref *openapi3.SchemaRef) string {
	if ref == nil || ref.Value == nil {
		return "a valid value"
	}
	d := describeSchema(ref.Value)
	if name := refName(ref.Ref); name != "" && ref.Value.Type.Is(openapi3.TypeObject) {
		d = fmt.Sprintf("%s (%s)", d, name)
	}
	return d
}

func refName(ref string) string {
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		return ref[i+1:]
	}
	return ""
}

// describeSchema says in a few words what a value must look like.
func describeSchema(s *openapi3.Schema) string {
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			vals = append(vals, shortJSON(v))
		}
		if len(vals) == 1 {
			return vals[0]
		}
		return "one of " + strings.Join(vals, ", ")
	}
	if s.Type.IsEmpty() {
		switch {
		case len(s.OneOf) > 0:
			return describeRefs(s.OneOf)
		case len(s.AnyOf) > 0:
			return describeRefs(s.AnyOf)
		}
		return "a valid value"
	}
	if s.Type.IsMultiple() {
		return "one of the types " + strings.Join(s.Type.Slice(), ", ")
	}
	switch t := s.Type.Slice()[0]; t {
	case openapi3.TypeString:
		d := "a string"
		switch {
		case s.Format == "date-time":
			d = "an RFC 3339 date-time string"
		case s.Format == "uri":
			d = "an absolute URI"
		case s.MinLength == 1 && s.MaxLength == nil:
			d = "a non-empty string"
		case s.MinLength > 1:
			d += fmt.Sprintf(" of at least %d characters", s.MinLength)
		}
		if s.MaxLength != nil {
			d += fmt.Sprintf(" of at most %d characters", *s.MaxLength)
		}
		if s.Pattern != "" {
			d += " matching " + s.Pattern
			if ex, ok := s.Example.(string); ok {
				d += fmt.Sprintf(" (e.g. %q)", ex)
			}
		}
		return d
	case openapi3.TypeInteger, openapi3.TypeNumber:
		d := "a number"
		if t == openapi3.TypeInteger {
			d = "an integer"
		}
		if s.Min != nil {
			op := "≥"
			if s.ExclusiveMin.IsTrue() {
				op = ">"
			}
			d += fmt.Sprintf(" %s %s", op, strconv.FormatFloat(*s.Min, 'f', -1, 64))
		}
		if s.Max != nil {
			op := "≤"
			if s.ExclusiveMax.IsTrue() {
				op = "<"
			}
			if s.Min != nil {
				d += " and"
			}
			d += fmt.Sprintf(" %s %s", op, strconv.FormatFloat(*s.Max, 'f', -1, 64))
		}
		return d
	case openapi3.TypeBoolean:
		return "a boolean (true or false)"
	case openapi3.TypeArray:
		d := "an array"
		switch {
		case s.MinItems == 1:
			d = "a non-empty array"
		case s.MinItems > 1:
			d += fmt.Sprintf(" of at least %d items", s.MinItems)
		}
		if s.MaxItems != nil {
			d += fmt.Sprintf(" of at most %d items", *s.MaxItems)
		}
		return d
	case openapi3.TypeObject:
		return "an object"
	case openapi3.TypeNull:
		return "null"
	default:
		return "a " + t
	}
}

func describeRefs(refs openapi3.SchemaRefs) string {
	descs := make([]string, 0, len(refs))
	for _, r := range refs {
		descs = append(descs, describeRef(r))
	}
	return strings.Join(descs, " or ")
}

// describeValue renders what the client sent: scalars verbatim (strings
// quoted and cut short), containers by kind. Values under keys that look
// like secrets are never echoed.
func describeValue(v any, key string) string {
	if looksSecret(key) {
		return article(jsonType(v))
	}
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return strconv.Quote(truncate(x, 80))
	case map[string]any:
		return "an object"
	case []any:
		switch len(x) {
		case 0:
			return "an empty array"
		case 1:
			return "an array of 1 item"
		}
		return fmt.Sprintf("an array of %d items", len(x))
	}
	return article(jsonType(v))
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return openapi3.TypeNull
	case bool:
		return openapi3.TypeBoolean
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return openapi3.TypeInteger
		}
		return openapi3.TypeNumber
	case float64:
		if x == float64(int64(x)) {
			return openapi3.TypeInteger
		}
		return openapi3.TypeNumber
	case string:
		return openapi3.TypeString
	case map[string]any:
		return openapi3.TypeObject
	case []any:
		return openapi3.TypeArray
	}
	return "value"
}

func article(kind string) string {
	switch kind {
	case openapi3.TypeNull:
		return "null"
	case openapi3.TypeInteger, openapi3.TypeObject, openapi3.TypeArray:
		return "an " + kind
	}
	return "a " + kind
}

// secretWords mirrors the server's masking list closely enough to keep
// credentials out of error messages.
var secretWords = []string{"password", "passwd", "secret", "token", "private_key", "privatekey", "ssh_key", "sshkey", "credential", "cert_key", "certkey", "api_key", "apikey"}

func looksSecret(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

func lastSeg(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return path[len(path)-1]
}

func quoteList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return truncate(string(b), 60)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
