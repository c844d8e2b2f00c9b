package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/mini-vnfm/mini-vnfm/openapi"
)

// APIVersion is the value every /vnflcm response must carry in Version.
const APIVersion = "1.3.0"

// Checker validates responses of the /vnflcm API. It is safe for concurrent
// use by parallel tests.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
	tst    *tstSchemas
}

// NewChecker loads our OpenAPI document and the NFV-TST 010 v2.6.1 JSON
// Schemas (see SharedDir). It fails t if either cannot be loaded.
func NewChecker(t testing.TB) *Checker {
	t.Helper()
	c, err := newChecker()
	if err != nil {
		t.Fatalf("apitest: %v", err)
		return nil
	}
	return c
}

func newChecker() (*Checker, error) {
	doc, err := openapi.Load(context.Background())
	if err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build OpenAPI router: %w", err)
	}
	dir, err := findTSTDir()
	if err != nil {
		return nil, err
	}
	tst, err := loadTSTSchemas(dir)
	if err != nil {
		return nil, err
	}
	return &Checker{doc: doc, router: router, tst: tst}, nil
}

// tstSchemaByRoute maps "METHOD path-template status" to the NFV-TST 010
// schema the robot suite applies to that response.
var tstSchemaByRoute = map[string]string{
	"GET /api_versions 200":                          "ApiVersionInformation",
	"POST /vnf_instances 201":                        "vnfInstance",
	"GET /vnf_instances 200":                         "vnfInstances",
	"GET /vnf_instances/{vnfInstanceId} 200":         "vnfInstance",
	"GET /vnf_lcm_op_occs 200":                       "VnfLcmOpOccs",
	"GET /vnf_lcm_op_occs/{vnfLcmOpOccId} 200":       "VnfLcmOpOcc",
	"POST /vnf_lcm_op_occs/{vnfLcmOpOccId}/fail 200": "VnfLcmOpOcc",
	"POST /subscriptions 201":                        "LccnSubscription",
	"GET /subscriptions 200":                         "subscriptions",
	"GET /subscriptions/{subscriptionId} 200":        "LccnSubscription",
}

// Check validates a response to req: status, headers (Version: 1.3.0,
// application/problem+json for 4xx/5xx, Location where documented) and body,
// against our OpenAPI document and, where the robot suite applies one, the
// NFV-TST 010 schema. body is the full response body (resp.Body is not
// read). Problems are reported with t.Errorf, all at once.
func (c *Checker) Check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if problems := c.check(req, resp, body); len(problems) > 0 {
		t.Errorf("%s %s -> %d does not conform:\n  - %s", req.Method, req.URL.RequestURI(), resp.StatusCode, strings.Join(problems, "\n  - "))
	}
}

func (c *Checker) check(req *http.Request, resp *http.Response, body []byte) []string {
	var problems []string
	status := resp.StatusCode

	switch v := resp.Header.Values("Version"); {
	case len(v) == 0:
		problems = append(problems, fmt.Sprintf("header Version is missing (every response carries Version: %s)", APIVersion))
	case len(v) > 1 || v[0] != APIVersion:
		problems = append(problems, fmt.Sprintf("header Version is %q, want %q", strings.Join(v, ", "), APIVersion))
	}
	if status >= 400 {
		problems = append(problems, checkProblemDetails(resp, body)...)
	}
	if status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
		problems = append(problems, "a 405 response must carry an Allow header listing the methods offered (RFC 9110 15.5.6)")
	}
	if (status == http.StatusAccepted || status == http.StatusNoContent || status == http.StatusSeeOther) && len(bytes.TrimSpace(body)) > 0 {
		problems = append(problems, fmt.Sprintf("the body of a %d response must be empty, got %d bytes", status, len(body)))
	}

	vreq := req.Clone(context.Background())
	u := *req.URL
	u.Path, u.RawPath = cleanPath(req.URL.Path), ""
	vreq.URL = &u
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		// Unknown paths and methods are fine as long as they are answered
		// with 404/405 and a ProblemDetails (checked above).
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			problems = append(problems, fmt.Sprintf("the OpenAPI document has no operation %s %s (%v), so the answer should be 404 or 405", req.Method, u.Path, err))
		}
		if status >= 400 {
			problems = append(problems, c.tst.validate("ProblemDetails", body)...)
		}
		return problems
	}

	if route.Operation.Responses.Status(status) == nil && route.Operation.Responses.Default() == nil {
		problems = append(problems, fmt.Sprintf("status %d is not documented for operation %s", status, route.Operation.OperationID))
	} else {
		input := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{
				Request:    vreq,
				PathParams: params,
				Route:      route,
			},
			Status: status,
			Header: resp.Header,
			Body:   io.NopCloser(bytes.NewReader(body)),
			Options: &openapi3filter.Options{
				IncludeResponseStatus:   true,
				MultiError:              true,
				SchemaValidationOptions: openapi.SchemaOptions(),
			},
		}
		if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
			for _, p := range openapi.Explain(err) {
				problems = append(problems, "OpenAPI "+route.Operation.OperationID+": "+p)
			}
		}
	}

	name := tstSchemaByRoute[fmt.Sprintf("%s %s %d", route.Method, route.Path, status)]
	if status >= 400 {
		name = "ProblemDetails"
	}
	if name == "VnfLcmOpOccs" && !operationParamsSelected(req) {
		name = opOccsDefaultSelector
	}
	if name != "" {
		problems = append(problems, c.tst.validate(name, body)...)
	}
	return problems
}

// operationParamsSelected reports whether the attribute selectors of a list
// request ask for operationParams (see opOccsDefaultSelector).
func operationParamsSelected(req *http.Request) bool {
	q := req.URL.Query()
	if q.Has("all_fields") {
		return true
	}
	if q.Has("fields") && listHas(q.Get("fields"), "operationParams") {
		return true
	}
	return q.Has("exclude_fields") && !listHas(q.Get("exclude_fields"), "operationParams")
}

func listHas(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

// checkProblemDetails applies the SOL013 rules to an error response: media
// type application/problem+json, a JSON object whose status equals the HTTP
// status and whose detail is a non-empty string.
func checkProblemDetails(resp *http.Response, body []byte) []string {
	var problems []string
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/problem+json" {
		problems = append(problems, fmt.Sprintf("Content-Type of an error response must be application/problem+json, got %q", ct))
	}
	var pd map[string]any
	if err := json.Unmarshal(body, &pd); err != nil || pd == nil {
		return append(problems, "the body of an error response must be a ProblemDetails JSON object")
	}
	if s, ok := pd["status"].(float64); !ok || int(s) != resp.StatusCode {
		problems = append(problems, fmt.Sprintf("ProblemDetails.status must equal the HTTP status %d, got %v", resp.StatusCode, pd["status"]))
	}
	if d, ok := pd["detail"].(string); !ok || strings.TrimSpace(d) == "" {
		problems = append(problems, "ProblemDetails.detail must be a non-empty string")
	}
	return problems
}

// notificationTST maps notification types to their NFV-TST 010 schema.
var notificationTST = map[string]string{
	"VnfLcmOperationOccurrenceNotification": "VnfLcmOperationOccurrenceNotification",
	"VnfIdentifierCreationNotification":     "VnfIdentifierCreationNotification",
	"VnfIdentifierDeletionNotification":     "vnfIdentifierDeletionNotification",
}

// ValidateNotification checks a notification body as POSTed by the VNFM to a
// subscriber: it must have notificationType == notificationType and match
// both our OpenAPI component of that name and the NFV-TST 010 schema.
func (c *Checker) ValidateNotification(t testing.TB, body []byte, notificationType string) {
	t.Helper()
	if problems := c.validateNotification(body, notificationType); len(problems) > 0 {
		t.Errorf("%s does not conform:\n  - %s", notificationType, strings.Join(problems, "\n  - "))
	}
}

func (c *Checker) validateNotification(body []byte, notificationType string) []string {
	tstName, ok := notificationTST[notificationType]
	ref := c.doc.Components.Schemas[notificationType]
	if !ok || ref == nil || ref.Value == nil {
		return []string{fmt.Sprintf("unknown notification type %q", notificationType)}
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{fmt.Sprintf("body is not JSON: %v", err)}
	}
	var problems []string
	if obj, _ := v.(map[string]any); obj == nil || obj["notificationType"] != notificationType {
		problems = append(problems, fmt.Sprintf("notificationType must be %q", notificationType))
	}
	if err := ref.Value.VisitJSON(v, append(openapi.SchemaOptions(), openapi3.MultiErrors(), openapi3.VisitAsResponse())...); err != nil {
		for _, p := range openapi.Explain(err) {
			problems = append(problems, "OpenAPI "+notificationType+": "+p)
		}
	}
	return append(problems, c.tst.validate(tstName, body)...)
}

// cleanPath mirrors the server's tolerance of //vnflcm/... (NFV-TST 010
// robot suite) and trailing slashes.
func cleanPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}
