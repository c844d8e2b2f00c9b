package kubeadm

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// fakeProgress records per-node checkpoints like the engine's journal.
type fakeProgress struct {
	mu    sync.Mutex
	nodes map[string]string // node -> state
	out   map[string]json.RawMessage
	runs  map[string]int
}

func newProgress() *fakeProgress {
	return &fakeProgress{nodes: map[string]string{}, out: map[string]json.RawMessage{}, runs: map[string]int{}}
}

func (f *fakeProgress) Note(context.Context, string) error { return nil }
func (f *fakeProgress) NodeStart(_ context.Context, n, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[n] = model.StepRunning
	f.runs[n]++
	return nil
}
func (f *fakeProgress) NodeNote(context.Context, string, string) error { return nil }
func (f *fakeProgress) NodeDone(_ context.Context, n string, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[n] = model.StepCompleted
	f.out[n], _ = json.Marshal(out)
	return nil
}
func (f *fakeProgress) NodeFailed(_ context.Context, n string, _ error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[n] = model.StepFailed
	return nil
}
func (f *fakeProgress) NodeCompleted(n string) (json.RawMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out[n], f.nodes[n] == model.StepCompleted
}

// fakeVims records registrations; users lists who uses a VIM, by name.
type fakeVims struct {
	mu      sync.Mutex
	vims    map[string]driverapi.KubernetesVim
	removed []string
	users   map[string][]string
}

func (f *fakeVims) RegisterKubernetesVim(_ context.Context, v driverapi.KubernetesVim) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vims[v.Name] = v
	return "vim-" + v.Name, nil
}

func (f *fakeVims) VimUsers(_ context.Context, name, _ string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users[name], nil
}

func (f *fakeVims) RemoveKubernetesVim(_ context.Context, name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.vims, name)
	f.removed = append(f.removed, name)
	return nil
}

// proxyRecorder wraps the stand-in's kubeadm on a host to record the proxy
// variables the install script runs it with.
const proxyRecorder = `#!/bin/sh
env | grep -i '_proxy=' | sort > /var/lib/kubeadm-proxy-env
exec /usr/local/bin/k8s-standin kubeadm "$@"
`

func hostVnfc(id, vdu, group string, h *testhosts.Host, cp string) model.VnfcResourceInfo {
	fps := []any{}
	for _, f := range h.HostKeyFingerprints() {
		fps = append(fps, f)
	}
	return model.VnfcResourceInfo{ID: id, VduID: vdu,
		ComputeResource: model.ResourceHandle{ResourceID: "server-" + h.Name, VimLevelResourceType: "OS::Nova::Server"},
		Metadata:        map[string]any{"scaleGroup": group, "sshHostKeyFingerprints": fps, "serverName": vdu},
		VnfcCpInfo: []model.VnfcCpInfo{{ID: id + "-" + cp, CpdID: cp, CpProtocolInfo: []map[string]any{{"layerProtocol": "IP_OVER_ETHERNET",
			"ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "addresses": []any{h.IP.String()}}}}}}}}}
}

// The driver on its own against real hosts: the master logs in with a
// password, the workers with a private key; the proxy settings reach kubeadm
// with no_proxy extended; the cluster is registered; a scale-out rollback
// takes the joined node out again.
func TestInstantiateOnHostsWithKeysAndProxy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: this test creates test hosts (network namespaces, sshd) and needs root; run `go test` as root")
	}
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "kadmd", Subnet: "10.77.62.0/24"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "kubeadm-test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	const pw = `m'pw; touch /tmp/pwned #`
	specs := []testhosts.HostSpec{
		{Name: "m1", Users: []testhosts.User{{Name: "ubuntu", Password: pw, Sudo: testhosts.SudoNoPasswd}}, NoPeers: true},
		{Name: "w1", Users: []testhosts.User{{Name: "core", AuthorizedKeys: []string{pub}, Sudo: testhosts.SudoNoPasswd}}, NoPeers: true},
		{Name: "w2", Users: []testhosts.User{{Name: "core", AuthorizedKeys: []string{pub}, Sudo: testhosts.SudoNoPasswd}}, NoPeers: true},
	}
	hs, err := hn.AddHosts(ctx, specs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8sstandin.InstallAll(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	m1, w1, w2 := hs[0], hs[1], hs[2]
	for _, h := range []*testhosts.Host{w1, w2} {
		cmd := h.Command(ctx, "sh", "-c", "cat > /usr/bin/kubeadm.new && chmod 755 /usr/bin/kubeadm.new && mv -f /usr/bin/kubeadm.new /usr/bin/kubeadm")
		cmd.Stdin = strings.NewReader(proxyRecorder)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	params := map[string]any{ParamKey: map[string]any{
		"master_node": map[string]any{"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "username": "ubuntu", "password": pw,
			"cluster_cp_name": "masterNode_CP1", "pod_cidr": "10.244.0.0/16"},
		"worker_node": map[string]any{"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "core",
			"ssh_private_key": string(pem.EncodeToMemory(blk))},
		"proxy":              map[string]any{"http_proxy": "http://proxy.invalid:3128", "no_proxy": "corp.example"},
		"kubernetes_version": "v1.31.4", "worker_parallelism": 2,
	}}
	inst := &model.VnfInstance{ID: "inst-1", InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple", AdditionalParams: params,
		VnfcResourceInfo: []model.VnfcResourceInfo{
			hostVnfc("masterNode-m1", "masterNode", "master_instance", m1, "masterNode_CP1"),
			hostVnfc("workerNode-w1", "workerNode", "worker_instance", w1, "workerNode_CP1"),
			hostVnfc("workerNode-w2", "workerNode", "worker_instance", w2, "workerNode_CP1"),
		}}}
	pins := &remotetest.Pins{}
	prog, vims := newProgress(), &fakeVims{vims: map[string]driverapi.KubernetesVim{}}
	d := New(Options{Pins: pins, Dial: hn.Dial, ConnectWait: time.Minute})
	req := driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: params}}
	p, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpInstantiate, Request: req, Instance: inst, Flavour: &model.Flavour{ID: "simple"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	op := &driverapi.Op{ID: "op-1", Operation: model.OpInstantiate, Instance: inst, Request: req, Infra: &testInfra{},
		Flavour: &model.Flavour{ID: "simple"}, Vims: vims, Progress: prog, Scratch: map[string]json.RawMessage{},
		ResourceChanges: &model.ResourceChanges{}, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), CancelRequested: func() bool { return false }}
	if err := d.InstantiateEnd(ctx, op, p); err != nil {
		t.Fatal(err)
	}

	// Every node checkpointed; the script's results recorded.
	for _, n := range []string{"masternode-m1", "workernode-w1", "workernode-w2"} {
		if prog.nodes[n] != model.StepCompleted || prog.runs[n] != 1 {
			t.Errorf("node %s: %s after %d run(s)", n, prog.nodes[n], prog.runs[n])
		}
	}
	if out := string(prog.out["masternode-m1"]); !strings.Contains(out, `"kubernetesVersion":"v1.31.4"`) || !strings.Contains(out, `"apiEndpoint":"https://`+m1.IP.String()+`:6443"`) {
		t.Errorf("master output %s", out)
	}
	// Each node's checkpoint says how long kubeadm itself ran (make bench
	// tells the VNFM's time from the test world's by it).
	for _, n := range []string{"masternode-m1", "workernode-w1", "workernode-w2"} {
		var k kubeadmTime
		if err := json.Unmarshal(prog.out[n], &k); err != nil || k.Seconds <= 0 || time.Since(time.Unix(int64(k.Started), 0)) > time.Hour {
			t.Errorf("node %s: kubeadm time %+v in %s (%v)", n, k, prog.out[n], err)
		}
	}
	// The password reached sudo and ssh as data.
	if out, _ := m1.Exec(ctx, "sh", "-c", "ls /tmp/pwned 2>&1 || true"); !strings.Contains(out, "No such file") {
		t.Errorf("the password was run as shell: %s", out)
	}
	// Proxies exported, no_proxy extended with CIDRs, the API and every node.
	env, err := w1.Exec(ctx, "cat", "/var/lib/kubeadm-proxy-env")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"http_proxy=http://proxy.invalid:3128", "HTTP_PROXY=http://proxy.invalid:3128", "corp.example", "127.0.0.1", "localhost",
		"10.244.0.0/16", "10.96.0.0/12", m1.IP.String(), w1.IP.String(), w2.IP.String(), "10.77.62.0/24"} {
		if !strings.Contains(env, want) {
			t.Errorf("kubeadm's proxy environment lacks %q:\n%s", want, env)
		}
	}
	// Fresh, short-lived tokens only: the ones used are deleted.
	// (The real kubeadm prints no table at all when there is no token.)
	if out, err := m1.Exec(ctx, "kubeadm", "token", "list", "--kubeconfig", "/etc/kubernetes/admin.conf"); err != nil || regexp.MustCompile(`(?m)^[a-z0-9]{6}\.[a-z0-9]{16}\s`).MatchString(out) {
		t.Errorf("bootstrap tokens left after the install (want none):\n%s %v", out, err)
	}
	// The VIM and vimConnectionInfo.
	v, ok := vims.vims["kubernetes_vim_inst-1"]
	if !ok || v.AuthURL != "https://"+m1.IP.String()+":6443" || v.BearerToken == "" || !strings.Contains(v.SSLCACert, "BEGIN CERTIFICATE") || v.Verify {
		t.Fatalf("registered VIM %+v", v)
	}
	if len(inst.VimConnectionInfo) != 1 || inst.VimConnectionInfo[0].VimID != "vim-kubernetes_vim_inst-1" {
		t.Fatalf("vimConnectionInfo %+v", inst.VimConnectionInfo)
	}
	// Pins per server id and address.
	for _, h := range hs {
		if p, _ := pins.Get(ctx, "server-"+h.Name, h.IP.String()); len(p) != 1 || p[0].Fingerprint != h.HostKeyFingerprints()[0] {
			t.Errorf("pins of %s: %+v", h.Name, p)
		}
	}
	// A second run (a retry after a crash) re-joins nothing.
	if err := d.InstantiateEnd(ctx, op, p); err != nil {
		t.Fatal(err)
	}
	for n, runs := range prog.runs {
		if runs != 1 {
			t.Errorf("node %s ran %d times", n, runs)
		}
	}

	// Rolling back a scale-out that added w2: its Node goes.
	sop := *op
	sop.Operation, sop.Request = model.OpScale, driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance"}}
	sop.ResourceChanges = &model.ResourceChanges{AffectedVnfcs: []model.AffectedVnfc{{ID: "workerNode-w2", ChangeType: "ADDED"}}}
	sop.RollingBack = true
	if err := d.Rollback(ctx, model.HookScaleEnd, &sop, p); err != nil {
		t.Fatal(err)
	}
	out, err := m1.Exec(ctx, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf", "get", "nodes", "-o", "name")
	if err != nil || strings.Contains(out, "workernode-w2") || !strings.Contains(out, "workernode-w1") {
		t.Errorf("nodes after the scale-out rollback: %s %v", out, err)
	}

	// Terminate: the VIM and the entry go.
	top := *op
	top.Operation, top.Request = model.OpTerminate, driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}}
	if err := d.TerminateEnd(ctx, &top, p); err != nil {
		t.Fatal(err)
	}
	if len(vims.vims) != 0 || len(inst.VimConnectionInfo) != 0 {
		t.Errorf("after terminate: VIMs %v, vimConnectionInfo %v", vims.vims, inst.VimConnectionInfo)
	}

	// A wrong worker key fails at the login, naming the user (new VMs get
	// authentication retries until ConnectWait: cloud-init may still be
	// writing the key).
	bad := *op
	badParams := map[string]any{ParamKey: map[string]any{}}
	b, _ := json.Marshal(params)
	_ = json.Unmarshal(b, &badParams)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	oblk, _ := ssh.MarshalPrivateKey(other, "other")
	badParams[ParamKey].(map[string]any)["worker_node"].(map[string]any)["ssh_private_key"] = string(pem.EncodeToMemory(oblk))
	bp, err := ParseParams(badParams)
	if err != nil {
		t.Fatal(err)
	}
	bad.Instance = &model.VnfInstance{ID: "inst-1", InstantiatedVnfInfo: inst.InstantiatedVnfInfo}
	bad.Progress = newProgress()
	err = New(Options{Pins: pins, Dial: hn.Dial, ConnectWait: 3 * time.Second}).InstantiateEnd(ctx, &bad, bp)
	var ae *remote.AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), `user "core"`) {
		t.Errorf("wrong key: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
