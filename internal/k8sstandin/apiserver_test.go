package k8sstandin

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type apiFixture struct {
	t      *testing.T
	srv    *APIServer
	url    string
	ca     *CA
	caPEM  []byte
	admin  *Client
	anon   *Client
	now    time.Time
	closer func()
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	ca, err := NewCA("kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewMemStore("")
	if err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{t: t, ca: ca, caPEM: CertPEM(ca.Cert), now: time.Now()}
	f.srv = &APIServer{Store: store, ClientCA: ca.Cert, Signer: ca, SAKey: saKey, SAPub: saKey.Public(),
		AdvertiseAddress: "127.0.0.1:6443", Now: func() time.Time { return f.now }}
	if err := f.srv.EnsureDefaults(context.Background()); err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.Issue(CertSpec{CN: "kube-apiserver", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	hs := httptest.NewUnstartedServer(f.srv)
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	f.url = hs.URL
	adminCert, adminKey, err := ca.Issue(CertSpec{CN: "kubernetes-admin", Orgs: []string{"system:masters"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := KeyPEM(adminKey)
	f.admin = f.client(ClientConfig{CertPEM: CertPEM(adminCert), KeyPEM: kp})
	f.anon = f.client(ClientConfig{})
	return f
}

func (f *apiFixture) client(cfg ClientConfig) *Client {
	cfg.Server, cfg.CAPEM = f.url, f.caPEM
	c, err := NewClient(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func statusOf(t *testing.T, err error) *StatusError {
	t.Helper()
	se, ok := err.(*StatusError)
	if !ok {
		t.Fatalf("want a Status error, got %v", err)
	}
	if se.Status["kind"] != "Status" || se.Status["apiVersion"] != "v1" || se.Status["status"] != "Failure" {
		t.Fatalf("not a Kubernetes Status object: %v", se.Status)
	}
	return se
}

func TestAPIObjectsAndErrors(t *testing.T) {
	f := newAPIFixture(t)
	ctx := context.Background()
	var v Obj
	if err := f.anon.Do(ctx, http.MethodGet, "/version", nil, &v); err != nil || v["gitVersion"] != KubernetesVersion {
		t.Fatalf("/version: %v %v", v, err)
	}
	var healthz []byte
	if err := f.anon.Do(ctx, http.MethodGet, "/healthz", nil, &healthz); err != nil || string(healthz) != "ok" {
		t.Fatalf("/healthz: %q %v", healthz, err)
	}
	if err := f.admin.Do(ctx, http.MethodGet, "/api", nil, &v); err != nil || v["kind"] != "APIVersions" {
		t.Fatalf("/api: %v %v", v, err)
	}
	// Anonymous users are forbidden, like with Kubernetes' default RBAC.
	_, err := f.anon.List(ctx, resNodes, "", "", "")
	if se := statusOf(t, err); se.Code != 403 || se.Reason != "Forbidden" ||
		!strings.Contains(se.Msg, `nodes is forbidden: User "system:anonymous" cannot list resource "nodes"`) {
		t.Fatalf("anonymous list: %+v", se)
	}
	bad := f.client(ClientConfig{Token: "nope"})
	if se := statusOf(t, func() error { _, err := bad.List(ctx, resNodes, "", "", ""); return err }()); se.Code != 401 || se.Reason != "Unauthorized" {
		t.Fatalf("bad token: %+v", se)
	}

	n, err := f.admin.Create(ctx, resNodes, "", nodeObject("w1", "10.0.0.5", false))
	if err != nil {
		t.Fatal(err)
	}
	if n["kind"] != "Node" || n["apiVersion"] != "v1" || getStr(n, "metadata", "uid") == "" || getStr(n, "metadata", "resourceVersion") == "" {
		t.Fatalf("created node: %v", n)
	}
	_, err = f.admin.Create(ctx, resNodes, "", nodeObject("w1", "10.0.0.5", false))
	if se := statusOf(t, err); se.Code != 409 || se.Reason != "AlreadyExists" || se.Msg != `nodes "w1" already exists` {
		t.Fatalf("duplicate: %+v", se)
	}
	_, err = f.admin.Get(ctx, resNodes, "", "nope")
	if se := statusOf(t, err); se.Code != 404 || se.Msg != `nodes "nope" not found` {
		t.Fatalf("missing: %+v", se)
	}
	// Cordon through a merge patch; the list has Kubernetes' shape.
	if _, err := f.admin.Patch(ctx, resNodes, "", "w1", Obj{"spec": Obj{"unschedulable": true}}); err != nil {
		t.Fatal(err)
	}
	var list Obj
	if err := f.admin.Do(ctx, http.MethodGet, "/api/v1/nodes", nil, &list); err != nil {
		t.Fatal(err)
	}
	items := getSlice(list, "items")
	if list["kind"] != "NodeList" || list["apiVersion"] != "v1" || len(items) != 1 || !getBool(items[0].(map[string]any), "spec", "unschedulable") {
		t.Fatalf("node list: %v", list)
	}
	// The DaemonSet controller put a kube-proxy pod on the node.
	pods, err := f.admin.List(ctx, resPods, "", "spec.nodeName=w1", "")
	if err != nil || len(pods) != 1 || controllerOf(pods[0]) != "DaemonSet" {
		t.Fatalf("pods on w1: %v %v", pods, err)
	}
	// A stale revision conflicts.
	stale := deepCopy(n)
	ensureMap(stale, "metadata")["labels"] = Obj{"x": "y"}
	err = f.admin.Do(ctx, http.MethodPut, "/api/v1/nodes/w1", stale, nil)
	if se := statusOf(t, err); se.Code != 409 || se.Reason != "Conflict" {
		t.Fatalf("stale update: %+v", se)
	}
	// Namespaced objects need their namespace.
	_, err = f.admin.Create(ctx, resSecrets, "nope", Obj{"metadata": Obj{"name": "s"}})
	if se := statusOf(t, err); se.Code != 404 || se.Msg != `namespaces "nope" not found` {
		t.Fatalf("secret in missing namespace: %+v", se)
	}
	// Deleting a node collects its pods.
	if err := f.admin.Delete(ctx, resNodes, "", "w1"); err != nil {
		t.Fatal(err)
	}
	if pods, _ := f.admin.List(ctx, resPods, "", "spec.nodeName=w1", ""); len(pods) != 0 {
		t.Fatalf("pods of a deleted node: %v", pods)
	}
	// Node heartbeats: a node silent for longer than the grace period reads NotReady.
	if _, err := f.admin.Create(ctx, resNodes, "", nodeObject("w2", "10.0.0.6", false)); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	n, _ = f.admin.Get(ctx, resNodes, "", "w2")
	if nodeStatus(n) != "NotReady" {
		t.Fatalf("silent node is %s", nodeStatus(n))
	}
}

func TestServiceAccountTokenSecret(t *testing.T) {
	f := newAPIFixture(t)
	ctx := context.Background()
	// The Secret first, then its ServiceAccount: the token controller fills it.
	sec, err := f.admin.Create(ctx, resSecrets, "kube-system", Obj{"type": "kubernetes.io/service-account-token",
		"metadata": Obj{"name": "vim-token", "annotations": Obj{"kubernetes.io/service-account.name": "vim"}}})
	if err != nil {
		t.Fatal(err)
	}
	if getStr(sec, "data", "token") != "" {
		t.Fatal("token filled before the service account exists")
	}
	if _, err := f.admin.Create(ctx, resServiceAccounts, "kube-system", Obj{"metadata": Obj{"name": "vim"}}); err != nil {
		t.Fatal(err)
	}
	sec, err = f.admin.Get(ctx, resSecrets, "kube-system", "vim-token")
	if err != nil {
		t.Fatal(err)
	}
	tok := secretData(sec, "token")
	if tok == "" || secretData(sec, "ca.crt") != string(f.caPEM) || secretData(sec, "namespace") != "kube-system" {
		t.Fatalf("token secret: %v", sec)
	}
	sa := f.client(ClientConfig{Token: tok})
	_, err = sa.List(ctx, resNodes, "", "", "")
	if se := statusOf(t, err); se.Code != 403 || !strings.Contains(se.Msg, `User "system:serviceaccount:kube-system:vim" cannot list`) {
		t.Fatalf("unbound SA: %+v", se)
	}
	if _, err := f.admin.Create(ctx, resClusterRoleBindings, "", Obj{"metadata": Obj{"name": "vim"},
		"roleRef":  Obj{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{Obj{"kind": "ServiceAccount", "name": "vim", "namespace": "kube-system"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.List(ctx, resNodes, "", "", ""); err != nil {
		t.Fatalf("cluster-admin SA: %v", err)
	}
	// A view-only binding allows reads but not writes.
	if _, err := f.admin.Create(ctx, resServiceAccounts, "default", Obj{"metadata": Obj{"name": "ro"}}); err != nil {
		t.Fatal(err)
	}
	var tr Obj
	if err := f.admin.Do(ctx, http.MethodPost, "/api/v1/namespaces/default/serviceaccounts/ro/token", Obj{"spec": Obj{"expirationSeconds": 3600}}, &tr); err != nil {
		t.Fatal(err)
	}
	ro := f.client(ClientConfig{Token: getStr(tr, "status", "token")})
	if _, err := f.admin.Create(ctx, resRoleBindings, "default", Obj{"metadata": Obj{"name": "ro"},
		"roleRef":  Obj{"kind": "ClusterRole", "name": "view"},
		"subjects": []any{Obj{"kind": "ServiceAccount", "name": "ro"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.List(ctx, resPods, "default", "", ""); err != nil {
		t.Fatalf("view SA list pods: %v", err)
	}
	if _, err := ro.Create(ctx, resPods, "default", Obj{"metadata": Obj{"name": "p"}}); statusOf(t, err).Code != 403 {
		t.Fatalf("view SA created a pod: %v", err)
	}
	// Bound tokens expire; legacy tokens die with their Secret.
	f.now = f.now.Add(2 * time.Hour)
	if _, err := ro.List(ctx, resPods, "default", "", ""); statusOf(t, err).Code != 401 {
		t.Fatalf("expired bound token: %v", err)
	}
	if err := f.admin.Delete(ctx, resSecrets, "kube-system", "vim-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.List(ctx, resNodes, "", "", ""); statusOf(t, err).Code != 401 {
		t.Fatalf("token of a deleted secret: %v", err)
	}
}

func TestEvictionWithBlocker(t *testing.T) {
	f := newAPIFixture(t)
	ctx := context.Background()
	mk := func(name string, ann Obj) {
		if _, err := f.admin.Create(ctx, resPods, "default", Obj{"metadata": Obj{"name": name, "annotations": ann},
			"spec": Obj{"nodeName": "w1", "containers": []any{Obj{"name": "c"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("free", nil)
	mk("blocked", Obj{AnnotationEvictionBlocked: "true"})
	mk("slow", Obj{AnnotationTerminationSeconds: "30"})
	evict := func(name string) error {
		return f.admin.Do(ctx, http.MethodPost, "/api/v1/namespaces/default/pods/"+name+"/eviction",
			Obj{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": Obj{"name": name, "namespace": "default"}}, nil)
	}
	if err := evict("free"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.Get(ctx, resPods, "default", "free"); !IsNotFound(err) {
		t.Fatalf("evicted pod still there: %v", err)
	}
	se := statusOf(t, evict("blocked"))
	if se.Code != 429 || se.Reason != "TooManyRequests" || !strings.Contains(se.Msg, "disruption budget") {
		t.Fatalf("blocked eviction: %+v", se)
	}
	if err := evict("slow"); err != nil {
		t.Fatal(err)
	}
	p, err := f.admin.Get(ctx, resPods, "default", "slow")
	if err != nil || getStr(p, "metadata", "deletionTimestamp") == "" {
		t.Fatalf("slow pod should be terminating: %v %v", p, err)
	}
	f.now = f.now.Add(31 * time.Second)
	if _, err := f.admin.Get(ctx, resPods, "default", "slow"); !IsNotFound(err) {
		t.Fatalf("terminated pod still there: %v", err)
	}
	if _, err := f.admin.Get(ctx, resPods, "default", "blocked"); err != nil {
		t.Fatal(err)
	}
	// Field and label selectors.
	if pods, _ := f.admin.List(ctx, resPods, "", "spec.nodeName=w1,metadata.name!=x", ""); len(pods) != 1 {
		t.Fatalf("field selector: %v", pods)
	}
	if pods, _ := f.admin.List(ctx, resPods, "", "spec.nodeName=w2", ""); len(pods) != 0 {
		t.Fatalf("field selector w2: %v", pods)
	}
}

func TestBootstrapTokensDiscoveryAndCSR(t *testing.T) {
	f := newAPIFixture(t)
	ctx := context.Background()
	token := NewBootstrapToken()
	if _, err := f.admin.Create(ctx, resSecrets, "kube-system", bootstrapTokenSecret(token, time.Hour, "", f.now)); err != nil {
		t.Fatal(err)
	}
	kc := NewKubeconfig(f.url, f.caPEM, "", AuthInfo{})
	if _, err := f.admin.Create(ctx, resConfigMaps, "kube-public", Obj{"metadata": Obj{"name": "cluster-info"},
		"data": Obj{"kubeconfig": string(kc.Marshal())}}); err != nil {
		t.Fatal(err)
	}
	cm, err := f.anon.Get(ctx, resConfigMaps, "kube-public", "cluster-info")
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyClusterInfo(cm, token); err != nil {
		t.Fatal(err)
	}
	other := NewBootstrapToken()
	if err := verifyClusterInfo(cm, other); err == nil || !strings.Contains(err.Error(), "could not find a JWS signature") {
		t.Fatalf("unknown token: %v", err)
	}
	forged := strings.Split(token, ".")[0] + "." + strings.Split(other, ".")[1]
	if err := verifyClusterInfo(cm, forged); err == nil {
		t.Fatal("a wrong token secret verified")
	}
	// TLS bootstrap with the token.
	boot := f.client(ClientConfig{Token: token})
	certPEM, key, err := requestKubeletCert(ctx, boot, "w1")
	if err != nil {
		t.Fatal(err)
	}
	kp, _ := KeyPEM(key)
	node := f.client(ClientConfig{CertPEM: certPEM, KeyPEM: kp})
	if _, err := node.Create(ctx, resNodes, "", nodeObject("w1", "10.0.0.7", false)); err != nil {
		t.Fatalf("node registers itself: %v", err)
	}
	if _, err := boot.List(ctx, resSecrets, "kube-system", "", ""); statusOf(t, err).Code != 403 {
		t.Fatalf("bootstrap token lists secrets: %v", err)
	}
	// Expired tokens neither authenticate nor sign.
	f.now = f.now.Add(2 * time.Hour)
	if _, err := boot.Get(ctx, resConfigMaps, "kube-system", "kubeadm-config"); statusOf(t, err).Code != 401 {
		t.Fatalf("expired bootstrap token: %v", err)
	}
	cm, _ = f.anon.Get(ctx, resConfigMaps, "kube-public", "cluster-info")
	if err := verifyClusterInfo(cm, token); err == nil {
		t.Fatal("expired token still signs cluster-info")
	}
}

func TestCertificateKeyAndHash(t *testing.T) {
	key := NewCertificateKey()
	enc, err := encryptWithKey(key, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := decryptWithKey(key, enc); err != nil || string(b) != "secret" {
		t.Fatalf("round trip: %q %v", b, err)
	}
	if _, err := decryptWithKey(NewCertificateKey(), enc); err == nil {
		t.Fatal("decrypted with another key")
	}
	if _, err := decryptWithKey("xyz", enc); err == nil || !strings.Contains(err.Error(), "error decoding certificate key") {
		t.Fatalf("bad key: %v", err)
	}
	ca, _ := NewCA("kubernetes")
	h := CACertHash(ca.Cert)
	if !strings.HasPrefix(h, "sha256:") || len(h) != 71 {
		t.Fatalf("hash %q", h)
	}
}

func TestMemStorePersists(t *testing.T) {
	file := t.TempDir() + "/store.json"
	s, _ := NewMemStore(file)
	ctx := context.Background()
	rev, err := s.Create(ctx, "/registry/a", []byte(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/registry/a", []byte(`{"x":2}`), rev+1); err != ErrConflict {
		t.Fatalf("stale update: %v", err)
	}
	s2, err := NewMemStore(file)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := s2.Get(ctx, "/registry/a")
	if err != nil || string(kv.Value) != `{"x":1}` || kv.Rev != rev {
		t.Fatalf("reloaded: %+v %v", kv, err)
	}
}

func TestJSONPathAndArgs(t *testing.T) {
	data := Obj{"items": []any{
		Obj{"metadata": Obj{"name": "a"}, "data": Obj{"ca.crt": "X", "token": "dG9r"}},
		Obj{"metadata": Obj{"name": "b"}, "data": Obj{"token": "Zm9v"}},
	}}
	for tmpl, want := range map[string]string{
		"{.items[*].metadata.name}":                             "a b",
		"{.items[0].data.token}":                                "dG9r",
		`{.items[0].data.ca\.crt}`:                              "X",
		`{range .items[*]}{.metadata.name}{"\n"}{end}`:          "a\nb\n",
		"names: {.items[-1].metadata.name}":                     "names: b",
		`{range .items[*]}{.metadata.name}={.data.token};{end}`: "a=dG9r;b=Zm9v;",
	} {
		got, err := renderJSONPath(tmpl, data)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", tmpl, got, err, want)
		}
	}
	p, err := parseFlags([]string{"get", "secret", "s", "-n", "kube-system", "-ojsonpath={.data}", "--timeout=5s", "--force"}, kubectlSpec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.pos, " ") != "get secret s" || p.get("namespace") != "kube-system" || p.get("output") != "jsonpath={.data}" ||
		p.get("timeout") != "5s" || !p.bool("force") {
		t.Fatalf("parsed: %+v", p)
	}
	if _, err := parseFlags([]string{"--bogus"}, kubectlSpec); err == nil {
		t.Fatal("unknown flag accepted")
	}
	docs, err := decodeManifests([]byte("a: 1\nkind: ServiceAccount\n---\n{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"},{\"kind\":\"Secret\"}]}\n"))
	if err != nil || len(docs) != 3 || docs[2]["kind"] != "Secret" {
		t.Fatalf("manifests: %v %v", docs, err)
	}
	if s := base64.StdEncoding.EncodeToString([]byte("x")); s == "" {
		t.Fatal()
	}
}
