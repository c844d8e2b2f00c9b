package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// keystoneTrap is a Keystone endpoint the test owns: it records every request
// body it receives and refuses them all.
type keystoneTrap struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newKeystoneTrap(t *testing.T) *keystoneTrap {
	k := &keystoneTrap{}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.bodies = append(k.bodies, r.Method+" "+r.URL.Path+" "+string(b))
		k.mu.Unlock()
		http.Error(w, `{"error":{"code":401,"message":"trap"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *keystoneTrap) received() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.bodies...)
}

// TestStoredVimCredentialsStayWithTheirVim reproduces issue 14, item 1: an
// instantiate whose vimConnectionInfo names no vimId (so: the default VIM) but
// another Keystone endpoint made the engine send the default VIM's stored
// user name and password there. Now the request is refused with 422 naming
// the field before any op occurrence exists, and the endpoint hears nothing.
// A request with its own accessInfo goes there with only those credentials.
func TestStoredVimCredentialsStayWithTheirVim(t *testing.T) {
	e := newOSEnv(t)
	trap := newKeystoneTrap(t)
	inst := e.createInstance()

	body := e.instantiateBody()
	body["vimConnectionInfo"] = []any{map[string]any{"id": "x", "vimType": "openstack",
		"interfaceInfo": map[string]any{"endpoint": trap.srv.URL + "/v3"}}}
	b, _ := json.Marshal(body)
	code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/instantiate", "application/json", b)
	if raw, _ := doc["_raw"].(string); code != http.StatusUnprocessableEntity || !strings.Contains(raw, "vimConnectionInfo[0].interfaceInfo.endpoint") {
		t.Fatalf("instantiate towards another endpoint with the default VIM: %d %v, want 422 naming vimConnectionInfo[0].interfaceInfo.endpoint", code, doc)
	}
	// The same through vimId.
	body["vimConnectionInfo"] = []any{map[string]any{"id": "x", "vimId": e.vimID, "vimType": "openstack",
		"interfaceInfo": map[string]any{"endpoint": trap.srv.URL + "/v3"}}}
	b, _ = json.Marshal(body)
	if code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/instantiate", "application/json", b); code != http.StatusUnprocessableEntity {
		t.Fatalf("instantiate towards another endpoint with vimId: %d %v, want 422", code, doc)
	}
	res, err := http.Get(e.vnfm.Base + "/vnflcm/v1/vnf_lcm_op_occs?filter=" + url.QueryEscape("(eq,vnfInstanceId,"+inst+")"))
	if err != nil {
		t.Fatal(err)
	}
	list, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || strings.TrimSpace(string(list)) != "[]" {
		t.Fatalf("refused requests left op occurrences: %d %s", res.StatusCode, list)
	}
	if got := trap.received(); len(got) != 0 {
		t.Fatalf("the endpoint named by refused requests was called: %q", got)
	}

	// Own credentials: the endpoint gets those and nothing stored.
	body["vimConnectionInfo"] = []any{map[string]any{"id": "x", "vimType": "openstack",
		"interfaceInfo": map[string]any{"endpoint": trap.srv.URL + "/v3"},
		"accessInfo":    map[string]any{"username": "mine", "password": "my-own-pw", "project": "p"}}}
	e.lcm(inst, "instantiate", body, "FAILED_TEMP")
	got := strings.Join(trap.received(), "\n")
	if !strings.Contains(got, "my-own-pw") {
		t.Fatalf("the request's own credentials did not reach its endpoint: %q", got)
	}
	if strings.Contains(got, "secret") || strings.Contains(got, `"admin"`) {
		t.Fatalf("the endpoint received the default VIM's stored credentials: %q", got)
	}
}
