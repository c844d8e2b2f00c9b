package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/openapi"
)

// hostile is one request of the corpus. Paths may name the fixtures
// {inst} (NOT_INSTANTIATED instance), {ready} (INSTANTIATED instance), {op}
// (its completed op occurrence), {sub} (a subscription), {pkg} (a CREATED
// package) and {vim} (a registered VIM).
type hostile struct {
	name   string
	method string
	path   string
	body   []byte // nil: no body
	hdr    []string
	want   int // exact status; 0: any 4xx
	// harmless marks odd but valid input (SQL in a filter value, random
	// filters): any answer below 500 will do, but nothing may be written.
	harmless bool
	// raw marks answers net/http gives before the handler runs (431): not
	// a ProblemDetails.
	raw bool
}

// jsonEndpoint is a request that takes a JSON body, with a valid body to
// mutate: schema names its OpenAPI schema (vnflcm), else freeForm lists
// the baseline paths whose contents are free-form (not descended into).
type jsonEndpoint struct {
	method, path string
	contentType  string
	schema       string
	base         map[string]any
	freeForm     []string
}

func (e jsonEndpoint) hdr() []string {
	if e.contentType == "" {
		return nil
	}
	return []string{"Content-Type", e.contentType}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(fmt.Sprintf("%v: %s", err, s))
	}
	return m
}

// jsonEndpoints are every request body the API takes as JSON.
func jsonEndpoints(callback string) []jsonEndpoint {
	vimInfo := `{"id":"vim1","vimType":"` + lcmtest.VimType + `","vimId":"v","interfaceInfo":{"endpoint":"http://127.0.0.1:1/v3"},"accessInfo":{"username":"u","region":"r"},"extra":{"k":"v"}}`
	extVL := `{"id":"evl1","vimConnectionId":"vim1","resourceProviderId":"rp","resourceId":"net1",
		"extCps":[{"cpdId":"cp1","cpConfig":[{"cpInstanceId":"ci","linkPortId":"lp","cpProtocolData":[{"layerProtocol":"IP_OVER_ETHERNET",
			"ipOverEthernet":{"macAddress":"fa:16:3e:00:00:01","ipAddresses":[{"type":"IPV4","fixedAddresses":["10.0.0.5"],"numDynamicAddresses":1,
				"addressRange":{"minAddress":"10.0.0.1","maxAddress":"10.0.0.9"},"subnetId":"sub1"}]}}]}]}],
		"extLinkPorts":[{"id":"lp","resourceHandle":{"vimConnectionId":"vim1","resourceProviderId":"rp","resourceId":"port1","vimLevelResourceType":"OS::Neutron::Port"}}]}`
	return []jsonEndpoint{
		{method: "POST", path: "/vnflcm/v1/vnf_instances", schema: "CreateVnfRequest",
			base: obj(`{"vnfdId":"` + lcmtest.VnfdID + `","vnfInstanceName":"n","vnfInstanceDescription":"d","metadata":{"k":"v"}}`)},
		{method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", schema: "VnfInfoModificationRequest", contentType: "application/merge-patch+json",
			base: obj(`{"vnfInstanceName":"n","vnfInstanceDescription":"d","vnfPkgId":"` + lcmtest.PackageID + `","vnfConfigurableProperties":{"a":1},"metadata":{"k":"v"},"extensions":{"e":1},"vimConnectionInfo":[` + vimInfo + `]}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_instances/{inst}/instantiate", schema: "InstantiateVnfRequest",
			base: obj(`{"flavourId":"simple","instantiationLevelId":"instantiation_level_1","extVirtualLinks":[` + extVL + `],
				"extManagedVirtualLinks":[{"id":"m1","vnfVirtualLinkDescId":"vl1","vimConnectionId":"vim1","resourceProviderId":"rp","resourceId":"net2"}],
				"vimConnectionInfo":[` + vimInfo + `],"localizationLanguage":"en","additionalParams":{"k":"v"}}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_instances/{ready}/terminate", schema: "TerminateVnfRequest",
			base: obj(`{"terminationType":"GRACEFUL","gracefulTerminationTimeout":10,"additionalParams":{"k":"v"}}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_instances/{ready}/scale", schema: "ScaleVnfRequest",
			base: obj(`{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":1,"additionalParams":{"k":"v"}}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_instances/{ready}/heal", schema: "HealVnfRequest",
			base: obj(`{"cause":"c","vnfcInstanceId":["worker-0"],"additionalParams":{"k":"v"}}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_instances/{ready}/change_ext_conn", schema: "ChangeExtVnfConnectivityRequest",
			base: obj(`{"extVirtualLinks":[` + extVL + `],"vimConnectionInfo":[` + vimInfo + `],"additionalParams":{"k":"v"}}`)},
		{method: "POST", path: "/vnflcm/v1/vnf_lcm_op_occs/{op}/cancel", schema: "CancelMode",
			base: obj(`{"cancelMode":"GRACEFUL"}`)},
		{method: "POST", path: "/vnflcm/v1/subscriptions", schema: "LccnSubscriptionRequest",
			base: obj(`{"callbackUri":"` + callback + `","filter":{"vnfInstanceSubscriptionFilter":{"vnfdIds":["` + lcmtest.VnfdID + `"],
				"vnfProductsFromProviders":[{"vnfProvider":"Company","vnfProducts":[{"vnfProductName":"Sample K8s","versions":[{"vnfSoftwareVersion":"1.0","vnfdVersions":["1.0"]}]}]}],
				"vnfInstanceIds":["00000000-0000-4000-8000-000000000001"],"vnfInstanceNames":["n"]},
				"notificationTypes":["VnfLcmOperationOccurrenceNotification"],"operationTypes":["INSTANTIATE"],"operationStates":["COMPLETED"]},
				"authentication":{"authType":["BASIC"],"paramsBasic":{"userName":"u","password":"p"}}}`)},
		{method: "POST", path: "/vnfpkgm/v1/vnf_packages", base: obj(`{"userDefinedData":{"k":"v"}}`), freeForm: []string{"userDefinedData"}},
		{method: "PATCH", path: "/vnfpkgm/v1/vnf_packages/{pkg}", contentType: "application/merge-patch+json",
			base: obj(`{"operationalState":"DISABLED","userDefinedData":{"k":"v"}}`), freeForm: []string{"userDefinedData"}},
		{method: "POST", path: "/vnfpkgm/v1/vnf_packages/{pkg}/package_content/upload_from_uri",
			base: obj(`{"addressInformation":"http://127.0.0.1:1/p.zip","userName":"u","password":"p"}`)},
		{method: "POST", path: "/v1.0/vims?verify=false",
			base: obj(`{"vim":{"name":"v2","description":"d","type":"openstack","auth_url":"http://127.0.0.1:1/v3","tenant_id":"t","shared":false,"is_default":false,
				"vim_project":{"name":"admin","project_domain_name":"Default"},"auth_cred":{"username":"u","password":"p","user_domain_name":"Default"},"extra":{"k":"v"}}}`),
			freeForm: []string{"vim.extra"}},
		{method: "PUT", path: "/v1.0/vims/{vim}?verify=false",
			base:     obj(`{"vim":{"name":"v3","description":"d","is_default":false,"vim_project":{"name":"admin"},"auth_cred":{"username":"u","password":"p"},"extra":{"k":"v"}}}`),
			freeForm: []string{"vim.extra"}},
	}
}

// pathElem is a member name, or -1 for "the first array element".
type pathElem any

func pathString(p []pathElem) string {
	var b strings.Builder
	for _, e := range p {
		switch v := e.(type) {
		case string:
			b.WriteString("/" + v)
		default:
			b.WriteString("/0")
		}
	}
	return b.String()
}

// setPath sets doc[path] = v, creating objects and one-element arrays on the way.
func setPath(doc any, path []pathElem, v any) any {
	if len(path) == 0 {
		return v
	}
	switch k := path[0].(type) {
	case string:
		m, ok := doc.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		m[k] = setPath(m[k], path[1:], v)
		return m
	default:
		a, ok := doc.([]any)
		if !ok || len(a) == 0 {
			a = []any{nil}
		}
		a[0] = setPath(a[0], path[1:], v)
		return a
	}
}

func deepCopy(v map[string]any) map[string]any {
	var out map[string]any
	_ = json.Unmarshal(mustJSON(v), &out)
	return out
}

// schemaType resolves the JSON type a schema asks for ("" when it allows any).
func schemaType(s *openapi3.Schema) string {
	for _, t := range []string{"object", "array", "string", "integer", "number", "boolean"} {
		if s.Type != nil && s.Type.Is(t) {
			return t
		}
	}
	if len(s.Properties) > 0 {
		return "object"
	}
	for _, sub := range s.AllOf {
		if sub.Value != nil {
			if t := schemaType(sub.Value); t != "" {
				return t
			}
		}
	}
	return ""
}

// properties merges a schema's own and allOf properties.
func properties(s *openapi3.Schema) map[string]*openapi3.SchemaRef {
	out := map[string]*openapi3.SchemaRef{}
	maps.Copy(out, s.Properties)
	for _, sub := range s.AllOf {
		if sub.Value != nil {
			maps.Copy(out, properties(sub.Value))
		}
	}
	return out
}

// wrongValue is a value of another JSON type than t.
func wrongValue(t string) any {
	switch t {
	case "object":
		return "not-an-object"
	case "array":
		return map[string]any{"not": "an array"}
	case "string":
		return 12345
	case "integer", "number":
		return "twelve"
	case "boolean":
		return "maybe"
	}
	return nil
}

type fieldPath struct {
	path []pathElem
	typ  string
}

// schemaFields lists every attribute path of a schema (arrays through their
// first element) with its JSON type, down to depth 10.
func schemaFields(s *openapi3.Schema, prefix []pathElem, seen map[*openapi3.Schema]bool) []fieldPath {
	if len(prefix) > 10 || seen[s] {
		return nil
	}
	seen[s] = true
	defer delete(seen, s)
	var out []fieldPath
	t := schemaType(s)
	if t != "" && len(prefix) > 0 {
		out = append(out, fieldPath{slices.Clone(prefix), t})
	}
	switch t {
	case "object":
		props := properties(s)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if p := props[name]; p.Value != nil {
				out = append(out, schemaFields(p.Value, append(slices.Clone(prefix), name), seen)...)
			}
		}
	case "array":
		if s.Items != nil && s.Items.Value != nil {
			out = append(out, schemaFields(s.Items.Value, append(slices.Clone(prefix), pathElem(-1)), seen)...)
		}
	}
	return out
}

// baselineFields lists every attribute path of a JSON value with the type of
// its value, not descending into the free-form paths.
func baselineFields(v any, prefix []pathElem, freeForm []string) []fieldPath {
	var out []fieldPath
	t := ""
	switch v.(type) {
	case map[string]any:
		t = "object"
	case []any:
		t = "array"
	case string:
		t = "string"
	case float64:
		t = "number"
	case bool:
		t = "boolean"
	}
	if len(prefix) > 0 && t != "" {
		out = append(out, fieldPath{slices.Clone(prefix), t})
	}
	dotted := strings.ReplaceAll(strings.TrimPrefix(pathString(prefix), "/"), "/", ".")
	if slices.Contains(freeForm, dotted) {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, baselineFields(x[k], append(slices.Clone(prefix), k), freeForm)...)
		}
	case []any:
		if len(x) > 0 {
			out = append(out, baselineFields(x[0], append(slices.Clone(prefix), pathElem(-1)), freeForm)...)
		}
	}
	return out
}

// wrongTypeCases gives every field of every JSON request body a value of
// the wrong JSON type, one field at a time, and the whole body too.
func wrongTypeCases(t *testing.T, callback string) []hostile {
	t.Helper()
	doc, err := openapi.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []hostile
	for _, e := range jsonEndpoints(callback) {
		var fields []fieldPath
		if e.schema != "" {
			ref := doc.Components.Schemas[e.schema]
			if ref == nil || ref.Value == nil {
				t.Fatalf("schema %s missing from the OpenAPI document", e.schema)
			}
			fields = schemaFields(ref.Value, nil, map[*openapi3.Schema]bool{})
		} else {
			fields = baselineFields(e.base, nil, e.freeForm)
		}
		if len(fields) == 0 {
			t.Fatalf("%s %s: only %d fields found", e.method, e.path, len(fields))
		}
		for _, f := range fields {
			body := setPath(deepCopy(e.base), f.path, wrongValue(f.typ))
			out = append(out, hostile{name: fmt.Sprintf("wrong type %s %s %s (%s expected)", e.method, e.path, pathString(f.path), f.typ),
				method: e.method, path: e.path, body: mustJSON(body), hdr: e.hdr()})
		}
		for _, whole := range []string{`[]`, `"body"`, `42`, `true`, `[{}]`} {
			out = append(out, hostile{name: fmt.Sprintf("wrong type %s %s: body %s", e.method, e.path, whole),
				method: e.method, path: e.path, body: []byte(whole), hdr: e.hdr()})
		}
	}
	return out
}

// malformedCases: broken, huge and deeply nested JSON on every JSON endpoint.
func malformedCases(callback string) []hostile {
	huge := []byte(`{"vnfInstanceName":"` + strings.Repeat("a", 2<<20) + `"}`)
	var out []hostile
	for _, e := range jsonEndpoints(callback) {
		add := func(name string, body []byte, want int) {
			out = append(out, hostile{name: name + ": " + e.method + " " + e.path, method: e.method, path: e.path, body: body, hdr: e.hdr(), want: want})
		}
		for i, b := range []string{`{`, `{"a":}`, `{"a" 1}`, `[1,2`, `nul`, `{} {}`, `{"a":1}x`, `{'a':1}`, `{"a":1,}`,
			`{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x00\"}", "\xff\xfe{\x00}", `{"a":1e999999}`, `{"a":"` + "\xc3\x28" + `"}`} {
			add(fmt.Sprintf("malformed JSON #%d %q", i, truncate(b, 20)), []byte(b), 0)
		}
		add("2 MiB body", huge, 413)
		add("100 000 [", []byte(strings.Repeat("[", 100000)), 400)
		add("100 000 nested objects", []byte(strings.Repeat(`{"a":`, 100000)+"1"+strings.Repeat("}", 100000)), 400)
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

var listPaths = []string{"/vnflcm/v1/vnf_instances", "/vnflcm/v1/vnf_lcm_op_occs", "/vnflcm/v1/subscriptions", "/vnfpkgm/v1/vnf_packages"}

// filterCases: invalid filters and selectors (400), SQL-looking and random
// filters (harmless: answered below 500, nothing written).
func filterCases() []hostile {
	bad := []string{"(", ")", "()", "(eq)", "(eq,id)", "(eq,,x)", "(foo,id,x)", "(eq,noSuchAttribute,x)", "(eq,id,x",
		"eq,id,x)", "(eq,id,'x)", "(eq,id,x)(eq,id,y)", "(in,id)", "(eq,id/sub,x)",
		"(eq,_links/self,x)", strings.Repeat("(", 10000), "(eq,id,x,)", "(neq,id)", "(cont)", "((eq,id,x))", "(EQ,id,x)", "(eq,id,'unterminated)"}
	odd := []string{"(eq,id,x);", ";(eq,id,x)", "(eq,id,x);" + strings.Repeat("(eq,id,x);", 2000) + "(eq,id,x)", "(eq, id,x)",
		"(eq,id,x' OR '1'='1)", "(eq,id,'x'';DROP TABLE vnf_instances;--')", "(cont,id,%)", "(cont,id,_)",
		"(cont,id,\\)", "(eq,id," + strings.Repeat("x", 20000) + ")", "(eq,id,x\x00y)", "(eq,id,\U0001F600)", "(in,id," + strings.Repeat("a,", 3000) + "a)"}
	var out []hostile
	q := func(s string) string {
		return strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", "+", "%2B", " ", "%20", "\x00", "%00").Replace(s)
	}
	for _, p := range listPaths {
		for i, f := range bad {
			out = append(out, hostile{name: fmt.Sprintf("bad filter #%d %q on %s", i, truncate(f, 30), p), method: "GET", path: p + "?filter=" + q(f), want: 400})
		}
		for i, f := range odd {
			out = append(out, hostile{name: fmt.Sprintf("odd filter #%d %q on %s", i, truncate(f, 30), p), method: "GET", path: p + "?filter=" + q(f), harmless: true})
		}
		for i, s := range []string{"fields=noSuchAttribute", "exclude_fields=noSuchAttribute", "all_fields&fields=id", "fields=id&exclude_fields=id",
			"nextpage_opaque_marker=!!!", "nextpage_opaque_marker=" + strings.Repeat("A", 5000), "unknownParameter=1", "filter=(eq,id,x)&filter=(eq,id,y)"} {
			out = append(out, hostile{name: fmt.Sprintf("bad query #%d %q on %s", i, truncate(s, 30), p), method: "GET", path: p + "?" + s})
		}
	}
	// Random filters from the filter grammar's alphabet: any answer below 500.
	r := rand.New(rand.NewPCG(9, 9))
	alphabet := []string{"(", ")", ",", ";", "'", "''", "eq", "neq", "gt", "lt", "gte", "lte", "in", "nin", "cont", "ncont",
		"id", "vnfInstanceName", "metadata", "/", "x", "0", "1.5", "-", " ", "\\", "%", "_", "operationState", "*"}
	for i := range 300 {
		var b strings.Builder
		for range 1 + r.IntN(25) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		p := listPaths[i%len(listPaths)]
		out = append(out, hostile{name: fmt.Sprintf("random filter #%d %q on %s", i, b.String(), p), method: "GET", path: p + "?filter=" + q(b.String()), harmless: true})
	}
	return out
}

// idCases put invalid and unknown ids on every route with an id.
func idCases() []hostile {
	ids := []string{"not-a-uuid", "00000000-0000-0000-0000-000000000000", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%00",
		"'%3B%20DROP%20TABLE%20vnf_instances%3B--", strings.Repeat("a", 8000), "%D0%B8%D0%B4", "12345678-1234-1234-1234-1234567890ab%20x",
		"{id}", "%25", "null", "-1"}
	type route struct {
		method, path string
		body         []byte
	}
	routes := []route{
		{"GET", "/vnflcm/v1/vnf_instances/%s", nil},
		{"PATCH", "/vnflcm/v1/vnf_instances/%s", []byte(`{"vnfInstanceName":"x"}`)},
		{"DELETE", "/vnflcm/v1/vnf_instances/%s", nil},
		{"POST", "/vnflcm/v1/vnf_instances/%s/instantiate", []byte(`{"flavourId":"simple"}`)},
		{"POST", "/vnflcm/v1/vnf_instances/%s/terminate", []byte(`{"terminationType":"FORCEFUL"}`)},
		{"POST", "/vnflcm/v1/vnf_instances/%s/scale", []byte(`{"type":"SCALE_OUT","aspectId":"worker_aspect"}`)},
		{"POST", "/vnflcm/v1/vnf_instances/%s/heal", []byte(`{}`)},
		{"POST", "/vnflcm/v1/vnf_instances/%s/change_ext_conn", []byte(`{"extVirtualLinks":[{"id":"e","resourceId":"r"}]}`)},
		{"GET", "/vnflcm/v1/vnf_lcm_op_occs/%s", nil},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/%s/retry", nil},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/%s/rollback", nil},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/%s/fail", nil},
		{"POST", "/vnflcm/v1/vnf_lcm_op_occs/%s/cancel", []byte(`{"cancelMode":"FORCEFUL"}`)},
		{"GET", "/vnflcm/v1/subscriptions/%s", nil},
		{"DELETE", "/vnflcm/v1/subscriptions/%s", nil},
		{"GET", "/vnfpkgm/v1/vnf_packages/%s", nil},
		{"PATCH", "/vnfpkgm/v1/vnf_packages/%s", []byte(`{"operationalState":"DISABLED"}`)},
		{"DELETE", "/vnfpkgm/v1/vnf_packages/%s", nil},
		{"GET", "/vnfpkgm/v1/vnf_packages/%s/package_content", nil},
		{"PUT", "/vnfpkgm/v1/vnf_packages/%s/package_content", []byte("PK\x03\x04")},
		{"POST", "/vnfpkgm/v1/vnf_packages/%s/package_content/upload_from_uri", []byte(`{"addressInformation":"http://127.0.0.1:1/p.zip"}`)},
		{"GET", "/vnfpkgm/v1/vnf_packages/%s/vnfd", nil},
		{"GET", "/vnfpkgm/v1/vnf_packages/%s/artifacts/Scripts/x.sh", nil},
		{"GET", "/v1.0/vims/%s", nil},
		{"PUT", "/v1.0/vims/%s", []byte(`{"vim":{"description":"x"}}`)},
		{"DELETE", "/v1.0/vims/%s", nil},
	}
	var out []hostile
	for _, r := range routes {
		for i, id := range ids {
			h := hostile{name: fmt.Sprintf("id #%d %q: %s %s", i, truncate(id, 20), r.method, r.path), method: r.method,
				path: fmt.Sprintf(r.path, id), body: r.body}
			if strings.Contains(r.path, "package_content") && r.method == "PUT" {
				h.hdr = []string{"Content-Type", "application/zip"}
			}
			if r.method == "PATCH" {
				h.hdr = []string{"Content-Type", "application/merge-patch+json"}
			}
			out = append(out, h)
		}
	}
	return out
}

// headerCases abuse headers.
func headerCases() []hostile {
	create := []byte(`{"vnfdId":"` + lcmtest.VnfdID + `"}`)
	patch := []byte(`{"vnfInstanceName":"renamed"}`)
	return []hostile{
		{name: "2 MiB header", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"X-Big", strings.Repeat("x", 2<<20)}, want: 431, raw: true},
		{name: "malformed Version", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"Version", "abc"}, want: 400},
		{name: "Version 2.0.0", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"Version", "2.0.0"}, want: 406},
		{name: "Version 10 000 characters", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"Version", strings.Repeat("1.", 5000)}, want: 400},
		{name: "Version on a POST", method: "POST", path: "/vnflcm/v1/vnf_instances", body: create, hdr: []string{"Version", "9.9.9"}, want: 406},
		{name: "Content-Type text/plain", method: "POST", path: "/vnflcm/v1/vnf_instances", body: create, hdr: []string{"Content-Type", "text/plain"}, want: 415},
		{name: "Content-Type application/xml", method: "POST", path: "/vnflcm/v1/vnf_instances", body: []byte("<vnfdId/>"), hdr: []string{"Content-Type", "application/xml"}, want: 415},
		{name: "Content-Type unparsable", method: "POST", path: "/vnflcm/v1/vnf_instances", body: create, hdr: []string{"Content-Type", "application/json; ==="}, want: 415},
		{name: "Content-Type multipart on JSON", method: "POST", path: "/vnflcm/v1/vnf_instances", body: create, hdr: []string{"Content-Type", "multipart/form-data; boundary=x"}, want: 415},
		{name: "Content-Type text/plain on a task", method: "POST", path: "/vnflcm/v1/vnf_instances/{inst}/instantiate", body: []byte(`{"flavourId":"simple"}`), hdr: []string{"Content-Type", "text/plain"}, want: 415},
		{name: "Content-Type text/plain on a VIM", method: "POST", path: "/v1.0/vims?verify=false", body: []byte(`{"vim":{}}`), hdr: []string{"Content-Type", "text/plain"}, want: 415},
		{name: "Content-Type text/plain on a CSAR", method: "PUT", path: "/vnfpkgm/v1/vnf_packages/{pkg}/package_content", body: []byte("PK"), hdr: []string{"Content-Type", "text/plain"}, want: 415},
		{name: "If-Match garbage", method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", body: patch, hdr: []string{"Content-Type", "application/merge-patch+json", "If-Match", `"garbage"`}, want: 412},
		{name: "If-Match weak", method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", body: patch, hdr: []string{"Content-Type", "application/merge-patch+json", "If-Match", `W/"1"`}, want: 412},
		{name: "If-Match unquoted", method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", body: patch, hdr: []string{"Content-Type", "application/merge-patch+json", "If-Match", `1`}},
		{name: "If-Match 10 000 characters", method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", body: patch, hdr: []string{"Content-Type", "application/merge-patch+json", "If-Match", `"` + strings.Repeat("9", 10000) + `"`}, want: 412},
		{name: "If-Match list of garbage", method: "PATCH", path: "/vnflcm/v1/vnf_instances/{inst}", body: patch, hdr: []string{"Content-Type", "application/merge-patch+json", "If-Match", `"a", "b", W/"c"`}, want: 412},
		{name: "method BREW", method: "BREW", path: "/vnflcm/v1/vnf_instances", want: 405},
		{name: "method PUT on a task", method: "PUT", path: "/vnflcm/v1/vnf_instances/{inst}/instantiate", body: []byte(`{}`), want: 405},
		{name: "Accept application/xml", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"Accept", "application/xml"}, harmless: true},
		{name: "garbage Authorization with authentication off", method: "GET", path: "/vnflcm/v1/vnf_instances", hdr: []string{"Authorization", "Bearer " + strings.Repeat("\u00e9", 1000)}, harmless: true},
	}
}
