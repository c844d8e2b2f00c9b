package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// The dedicated load balancer topology (ha.lb_topology dedicated): the
// kubeadm-ha-lb sample, 3 masters and 2 workers behind 2 lbNode VNFCs that
// run HAProxy and keepalived (the VIP), in the simulator's real hosts.
const haLBSubnet = "10.77.64.0/24"

func newK8sHALBEnv(t *testing.T) *k8sEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the HA end-to-end test runs haproxy, keepalived and sshd in test hosts (network namespaces) and needs root")
	}
	for _, bin := range []string{"/usr/sbin/haproxy", "/usr/sbin/keepalived", "/usr/bin/etcd"} {
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv(testhosts.RequiredEnv) == "1" {
				t.Fatalf("%s is missing (install haproxy, keepalived, etcd-server)", bin)
			}
			t.Skipf("skipping: %s is missing (install haproxy, keepalived and etcd-server)", bin)
		}
	}
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "kadmlb", Subnet: haLBSubnet})
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
		Networks: []ossim.NetworkSpec{{Name: "net0", ID: simNetID, CIDR: haLBSubnet, Shared: true},
			{Name: "public", CIDR: "10.77.101.0/24", External: true, Shared: true}},
		Hosts: hn, HostNetwork: "net0", HostSetup: e.hostSetup})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	e.osEnv = &osEnv{t: t, sim: sim, simURL: srv.URL, db: pgtest.NewDB(t), key: secrets.NewKey()}
	e.vnfm = harness.Start(t, roleKubeadm, e.db, e.key, kadmNetnsEnv+"="+hn.CtlNamespace(), "VNFM_LEASE=10s")
	t.Cleanup(func() {
		if logs := e.vnfm.Logs(); strings.Contains(logs, "WARNING: DATA RACE") {
			t.Errorf("the VNFM process reported a data race:\n%s", logs)
		}
		if p := os.Getenv("KUBEADM_HA_LB_E2E_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(e.vnfm.Logs()), 0o600)
		}
	})
	e.registerVim()
	e.vnfdID = e.onboardCSAR(vnfpkgtest.CSAR(t, "kubeadm-ha-lb"))
	return e
}

func (e *k8sEnv) haLBInstantiateBody() map[string]any {
	body := e.haInstantiateBody()
	body["extVirtualLinks"] = []any{map[string]any{"id": "ext-net0", "resourceId": simNetID, "extCps": []any{
		map[string]any{"cpdId": "masterNode_CP1"}, map[string]any{"cpdId": "workerNode_CP1"}, map[string]any{"cpdId": "vip_CP"},
		map[string]any{"cpdId": "lbNode_CP1"}}}}
	p := body["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	p["ha"] = map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}
	p["lb_node"] = map[string]any{"ssh_cp_name": "lbNode_CP1", "nic_cp_name": "lbNode_CP1", "username": "ubuntu", "password": k8sNodePassword}
	return body
}

func lbsOf(vs []vnfc) []vnfc {
	var out []vnfc
	for _, v := range vs {
		if v.VduID == "lbNode" {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b vnfc) int { return strings.Compare(nodeNameOf(a), nodeNameOf(b)) })
	return out
}

// haproxyRunning reports whether a HAProxy process runs in the host.
func (e *k8sEnv) haproxyRunning(v vnfc) bool {
	return strings.TrimSpace(e.exec(e.host(v), "pgrep -x haproxy >/dev/null && echo yes || echo no")) == "yes"
}

func TestKubeadmHADedicatedLBLifecycle(t *testing.T) {
	e := newK8sHALBEnv(t)
	inst := e.createInstance()

	// (1) Instantiate: 3 masters, 2 workers, 2 load balancers.
	t0 := time.Now()
	e.lcmLong(inst, "instantiate", e.haLBInstantiateBody(), "COMPLETED")
	t.Logf("instantiate of 3 masters + 2 workers + 2 LBs: %v", time.Since(t0).Round(100*time.Millisecond))
	info, vs := e.vnfcs(inst)
	vip := e.vipOf(info)
	masters, workers, lbs := mastersOf(vs), workersOf(vs), lbsOf(vs)
	if len(masters) != 3 || len(workers) != 2 || len(lbs) != 2 {
		t.Fatalf("VNFCs %v", vs)
	}
	k8s := append(slices.Clone(masters), workers...)
	want := wantNodes(k8s)
	slices.Sort(want)

	// The VIM is the VIP and lists the 5 Kubernetes nodes (not the LBs).
	vc := e.k8sVim(inst)
	if vc == nil {
		t.Fatal("no kubernetes vimConnectionInfo entry")
	}
	vimID, _ := vc["vimId"].(string)
	vim := e.get("/v1.0/vims/" + vimID)["vim"].(map[string]any)
	if vim["auth_url"] != "https://"+vip+":16443" {
		t.Errorf("VIM auth_url %v, want the VIP https://%s:16443", vim["auth_url"], vip)
	}
	api := e.vimClient(vimID)
	if got, err := api.nodes(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("GET /api/v1/nodes through the VIP: %v %v, want %v", got, err, want)
	}

	// HAProxy and keepalived on the LBs (all three API servers behind
	// each), none on the masters; LB 1 holds the VIP, no master does.
	for _, l := range lbs {
		if got := keysOf(boolKeys(e.haproxyServers(l))); !slices.Equal(got, wantNodes(masters)) {
			t.Errorf("HAProxy on %s balances over %v, want %v", nodeNameOf(l), got, wantNodes(masters))
		}
		if conf := e.exec(e.host(l), "cat /etc/keepalived/keepalived.conf"); !strings.Contains(conf, "auth_type PASS") || !strings.Contains(conf, vip+"/24 dev eth0") {
			t.Errorf("keepalived.conf of %s:\n%s", nodeNameOf(l), conf)
		}
	}
	for _, m := range masters {
		if e.haproxyRunning(m) {
			t.Errorf("HAProxy runs on master %s", nodeNameOf(m))
		}
		if out := e.exec(e.host(m), "test -e /etc/keepalived/keepalived.conf && echo present || echo absent"); strings.TrimSpace(out) != "absent" {
			t.Errorf("keepalived.conf on master %s", nodeNameOf(m))
		}
	}
	if got := e.vipHolders(masters, vip); len(got) != 0 {
		t.Errorf("masters hold the VIP: %v", got)
	}
	if got := e.vipHolders(lbs, vip); !slices.Equal(got, []string{nodeNameOf(lbs[0])}) {
		t.Errorf("VIP %s held by %v, want LB 1 %s", vip, got, nodeNameOf(lbs[0]))
	}

	// (2) VRRP failover between the LBs: HAProxy dies on the holder; the
	// VIP moves to the other LB and the API answers through it again.
	holder := lbs[0]
	start := time.Now()
	e.exec(e.host(holder), "killall haproxy")
	var moved, answered time.Duration
	for time.Since(start) < 20*time.Second {
		if moved == 0 {
			if hs := e.vipHolders(lbs, vip); slices.Equal(hs, []string{nodeNameOf(lbs[1])}) {
				moved = time.Since(start)
			}
		}
		if moved != 0 {
			if got, err := api.nodes(); err == nil && slices.Equal(got, want) {
				answered = time.Since(start)
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if moved == 0 || answered == 0 {
		t.Fatalf("after killing HAProxy on %s: VIP moved after %v (holders %v), API answered after %v", nodeNameOf(holder), moved, e.vipHolders(lbs, vip), answered)
	}
	t.Logf("VRRP failover between the LBs: the VIP moved to %s after %v; the API answered through it after %v",
		nodeNameOf(lbs[1]), moved.Round(time.Millisecond), answered.Round(time.Millisecond))
	if got := e.vipHolders(masters, vip); len(got) != 0 {
		t.Errorf("a master took the VIP: %v", got)
	}

	// (3) Heal of a master: HAProxy on both LBs is reloaded with the
	// victim out, then back in; the API answers through the VIP after.
	e.exec(e.host(holder), "systemctl start haproxy")
	pids := map[string]string{}
	for _, l := range lbs {
		pids[l.ID] = e.haproxyPid(l)
	}
	victim := masters[1]
	t0 = time.Now()
	e.lcmLong(inst, "heal", map[string]any{"vnfcInstanceId": []string{victim.ID}, "cause": "e2e: master heal behind dedicated LBs"}, "COMPLETED")
	t.Logf("heal of master %s: %v", nodeNameOf(victim), time.Since(t0).Round(100*time.Millisecond))
	_, vs = e.vnfcs(inst)
	masters = mastersOf(vs)
	if masters[1].ID != victim.ID || masters[1].Server == victim.Server {
		t.Fatalf("healed master %+v, was %+v", masters[1], victim)
	}
	for _, l := range lbs {
		deadline := time.Now().Add(15 * time.Second)
		for {
			st := e.haproxyServers(l)
			up := 0
			for _, s := range st {
				if s == "2" {
					up++
				}
			}
			if keys := keysOf(boolKeys(st)); slices.Equal(keys, wantNodes(masters)) && up == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("HAProxy on %s after the heal: %v, want the 3 masters up", nodeNameOf(l), st)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if e.haproxyPid(l) == pids[l.ID] {
			t.Errorf("HAProxy on %s was not reloaded (pid %s)", nodeNameOf(l), pids[l.ID])
		}
	}
	if e.haproxyRunning(masters[1]) {
		t.Errorf("HAProxy runs on the healed master")
	}
	if got, err := api.nodes(); err != nil || !slices.Equal(got, want) {
		t.Errorf("GET /api/v1/nodes through the VIP after the heal: %v %v, want %v", got, err, want)
	}

	// (3b) etcd behind the VIP on the dedicated LBs: an etcd client outside
	// the control plane survives the loss of the LB holding the VIP.
	for _, l := range lbs {
		e.waitBackendUp(l, "etcd", wantNodes(masters))
	}
	etcdClient := workers[0]
	e.giveEtcdClient(masters[0], etcdClient)
	if _, out, err := e.waitEtcdHealthVIP(etcdClient, vip); err != nil {
		t.Fatalf("etcd through the VIP: %v", err)
	} else {
		t.Logf("etcd through the VIP: %s", strings.TrimSpace(out))
	}
	hs := e.vipHolders(lbs, vip)
	if len(hs) != 1 {
		t.Fatalf("VIP holders %v", hs)
	}
	dead := lbs[slices.IndexFunc(lbs, func(l vnfc) bool { return nodeNameOf(l) == hs[0] })]
	if err := e.host(dead).Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	took, out, err := e.waitEtcdHealthVIP(etcdClient, vip)
	if err != nil {
		t.Fatalf("after the VIP holder %s died: %v", nodeNameOf(dead), err)
	}
	t.Logf("LB %s (the VIP holder) killed: etcdctl endpoint health through the VIP answered after %v (VIP now on %v): %s",
		nodeNameOf(dead), took.Round(time.Millisecond), e.vipHolders(lbs, vip), strings.TrimSpace(out))

	// (4) Terminate: the VIM, the VNFCs and the servers go.
	e.lcmLong(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	if code, _, _ := e.do("GET", "/v1.0/vims/"+vimID, "", nil); code != http.StatusNotFound {
		t.Errorf("GET the cluster's VIM after terminate: %d, want 404", code)
	}
	if s := e.servers(); len(s) != 0 {
		t.Errorf("servers left after terminate: %v", s)
	}
}
