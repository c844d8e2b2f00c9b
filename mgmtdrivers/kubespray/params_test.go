package kubespray

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// validParams is a complete k8s_cluster_installation_param as the sample's
// documentation shows it.
func validParams() map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(`{"k8s_cluster_installation_param": {
		"vim_name": "kubespray_vim",
		"master_node": {"aspect_id": "master_instance", "ssh_cp_name": "masterNode_CP1", "nic_cp_name": "masterNode_CP2",
			"username": "ubuntu", "password": "ub-pw", "pod_cidr": "10.244.0.0/16", "cluster_cidr": "10.96.0.0/12"},
		"worker_node": {"aspect_id": "worker_instance", "ssh_cp_name": "workerNode_CP1", "username": "ubuntu", "password": "ub-pw"},
		"proxy": {"http_proxy": "http://user1:secret1@proxy1:3128", "https_proxy": "http://user2:secret2@proxy2:3129", "no_proxy": "10.0.0.0/8,.svc"},
		"ansible": {"ip_address": "10.77.0.250", "username": "ansible", "password": "an-pw",
			"kubespray_root_path": "/opt/kubespray", "transferring_inventory_path": "/home/ansible/inventories", "playbook_timeout": "900"},
		"external_lb_param": {"ssh_cp_name": "externalLB_CP1", "ssh_username": "ubuntu", "ssh_password": "lb-pw",
			"script_path": "./Scripts/install_external_lb.sh"}}}`), &m)
	return m
}

func param(m map[string]any, path ...string) map[string]any {
	cur := m[ParamKey].(map[string]any)
	for _, p := range path {
		cur = cur[p].(map[string]any)
	}
	return cur
}

func TestParseParamsValid(t *testing.T) {
	p, err := ParseParams(validParams())
	if err != nil {
		t.Fatal(err)
	}
	if p.Master.NICCPName != "masterNode_CP2" || p.Worker.NICCPName != "workerNode_CP1" {
		t.Errorf("nic_cp_name: master %q, worker %q (worker defaults to ssh_cp_name)", p.Master.NICCPName, p.Worker.NICCPName)
	}
	// https_proxy is its own value (Tacker copies http_proxy into it).
	if p.Proxy.HTTPProxy != "http://user1:secret1@proxy1:3128" || p.Proxy.HTTPSProxy != "http://user2:secret2@proxy2:3129" {
		t.Errorf("proxy %+v", p.Proxy)
	}
	if p.Ansible.PlaybookTimeout != 15*time.Minute || p.Ansible.Port != 0 {
		t.Errorf("ansible %+v", p.Ansible)
	}
	if p.ExternalLB.ScriptPath != "Scripts/install_external_lb.sh" || p.ExternalLB.APIPort != DefaultAPIPort {
		t.Errorf("external LB %+v", p.ExternalLB)
	}
	if got := p.vimName("i-1"); got != "kubespray_vim" {
		t.Errorf("vim name %q", got)
	}
	delete(param(validParams()), "vim_name")
	p2, _ := ParseParams(func() map[string]any { m := validParams(); delete(param(m), "vim_name"); return m }())
	if got := p2.vimName("abc"); got != "kubernetes_vim_abc" {
		t.Errorf("default vim name %q", got)
	}
	if dir, err := p.inventoryDir("5f0c9c1e-1111-4222-8333-944455556666"); err != nil || dir != "/home/ansible/inventories/5f0c9c1e-1111-4222-8333-944455556666" {
		t.Errorf("inventory dir %q %v", dir, err)
	}
	// A private key instead of a password.
	m := validParams()
	delete(param(m, "ansible"), "password")
	param(m, "ansible")["private_key"] = testKeyPEM(t)
	if _, err := ParseParams(m); err != nil {
		t.Errorf("private key only: %v", err)
	}
	// The nodes' key: ssh_private_key as kubeadm spells it, or private_key.
	for _, k := range []string{"ssh_private_key", "private_key"} {
		m = validParams()
		delete(param(m, "worker_node"), "password")
		param(m, "worker_node")[k] = testKeyPEM(t)
		if p, err := ParseParams(m); err != nil || !strings.Contains(p.Worker.PrivateKey, "PRIVATE KEY") {
			t.Errorf("worker key as %s: %v", k, err)
		}
	}
	// Only http_proxy: https_proxy stays unset.
	m = validParams()
	delete(param(m, "proxy"), "https_proxy")
	if p, err := ParseParams(m); err != nil || p.Proxy.HTTPSProxy != "" {
		t.Errorf("https_proxy %q %v", p.Proxy.HTTPSProxy, err)
	}
}

func TestParseParamsErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
		want   []string
	}{
		{"missing", func(m map[string]any) { delete(m, ParamKey) }, []string{"additionalParams.k8s_cluster_installation_param: is required"}},
		{"not an object", func(m map[string]any) { m[ParamKey] = "x" }, []string{"must be an object"}},
		{"everything at once", func(m map[string]any) {
			delete(param(m, "master_node"), "username")
			delete(param(m, "worker_node"), "password")
			param(m, "ansible")["ip_address"] = "ansible.example"
			param(m, "ansible")["kubespray_root_path"] = "relative/kubespray"
			delete(param(m), "external_lb_param")
		}, []string{"master_node.username: is required", "worker_node.password: is required unless ssh_private_key is given",
			`ansible.ip_address: "ansible.example" is not an IP address`, `ansible.kubespray_root_path: "relative/kubespray" must be an absolute path`,
			"external_lb_param: is required"}},
		{"cidrs", func(m map[string]any) {
			param(m, "master_node")["pod_cidr"] = "10.244.0.1/16"
			param(m, "master_node")["cluster_cidr"] = "banana"
		}, []string{`pod_cidr: "10.244.0.1/16" has host bits set: give the network address 10.244.0.0/16`, `cluster_cidr: "banana" is not an IPv4 CIDR`}},
		{"overlap", func(m map[string]any) { param(m, "master_node")["cluster_cidr"] = "10.244.128.0/20" },
			[]string{"overlap"}},
		{"proxy", func(m map[string]any) { param(m, "proxy")["https_proxy"] = "proxy2:3128" },
			[]string{`proxy.https_proxy: "proxy2:3128" is not an http(s) URL`}},
		{"proxy password not echoed", func(m map[string]any) { param(m, "proxy")["http_proxy"] = "ftp://u:topsecret@p:1" },
			[]string{"proxy.http_proxy: ", "is not an http(s) URL", "xxxxx"}},
		{"unknown key with hint", func(m map[string]any) { param(m, "ansible")["key"] = "PEM" },
			[]string{"ansible.key: is not a known parameter (a private key goes in private_key"}},
		{"inventory path with space", func(m map[string]any) { param(m, "ansible")["transferring_inventory_path"] = "/home/a b" },
			[]string{"transferring_inventory_path"}},
		{"inventory path /", func(m map[string]any) { param(m, "ansible")["transferring_inventory_path"] = "/" },
			[]string{"must not be /"}},
		{"dotdot", func(m map[string]any) { param(m, "ansible")["transferring_inventory_path"] = "/home/../etc" },
			[]string{"no spaces, quotes or .."}},
		{"script outside the package", func(m map[string]any) { param(m, "external_lb_param")["script_path"] = "../../etc/passwd" },
			[]string{"must be a path inside the VNF package"}},
		{"bad types", func(m map[string]any) {
			param(m, "worker_node")["username"] = 5.0
			param(m, "ansible")["playbook_timeout"] = 1.5
			param(m, "external_lb_param")["api_port"] = 70000.0
		}, []string{"worker_node.username: must be a string", "ansible.playbook_timeout: must be a whole number", "api_port: 70000 is out of range 1..65535"}},
		// Keys Tacker's kubeadm takes that kubespray has no use for are
		// refused, not ignored.
		{"install script", func(m map[string]any) { param(m)["script_path"] = "Scripts/install_k8s_cluster.sh" },
			[]string{"k8s_cluster_installation_param.script_path: is not used by kubespray"}},
		{"cluster CP", func(m map[string]any) {
			param(m, "master_node")["cluster_cp_name"] = "masterNode_CP1"
			param(m, "master_node")["cluster_fip_name"] = "masterNode_FIP"
		}, []string{"master_node.cluster_cp_name: is not used by kubespray: the cluster's API is reached through the external load balancer",
			"master_node.cluster_fip_name: is not used by kubespray"}},
		{"key twice", func(m map[string]any) {
			param(m, "worker_node")["ssh_private_key"] = "a"
			param(m, "worker_node")["private_key"] = "b"
		}, []string{"worker_node.private_key: gives the private key again (as ssh_private_key)"}},
		{"bad user name", func(m map[string]any) { param(m, "worker_node")["username"] = "ubuntu x" },
			[]string{"worker_node.username"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := validParams()
			tc.change(m)
			_, err := ParseParams(m)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "ub-pw") {
				t.Errorf("error echoes a secret: %v", err)
			}
		})
	}
}

// A scale or heal request replaces whole objects of what the
// instantiation accepted (the stored parameters stay as they were).
func TestOverride(t *testing.T) {
	stored, err := ParseParams(validParams())
	if err != nil {
		t.Fatal(err)
	}
	p := *stored
	req := map[string]any{ParamKey: map[string]any{"worker_node": map[string]any{"ssh_cp_name": "workerNode_CP1", "username": "admin", "password": "new-pw"}}}
	if err := p.override(req); err != nil {
		t.Fatal(err)
	}
	if p.Worker.Username != "admin" || p.Worker.Password != "new-pw" || p.Master.Username != "ubuntu" || p.Ansible.IPAddress != "10.77.0.250" {
		t.Errorf("merged %+v", p)
	}
	if stored.Worker.Username != "ubuntu" {
		t.Error("the override changed the stored parameters")
	}
	q := *stored
	if err := q.override(nil); err != nil || q.Worker.Username != "ubuntu" {
		t.Errorf("no override: %+v %v", q.Worker, err)
	}
	bad := map[string]any{ParamKey: map[string]any{"worker_node": map[string]any{"ssh_cp_name": "w"}, "script_path": "x.sh"}}
	if err := q.override(bad); err == nil || !strings.Contains(err.Error(), "worker_node.username: is required") || !strings.Contains(err.Error(), "script_path: is not used by kubespray") {
		t.Errorf("bad override: %v", err)
	}
}

func testKeyPEM(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(blk))
}
