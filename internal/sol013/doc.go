// Package sol013 implements the ETSI NFV-SOL013 query mechanisms used by the
// SOL003 VNF LCM API: attribute-based filtering (§5.2) and attribute
// selectors (§5.3).
//
// A filter is parsed once with [ParseFilter], checked against the resource's
// attribute schema with [Filter.Validate] (a [Field] tree, usually built by
// [FieldsFromOpenAPI]) and then either evaluated in memory with
// [Filter.Match] or translated to a parameterised PostgreSQL condition with
// [Filter.SQL]. Match and SQL implement the same semantics, so a store may use
// either; the package tests check this against a real PostgreSQL.
//
// Semantics shared by Match and SQL:
//   - Terms are ANDed. in/cont with several values are ORed.
//   - A path descends through arrays: at every step an array is replaced by
//     its elements (one level, like PostgreSQL's lax jsonpath mode), and a
//     leaf that is an array is compared element by element (two levels). A
//     term matches if any reached value matches.
//   - Values are compared by the JSON type found in the document: strings by
//     bytes, numbers exactly as decimals, booleans against "true"/"false".
//     gt/gte/lt/lte compare numbers numerically and strings byte-wise. cont
//     is a substring test on strings.
//   - Date-time attributes (KindDateTime: OpenAPI format date-time) compare
//     as instants at microsecond precision, whatever their fractional
//     digits or offset: filter values must be RFC 3339 date-times, cont and
//     ncont do not apply, and document strings that are not date-times
//     match no positive operator. Match knows an attribute's kind only
//     after Validate.
//   - neq, nin and ncont are the exact negations of eq, in and cont, so they
//     match when the attribute is missing.
//
// Every error returned by ParseFilter, Validate and ParseSelector is the
// client's fault and is meant to become an HTTP 400 ProblemDetails whose
// detail is err.Error().
package sol013
