package openapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mini-vnfm/mini-vnfm/openapi"
)

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi.Load(context.Background())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return doc
}

func TestSpecLoadsAndValidates(t *testing.T) {
	doc := loadDoc(t)
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" || doc.Info.Version != "1.3.0" {
		t.Errorf("openapi %q, info.version %q; want 3.0.3 and 1.3.0", doc.OpenAPI, doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/vnflcm/v1" {
		t.Errorf("servers = %v, want the single relative /vnflcm/v1", doc.Servers)
	}
	again, err := openapi.Load(context.Background())
	if err != nil || again != doc {
		t.Errorf("Load is not cached: %p vs %p (%v)", again, doc, err)
	}
	if raw := openapi.Spec(); !strings.HasPrefix(string(raw), "openapi: 3.0.3") {
		t.Errorf("Spec() does not start with the openapi version line")
	}
}

// TestSpecPaths pins the resource tree and the status codes the server must
// use, so a change to either is deliberate.
func TestSpecPaths(t *testing.T) {
	doc := loadDoc(t)
	want := map[string]map[string]string{
		"/api_versions":                                  {"GET": "200"},
		"/vnf_instances":                                 {"POST": "201", "GET": "200"},
		"/vnf_instances/{vnfInstanceId}":                 {"GET": "200", "PATCH": "202", "DELETE": "204"},
		"/vnf_instances/{vnfInstanceId}/instantiate":     {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/terminate":       {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/scale":           {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/scale_to_level":  {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/change_flavour":  {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/heal":            {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/operate":         {"POST": "202"},
		"/vnf_instances/{vnfInstanceId}/change_ext_conn": {"POST": "202"},
		"/vnf_lcm_op_occs":                               {"GET": "200"},
		"/vnf_lcm_op_occs/{vnfLcmOpOccId}":               {"GET": "200"},
		"/vnf_lcm_op_occs/{vnfLcmOpOccId}/retry":         {"POST": "202"},
		"/vnf_lcm_op_occs/{vnfLcmOpOccId}/rollback":      {"POST": "202"},
		"/vnf_lcm_op_occs/{vnfLcmOpOccId}/fail":          {"POST": "200"},
		"/vnf_lcm_op_occs/{vnfLcmOpOccId}/cancel":        {"POST": "202"},
		"/subscriptions":                                 {"POST": "201", "GET": "200"},
		"/subscriptions/{subscriptionId}":                {"GET": "200", "DELETE": "204"},
	}
	if got := doc.Paths.Len(); got != len(want) {
		t.Errorf("%d paths, want %d", got, len(want))
	}
	for path, ops := range want {
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("missing path %s", path)
			continue
		}
		if len(item.Operations()) != len(ops) {
			t.Errorf("%s has methods %v, want %v", path, keys(item.Operations()), ops)
		}
		for method, status := range ops {
			op := item.GetOperation(method)
			if op == nil {
				t.Errorf("missing %s %s", method, path)
				continue
			}
			if op.Responses.Value(status) == nil {
				t.Errorf("%s %s does not document %s", method, path, status)
			}
		}
	}
	sub := doc.Paths.Value("/subscriptions").Post.Responses.Value("303")
	if sub == nil || sub.Value.Headers["Location"] == nil {
		t.Errorf("POST /subscriptions must document 303 with Location")
	}
	if servers := doc.Paths.Value("/api_versions").Servers; len(servers) != 2 || servers[1].URL != "/vnflcm" {
		t.Errorf("/api_versions must also be documented under the unversioned /vnflcm, got servers %v", servers)
	}
}

// TestSpecConventions checks the rules every operation must follow: an
// operationId, optional request headers, Version on every response, and
// ProblemDetails as application/problem+json on every error.
func TestSpecConventions(t *testing.T) {
	doc := loadDoc(t)
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			}
			ids[op.OperationID] = true
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value.In == openapi3.ParameterInHeader && p.Value.Required {
					t.Errorf("%s: header %s must be optional (real clients omit it)", where, p.Value.Name)
				}
			}
			if (method == "POST" || method == "PATCH") && op.Responses.Value("415") == nil {
				t.Errorf("%s: must document 415 (body of a non-JSON media type)", where)
			}
			for status, resp := range op.Responses.Map() {
				r := resp.Value
				if r.Headers["Version"] == nil || !r.Headers["Version"].Value.Required {
					t.Errorf("%s %s: response must document a required Version header", where, status)
				}
				if status[0] != '4' && status[0] != '5' {
					continue
				}
				mt := r.Content.Get("application/problem+json")
				if len(r.Content) != 1 || mt == nil || mt.Schema.Ref != "#/components/schemas/ProblemDetails" {
					t.Errorf("%s %s: error responses must be application/problem+json ProblemDetails only", where, status)
				}
			}
			for _, cb := range op.Callbacks {
				for _, cbItem := range cb.Value.Map() {
					for m, cbOp := range cbItem.Operations() {
						if cbOp.OperationID == "" {
							t.Errorf("%s: callback %s has no operationId", where, m)
						}
					}
				}
			}
		}
	}
	// The tasks mini-VNFM does not support stay documented (SOL003 has them).
	for _, id := range []string{"scaleVnfToLevel", "changeVnfFlavour", "operateVnf"} {
		if !ids[id] {
			t.Errorf("operation %s is missing", id)
		}
	}

	pd := doc.Components.Schemas["ProblemDetails"].Value
	if strings.Join(pd.Required, ",") != "status,detail" {
		t.Errorf("ProblemDetails.required = %v, want [status detail]", pd.Required)
	}
	if ap := pd.AdditionalProperties; ap.Has != nil && !*ap.Has {
		t.Errorf("ProblemDetails must allow extra members")
	}
	occ := doc.Components.Schemas["VnfLcmOpOcc"].Value
	if occ.Properties["progress"] == nil {
		t.Errorf("VnfLcmOpOcc lacks the progress extension")
	}
	steps := doc.Components.Schemas["ProgressState"].Value.Enum
	if len(steps) != 6 {
		t.Errorf("ProgressState enum = %v", steps)
	}
	if doc.Components.Schemas["VnfInstance"].Value.Properties["vnfPkgId"] == nil {
		t.Errorf("VnfInstance lacks the optional vnfPkgId")
	}
	if !doc.Components.Schemas["SubscriptionAuthentication"].Value.WriteOnly {
		t.Errorf("SubscriptionAuthentication must be writeOnly")
	}
	for _, n := range []string{"VnfLcmOperationOccurrenceNotification", "VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification", "ApiVersionInformation", "CancelMode"} {
		if doc.Components.Schemas[n] == nil {
			t.Errorf("missing component schema %s", n)
		}
	}
	patch := doc.Paths.Value("/vnf_instances/{vnfInstanceId}").Patch.RequestBody.Value.Content
	if patch.Get("application/merge-patch+json") == nil || patch.Get("application/json") == nil {
		t.Errorf("PATCH must accept application/merge-patch+json and application/json")
	}
	if !strings.Contains(doc.Info.Description, `"******"`) {
		t.Errorf("info.description must document secret masking")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
