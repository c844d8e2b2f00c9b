package kubespray

import (
	"bufio"
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh"
)

// Inventory is what the driver writes into a cluster's inventory directory.
type Inventory struct {
	Dir string // <transferring_inventory_path>/<vnfInstanceId>
	// Masters and Workers in inventory order; the first master is
	// kube_control_plane[0].
	Masters, Workers []*Node
	// LB is the external load balancer (loadbalancer_apiserver).
	LB      *Node
	APIPort int
	Proxy   kube.Proxy
	PodCIDR string
	SvcCIDR string
	// KnownHosts are the nodes' host keys (verified by the driver).
	KnownHosts map[string][]ssh.PublicKey // by node name
}

// Files of an inventory directory, relative to it.
const (
	hostsFile      = "hosts.ini"
	knownHostsFile = "known_hosts"
	sshKeyFile     = "ssh/id_ed25519"
	allVarsFile    = "group_vars/all/mini-vnfm.yml"
	k8sVarsFile    = "group_vars/k8s_cluster/mini-vnfm.yml"
)

func (inv *Inventory) path(rel string) string { return path.Join(inv.Dir, rel) }

// sshArgs are the ssh options that make Ansible verify the nodes against
// this inventory's known_hosts, and only it.
func (inv *Inventory) sshArgs() string {
	return "-o UserKnownHostsFile=" + inv.path(knownHostsFile) + " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes"
}

// HostsINI renders the inventory in the seed's INI layout: [all] with
// ansible_host, ip and etcd_member_name, then the groups
// kube_control_plane, etcd, kube_node, calico_rr and k8s_cluster:children.
// It holds no password: Ansible logs in with the cluster's key.
func (inv *Inventory) HostsINI() string {
	var b strings.Builder
	b.WriteString("# Written by mini-VNFM (kubespray management driver); every LCM operation rewrites this file.\n")
	b.WriteString("[all]\n")
	for i, n := range inv.Masters {
		fmt.Fprintf(&b, "%s ansible_host=%s ip=%s etcd_member_name=etcd%d ansible_user=%s\n", n.Name, n.SSHAddr, n.IP, i+1, n.Login.Username)
	}
	for _, n := range inv.Workers {
		fmt.Fprintf(&b, "%s ansible_host=%s ip=%s ansible_user=%s\n", n.Name, n.SSHAddr, n.IP, n.Login.Username)
	}
	b.WriteString("\n[all:vars]\n")
	fmt.Fprintf(&b, "ansible_ssh_private_key_file=%s\n", inv.path(sshKeyFile))
	fmt.Fprintf(&b, "ansible_ssh_common_args='%s'\n", inv.sshArgs())
	// Sudo passwords come from the temporary extra-vars file of each run.
	b.WriteString(`ansible_become_password="{{ (mini_vnfm_become_passwords | default({})).get(inventory_hostname, '') }}"` + "\n")
	group := func(name string, nodes []*Node) {
		fmt.Fprintf(&b, "\n[%s]\n", name)
		for _, n := range nodes {
			b.WriteString(n.Name + "\n")
		}
	}
	group("kube_control_plane", inv.Masters)
	group("etcd", inv.Masters)
	group("kube_node", inv.Workers)
	group("calico_rr", nil)
	b.WriteString("\n[k8s_cluster:children]\nkube_control_plane\nkube_node\ncalico_rr\n")
	return b.String()
}

// AllVars renders group_vars/all/mini-vnfm.yml: proxies and the external
// load balancer in kubespray's variables.
func (inv *Inventory) AllVars() (string, error) {
	v := map[string]any{}
	if inv.Proxy.HTTPProxy != "" {
		v["http_proxy"] = inv.Proxy.HTTPProxy
	}
	if inv.Proxy.HTTPSProxy != "" {
		v["https_proxy"] = inv.Proxy.HTTPSProxy
	}
	// kubespray computes no_proxy from the inventory and appends these:
	// no_proxy and the nodes' network (k8s_node_cidr).
	var extra []string
	for _, s := range []string{inv.Proxy.NoProxy, inv.Proxy.K8sNodeCIDR} {
		if s != "" {
			extra = append(extra, s)
		}
	}
	if len(extra) > 0 {
		v["additional_no_proxy"] = strings.Join(extra, ",")
	}
	if inv.LB != nil {
		v["loadbalancer_apiserver"] = map[string]any{"address": inv.LB.SSHAddr, "port": inv.APIPort}
		v["loadbalancer_apiserver_localhost"] = false
		sans := []string{inv.LB.SSHAddr}
		if inv.LB.IP != inv.LB.SSHAddr {
			sans = append(sans, inv.LB.IP)
		}
		v["supplementary_addresses_in_ssl_keys"] = sans
	}
	return renderYAML(v)
}

// K8sVars renders group_vars/k8s_cluster/mini-vnfm.yml: the CIDRs.
func (inv *Inventory) K8sVars() (string, error) {
	v := map[string]any{}
	if inv.PodCIDR != "" {
		v["kube_pods_subnet"] = inv.PodCIDR
	}
	if inv.SvcCIDR != "" {
		v["kube_service_addresses"] = inv.SvcCIDR
	}
	return renderYAML(v)
}

func renderYAML(v map[string]any) (string, error) {
	head := "---\n# Written by mini-VNFM (kubespray management driver); every LCM operation rewrites this file.\n"
	if len(v) == 0 {
		return head + "{}\n", nil
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return head + string(b), nil
}

// KnownHostsFile renders the known_hosts Ansible uses: the nodes' host keys
// as the driver verified and pinned them, one line per key and address.
func (inv *Inventory) KnownHostsFile() string {
	var b strings.Builder
	for _, n := range append(slices.Clone(inv.Masters), inv.Workers...) {
		for _, k := range inv.KnownHosts[n.Name] {
			line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
			for _, a := range uniq(n.SSHAddr, n.IP) {
				fmt.Fprintf(&b, "%s %s\n", knownHostsAddr(a), line)
			}
		}
	}
	return b.String()
}

func knownHostsAddr(a string) string {
	if h, p, err := net.SplitHostPort(a); err == nil && p != "22" {
		return "[" + h + "]:" + p
	}
	return a
}

func uniq(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// ParseHostsINI reads the groups of an INI inventory (host lines of [all]
// and the members of every other group), for tests and diagnostics.
func ParseHostsINI(s string) (hosts map[string]map[string]string, groups map[string][]string) {
	hosts, groups = map[string]map[string]string{}, map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	group := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			group = line[1 : len(line)-1]
			if _, ok := groups[group]; !ok {
				groups[group] = nil
			}
			continue
		}
		if strings.HasSuffix(group, ":vars") {
			continue
		}
		f := strings.Fields(line)
		if group == "all" {
			vars := map[string]string{}
			for _, kv := range f[1:] {
				if k, v, ok := strings.Cut(kv, "="); ok {
					vars[k] = v
				}
			}
			hosts[f[0]] = vars
		}
		groups[group] = append(groups[group], f[0])
	}
	return hosts, groups
}
