package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// The kubeadm end-to-end test: the VNFM as a separate process with the
// OpenStack and Kubernetes infra drivers and the built-in management
// drivers (server.DefaultMgmt), the simulator's servers as real SSH hosts
// with the Kubernetes stand-in installed, the kubeadm-single sample package
// onboarded over HTTP.
const (
	// kadmNetnsEnv names the network namespace the VNFM dials the hosts in.
	kadmNetnsEnv = "VNFM_E2E_KUBEADM_NETNS"
)

// roleKubeadm is the VNFM with the OpenStack and Kubernetes infra drivers
// and the built-in management drivers dialing the test hosts in their
// network namespace.
var roleKubeadm = harness.Role("kubeadm", func() int {
	return harness.Serve("e2e-kubeadm", func(ctx context.Context, cfg *config.Config) (server.Options, func(), error) {
		if err := store.MigrateUp(ctx, cfg.DatabaseURL); err != nil {
			return server.Options{}, nil, err
		}
		st, err := store.Open(ctx, cfg.DatabaseURL, slog.Default())
		if err != nil {
			return server.Options{}, nil, err
		}
		ns := testhosts.NetnsPath(os.Getenv(kadmNetnsEnv))
		mgmt := server.DefaultMgmt(server.MgmtOptions{Pins: st.HostKeyPins(),
			Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return testhosts.DialInNetns(ctx, ns, network, addr)
			}})
		d := openstack.New(driverOptions(3 * time.Minute))
		// The CNF driver reaches the built clusters' API servers in the
		// hosts' namespace too, through the one outbound-URL policy.
		cnf := kubernetes.New(kubernetes.Options{ReadyTimeout: 3 * time.Minute, PollMax: time.Second,
			Outbound: &outbound.Policy{AllowLoopback: true, AllowPrivate: true, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return testhosts.DialInNetns(ctx, ns, network, addr)
			}}})
		return server.Options{Infra: server.NewInfraResolver(d, cnf, nil), Mgmt: mgmt}, st.Close, nil
	})
})

const (
	k8sNodePassword = "Pa55-w0rd'x"
	k8sSubnet       = "10.77.61.0/24"
)

type k8sEnv struct {
	*osEnv
	hn     *testhosts.Network
	bin    string
	inject atomic.Bool // the next worker host booted fails its first kubeadm join
}

func newK8sEnv(t *testing.T, env ...string) *k8sEnv {
	t.Helper()
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "kadm", Subnet: k8sSubnet})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := k8sstandin.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &k8sEnv{hn: hn, bin: bin}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	sim, err := ossim.New(ossim.Options{Latency: 20 * time.Millisecond,
		Now: func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) },
		Networks: []ossim.NetworkSpec{{Name: "net0", ID: simNetID, CIDR: k8sSubnet, Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true}},
		Hosts: hn, HostNetwork: "net0", HostSetup: e.hostSetup})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	e.osEnv = &osEnv{t: t, sim: sim, simURL: srv.URL, db: pgtest.NewDB(t), key: secrets.NewKey()}
	e.vnfm = harness.Start(t, roleKubeadm, e.db, e.key, append([]string{kadmNetnsEnv + "=" + hn.CtlNamespace(), "VNFM_LEASE=10s"}, env...)...)
	t.Cleanup(func() {
		if logs := e.vnfm.Logs(); strings.Contains(logs, "WARNING: DATA RACE") {
			t.Errorf("the VNFM process reported a data race:\n%s", logs)
		}
		if p := os.Getenv("KUBEADM_E2E_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(e.vnfm.Logs()), 0o600)
		}
	})
	e.registerVim()
	e.onboardSample()
	return e
}

// hostSetup installs the stand-in into every booted server, and arms the
// injected join failure on one worker when asked: its kubeadm leaves a
// kubelet.conf behind and fails, like a join that died half-way.
func (e *k8sEnv) hostSetup(ctx context.Context, h *testhosts.Host) error {
	if err := k8sstandin.InstallBinary(ctx, h, e.bin); err != nil {
		return err
	}
	if strings.HasPrefix(h.Hostname, "worker") && e.inject.CompareAndSwap(true, false) {
		wrapper := `#!/bin/sh
if [ "$1" = join ] && [ ! -e /var/lib/injected-join-failure ]; then
	touch /var/lib/injected-join-failure
	mkdir -p /etc/kubernetes
	echo half-joined > /etc/kubernetes/kubelet.conf
	echo "injected failure: kubeadm join died" >&2
	exit 1
fi
exec /usr/local/bin/k8s-standin kubeadm "$@"
`
		cmd := h.Command(ctx, "sh", "-c", "cat > /usr/bin/kubeadm.new && chmod 755 /usr/bin/kubeadm.new && mv -f /usr/bin/kubeadm.new /usr/bin/kubeadm")
		cmd.Stdin = strings.NewReader(wrapper)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("inject: %v: %s", err, out)
		}
	}
	return nil
}

func (e *k8sEnv) onboardSample() {
	e.vnfdID = e.onboardCSAR(vnfpkgtest.CSAR(e.t, "kubeadm-single"))
}

func (e *k8sEnv) instantiateBody() map[string]any {
	body := e.osEnv.instantiateBody()
	node := func(role string) map[string]any {
		return map[string]any{"aspect_id": role + "_instance", "ssh_cp_name": role + "Node_CP1", "nic_cp_name": role + "Node_CP1",
			"username": "ubuntu", "password": k8sNodePassword}
	}
	master := node("master")
	master["pod_cidr"] = "10.244.0.0/16"
	master["cluster_cidr"] = "10.96.0.0/12"
	master["cluster_cp_name"] = "masterNode_CP1"
	body["additionalParams"] = map[string]any{"node_password": k8sNodePassword,
		"k8s_cluster_installation_param": map[string]any{"script_path": "Scripts/install_k8s_cluster.sh",
			"master_node": master, "worker_node": node("worker"), "join_token_ttl": "10m"}}
	return body
}

// lcmLong posts an LCM task and waits (longer than lcm) for its end.
func (e *k8sEnv) lcmLong(inst, task string, body any, want string) map[string]any {
	e.t.Helper()
	h, _ := e.post("/vnflcm/v1/vnf_instances/"+inst+"/"+task, body, http.StatusAccepted)
	return e.waitLong(harness.OpID(h.Get("Location")), want)
}

func (e *k8sEnv) waitLong(opID, want string) map[string]any {
	e.t.Helper()
	return harness.Wait{Within: e.patience(4 * time.Minute), Poll: 100 * time.Millisecond,
		Explain: func() string { return "--- VNFM log tail (no access lines):\n" + e.logTail() }}.Op(e.t, e.vnfm.Base, opID, want)
}

// logTail is the end of the VNFM's log without its HTTP access lines (the
// polling of the operation fills it otherwise).
func (e *k8sEnv) logTail() string {
	var keep []string
	for _, l := range strings.Split(e.vnfm.Logs(), "\n") {
		if !strings.Contains(l, "msg=http ") {
			keep = append(keep, l)
		}
	}
	logs := strings.Join(keep, "\n")
	if len(logs) > 20000 {
		logs = logs[len(logs)-20000:]
	}
	return logs
}

func (e *k8sEnv) opTask(opID, task string, want string) map[string]any {
	e.t.Helper()
	e.post("/vnflcm/v1/vnf_lcm_op_occs/"+opID+"/"+task, nil, http.StatusAccepted)
	return e.waitLong(opID, want)
}

// host is the test host of a VNFC's server.
func (e *k8sEnv) host(v vnfc) *testhosts.Host {
	e.t.Helper()
	h := e.sim.Host(v.Server)
	if h == nil {
		e.t.Fatalf("no test host for server %s (VNFC %s)", v.Server, v.ID)
	}
	return h
}

func (e *k8sEnv) exec(h *testhosts.Host, script string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.Exec(ctx, "sh", "-c", script)
	if err != nil {
		e.t.Fatalf("%s: %v", h.Name, err)
	}
	return out
}

// pinned runs a one-replica Deployment on node v's Kubernetes node and, with
// guard, a PodDisruptionBudget that allows it no disruption; it returns when
// the pod runs (and the budget counts it).
func (e *k8sEnv) pinned(master, v vnfc, name string, guard bool) {
	e.t.Helper()
	objs := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `","namespace":"default"},"spec":{"replicas":1,
"selector":{"matchLabels":{"app":"` + name + `"}},"template":{"metadata":{"labels":{"app":"` + name + `"}},
"spec":{"nodeSelector":{"kubernetes.io/hostname":"` + nodeNameOf(v) + `"},"containers":[{"name":"c","image":"registry.example/` + name + `:1"}]}}}}`
	if guard {
		objs += `
{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"` + name + `","namespace":"default"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"` + name + `"}}}}`
	}
	k := "kubectl --kubeconfig /etc/kubernetes/admin.conf "
	script := k + "apply -f - <<'EOF'\n" + objs + "\nEOF\n" + k + "rollout status deployment/" + name + " --timeout=40s"
	if guard {
		script += "\n" + k + "wait --for=jsonpath='{.status.currentHealthy}'=1 pdb/" + name + " --timeout=15s"
	}
	e.exec(e.host(master), script)
}

// podsOn lists the pods of namespace default bound to node v.
func (e *k8sEnv) podsOn(master, v vnfc) string {
	return strings.TrimSpace(e.exec(e.host(master), "kubectl --kubeconfig /etc/kubernetes/admin.conf get pods -n default --field-selector spec.nodeName="+nodeNameOf(v)+" -o name"))
}

func (e *k8sEnv) masterOf(vs []vnfc) vnfc {
	e.t.Helper()
	for _, v := range vs {
		if v.VduID == "masterNode" {
			return v
		}
	}
	e.t.Fatal("no master VNFC")
	return vnfc{}
}

// k8sNodes lists the cluster's nodes (name -> unschedulable) from the master.
func (e *k8sEnv) k8sNodes(master vnfc) map[string]bool {
	e.t.Helper()
	out := e.exec(e.host(master), "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o json")
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				Unschedulable bool `json:"unschedulable"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		e.t.Fatalf("nodes: %v\n%s", err, out)
	}
	m := map[string]bool{}
	for _, it := range l.Items {
		m[it.Metadata.Name] = it.Spec.Unschedulable
	}
	return m
}

func nodeNameOf(v vnfc) string { return strings.ToLower(v.ID) }

func wantNodes(vs []vnfc) []string {
	var out []string
	for _, v := range vs {
		out = append(out, nodeNameOf(v))
	}
	sort.Strings(out)
	return out
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var hostsBlockRE = regexp.MustCompile(`(?s)# BEGIN mini-VNFM Kubernetes nodes\n(.*?)# END mini-VNFM Kubernetes nodes\n`)

// hostsEntries returns the managed /etc/hosts lines of a node ("ip name"),
// sorted; nil without a managed block.
func (e *k8sEnv) hostsEntries(v vnfc) []string {
	e.t.Helper()
	m := hostsBlockRE.FindStringSubmatch(e.exec(e.host(v), "cat /etc/hosts"))
	if m == nil {
		return nil
	}
	lines := []string{}
	for _, l := range strings.Split(m[1], "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func wantHosts(vs []vnfc) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Addr+" "+nodeNameOf(v))
	}
	sort.Strings(out)
	return out
}

func (e *k8sEnv) checkHosts(vs []vnfc) {
	e.t.Helper()
	want := wantHosts(vs)
	for _, v := range vs {
		if got := e.hostsEntries(v); !slices.Equal(got, want) {
			e.t.Errorf("/etc/hosts of %s lists %q, want %q", v.ID, got, want)
		}
	}
}

// k8sVim returns the instance's kubernetes vimConnectionInfo entry.
func (e *k8sEnv) k8sVim(inst string) map[string]any {
	e.t.Helper()
	doc := e.get("/vnflcm/v1/vnf_instances/" + inst)
	list, _ := doc["vimConnectionInfo"].([]any)
	for _, x := range list {
		c := x.(map[string]any)
		if c["vimType"] == "ETSINFV.KUBERNETES.V_1" || c["vimType"] == "kubernetes" {
			return c
		}
	}
	return nil
}

// checkVimUsable reads the VIM's credentials from the database (they are
// masked in the API) and lists the nodes with them, as a VIM user would.
func (e *k8sEnv) checkVimUsable(vimID string, want []string) {
	e.t.Helper()
	st, err := store.Open(context.Background(), e.db, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	v, err := st.GetVim(context.Background(), vimID)
	if err != nil {
		e.t.Fatal(err)
	}
	key, err := secrets.ParseKey(e.key)
	if err != nil {
		e.t.Fatal(err)
	}
	box, err := secrets.NewBox(key)
	if err != nil {
		e.t.Fatal(err)
	}
	open := func(k string) string {
		raw, _ := v.Auth.AuthCred[k].(string)
		if !secrets.IsSealed(raw) {
			return raw
		}
		plain, err := box.OpenValue(raw, vims.CredPlace(v.ID).Key(k))
		if err != nil {
			e.t.Fatalf("auth_cred.%s: %v", k, err)
		}
		s, _ := plain.(string)
		return s
	}
	token, ca := open("bearer_token"), open("ssl_ca_cert")
	if v.Type != "kubernetes" || token == "" || !strings.Contains(ca, "BEGIN CERTIFICATE") || !strings.HasPrefix(v.AuthURL, "https://") {
		e.t.Fatalf("VIM %s: type %s, auth_url %s, token set %v, CA %.40q", vimID, v.Type, v.AuthURL, token != "", ca)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca))
	cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: e.hn.Dial,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, _ := http.NewRequest("GET", v.AuthURL+"/api/v1/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := cl.Do(req)
	if err != nil {
		e.t.Fatalf("GET %s/api/v1/nodes with the VIM's token and CA: %v", v.AuthURL, err)
	}
	defer res.Body.Close()
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
		e.t.Fatalf("GET %s/api/v1/nodes: %d %v", v.AuthURL, res.StatusCode, err)
	}
	var got []string
	for _, it := range l.Items {
		got = append(got, it.Metadata.Name)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		e.t.Fatalf("the VIM lists nodes %v, want %v", got, want)
	}
}

type journalRow struct {
	Attempt int
	State   string
}

// journal returns a step's node entries: node -> attempt/state.
func (e *k8sEnv) journal(opID, step string) map[string]journalRow {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT node, attempt, state FROM op_journal WHERE op_occ_id=$1 AND step=$2 AND node<>''`, opID, step)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]journalRow{}
	for rows.Next() {
		var n string
		var r journalRow
		if err := rows.Scan(&n, &r.Attempt, &r.State); err != nil {
			e.t.Fatal(err)
		}
		out[n] = r
	}
	return out
}

// stepNodes returns the progress nodes of a step of an op occurrence.
func stepNodes(t *testing.T, op map[string]any, step string) []map[string]any {
	t.Helper()
	prog, _ := op["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, s := range steps {
		sm := s.(map[string]any)
		if sm["name"] == step {
			var out []map[string]any
			nodes, _ := sm["nodes"].([]any)
			for _, n := range nodes {
				out = append(out, n.(map[string]any))
			}
			return out
		}
	}
	t.Fatalf("op has no step %s: %v", step, op["progress"])
	return nil
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return tm
}

func (e *k8sEnv) pinnedServers() map[string]bool {
	e.t.Helper()
	conn, err := pgx.Connect(context.Background(), e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT DISTINCT server_id FROM host_keys`)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out[s] = true
	}
	return out
}

func TestKubeadmClusterLifecycle(t *testing.T) {
	e := newK8sEnv(t)
	inst := e.createInstance()

	// Invalid parameters are refused at the API, naming the key.
	bad := e.instantiateBody()
	bad["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["drain_policy"] = "never"
	b, _ := json.Marshal(bad)
	if code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/instantiate", "application/json", b); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(doc), "k8s_cluster_installation_param.drain_policy") {
		t.Fatalf("instantiate with a bad drain_policy: %d %v", code, doc)
	}

	// Instantiate with a worker whose join dies half-way: FAILED_TEMP, the
	// master and the other worker done; the retry resumes without
	// re-joining them and resets the half-joined worker first.
	e.inject.Store(true)
	op := e.lcmLong(inst, "instantiate", e.instantiateBody(), "FAILED_TEMP")
	opID := op["id"].(string)
	pd, _ := op["error"].(map[string]any)
	if d, _ := pd["detail"].(string); !strings.Contains(d, "mgmt.instantiate_end") || !strings.Contains(d, "injected failure") {
		t.Errorf("instantiate error %q", d)
	} else {
		t.Logf("instantiate with an injected join failure: %.300s", d)
	}
	if strings.Contains(fmt.Sprint(op), k8sNodePassword) {
		t.Error("the op occurrence shows the node password")
	}
	first := e.journal(opID, "mgmt.instantiate_end")
	var failed, joined []string
	for n, r := range first {
		switch {
		case r.State == "FAILED" && strings.HasPrefix(n, "workernode-"):
			failed = append(failed, n)
		case r.State == "COMPLETED":
			joined = append(joined, n)
		}
	}
	if len(first) != 3 || len(failed) != 1 || len(joined) != 2 {
		t.Fatalf("after the injected failure the journal is %v, want the master and one worker COMPLETED, one worker FAILED", first)
	}
	e.opTask(opID, "retry", "COMPLETED")
	_, vs := e.vnfcs(inst)
	master := e.masterOf(vs)
	after := e.journal(opID, "mgmt.instantiate_end")
	for n, r := range after {
		want := 1
		if n == failed[0] {
			want = 2
		}
		if r.State != "COMPLETED" || r.Attempt != want {
			t.Errorf("node %s: %s after %d attempt(s), want COMPLETED after %d", n, r.State, r.Attempt, want)
		}
	}
	_, vs = e.vnfcs(inst)
	workers := workersOf(vs)
	for _, w := range workers {
		if nodeNameOf(w) == failed[0] {
			if kc := e.exec(e.host(w), "cat /etc/kubernetes/kubelet.conf"); !strings.Contains(kc, "apiVersion") {
				t.Errorf("the half-joined worker was not reset and joined again: kubelet.conf %q", kc)
			}
		}
	}

	// (1) The cluster: three nodes named after the VNFCs, /etc/hosts on
	// every node, a usable Kubernetes VIM in vimConnectionInfo.
	if got := keysOf(e.k8sNodes(master)); !slices.Equal(got, wantNodes(vs)) {
		t.Fatalf("cluster nodes %v, want %v", got, wantNodes(vs))
	}
	e.checkHosts(vs)
	vc := e.k8sVim(inst)
	if vc == nil {
		t.Fatalf("no kubernetes vimConnectionInfo entry: %v", e.get("/vnflcm/v1/vnf_instances/" + inst)["vimConnectionInfo"])
	}
	vimID, _ := vc["vimId"].(string)
	if strings.Contains(fmt.Sprint(vc), "bearer") {
		t.Errorf("vimConnectionInfo carries the token: %v", vc)
	}
	vim := e.get("/v1.0/vims/" + vimID)["vim"].(map[string]any)
	if vim["type"] != "kubernetes" || vim["name"] != "kubernetes_vim_"+inst || vim["auth_url"] != "https://"+master.Addr+":6443" {
		t.Errorf("registered VIM %v", vim)
	}
	e.checkVimUsable(vimID, wantNodes(vs))

	// The only master cannot be healed on its own: 422 at the API.
	hb, _ := json.Marshal(map[string]any{"vnfcInstanceId": []string{master.ID}})
	if code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/heal", "application/json", hb); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(doc), "only master") {
		t.Errorf("heal of the master: %d %v", code, doc)
	}

	// (2) Scale out by 3 (to the maximum): the joins overlap in time.
	op = e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 3}, "COMPLETED")
	joins := stepNodes(t, op, "mgmt.scale_end")
	if len(joins) != 3 {
		t.Fatalf("scale_end progress nodes %v", joins)
	}
	var lastStart, firstEnd time.Time
	for _, j := range joins {
		st, en := parseTime(t, j["startTime"]), parseTime(t, j["endTime"])
		if j["state"] != "COMPLETED" {
			t.Errorf("join %v", j)
		}
		if lastStart.IsZero() || st.After(lastStart) {
			lastStart = st
		}
		if firstEnd.IsZero() || en.Before(firstEnd) {
			firstEnd = en
		}
	}
	if !lastStart.Before(firstEnd) {
		t.Errorf("the joins did not all overlap: the last started at %s, the first ended at %s: %v", lastStart, firstEnd, joins)
	}
	for _, j := range joins {
		st, en := parseTime(t, j["startTime"]), parseTime(t, j["endTime"])
		t.Logf("scale-out join %v: %s .. %s (%v)", j["name"], st.Format("15:04:05.000"), en.Format("15:04:05.000"), en.Sub(st).Round(time.Millisecond))
	}
	_, vs = e.vnfcs(inst)
	if len(vs) != 6 || !slices.Equal(keysOf(e.k8sNodes(master)), wantNodes(vs)) {
		t.Fatalf("after scale out: VNFCs %v, nodes %v", wantNodes(vs), keysOf(e.k8sNodes(master)))
	}
	e.checkHosts(vs)

	// (3) Scale in by 1: the oldest worker is drained (its pod evicted) and
	// deleted, and gone from every /etc/hosts.
	victim := workersOf(vs)[0]
	e.pinned(master, victim, "web", false)
	op = e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance"}, "COMPLETED")
	if ch := affected(op); ch[victim.ID] != "REMOVED" {
		t.Errorf("scale in removed %v, want %s", ch, victim.ID)
	}
	if pods := e.podsOn(master, victim); pods != "" {
		t.Errorf("the victim's pod was not evicted: %s", pods)
	}
	_, vs = e.vnfcs(inst)
	if got := keysOf(e.k8sNodes(master)); len(vs) != 5 || !slices.Equal(got, wantNodes(vs)) || slices.Contains(got, nodeNameOf(victim)) {
		t.Fatalf("after scale in: nodes %v, VNFCs %v", got, wantNodes(vs))
	}
	e.checkHosts(vs)

	// A pod that cannot be evicted (its PodDisruptionBudget allows no
	// disruption): drain_policy fail stops with the pod named and the node
	// cordoned; with the budget gone, the retry completes. With drain_policy
	// force such a pod is deleted.
	victim = workersOf(vs)[0]
	e.pinned(master, victim, "guarded", true)
	op = e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance", "additionalParams": map[string]any{"drain_timeout": 3}}, "FAILED_TEMP")
	pd, _ = op["error"].(map[string]any)
	if d, _ := pd["detail"].(string); !strings.Contains(d, "default/guarded-") || !strings.Contains(d, "not drained within 3s") {
		t.Errorf("drain failure detail %q", d)
	} else {
		t.Logf("blocked drain: %.400s", d)
	}
	if !e.k8sNodes(master)[nodeNameOf(victim)] {
		t.Error("the victim is not cordoned after the failed drain")
	}
	e.exec(e.host(master), "kubectl --kubeconfig /etc/kubernetes/admin.conf delete pdb guarded")
	e.opTask(op["id"].(string), "retry", "COMPLETED")
	_, vs = e.vnfcs(inst)
	if got := keysOf(e.k8sNodes(master)); len(vs) != 4 || !slices.Equal(got, wantNodes(vs)) {
		t.Fatalf("after the retried scale in: nodes %v, VNFCs %v", got, wantNodes(vs))
	}
	victim = workersOf(vs)[0]
	e.pinned(master, victim, "guarded-2", true)
	e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance", "additionalParams": map[string]any{"drain_timeout": 3, "drain_policy": "force"}}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	if got := keysOf(e.k8sNodes(master)); len(vs) != 3 || !slices.Equal(got, wantNodes(vs)) {
		t.Fatalf("after the forced scale in: nodes %v, VNFCs %v", got, wantNodes(vs))
	}
	if pods := e.podsOn(master, victim); pods != "" {
		t.Errorf("drain_policy force left the blocking pod: %s", pods)
	}

	// (5) A worker's host key changes behind our back: the next operation
	// fails before anything runs anywhere; with the key back, retry works.
	changed := workersOf(vs)[0]
	hostsBefore := map[string]string{}
	for _, v := range vs {
		hostsBefore[v.ID] = e.exec(e.host(v), "cat /etc/hosts")
	}
	e.exec(e.host(changed), `set -e; mkdir -p /root/hostkeys; cp -a /etc/ssh/ssh_host_* /root/hostkeys/
rm -f /etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key
pkill -HUP -o -x sshd; sleep 0.5`)
	op = e.lcmLong(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance"}, "FAILED_TEMP")
	pd, _ = op["error"].(map[string]any)
	detail, _ := pd["detail"].(string)
	if !strings.Contains(detail, "host key verification failed for "+changed.Addr) || !strings.Contains(detail, "nothing was run") ||
		strings.Count(detail, "SHA256:") < 2 {
		t.Errorf("host key change: error %q", detail)
	} else {
		t.Logf("changed host key: %.600s", detail)
	}
	_, now := e.vnfcs(inst)
	for _, v := range now {
		if before, ok := hostsBefore[v.ID]; ok {
			if got := e.exec(e.host(v), "cat /etc/hosts"); got != before {
				t.Errorf("/etc/hosts of %s changed although the step failed before running anything", v.ID)
			}
		} else if e.hostsEntries(v) != nil {
			t.Errorf("the new worker %s got /etc/hosts entries although the step failed before running anything", v.ID)
		}
	}
	if len(e.k8sNodes(master)) != 3 {
		t.Errorf("a node joined although the step failed: %v", e.k8sNodes(master))
	}
	e.exec(e.host(changed), `set -e; rm -f /etc/ssh/ssh_host_*; cp -a /root/hostkeys/* /etc/ssh/; pkill -HUP -o -x sshd; sleep 0.5`)
	e.opTask(op["id"].(string), "retry", "COMPLETED")
	_, vs = e.vnfcs(inst)
	if got := keysOf(e.k8sNodes(master)); len(vs) != 4 || !slices.Equal(got, wantNodes(vs)) {
		t.Fatalf("after the retried scale out: nodes %v, VNFCs %v", got, wantNodes(vs))
	}
	e.checkHosts(vs)

	// (6) Heal a worker: same node name and address, new server and host
	// key (pinned anew; the old server's pins dropped).
	target := workersOf(vs)[1]
	e.lcmLong(inst, "heal", map[string]any{"vnfcInstanceId": []string{target.ID}, "cause": "e2e"}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	i := slices.IndexFunc(vs, func(v vnfc) bool { return v.ID == target.ID })
	if i < 0 || vs[i].Server == target.Server || vs[i].Addr != target.Addr {
		t.Fatalf("healed VNFC %+v, was %+v", vs[i], target)
	}
	if nodes := e.k8sNodes(master); !slices.Equal(keysOf(nodes), wantNodes(vs)) || nodes[nodeNameOf(target)] {
		t.Errorf("after heal: nodes %v (unschedulable map), VNFCs %v", nodes, wantNodes(vs))
	}
	e.checkHosts(vs)
	if pins := e.pinnedServers(); !pins[vs[i].Server] || pins[target.Server] {
		t.Errorf("pins after heal: %v (new server %s, old %s)", keysOf(pins), vs[i].Server, target.Server)
	}

	// Entire heal: the VIM goes, the VNF is rebuilt, the new cluster gets a
	// new VIM.
	e.lcmLong(inst, "heal", map[string]any{}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	master = e.masterOf(vs)
	if got := keysOf(e.k8sNodes(master)); !slices.Equal(got, wantNodes(vs)) {
		t.Fatalf("after the entire heal: nodes %v, VNFCs %v", got, wantNodes(vs))
	}
	vc = e.k8sVim(inst)
	if vc == nil {
		t.Fatal("no kubernetes vimConnectionInfo after the entire heal")
	}
	if code, _, _ := e.do("GET", "/v1.0/vims/"+vimID, "", nil); code != http.StatusNotFound && vc["vimId"] != vimID {
		t.Errorf("the old VIM %s is still registered (%d)", vimID, code)
	}
	vimID, _ = vc["vimId"].(string)
	e.checkVimUsable(vimID, wantNodes(vs))

	// A cluster whose VIM another instance uses is neither terminated nor
	// rebuilt (the VMs would go before the VIM's removal failed): 409 naming
	// the user (issue 16's dependency guard), before any operation exists;
	// once the user is gone it can.
	user := e.createInstance()
	pb, _ := json.Marshal(map[string]any{"vimConnectionInfo": []any{map[string]any{"id": "on-cluster", "vimId": vimID, "vimType": "kubernetes"}}})
	code, h, doc := e.do("PATCH", "/vnflcm/v1/vnf_instances/"+user, "application/merge-patch+json", pb)
	if code != http.StatusAccepted {
		t.Fatalf("PATCH the user's vimConnectionInfo: %d %v", code, doc)
	}
	e.waitOp(harness.OpID(h.Get("Location")), "COMPLETED")
	opsBefore := e.opsOf(inst)
	for task, body := range map[string]map[string]any{"terminate": {"terminationType": "FORCEFUL"}, "heal": {}} {
		b, _ := json.Marshal(body)
		code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/"+task, "application/json", b)
		raw, _ := doc["_raw"].(string)
		if code != http.StatusConflict || !strings.Contains(raw, "is in use by") || !strings.Contains(raw, user) {
			t.Errorf("%s of the cluster while instance %s uses its VIM: %d %s, want 409 naming the user", task, user, code, raw)
		}
	}
	if after := e.opsOf(inst); after != opsBefore {
		t.Errorf("the refused requests changed the cluster's op occurrences:\n%s\nwas\n%s", after, opsBefore)
	}
	if code, _, doc := e.do("DELETE", "/vnflcm/v1/vnf_instances/"+user, "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE the VIM's user: %d %v", code, doc)
	}

	// (7) Terminate: the VIM and its vimConnectionInfo entry are gone.
	e.lcmLong(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	if code, _, _ := e.do("GET", "/v1.0/vims/"+vimID, "", nil); code != http.StatusNotFound {
		t.Errorf("GET the cluster's VIM after terminate: %d, want 404", code)
	}
	if e.k8sVim(inst) != nil {
		t.Error("the kubernetes vimConnectionInfo entry survived terminate")
	}
}
