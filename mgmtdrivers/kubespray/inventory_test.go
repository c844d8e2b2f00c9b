package kubespray

import (
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func cp(cpd string, addrs ...string) model.VnfcCpInfo {
	var list []any
	for _, a := range addrs {
		list = append(list, a)
	}
	return model.VnfcCpInfo{ID: cpd, CpdID: cpd, CpProtocolInfo: []map[string]any{{"layerProtocol": "IP_OVER_ETHERNET",
		"ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "addresses": list}}}}}}
}

func vnfc(id, vdu, group, server string, cps ...model.VnfcCpInfo) model.VnfcResourceInfo {
	md := map[string]any{"sshHostKeyFingerprints": []any{"SHA256:" + id}}
	if group != "" {
		md["scaleGroup"] = group
	}
	return model.VnfcResourceInfo{ID: id, VduID: vdu, ComputeResource: model.ResourceHandle{ResourceID: server}, VnfcCpInfo: cps, Metadata: md}
}

// sampleVnfcs are the VNFCs of the kubespray sample: 3 masters, 2 workers,
// the load balancer (CP1 external, CP2 internal).
func sampleVnfcs() []model.VnfcResourceInfo {
	return []model.VnfcResourceInfo{
		vnfc("externalLB", "externalLB", "", "srv-lb", cp("externalLB_CP1", "10.77.0.9"), cp("externalLB_CP2", "10.10.0.9")),
		vnfc("masterNode-aaaa", "masterNode", "master_instance", "srv-m1", cp("masterNode_CP1", "10.77.0.3"), cp("masterNode_CP2", "10.10.0.3")),
		vnfc("masterNode-bbbb", "masterNode", "master_instance", "srv-m2", cp("masterNode_CP1", "10.77.0.4"), cp("masterNode_CP2", "10.10.0.4")),
		vnfc("masterNode-cccc", "masterNode", "master_instance", "srv-m3", cp("masterNode_CP1", "10.77.0.5"), cp("masterNode_CP2", "10.10.0.5")),
		vnfc("workerNode-dddd", "workerNode", "worker_instance", "srv-w1", cp("workerNode_CP1", "10.77.0.6"), cp("workerNode_CP2", "10.10.0.6")),
		vnfc("workerNode-eeee", "workerNode", "worker_instance", "srv-w2", cp("workerNode_CP1", "10.77.0.7"), cp("workerNode_CP2", "10.10.0.7")),
	}
}

func TestBuildCluster(t *testing.T) {
	p, err := ParseParams(validParams())
	if err != nil {
		t.Fatal(err)
	}
	c, err := BuildCluster(resources(sampleVnfcs()), nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Masters); !slices.Equal(got, []string{"masternode-aaaa", "masternode-bbbb", "masternode-cccc"}) {
		t.Errorf("masters %v", got)
	}
	if got := names(c.Workers); !slices.Equal(got, []string{"workernode-dddd", "workernode-eeee"}) {
		t.Errorf("workers %v", got)
	}
	m := c.Masters[0]
	if m.SSHAddr != "10.77.0.3" || m.IP != "10.10.0.3" || m.ServerID != "srv-m1" || m.Login.Username != "ubuntu" || m.Login.Password != "ub-pw" ||
		!slices.Equal(m.Fingerprints, []string{"SHA256:masterNode-aaaa"}) {
		t.Errorf("master %+v", m)
	}
	if w := c.Workers[0]; w.SSHAddr != "10.77.0.6" || w.IP != "10.77.0.6" { // nic_cp_name defaults to ssh_cp_name
		t.Errorf("worker %+v", w)
	}
	if c.LB == nil || c.LB.SSHAddr != "10.77.0.9" || c.LB.Login.Username != "ubuntu" || c.LB.Login.Password != "lb-pw" {
		t.Errorf("LB %+v", c.LB)
	}
	if n := c.ByVnfc("workerNode-eeee"); n == nil || n.Role != RoleWorker {
		t.Errorf("ByVnfc %+v", n)
	}

	// Classification by VDU (v2 style) and by CP (no aspect, no VDU).
	m2 := validParams()
	delete(param(m2, "master_node"), "aspect_id")
	param(m2, "master_node")["vdu_id"] = "masterNode"
	delete(param(m2, "worker_node"), "aspect_id")
	p2, _ := ParseParams(m2)
	if c2, err := BuildCluster(resources(sampleVnfcs()), nil, p2); err != nil || len(c2.Masters) != 3 || len(c2.Workers) != 2 {
		t.Errorf("by vdu_id / ssh_cp_name: %v", err)
	}
	// Tacker's floating-IP layout (the node classifier kubeadm shares):
	// ssh_cp_name names the floating IP resource, no CP; SSH goes to the
	// floating IP of nic_cp_name's port.
	vs := sampleVnfcs()
	vs[4].VnfcCpInfo[0].Metadata = map[string]any{"floatingIpAddress": "172.24.4.20"}
	vs[5].VnfcCpInfo[0].Metadata = map[string]any{"floatingIpAddress": "172.24.4.21"}
	m3 := validParams()
	param(m3, "worker_node")["ssh_cp_name"], param(m3, "worker_node")["nic_cp_name"] = "workerNode_FloatingIP", "workerNode_CP1"
	p3, err := ParseParams(m3)
	if err != nil {
		t.Fatal(err)
	}
	if c3, err := BuildCluster(resources(vs), nil, p3); err != nil || c3.Workers[0].SSHAddr != "172.24.4.20" || c3.Workers[0].IP != "10.77.0.6" {
		t.Errorf("floating IP: %v %v", c3, err)
	}
	// ssh_cp_name naming the port: its own address.
	if c4, _ := BuildCluster(resources(vs), nil, p); c4.Workers[0].SSHAddr != "10.77.0.6" {
		t.Errorf("port address: %+v", c4.Workers[0])
	}
	// Problems are listed together.
	_, err = BuildCluster(resources(sampleVnfcs()[4:]), nil, p)
	if err == nil || !strings.Contains(err.Error(), "no VNFC matches master_node (aspect_id master_instance)") ||
		!strings.Contains(err.Error(), "no VNFC has CP externalLB_CP1") {
		t.Errorf("missing roles: %v", err)
	}
	vs = sampleVnfcs()
	vs[5].VnfcCpInfo[0] = cp("workerNode_CP1")
	if _, err := BuildCluster(resources(vs), nil, p); err == nil || !strings.Contains(err.Error(), `worker VNFC workerNode-eeee has no address on additionalParams.k8s_cluster_installation_param.worker_node.nic_cp_name "workerNode_CP1"`) {
		t.Errorf("no address: %v", err)
	}
}

func TestInventory(t *testing.T) {
	p, _ := ParseParams(validParams())
	c, err := BuildCluster(resources(sampleVnfcs()), nil, p)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewPublicKey(pub)
	inv := &Inventory{Dir: "/home/ansible/inv/i-1", Masters: c.Masters, Workers: c.Workers, LB: c.LB, APIPort: 8383, Proxy: p.Proxy,
		PodCIDR: p.Master.PodCIDR, SvcCIDR: p.Master.ClusterCIDR, KnownHosts: map[string][]ssh.PublicKey{"masternode-aaaa": {key}, "workernode-dddd": {key}}}
	ini := inv.HostsINI()
	hosts, groups := ParseHostsINI(ini)
	if h := hosts["masternode-aaaa"]; h["ansible_host"] != "10.77.0.3" || h["ip"] != "10.10.0.3" || h["etcd_member_name"] != "etcd1" || h["ansible_user"] != "ubuntu" {
		t.Errorf("master line %v", h)
	}
	if h := hosts["masternode-cccc"]; h["etcd_member_name"] != "etcd3" {
		t.Errorf("third master %v", h)
	}
	if h := hosts["workernode-eeee"]; h["ansible_host"] != "10.77.0.7" || h["etcd_member_name"] != "" {
		t.Errorf("worker line %v", h)
	}
	for g, want := range map[string][]string{
		"kube_control_plane":   {"masternode-aaaa", "masternode-bbbb", "masternode-cccc"},
		"etcd":                 {"masternode-aaaa", "masternode-bbbb", "masternode-cccc"},
		"kube_node":            {"workernode-dddd", "workernode-eeee"},
		"calico_rr":            nil,
		"k8s_cluster:children": {"kube_control_plane", "kube_node", "calico_rr"},
	} {
		if got, ok := groups[g]; !ok || !slices.Equal(got, want) {
			t.Errorf("group %s = %v, want %v", g, got, want)
		}
	}
	for _, secret := range []string{"ub-pw", "lb-pw", "an-pw", "ansible_password", "ansible_ssh_pass"} {
		if strings.Contains(ini, secret) {
			t.Errorf("hosts.ini holds %q:\n%s", secret, ini)
		}
	}
	for _, want := range []string{
		"ansible_ssh_private_key_file=/home/ansible/inv/i-1/ssh/id_ed25519",
		"ansible_ssh_common_args='-o UserKnownHostsFile=/home/ansible/inv/i-1/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes'",
		"ansible_become_password=\"{{ (mini_vnfm_become_passwords | default({})).get(inventory_hostname, '') }}\"",
	} {
		if !strings.Contains(ini, want+"\n") {
			t.Errorf("hosts.ini lacks %s:\n%s", want, ini)
		}
	}
	if strings.Contains(ini, "StrictHostKeyChecking=no") {
		t.Error("host key checking disabled")
	}

	var all map[string]any
	s, err := inv.AllVars()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(s), &all); err != nil {
		t.Fatal(err)
	}
	if all["http_proxy"] != "http://user1:secret1@proxy1:3128" || all["https_proxy"] != "http://user2:secret2@proxy2:3129" ||
		all["additional_no_proxy"] != "10.0.0.0/8,.svc" || all["no_proxy"] != nil {
		t.Errorf("proxy vars %v", all)
	}
	lb, _ := all["loadbalancer_apiserver"].(map[string]any)
	if lb["address"] != "10.77.0.9" || lb["port"] != 8383 || all["loadbalancer_apiserver_localhost"] != false {
		t.Errorf("LB vars %v", all)
	}
	if sans, _ := all["supplementary_addresses_in_ssl_keys"].([]any); len(sans) != 1 || sans[0] != "10.77.0.9" {
		t.Errorf("SANs %v", all["supplementary_addresses_in_ssl_keys"])
	}
	var k8s map[string]any
	s, _ = inv.K8sVars()
	if err := yaml.Unmarshal([]byte(s), &k8s); err != nil || k8s["kube_pods_subnet"] != "10.244.0.0/16" || k8s["kube_service_addresses"] != "10.96.0.0/12" {
		t.Errorf("k8s vars %v %v", k8s, err)
	}

	kh := inv.KnownHostsFile()
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	for _, want := range []string{"10.77.0.3 " + line, "10.10.0.3 " + line, "10.77.0.6 " + line} {
		if !strings.Contains(kh, want+"\n") {
			t.Errorf("known_hosts lacks %q:\n%s", want, kh)
		}
	}
	if strings.Contains(kh, "10.77.0.7") {
		t.Errorf("known_hosts has a node without a verified key:\n%s", kh)
	}
}

func TestBecomeVars(t *testing.T) {
	p, _ := ParseParams(validParams())
	c, _ := BuildCluster(resources(sampleVnfcs()), nil, p)
	c.Workers[1].Login.Password = `we"ird\pw`
	c.Workers[0].Login.Password = ""
	s := &session{c: c}
	var v map[string]map[string]string
	if err := yaml.Unmarshal([]byte(s.becomeVars()), &v); err != nil {
		t.Fatal(err)
	}
	got := v["mini_vnfm_become_passwords"]
	if got["masternode-aaaa"] != "ub-pw" || got["workernode-eeee"] != `we"ird\pw` || len(got) != 4 {
		t.Errorf("become vars %v", got)
	}
}

// proxy.k8s_node_cidr is used, not ignored: the nodes' network joins
// kubespray's no_proxy.
func TestNodeCIDRBypassesTheProxy(t *testing.T) {
	m := validParams()
	param(m, "proxy")["k8s_node_cidr"] = "10.10.0.0/24"
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := (&Inventory{Proxy: p.Proxy}).AllVars()
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]any
	if err := yaml.Unmarshal([]byte(s), &all); err != nil {
		t.Fatal(err)
	}
	if all["additional_no_proxy"] != "10.0.0.0/8,.svc,10.10.0.0/24" {
		t.Errorf("additional_no_proxy %v, want no_proxy and k8s_node_cidr", all["additional_no_proxy"])
	}
	param(m, "proxy")["k8s_node_cidr"] = "10.10.0.7/24"
	if _, err := ParseParams(m); err == nil || !strings.Contains(err.Error(), "proxy.k8s_node_cidr") || !strings.Contains(err.Error(), "10.10.0.0/24") {
		t.Errorf("a node CIDR with host bits: %v", err)
	}
}
