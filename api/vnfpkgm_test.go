package api_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/api"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

// stubParse stands in for the CSAR reader: it takes the VNFD summary from
// vnfd.json inside the ZIP, or fails with the text of error.txt.
func stubParse(_ context.Context, content io.ReaderAt, size int64) (*packages.Parsed, error) {
	zr, err := zip.NewReader(content, size)
	if err != nil {
		return nil, errors.New("the package is not a ZIP file")
	}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		switch f.Name {
		case "error.txt":
			return nil, errors.New(string(b))
		case "vnfd.json":
			p := lcmtest.SamplePackage()
			if err := json.Unmarshal(b, p.Vnfd); err != nil {
				return nil, err
			}
			return &packages.Parsed{Vnfd: p.Vnfd, VnfdFiles: []string{"Definitions/vnfd.yaml"},
				SoftwareImages: []map[string]any{{"id": "VDU1", "name": "ubuntu", "provider": "c", "version": "20.04",
					"checksum": map[string]any{"algorithm": "sha-256", "hash": "aa"}, "containerFormat": "bare", "diskFormat": "qcow2",
					"createdAt": "2026-01-01T00:00:00Z", "minDisk": 0, "minRam": 0, "size": 1, "imagePath": ""}}}, nil
		}
	}
	return nil, errors.New("no vnfd.json")
}

func csar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for n, c := range files {
		w, _ := zw.Create(n)
		_, _ = w.Write([]byte(c))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type pkgEnv struct {
	*env
	pkgs *packages.Service
}

func newPkgEnv(t *testing.T) *pkgEnv {
	t.Helper()
	return newPkgEnvWith(t, nil)
}

func newPkgEnvWith(t *testing.T, adjust func(*api.Config)) *pkgEnv {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	box := storetest.NewBox(t)
	svc := lcm.NewService(lcm.Config{Store: st, Box: box, Mgmt: lcmtest.Registry(&lcmtest.Mgmt{}), Infra: lcmtest.Resolver(&lcmtest.Infra{}), Logger: log})
	pk := packages.New(packages.Config{Store: st, Box: box, Parse: stubParse, Logger: log, MaxBytes: 1 << 20, Lease: 2 * time.Second,
		Outbound: outboundtest.Policy(0)})
	t.Cleanup(pk.Wait)
	e := &env{t: t, st: st, logs: logs}
	var handler atomic.Value
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.Load().(http.Handler).ServeHTTP(w, r) }))
	t.Cleanup(e.srv.Close)
	acfg := api.Config{Service: svc, Packages: pk, EndpointURL: e.srv.URL, Logger: log, PageSize: 2}
	if adjust != nil {
		adjust(&acfg)
	}
	h, err := api.New(ctx, acfg)
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(h)
	return &pkgEnv{env: e, pkgs: pk}
}

func (e *pkgEnv) raw(method, path string, body []byte, hdr ...string) resp {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return resp{res, b}
}

func (e *pkgEnv) waitOnboarding(id string, states ...string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		doc := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 200).json(e.t)
		for _, s := range states {
			if doc["onboardingState"] == s && (s != "CREATED" || doc["onboardingFailureDetails"] != nil) {
				return doc
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("package %s stays %v", id, doc["onboardingState"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPackageLifecycle(t *testing.T) {
	e := newPkgEnv(t)
	r := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", []byte(`{"userDefinedData":{"key1":"val1"}}`), "Content-Type", "application/json"), 201)
	doc := r.json(t)
	id := doc["id"].(string)
	if doc["onboardingState"] != "CREATED" || doc["operationalState"] != "DISABLED" || doc["usageState"] != "NOT_IN_USE" {
		t.Fatalf("new package: %v", doc)
	}
	if r.Header.Get("Location") != e.srv.URL+"/vnfpkgm/v1/vnf_packages/"+id {
		t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", nil), 409)

	content := csar(t, map[string]string{"vnfd.json": `{"id":"9f0f5c36-0000-4000-8000-00000000a001"}`,
		"Definitions/vnfd.yaml": "tosca_definitions_version: tosca_simple_yaml_1_2\n", "Scripts/install.sh": "#!/bin/sh\necho hi\n"})
	e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", content, "Content-Type", "application/zip", "Accept", "application/zip"), 202)
	doc = e.waitOnboarding(id, "ONBOARDED")
	if doc["operationalState"] != "ENABLED" || doc["vnfdId"] != "9f0f5c36-0000-4000-8000-00000000a001" || doc["vnfProvider"] != "Company" {
		t.Fatalf("onboarded package: %v", doc)
	}
	if sum := doc["checksum"].(map[string]any); sum["algorithm"] != "SHA-256" || len(sum["hash"].(string)) != 64 {
		t.Fatalf("checksum %v", sum)
	}
	// A second upload to the same package is refused.
	e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", content, "Content-Type", "application/zip"), 409)

	dl := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", nil, "Accept", "application/zip"), 200)
	if dl.Header.Get("Content-Type") != "application/zip" || !bytes.Equal(dl.body, content) {
		t.Fatal("downloaded content differs")
	}
	rng := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", nil, "Range", "bytes=0-1"), 206)
	if string(rng.body) != "PK" {
		t.Fatalf("range: %q", rng.body)
	}
	vt := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/vnfd", nil, "Accept", "text/plain"), 200)
	if vt.Header.Get("Content-Type") != "text/plain" || !strings.HasPrefix(string(vt.body), "tosca_definitions_version") {
		t.Fatalf("vnfd text: %s %q", vt.Header.Get("Content-Type"), vt.body)
	}
	vz := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/vnfd", nil, "Accept", "application/zip"), 200)
	if zr, err := zip.NewReader(bytes.NewReader(vz.body), int64(len(vz.body))); err != nil || len(zr.File) != 1 || zr.File[0].Name != "Definitions/vnfd.yaml" {
		t.Fatalf("vnfd zip: %v", err)
	}
	art := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/artifacts/Scripts/install.sh", nil, "Accept", "application/json"), 200)
	if !strings.Contains(string(art.body), "echo hi") {
		t.Fatalf("artifact %q", art.body)
	}
	e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/artifacts/Scripts/nope.sh", nil), 404)
	e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id+"/artifacts/../../etc/passwd", nil), 404)

	// An instance makes the package IN_USE; it cannot be deleted.
	ir := e.expect(e.raw("POST", "/vnflcm/v1/vnf_instances", []byte(`{"vnfdId":"9f0f5c36-0000-4000-8000-00000000a001"}`), "Content-Type", "application/json"), 201)
	inst := ir.json(t)
	if inst["vnfPkgId"] != id || inst["vnfProductName"] != "Sample K8s" {
		t.Fatalf("instance from package: %v", inst)
	}
	if u := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 200).json(t)["usageState"]; u != "IN_USE" {
		t.Fatalf("usageState %v", u)
	}
	e.expect(e.raw("DELETE", "/vnfpkgm/v1/vnf_packages/"+id, nil), 409) // still ENABLED
	up := e.expect(e.raw("PATCH", "/vnfpkgm/v1/vnf_packages/"+id, []byte(`{"operationalState":"DISABLED","userDefinedData":{"k":"v","key1":null}}`), "Content-Type", "application/json"), 200).json(t)
	if up["operationalState"] != "DISABLED" {
		t.Fatalf("patch answer %v", up)
	}
	e.expect(e.raw("PATCH", "/vnfpkgm/v1/vnf_packages/"+id, []byte(`{"operationalState":"DISABLED"}`), "Content-Type", "application/json"), 409)
	got := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 200).json(t)
	if udd := got["userDefinedData"].(map[string]any); udd["k"] != "v" || udd["key1"] != nil {
		t.Fatalf("userDefinedData after merge patch: %v", udd)
	}
	// DISABLED: no new instances.
	e.expect(e.raw("POST", "/vnflcm/v1/vnf_instances", []byte(`{"vnfdId":"9f0f5c36-0000-4000-8000-00000000a001"}`), "Content-Type", "application/json"), 422)
	if d := e.expect(e.raw("DELETE", "/vnfpkgm/v1/vnf_packages/"+id, nil), 409).json(t)["detail"].(string); !strings.Contains(d, inst["id"].(string)) {
		t.Fatalf("delete of an IN_USE package: %s", d)
	}
	e.expect(e.raw("DELETE", "/vnflcm/v1/vnf_instances/"+inst["id"].(string), nil), 204)
	e.expect(e.raw("DELETE", "/vnfpkgm/v1/vnf_packages/"+id, nil), 204)
	e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 404)
}

func TestOnboardingFailuresAndURIUpload(t *testing.T) {
	e := newPkgEnv(t)
	newPkg := func() string {
		return e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", nil), 201).json(t)["id"].(string)
	}
	for name, c := range map[string]struct {
		body   []byte
		detail string
	}{
		"not a zip":      {[]byte("hello"), "not a ZIP"},
		"reader error":   {csar(t, map[string]string{"error.txt": "Definitions/vnfd.yaml:3: mapping values are not allowed"}), "vnfd.yaml:3"},
		"duplicate vnfd": {csar(t, map[string]string{"vnfd.json": `{"id":"` + lcmtest.VnfdID + `"}`}), "already onboarded"},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "duplicate vnfd" {
				if err := e.st.PutPackage(context.Background(), lcmtest.SamplePackage()); err != nil {
					t.Fatal(err)
				}
			}
			id := newPkg()
			e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", c.body, "Content-Type", "application/zip"), 202)
			doc := e.waitOnboarding(id, "CREATED")
			d, _ := doc["onboardingFailureDetails"].(map[string]any)["detail"].(string)
			if !strings.Contains(d, c.detail) {
				t.Fatalf("failure detail %q does not mention %q", d, c.detail)
			}
			if _, err := e.st.PackageContent(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("content of a failed onboarding kept: %v", err)
			}
		})
	}
	t.Run("upload_from_uri with basic auth", func(t *testing.T) {
		content := csar(t, map[string]string{"vnfd.json": `{"id":"9f0f5c36-0000-4000-8000-00000000b002"}`})
		src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "s3cret-pw" {
				w.WriteHeader(401)
				return
			}
			_, _ = w.Write(content)
		}))
		defer src.Close()
		id := newPkg()
		// Refused at request time, the package left as it was: what is not supported, or not SOL005.
		for body, want := range map[string]string{
			`{"addressInformation":"` + src.URL + `/p.zip","authType":"OAUTH2_CLIENT_CREDENTIALS","paramsOauth2ClientCredentials":{"clientId":"c","clientPassword":"p","tokenEndpoint":"` + src.URL + `/t"}}`: "OAuth 2.0 client credentials is not supported",
			`{"addressInformation":"` + src.URL + `/p.zip","authType":"DIGEST","userName":"u","password":"s3cret-pw"}`:                                                                                        `authType "DIGEST" is not BASIC or OAUTH2_CLIENT_CREDENTIALS`,
			`{"addressInformation":"` + src.URL + `/p.zip","username":"u","password":"s3cret-pw"}`:                                                                                                            `unsupported attribute "username" (did you mean "userName"?)`,
		} {
			r := e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content/upload_from_uri", []byte(body), "Content-Type", "application/json")
			if d, _ := r.json(t)["detail"].(string); r.StatusCode/100 != 4 || !strings.Contains(d, want) || strings.Contains(d, "s3cret-pw") {
				t.Fatalf("upload_from_uri %s: %d %q, want a refusal saying %q", body, r.StatusCode, d, want)
			}
		}
		e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content/upload_from_uri",
			[]byte(`{"addressInformation":"`+src.URL+`/p.zip","authType":"BASIC","userName":"u","password":"s3cret-pw"}`), "Content-Type", "application/json"), 202)
		e.waitOnboarding(id, "ONBOARDED")
		id2 := newPkg()
		e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+id2+"/package_content/upload_from_uri",
			[]byte(`{"addressInformation":"`+src.URL+`/p.zip","userName":"u","password":"wrong-pw"}`), "Content-Type", "application/json"), 202)
		d := e.waitOnboarding(id2, "CREATED")["onboardingFailureDetails"].(map[string]any)["detail"].(string)
		if !strings.Contains(d, "401") || strings.Contains(d, "wrong-pw") {
			t.Fatalf("failed fetch detail %q", d)
		}
		e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+id2+"/package_content/upload_from_uri", []byte(`{"addressInformation":"ftp://x"}`), "Content-Type", "application/json"), 400)
	})
	t.Run("upload_from_uri follows no redirect and no forbidden address", func(t *testing.T) {
		var hits atomic.Int32
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			_, _ = w.Write(csar(t, map[string]string{"vnfd.json": `{"id":"9f0f5c36-0000-4000-8000-00000000b003"}`}))
		}))
		defer target.Close()
		redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/p.zip", http.StatusMovedPermanently))
		defer redirect.Close()
		id := newPkg()
		e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content/upload_from_uri",
			[]byte(`{"addressInformation":"`+redirect.URL+`/p.zip"}`), "Content-Type", "application/json"), 202)
		d := e.waitOnboarding(id, "CREATED")["onboardingFailureDetails"].(map[string]any)["detail"].(string)
		if !strings.Contains(d, "redirects are not followed") || hits.Load() != 0 {
			t.Fatalf("redirect: detail %q, target hit %d times", d, hits.Load())
		}
		for _, uri := range []string{"http://169.254.169.254/latest/user-data", "http://[::ffff:169.254.169.254]/", "http://100.100.100.200/"} {
			r := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages/"+newPkg()+"/package_content/upload_from_uri",
				[]byte(`{"addressInformation":"`+uri+`"}`), "Content-Type", "application/json"), 422)
			if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, "outbound-URL policy") {
				t.Fatalf("%s: %q", uri, d)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/nope", nil), 404)
		e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages/"+newPkg()+"/package_content", []byte("x"), "Content-Type", "text/plain"), 415)
		e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages/"+newPkg()+"/package_content", bytes.Repeat([]byte("x"), 2<<20), "Content-Type", "application/zip"), 413)
		e.expect(e.raw("PATCH", "/vnfpkgm/v1/vnf_packages/"+newPkg(), []byte(`{"operationalState":"ENABLED"}`), "Content-Type", "application/json"), 409)
		e.expect(e.raw("PATCH", "/vnfpkgm/v1/vnf_packages/"+newPkg(), []byte(`{"operationalState":"ON"}`), "Content-Type", "application/json"), 400)
		e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages?filter=(eq,onboardingState,CREATED)&all_fields", nil), 200)
		e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages?bogus=1", nil), 400)
		e.expect(e.raw("PUT", "/vnfpkgm/v1/vnf_packages", nil), 405)
	})
}

func TestStaleOnboardingIsResumed(t *testing.T) {
	e := newPkgEnv(t)
	ctx := context.Background()
	id := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", nil), 201).json(t)["id"].(string)
	// A process that stored the content and died before parsing it.
	content := csar(t, map[string]string{"vnfd.json": `{"id":"9f0f5c36-0000-4000-8000-00000000c003"}`})
	if _, err := e.st.StartOnboarding(ctx, id, "dead-process", time.Millisecond,
		&store.Content{R: bytes.NewReader(content), Size: int64(len(content)), SHA256: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	e.pkgs.Sweep(ctx)
	if s := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 200).json(t)["onboardingState"]; s != "ONBOARDED" {
		t.Fatalf("after sweep: %v", s)
	}
}

// stalledUpload starts a package upload from the given local address that
// sends half its body and then nothing; the returned channel gets the
// status line the server finally answers with.
func (e *pkgEnv) stalledUpload(local string) <-chan string {
	e.t.Helper()
	id := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", nil), 201).json(e.t)["id"].(string)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	head := "PUT /vnfpkgm/v1/vnf_packages/" + id + "/package_content HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/zip\r\nContent-Length: 1000\r\n\r\nPK\x03\x04"
	if _, err := c.Write([]byte(head)); err != nil {
		e.t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		out <- strings.TrimSpace(line)
	}()
	return out
}

// TestUploadsAreLimitedAndStalledOnesCutOff: at most UploadsPerClient
// uploads per client address and Uploads in all are in progress (429
// beyond); an upload that stops sending is answered 408 after BodyTimeout,
// which frees its slot.
func TestUploadsAreLimitedAndStalledOnesCutOff(t *testing.T) {
	e := newPkgEnvWith(t, func(c *api.Config) {
		c.Uploads, c.UploadsPerClient, c.BodyTimeout = 3, 2, 1500*time.Millisecond
	})
	good := csar(t, map[string]string{"vnfd.json": `{"id":"9f0f5c36-0000-4000-8000-00000000d004"}`})
	upload := func(local string) int {
		id := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", nil), 201).json(t)["id"].(string)
		req, _ := http.NewRequest("PUT", e.srv.URL+"/vnfpkgm/v1/vnf_packages/"+id+"/package_content", bytes.NewReader(good))
		req.Header.Set("Content-Type", "application/zip")
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusTooManyRequests && (res.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "VNFM_UPLOADS")) {
			t.Fatalf("429 without Retry-After or reason: %s", b)
		}
		return res.StatusCode
	}
	a1, a2 := e.stalledUpload("127.0.0.1"), e.stalledUpload("127.0.0.1")
	time.Sleep(200 * time.Millisecond) // both hold their slots
	if got := upload("127.0.0.1"); got != http.StatusTooManyRequests {
		t.Fatalf("third upload from one client: %d, want 429", got)
	}
	b1 := e.stalledUpload("127.0.0.2")
	time.Sleep(200 * time.Millisecond)
	if got := upload("127.0.0.3"); got != http.StatusTooManyRequests {
		t.Fatalf("fourth upload in all: %d, want 429", got)
	}
	for _, ch := range []<-chan string{a1, a2, b1} {
		if line := <-ch; !strings.HasPrefix(line, "HTTP/1.1 408") {
			t.Fatalf("stalled upload answered %q, want 408", line)
		}
	}
	if got := upload("127.0.0.1"); got != http.StatusAccepted {
		t.Fatalf("upload after the stalled ones were cut off: %d, want 202", got)
	}
}

// A member SOL005 does not define is refused, not dropped: a misspelt
// userDefinedData would otherwise create a package without the data.
func TestPackageBodiesRefuseUnknownMembers(t *testing.T) {
	e := newPkgEnv(t)
	before := len(e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages", nil), 200).list(t))
	d := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", []byte(`{"userDefineData":{"k":"v"}}`), "Content-Type", "application/json"), 400).json(t)["detail"].(string)
	if want := `request body: unsupported attribute "userDefineData" (did you mean "userDefinedData"?)`; !strings.HasPrefix(d, want) || !strings.HasSuffix(d, "supported here: userDefinedData") {
		t.Fatalf("create detail %q, want it to start with %q and list userDefinedData", d, want)
	}
	if after := len(e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages", nil), 200).list(t)); after != before {
		t.Fatalf("a refused create made a package: %d packages before, %d after", before, after)
	}
	id := e.expect(e.raw("POST", "/vnfpkgm/v1/vnf_packages", []byte(`{"userDefinedData":{"k":"v"}}`), "Content-Type", "application/json"), 201).json(t)["id"].(string)
	d = e.expect(e.raw("PATCH", "/vnfpkgm/v1/vnf_packages/"+id, []byte(`{"operationalstate":"ENABLED","userDefinedData":{"k":"w"}}`), "Content-Type", "application/merge-patch+json"), 400).json(t)["detail"].(string)
	if want := `request body: unsupported attribute "operationalstate" (did you mean "operationalState"?) (not in this API: remove it or correct its name); supported here: operationalState, userDefinedData`; d != want {
		t.Fatalf("patch detail %q, want %q", d, want)
	}
	got := e.expect(e.raw("GET", "/vnfpkgm/v1/vnf_packages/"+id, nil), 200).json(t)
	if udd := got["userDefinedData"].(map[string]any); udd["k"] != "v" {
		t.Fatalf("a refused patch changed userDefinedData: %v", udd)
	}
}
