package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/plugin/pkg/client/auth/oidc" // kubectl's oidc auth provider
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/vim/vimtest"
)

// Bodies exactly as the Tacker CLI sends them (tacker-cli.md §5).
func cliOpenStackVim(authURL, name, password string, isDefault bool) string {
	def := "false"
	if isDefault {
		def = "true"
	}
	return `{"vim": {"auth_url": "` + authURL + `", "type": "openstack", "vim_project": {"name": "nfv", "project_domain_name": "Default"}, ` +
		`"auth_cred": {"username": "nfv_user", "password": "` + password + `", "user_domain_name": "Default", "cert_verify": "True"}, ` +
		`"name": "` + name + `", "description": "D", "is_default": ` + def + `}}`
}

func cliKubernetesVim(authURL, name, token, ca string) string {
	caJSON, _ := json.Marshal(ca)
	return `{"vim": {"auth_url": "` + authURL + `", "type": "kubernetes", "vim_project": {"name": "default"}, ` +
		`"auth_cred": {"bearer_token": "` + token + `", "ssl_ca_cert": ` + string(caJSON) + `}, "name": "` + name + `", "is_default": false}}`
}

func vimOf(t *testing.T, r resp) map[string]any {
	t.Helper()
	v, ok := r.json(t)["vim"].(map[string]any)
	if !ok {
		t.Fatalf(`body has no "vim" object: %s`, r.body)
	}
	return v
}

func TestVimsAPI(t *testing.T) {
	e := newEnv(t, 100, false)
	ks := vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv")
	k8s := vimtest.NewKubernetes(t, "tok-k8s-secret")

	// register (the CLI's paths end in .json and carry no Version header)
	r := e.expect(e.do("POST", "/v1.0/vims.json", cliOpenStackVim(ks.URL(), "vimA", "devstack", true)), http.StatusCreated)
	a := vimOf(t, r)
	id, _ := a["id"].(string)
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("id %q", a["id"])
	}
	cred := a["auth_cred"].(map[string]any)
	if a["name"] != "vimA" || a["type"] != "openstack" || a["is_default"] != true || a["status"] != "ACTIVE" || a["auth_url"] != ks.URL() ||
		a["description"] != "D" || cred["password"] != "******" || cred["username"] != "nfv_user" || cred["cert_verify"] != "True" {
		t.Fatalf("registered VIM %s", r.body)
	}
	if p, _ := json.Marshal(a["placement_attr"]); string(p) != `{"regions":["RegionOne"]}` {
		t.Fatalf("placement_attr %s", p)
	}
	if r.Header.Get("Location") != e.srv.URL+"/v1.0/vims/"+id {
		t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	r = e.expect(e.do("POST", "/v1.0/vims.json", cliKubernetesVim(k8s.URL(), "vimK", "tok-k8s-secret", k8s.CAPEM())), http.StatusCreated)
	k := vimOf(t, r)
	kid := k["id"].(string)
	if kc := k["auth_cred"].(map[string]any); kc["bearer_token"] != "******" || kc["ssl_ca_cert"] != k8s.CAPEM() {
		t.Fatalf("kubernetes auth_cred %v", kc)
	}

	// list with the CLI's lookups (?id=&fields=id, ?name=&fields=id)
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"all", "", []string{"vimA", "vimK"}},
		{"by id", "?id=" + kid + "&fields=id", []string{kid}},
		{"by name", "?name=vimA&fields=id", []string{id}},
		{"unknown id", "?id=" + uuid.NewString() + "&fields=id", nil},
		{"unknown name", "?name=nope&fields=id", nil},
		{"by type", "?type=kubernetes", []string{"vimK"}},
	} {
		t.Run("list "+tc.name, func(t *testing.T) {
			r := e.expect(e.do("GET", "/v1.0/vims.json"+tc.query, ""), http.StatusOK)
			var body struct {
				Vims []map[string]any `json:"vims"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil || body.Vims == nil {
				t.Fatalf(`not {"vims": [...]}: %s`, r.body)
			}
			var got []string
			for _, v := range body.Vims {
				if strings.Contains(tc.query, "fields=id") {
					if len(v) != 1 {
						t.Fatalf("fields=id returned %v", v)
					}
					got = append(got, v["id"].(string))
				} else {
					got = append(got, v["name"].(string))
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	// show, with and without .json
	for _, p := range []string{"/v1.0/vims/" + id + ".json", "/v1.0/vims/" + id} {
		if v := vimOf(t, e.expect(e.do("GET", p, ""), http.StatusOK)); v["id"] != id || v["name"] != "vimA" {
			t.Fatalf("show %s: %v", p, v)
		}
	}

	// set: name, description, default; then the default cannot be doubled
	r = e.expect(e.do("PUT", "/v1.0/vims/"+id+".json", `{"vim": {"name": "vimA2", "description": "new", "is_default": false}}`), http.StatusOK)
	if v := vimOf(t, r); v["name"] != "vimA2" || v["description"] != "new" || v["is_default"] != false {
		t.Fatalf("set: %s", r.body)
	}
	e.expect(e.do("PUT", "/v1.0/vims/"+kid+".json", `{"vim": {"is_default": true}}`), http.StatusOK)
	r = e.expect(e.do("PUT", "/v1.0/vims/"+id+".json", `{"vim": {"is_default": true}}`), http.StatusConflict)
	if d := r.json(t)["detail"].(string); !strings.Contains(d, `VIM "vimK" (`+kid+`) is already the default`) {
		t.Fatalf("double default: %s", d)
	}
	// set --config-file: new credentials are verified
	r = e.expect(e.do("PUT", "/v1.0/vims/"+id+".json", `{"vim": {"vim_project": {"name": "nfv", "project_domain_name": "Default"}, `+
		`"auth_cred": {"username": "nfv_user", "password": "wrong", "user_domain_name": "Default", "cert_verify": "True"}}}`), http.StatusBadRequest)
	if d := r.json(t)["detail"].(string); !strings.Contains(d, `Keystone rejected the credentials for user "nfv_user" at `+ks.URL()) {
		t.Fatalf("bad credentials on set: %s", d)
	}

	// errors
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"wrong password", "POST", "/v1.0/vims.json", cliOpenStackVim(ks.URL(), "vimB", "nope", false), 400, `Keystone rejected the credentials for user "nfv_user"`},
		{"wrong token", "POST", "/v1.0/vims.json", cliKubernetesVim(k8s.URL(), "vimK2", "nope", k8s.CAPEM()), 400, "rejected the bearer token"},
		{"duplicate name", "POST", "/v1.0/vims.json", cliOpenStackVim(ks.URL(), "vimA2", "devstack", false), 409, `a VIM named "vimA2" already exists`},
		{"no wrapper", "POST", "/v1.0/vims.json", `{"name": "x"}`, 400, `{"vim": {...}}`},
		{"vim not an object", "POST", "/v1.0/vims", `{"vim": []}`, 400, `"vim" must be a JSON object`},
		{"empty body", "POST", "/v1.0/vims", ``, 400, "request body is empty"},
		{"malformed JSON", "POST", "/v1.0/vims", `{"vim": {`, 400, "not valid JSON"},
		{"unknown attribute", "POST", "/v1.0/vims", `{"vim": {"name": "x", "flavor": 1}}`, 400, "unsupported attribute(s) flavor"},
		{"bad verify", "POST", "/v1.0/vims?verify=maybe", cliOpenStackVim(ks.URL(), "v", "devstack", false), 400, "verify must be true or false"},
		{"unknown query parameter", "GET", "/v1.0/vims.json?limit=3", ``, 400, "unsupported query parameter(s) limit"},
		{"show missing", "GET", "/v1.0/vims/" + uuid.NewString() + ".json", ``, 404, "does not exist"},
		{"show malformed id", "GET", "/v1.0/vims/nope.json", ``, 404, "VIM nope does not exist"},
		{"delete missing", "DELETE", "/v1.0/vims/" + uuid.NewString() + ".json", ``, 404, "does not exist"},
		{"set missing", "PUT", "/v1.0/vims/" + uuid.NewString() + ".json", `{"vim": {"name": "x"}}`, 404, "does not exist"},
		{"set auth_url", "PUT", "/v1.0/vims/" + id + ".json", `{"vim": {"auth_url": "http://elsewhere/v3"}}`, 400, "vim.auth_url cannot change"},
		{"PATCH", "PATCH", "/v1.0/vims/" + id + ".json", `{"vim": {}}`, 405, "allowed: GET, PUT, DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.expect(e.do(tc.method, tc.path, tc.body), tc.status)
			if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, tc.want) {
				t.Fatalf("detail %q, want %q", d, tc.want)
			}
		})
	}

	// offline registration: ?verify=false, or extra.verify false (the CLI's
	// YAML extra of a Kubernetes VIM)
	r = e.expect(e.do("POST", "/v1.0/vims.json?verify=false", cliOpenStackVim("http://127.0.0.1:1/v3", "offline", "devstack", false)), http.StatusCreated)
	if v := vimOf(t, r); v["status"] != "UNVERIFIED" {
		t.Fatalf("offline: %s", r.body)
	}
	body := strings.Replace(cliKubernetesVim("https://127.0.0.1:1", "offlineK", "tok-k8s-secret", k8s.CAPEM()), `"is_default": false}`,
		`"is_default": false, "extra": {"verify": "False"}}`, 1)
	r = e.expect(e.do("POST", "/v1.0/vims.json", body), http.StatusCreated)
	if v := vimOf(t, r); v["status"] != "UNVERIFIED" || len(v["extra"].(map[string]any)) != 0 {
		t.Fatalf("offline kubernetes: %s", r.body)
	}

	// delete: 409 while an instance uses the VIM, then 204
	inst := &model.VnfInstance{ID: uuid.NewString(), VnfdID: "d", VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1",
		VimConnectionInfo: []model.VimConnectionInfo{{ID: "c", VimID: id, VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3"}}}
	if _, err := e.st.CreateInstance(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	r = e.expect(e.do("DELETE", "/v1.0/vims/"+id+".json", ""), http.StatusConflict)
	if d := r.json(t)["detail"].(string); !strings.Contains(d, inst.ID) || !strings.Contains(d, "terminate and delete them") {
		t.Fatalf("delete in use: %s", d)
	}
	if _, err := e.st.DeleteInstance(context.Background(), inst.ID); err != nil {
		t.Fatal(err)
	}
	r = e.expect(e.do("DELETE", "/v1.0/vims/"+id+".json", "", "Content-Type", "application/json"), http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 with a body: %q", r.body)
	}
	e.expect(e.do("GET", "/v1.0/vims/"+id, ""), http.StatusNotFound)

	// credentials never leave the server
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.bodies {
		for _, s := range []string{"devstack", "tok-k8s-secret", "enc:v"} {
			if strings.Contains(b, s) {
				t.Fatalf("a response contains %q: %s", s, b)
			}
		}
	}
}

// TestVimKubeconfig: the owner of a Kubernetes VIM (a built cluster) gets a
// kubeconfig for it in one call — its endpoint, CA and token — from its own
// endpoint only, never cached, and every issue is logged for audit.
func TestVimKubeconfig(t *testing.T) {
	e := newEnv(t, 100, false)
	ks := vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv")
	k8s := vimtest.NewKubernetes(t, "tok-k8s-secret")
	kid := vimOf(t, e.expect(e.do("POST", "/v1.0/vims.json", cliKubernetesVim(k8s.URL(), "vimK", "tok-k8s-secret", k8s.CAPEM())), http.StatusCreated))["id"].(string)
	oid := vimOf(t, e.expect(e.do("POST", "/v1.0/vims.json", cliOpenStackVim(ks.URL(), "vimA", "devstack", false)), http.StatusCreated))["id"].(string)

	r := e.expect(e.do("GET", "/v1.0/vims/"+kid+"/kubeconfig", ""), http.StatusOK)
	if ct, cc := r.Header.Get("Content-Type"), r.Header.Get("Cache-Control"); ct != "application/yaml" || cc != "no-store" {
		t.Errorf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	cfg, err := clientcmd.Load(r.body)
	if err != nil {
		t.Fatalf("not a kubeconfig: %v\n%s", err, r.body)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != k8s.URL() || rc.BearerToken != "tok-k8s-secret" || string(rc.CAData) != k8s.CAPEM() {
		t.Errorf("kubeconfig: host %q token %q CA %q", rc.Host, rc.BearerToken, rc.CAData)
	}
	if ns, _, _ := clientcmd.NewDefaultClientConfig(*cfg, nil).Namespace(); ns != "default" {
		t.Errorf("namespace %q, want the VIM's (default)", ns)
	}
	if !strings.Contains(e.logs.String(), "audit: kubeconfig issued") || !strings.Contains(e.logs.String(), kid) {
		t.Errorf("no audit record of the issue in the log:\n%s", e.logs.String())
	}
	if strings.Contains(e.logs.String(), "tok-k8s-secret") {
		t.Errorf("the token is in the log")
	}
	// Never returned by default: the VIM itself still masks the token.
	if r := e.expect(e.do("GET", "/v1.0/vims/"+kid, ""), http.StatusOK); strings.Contains(string(r.body), "tok-k8s-secret") {
		t.Errorf("GET /v1.0/vims/{id} shows the token: %s", r.body)
	}
	// cert_verify False, as the CLI's VIM file puts it (in extra): the
	// kubeconfig skips verification too.
	body := strings.Replace(cliKubernetesVim(k8s.URL(), "vimI", "tok-k8s-secret", ""), `"is_default": false}`,
		`"is_default": false, "extra": {"cert_verify": "False"}}`, 1)
	iid := vimOf(t, e.expect(e.do("POST", "/v1.0/vims.json", body), http.StatusCreated))["id"].(string)
	icfg, err := clientcmd.Load(e.expect(e.do("GET", "/v1.0/vims/"+iid+"/kubeconfig", ""), http.StatusOK).body)
	if err != nil {
		t.Fatal(err)
	}
	if c := icfg.Clusters["vimI"]; c == nil || !c.InsecureSkipTLSVerify || len(c.CertificateAuthorityData) != 0 {
		t.Errorf("cluster of a VIM registered with extra cert_verify False: %+v", c)
	}
	e.expect(e.do("GET", "/v1.0/vims/"+oid+"/kubeconfig", ""), http.StatusConflict)
	e.expect(e.do("GET", "/v1.0/vims/"+uuid.NewString()+"/kubeconfig", ""), http.StatusNotFound)
	e.expect(e.do("GET", "/v1.0/vims/"+kid+"/kubeconfig?x=1", ""), http.StatusBadRequest)
}

// TestVimKubeconfigOIDC: an OIDC VIM's kubeconfig uses kubectl's oidc auth
// provider with an ID token got when it is issued, the issuer the token
// names and a refresh token, so client-go reaches the cluster with it and,
// once the ID token expires, refreshes it at the provider by itself. The
// password is not in it; a provider that refuses the VIM's credentials is a
// 409 saying so.
func TestVimKubeconfigOIDC(t *testing.T) {
	e := newEnv(t, 100, false)
	idp, k8s := vimtest.NewOIDCKubernetes(t, "oidc-client-secret", "oidc-password")
	ca := k8s.CAPEM() + string(idp.CAPEM)
	caJSON, _ := json.Marshal(ca)
	body := `{"vim": {"auth_url": "` + k8s.URL() + `", "type": "kubernetes", "vim_project": {"name": "default"}, "name": "vimO", ` +
		`"auth_cred": {"oidc_token_url": "` + idp.TokenURL() + `", "username": "alice", "password": "oidc-password", ` +
		`"client_id": "vnfm", "client_secret": "oidc-client-secret", "ssl_ca_cert": ` + string(caJSON) + `}}}`
	id := vimOf(t, e.expect(e.do("POST", "/v1.0/vims.json", body), http.StatusCreated))["id"].(string)

	// Tokens issued from now on expire within kubectl's 10 s margin: the
	// first request made with the kubeconfig refreshes its ID token.
	idp.SetLifetime(5 * time.Second)
	issued := idp.Issued()
	r := e.expect(e.do("GET", "/v1.0/vims/"+id+"/kubeconfig", ""), http.StatusOK)
	if strings.Contains(string(r.body), "oidc-password") {
		t.Fatalf("the kubeconfig holds the VIM's password:\n%s", r.body)
	}
	cfg, err := clientcmd.Load(r.body)
	if err != nil {
		t.Fatalf("not a kubeconfig: %v\n%s", err, r.body)
	}
	ap := cfg.AuthInfos["vimO"].AuthProvider
	if ap == nil || ap.Name != "oidc" {
		t.Fatalf("auth provider %+v, want oidc", ap)
	}
	pc := ap.Config
	caData, _ := base64.StdEncoding.DecodeString(pc["idp-certificate-authority-data"])
	if u, ok := idp.Holder(pc["id-token"]); !ok || u != "alice" || idp.Issued() != issued+1 {
		t.Errorf("id-token is not the one the provider issued to alice now (issued %d → %d)", issued, idp.Issued())
	}
	if pc["idp-issuer-url"] != idp.URL || pc["client-id"] != "vnfm" || pc["client-secret"] != "oidc-client-secret" ||
		pc["refresh-token"] == "" || string(caData) != ca {
		t.Errorf("oidc config: issuer %q client %q/%q refresh token %q CA %q", pc["idp-issuer-url"], pc["client-id"],
			pc["client-secret"], pc["refresh-token"], caData)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls := k8s.Calls.Load()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("client-go with the kubeconfig: %v", err)
	}
	if len(nss.Items) != 2 || k8s.Calls.Load() != calls+1 || idp.Refreshed() != 1 {
		t.Errorf("%d namespaces, %d API calls, %d refreshes; want 2, 1, 1", len(nss.Items), k8s.Calls.Load()-calls, idp.Refreshed())
	}
	if !strings.Contains(e.logs.String(), "audit: kubeconfig issued") {
		t.Errorf("no audit record of the issue in the log")
	}

	// The provider no longer takes the VIM's password.
	idp.AddUser("alice", "changed-password")
	r = e.expect(e.do("GET", "/v1.0/vims/"+id+"/kubeconfig", ""), http.StatusConflict)
	want := `no ID token for its kubeconfig: the OIDC provider at ` + idp.URL + ` rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_grant)`
	if d, _ := r.json(t)["detail"].(string); !strings.Contains(d, want) {
		t.Fatalf("detail %q, want %q", d, want)
	}
	for _, s := range []string{"oidc-password", "oidc-client-secret"} {
		if strings.Contains(e.logs.String(), s) {
			t.Fatalf("the log holds %q", s)
		}
	}
}
