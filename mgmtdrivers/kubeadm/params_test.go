package kubeadm

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
	"golang.org/x/crypto/ssh"
)

// tackerParams is the parameter file of Tacker's kubeadm usage guide
// (simple flavour), as JSON decodes it.
func tackerParams(t *testing.T) map[string]any {
	t.Helper()
	const doc = `{
	  "k8s_cluster_installation_param": {
	    "script_path": "Scripts/install_k8s_cluster.sh",
	    "vim_name": "kubernetes_vim",
	    "master_node": {
	      "aspect_id": "master_instance",
	      "ssh_cp_name": "masterNode_CP1",
	      "nic_cp_name": "masterNode_CP1",
	      "username": "ubuntu",
	      "password": "ubuntu",
	      "pod_cidr": "192.168.3.0/16",
	      "cluster_cidr": "10.199.187.0/24",
	      "cluster_cp_name": "masterNode_CP1"
	    },
	    "worker_node": {
	      "aspect_id": "worker_instance",
	      "ssh_cp_name": "workerNode_CP2",
	      "nic_cp_name": "workerNode_CP2",
	      "username": "ubuntu",
	      "password": "ubuntu"
	    },
	    "proxy": {
	      "http_proxy": "http://user1:password1@host1:port1",
	      "https_proxy": "https://user2:password2@host2:3128",
	      "no_proxy": "192.168.246.0/24,10.0.0.1",
	      "k8s_node_cidr": "10.10.0.0/24"
	    }
	  },
	  "lcm-operation-user-data": "./UserData/k8s_cluster_user_data.py",
	  "lcm-operation-user-data-class": "KubernetesClusterUserData"
	}`
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	// The guide's pod_cidr has host bits set (192.168.3.0/16), which the
	// one CIDR rule refuses (TestParseTackerParams): its network.
	param(m, "master_node")["pod_cidr"] = "192.168.0.0/16"
	return m
}

func param(m map[string]any, path ...string) map[string]any {
	cur := m[ParamKey].(map[string]any)
	for _, p := range path {
		cur = cur[p].(map[string]any)
	}
	return cur
}

func problems(t *testing.T, err error) []string {
	t.Helper()
	var pe *kube.ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *kube.ParamError, got %v", err)
	}
	return pe.Problems
}

func wantProblem(t *testing.T, err error, key, text string) {
	t.Helper()
	for _, p := range problems(t, err) {
		if (strings.HasPrefix(p, key+": ") || strings.Contains(p, "."+key+": ")) && strings.Contains(p, text) {
			return
		}
	}
	t.Errorf("no problem %q mentioning %q in %v", key, text, err)
}

func TestParseTackerParams(t *testing.T) {
	m := tackerParams(t)
	// Tacker's sample proxy port is a placeholder; make it a URL.
	param(m, "proxy")["http_proxy"] = "http://user1:password1@host1:3128"
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.ScriptPath != "Scripts/install_k8s_cluster.sh" || p.VimName != "kubernetes_vim" {
		t.Errorf("script %q vim %q", p.ScriptPath, p.VimName)
	}
	if p.Master.AspectID != "master_instance" || p.Master.SSHCPName != "masterNode_CP1" || p.Master.ClusterCPName != "masterNode_CP1" ||
		p.Master.Username != "ubuntu" || p.Master.Password != "ubuntu" {
		t.Errorf("master %+v", p.Master)
	}
	if p.Master.PodCIDR != "192.168.0.0/16" || p.Master.ClusterCIDR != "10.199.187.0/24" {
		t.Errorf("CIDRs %s %s", p.Master.PodCIDR, p.Master.ClusterCIDR)
	}
	// A CIDR with host bits set, as the guide writes it, is refused with
	// the network it names (one rule for both drivers: kube.Obj.CIDR).
	param(m, "master_node")["pod_cidr"] = "192.168.3.0/16"
	_, err = ParseParams(m)
	wantProblem(t, err, ParamKey+".master_node.pod_cidr", `"192.168.3.0/16" has host bits set: give the network address 192.168.0.0/16`)
	if p.Worker.AspectID != "worker_instance" || p.Worker.NICCPName != "workerNode_CP2" {
		t.Errorf("worker %+v", p.Worker)
	}
	if !p.Proxy.Enabled() || p.Proxy.K8sNodeCIDR != "10.10.0.0/24" || p.Proxy.NoProxy != "192.168.246.0/24,10.0.0.1" {
		t.Errorf("proxy %+v", p.Proxy)
	}
	if p.WorkerParallelism != DefaultWorkerParallelism || p.DrainTimeout != DefaultDrainTimeout || p.DrainPolicy != DrainFail ||
		p.JoinTokenTTL != DefaultJoinTokenTTL || p.KubernetesVersion != "" {
		t.Errorf("defaults %+v", p)
	}
}

func TestParseDefaultsAndOurOptions(t *testing.T) {
	m := tackerParams(t)
	delete(m[ParamKey].(map[string]any), "proxy")
	delete(m[ParamKey].(map[string]any), "script_path")
	delete(param(m, "master_node"), "pod_cidr")
	delete(param(m, "master_node"), "cluster_cidr")
	delete(param(m, "worker_node"), "nic_cp_name")
	top := m[ParamKey].(map[string]any)
	top["worker_parallelism"] = "3" // numbers as strings work too (Tacker bug 1978563)
	top["drain_timeout"] = "2m"
	top["drain_policy"] = "force"
	top["kubernetes_version"] = "1.30.2"
	top["join_token_ttl"] = float64(600)
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.ScriptPath != "" || p.Master.PodCIDR != DefaultPodCIDR || p.Master.ClusterCIDR != DefaultClusterCIDR || p.Worker.NICCPName != "workerNode_CP2" {
		t.Errorf("defaults: %+v", p)
	}
	if p.WorkerParallelism != 3 || p.DrainTimeout != 2*time.Minute || p.DrainPolicy != DrainForce ||
		p.KubernetesVersion != "v1.30.2" || p.JoinTokenTTL != 10*time.Minute || p.Proxy.Enabled() {
		t.Errorf("options: %+v", p)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func(m map[string]any)
		key, text string
	}{
		{"missing", func(m map[string]any) { delete(m, ParamKey) }, ParamKey, "is required"},
		{"not an object", func(m map[string]any) { m[ParamKey] = "x" }, ParamKey, "must be an object, not a string"},
		{"no master", func(m map[string]any) { delete(m[ParamKey].(map[string]any), "master_node") }, ParamKey + ".master_node", "is required"},
		{"no username", func(m map[string]any) { delete(param(m, "worker_node"), "username") }, ParamKey + ".worker_node.username", "is required"},
		{"no password", func(m map[string]any) { delete(param(m, "master_node"), "password") }, ParamKey + ".master_node.password", "unless ssh_private_key"},
		{"no ssh cp", func(m map[string]any) { delete(param(m, "worker_node"), "ssh_cp_name") }, ParamKey + ".worker_node.ssh_cp_name", "is required"},
		{"no cluster cp", func(m map[string]any) { delete(param(m, "master_node"), "cluster_cp_name") }, ParamKey + ".master_node.cluster_cp_name", "is required"},
		{"bad pod cidr", func(m map[string]any) { param(m, "master_node")["pod_cidr"] = "10.0.0/8" }, ParamKey + ".master_node.pod_cidr", `"10.0.0/8" is not an IPv4 CIDR`},
		{"overlap", func(m map[string]any) {
			param(m, "master_node")["pod_cidr"] = "10.0.0.0/8"
			param(m, "master_node")["cluster_cidr"] = "10.96.0.0/12"
		}, ParamKey + ".master_node.cluster_cidr", "overlaps the pod CIDR"},
		{"number as name", func(m map[string]any) { param(m, "master_node")["username"] = float64(5) }, ParamKey + ".master_node.username", "must be a string, not a number"},
		{"unknown key", func(m map[string]any) { param(m, "master_node")["pod_cdir"] = "x" }, ParamKey + ".master_node.pod_cdir", "is not a known parameter"},
		{"master key on worker", func(m map[string]any) { param(m, "worker_node")["pod_cidr"] = "10.0.0.0/8" }, ParamKey + ".worker_node.pod_cidr", "belongs in master_node"},
		{"helm", func(m map[string]any) {
			m[ParamKey].(map[string]any)["helm_installation_script_path"] = "Scripts/helm.sh"
		},
			ParamKey + ".helm_installation_script_path", "is not supported"},
		{"fip", func(m map[string]any) { param(m, "master_node")["cluster_fip_name"] = "fip" }, ParamKey + ".master_node.cluster_fip_name", "is not supported"},
		{"bad proxy", func(m map[string]any) { param(m, "proxy")["http_proxy"] = "proxy:3128" }, ParamKey + ".proxy.http_proxy", "is not an http(s) URL"},
		{"proxy password hidden", func(m map[string]any) { param(m, "proxy")["https_proxy"] = "ftp://u:s3cr3t@h:1" }, ParamKey + ".proxy.https_proxy", "ftp://u:xxxxx@h:1"},
		{"no_proxy spaces", func(m map[string]any) { param(m, "proxy")["no_proxy"] = "a, b" }, ParamKey + ".proxy.no_proxy", "without spaces"},
		{"node cidr", func(m map[string]any) { param(m, "proxy")["k8s_node_cidr"] = "10.10.0.1" }, ParamKey + ".proxy.k8s_node_cidr", "is not an IPv4 CIDR"},
		{"script outside", func(m map[string]any) { m[ParamKey].(map[string]any)["script_path"] = "../../etc/passwd" }, ParamKey + ".script_path", "inside the VNF package"},
		{"parallelism", func(m map[string]any) { m[ParamKey].(map[string]any)["worker_parallelism"] = float64(0) }, ParamKey + ".worker_parallelism", "out of range 1..100"},
		{"parallelism fraction", func(m map[string]any) { m[ParamKey].(map[string]any)["worker_parallelism"] = 2.5 }, ParamKey + ".worker_parallelism", "whole number"},
		{"drain timeout", func(m map[string]any) { m[ParamKey].(map[string]any)["drain_timeout"] = "soon" }, ParamKey + ".drain_timeout", "neither seconds nor a duration"},
		{"drain timeout range", func(m map[string]any) { m[ParamKey].(map[string]any)["drain_timeout"] = "48h" }, ParamKey + ".drain_timeout", "out of range"},
		{"drain policy", func(m map[string]any) { m[ParamKey].(map[string]any)["drain_policy"] = "skip" }, ParamKey + ".drain_policy", `use "fail"`},
		{"version", func(m map[string]any) { m[ParamKey].(map[string]any)["kubernetes_version"] = "latest" }, ParamKey + ".kubernetes_version", "not a Kubernetes release"},
		{"token ttl", func(m map[string]any) { m[ParamKey].(map[string]any)["join_token_ttl"] = "10s" }, ParamKey + ".join_token_ttl", "out of range 1m0s"},
		{"bad key", func(m map[string]any) { param(m, "worker_node")["ssh_private_key"] = "not a key" }, ParamKey + ".worker_node.ssh_private_key", "not a usable private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tackerParams(t)
			param(m, "proxy")["http_proxy"] = "http://proxy:3128"
			tc.edit(m)
			_, err := ParseParams(m)
			wantProblem(t, err, tc.key, tc.text)
			if err != nil && (strings.Contains(err.Error(), "password2") || strings.Contains(err.Error(), "s3cr3t")) {
				t.Errorf("the error shows a proxy password: %v", err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	m := tackerParams(t)
	param(m, "proxy")["http_proxy"] = "http://proxy:3128"
	delete(param(m, "master_node"), "username")
	param(m, "worker_node")["password"] = ""
	m[ParamKey].(map[string]any)["drain_policy"] = "never"
	_, err := ParseParams(m)
	if n := len(problems(t, err)); n != 3 {
		t.Fatalf("%d problems, want 3: %v", n, err)
	}
}

func privateKeyPEM(t *testing.T, passphrase string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var blk *pem.Block
	if passphrase != "" {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte(passphrase))
	} else {
		blk, err = ssh.MarshalPrivateKey(priv, "test")
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(blk))
}

func TestPrivateKeyAuth(t *testing.T) {
	m := tackerParams(t)
	param(m, "proxy")["http_proxy"] = "http://proxy:3128"
	w := param(m, "worker_node")
	delete(w, "password")
	w["ssh_private_key"] = privateKeyPEM(t, "")
	mm := param(m, "master_node")
	delete(mm, "password")
	mm["ssh_private_key"] = privateKeyPEM(t, "pp")
	_, err := ParseParams(m)
	wantProblem(t, err, ParamKey+".master_node.ssh_private_key_passphrase", "the private key is encrypted")
	mm["ssh_private_key_passphrase"] = "pp"
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.Worker.Password != "" || !strings.Contains(p.Worker.PrivateKey, "OPENSSH PRIVATE KEY") {
		t.Errorf("worker %+v", p.Worker)
	}
}

func TestOverrides(t *testing.T) {
	m := tackerParams(t)
	param(m, "proxy")["http_proxy"] = "http://proxy:3128"
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	// Tacker's scale/heal credential overrides, checked both ways (Tacker
	// never checks the worker password).
	if err := p.Overrides(map[string]any{"master_node_username": "admin", "master_node_password": "m-pw",
		"worker_node_password": "w-pw", "drain_timeout": 30, "drain_policy": "force", "worker_parallelism": "4",
		"is_reverse": "True"}); err != nil {
		t.Fatal(err)
	}
	if p.Master.Username != "admin" || p.Master.Password != "m-pw" || p.Worker.Username != "ubuntu" || p.Worker.Password != "w-pw" ||
		p.DrainTimeout != 30*time.Second || p.DrainPolicy != DrainForce || p.WorkerParallelism != 4 {
		t.Errorf("after overrides: %+v", p)
	}
	err = p.Overrides(map[string]any{"worker_node_password": 7, "drain_policy": "maybe", "worker_node_ssh_private_key": "junk"})
	wantProblem(t, err, "worker_node_password", "must be a string")
	wantProblem(t, err, "drain_policy", "not a drain policy")
	wantProblem(t, err, "worker_node_ssh_private_key", "not a usable private key")
}
