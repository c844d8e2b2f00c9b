package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// RequestValidator checks incoming requests against the OpenAPI document:
// path parameters, query parameter types, header values (e.g. a malformed
// Version) and JSON bodies, whose members must all be described (members.go).
// It is deliberately lenient where real clients are sloppy about media
// types (see Validate).
type RequestValidator struct {
	router routers.Router
	opts   *openapi3filter.Options
	// routes caches, by method and the caller's route pattern, the
	// document's route and its path parameter names (ValidateRouted).
	routes sync.Map // routeKey → *knownRoute
}

type routeKey struct{ method, pattern string }

// knownRoute is a route of the document and the names of its path
// parameters in the order they appear in its path.
type knownRoute struct {
	route *routers.Route
	names []string
}

// RequestError means the request does not match the API description; map it
// to 400 Bad Request. Detail is meant for ProblemDetails.detail: it names the
// JSON pointer of each offending field and what was expected, e.g.
//
//	request body: /numberOfSteps: must be an integer ≥ 1, got "1"
//
// At most a few issues are listed; the rest are counted.
type RequestError struct {
	Detail string
	// Issues holds each problem found, in the same words as Detail.
	Issues []string
}

func (e *RequestError) Error() string { return e.Detail }

// RouteError means no operation of the API matches the request. Status is
// 404 (unknown path) or 405 (known path, method not offered; Allow lists
// the methods that are offered, for the Allow header).
type RouteError struct {
	Status int
	Method string
	Path   string
	Allow  []string
}

func (e *RouteError) Error() string {
	if e.Status == http.StatusMethodNotAllowed {
		return fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", e.Method, e.Path, strings.Join(e.Allow, ", "))
	}
	return fmt.Sprintf("no resource %s in this API", e.Path)
}

// NewRequestValidator prepares a validator for doc, normally the result of
// Load. The document's servers are relative, so requests match on any host
// and port: only the path prefixes /vnflcm/v1 (and /vnflcm for
// api_versions) count.
func NewRequestValidator(doc *openapi3.T) (*RequestValidator, error) {
	if doc == nil {
		return nil, errors.New("openapi: NewRequestValidator: nil document")
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: build router: %w", err)
	}
	return &RequestValidator{
		router: router,
		opts: &openapi3filter.Options{
			MultiError: true,
			// Defaults would be written back into the body and the query;
			// the handler must see the request as the client sent it.
			SkipSettingDefaults: true,
			// Authentication is the server middleware's job; the security
			// section only documents the schemes.
			AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
			SchemaValidationOptions: SchemaOptions(),
		},
	}, nil
}

// SchemaOptions returns the schema validation options Validate uses, for
// callers (response checks in tests) that validate against the same
// document: the "uri" format is enforced (an absolute URI, e.g. callbackUri,
// Link.href, Location), and errors carry no schema or value dumps.
func SchemaOptions() []openapi3.SchemaValidationOption {
	return []openapi3.SchemaValidationOption{
		openapi3.DisableSchemaErrorDetails(),
		openapi3.WithStringFormatValidator("uri", openapi3.NewCallbackValidator(checkAbsoluteURI)),
	}
}

func checkAbsoluteURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URI")
	}
	if !u.IsAbs() {
		return errors.New("not an absolute URI")
	}
	return nil
}

// Validate checks r against the operation it addresses. It returns nil,
// a *RouteError (no such path or method), a *RequestError (the request
// does not match), or another error if the body cannot be read (for
// example an *http.MaxBytesError from an http.MaxBytesReader, which the
// caller should map to 413).
//
// Validate does its own routing, so it can run before or after the server's
// router; a server that routes first only ever sees *RouteError for paths
// its router knows but this document does not. Duplicate and trailing
// slashes in the path are ignored.
//
// The body stays readable: r.Body is replaced by a reader over the same
// bytes. Media types are not enforced: a non-empty body is read as JSON
// whatever its Content-Type (curl sends form-urlencoded by default), a
// stray Content-Type without a body is ignored, and Accept is not checked.
func (v *RequestValidator) Validate(ctx context.Context, r *http.Request) error {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		data, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return fmt.Errorf("read request body: %w", err)
		}
		body = data
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		r.ContentLength = int64(len(data))
	}
	if len(bytes.TrimSpace(body)) > 0 {
		// Report broken JSON in our own words, with the byte offset.
		// Decoded, not only json.Valid: a number out of float64's range
		// ({"a":1e999999}) is valid JSON that no handler can decode.
		var probe any
		if err := json.Unmarshal(body, &probe); err != nil {
			return newRequestError([]string{"request body: " + describeJSONError(err)})
		}
	}
	return v.ValidateBody(ctx, r, body)
}

// ValidateBody is Validate for a caller that has read the body already and
// decoded it (the API's readJSON answers broken JSON, with line and column,
// before this runs): r.Body is not read, body is checked instead (nil: none).
func (v *RequestValidator) ValidateBody(ctx context.Context, r *http.Request, body []byte) error {
	return v.ValidateRouted(ctx, r, body, "", nil)
}

// ValidateRouted is ValidateBody for a caller whose router has matched the
// request already: pattern names that route (e.g. chi's
// "/vnflcm/v1/vnf_instances/{id}") and values holds its path parameters in
// order. The document's router (a regular expression per path, tried in
// turn) then runs once per method and pattern: later requests reuse the
// route it found and name values by the document's parameter names, in the
// same order. A pattern of "" always routes; so does a value holding '%'
// (the two routers may differ in unescaping it).
func (v *RequestValidator) ValidateRouted(ctx context.Context, r *http.Request, body []byte, pattern string, values []string) error {
	// A shallow copy: the checks only read the request; what is changed
	// for them (URL, body, a Content-Type header) is the copy's own.
	vreq := r.WithContext(ctx)
	u := *r.URL
	u.Path = cleanPath(r.URL.Path)
	u.RawPath = ""
	vreq.URL = &u

	var route *routers.Route
	var params map[string]string
	key := routeKey{r.Method, pattern}
	if k, ok := v.routes.Load(key); ok && pattern != "" && !anyEscaped(values) {
		kr := k.(*knownRoute)
		route, params = kr.route, make(map[string]string, len(values))
		for i, n := range kr.names {
			params[n] = values[i]
		}
	} else {
		var err error
		if route, params, err = v.router.FindRoute(vreq); err != nil {
			return v.routeError(vreq, err)
		}
		route = withoutSecurity(route)
		if pattern != "" && !anyEscaped(values) {
			if names := pathParams(route.Path); sameParams(names, values, params) {
				v.routes.Store(key, &knownRoute{route: route, names: names})
			}
		}
	}

	hasBody := len(bytes.TrimSpace(body)) > 0
	vreq.Body = http.NoBody
	vreq.ContentLength = 0
	if hasBody {
		vreq.Body = io.NopCloser(bytes.NewReader(body))
		vreq.ContentLength = int64(len(body))
	}
	vreq.GetBody = nil

	if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil && hasBody {
		if rb.Value.Content.Get(vreq.Header.Get("Content-Type")) == nil {
			vreq.Header = vreq.Header.Clone()
			vreq.Header.Set("Content-Type", preferredMediaType(rb.Value.Content))
		}
	}

	input := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: params,
		Route:      route,
		Options:    v.opts,
	}
	if err := openapi3filter.ValidateRequest(ctx, input); err != nil {
		return newRequestError(explain(err))
	}
	if rb := route.Operation.RequestBody; rb != nil && rb.Value != nil && hasBody {
		if mt := rb.Value.Content.Get(vreq.Header.Get("Content-Type")); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
			var doc any
			if err := json.Unmarshal(body, &doc); err == nil {
				if found := unknownMembers(mt.Schema.Value, doc, nil, nil); len(found) > 0 {
					issues := make([]string, len(found))
					for i, is := range found {
						issues[i] = "request body: " + is.String()
					}
					return newRequestError(issues)
				}
			}
		}
	}
	return nil
}

// withoutSecurity is route (a copy FindRoute made) with an operation that
// requires no security: authentication is the server middleware's, and
// with openapi3filter.NoopAuthenticationFunc the check can only pass, yet
// kin-openapi reads and copies the body for it on every request.
func withoutSecurity(route *routers.Route) *routers.Route {
	op := *route.Operation
	op.Security = &openapi3.SecurityRequirements{}
	route.Operation = &op
	return route
}

// pathParams lists the names of a path template's parameters in order.
func pathParams(path string) []string {
	var names []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return names
		}
		names = append(names, path[i+1:i+j])
		path = path[i+j+1:]
	}
}

// sameParams reports whether the router's params are exactly names
// holding values, in order: only then may a pattern stand for the route.
func sameParams(names, values []string, params map[string]string) bool {
	if len(names) != len(values) || len(params) != len(names) {
		return false
	}
	for i, n := range names {
		if p, ok := params[n]; !ok || p != values[i] {
			return false
		}
	}
	return true
}

func anyEscaped(values []string) bool {
	for _, s := range values {
		if strings.IndexByte(s, '%') >= 0 {
			return true
		}
	}
	return false
}

func (v *RequestValidator) routeError(req *http.Request, err error) error {
	re := &RouteError{Status: http.StatusNotFound, Method: req.Method, Path: req.URL.Path}
	if !errors.Is(err, routers.ErrMethodNotAllowed) {
		return re
	}
	re.Status = http.StatusMethodNotAllowed
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, _, err := v.router.FindRoute(probe); err == nil {
			re.Allow = append(re.Allow, m)
		}
	}
	return re
}

// cleanPath collapses repeated slashes (the NFV-TST 010 robot suite sends
// //vnflcm/v1/...) and drops a trailing slash.
func cleanPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	if p == "" {
		p = "/"
	}
	return p
}

func preferredMediaType(c openapi3.Content) string {
	if c.Get("application/json") != nil {
		return "application/json"
	}
	for mt := range c {
		if strings.HasSuffix(mt, "json") {
			return mt
		}
	}
	for mt := range c {
		return mt
	}
	return "application/json"
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("not valid JSON: %s", te.Error())
	case err.Error() == "unexpected end of JSON input":
		return "not valid JSON: the document ends too early"
	}
	return "not valid JSON: " + err.Error()
}
