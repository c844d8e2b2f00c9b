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
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ansiblehost"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kubespray"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// The kubespray end-to-end test: the VNFM as its own process with the
// OpenStack driver and the kubespray driver, the simulator's servers as
// real SSH hosts (the Kubernetes stand-in installed on masters and
// workers), one more host as the Ansible server with Debian's real
// ansible-playbook and the stand-in kubespray tree (internal/ansiblehost),
// and the kubespray sample package onboarded over HTTP.
const (
	kspNetnsEnv = "VNFM_E2E_KUBESPRAY_NETNS"

	kspSubnet      = "10.77.62.0/24"
	kspAnsibleIP   = "10.77.62.250"
	kspNodePass    = "N0de'pw-ks"
	kspAnsibleUser = "ansible"
	kspAnsiblePass = "Ans1ble-pw"
	kspRoot        = "/opt/kubespray"
	kspInventories = "/home/ansible/inventories"
	kspHTTPProxy   = "http://proxy-http.example:3128"
	kspHTTPSProxy  = "http://proxy-https.example:3129"
	kspKnownHosts  = "10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorsOwnEntryMustSurviveTheDriver00000\n"
)

// roleKubespray is the VNFM with the OpenStack driver and the kubespray
// driver dialing the test hosts in their network namespace.
var roleKubespray = harness.Role("kubespray", func() int {
	return harness.Serve("e2e-kubespray", func(ctx context.Context, cfg *config.Config) (server.Options, func(), error) {
		if err := store.MigrateUp(ctx, cfg.DatabaseURL); err != nil {
			return server.Options{}, nil, err
		}
		st, err := store.Open(ctx, cfg.DatabaseURL, slog.Default())
		if err != nil {
			return server.Options{}, nil, err
		}
		ns := testhosts.NetnsPath(os.Getenv(kspNetnsEnv))
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			return testhosts.DialInNetns(ctx, ns, network, addr)
		}
		mgmt := mgmtdrivers.NewRegistry(server.NewKubesprayDriver(st.HostKeyPins(), dial).Driver())
		d := openstack.New(openstack.Options{PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond, StackTimeout: 3 * time.Minute})
		return server.Options{Infra: server.NewInfraResolver(d, nil, nil), Mgmt: mgmt}, st.Close, nil
	})
})

type kspEnv struct {
	*osEnv
	hn      *testhosts.Network
	bin     string
	ansible *testhosts.Host
	// inject arms a leftover /etc/kubernetes/pki/ca.crt on the next worker
	// host that boots: its kubeadm join then fails in preflight.
	inject   atomic.Bool
	mu       sync.Mutex
	injected *testhosts.Host
}

func newKspEnv(t *testing.T) *kspEnv {
	t.Helper()
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "kspr", Subnet: kspSubnet}) // skips when not root
	for _, tool := range []string{"ansible-playbook", "haproxy", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv(testhosts.RequiredEnv) == "1" {
				t.Fatalf("%s is not installed (the Ansible server and the load balancer use the machine's); .ci/run installs it", tool)
			}
			t.Skipf("skipping: %s is not installed (the Ansible server and the load balancer use the machine's: apt-get install ansible haproxy)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := k8sstandin.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &kspEnv{osEnv: &osEnv{t: t}, hn: hn, bin: bin}
	// The Ansible server: Debian's ansible (the machine's /usr), the
	// stand-in kubespray tree, an operator's own known_hosts entry.
	e.ansible, err = hn.AddHost(ctx, testhosts.HostSpec{Name: "ansible", IP: netip.MustParseAddr(kspAnsibleIP), NoPeers: true,
		Users: []testhosts.User{{Name: kspAnsibleUser, Password: kspAnsiblePass}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ansiblehost.InstallKubespray(ctx, e.ansible, kspRoot); err != nil {
		t.Fatal(err)
	}
	e.hostRun(e.ansible, fmt.Sprintf(`set -e
install -d -o %[1]s -m 700 /home/%[1]s/.ssh
printf '%%s' '%[2]s' > /home/%[1]s/.ssh/known_hosts
chown %[1]s /home/%[1]s/.ssh/known_hosts`, kspAnsibleUser, kspKnownHosts))

	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	sim, err := ossim.New(ossim.Options{Latency: 20 * time.Millisecond,
		Now: func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) },
		Networks: []ossim.NetworkSpec{{Name: "net0", ID: simNetID, CIDR: kspSubnet, Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true}},
		Hosts: hn, HostNetwork: "net0", HostSetup: e.hostSetup})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	e.sim, e.simURL, e.db, e.key = sim, srv.URL, pgtest.NewDB(t), secrets.NewKey()
	e.vnfm = harness.Start(t, roleKubespray, e.db, e.key, kspNetnsEnv+"="+hn.CtlNamespace(), "VNFM_LEASE=10s")
	e.registerVim()
	e.onboardKubespray()
	return e
}

// hostSetup gives the masters' and workers' images the Kubernetes stand-in
// (the load balancer gets none) and plants the injected failure.
func (e *kspEnv) hostSetup(ctx context.Context, h *testhosts.Host) error {
	if !strings.HasPrefix(h.Hostname, "masternode") && !strings.HasPrefix(h.Hostname, "workernode") {
		return nil
	}
	if err := k8sstandin.InstallBinary(ctx, h, e.bin); err != nil {
		return err
	}
	if strings.HasPrefix(h.Hostname, "workernode") && e.inject.CompareAndSwap(true, false) {
		if out, err := h.Exec(ctx, "sh", "-c", "mkdir -p /etc/kubernetes/pki && echo leftover > /etc/kubernetes/pki/ca.crt"); err != nil {
			return fmt.Errorf("inject: %v: %s", err, out)
		}
		e.mu.Lock()
		e.injected = h
		e.mu.Unlock()
	}
	return nil
}

func (e *kspEnv) hostRun(h *testhosts.Host, script string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.Exec(ctx, "sh", "-c", script)
	if err != nil {
		e.t.Fatalf("%s: %v: %s", h.Name, err, out)
	}
	return out
}

func (e *kspEnv) onboardKubespray() {
	e.vnfdID = e.onboardCSAR(vnfpkgtest.CSAR(e.t, "kubespray"))
}

func (e *kspEnv) params() map[string]any {
	node := func(role string) map[string]any {
		return map[string]any{"aspect_id": role + "_instance", "ssh_cp_name": role + "Node_CP1", "nic_cp_name": role + "Node_CP1",
			"username": "ubuntu", "password": kspNodePass}
	}
	master := node("master")
	delete(master, "aspect_id") // the masters' group is found by its CP instead
	master["pod_cidr"] = "10.244.0.0/16"
	master["cluster_cidr"] = "10.96.0.0/12"
	return map[string]any{
		"vim_name":    "kubespray-e2e",
		"master_node": master, "worker_node": node("worker"),
		"proxy": map[string]any{"http_proxy": kspHTTPProxy, "https_proxy": kspHTTPSProxy, "no_proxy": "10.0.0.0/8"},
		"ansible": map[string]any{"ip_address": kspAnsibleIP, "username": kspAnsibleUser, "password": kspAnsiblePass,
			"kubespray_root_path": kspRoot, "transferring_inventory_path": kspInventories, "playbook_timeout": 600},
		"external_lb_param": map[string]any{"ssh_cp_name": "externalLB_CP1", "ssh_username": "ubuntu", "ssh_password": kspNodePass,
			"script_path": "Scripts/install_external_lb.sh", "nodeport_range": "30000-30099"},
	}
}

func (e *kspEnv) instantiateBody() map[string]any {
	return map[string]any{"flavourId": "simple",
		"vimConnectionInfo": []any{map[string]any{"id": "vim-sim", "vimId": e.vimID, "vimType": "openstack"}},
		"extVirtualLinks": []any{map[string]any{"id": "ext-net0", "resourceId": simNetID, "extCps": []any{
			map[string]any{"cpdId": "masterNode_CP1"}, map[string]any{"cpdId": "workerNode_CP1"}, map[string]any{"cpdId": "externalLB_CP1"}}}},
		"additionalParams": map[string]any{"node_password": kspNodePass, kubespray.ParamKey: e.params()}}
}

// lcmWait posts an LCM task and waits for its op occurrence to end in want.
func (e *kspEnv) lcmWait(inst, task string, body any, want string) map[string]any {
	e.t.Helper()
	h, _ := e.post("/vnflcm/v1/vnf_instances/"+inst+"/"+task, body, http.StatusAccepted)
	return e.waitFor(harness.OpID(h.Get("Location")), want)
}

func (e *kspEnv) waitFor(opID, want string) map[string]any {
	e.t.Helper()
	return harness.Wait{Within: 6 * time.Minute, Poll: 100 * time.Millisecond, Explain: func() string {
		return "--- VNFM log tail:\n" + e.vnfm.LogTail(30000) + "\n--- Ansible server log:\n" + e.ansible.Log()
	}}.Op(e.t, e.vnfm.Base, opID, want)
}

func (e *kspEnv) hostOf(v vnfc) *testhosts.Host {
	e.t.Helper()
	h := e.sim.Host(v.Server)
	if h == nil {
		e.t.Fatalf("no test host for server %s (VNFC %s)", v.Server, v.ID)
	}
	return h
}

func kspName(v vnfc) string { return strings.ToLower(v.ID) }

func kspNames(vs []vnfc) []string {
	var out []string
	for _, v := range vs {
		if v.VduID == "masterNode" || v.VduID == "workerNode" {
			out = append(out, kspName(v))
		}
	}
	sort.Strings(out)
	return out
}

func kspByVdu(vs []vnfc, vdu string) []vnfc {
	var out []vnfc
	for _, v := range vs {
		if v.VduID == vdu {
			out = append(out, v)
		}
	}
	return out
}

// kspVnfcs is e.vnfcs with the address of CP1 (the VNFCs have two CPs).
func (e *kspEnv) kspVnfcs(inst string) []vnfc {
	e.t.Helper()
	doc := e.get("/vnflcm/v1/vnf_instances/" + inst)
	info, _ := doc["instantiatedVnfInfo"].(map[string]any)
	list, _ := info["vnfcResourceInfo"].([]any)
	var out []vnfc
	for _, x := range list {
		v := x.(map[string]any)
		c := vnfc{ID: v["id"].(string), VduID: v["vduId"].(string), Server: v["computeResource"].(map[string]any)["resourceId"].(string)}
		md, _ := v["metadata"].(map[string]any)
		c.Created, _ = md["creationTime"].(string)
		c.Member, _ = md["groupMember"].(string)
		cps, _ := v["vnfcCpInfo"].([]any)
		for _, cp := range cps {
			cpm := cp.(map[string]any)
			if !strings.HasSuffix(cpm["cpdId"].(string), "_CP1") {
				continue
			}
			pi := cpm["cpProtocolInfo"].([]any)[0].(map[string]any)
			ips := pi["ipOverEthernet"].(map[string]any)["ipAddresses"].([]any)[0].(map[string]any)["addresses"].([]any)
			c.Addr, _ = ips[0].(string)
		}
		out = append(out, c)
	}
	return out
}

// clusterNodes lists the Kubernetes nodes as a master sees them.
func (e *kspEnv) clusterNodes(vs []vnfc) []string {
	e.t.Helper()
	m := kspByVdu(vs, "masterNode")[0]
	out := e.hostRun(e.hostOf(m), "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o name")
	var names []string
	for _, l := range strings.Fields(out) {
		names = append(names, strings.TrimPrefix(l, "node/"))
	}
	sort.Strings(names)
	return names
}

// inventory reads the cluster's hosts.ini on the Ansible server.
func (e *kspEnv) inventory(inst string) (map[string]map[string]string, map[string][]string) {
	e.t.Helper()
	ini := e.hostRun(e.ansible, "cat "+kspInventories+"/"+inst+"/hosts.ini")
	for _, secret := range []string{kspNodePass, kspAnsiblePass, "ansible_password", "ansible_ssh_pass"} {
		if strings.Contains(ini, secret) {
			e.t.Errorf("hosts.ini holds %q", secret)
		}
	}
	return kubespray.ParseHostsINI(ini)
}

// lbServers returns the servers of a backend of the LB's haproxy.cfg.
func (e *kspEnv) lbServers(vs []vnfc, backend string) []string {
	e.t.Helper()
	lb := kspByVdu(vs, "externalLB")[0]
	cfg := e.hostRun(e.hostOf(lb), "cat /etc/haproxy/haproxy.cfg")
	var out []string
	in := false
	for _, l := range strings.Split(cfg, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "backend":
			in = f[1] == backend
		case in && len(f) >= 3 && f[0] == "server":
			out = append(out, f[1]+" "+f[2])
		}
	}
	sort.Strings(out)
	return out
}

func wantServers(vs []vnfc, port string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, kspName(v)+" "+v.Addr+port)
	}
	sort.Strings(out)
	return out
}

// checkCluster asserts that the cluster, the inventory and the LB all hold
// exactly the VNFCs' nodes.
func (e *kspEnv) checkCluster(inst string, vs []vnfc) {
	e.t.Helper()
	masters, workers := kspByVdu(vs, "masterNode"), kspByVdu(vs, "workerNode")
	if got, want := e.clusterNodes(vs), kspNames(vs); !slices.Equal(got, want) {
		e.t.Errorf("cluster nodes %v, want %v", got, want)
	}
	hosts, groups := e.inventory(inst)
	if got, want := sorted(groups["kube_node"]), kspNames(workers); !slices.Equal(got, want) {
		e.t.Errorf("inventory kube_node %v, want %v", got, want)
	}
	if got, want := sorted(groups["kube_control_plane"]), kspNames(masters); !slices.Equal(got, want) {
		e.t.Errorf("inventory kube_control_plane %v, want %v", got, want)
	}
	for _, v := range append(slices.Clone(masters), workers...) {
		if h := hosts[kspName(v)]; h["ansible_host"] != v.Addr || h["ip"] != v.Addr {
			e.t.Errorf("inventory line of %s: %v, want address %s", kspName(v), h, v.Addr)
		}
	}
	if len(hosts) != len(masters)+len(workers) {
		e.t.Errorf("inventory hosts %v", hosts)
	}
	if got, want := e.lbServers(vs, "kubernetes-apiserver"), wantServers(masters, ":6443"); !slices.Equal(got, want) {
		e.t.Errorf("LB API backend %v, want %v", got, want)
	}
	if got, want := e.lbServers(vs, "kubernetes-nodeport"), wantServers(workers, ""); !slices.Equal(got, want) {
		e.t.Errorf("LB NodePort backend %v, want %v", got, want)
	}
	// No temporary vars file (the sudo passwords) is left behind; the
	// operator's known_hosts is untouched.
	if left := e.hostRun(e.ansible, "ls -A "+kspInventories+"/"+inst); strings.Contains(left, ".become") {
		e.t.Errorf("a temporary vars file is left in the inventory: %s", left)
	}
	if kh := e.hostRun(e.ansible, "cat /home/ansible/.ssh/known_hosts"); kh != kspKnownHosts {
		e.t.Errorf("the Ansible server's ~/.ssh/known_hosts changed: %q", kh)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// knownHostsOK checks that the inventory's known_hosts holds the node's
// current host key (the one its host has now).
func (e *kspEnv) knownHostsOK(inst string, v vnfc) {
	e.t.Helper()
	kh := e.hostRun(e.ansible, "cat "+kspInventories+"/"+inst+"/known_hosts")
	pub := strings.Fields(e.hostRun(e.hostOf(v), "cat /etc/ssh/ssh_host_ed25519_key.pub"))
	if len(pub) < 2 || !strings.Contains(kh, v.Addr+" "+pub[0]+" "+pub[1]+"\n") {
		e.t.Errorf("known_hosts of the inventory lacks %s's current key %v:\n%s", kspName(v), pub, kh)
	}
}

// vimCred opens the VIM's sealed credentials from the database (the API
// masks them), as a user of the VIM gets them.
func (e *kspEnv) vimCred(name string) (*store.Vim, string, string) {
	e.t.Helper()
	st, err := store.Open(context.Background(), e.db, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	v, err := st.GetVimByName(context.Background(), name)
	if err != nil {
		e.t.Fatalf("VIM %s: %v", name, err)
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
	return v, open("bearer_token"), open("ssl_ca_cert")
}

// vimNodes lists the nodes through the registered VIM: its auth_url (the
// load balancer), its token and its CA certificate, TLS verified.
func (e *kspEnv) vimNodes(name string) []string {
	e.t.Helper()
	v, token, ca := e.vimCred(name)
	if !strings.Contains(ca, "BEGIN CERTIFICATE") || token == "" {
		e.t.Fatalf("VIM %s: CA %.40q, token set %v", name, ca, token != "")
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
	return got
}

func affectedOf(op map[string]any, change string) []string {
	var out []string
	for id, c := range affected(op) {
		if c == change {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func TestKubesprayClusterLifecycle(t *testing.T) {
	e := newKspEnv(t)
	inst := e.createInstance()

	// Parameters are checked when the request arrives.
	bad := e.instantiateBody()
	delete(bad["additionalParams"].(map[string]any)[kubespray.ParamKey].(map[string]any)["ansible"].(map[string]any), "kubespray_root_path")
	code, _, doc := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/instantiate", "application/json", mustJSON(bad))
	if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(doc), "ansible.kubespray_root_path: is required") {
		t.Fatalf("instantiate without kubespray_root_path: %d %v", code, doc)
	}

	// Instantiate with a worker that has a leftover CA file: cluster.yml
	// fails on that host; the op is FAILED_TEMP naming host and task.
	e.inject.Store(true)
	t0 := time.Now()
	op := e.lcmWait(inst, "instantiate", e.instantiateBody(), "FAILED_TEMP")
	opID := op["id"].(string)
	e.mu.Lock()
	injected := e.injected
	e.mu.Unlock()
	if injected == nil {
		t.Fatal("no worker host got the injected failure")
	}
	pd, _ := op["error"].(map[string]any)
	detail, _ := pd["detail"].(string)
	m := regexp.MustCompile(`host (workernode-[a-z0-9]+) failed at task "Check that kubeadm join succeeded": kubeadm join failed \(rc 1\):.*ca\.crt already exists`).FindStringSubmatch(detail)
	if m == nil || !strings.Contains(detail, "mgmt.instantiate_end") || !strings.Contains(detail, "ansible-playbook cluster.yml failed") ||
		!strings.Contains(detail, "PLAY RECAP: "+m[1]+" failed=1") {
		t.Fatalf("instantiate error does not name the failed host, task and cause:\n%s", detail)
	}
	failedNode := m[1]
	t.Logf("instantiate with an injected failure (%v): %.400s", time.Since(t0).Round(time.Second), detail)
	if strings.Contains(fmt.Sprint(op), kspNodePass) || strings.Contains(fmt.Sprint(op), kspAnsiblePass) {
		t.Error("the op occurrence shows a password")
	}
	// Fix the node, retry: COMPLETED.
	e.hostRun(injected, "rm -f /etc/kubernetes/pki/ca.crt")
	t0 = time.Now()
	e.post("/vnflcm/v1/vnf_lcm_op_occs/"+opID+"/retry", nil, http.StatusAccepted)
	e.waitFor(opID, "COMPLETED")
	t.Logf("retry completed in %v", time.Since(t0).Round(time.Second))

	// (1) The cluster: 3 masters and 2 workers in the cluster, the
	// inventory and the LB; the VIM answers through the LB with its CA.
	vs := e.kspVnfcs(inst)
	if i := slices.IndexFunc(vs, func(v vnfc) bool { return kspName(v) == failedNode }); i < 0 || vs[i].Addr != injected.IP.String() {
		t.Errorf("the failed node %s is not the VNFC on the injected host %s", failedNode, injected.IP)
	}
	if len(kspByVdu(vs, "masterNode")) != 3 || len(kspByVdu(vs, "workerNode")) != 2 || len(kspByVdu(vs, "externalLB")) != 1 {
		t.Fatalf("VNFCs %+v", vs)
	}
	e.checkCluster(inst, vs)
	lb := kspByVdu(vs, "externalLB")[0]
	v, _, _ := e.vimCred("kubespray-e2e")
	if v.AuthURL != "https://"+lb.Addr+":8383" || v.Type != "kubernetes" {
		t.Errorf("VIM auth_url %s type %s, want the load balancer https://%s:8383", v.AuthURL, v.Type, lb.Addr)
	}
	if got := e.vimNodes("kubespray-e2e"); !slices.Equal(got, kspNames(vs)) {
		t.Errorf("the VIM lists %v, want %v", got, kspNames(vs))
	}
	inDoc := e.get("/vnflcm/v1/vnf_instances/" + inst)
	if !strings.Contains(fmt.Sprint(inDoc["vimConnectionInfo"]), v.ID) {
		t.Errorf("vimConnectionInfo %v lacks the Kubernetes VIM %s", inDoc["vimConnectionInfo"], v.ID)
	}
	// https_proxy is its own value on the nodes (Tacker copies http_proxy).
	w0 := kspByVdu(vs, "workerNode")[0]
	if pc := e.hostRun(e.hostOf(w0), "cat /etc/systemd/system/containerd.service.d/http-proxy.conf"); !strings.Contains(pc, `HTTPS_PROXY=`+kspHTTPSProxy) ||
		!strings.Contains(pc, `HTTP_PROXY=`+kspHTTPProxy) {
		t.Errorf("proxy drop-in:\n%s", pc)
	}
	for _, w := range kspByVdu(vs, "workerNode") {
		e.knownHostsOK(inst, w)
	}

	// (2) Scale out 1: the new worker is in the cluster, the inventory and the LB.
	t0 = time.Now()
	op = e.lcmWait(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 1}, "COMPLETED")
	added := affectedOf(op, "ADDED")
	vs = e.kspVnfcs(inst)
	if len(added) != 1 || len(kspByVdu(vs, "workerNode")) != 3 {
		t.Fatalf("scale out added %v; workers %v", added, kspByVdu(vs, "workerNode"))
	}
	e.checkCluster(inst, vs)
	t.Logf("scale out in %v", time.Since(t0).Round(time.Second))

	// (2b) A scale out whose new worker fails to join: FAILED_TEMP from
	// scale.yml naming the host; rollback takes the half-joined worker out
	// of the cluster, the inventory and the LB, then deletes its VM.
	e.inject.Store(true)
	op = e.lcmWait(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 1}, "FAILED_TEMP")
	pd, _ = op["error"].(map[string]any)
	detail, _ = pd["detail"].(string)
	if !strings.Contains(detail, "mgmt.scale_end") || !strings.Contains(detail, "ansible-playbook scale.yml failed") ||
		!regexp.MustCompile(`host workernode-[a-z0-9]+ failed at task "Check that kubeadm join succeeded"`).MatchString(detail) {
		t.Errorf("scale out error:\n%s", detail)
	}
	t0 = time.Now()
	e.post("/vnflcm/v1/vnf_lcm_op_occs/"+op["id"].(string)+"/rollback", nil, http.StatusAccepted)
	e.waitFor(op["id"].(string), "ROLLED_BACK")
	if after := e.kspVnfcs(inst); len(after) != len(vs) {
		t.Fatalf("after the rollback: %d VNFCs, want %d", len(after), len(vs))
	}
	e.checkCluster(inst, vs)
	t.Logf("scale out rolled back in %v", time.Since(t0).Round(time.Second))

	// (3) Scale in 1: the victim is drained and removed from all three.
	t0 = time.Now()
	op = e.lcmWait(inst, "scale", map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance", "numberOfSteps": 1}, "COMPLETED")
	removed := affectedOf(op, "REMOVED")
	if len(removed) != 1 {
		t.Fatalf("scale in removed %v", removed)
	}
	drained := false
	for _, n := range kspStepNodes(op, "mgmt.scale_start") {
		if n["name"] == "drain/"+strings.ToLower(removed[0]) && n["state"] == "COMPLETED" {
			drained = true
		}
	}
	if !drained {
		t.Errorf("no completed drain of %s in the progress: %v", removed[0], op["progress"])
	}
	vs = e.kspVnfcs(inst)
	if len(kspByVdu(vs, "workerNode")) != 2 || slices.ContainsFunc(vs, func(v vnfc) bool { return v.ID == removed[0] }) {
		t.Fatalf("after scale in: %v", vs)
	}
	e.checkCluster(inst, vs)
	t.Logf("scale in in %v", time.Since(t0).Round(time.Second))

	// (4) Healing a master is refused before anything changes.
	m0 := kspByVdu(vs, "masterNode")[0]
	code, _, doc = e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/heal", "application/json", mustJSON(map[string]any{"vnfcInstanceId": []string{m0.ID}}))
	if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(doc), "healing control-plane VNFCs ("+m0.ID+") is not supported") {
		t.Errorf("heal of a master: %d %v", code, doc)
	}

	// (5) Heal a dead worker (its VM stopped): removed without drain and
	// reset, joined again on its new server, with its new host key in the
	// inventory's known_hosts.
	target := kspByVdu(vs, "workerNode")[0]
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := e.hostOf(target).Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	cancel()
	t0 = time.Now()
	op = e.lcmWait(inst, "heal", map[string]any{"vnfcInstanceId": []string{target.ID}, "cause": "e2e"}, "COMPLETED")
	for _, n := range kspStepNodes(op, "mgmt.heal_start") {
		if strings.HasPrefix(n["name"].(string), "drain/") {
			t.Errorf("the dead worker was drained: %v", n)
		}
		if n["name"] == "remove-node.yml" && n["state"] != "COMPLETED" {
			t.Errorf("remove-node.yml: %v", n)
		}
	}
	vs = e.kspVnfcs(inst)
	i := slices.IndexFunc(vs, func(v vnfc) bool { return v.ID == target.ID })
	if i < 0 || vs[i].Server == target.Server || vs[i].Addr != target.Addr {
		t.Fatalf("healed VNFC %+v, was %+v", vs, target)
	}
	e.checkCluster(inst, vs)
	e.knownHostsOK(inst, vs[i])
	if kc := e.hostRun(e.hostOf(vs[i]), "cat /etc/kubernetes/kubelet.conf"); !strings.Contains(kc, "apiVersion") {
		t.Errorf("the healed worker did not join: kubelet.conf %q", kc)
	}
	if got := e.vimNodes("kubespray-e2e"); !slices.Equal(got, kspNames(vs)) {
		t.Errorf("after heal the VIM lists %v, want %v", got, kspNames(vs))
	}
	t.Logf("heal of a dead worker in %v", time.Since(t0).Round(time.Second))

	// (6) Terminate: the VIM and the inventory are gone.
	e.lcmWait(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	st, err := store.Open(context.Background(), e.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GetVimByName(context.Background(), "kubespray-e2e"); err == nil {
		t.Error("the Kubernetes VIM survived the terminate")
	}
	if out := e.hostRun(e.ansible, "ls -A "+kspInventories); strings.TrimSpace(out) != "" {
		t.Errorf("inventories left after terminate: %q", out)
	}
	if kh := e.hostRun(e.ansible, "cat /home/ansible/.ssh/known_hosts"); kh != kspKnownHosts {
		t.Errorf("the Ansible server's ~/.ssh/known_hosts changed: %q", kh)
	}
	if d := e.get("/vnflcm/v1/vnf_instances/" + inst); d["instantiationState"] != "NOT_INSTANTIATED" || strings.Contains(fmt.Sprint(d["vimConnectionInfo"]), "kubernetes") {
		t.Errorf("instance after terminate: %v %v", d["instantiationState"], d["vimConnectionInfo"])
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// kspStepNodes returns the progress nodes of a step of an op occurrence.
func kspStepNodes(op map[string]any, step string) []map[string]any {
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
	return nil
}
