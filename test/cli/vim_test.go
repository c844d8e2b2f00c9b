package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vim/vimtest"
)

func openstackYAML(authURL, password string) string {
	return "auth_url: '" + authURL + "'\nusername: 'nfv_user'\npassword: '" + password + "'\nproject_name: 'nfv'\n" +
		"project_domain_name: 'Default'\nuser_domain_name: 'Default'\ncert_verify: 'True'\n"
}

func kubernetesYAML(authURL, token, ca, extra string) string {
	y := "auth_url: '" + authURL + "'\nbearer_token: '" + token + "'\nproject_name: 'default'\ntype: 'kubernetes'\nssl_ca_cert: |\n"
	for _, l := range strings.Split(strings.TrimSpace(ca), "\n") {
		y += "  " + l + "\n"
	}
	return y + extra
}

// The VIM commands of the Tacker CLI, end to end: register (verified against
// a Keystone stub and a TLS Kubernetes stand-in, or offline), list, show by
// name and id, set, delete (refused while an instance uses the VIM).
func TestVimCommands(t *testing.T) {
	ks := vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv")
	k8s := vimtest.NewKubernetes(t, "tok-k8s-secret")
	requireCLI(t) // before anything else: a missing CLI fails fast
	srv := startVNFM(t)
	seedPackage(t, srv.db)
	c := newCLI(t, srv.base)

	osYAML := c.file("vim.yaml", openstackYAML(ks.URL(), "devstack"))
	a := c.object("vim", "register", "--config-file", osYAML, "--description", "lab cloud", "--is-default", "vimA", "-f", "json")
	id, _ := a["id"].(string)
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("register printed id %v: %v", a["id"], a)
	}
	cred := nested(t, a, "auth_cred")
	if a["name"] != "vimA" || a["description"] != "lab cloud" || a["is_default"] != true || a["status"] != "ACTIVE" ||
		a["type"] != "openstack" || cred["password"] != "******" || cred["username"] != "nfv_user" {
		t.Fatalf("registered: %v", a)
	}
	if ks.Tokens.Load() != 1 {
		t.Fatalf("Keystone issued %d tokens, want 1", ks.Tokens.Load())
	}

	badYAML := c.file("bad.yaml", openstackYAML(ks.URL(), "wrong"))
	c.fail(`Keystone rejected the credentials for user "nfv_user" at `+ks.URL(), "vim", "register", "--config-file", badYAML, "vimBad")
	deadYAML := c.file("dead.yaml", openstackYAML("http://127.0.0.1:9/v3", "devstack"))
	c.fail("cannot reach Keystone at http://127.0.0.1:9/v3: cannot connect to 127.0.0.1:9 (nothing accepted the connection)", "vim", "register", "--config-file", deadYAML, "vimDead")
	c.fail(`a VIM named "vimA" already exists`, "vim", "register", "--config-file", osYAML, "vimA")

	k8sYAML := c.file("k8s.yaml", kubernetesYAML(k8s.URL(), "tok-k8s-secret", k8s.CAPEM(), ""))
	k := c.object("vim", "register", "--config-file", k8sYAML, "vimK", "-f", "json")
	if kc := nested(t, k, "auth_cred"); k["status"] != "ACTIVE" || kc["bearer_token"] != "******" || !strings.Contains(kc["ssl_ca_cert"].(string), "BEGIN CERTIFICATE") {
		t.Fatalf("kubernetes VIM: %v", k)
	}
	badK8s := c.file("k8s-bad.yaml", kubernetesYAML(k8s.URL(), "stale", k8s.CAPEM(), ""))
	c.fail("rejected the bearer token (401 Unauthorized)", "vim", "register", "--config-file", badK8s, "vimK2")
	// Offline registration: extra.verify false in the YAML (the CLI passes extra for Kubernetes VIMs).
	offYAML := c.file("k8s-off.yaml", kubernetesYAML("https://127.0.0.1:9", "tok", k8s.CAPEM(), "extra:\n  verify: 'False'\n"))
	off := c.object("vim", "register", "--config-file", offYAML, "vimOffline", "-f", "json")
	if off["status"] != "UNVERIFIED" {
		t.Fatalf("offline VIM: %v", off)
	}

	rows := c.list("vim", "list", "-f", "json")
	got := map[string]map[string]any{}
	for _, r := range rows {
		got[r["Name"].(string)] = r
	}
	if len(rows) != 3 || got["vimA"]["ID"] != id || got["vimA"]["Is Default"] != true || got["vimA"]["Type"] != "openstack" ||
		got["vimA"]["Status"] != "ACTIVE" || got["vimK"]["Type"] != "kubernetes" || got["vimOffline"]["Status"] != "UNVERIFIED" {
		t.Fatalf("vim list: %v", rows)
	}

	// show by name and by id (both resolved through ?name= / ?id= list filters)
	if s := c.object("vim", "show", "vimK", "-f", "json"); s["id"] != k["id"] {
		t.Fatalf("show by name: %v", s)
	}
	if r := c.ok("vim", "show", id, "-f", "value", "-c", "name"); strings.TrimSpace(r.stdout) != "vimA" {
		t.Fatalf("show by id: %s", r)
	}
	c.fail("Unable to find vim with name 'nope'", "vim", "show", "nope")

	// set
	if s := c.object("vim", "set", "--description", "renamed lab", "--name", "vimA2", "vimA", "-f", "json"); s["description"] != "renamed lab" || s["name"] != "vimA2" {
		t.Fatalf("set: %v", s)
	}
	c.fail(`is already the default`, "vim", "set", "--is-default", "True", "vimK")
	c.fail("Keystone rejected the credentials", "vim", "set", "--config-file", badYAML, "vimA2")
	if s := c.object("vim", "set", "--config-file", osYAML, "vimA2", "-f", "json"); s["status"] != "ACTIVE" {
		t.Fatalf("set --config-file: %v", s)
	}

	// delete: refused while an instance's vimConnectionInfo names the VIM
	inst := c.object("vnflcm", "create", "--name", "uses-vimA", lcmtest.VnfdID, "-f", "json")
	instID := inst["ID"].(string)
	useVim(t, srv.db, instID, id)
	r := c.fail("Unable to delete the below vim(s)", "vim", "delete", "vimA2")
	if !strings.Contains(r.stdout+r.stderr, instID) {
		t.Fatalf("delete in use does not name the instance:\n%s", r)
	}
	c.ok("vnflcm", "delete", instID)
	if r := c.ok("vim", "delete", "vimA2", "vimOffline"); !strings.Contains(r.stdout, "All specified vim(s) deleted successfully") {
		t.Fatalf("delete: %s", r)
	}
	c.fail("Unable to find vim with name 'vimA2'", "vim", "show", "vimA2")
	if rows := c.list("vim", "list", "-f", "json"); len(rows) != 1 || rows[0]["Name"] != "vimK" {
		t.Fatalf("after delete: %v", rows)
	}

	// Credentials never reached the server log.
	for _, s := range []string{"devstack", "tok-k8s-secret"} {
		if strings.Contains(srv.Logs(), s) {
			t.Fatalf("server log contains %q", s)
		}
	}
}

// nested reads an object column: ShowOne prints auth_cred, vim_project and
// placement_attr as indented JSON text.
func nested(t *testing.T, row map[string]any, key string) map[string]any {
	t.Helper()
	switch v := row[key].(type) {
	case map[string]any:
		return v
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			t.Fatalf("%s is not JSON: %q", key, v)
		}
		return m
	}
	t.Fatalf("%s: unexpected %T in %v", key, row[key], row)
	return nil
}

// useVim makes an instance refer to a VIM, as an instantiate with vimId does.
func useVim(t *testing.T, db, instID, vimID string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	vci, _ := json.Marshal([]map[string]string{{"id": "vim1", "vimId": vimID, "vimType": "ETSINFV.OPENSTACK_KEYSTONE.V_3"}})
	if _, err := conn.Exec(ctx, `UPDATE vnf_instances SET vim_connection_info = $2 WHERE id = $1`, instID, vci); err != nil {
		t.Fatal(err)
	}
}

// seedPackage onboards the sample package directly (CLI package commands
// are exercised by the packages tests).
func seedPackage(t *testing.T, db string) {
	t.Helper()
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutPackage(context.Background(), lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
}

// TestVimRegisterOIDC: a Kubernetes VIM whose config file names an OIDC
// provider (oidc_token_url, username, password, client_id, client_secret;
// ssl_ca_cert with the cluster's CA and the provider's) is registered by
// the Tacker CLI after the server got an ID token and the API server took
// it; a wrong password is refused naming the user and client, and no secret
// is shown or logged.
func TestVimRegisterOIDC(t *testing.T) {
	idp, k8s := vimtest.NewOIDCKubernetes(t, "oidc-client-secret", "oidc-password")
	requireCLI(t)
	srv := startVNFM(t)
	c := newCLI(t, srv.base)
	yaml := func(password string) string {
		y := "auth_url: '" + k8s.URL() + "'\noidc_token_url: '" + idp.TokenURL() + "'\nusername: 'alice'\npassword: '" + password +
			"'\nclient_id: 'vnfm'\nclient_secret: 'oidc-client-secret'\nproject_name: 'default'\ntype: 'kubernetes'\nssl_ca_cert: |\n"
		for _, l := range strings.Split(strings.TrimSpace(k8s.CAPEM()+string(idp.CAPEM)), "\n") {
			y += "  " + l + "\n"
		}
		return y
	}
	v := c.object("vim", "register", "--config-file", c.file("oidc.yaml", yaml("oidc-password")), "vimO", "-f", "json")
	cred := nested(t, v, "auth_cred")
	// oidc_token_url is sealed and masked like every key naming a token.
	if v["status"] != "ACTIVE" || cred["oidc_token_url"] != "******" || cred["client_id"] != "vnfm" || cred["username"] != "alice" ||
		cred["password"] != "******" || cred["client_secret"] != "******" {
		t.Fatalf("OIDC VIM: %v", v)
	}
	if idp.Issued() != 1 || k8s.Calls.Load() == 0 {
		t.Fatalf("%d ID tokens issued, %d API calls with one; want 1 and some", idp.Issued(), k8s.Calls.Load())
	}
	c.fail(`the OIDC provider at `+idp.URL+` rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_grant)`,
		"vim", "register", "--config-file", c.file("oidc-bad.yaml", yaml("wrong-password")), "vimO2")
	for _, s := range []string{"oidc-password", "oidc-client-secret", "wrong-password"} {
		if strings.Contains(srv.Logs(), s) {
			t.Fatalf("server log contains %q", s)
		}
	}
}
