package api_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/api"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
)

// TestWritesAcceptOnlyTheirMediaTypes: the issue 14 reproduction (a
// form-encoded create answered 201) and every other body a web page could
// send without a CORS preflight is 415, with a detail saying what to send.
func TestWritesAcceptOnlyTheirMediaTypes(t *testing.T) {
	e := newEnv(t, 100, false)
	create := `{"vnfdId":"` + lcmtest.VnfdID + `"}`
	id := e.createInstance("media")
	inst := "/vnflcm/v1/vnf_instances/" + id
	for _, tc := range []struct {
		name, method, path, body, ctype, want string
	}{
		{"form-encoded JSON", "POST", "/vnflcm/v1/vnf_instances", create, "application/x-www-form-urlencoded", "application/json"},
		{"text/plain", "POST", "/vnflcm/v1/vnf_instances", create, "text/plain", "application/json"},
		{"text/plain with charset", "POST", "/vnflcm/v1/vnf_instances", create, "text/plain; charset=utf-8", "application/json"},
		{"multipart form", "POST", "/vnflcm/v1/vnf_instances", create, "multipart/form-data; boundary=x", "application/json"},
		{"body without Content-Type", "POST", "/vnflcm/v1/vnf_instances", create, "", "no Content-Type"},
		{"other +json type", "POST", "/vnflcm/v1/vnf_instances", create, "application/vnd.evil+json", "application/json"},
		{"JSON in Latin-1", "POST", "/vnflcm/v1/vnf_instances", create, "application/json; charset=iso-8859-1", "UTF-8"},
		{"merge patch on a POST", "POST", "/vnflcm/v1/vnf_instances", create, "application/merge-patch+json", "application/json"},
		{"empty form post to a task", "POST", inst + "/instantiate", "", "text/plain", "application/json"},
		{"form PATCH", "PATCH", inst, `{"vnfInstanceName":"x"}`, "application/x-www-form-urlencoded", "merge-patch+json"},
		{"form subscription", "POST", "/vnflcm/v1/subscriptions", `{"callbackUri":"http://127.0.0.1:1/"}`, "text/plain", "application/json"},
		{"form VIM", "POST", "/v1.0/vims", `{"vim":{}}`, "text/plain", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{"Content-Type", tc.ctype}
			r := e.expect(e.do(tc.method, tc.path, tc.body, hdr...), http.StatusUnsupportedMediaType)
			if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, tc.want) {
				t.Fatalf("detail %q does not say %q", d, tc.want)
			}
		})
	}
	// What the API does accept.
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", create, "Content-Type", "application/json; charset=UTF-8"), 201)
	e.expect(e.do("PATCH", inst, `{"vnfInstanceName":"y"}`, "Content-Type", "application/merge-patch+json"), 202)
	// A GET with a stray Content-Type (the Tacker CLI) and a DELETE without body still work.
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Content-Type", "text/plain"), 200)
	list := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?filter=(eq,vnfInstanceName,media)", ""), 200).list(t)
	if len(list) != 1 {
		t.Fatalf("the refused writes changed something: %d instances named media", len(list))
	}
}

// TestCrossSiteRequestsAreRefused: a browser page on another origin cannot
// make the VNFM act, whatever the method or media type; the VNFM's own
// origin and configured ones can.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	e := newEnv(t, 100, false)
	create := `{"vnfdId":"` + lcmtest.VnfdID + `"}`
	for _, hdr := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "null"},
		{"Origin", strings.Replace(e.srv.URL, "127.0.0.1", "localhost", 1)},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
	} {
		r := e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", create, hdr...), http.StatusForbidden)
		if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "VNFM_ALLOWED_ORIGINS") {
			t.Fatalf("%v: detail %q", hdr, d)
		}
	}
	// Reads with a foreign Origin are refused too.
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", "", "Origin", "http://evil.example"), http.StatusForbidden)
	if n := len(e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", ""), 200).list(t)); n != 0 {
		t.Fatalf("refused requests created %d instances", n)
	}
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", create, "Origin", e.srv.URL), 201)
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", create, "Sec-Fetch-Site", "same-origin"), 201)

	// A configured front end is allowed.
	e2 := newEnvWith(t, 100, false, func(c *api.Config) { c.AllowedOrigins = []string{"https://ui.example:8443"} })
	e2.expect(e2.do("POST", "/vnflcm/v1/vnf_instances", create, "Origin", "https://ui.example:8443"), 201)
	e2.expect(e2.do("POST", "/vnflcm/v1/vnf_instances", create, "Origin", "https://ui.example"), http.StatusForbidden)
}

// TestRawSemicolonFilterFilters is the issue 14 reproduction: the SOL013
// filter with a raw ';' (as curl sends it) returned every op occurrence.
func TestRawSemicolonFilterFilters(t *testing.T) {
	e := newEnv(t, 100, true)
	a, b := e.createInstance("a"), e.createInstance("b")
	r := e.expect(e.do("POST", "/vnflcm/v1/vnf_instances/"+a+"/instantiate", instBody), 202)
	instOp := r.Header.Get("Location")
	e.waitOp(instOp, "COMPLETED")
	r = e.expect(e.do("PATCH", "/vnflcm/v1/vnf_instances/"+b, `{"vnfInstanceName":"b2"}`, "Content-Type", "application/merge-patch+json"), 202)
	e.waitOp(r.Header.Get("Location"), "COMPLETED")
	wantID := instOp[strings.LastIndex(instOp, "/")+1:]

	for _, q := range []string{
		"filter=(eq,operation,INSTANTIATE);(eq,operationState,COMPLETED)",   // raw, as curl sends it
		"filter=(eq,operation,INSTANTIATE)%3B(eq,operationState,COMPLETED)", // encoded
		"filter=" + url.QueryEscape("(eq,operation,INSTANTIATE);(eq,operationState,COMPLETED)"),
		"exclude_default&filter=(eq,operation,INSTANTIATE);(eq,operationState,COMPLETED)",
	} {
		list := e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?"+q, ""), 200).list(t)
		if len(list) != 1 || list[0]["id"] != wantID {
			t.Fatalf("?%s returned %d op occurrences, want only %s: %v", q, len(list), wantID, list)
		}
	}
	if n := len(e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs", ""), 200).list(t)); n != 2 {
		t.Fatalf("unfiltered: %d op occurrences, want 2", n)
	}
	// A raw ';' in another parameter is not dropped either: it is read, and refused if wrong.
	e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?fields=operationParams;error", ""), 400)
	e.expect(e.do("GET", "/vnflcm/v1/vnf_instances/"+a+"?x;y", ""), 400)
	// A query that cannot be parsed is 400, never ignored.
	for _, q := range []string{"filter=(eq,id,%zz)", "filter%ZZ=(eq,id,1)", "fields=%", "exclude_fields=%g1"} {
		r := e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?"+q, ""), 400)
		if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "percent-encoding") {
			t.Fatalf("?%s: detail %q", q, d)
		}
	}
}

// TestDateTimeFilterMatchesTheAPIsOwnOutput: a stateEnteredTime copied from
// the API matches its op occurrence, whatever its fractional digits.
func TestDateTimeFilterMatchesTheAPIsOwnOutput(t *testing.T) {
	e := newEnv(t, 100, true)
	a := e.createInstance("dt")
	r := e.expect(e.do("POST", "/vnflcm/v1/vnf_instances/"+a+"/instantiate", instBody), 202)
	op := e.waitOp(r.Header.Get("Location"), "COMPLETED")
	for _, attr := range []string{"stateEnteredTime", "startTime"} {
		ts, _ := op[attr].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("%s %q: %v", attr, ts, err)
		}
		for _, v := range []string{
			ts, // as the API wrote it
			at.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),             // six digits, as the database view writes it
			at.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339Nano), // another offset
		} {
			q := "filter=" + url.QueryEscape("(eq,"+attr+","+v+")")
			list := e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?"+q, ""), 200).list(t)
			if len(list) != 1 || list[0]["id"] != op["id"] {
				t.Fatalf("(eq,%s,%s): %d op occurrences, want %v", attr, v, len(list), op["id"])
			}
		}
		before := at.Add(-time.Microsecond).Format(time.RFC3339Nano)
		if n := len(e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?filter="+url.QueryEscape("(lt,"+attr+","+before+")"), ""), 200).list(t)); n != 0 {
			t.Fatalf("(lt,%s,%s) matched %d", attr, before, n)
		}
	}
	r = e.expect(e.do("GET", "/vnflcm/v1/vnf_lcm_op_occs?filter=(eq,stateEnteredTime,today)", ""), 400)
	if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "RFC 3339") {
		t.Fatalf("detail %q", d)
	}
}

// TestExcludeSimpleAttribute is NFV-TST 010 7.3.1.1.8: exclude_fields names
// a simple attribute and the answer is 200 without it (the checker applies
// the TST010 vnfInstances schema).
func TestExcludeSimpleAttribute(t *testing.T) {
	e := newEnv(t, 100, false)
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`","vnfInstanceDescription":"d"}`), 201)
	list := e.expect(e.do("GET", "/vnflcm/v1/vnf_instances?exclude_fields=vnfInstanceDescription", ""), 200).list(t)
	if len(list) != 1 {
		t.Fatalf("%d instances", len(list))
	}
	if _, ok := list[0]["vnfInstanceDescription"]; ok {
		t.Fatal("vnfInstanceDescription was not excluded")
	}
	if _, ok := list[0]["vnfdId"]; !ok {
		t.Fatal("exclude_fields dropped another attribute")
	}
}

// TestSealedValuesFromClientsAreRefused: the engine would open a sealed
// value it finds in a request and use the secret inside it.
func TestSealedValuesFromClientsAreRefused(t *testing.T) {
	e := newEnv(t, 100, false)
	id := e.createInstance("sealed")
	for _, tc := range []struct{ method, path, body, where string }{
		{"POST", "/vnflcm/v1/vnf_instances/" + id + "/instantiate",
			`{"flavourId":"simple","additionalParams":{"node_password":"enc:v2:0011223344556677:AAAA"}}`, "/additionalParams/node_password"},
		{"POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"` + lcmtest.VnfdID + `","metadata":{"x":["a","enc:v1:QUJD"]}}`, "/metadata/x/1"},
		{"POST", "/v1.0/vims", `{"vim":{"auth_cred":{"password":"enc:v2:abc:def"}}}`, "/vim/auth_cred/password"},
	} {
		r := e.expect(e.do(tc.method, tc.path, tc.body), 400)
		if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, tc.where) || !strings.Contains(d, "sealed") {
			t.Fatalf("%s %s: detail %q does not name %s", tc.method, tc.path, d, tc.where)
		}
	}
}

// TestNULInRequestsIsRefused: PostgreSQL stores no U+0000 in text or jsonb,
// so a body holding one (in a string or a member name) is refused with 400
// naming where, before anything is created — not a 500 from the database.
func TestNULInRequestsIsRefused(t *testing.T) {
	e := newEnv(t, 100, false)
	id := e.createInstance("nul")
	for _, tc := range []struct{ method, path, body, where string }{
		{"POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"` + lcmtest.VnfdID + `","vnfInstanceName":"a\u0000b"}`, "/vnfInstanceName"},
		{"POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"` + lcmtest.VnfdID + `","metadata":{"x/y\u0000":1}}`, `/metadata/x~1y\u0000`},
		{"PATCH", "/vnflcm/v1/vnf_instances/" + id, `{"\u0000":"\u0000"}`, `/\u0000`},
		{"POST", "/vnflcm/v1/vnf_instances/" + id + "/instantiate", `{"flavourId":"simple","additionalParams":{"k":["ok","\u0000"]}}`, "/additionalParams/k/1"},
	} {
		hdr := []string{}
		if tc.method == "PATCH" {
			hdr = []string{"Content-Type", "application/merge-patch+json"}
		}
		r := e.expect(e.do(tc.method, tc.path, tc.body, hdr...), 400)
		if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, tc.where) || !strings.Contains(d, "U+0000") {
			t.Fatalf("%s %s: detail %q does not name %s", tc.method, tc.path, d, tc.where)
		}
	}
	if n := len(e.expect(e.do("GET", "/vnflcm/v1/vnf_instances", ""), 200).list(t)); n != 1 {
		t.Fatalf("%d instances after refused requests, want the 1 created first", n)
	}
	// An escaped backslash before u0000 is no NUL: served as usual.
	e.expect(e.do("POST", "/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`","vnfInstanceName":"a\\u0000b"}`), 201)
}

// TestSlowBodiesAreCutOff: a JSON body that does not arrive within
// BodyTimeout is answered 408 and the connection closed; a package upload
// that stalls is cut off the same way.
func TestSlowBodiesAreCutOff(t *testing.T) {
	e := newEnvWith(t, 100, false, func(c *api.Config) { c.BodyTimeout = 500 * time.Millisecond })
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for _, head := range []string{
		"POST /vnflcm/v1/vnf_instances HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"vnfdId\":",
		"POST /vnflcm/v1/subscriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"cal\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("connection not closed: %v after %s; got %q", err, time.Since(start), b)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("closed after %s", took)
		}
		if !strings.HasPrefix(string(b), "HTTP/1.1 408") || !strings.Contains(string(b), "VNFM_BODY_TIMEOUT") {
			t.Fatalf("answer %q", b)
		}
	}
}

// TestDNSRebindingIsRefused: without authentication, a request naming
// another host than the VNFM's (a rebound name) is refused, reads included;
// IP addresses, localhost and the endpoint's host are served.
func TestDNSRebindingIsRefused(t *testing.T) {
	e := newEnv(t, 100, false)
	get := func(host string) int {
		req, _ := http.NewRequest("GET", e.srv.URL+"/vnflcm/v1/vnf_instances", nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusForbidden && !strings.Contains(string(b), "VNFM_ENDPOINT_URL") {
			t.Fatalf("403 without the reason: %s", b)
		}
		return res.StatusCode
	}
	port := e.srv.URL[strings.LastIndex(e.srv.URL, ":"):]
	for host, want := range map[string]int{
		"evil.example" + port: http.StatusForbidden, "rebind.attacker.test": http.StatusForbidden,
		"127.0.0.1" + port: http.StatusOK, "localhost" + port: http.StatusOK, "[::1]" + port: http.StatusOK, "10.1.2.3": http.StatusOK,
	} {
		if got := get(host); got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}
