package sol013

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// testSchemaJSON is a VnfInstance-like schema with one attribute of every
// shape the filter code has to handle. It is shared by the Match, SQL and
// selector tests.
const testSchemaJSON = `{
  "type": "object",
  "properties": {
    "id": {"type": "string"},
    "vnfInstanceName": {"type": "string"},
    "vnfdVersion": {"type": "string"},
    "instantiationState": {"type": "string", "enum": ["NOT_INSTANTIATED", "INSTANTIATED"]},
    "size": {"type": "integer"},
    "ratio": {"type": "number"},
    "enabled": {"type": "boolean"},
    "createdAt": {"type": "string", "format": "date-time"},
    "updatedAt": {"type": "array", "items": {"type": "string", "format": "date-time"}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "scores": {"type": "array", "items": {"type": "number"}},
    "vimConnectionInfo": {"type": "array", "items": {"type": "object", "properties": {
      "id": {"type": "string"},
      "vimType": {"type": "string"},
      "accessInfo": {"type": "object", "additionalProperties": true}
    }}},
    "instantiatedVnfInfo": {"type": "object", "properties": {
      "flavourId": {"type": "string"},
      "vnfState": {"type": "string"},
      "scaleStatus": {"type": "array", "items": {"type": "object", "properties": {
        "aspectId": {"type": "string"},
        "scaleLevel": {"type": "integer"}
      }}},
      "vnfcResourceInfo": {"type": "array", "items": {"allOf": [
        {"type": "object", "properties": {"id": {"type": "string"}, "vduId": {"type": "string"}}},
        {"properties": {"computeResource": {"type": "object", "properties": {"resourceId": {"type": "string"}}}}}
      ]}}
    }},
    "metadata": {"type": "object", "additionalProperties": true},
    "extensions": {"type": "object"},
    "_links": {"type": "object", "properties": {"self": {"type": "object", "properties": {"href": {"type": "string"}}}}}
  }
}`

func testRoot(t testing.TB) *Field {
	t.Helper()
	var s openapi3.Schema
	if err := json.Unmarshal([]byte(testSchemaJSON), &s); err != nil {
		t.Fatal(err)
	}
	return FieldsFromOpenAPI(&s)
}

func TestFieldsFromOpenAPI(t *testing.T) {
	root := testRoot(t)
	tests := []struct {
		path     string
		kind     Kind
		freeForm bool
	}{
		{"id", KindString, false},
		{"size", KindNumber, false},
		{"ratio", KindNumber, false},
		{"enabled", KindBoolean, false},
		{"tags", KindArray, false},
		{"vimConnectionInfo", KindArray, false},
		{"vimConnectionInfo/vimType", KindString, false},       // through the array
		{"vimConnectionInfo/accessInfo", KindObject, true},     // additionalProperties
		{"vimConnectionInfo/accessInfo/region", KindAny, true}, // free-form member
		{"instantiatedVnfInfo", KindObject, false},
		{"instantiatedVnfInfo/scaleStatus/scaleLevel", KindNumber, false},
		{"instantiatedVnfInfo/vnfcResourceInfo/vduId", KindString, false},                      // allOf branch 1
		{"instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId", KindString, false}, // allOf branch 2
		{"metadata", KindObject, true},
		{"metadata/any/depth/at/all", KindAny, true},
		{"extensions", KindObject, true}, // object without properties
		{"extensions/x", KindAny, true},
		{"_links/self/href", KindString, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f, err := root.Lookup(strings.Split(tt.path, "/"))
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.kind || f.FreeForm != tt.freeForm {
				t.Errorf("got kind %v freeForm %v, want %v %v", f.Kind, f.FreeForm, tt.kind, tt.freeForm)
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	root := testRoot(t)
	tests := []struct{ path, msg string }{
		{"vnfInstanceNam", `unknown attribute "vnfInstanceNam"; valid top-level attributes are _links, createdAt, enabled, extensions, id, instantiatedVnfInfo, instantiationState, metadata, ratio, scores, size, tags, updatedAt, vimConnectionInfo, vnfInstanceName, vnfdVersion`},
		{"instantiatedVnfInfo/vnfstate", `unknown attribute "instantiatedVnfInfo/vnfstate"; valid attributes of "instantiatedVnfInfo" are flavourId, scaleStatus, vnfState, vnfcResourceInfo`},
		{"vimConnectionInfo/vimtype", `valid attributes of "vimConnectionInfo" are accessInfo, id, vimType`},
		{"id/x", `attribute "id" is a string and has no attribute "x"`},
		{"tags/x", `attribute "tags" is a string and has no attribute "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			_, err := root.Lookup(strings.Split(tt.path, "/"))
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestFieldsFromOpenAPIRecursiveAndNullable(t *testing.T) {
	// A recursive schema (node.children[] is node) must not loop.
	node := &openapi3.Schema{Type: &openapi3.Types{"object"}, Properties: openapi3.Schemas{
		"name": {Value: &openapi3.Schema{Type: &openapi3.Types{"string", "null"}}},
	}}
	node.Properties["children"] = &openapi3.SchemaRef{Value: &openapi3.Schema{
		Type: &openapi3.Types{"array"}, Items: &openapi3.SchemaRef{Value: node}}}
	root := FieldsFromOpenAPI(node)
	f, err := root.Lookup([]string{"children", "children", "children", "name"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindString {
		t.Errorf("kind %v, want string (nullable type)", f.Kind)
	}
	if _, err := root.Lookup([]string{"children", "nope"}); err == nil {
		t.Error("unknown attribute under a recursive node accepted")
	}
	if FieldsFromOpenAPI(nil).Kind != KindAny {
		t.Error("nil schema is not KindAny")
	}
	// oneOf branches of different kinds give KindAny.
	mixed := &openapi3.Schema{OneOf: openapi3.SchemaRefs{
		{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}}},
		{Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}}},
	}}
	if k := FieldsFromOpenAPI(mixed).Kind; k != KindAny {
		t.Errorf("mixed oneOf kind %v, want any", k)
	}
}
