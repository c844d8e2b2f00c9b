package kubeadm

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// vnfcOf builds a VNFC as the OpenStack driver reports it.
func vnfcOf(id, vdu, group, server string, cps map[string]string) model.VnfcResourceInfo {
	v := model.VnfcResourceInfo{ID: id, VduID: vdu,
		ComputeResource: model.ResourceHandle{ResourceID: server, VimLevelResourceType: "OS::Nova::Server"},
		Metadata:        map[string]any{"serverName": vdu, "sshHostKeyFingerprints": []any{"SHA256:" + id}}}
	if group != "" {
		v.Metadata["scaleGroup"] = group
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cps {
			if !yield(k) {
				return
			}
		}
	}) {
		v.VnfcCpInfo = append(v.VnfcCpInfo, model.VnfcCpInfo{ID: id + "-" + name, CpdID: name, CpProtocolInfo: []map[string]any{{
			"layerProtocol": "IP_OVER_ETHERNET",
			"ipOverEthernet": map[string]any{"ipAddresses": []any{
				map[string]any{"type": "IPV6", "addresses": []any{"fd00::1"}},
				map[string]any{"type": "IPV4", "addresses": []any{cps[name]}},
			}}}}})
	}
	return v
}

func sampleInfo() *model.InstantiatedVnfInfo {
	return &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{
		vnfcOf("masterNode-aaaa", "masterNode", "master_instance", "srv-m", map[string]string{"masterNode_CP1": "10.0.0.10"}),
		vnfcOf("workerNode-bbbb", "workerNode", "worker_instance", "srv-w1", map[string]string{"workerNode_CP1": "10.0.0.11"}),
		vnfcOf("workerNode-cccc", "workerNode", "worker_instance", "srv-w2", map[string]string{"workerNode_CP1": "10.0.0.12"}),
		vnfcOf("storage", "storageNode", "", "srv-s", map[string]string{"storage_CP1": "10.0.0.20"}),
	}}
}

func sampleFlavour() *model.Flavour {
	return &model.Flavour{ID: "simple", ScalingAspects: map[string]*model.ScalingAspect{
		"worker_instance": {VduDeltas: map[string]map[string]int{"workerNode": {"delta_1": 1}}}}}
}

func sampleParams(t *testing.T) *Params {
	t.Helper()
	p, err := ParseParams(map[string]any{ParamKey: map[string]any{
		"master_node": map[string]any{"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "username": "u", "password": "p",
			"cluster_cp_name": "masterNode_CP1"},
		"worker_node": map[string]any{"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "u", "password": "p"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func names(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

func TestClassifyByAspect(t *testing.T) {
	topo, err := classify(sampleInfo(), sampleFlavour(), sampleParams(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(topo.Masters), []string{"masternode-aaaa"}) || !slices.Equal(names(topo.Workers), []string{"workernode-bbbb", "workernode-cccc"}) {
		t.Fatalf("masters %v workers %v", names(topo.Masters), names(topo.Workers))
	}
	m := topo.Masters[0]
	if m.IP != "10.0.0.10" || m.SSHAddr != "10.0.0.10" || m.ServerID != "srv-m" || m.VnfcID != "masterNode-aaaa" ||
		!slices.Equal(m.Fingerprints, []string{"SHA256:masterNode-aaaa"}) || m.Role != Master {
		t.Errorf("master %+v", m)
	}
	if topo.EndpointIP != "10.0.0.10" || topo.Endpoint() != "https://10.0.0.10:6443" {
		t.Errorf("endpoint %s %s", topo.EndpointIP, topo.Endpoint())
	}
	if n := topo.ByVnfc("workerNode-cccc"); n == nil || n.IP != "10.0.0.12" {
		t.Errorf("ByVnfc: %v", n)
	}
	rest := topo.Without("workerNode-bbbb")
	if !slices.Equal(names(rest.All()), []string{"masternode-aaaa", "workernode-cccc"}) || len(topo.Workers) != 2 {
		t.Errorf("Without: %v (original %v)", names(rest.All()), names(topo.All()))
	}
}

// The aspect may name a VNFD scaling aspect instead of a Heat group: a
// VNFC without group metadata is matched through the aspect's VDU deltas.
func TestClassifyByAspectDeltasVduAndCP(t *testing.T) {
	info := sampleInfo()
	for i := range info.VnfcResourceInfo {
		delete(info.VnfcResourceInfo[i].Metadata, "scaleGroup")
	}
	p := sampleParams(t)
	p.Master.AspectID = "" // master by its CP
	topo, err := classify(info, sampleFlavour(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Masters) != 1 || len(topo.Workers) != 2 {
		t.Fatalf("masters %v workers %v", names(topo.Masters), names(topo.Workers))
	}
	// vdu_id wins over everything.
	p.Worker.AspectID, p.Worker.VduID = "", "workerNode"
	p.Worker.SSHCPName = "storage_CP1" // would match the storage VNFC by CP
	p.Worker.NICCPName = "workerNode_CP1"
	if _, err := classify(info, sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), `ssh_cp_name "storage_CP1"`) {
		t.Fatalf("a worker without the ssh CP: %v", err)
	}
}

func TestClassifyErrors(t *testing.T) {
	p := sampleParams(t)
	p.Worker.AspectID = "master_instance"
	if _, err := classify(sampleInfo(), sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), "matches both master_node and worker_node") {
		t.Errorf("overlap: %v", err)
	}
	p = sampleParams(t)
	p.Master.AspectID = "nope"
	if _, err := classify(sampleInfo(), sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), "no VNFC matches") || !strings.Contains(err.Error(), `group "master_instance"`) {
		t.Errorf("no master: %v", err)
	}
	p = sampleParams(t)
	p.Master.ClusterCPName = "vip_CP"
	info := sampleInfo()
	info.ExtCpInfo = []model.ExtCpInfo{{ID: "vip", CpdID: "vip_CP"}}
	if _, err := classify(info, sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), `"vip_CP" is a port of its own (the VIP) but has no IP address`) {
		t.Errorf("VIP without address: %v", err)
	}
	p.Master.ClusterCPName = "nope_CP"
	if _, err := classify(info, sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), "neither a connection point with an address on the master VNFC") {
		t.Errorf("unknown cluster CP: %v", err)
	}
	// Several masters on a master's own port: no VIP to share.
	info = haInfo(3)
	p = sampleParams(t)
	if _, err := classify(info, sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), "3 master VNFCs but") || !strings.Contains(err.Error(), "several masters need a virtual IP") {
		t.Errorf("masters without a VIP: %v", err)
	}
	p = sampleParams(t)
	p.Worker.NICCPName = "workerNode_CP9"
	if _, err := classify(sampleInfo(), sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), `nic_cp_name "workerNode_CP9" (its connection points: workerNode_CP1)`) {
		t.Errorf("missing nic CP: %v", err)
	}
}

// Tacker's floating-IP layout: ssh_cp_name names the FloatingIP resource,
// which is no VNFC CP; the node port's floating address is used.
func TestClassifyFloatingIP(t *testing.T) {
	info := sampleInfo()
	info.VnfcResourceInfo[1].VnfcCpInfo[0].Metadata = map[string]any{"floatingIpAddress": "172.24.4.11"}
	p := sampleParams(t)
	p.Worker.SSHCPName, p.Worker.NICCPName = "workerNode_FloatingIP", "workerNode_CP1"
	if _, err := classify(info, sampleFlavour(), p); err == nil || !strings.Contains(err.Error(), "workerNode-cccc has no address") {
		t.Fatalf("want the worker without a floating IP refused: %v", err)
	}
	info.VnfcResourceInfo[2].VnfcCpInfo[0].Metadata = map[string]any{"floatingIpAddress": "172.24.4.12"}
	topo, err := classify(info, sampleFlavour(), p)
	if err != nil {
		t.Fatal(err)
	}
	if w := topo.Workers[0]; w.SSHAddr != "172.24.4.11" || w.IP != "10.0.0.11" {
		t.Errorf("worker %+v", w)
	}
}

func TestNodeName(t *testing.T) {
	for in, want := range map[string]string{
		"workerNode-ab3xq6rfl2vc": "workernode-ab3xq6rfl2vc",
		"masterNode":              "masternode",
	} {
		if got := NodeName(in); got != want {
			t.Errorf("NodeName(%q) = %q, want %q", in, got, want)
		}
	}
	a, b := NodeName("VDU_1/x"), NodeName("VDU-1.x")
	if a == b || !strings.HasPrefix(a, "vdu-1-x-") || len(a) != len("vdu-1-x-")+8 {
		t.Errorf("replaced characters: %q %q", a, b)
	}
	long := NodeName(strings.Repeat("a", 80))
	if len(long) > 63 || NodeName(strings.Repeat("a", 81)) == long {
		t.Errorf("long ids: %q", long)
	}
	if n := NodeName("__"); !strings.HasPrefix(n, "node-") {
		t.Errorf("empty after cleaning: %q", n)
	}
}

func TestHostsBlockAndNoProxy(t *testing.T) {
	topo, err := classify(sampleInfo(), sampleFlavour(), sampleParams(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "# BEGIN mini-VNFM Kubernetes nodes\n10.0.0.10 masternode-aaaa\n10.0.0.11 workernode-bbbb\n10.0.0.12 workernode-cccc\n# END mini-VNFM Kubernetes nodes\n"
	if got := hostsBlock(topo.All()); got != want {
		t.Errorf("hosts block:\n%s", got)
	}
	p := sampleParams(t)
	if env := scriptEnv(p, topo); len(env) != 0 {
		t.Errorf("env without proxy or version: %v", env)
	}
	p.Proxy = kube.Proxy{HTTPProxy: "http://u:pw@proxy:3128", NoProxy: "example.com,10.0.0.10"}
	p.KubernetesVersion = "v1.30.2"
	env := scriptEnv(p, topo)
	wantNP := "example.com,10.0.0.10,127.0.0.1,localhost,192.168.0.0/16,10.96.0.0/12,10.0.0.0/24,10.0.0.11,10.0.0.12"
	if env["no_proxy"] != wantNP || env["NO_PROXY"] != wantNP || env["http_proxy"] != p.Proxy.HTTPProxy || env["HTTP_PROXY"] != p.Proxy.HTTPProxy ||
		env["https_proxy"] != "" || env["K8S_VERSION"] != "v1.30.2" {
		t.Errorf("env %v", env)
	}
	p.Proxy.K8sNodeCIDR = "10.0.0.0/16"
	if np := noProxy(p, topo); !strings.Contains(np, ",10.0.0.0/16,") || strings.Contains(np, "10.0.0.0/24") {
		t.Errorf("no_proxy with k8s_node_cidr: %s", np)
	}
	if s := proxySecrets(p); !slices.Equal(s, []string{"pw"}) {
		t.Errorf("proxy secrets %v", s)
	}
}

func TestResults(t *testing.T) {
	out := "[install_k8s_cluster.sh] role main-master\nInstall Success!\nVNFM_RESULT status=installed\nVNFM_RESULT api_endpoint=https://10.0.0.10:6443\r\nVNFM_RESULT error=a=b\nnoise VNFM_RESULT x=y\n"
	r := results(out)
	if r["status"] != "installed" || r["api_endpoint"] != "https://10.0.0.10:6443" || r["error"] != "a=b" || r["x"] != "" {
		t.Errorf("results %v", r)
	}
}

func TestDrainError(t *testing.T) {
	e := &DrainError{Node: "w1", Timeout: 300e9, Pods: []string{"default/db-0", "prod/api-1"}}
	if s := e.Error(); !strings.Contains(s, "node w1 was not drained within 5m0s") || !strings.Contains(s, "pods that blocked: default/db-0, prod/api-1") ||
		!strings.Contains(s, `drain_policy "force"`) {
		t.Errorf("%s", s)
	}
}

func TestSetVimConnection(t *testing.T) {
	in := &model.VnfInstance{ID: "i1", VimConnectionInfo: []model.VimConnectionInfo{{ID: "os", VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3"}}}
	setVimConnection(in, "vim-1", "k8s", "https://10.0.0.10:6443", "PEM")
	setVimConnection(in, "vim-1", "k8s", "https://10.0.0.10:6443", "PEM") // a retry: no duplicate
	if len(in.VimConnectionInfo) != 2 || in.VimConnectionInfo[0].ID != "os" {
		t.Fatalf("vimConnectionInfo %+v", in.VimConnectionInfo)
	}
	c := in.VimConnectionInfo[1]
	if c.VimID != "vim-1" || c.VimType != VimTypeKubernetes || c.AccessInfo["auth_url"] != "https://10.0.0.10:6443" ||
		c.InterfaceInfo["ssl_ca_cert"] != "PEM" || c.Extra["vimName"] != "k8s" || !ours(c, "k8s") || ours(in.VimConnectionInfo[0], "") {
		t.Errorf("entry %+v", c)
	}
	for k := range c.AccessInfo {
		if strings.Contains(k, "token") || strings.Contains(k, "password") {
			t.Errorf("accessInfo holds a secret: %v", c.AccessInfo)
		}
	}
}

// The embedded installer and the sample package's copy are
// scripts/install_k8s_cluster.sh plus the generated-file marker.
func TestScriptCopiesAreCurrent(t *testing.T) {
	src, err := os.ReadFile("../../scripts/install_k8s_cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	var want bytes.Buffer
	want.Write(first)
	want.WriteString("\n# Code generated from scripts/install_k8s_cluster.sh by go generate ./mgmtdrivers/kubeadm; DO NOT EDIT.\n")
	want.Write(rest)
	sample, err := os.ReadFile("../../samples/kubeadm-single/Scripts/install_k8s_cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	haSample, err := os.ReadFile("../../samples/kubeadm-ha/Scripts/install_k8s_cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	lbSample, err := os.ReadFile("../../samples/kubeadm-ha-lb/Scripts/install_k8s_cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"the embedded copy": builtinScript, "samples/kubeadm-single/Scripts/install_k8s_cluster.sh": sample,
		"samples/kubeadm-ha/Scripts/install_k8s_cluster.sh": haSample, "samples/kubeadm-ha-lb/Scripts/install_k8s_cluster.sh": lbSample} {
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s is not current: run go generate ./mgmtdrivers/kubeadm", name)
		}
	}
	if !isOurScript(builtinScript) || isOurScript([]byte("#!/bin/bash\necho 'Install Success!'\n")) {
		t.Error("isOurScript")
	}
}

// parseCA computes kubeadm's discovery hash like the stand-in (and kubeadm)
// do, and refuses what is not a CA certificate.
func TestParseCA(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(isCA bool) []byte {
		tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(),
			NotAfter: time.Now().Add(time.Hour), IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	ca := mk(true)
	text, hash, err := parseCA(append([]byte("junk before\n"), ca...))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := k8sstandin.ParseCertPEM(ca)
	if text != string(ca) || hash != k8sstandin.CACertHash(cert) {
		t.Errorf("parseCA: %q %s, want %s", text, hash, k8sstandin.CACertHash(cert))
	}
	if _, _, err := parseCA(mk(false)); err == nil {
		t.Error("a leaf certificate was taken for the CA")
	}
	if _, _, err := parseCA([]byte("nothing")); err == nil {
		t.Error("no PEM accepted")
	}
}

// A request is refused when it is accepted, with the JSON path of each
// problem: bad parameters, the only master healed on its own.
func TestParseParamsAtAccept(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	bad := &model.InstantiateVnfRequest{AdditionalParams: map[string]any{ParamKey: map[string]any{"master_node": map[string]any{}}}}
	_, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpInstantiate, Request: driverapi.Request{Instantiate: bad}, Instance: &model.VnfInstance{ID: "i"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "additionalParams."+ParamKey+".worker_node: is required") {
		t.Errorf("bad instantiate: %v", err)
	}
	good := &model.InstantiateVnfRequest{AdditionalParams: map[string]any{ParamKey: map[string]any{
		"master_node": map[string]any{"ssh_cp_name": "a", "username": "u", "password": "p", "cluster_cp_name": "a"},
		"worker_node": map[string]any{"ssh_cp_name": "b", "username": "u", "password": "p"}}}}
	p, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpInstantiate, Request: driverapi.Request{Instantiate: good}, Instance: &model.VnfInstance{ID: "i"}}, nil)
	if err != nil || p.VimName != "kubernetes_vim_i" {
		t.Errorf("good instantiate: %+v %v", p, err)
	}
	// Later operations start from the parameters accepted with the
	// instantiation (stored), not from the instance's additionalParams.
	stored := sampleParams(t)
	stored.VimName = "kubernetes_vim_i"
	in := &model.VnfInstance{ID: "i", InstantiatedVnfInfo: sampleInfo()}
	heal := func(ids ...string) error {
		_, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpHeal, Instance: in, Flavour: sampleFlavour(), Infra: &testInfra{},
			Request: driverapi.Request{Heal: &model.HealVnfRequest{VnfcInstanceID: ids}}}, stored)
		return err
	}
	if err := heal("workerNode-bbbb"); err != nil {
		t.Errorf("worker heal: %v", err)
	}
	if err := heal(); err != nil {
		t.Errorf("entire heal: %v", err)
	}
	if err := heal("workerNode-bbbb", "masterNode-aaaa"); err == nil || !strings.Contains(err.Error(), "VNFC masterNode-aaaa is the cluster's only master") {
		t.Errorf("master heal: %v", err)
	}
	// An aspect that scales the masters is refused; the workers' is not.
	masters := sampleFlavour()
	masters.ScalingAspects["master_instance"] = &model.ScalingAspect{VduDeltas: map[string]map[string]int{"masterNode": {"delta_1": 1}}}
	for aspect, want := range map[string]string{"worker_instance": "", "master_instance": "aspect master_instance scales the master VDU masterNode: scaling the control plane is not supported"} {
		_, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpScale, Instance: in, Flavour: masters, Infra: &testInfra{},
			Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: aspect}}}, stored)
		if (want == "" && err != nil) || (want != "" && (err == nil || !strings.Contains(err.Error(), want))) {
			t.Errorf("scale of %s: %v, want %q", aspect, err, want)
		}
	}
	// Terminating or rebuilding the cluster is refused while another
	// instance uses its VIM, naming the users.
	vims := &fakeVims{users: map[string][]string{"other": {"VNF instance x"}}}
	for _, req := range []driverapi.Request{{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}}, {Heal: &model.HealVnfRequest{}}} {
		a := &driverapi.Accept{Instance: in, Flavour: sampleFlavour(), Infra: &testInfra{}, Vims: vims, Request: req}
		if _, err := d.ParseParams(ctx, a, stored); err != nil {
			t.Errorf("%+v with the cluster's VIM unused: %v", req, err)
		}
		vims.users["kubernetes_vim_i"] = []string{"VNF instance 5c0e"}
		_, err := d.ParseParams(ctx, a, stored)
		var ce *driverapi.ConflictError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "the cluster's Kubernetes VIM kubernetes_vim_i is in use by VNF instance 5c0e") {
			t.Errorf("%+v with the cluster's VIM in use: %v, want a ConflictError (409) naming the user", req, err)
		}
		// additionalParams.force: the operator means it.
		forced := *a
		forced.Request = withForce(req)
		if _, err := d.ParseParams(ctx, &forced, stored); err != nil {
			t.Errorf("%+v with force: %v", forced.Request, err)
		}
		delete(vims.users, "kubernetes_vim_i")
	}
	// A scale-in that would leave no worker is refused the same way; one
	// that leaves a worker is accepted (its victims are drained).
	scaled := &model.VnfInstance{ID: "i", InstantiatedVnfInfo: sampleInfo()}
	scaled.InstantiatedVnfInfo.ScaleStatus = []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 2}}
	scaleIn := func(steps int, force bool) error {
		req := driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &steps}}
		if force {
			req = withForce(req)
		}
		_, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpScale, Instance: scaled, Flavour: sampleFlavour(), Infra: &testInfra{}, Vims: vims, Request: req}, stored)
		return err
	}
	if err := scaleIn(2, false); err != nil {
		t.Errorf("scale-in of every worker with the cluster's VIM unused: %v", err)
	}
	vims.users["kubernetes_vim_i"] = []string{"VNF instance 5c0e"}
	err = scaleIn(2, false)
	var ce *driverapi.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "is in use by VNF instance 5c0e") || !strings.Contains(err.Error(), "removes 2 worker node(s) of 2") {
		t.Errorf("scale-in of every worker with the cluster's VIM in use: %v, want a ConflictError (409) naming the user", err)
	}
	if err := scaleIn(1, false); err != nil {
		t.Errorf("scale-in leaving a worker with the cluster's VIM in use: %v", err)
	}
	if err := scaleIn(2, true); err != nil {
		t.Errorf("scale-in of every worker with force: %v", err)
	}
	delete(vims.users, "kubernetes_vim_i")
	// Overrides of a scale request apply to a copy of what is stored.
	sp, err := d.ParseParams(ctx, &driverapi.Accept{Operation: model.OpScale, Instance: in, Flavour: sampleFlavour(), Infra: &testInfra{},
		Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance",
			AdditionalParams: map[string]any{"worker_node_password": "new-pw", "drain_timeout": "1m"}}}}, stored)
	if err != nil || sp.Worker.Password != "new-pw" || sp.DrainTimeout != time.Minute || stored.Worker.Password != "p" {
		t.Errorf("scale overrides: %+v %v (stored %q)", sp, err, stored.Worker.Password)
	}
}

// withForce is req with additionalParams.force: true.
func withForce(req driverapi.Request) driverapi.Request {
	force := map[string]any{"force": true}
	switch {
	case req.Terminate != nil:
		t := *req.Terminate
		t.AdditionalParams = force
		return driverapi.Request{Terminate: &t}
	case req.Heal != nil:
		h := *req.Heal
		h.AdditionalParams = force
		return driverapi.Request{Heal: &h}
	case req.Scale != nil:
		s := *req.Scale
		s.AdditionalParams = force
		return driverapi.Request{Scale: &s}
	}
	return req
}
