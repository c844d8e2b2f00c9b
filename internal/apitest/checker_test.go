package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB records failures instead of failing the real test, so the tests
// below can assert that the Checker does (or does not) complain.
type fakeTB struct {
	testing.TB // the real test, for anything not overridden
	mu         sync.Mutex
	msgs       []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) { f.Error(args...); runtime.Goexit() }
func (f *fakeTB) Fail()             { f.Errorf("Fail") }
func (f *fakeTB) FailNow()          { f.Errorf("FailNow"); runtime.Goexit() }
func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.msgs) > 0
}
func (f *fakeTB) text() string { return strings.Join(f.msgs, "\n") }

// capture runs fn with a fakeTB on its own goroutine, so Fatal can stop it.
func capture(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

const (
	base   = "http://vnfm.example:9890/vnflcm/v1"
	instID = "0b2a9d2e-4f2c-4a37-9a52-8c9f5d1f3e11"
	occID  = "5e1c6a0c-2d6f-4d77-a0bb-1e1f3ac1a1b2"
	subID  = "7d1f1a3e-8c51-4b6e-9f3b-0a7c2e4d5f60"
)

var (
	instURL = base + "/vnf_instances/" + instID
	occURL  = base + "/vnf_lcm_op_occs/" + occID
	subURL  = base + "/subscriptions/" + subID
)

var vnfInstanceNI = `{
  "id": "` + instID + `",
  "vnfInstanceName": "k8s-cluster-1",
  "vnfdId": "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177",
  "vnfProvider": "Company",
  "vnfProductName": "Kubernetes",
  "vnfSoftwareVersion": "1.0",
  "vnfdVersion": "1.0",
  "vnfPkgId": "94f0b8f4-0a4c-4c43-9c1b-5f1f0a3b2d11",
  "instantiationState": "NOT_INSTANTIATED",
  "metadata": {},
  "_links": {"self": {"href": "` + instURL + `"}, "instantiate": {"href": "` + instURL + `/instantiate"}}
}`

var vnfInstanceInstantiated = `{
  "id": "` + instID + `",
  "vnfdId": "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177",
  "vnfProvider": "Company",
  "vnfProductName": "Kubernetes",
  "vnfSoftwareVersion": "1.0",
  "vnfdVersion": "1.0",
  "instantiationState": "INSTANTIATED",
  "vimConnectionInfo": [{"id": "vim1", "vimId": "00000000-0000-0000-0000-000000000001", "vimType": "openstack",
    "accessInfo": {"username": "admin", "password": "******", "project": "demo"}}],
  "instantiatedVnfInfo": {
    "flavourId": "simple",
    "vnfState": "STARTED",
    "scaleStatus": [{"aspectId": "worker_instance", "scaleLevel": 1}],
    "extCpInfo": [{"id": "cp1", "cpdId": "masterNode_CP1",
      "cpProtocolInfo": [{"layerProtocol": "IP_OVER_ETHERNET",
        "ipOverEthernet": {"macAddress": "fa:16:3e:00:00:01", "ipAddresses": [{"type": "IPV4", "addresses": ["10.0.0.5"], "isDynamic": true, "subnetId": "s1"}]}}]}],
    "vnfcResourceInfo": [{"id": "vnfc1", "vduId": "masterNode",
      "computeResource": {"vimConnectionId": "vim1", "resourceId": "9a3c", "vimLevelResourceType": "OS::Nova::Server"},
      "storageResourceIds": [], "metadata": {"stack_id": "st1"}}],
    "vnfVirtualLinkResourceInfo": [{"id": "vl1", "vnfVirtualLinkDescId": "internalVL1",
      "networkResource": {"vimConnectionId": "vim1", "resourceId": "n1", "vimLevelResourceType": "OS::Neutron::Net"}}],
    "virtualStorageResourceInfo": [],
    "additionalParams": {"master_node": {"username": "ubuntu", "password": "******"}}
  },
  "metadata": {"owner": "team-a"},
  "_links": {"self": {"href": "` + instURL + `"}, "terminate": {"href": "` + instURL + `/terminate"},
    "scale": {"href": "` + instURL + `/scale"}, "heal": {"href": "` + instURL + `/heal"}}
}`

// opOccListItem is what a list returns under the default selector.
var opOccListItem = `{
  "id": "` + occID + `",
  "operationState": "PROCESSING",
  "stateEnteredTime": "2026-01-05T10:15:02Z",
  "startTime": "2026-01-05T10:15:00Z",
  "vnfInstanceId": "` + instID + `",
  "operation": "INSTANTIATE",
  "isAutomaticInvocation": false,
  "isCancelPending": false,
  "progress": {"currentStep": "infra.instantiate", "stepsDone": 0, "stepsTotal": 2,
    "steps": [{"name": "infra.instantiate", "state": "RUNNING", "attempt": 1, "startTime": "2026-01-05T10:15:02Z"},
              {"name": "mgmt.instantiate_end", "state": "PENDING"}]},
  "_links": {"self": {"href": "` + occURL + `"}, "vnfInstance": {"href": "` + instURL + `"}}
}`

var opOccFull = `{
  "id": "` + occID + `",
  "operationState": "FAILED_TEMP",
  "stateEnteredTime": "2026-01-05T10:30:00Z",
  "startTime": "2026-01-05T10:15:00Z",
  "vnfInstanceId": "` + instID + `",
  "grantId": "g1",
  "operation": "INSTANTIATE",
  "isAutomaticInvocation": false,
  "operationParams": {"flavourId": "simple", "additionalParams": {"master_node": {"password": "******"}}},
  "isCancelPending": false,
  "error": {"title": "Internal Server Error", "status": 500, "detail": "mgmt.instantiate_end failed on worker-1: kubeadm join timed out"},
  "resourceChanges": {
    "affectedVnfcs": [{"id": "vnfc1", "vduId": "masterNode", "changeType": "ADDED",
      "computeResource": {"vimConnectionId": "vim1", "resourceId": "9a3c"}}],
    "affectedVirtualLinks": [{"id": "vl1", "vnfVirtualLinkDescId": "internalVL1", "virtualLinkDescId": "internalVL1", "changeType": "ADDED",
      "networkResource": {"vimConnectionId": "vim1", "resourceId": "n1"}}],
    "affectedVirtualStorages": []
  },
  "progress": {"currentStep": "mgmt.instantiate_end", "stepsDone": 1, "stepsTotal": 2, "updatedTime": "2026-01-05T10:30:00Z",
    "lastError": "kubeadm join timed out",
    "steps": [{"name": "infra.instantiate", "state": "COMPLETED", "attempt": 1},
              {"name": "mgmt.instantiate_end", "state": "FAILED", "attempt": 1, "error": "kubeadm join timed out", "nodesDone": 1, "nodesTotal": 2,
               "nodes": [{"name": "master-0", "state": "COMPLETED"}, {"name": "worker-1", "state": "FAILED", "message": "timeout"}]}]},
  "_links": {"self": {"href": "` + occURL + `"}, "vnfInstance": {"href": "` + instURL + `"},
    "retry": {"href": "` + occURL + `/retry"}, "rollback": {"href": "` + occURL + `/rollback"}, "fail": {"href": "` + occURL + `/fail"}}
}`

var subscription = `{
  "id": "` + subID + `",
  "filter": {"vnfInstanceSubscriptionFilter": {"vnfdIds": ["b1bb0ce7-ebca-4fa7-95ed-4840d70a1177"]},
             "notificationTypes": ["VnfLcmOperationOccurrenceNotification"], "operationStates": ["COMPLETED"]},
  "callbackUri": "http://nfvo.example:9091/notification",
  "_links": {"self": {"href": "` + subURL + `"}}
}`

const apiVersions = `{"uriPrefix": "/vnflcm/v1", "apiVersions": [{"version": "1.3.0", "isDeprecated": false}]}`

func problem(status int, detail string) string {
	b, _ := json.Marshal(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	return string(b)
}

type exchange struct {
	name        string
	method, url string
	status      int
	headers     map[string]string // Version: 1.3.0 is added unless set ("" deletes)
	body        string
}

func (x exchange) build() (*http.Request, *http.Response, []byte) {
	req := httptest.NewRequest(x.method, x.url, nil)
	resp := &http.Response{StatusCode: x.status, Header: http.Header{}}
	resp.Header.Set("Version", "1.3.0")
	if x.body != "" {
		if x.status >= 400 {
			resp.Header.Set("Content-Type", "application/problem+json")
		} else {
			resp.Header.Set("Content-Type", "application/json")
		}
	}
	for k, v := range x.headers {
		if v == "" {
			resp.Header.Del(k)
		} else {
			resp.Header.Set(k, v)
		}
	}
	return req, resp, []byte(x.body)
}

func loc(u string) map[string]string { return map[string]string{"Location": u} }

func TestCheckAcceptsConformingResponses(t *testing.T) {
	c := NewChecker(t)
	cases := []exchange{
		{"api versions", "GET", base + "/api_versions", 200, nil, apiVersions},
		{"unversioned api versions", "GET", "http://vnfm.example:9890/vnflcm/api_versions", 200, nil, `{"uriPrefix": "/vnflcm", "apiVersions": [{"version": "1.3.0"}]}`},
		{"create", "POST", base + "/vnf_instances", 201, loc(instURL), vnfInstanceNI},
		{"list instances", "GET", base + "/vnf_instances", 200, nil, "[" + vnfInstanceNI + "," + vnfInstanceInstantiated + "]"},
		{"empty list with paging link", "GET", base + "/vnf_instances?filter=(eq,vnfProvider,x)", 200,
			map[string]string{"Link": `<` + base + `/vnf_instances?nextpage_opaque_marker=abc>; rel="next"`}, "[]"},
		{"show instance", "GET", instURL, 200, map[string]string{"ETag": `"3"`}, vnfInstanceInstantiated},
		{"modify", "PATCH", instURL, 202, loc(occURL), ""},
		{"delete", "DELETE", instURL, 204, nil, ""},
		{"instantiate", "POST", instURL + "/instantiate", 202, loc(occURL), ""},
		{"terminate", "POST", instURL + "/terminate", 202, loc(occURL), ""},
		{"scale", "POST", instURL + "/scale", 202, loc(occURL), ""},
		{"heal", "POST", instURL + "/heal", 202, loc(occURL), ""},
		{"change_ext_conn", "POST", instURL + "/change_ext_conn", 202, loc(occURL), ""},
		{"operate is not supported", "POST", instURL + "/operate", 404, nil, problem(404, "the OPERATE task is not supported by this VNFM")},
		{"instantiate twice", "POST", instURL + "/instantiate", 409, nil, problem(409, "VNF instance "+instID+" is already INSTANTIATED")},
		{"list op occs, default selector", "GET", base + "/vnf_lcm_op_occs", 200, nil, "[" + opOccListItem + "]"},
		{"list op occs, exclude_default", "GET", base + "/vnf_lcm_op_occs?exclude_default", 200, nil, "[" + opOccListItem + "]"},
		{"list op occs, all_fields", "GET", base + "/vnf_lcm_op_occs?all_fields", 200, nil, "[" + opOccFull + "]"},
		{"show op occ", "GET", occURL, 200, nil, opOccFull},
		{"retry", "POST", occURL + "/retry", 202, loc(occURL), ""},
		{"rollback without Location", "POST", occURL + "/rollback", 202, nil, ""},
		{"fail", "POST", occURL + "/fail", 200, nil, strings.Replace(opOccFull, `"FAILED_TEMP"`, `"FAILED"`, 1)},
		{"cancel", "POST", occURL + "/cancel", 202, nil, ""},
		{"retry not FAILED_TEMP", "POST", occURL + "/retry", 409, nil, problem(409, "operation is COMPLETED, not FAILED_TEMP")},
		{"subscribe", "POST", base + "/subscriptions", 201, loc(subURL), subscription},
		{"subscribe duplicate", "POST", base + "/subscriptions", 303, loc(subURL), ""},
		{"list subscriptions", "GET", base + "/subscriptions", 200, nil, "[" + subscription + "]"},
		{"show subscription", "GET", subURL, 200, nil, subscription},
		{"unsubscribe", "DELETE", subURL, 204, nil, ""},
		{"bad filter", "GET", base + "/vnf_instances?attribute_not_exist=some_value", 400, nil, problem(400, `unknown query parameter "attribute_not_exist"`)},
		{"unknown instance", "GET", instURL, 404, nil, problem(404, "VNF instance "+instID+" not found")},
		{"problem with extra members", "GET", instURL, 500, nil, `{"status": 500, "detail": "database unavailable", "retryAfter": 5}`},
		{"unknown path", "GET", base + "/vnf_packages", 404, nil, problem(404, "no such resource")},
		{"method not allowed", "PUT", base + "/vnf_instances", 405, map[string]string{"Allow": "GET, POST"}, problem(405, "PUT is not allowed")},
		{"double slash from the robot suite", "GET", "http://vnfm.example:9890//vnflcm/v1/vnf_instances/" + instID, 200, nil, vnfInstanceNI},
		{"problem+json with charset", "GET", subURL, 404, map[string]string{"Content-Type": "application/problem+json; charset=utf-8"}, problem(404, "no subscription")},
	}
	for _, x := range cases {
		t.Run(x.name, func(t *testing.T) {
			req, resp, body := x.build()
			if f := capture(t, func(tb testing.TB) { c.Check(tb, req, resp, body) }); f.Failed() {
				t.Errorf("unexpected failure:\n%s", f.text())
			}
		})
	}
}

func TestCheckRejectsNonConformingResponses(t *testing.T) {
	c := NewChecker(t)
	without := func(doc, member string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, member)
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		exchange
		want []string // substrings of the failure message
	}{
		{exchange{"missing required member", "GET", instURL, 200, nil, without(vnfInstanceNI, "vnfProvider")},
			[]string{`OpenAPI getVnfInstance: response body: "vnfProvider" is required`, `NFV-TST 010 vnfInstance.schema.json: /: missing property 'vnfProvider'`}},
		{exchange{"wrong enum", "GET", instURL, 200, nil, strings.Replace(vnfInstanceNI, "NOT_INSTANTIATED", "RUNNING", 1)},
			[]string{`/instantiationState: must be one of "NOT_INSTANTIATED", "INSTANTIATED", got "RUNNING"`, `NFV-TST 010 vnfInstance.schema.json: /instantiationState`}},
		{exchange{"wrong error content type", "GET", instURL, 404, map[string]string{"Content-Type": "application/json"}, problem(404, "not found")},
			[]string{`Content-Type of an error response must be application/problem+json, got "application/json"`, `OpenAPI getVnfInstance: response header Content-Type has unexpected value: "application/json"`}},
		{exchange{"missing Version", "GET", instURL, 200, map[string]string{"Version": ""}, vnfInstanceNI},
			[]string{"header Version is missing", `response header "Version" missing`}},
		{exchange{"wrong Version", "GET", base + "/vnf_instances", 200, map[string]string{"Version": "2.0.0"}, "[]"},
			[]string{`header Version is "2.0.0", want "1.3.0"`}},
		{exchange{"202 without Location", "POST", instURL + "/instantiate", 202, nil, ""},
			[]string{`response header "Location" missing`}},
		{exchange{"202 with a body", "POST", instURL + "/scale", 202, loc(occURL), `{"id": "x"}`},
			[]string{"the body of a 202 response must be empty"}},
		{exchange{"undocumented status", "POST", instURL + "/instantiate", 200, nil, vnfInstanceNI},
			[]string{"status 200 is not documented for operation instantiateVnf"}},
		{exchange{"status member differs", "GET", instURL, 404, nil, problem(400, "x")},
			[]string{"ProblemDetails.status must equal the HTTP status 404, got 400"}},
		{exchange{"no detail", "GET", instURL, 404, nil, `{"title": "Not Found", "status": 404}`},
			[]string{"ProblemDetails.detail must be a non-empty string", `OpenAPI getVnfInstance: response body: "detail" is required`, `NFV-TST 010 ProblemDetails.schema.json: /: missing property 'detail'`}},
		{exchange{"error body not JSON", "GET", instURL, 500, map[string]string{"Content-Type": "text/plain"}, "boom"},
			[]string{"must be a ProblemDetails JSON object"}},
		{exchange{"all_fields list lacks operationParams", "GET", base + "/vnf_lcm_op_occs?all_fields", 200, nil, "[" + opOccListItem + "]"},
			[]string{`NFV-TST 010 VnfLcmOpOccs.schema.json: /0: missing property 'operationParams'`}},
		{exchange{"fields=operationParams list lacks it", "GET", base + "/vnf_lcm_op_occs?fields=operationParams", 200, nil, "[" + opOccListItem + "]"},
			[]string{`VnfLcmOpOccs.schema.json: /0: missing property 'operationParams'`}},
		{exchange{"single op occ lacks operationParams", "GET", occURL, 200, nil, opOccListItem},
			[]string{`NFV-TST 010 VnfLcmOpOcc.schema.json: /: missing property 'operationParams'`}},
		{exchange{"bad progress state", "GET", occURL, 200, nil, strings.Replace(opOccFull, `"state": "FAILED"`, `"state": "BROKEN"`, 1)},
			[]string{`/progress/steps/1/state: must be one of "PENDING", "RUNNING", "COMPLETED", "FAILED", "SKIPPED", "ROLLED_BACK", got "BROKEN"`}},
		{exchange{"bad date-time", "GET", occURL, 200, nil, strings.Replace(opOccFull, `"2026-01-05T10:15:00Z"`, `"yesterday"`, 1)},
			[]string{`/startTime: must be an RFC 3339 date-time string, got "yesterday"`, `NFV-TST 010 VnfLcmOpOcc.schema.json: /startTime`}},
		{exchange{"TST name of the VLD missing", "GET", occURL, 200, nil, strings.Replace(opOccFull, `"virtualLinkDescId": "internalVL1", `, "", 1)},
			[]string{`VnfLcmOpOcc.schema.json: /resourceChanges/affectedVirtualLinks/0: missing property 'virtualLinkDescId'`}},
		{exchange{"credentials returned", "GET", subURL, 200, nil, strings.Replace(subscription, `"callbackUri"`, `"authentication": {"authType": ["BASIC"], "paramsBasic": {"userName": "u", "password": "p"}}, "callbackUri"`, 1)},
			[]string{`authentication`}},
		{exchange{"TST: resource handle without VIM connection", "GET", instURL, 200, nil, strings.Replace(vnfInstanceInstantiated, `"computeResource": {"vimConnectionId": "vim1", `, `"computeResource": {`, 1)},
			[]string{`vnfInstance.schema.json: /instantiatedVnfInfo/vnfcResourceInfo/0/computeResource: missing property 'vimConnectionId'`}},
		{exchange{"success on unknown path", "GET", base + "/vnf_packages", 200, nil, "[]"},
			[]string{"the OpenAPI document has no operation GET /vnflcm/v1/vnf_packages", "should be 404 or 405"}},
		{exchange{"relative Location", "POST", instURL + "/heal", 202, loc("/vnflcm/v1/vnf_lcm_op_occs/" + occID), ""},
			[]string{`OpenAPI healVnf: response header "Location": must be an absolute URI, got "/vnflcm/v1/vnf_lcm_op_occs/` + occID + `"`}},
		{exchange{"405 without Allow", "PATCH", base + "/vnf_instances", 405, nil, problem(405, "PATCH is not allowed")},
			[]string{"a 405 response must carry an Allow header"}},
		{exchange{"relative link", "GET", subURL, 200, nil, strings.Replace(subscription, `{"self": {"href": "`+subURL, `{"self": {"href": "/x`, 1)},
			[]string{`/_links/self/href: must be an absolute URI, got "/x"`}},
		{exchange{"303 without Location", "POST", base + "/subscriptions", 303, nil, ""},
			[]string{`response header "Location" missing`}},
	}
	for _, x := range cases {
		t.Run(x.name, func(t *testing.T) {
			req, resp, body := x.build()
			f := capture(t, func(tb testing.TB) { c.Check(tb, req, resp, body) })
			if !f.Failed() {
				t.Fatalf("Check accepted it")
			}
			for _, w := range x.want {
				if !strings.Contains(f.text(), w) {
					t.Errorf("failure message lacks %q:\n%s", w, f.text())
				}
			}
			if strings.Contains(f.text(), "Schema:") {
				t.Errorf("failure message dumps a schema:\n%s", f.text())
			}
		})
	}
}

var opOccNotification = `{
  "id": "n1",
  "notificationType": "VnfLcmOperationOccurrenceNotification",
  "subscriptionId": "` + subID + `",
  "timeStamp": "2026-01-05T10:15:02Z",
  "notificationStatus": "START",
  "operationState": "PROCESSING",
  "vnfInstanceId": "` + instID + `",
  "operation": "INSTANTIATE",
  "isAutomaticInvocation": false,
  "vnfLcmOpOccId": "` + occID + `",
  "_links": {"vnfInstance": {"href": "` + instURL + `"}, "subscription": {"href": "` + subURL + `"}, "vnfLcmOpOcc": {"href": "` + occURL + `"}}
}`

var creationNotification = `{
  "id": "n2",
  "notificationType": "VnfIdentifierCreationNotification",
  "subscriptionId": "` + subID + `",
  "timeStamp": "2026-01-05T10:00:00Z",
  "vnfInstanceId": "` + instID + `",
  "_links": {"vnfInstance": {"href": "` + instURL + `"}, "subscription": {"href": "` + subURL + `"}}
}`

func TestValidateNotification(t *testing.T) {
	c := NewChecker(t)
	deletion := strings.Replace(creationNotification, "VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification", 1)
	for typ, body := range map[string]string{
		"VnfLcmOperationOccurrenceNotification": opOccNotification,
		"VnfIdentifierCreationNotification":     creationNotification,
		"VnfIdentifierDeletionNotification":     deletion,
	} {
		if f := capture(t, func(tb testing.TB) { c.ValidateNotification(tb, []byte(body), typ) }); f.Failed() {
			t.Errorf("%s: unexpected failure:\n%s", typ, f.text())
		}
	}

	bad := []struct {
		name, typ, body string
		want            []string
	}{
		{"wrong status", "VnfLcmOperationOccurrenceNotification", strings.Replace(opOccNotification, `"START"`, `"BEGIN"`, 1),
			[]string{`/notificationStatus: must be one of "START", "RESULT", got "BEGIN"`, `VnfLcmOperationOccurrenceNotification.schema.json: /notificationStatus`}},
		{"type mismatch", "VnfIdentifierDeletionNotification", creationNotification,
			[]string{`notificationType must be "VnfIdentifierDeletionNotification"`}},
		{"missing links", "VnfIdentifierCreationNotification", strings.Replace(creationNotification, `"_links"`, `"links"`, 1),
			[]string{`"_links" is required`, `missing property '_links'`}},
		{"unknown type", "VnfPackageOnboardingNotification", creationNotification,
			[]string{`unknown notification type "VnfPackageOnboardingNotification"`}},
	}
	for _, b := range bad {
		f := capture(t, func(tb testing.TB) { c.ValidateNotification(tb, []byte(b.body), b.typ) })
		for _, w := range b.want {
			if !strings.Contains(f.text(), w) {
				t.Errorf("%s: failure message lacks %q:\n%s", b.name, w, f.text())
			}
		}
	}
}

func TestSharedDirLookup(t *testing.T) {
	dir := SharedDir(t)
	if env := os.Getenv(SharedDirEnv); env == "" && filepath.Base(dir) != "shared" {
		t.Errorf("SharedDir = %s, want the repository's sibling folder named shared", dir)
	}
	if tst := TSTDir(t); !strings.HasSuffix(filepath.ToSlash(tst), tstRelDir) {
		t.Errorf("TSTDir = %s", tst)
	}
}

func TestMissingSharedDataFails(t *testing.T) {
	t.Setenv(SharedDirEnv, filepath.Join(t.TempDir(), "nowhere"))
	f := capture(t, func(tb testing.TB) { NewChecker(tb) })
	if !strings.Contains(f.text(), SharedDirEnv) || !strings.Contains(f.text(), "is not a directory") {
		t.Errorf("NewChecker without the shared folder: %q", f.text())
	}

	t.Setenv(SharedDirEnv, t.TempDir())
	f = capture(t, func(tb testing.TB) { TSTDir(tb) })
	if !strings.Contains(f.text(), "NFV-TST 010 v2.6.1 data not found") {
		t.Errorf("TSTDir with an empty shared folder: %q", f.text())
	}
}
