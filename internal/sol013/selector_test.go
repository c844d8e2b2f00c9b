package sol013

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	root := testRoot(t)
	tests := []struct {
		query string
		want  Selector
	}{
		{"", Selector{}},
		{"filter=(eq,id,1)&nextpage_opaque_marker=x", Selector{}},
		{"all_fields", Selector{AllFields: true}},
		{"all_fields=", Selector{AllFields: true}},
		{"all_fields=true", Selector{AllFields: true}},
		{"exclude_default", Selector{ExcludeDefault: true}},
		{"fields=metadata,instantiatedVnfInfo/vnfcResourceInfo", Selector{Fields: [][]string{{"metadata"}, {"instantiatedVnfInfo", "vnfcResourceInfo"}}}},
		{"fields=metadata&fields=extensions", Selector{Fields: [][]string{{"metadata"}, {"extensions"}}}},
		// The Tacker CLI sends exclude_default together with fields.
		{"exclude_default&fields=metadata", Selector{ExcludeDefault: true, Fields: [][]string{{"metadata"}}}},
		{"exclude_fields=metadata,vimConnectionInfo/accessInfo", Selector{ExcludeFields: [][]string{{"metadata"}, {"vimConnectionInfo", "accessInfo"}}}},
		{"exclude-fields=metadata", Selector{ExcludeFields: [][]string{{"metadata"}}}},
		{"exclude_fields=metadata&exclude-fields=extensions", Selector{ExcludeFields: [][]string{{"metadata"}, {"extensions"}}}},
		{"fields=metadata/anything/below", Selector{Fields: [][]string{{"metadata", "anything", "below"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSelector(q, root)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestParseSelectorErrors(t *testing.T) {
	root := testRoot(t)
	tests := []struct{ query, param, msg string }{
		{"all_fields&fields=metadata", "all_fields", "all_fields cannot be combined with fields, exclude_fields or exclude_default"},
		{"all_fields&exclude_default", "all_fields", "all_fields cannot be combined"},
		{"all_fields&exclude_fields=metadata", "all_fields", "all_fields cannot be combined"},
		{"all_fields&exclude-fields=metadata", "all_fields", "all_fields cannot be combined"},
		{"fields=metadata&exclude_fields=extensions", "fields", "fields and exclude_fields cannot be used together"},
		{"fields=metadata&exclude-fields=extensions", "fields", "fields and exclude_fields cannot be used together"},
		{"exclude_fields=metadata&exclude_default", "exclude_fields", "exclude_fields and exclude_default cannot be used together"},
		{"all_fields=false", "all_fields", `all_fields is a flag and takes no value, got "false"; write ?all_fields alone`},
		{"exclude_default=1", "exclude_default", "exclude_default is a flag"},
		{"fields=", "fields", "fields is empty; give a comma-separated list of attributes such as fields=a,b/c"},
		{"exclude-fields=", "exclude_fields", "exclude_fields is empty"},
		{"fields=metadata,", "fields", `fields contains an empty attribute name in "metadata,"`},
		{"fields=a//b", "fields", "empty attribute name"},
		{"fields=metdata", "fields", `fields: unknown attribute "metdata"; valid top-level attributes are _links,`},
		{"exclude_fields=instantiatedVnfInfo/nope", "exclude_fields", `exclude_fields: unknown attribute "instantiatedVnfInfo/nope"; valid attributes of "instantiatedVnfInfo" are`},
		{"fields=" + strings.Repeat("metadata,", MaxSelectorPaths) + "metadata", "fields", "more than 100 attributes"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseSelector(q, root)
			var se *SelectorError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want *SelectorError", err, err)
			}
			if se.Param != tt.param {
				t.Errorf("param %q, want %q", se.Param, tt.param)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

const selectorDoc = `{
  "id": "i1",
  "vnfInstanceName": "n",
  "vimConnectionInfo": [{"id": "v1", "vimType": "OPENSTACK", "accessInfo": {"region": "R1"}}, {"id": "v2", "vimType": "K8S"}],
  "instantiatedVnfInfo": {
    "flavourId": "simple",
    "vnfcResourceInfo": [{"id": "c1", "vduId": "VDU1", "computeResource": {"resourceId": "r1", "vimLevelResourceType": "OS::Nova::Server"}}],
    "scaleStatus": [{"aspectId": "a", "scaleLevel": 1}]
  },
  "metadata": {"owner": "me", "deep": {"x": 1, "y": 2}},
  "extensions": {"e": 1},
  "_links": {"self": {"href": "/vnflcm/v1/vnf_instances/i1"}}
}`

var defaultExcluded = [][]string{{"vimConnectionInfo"}, {"instantiatedVnfInfo"}, {"metadata"}, {"extensions"}, {"id"}, {"_links"}}

func TestSelectorApply(t *testing.T) {
	root := testRoot(t)
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"no selector is exclude_default", "", `{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}}}`},
		{"exclude_default", "exclude_default", `{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}}}`},
		{"all_fields", "all_fields", selectorDoc},
		{"fields adds complex attributes", "fields=metadata,extensions",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},"metadata":{"owner":"me","deep":{"x":1,"y":2}},"extensions":{"e":1}}`},
		{"fields with exclude_default", "exclude_default&fields=extensions",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},"extensions":{"e":1}}`},
		{"fields nested keeps one branch", "fields=instantiatedVnfInfo/vnfcResourceInfo",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},
			  "instantiatedVnfInfo":{"vnfcResourceInfo":[{"id":"c1","vduId":"VDU1","computeResource":{"resourceId":"r1","vimLevelResourceType":"OS::Nova::Server"}}]}}`},
		{"fields nested through arrays", "fields=instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,instantiatedVnfInfo/flavourId,vimConnectionInfo/vimType",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},
			  "instantiatedVnfInfo":{"flavourId":"simple","vnfcResourceInfo":[{"computeResource":{"resourceId":"r1"}}]},
			  "vimConnectionInfo":[{"vimType":"OPENSTACK"},{"vimType":"K8S"}]}`},
		{"fields parent and child", "fields=metadata,metadata/owner",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},"metadata":{"owner":"me","deep":{"x":1,"y":2}}}`},
		{"fields free-form branch", "fields=metadata/deep/x",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},"metadata":{"deep":{"x":1}}}`},
		{"fields missing branch", "fields=instantiatedVnfInfo/vnfState",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}},"instantiatedVnfInfo":{}}`},
		{"fields on a simple attribute changes nothing", "fields=vnfInstanceName",
			`{"id":"i1","vnfInstanceName":"n","_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}}}`},
		{"exclude_fields", "exclude_fields=metadata,instantiatedVnfInfo",
			`{"id":"i1","vnfInstanceName":"n","vimConnectionInfo":[{"id":"v1","vimType":"OPENSTACK","accessInfo":{"region":"R1"}},{"id":"v2","vimType":"K8S"}],"extensions":{"e":1},"_links":{"self":{"href":"/vnflcm/v1/vnf_instances/i1"}}}`},
		{"exclude-fields nested through arrays", "exclude-fields=vimConnectionInfo/accessInfo,instantiatedVnfInfo/vnfcResourceInfo/computeResource,metadata/deep/y,_links,extensions",
			`{"id":"i1","vnfInstanceName":"n","vimConnectionInfo":[{"id":"v1","vimType":"OPENSTACK"},{"id":"v2","vimType":"K8S"}],
			  "instantiatedVnfInfo":{"flavourId":"simple","vnfcResourceInfo":[{"id":"c1","vduId":"VDU1"}],"scaleStatus":[{"aspectId":"a","scaleLevel":1}]},
			  "metadata":{"owner":"me","deep":{"x":1}}}`},
		{"exclude_fields of missing attributes", "exclude_fields=instantiatedVnfInfo/vnfState,extensions/nope/deeper",
			selectorDoc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			sel, err := ParseSelector(q, root)
			if err != nil {
				t.Fatal(err)
			}
			doc := decodeDoc(t, selectorDoc, true)
			sel.Apply(doc, defaultExcluded)
			want := decodeDoc(t, tt.want, true)
			if !reflect.DeepEqual(doc, want) {
				got, _ := json.Marshal(doc)
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// What Drops names is gone from the result, so a document
			// read without it selects the same.
			lean := decodeDoc(t, selectorDoc, true)
			for k := range lean {
				if sel.Drops(k, defaultExcluded) {
					if _, ok := want[k]; ok {
						t.Errorf("Drops(%s), but the selection shows it", k)
					}
					delete(lean, k)
				}
			}
			sel.Apply(lean, defaultExcluded)
			if !reflect.DeepEqual(lean, want) {
				got, _ := json.Marshal(lean)
				t.Errorf("without the dropped attributes: got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSelectorApplyNil(t *testing.T) {
	var sel *Selector
	doc := decodeDoc(t, selectorDoc, true)
	sel.Apply(doc, [][]string{{"metadata"}, {"instantiatedVnfInfo", "vnfcResourceInfo"}})
	if _, ok := doc["metadata"]; ok {
		t.Error("nil selector kept a default-excluded attribute")
	}
	ivi := doc["instantiatedVnfInfo"].(map[string]any)
	if _, ok := ivi["vnfcResourceInfo"]; ok {
		t.Error("nested default-excluded attribute kept")
	}
	if ivi["flavourId"] != "simple" {
		t.Error("sibling of a nested default-excluded attribute removed")
	}
}
