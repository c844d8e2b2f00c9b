package drills

import (
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// fuzzTarget is one request the fuzzer sends bodies to.
type fuzzTarget struct {
	method, path, contentType string
}

// fuzzTargets take JSON bodies and reach the database without calling out
// of the VNFM (VIM registration and upload_from_uri would make requests to
// addresses the fuzzer invents, so they are left out).
var fuzzTargets = []fuzzTarget{
	{"POST", "/vnflcm/v1/vnf_instances", "application/json"},
	{"PATCH", "/vnflcm/v1/vnf_instances/{inst}", "application/merge-patch+json"},
	{"POST", "/vnflcm/v1/vnf_instances/{inst}/instantiate", "application/json"},
	{"POST", "/vnflcm/v1/vnf_instances/{inst}/terminate", "application/json"},
	{"POST", "/vnflcm/v1/vnf_instances/{inst}/scale", "application/json"},
	{"POST", "/vnflcm/v1/vnf_instances/{inst}/heal", "application/json"},
	{"POST", "/vnflcm/v1/vnf_instances/{inst}/change_ext_conn", "application/json"},
	{"POST", "/vnflcm/v1/vnf_lcm_op_occs/{op}/cancel", "application/json"},
	{"POST", "/vnflcm/v1/subscriptions", "application/json"},
	{"POST", "/vnfpkgm/v1/vnf_packages", "application/json"},
	{"PATCH", "/vnfpkgm/v1/vnf_packages/{pkg}", "application/merge-patch+json"},
}

// fuzzServer starts an in-process VNFM for the fuzz target, without an
// engine (accepted operations stay STARTING) and without callback tests (no
// requests to fuzzer-made URLs; without an engine no notification goes
// out either). It returns the base URL and the ids the targets name.
func fuzzServer(f *testing.F) (base string, ids map[string]string) {
	f.Helper()
	db := pgtest.NewDB(f)
	seedPackage(f, db)
	v := startInProcess(f, db, newKey(), inProcess{})
	r := send(f, "POST", v.base+"/vnflcm/v1/vnf_instances", []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`))
	if r.Status != 201 {
		f.Fatalf("create: %d %s", r.Status, r.Body)
	}
	inst := r.JSON(f)["id"].(string)
	r = send(f, "POST", v.base+"/vnfpkgm/v1/vnf_packages", []byte(`{}`))
	if r.Status != 201 {
		f.Fatalf("create package: %d %s", r.Status, r.Body)
	}
	return v.base, map[string]string{"inst": inst, "pkg": r.JSON(f)["id"].(string), "op": "5b1f1f0e-0000-4000-8000-000000000001"}
}

// FuzzRequestBodies sends arbitrary bodies to every JSON request of the API
// (over HTTP to the in-process VNFM on a real database): no answer is a 5xx,
// and every error is a ProblemDetails. `make fuzz` runs it with -fuzz.
func FuzzRequestBodies(f *testing.F) {
	base, ids := fuzzServer(f)
	seeds := []string{
		`{"vnfdId":"` + lcmtest.VnfdID + `","vnfInstanceName":"n","metadata":{"k":"v"}}`,
		`{"vnfInstanceName":"x","metadata":{"a":null}}`,
		`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"` + lcmtest.VimType + `","accessInfo":{"password":"p"}}],"additionalParams":{"k":[1,2]}}`,
		`{"terminationType":"GRACEFUL","gracefulTerminationTimeout":-1}`,
		`{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":1e9}`,
		`{"vnfcInstanceId":["worker-0",""],"cause":"x"}`,
		`{"extVirtualLinks":[{"id":"e","resourceId":"r","extCps":[{"cpdId":"c","cpConfig":[{}]}]}]}`,
		`{"cancelMode":"FORCEFUL"}`, `"GRACEFUL"`,
		`{"callbackUri":"http://127.0.0.1:1/cb","filter":{"operationStates":["COMPLETED"]},"authentication":{"authType":["BASIC"],"paramsBasic":{}}}`,
		`{"userDefinedData":{"a":{"b":[true,null,1.5]}}}`,
		`{"operationalState":"ENABLED","userDefinedData":{"k":"v"}}`,
		``, `{`, `[`, `null`, `{"a":1e999}`, "\xff", `{"\u0000":"\u0000"}`, strings.Repeat("[", 200),
	}
	for i := range fuzzTargets {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ft := fuzzTargets[int(which)%len(fuzzTargets)]
		path := ft.path
		for k, v := range ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
		}
		r, err := harness.TrySend(ft.method, base+path, body, "Content-Type", ft.contentType)
		if err != nil {
			t.Fatalf("%s %s: %v", ft.method, ft.path, err)
		}
		if r.Status >= 500 {
			t.Fatalf("%s %s with %q: %d %s", ft.method, ft.path, truncate(string(body), 200), r.Status, r.Body)
		}
		if r.Status >= 400 {
			if why := problemError(r); why != "" {
				t.Fatalf("%s %s with %q: %d is not a ProblemDetails: %s", ft.method, ft.path, truncate(string(body), 200), r.Status, why)
			}
		}
	})
}
