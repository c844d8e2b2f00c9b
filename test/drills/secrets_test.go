package drills

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// nfvo receives notifications for two subscriptions (HTTP Basic and OAuth
// 2.0 client credentials) and serves the OAuth token endpoint.
type nfvo struct {
	t                          *testing.T
	basicUser, basicPass       string
	clientID, clientPass, tok  string
	mu                         sync.Mutex
	received                   []string // bodies and headers, Authorization left out
	basicOK, bearerOK, tokenOK int
}

func (n *nfvo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n.mu.Lock()
	defer n.mu.Unlock()
	h := r.Header.Clone()
	auth := h.Get("Authorization")
	h.Del("Authorization")
	n.received = append(n.received, fmt.Sprintf("%s %s %v\n%s", r.Method, r.URL, h, body))
	switch r.URL.Path {
	case "/token":
		id, pw, ok := r.BasicAuth()
		if !ok || id != n.clientID || pw != n.clientPass {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		n.tokenOK++
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, n.tok)
	case "/basic":
		if auth != "Basic "+base64.StdEncoding.EncodeToString([]byte(n.basicUser+":"+n.basicPass)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		n.basicOK++
		w.WriteHeader(http.StatusNoContent)
	case "/oauth":
		if auth != "Bearer "+n.tok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		n.bearerOK++
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestSecretsNeverLeak runs a full flow with distinctive secrets — a VIM
// password, subscription credentials (Basic, OAuth 2.0 client credentials
// and the access token the NFVO issues), metadata and additionalParams
// passwords, tokens and keys, accessInfo, a PATCH, scale, heal, a failing
// operation whose driver error quotes a password, terminate — and then
// searches every API response, every log line of the VNFM process, every
// notification the NFVO received and the text of every row of every table
// (and its hex form, for bytea) for them: zero hits.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	sec := map[string]string{}
	secret := func(name string) string {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		s := "Drill" + name + hex.EncodeToString(b) // letters and digits: no escaping anywhere changes it
		sec[name] = s
		return s
	}
	vimPw, subPw, clientPw, token := secret("VimPw"), secret("SubPw"), secret("ClientPw"), secret("IssuedToken")
	metaTok, accessPw, sshPw, nodePw, keyPem := secret("MetaToken"), secret("AccessPw"), secret("SshPw"), secret("NodePw"), secret("PrivKey")
	patchPw, scaleTok, healPw, failPw, termPw := secret("PatchPw"), secret("ScaleToken"), secret("HealPw"), secret("FailPw"), secret("TermPw")

	sim, err := ossim.New(ossim.Options{Accounts: []ossim.Account{{UserName: "admin", Password: vimPw, ProjectName: "admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	simSrv := httptest.NewServer(sim)
	t.Cleanup(func() { simSrv.Close(); _ = sim.Close() })
	recv := &nfvo{t: t, basicUser: "nfvo", basicPass: subPw, clientID: "vnfm", clientPass: clientPw, tok: token}
	nfvoSrv := httptest.NewServer(recv)
	t.Cleanup(nfvoSrv.Close)

	db := pgtest.NewDB(t)
	seedPackage(t, db)
	p := startProc(t, db, newKey(), "VNFM_NOTIFY_BACKOFF_MIN=100ms", "VNFM_NOTIFY_BACKOFF_MAX=500ms")
	var responses []string
	call := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		var b []byte
		if body != nil {
			b = mustJSON(body)
		}
		hdr := []string{}
		if method == "PATCH" {
			hdr = []string{"Content-Type", "application/merge-patch+json"}
		}
		r := send(t, method, p.Base+path, b, hdr...)
		responses = append(responses, fmt.Sprintf("%s %s %d %v\n%s", method, path, r.Status, r.Header, r.Body))
		if r.Status != want {
			t.Fatalf("%s %s: %d, want %d: %.500s", method, path, r.Status, want, r.Body)
		}
		var doc map[string]any
		_ = json.Unmarshal(r.Body, &doc)
		if doc == nil {
			doc = map[string]any{}
		}
		if loc := r.Header.Get("Location"); loc != "" {
			doc["_location"] = loc[strings.LastIndex(loc, "/")+1:]
		}
		return doc
	}
	wait := func(opID string, states ...string) map[string]any {
		t.Helper()
		doc := harness.WaitOp(t, p.Base, opID, 60*time.Second, states...)
		responses = append(responses, fmt.Sprint(doc))
		return doc
	}
	task := func(inst, name string, body any, states ...string) map[string]any {
		t.Helper()
		op := call("POST", "/vnflcm/v1/vnf_instances/"+inst+"/"+name, body, http.StatusAccepted)["_location"].(string)
		return wait(op, states...)
	}

	vim := call("POST", "/v1.0/vims", map[string]any{"vim": map[string]any{"name": "sim", "type": "openstack", "auth_url": simSrv.URL + "/v3",
		"vim_project": map[string]any{"name": "admin"}, "auth_cred": map[string]any{"username": "admin", "password": vimPw, "user_domain_name": "Default"}}},
		http.StatusCreated)["vim"].(map[string]any)
	call("POST", "/vnflcm/v1/subscriptions", map[string]any{"callbackUri": nfvoSrv.URL + "/basic",
		"authentication": map[string]any{"authType": []string{"BASIC"}, "paramsBasic": map[string]any{"userName": "nfvo", "password": subPw}}}, http.StatusCreated)
	call("POST", "/vnflcm/v1/subscriptions", map[string]any{"callbackUri": nfvoSrv.URL + "/oauth",
		"authentication": map[string]any{"authType": []string{"OAUTH2_CLIENT_CREDENTIALS"}, "paramsOauth2ClientCredentials": map[string]any{
			"clientId": "vnfm", "clientPassword": clientPw, "tokenEndpoint": nfvoSrv.URL + "/token"}}}, http.StatusCreated)

	a := call("POST", "/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": lcmtest.VnfdID, "vnfInstanceName": "secret-drill",
		"metadata": map[string]any{"api_token": metaTok, "owner": "ops"}}, http.StatusCreated)["id"].(string)
	task(a, "instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": []any{map[string]any{"id": "vim1", "vimType": lcmtest.VimType, "accessInfo": map[string]any{"username": "admin", "password": accessPw}}},
		"additionalParams": map[string]any{"ssh_password": sshPw, "private_key": keyPem,
			"k8s_cluster_installation_param": map[string]any{"master_node": map[string]any{"username": "ubuntu", "password": nodePw}}}}, "COMPLETED")
	patch := call("PATCH", "/vnflcm/v1/vnf_instances/"+a, map[string]any{"metadata": map[string]any{"db_password": patchPw}}, http.StatusAccepted)
	wait(patch["_location"].(string), "COMPLETED")
	task(a, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_aspect", "additionalParams": map[string]any{"scale_token": scaleTok}}, "COMPLETED")
	task(a, "heal", map[string]any{"vnfcInstanceId": []string{"worker-0"}, "additionalParams": map[string]any{"admin_password": healPw}}, "COMPLETED")
	task(a, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_aspect"}, "COMPLETED")

	// A driver error that quotes the password (lcmtest's management driver does).
	b := call("POST", "/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": lcmtest.VnfdID}, http.StatusCreated)["id"].(string)
	failed := task(b, "instantiate", map[string]any{"flavourId": "simple",
		"vimConnectionInfo": []any{map[string]any{"id": "vim1", "vimType": lcmtest.VimType}},
		"additionalParams":  map[string]any{"password": failPw, "fake": map[string]any{"failStep": "mgmt.instantiate_end"}}}, "FAILED_TEMP")
	if detail := fmt.Sprint(failed["error"]); !strings.Contains(detail, "******") || !strings.Contains(detail, "rejected") {
		t.Fatalf("the failing op's error should quote the masked password: %s", detail)
	}
	call("POST", "/vnflcm/v1/vnf_lcm_op_occs/"+fmt.Sprint(failed["id"])+"/fail", nil, http.StatusOK)
	task(a, "terminate", map[string]any{"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 1,
		"additionalParams": map[string]any{"cleanup_password": termPw}}, "COMPLETED")

	// Read everything back.
	for _, path := range []string{"/vnflcm/v1/vnf_instances?all_fields", "/vnflcm/v1/vnf_instances/" + a, "/vnflcm/v1/vnf_instances/" + b,
		"/vnflcm/v1/vnf_lcm_op_occs?all_fields", "/vnflcm/v1/subscriptions", "/v1.0/vims", "/v1.0/vims/" + vim["id"].(string),
		"/vnfpkgm/v1/vnf_packages", "/metrics"} {
		call("GET", path, nil, http.StatusOK)
	}
	ops := send(t, "GET", p.Base+"/vnflcm/v1/vnf_lcm_op_occs", nil)
	var opList []map[string]any
	_ = json.Unmarshal(ops.Body, &opList)
	for _, op := range opList {
		call("GET", "/vnflcm/v1/vnf_lcm_op_occs/"+op["id"].(string), nil, http.StatusOK)
	}
	subs := send(t, "GET", p.Base+"/vnflcm/v1/subscriptions", nil)
	var subList []map[string]any
	_ = json.Unmarshal(subs.Body, &subList)
	for _, s := range subList {
		call("GET", "/vnflcm/v1/subscriptions/"+s["id"].(string), nil, http.StatusOK)
	}

	// Every notification delivered.
	conn := connect(t, db)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending, delivered int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE delivered_at IS NULL), count(*) FILTER (WHERE delivered_at IS NOT NULL) FROM notification_outbox`).Scan(&pending, &delivered); err != nil {
			t.Fatal(err)
		}
		if pending == 0 && delivered > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications not delivered", pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
	recv.mu.Lock()
	notifications := strings.Join(recv.received, "\n")
	basicOK, bearerOK, tokenOK := recv.basicOK, recv.bearerOK, recv.tokenOK
	recv.mu.Unlock()
	// The credentials were used, so the search below is not vacuous.
	if basicOK < 10 || bearerOK < 10 || tokenOK < 1 {
		t.Fatalf("the NFVO saw %d Basic and %d Bearer notifications and %d token requests with the right credentials", basicOK, bearerOK, tokenOK)
	}

	dump := dumpDatabase(t, conn)
	if !strings.Contains(dump, "enc:v3:") {
		t.Fatal("no sealed value in the database: the secrets did not get stored at all?")
	}
	for _, s := range []string{"******"} {
		if !strings.Contains(strings.Join(responses, "\n"), s) {
			t.Fatalf("no response shows a masked value %q", s)
		}
	}
	places := map[string]string{"API responses": strings.Join(responses, "\n"), "VNFM log": p.Logs(),
		"notifications": notifications, "database": dump}
	names := make([]string, 0, len(sec))
	for n := range sec {
		names = append(names, n)
	}
	sort.Strings(names)
	knownSeen := map[int]bool{}
	for where, text := range places {
		for _, n := range names {
			s := sec[n]
			for _, form := range []string{s, hex.EncodeToString([]byte(s)), base64.StdEncoding.EncodeToString([]byte(s))} {
				i := strings.Index(text, form)
				if i < 0 {
					continue
				}
				lo, hi := max(0, i-150), min(len(text), i+len(form)+50)
				place := where
				if where == "database" { // name the table
					if h := strings.LastIndex(text[:i], "\n== "); h >= 0 {
						place += " table " + strings.Fields(text[h+4:])[0]
					}
				}
				if k := knownLeak(place, n); k >= 0 {
					knownSeen[k] = true
					t.Logf("KNOWN LEAK, reported, not failing the drill: %s: %s", place, knownLeaks[k].bug)
					continue
				}
				t.Errorf("%s contains the %s secret: …%s…", place, n, text[lo:hi])
			}
		}
	}
	for k, l := range knownLeaks {
		if !knownSeen[k] {
			t.Errorf("the known leak of %s into %s is gone: remove it from knownLeaks (test/drills/secrets_test.go)", l.secret, l.place)
		}
	}
	t.Logf("searched %d responses, %d log bytes, %d notification bytes, %d database bytes for %d secrets",
		len(responses), len(places["VNFM log"]), len(notifications), len(dump), len(sec))
}

// knownLeaks are leaks reported to the lead and not fixed yet: logged, not
// failing, until they disappear (then the entry must go).
var knownLeaks = []struct{ place, secret, bug string }{}

func knownLeak(place, secret string) int {
	for i, l := range knownLeaks {
		if l.place == place && l.secret == secret {
			return i
		}
	}
	return -1
}

// dumpDatabase is the text of every row of every table (bytea as hex).
func dumpDatabase(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var b strings.Builder
	for _, tbl := range tables(t, conn) {
		var text *string
		q := fmt.Sprintf(`SELECT string_agg(r::text, E'\n') FROM %s r`, pgx.Identifier{tbl}.Sanitize())
		if err := conn.QueryRow(context.Background(), q).Scan(&text); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		b.WriteString("== " + tbl + "\n")
		if text != nil {
			b.WriteString(*text + "\n")
		}
	}
	return b.String()
}
