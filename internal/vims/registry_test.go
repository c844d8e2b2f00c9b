package vims

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
	"github.com/mini-vnfm/mini-vnfm/internal/vim/vimtest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

type vimWorld struct {
	t   *testing.T
	st  *store.Store
	svc *Registry
	ks  *vimtest.Keystone
	k8s *vimtest.Kubernetes
}

func newVimWorld(t *testing.T, keys ...[]byte) *vimWorld {
	t.Helper()
	st := storetest.Open(t)
	w := &vimWorld{t: t, st: st, ks: vimtest.NewKeystone(t, "nfv_user", "devstack", "nfv"), k8s: vimtest.NewKubernetes(t, "tok123")}
	w.svc = w.service(keys...)
	return w
}

func (w *vimWorld) service(keys ...[]byte) *Registry {
	w.t.Helper()
	if len(keys) == 0 {
		k, _ := secrets.ParseKey(secrets.NewKey())
		keys = [][]byte{k}
	}
	box, err := secrets.NewBox(keys[0], keys[1:]...)
	if err != nil {
		w.t.Fatal(err)
	}
	return New(Config{Store: w.st, Box: box, Logger: slog.New(slog.DiscardHandler),
		Outbound: outboundtest.Policy(200 * time.Millisecond)}) // the test's Keystone and API server are on 127.0.0.1
}

func (w *vimWorld) openstackBody(name, password string, extra string) string {
	b := `{"auth_url":"` + w.ks.URL() + `","type":"openstack","vim_project":{"name":"nfv","project_domain_name":"Default"},` +
		`"auth_cred":{"username":"nfv_user","password":"` + password + `","user_domain_name":"Default","cert_verify":"True"},` +
		`"name":"` + name + `","description":"d","is_default":false`
	if extra != "" {
		b += `,"extra":` + extra
	}
	return b + "}"
}

func (w *vimWorld) k8sBody(name, token string) string {
	ca, _ := json.Marshal(w.k8s.CAPEM())
	return `{"auth_url":"` + w.k8s.URL() + `","type":"kubernetes","vim_project":{"name":"default"},` +
		`"auth_cred":{"bearer_token":"` + token + `","ssl_ca_cert":` + string(ca) + `},"name":"` + name + `","is_default":false}`
}

func wantKind(t *testing.T, err error, kind reqerr.Kind, detail string) {
	t.Helper()
	var le *reqerr.Error
	if !errors.As(err, &le) || le.Kind != kind || !strings.Contains(le.Detail, detail) {
		t.Fatalf("err %v, want kind %d with %q", err, kind, detail)
	}
}

func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/v3"
}

func TestRegisterVim(t *testing.T) {
	ctx := context.Background()
	w := newVimWorld(t)
	v, err := w.svc.Register(ctx, []byte(w.openstackBody("os1", "devstack", "")), true)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != VimStatusActive || v.Type != "openstack" || w.ks.Tokens.Load() != 1 {
		t.Fatalf("registered %+v (tokens %d)", v, w.ks.Tokens.Load())
	}
	if regions, _ := json.Marshal(v.PlacementAttr); string(regions) != `{"regions":["RegionOne"]}` {
		t.Fatalf("placement %s", regions)
	}
	// At rest: the password sealed under the current key, identifiers in the clear.
	var cred, keyID string
	if err := w.st.Pool().QueryRow(ctx, `SELECT auth_cred::text, key_id FROM vim_auths WHERE vim_id=$1`, v.ID).Scan(&cred, &keyID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cred, "devstack") || !strings.Contains(cred, `"password": "enc:v3:`+w.svc.box.KeyID()) ||
		!strings.Contains(cred, `"username": "nfv_user"`) || keyID != w.svc.box.KeyID() {
		t.Fatalf("stored auth_cred %s key %s", cred, keyID)
	}

	k, err := w.svc.Register(ctx, []byte(w.k8sBody("k1", "tok123")), true)
	if err != nil {
		t.Fatal(err)
	}
	if k.Status != VimStatusActive || w.k8s.Calls.Load() == 0 {
		t.Fatalf("k8s %+v", k)
	}
	if regions, _ := json.Marshal(k.PlacementAttr); string(regions) != `{"regions":["default","kube-system"]}` {
		t.Fatalf("k8s placement %s", regions)
	}

	for _, tc := range []struct {
		name, body string
		verify     bool
		kind       reqerr.Kind
		want       string
	}{
		{"wrong password", w.openstackBody("os2", "nope", ""), true, KindInvalid,
			`VIM "os2" failed verification: Keystone rejected the credentials for user "nfv_user" at ` + w.ks.URL()},
		{"wrong token", w.k8sBody("k2", "nope"), true, KindInvalid, "rejected the bearer token (401 Unauthorized)"},
		{"unreachable", strings.Replace(w.openstackBody("os3", "devstack", ""), w.ks.URL(), deadURL(t), 1), true, KindInvalid, "nothing accepted the connection"},
		{"duplicate name", w.openstackBody("os1", "devstack", ""), true, KindConflict, `a VIM named "os1" already exists`},
		{"no name", `{"auth_url":"http://x/v3","vim_project":{"name":"p"},"auth_cred":{"username":"u","password":"p"}}`, false, KindInvalid, "vim.name is required"},
		{"bad type", `{"name":"x","type":"vmware","auth_url":"http://x/v3","auth_cred":{}}`, false, KindInvalid, `vim.type "vmware" is not supported`},
		{"bad auth_url", `{"name":"x","auth_url":"localhost:5000","vim_project":{"name":"p"},"auth_cred":{"username":"u","password":"p"}}`, false, KindInvalid, "is not an http(s) URL"},
		{"no auth_url", `{"name":"x","vim_project":{"name":"p"},"auth_cred":{"username":"u","password":"p"}}`, false, KindInvalid, "vim.auth_url is required"},
		{"no password", `{"name":"x","auth_url":"http://x/v3","vim_project":{"name":"p"},"auth_cred":{"username":"u"}}`, false, KindInvalid, "auth_cred.password is required"},
		{"no auth_cred", `{"name":"x","auth_url":"http://x/v3","vim_project":{"name":"p"}}`, false, KindInvalid, "vim.auth_cred is required"},
		{"k8s without credentials", `{"name":"x","type":"kubernetes","auth_url":"https://x:6443","auth_cred":{"ssl_ca_cert":"x"}}`, false, KindInvalid, "needs bearer_token"},
		{"unknown attribute", `{"name":"x","placement_attr":{}}`, false, KindInvalid, "unsupported attribute(s) placement_attr"},
		{"bad is_default", `{"name":"x","auth_url":"http://x/v3","vim_project":{"name":"p"},"auth_cred":{"username":"u","password":"p"},"is_default":"maybe"}`, false, KindInvalid, "vim.is_default must be true or false"},
		{"bad cert_verify", `{"name":"x","auth_url":"http://x/v3","vim_project":{"name":"p"},"auth_cred":{"username":"u","password":"p","cert_verify":true2}}`, false, KindInvalid, `"vim" must be a JSON object`},
		{"bad extra.verify", w.openstackBody("x", "devstack", `{"verify":"perhaps"}`), true, KindInvalid, "vim.extra.verify must be true or false"},
		// An address the outbound policy refuses: skipping the check would
		// not help (no connection is made: the policy refuses before dialling).
		{"refused auth_url", strings.Replace(w.openstackBody("os4", "devstack", ""), w.ks.URL(), "http://169.254.169.254/v3", 1), true, KindInvalid,
			`VIM "os4" failed verification: auth_url: the VNFM's outbound-URL policy refuses 169.254.169.254: it is a link-local address (cloud metadata services live there) (the VNFM would refuse every call to this VIM, verified or not: register it by an address the policy allows)`},
		{"refused auth_url, offline", strings.Replace(w.openstackBody("os5", "devstack", ""), w.ks.URL(), "http://169.254.169.254/v3", 1), false, KindInvalid,
			`VIM "os5": auth_url: the VNFM's outbound-URL policy refuses 169.254.169.254: it is a link-local address (cloud metadata services live there) (the VNFM would refuse every call to this VIM, verified or not: register it by an address the policy allows)`},
		{"refused oidc_token_url, offline", `{"name":"k3","type":"kubernetes","auth_url":"https://127.0.0.1:6443","vim_project":{"name":"default"},` +
			`"auth_cred":{"oidc_token_url":"http://169.254.169.254/token","username":"alice","password":"nope","client_id":"vnfm"}}`, false, KindInvalid,
			`VIM "k3": auth_cred.oidc_token_url: the VNFM's outbound-URL policy refuses 169.254.169.254: it is a link-local address (cloud metadata services live there) (the VNFM would refuse every call to this VIM, verified or not: register it by an address the policy allows)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.svc.Register(ctx, []byte(tc.body), tc.verify)
			wantKind(t, err, tc.kind, tc.want)
			if strings.Contains(err.Error(), "devstack") || strings.Contains(err.Error(), "nope") {
				t.Fatalf("error leaks a credential: %v", err)
			}
		})
	}
	if n, _ := w.st.ListVims(ctx, store.VimFilter{}); len(n) != 2 {
		t.Fatalf("failed registrations left rows: %d VIMs", len(n))
	}

	// Offline registration: verification skipped by extra.verify or by the caller.
	for _, tc := range []struct {
		name, body string
		verify     bool
	}{
		{"extra.verify false", strings.Replace(w.openstackBody("off1", "devstack", `{"verify":"False","site":"lab"}`), w.ks.URL(), deadURL(t), 1), true},
		{"caller verify=false", strings.Replace(w.openstackBody("off2", "devstack", ""), w.ks.URL(), deadURL(t), 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := w.svc.Register(ctx, []byte(tc.body), tc.verify)
			if err != nil {
				t.Fatal(err)
			}
			if v.Status != VimStatusUnverified {
				t.Fatalf("status %s", v.Status)
			}
			if _, ok := v.Extra["verify"]; ok {
				t.Fatalf("the verify flag was stored: %v", v.Extra)
			}
		})
	}
}

func TestUpdateAndDeleteVim(t *testing.T) {
	ctx := context.Background()
	w := newVimWorld(t)
	v, err := w.svc.Register(ctx, []byte(w.openstackBody("os1", "devstack", "")), true)
	if err != nil {
		t.Fatal(err)
	}
	tokens := w.ks.Tokens.Load()

	// Name, description, default: no verification.
	u, err := w.svc.Update(ctx, v.ID, []byte(`{"name":"os1b","description":"new","is_default":true}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "os1b" || u.Description != "new" || !u.IsDefault || w.ks.Tokens.Load() != tokens {
		t.Fatalf("updated %+v", u)
	}
	// The CLI's vim set --config-file: full auth_cred; a masked or empty
	// password keeps the stored one, and the access data is verified again.
	u, err = w.svc.Update(ctx, v.ID, []byte(`{"vim_project":{"name":"nfv","project_domain_name":"Default"},`+
		`"auth_cred":{"username":"nfv_user","password":"******","user_domain_name":"Default","cert_verify":"True"}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if w.ks.Tokens.Load() != tokens+1 || u.Status != VimStatusActive {
		t.Fatalf("re-verification: tokens %d status %s", w.ks.Tokens.Load(), u.Status)
	}
	conn, err := w.svc.Resolve(ctx, []model.VimConnectionInfo{{ID: "c", VimID: v.ID}})
	if err != nil || conn[0].AccessInfo["password"] != "devstack" {
		t.Fatalf("password after a masked update: %v %v", conn, err)
	}
	for _, tc := range []struct {
		name, body string
		kind       reqerr.Kind
		want       string
	}{
		{"wrong new password", `{"auth_cred":{"username":"nfv_user","password":"bad","user_domain_name":"Default"}}`, KindInvalid, "Keystone rejected the credentials"},
		{"auth_url change", `{"auth_url":"http://other/v3"}`, KindInvalid, "vim.auth_url cannot change"},
		{"type change", `{"type":"kubernetes"}`, KindInvalid, "vim.type cannot change"},
		{"empty name", `{"name":""}`, KindInvalid, "vim.name must not be empty"},
		{"unknown attribute", `{"status":"x"}`, KindInvalid, "unsupported attribute(s) status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.svc.Update(ctx, v.ID, []byte(tc.body), true)
			wantKind(t, err, tc.kind, tc.want)
		})
	}
	if _, err := w.svc.Update(ctx, uuid.NewString(), []byte(`{"name":"x"}`), true); err == nil {
		t.Fatal("update of a missing VIM succeeded")
	}
	// Same auth_url and type may be repeated.
	if _, err := w.svc.Update(ctx, v.ID, []byte(`{"auth_url":"`+w.ks.URL()+`","type":"openstack"}`), true); err != nil {
		t.Fatal(err)
	}

	// Delete: 409 while an instance uses it, 404 once gone.
	inst := &model.VnfInstance{ID: uuid.NewString(), VnfdID: "d", VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1",
		VimConnectionInfo: []model.VimConnectionInfo{{ID: "c", VimID: v.ID, VimType: VimTypeOpenStack}}}
	if _, err := w.st.CreateInstance(ctx, inst); err != nil {
		t.Fatal(err)
	}
	wantKind(t, w.svc.Delete(ctx, v.ID), KindConflict, "VNF instance(s) "+inst.ID+" refer to it")
	if _, err := w.st.DeleteInstance(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.Delete(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	wantKind(t, w.svc.Delete(ctx, v.ID), KindNotFound, "VIM "+v.ID+" does not exist")
	_, err = w.svc.Get(ctx, v.ID)
	wantKind(t, err, KindNotFound, "does not exist")
}

func TestResolveVims(t *testing.T) {
	ctx := context.Background()
	w := newVimWorld(t)
	if got, err := w.svc.Resolve(ctx, nil); got != nil || err != nil {
		t.Fatalf("no VIMs, empty request: %v %v", got, err)
	}
	os1, err := w.svc.Register(ctx, []byte(strings.Replace(w.openstackBody("os1", "devstack", ""), `"is_default":false`, `"is_default":true`, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := w.svc.Register(ctx, []byte(w.k8sBody("k1", "tok123")), true)
	if err != nil {
		t.Fatal(err)
	}
	osWant := model.VimConnectionInfo{VimID: os1.ID, VimType: VimTypeOpenStack,
		InterfaceInfo: map[string]any{"endpoint": w.ks.URL()},
		AccessInfo: map[string]any{"username": "nfv_user", "password": "devstack", "userDomain": "Default", "project": "nfv",
			"projectDomain": "Default", "region": "RegionOne"}}
	withID := func(c model.VimConnectionInfo, id string) model.VimConnectionInfo { c.ID = id; return c }
	inline := model.VimConnectionInfo{ID: "x", VimType: "openstack", AccessInfo: map[string]any{"username": "a", "password": "b"}}
	for _, tc := range []struct {
		name string
		req  []model.VimConnectionInfo
		want []model.VimConnectionInfo
		err  string
	}{
		{"empty request: the default VIM", nil, []model.VimConnectionInfo{withID(osWant, os1.ID)}, ""},
		{"by vimId with Tacker's type name", []model.VimConnectionInfo{{ID: "vim1", VimID: os1.ID, VimType: "openstack"}}, []model.VimConnectionInfo{withID(osWant, "vim1")}, ""},
		{"by vimId, region from the request", []model.VimConnectionInfo{{ID: "vim1", VimID: os1.ID, AccessInfo: map[string]any{"region": "RegionTwo"}}},
			func() []model.VimConnectionInfo {
				c := withID(osWant, "vim1")
				c.AccessInfo = map[string]any{"username": "nfv_user", "password": "devstack", "userDomain": "Default", "project": "nfv", "projectDomain": "Default", "region": "RegionTwo"}
				return []model.VimConnectionInfo{c}
			}(), ""},
		{"kubernetes by vimId", []model.VimConnectionInfo{{ID: "k", VimID: k1.ID, VimType: "ETSINFV.KUBERNETES.V_1"}},
			[]model.VimConnectionInfo{{ID: "k", VimID: k1.ID, VimType: VimTypeKubernetes,
				InterfaceInfo: map[string]any{"endpoint": w.k8s.URL(), "ssl_ca_cert": w.k8s.CAPEM()},
				AccessInfo:    map[string]any{"bearer_token": "tok123"}, Extra: map[string]any{"namespace": "default"}}}, ""},
		{"inline accessInfo passes through", []model.VimConnectionInfo{inline},
			[]model.VimConnectionInfo{{ID: "x", VimType: VimTypeOpenStack, AccessInfo: inline.AccessInfo}}, ""},
		{"no vimId, no accessInfo: the default VIM of that type", []model.VimConnectionInfo{{ID: "d", VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3"}},
			[]model.VimConnectionInfo{withID(osWant, "d")}, ""},
		{"no vimId, another type: unchanged", []model.VimConnectionInfo{{ID: "f", VimType: "ETSINFV.FAKE.V_1"}},
			[]model.VimConnectionInfo{{ID: "f", VimType: "ETSINFV.FAKE.V_1"}}, ""},
		{"unknown vimId", []model.VimConnectionInfo{{ID: "v", VimID: "00000000-0000-0000-0000-000000000001"}}, nil,
			"vimConnectionInfo[0].vimId 00000000-0000-0000-0000-000000000001 is not a registered VIM"},
		{"malformed vimId", []model.VimConnectionInfo{{ID: "v", VimID: "vim-a"}}, nil, "vimId vim-a is not a registered VIM"},
		{"type mismatch", []model.VimConnectionInfo{{ID: "v", VimID: k1.ID, VimType: "openstack"}}, nil, `vimType "openstack" does not match VIM k1`},
		{"by vimId, the registered endpoint and a stricter TLS repeated", []model.VimConnectionInfo{{ID: "vim1", VimID: os1.ID,
			InterfaceInfo: map[string]any{"endpoint": w.ks.URL() + "/", "skipCertificateVerification": false}}},
			func() []model.VimConnectionInfo {
				c := withID(osWant, "vim1")
				c.InterfaceInfo = map[string]any{"endpoint": w.ks.URL() + "/", "skipCertificateVerification": false}
				return []model.VimConnectionInfo{c}
			}(), ""},
		// Stored credentials stay bound to their VIM (issue 14, item 1).
		{"default VIM, another endpoint", []model.VimConnectionInfo{{ID: "x", VimType: "openstack", InterfaceInfo: map[string]any{"endpoint": "http://127.0.0.1:5999/v3"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.endpoint: this entry uses the stored credentials of the default VIM os1"},
		{"by vimId, another endpoint", []model.VimConnectionInfo{{ID: "x", VimID: os1.ID, InterfaceInfo: map[string]any{"endpoint": "http://127.0.0.1:5999/v3"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.endpoint: this entry uses the stored credentials of VIM os1"},
		{"by vimId, endpoint in accessInfo", []model.VimConnectionInfo{{ID: "x", VimID: os1.ID, AccessInfo: map[string]any{"auth_url": "http://127.0.0.1:5999/v3"}}}, nil,
			"vimConnectionInfo[0].accessInfo.auth_url"},
		{"by vimId, TLS off", []model.VimConnectionInfo{{ID: "x", VimID: k1.ID, InterfaceInfo: map[string]any{"skipCertificateVerification": true}}}, nil,
			"interfaceInfo.skipCertificateVerification: this entry uses the stored credentials of VIM k1"},
		{"by vimId, cert_verify False", []model.VimConnectionInfo{{ID: "x", VimID: k1.ID, AccessInfo: map[string]any{"cert_verify": "False"}}}, nil,
			"accessInfo.cert_verify"},
		{"by vimId, another CA", []model.VimConnectionInfo{{ID: "x", VimID: k1.ID, InterfaceInfo: map[string]any{"ssl_ca_cert": "-----BEGIN CERTIFICATE-----"}}}, nil,
			"cannot make the server trust another CA"},
		{"by vimId, credentials added", []model.VimConnectionInfo{{ID: "x", VimID: os1.ID, AccessInfo: map[string]any{"username": "other"}}}, nil,
			"vimConnectionInfo[0].accessInfo.username"},
		// The OpenStack driver reads identity from interfaceInfo where accessInfo lacks it (an id beats a name).
		{"by vimId, another project in interfaceInfo", []model.VimConnectionInfo{{ID: "x", VimID: os1.ID, InterfaceInfo: map[string]any{"projectId": "p-other"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.projectId: this entry uses the stored credentials of VIM os1"},
		{"default VIM, another user in interfaceInfo", []model.VimConnectionInfo{{ID: "x", VimType: "openstack", InterfaceInfo: map[string]any{"user_id": "u-other"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.user_id"},
		// Own credentials go where the client says, through the outbound-URL policy.
		{"own credentials, metadata endpoint", []model.VimConnectionInfo{{ID: "x", VimType: "openstack", InterfaceInfo: map[string]any{"endpoint": "http://169.254.169.254/v3"},
			AccessInfo: map[string]any{"username": "a", "password": "b"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.endpoint: the VNFM's outbound-URL policy refuses 169.254.169.254"},
		{"own credentials, auth_url in accessInfo", []model.VimConnectionInfo{{ID: "x", VimType: "openstack",
			AccessInfo: map[string]any{"username": "a", "password": "b", "auth_url": "http://[fd00:ec2::254]/v3"}}}, nil,
			"vimConnectionInfo[0].accessInfo.auth_url: the VNFM's outbound-URL policy"},
		{"own credentials, OIDC token URL at a metadata address", []model.VimConnectionInfo{{ID: "x", VimType: "kubernetes", InterfaceInfo: map[string]any{"endpoint": "https://127.0.0.1:6443"},
			AccessInfo: map[string]any{"oidc_token_url": "http://100.100.100.200/token", "username": "a", "password": "b", "client_id": "c"}}}, nil,
			"vimConnectionInfo[0].accessInfo.oidc_token_url: the VNFM's outbound-URL policy refuses 100.100.100.200"},
		{"own credentials, endpoint on loopback (allowed in this test)", []model.VimConnectionInfo{{ID: "x", VimType: "openstack",
			InterfaceInfo: map[string]any{"endpoint": "http://127.0.0.1:5999/v3"}, AccessInfo: map[string]any{"username": "a", "password": "b"}}},
			[]model.VimConnectionInfo{{ID: "x", VimType: VimTypeOpenStack, InterfaceInfo: map[string]any{"endpoint": "http://127.0.0.1:5999/v3"},
				AccessInfo: map[string]any{"username": "a", "password": "b"}}}, ""},
		{"by vimId, a Kubernetes token in interfaceInfo", []model.VimConnectionInfo{{ID: "x", VimID: k1.ID, InterfaceInfo: map[string]any{"bearer_token": "t"}}}, nil,
			"vimConnectionInfo[0].interfaceInfo.bearer_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.svc.Resolve(ctx, tc.req)
			if tc.err != "" {
				kind := KindInvalid
				if strings.Contains(tc.err, "Info.") || strings.Contains(tc.err, "another CA") {
					kind = KindUnprocessable
				}
				wantKind(t, err, kind, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			x, _ := json.Marshal(tc.want)
			if string(g) != string(x) {
				t.Fatalf("got  %s\nwant %s", g, x)
			}
		})
	}
}

func TestKubernetesVimForDrivers(t *testing.T) {
	ctx := context.Background()
	w := newVimWorld(t)
	ca := w.k8s.CAPEM()
	k := driverapi.KubernetesVim{Name: "kubernetes_vim_x", AuthURL: w.k8s.URL(), BearerToken: "tok123", SSLCACert: ca, Verify: true}
	v1, err := w.svc.registerKubernetes(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	// Again (a retried instantiate_end), with a new token: same VIM, new credentials.
	w.k8s.Token = "tok456"
	k.BearerToken = "tok456"
	v2, err := w.svc.registerKubernetes(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if v2.ID != v1.ID {
		t.Fatalf("second registration made another VIM: %s %s", v1.ID, v2.ID)
	}
	conn, err := w.svc.Resolve(ctx, []model.VimConnectionInfo{{ID: "k", VimID: v1.ID}})
	if err != nil || conn[0].AccessInfo["bearer_token"] != "tok456" {
		t.Fatalf("token after re-registration: %v %v", conn, err)
	}
	// Verification applies: a token the cluster rejects is not stored.
	k.BearerToken = "stale"
	_, err = w.svc.RegisterKubernetesVim(ctx, k)
	wantKind(t, err, KindInvalid, "rejected the bearer token")
	// Same name elsewhere is a conflict.
	_, err = w.svc.RegisterKubernetesVim(ctx, driverapi.KubernetesVim{Name: "kubernetes_vim_x", AuthURL: "https://10.0.0.9:6443", BearerToken: "t"})
	wantKind(t, err, KindConflict, `a VIM named "kubernetes_vim_x" already exists`)

	owner := &model.VnfInstance{ID: uuid.NewString(), VnfdID: "d", VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1",
		VimConnectionInfo: []model.VimConnectionInfo{{ID: "k", VimID: v1.ID, VimType: VimTypeKubernetes}}}
	if _, err := w.st.CreateInstance(ctx, owner); err != nil {
		t.Fatal(err)
	}
	other := *owner
	other.ID = uuid.NewString()
	if _, err := w.st.CreateInstance(ctx, &other); err != nil {
		t.Fatal(err)
	}
	wantKind(t, w.svc.RemoveKubernetesVim(ctx, "kubernetes_vim_x", owner.ID), KindConflict, other.ID)
	if _, err := w.st.DeleteInstance(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.RemoveKubernetesVim(ctx, "kubernetes_vim_x", owner.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.RemoveKubernetesVim(ctx, "kubernetes_vim_x", owner.ID); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
}

func TestRotateVimKeys(t *testing.T) {
	ctx := context.Background()
	k1, _ := secrets.ParseKey(secrets.NewKey())
	k2, _ := secrets.ParseKey(secrets.NewKey())
	w := newVimWorld(t, k1)
	v, err := w.svc.Register(ctx, []byte(w.openstackBody("os1", "devstack", `{"helm_password":"h3lm"}`)), true)
	if err != nil {
		t.Fatal(err)
	}
	// A process with only the new key cannot use the VIM yet.
	if _, err := w.service(k2).Resolve(ctx, []model.VimConnectionInfo{{ID: "c", VimID: v.ID}}); err == nil {
		t.Fatal("opened credentials without their key")
	}
	// ... but it can still rename it: the credentials stay sealed as they are.
	if _, err := w.service(k2).Update(ctx, v.ID, []byte(`{"description":"renamed without the old key"}`), true); err != nil {
		t.Fatalf("rename without the sealing key: %v", err)
	}
	rotating := w.service(k2, k1)
	n, err := rotating.RotateKeys(ctx)
	if err != nil || n != 1 {
		t.Fatalf("rotated %d %v", n, err)
	}
	if n, err := rotating.RotateKeys(ctx); err != nil || n != 0 {
		t.Fatalf("second rotation %d %v", n, err)
	}
	onlyNew := w.service(k2)
	conn, err := onlyNew.Resolve(ctx, []model.VimConnectionInfo{{ID: "c", VimID: v.ID}})
	if err != nil || conn[0].AccessInfo["password"] != "devstack" {
		t.Fatalf("after rotation: %v %v", conn, err)
	}
	got, _ := onlyNew.Get(ctx, v.ID)
	extra, err := onlyNew.openExtra(got.ID, got.Extra)
	if err != nil || extra["helm_password"] != "h3lm" || got.Auth.KeyID != secrets.KeyID(k2) {
		t.Fatalf("extra after rotation %v %v key %s", extra, err, got.Auth.KeyID)
	}
}
