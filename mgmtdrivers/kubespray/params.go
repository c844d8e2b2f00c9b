package kubespray

import (
	"errors"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
)

// ParamKey is the additionalParams key holding the driver's parameters.
const ParamKey = kube.ParamKey

// DocsURL is where the parameters are documented.
const DocsURL = "docs/drivers.md#kubespray"

const root = kube.Root

// Defaults of the parameters.
const (
	DefaultAPIPort       = 8383 // API frontend of the external load balancer, as Tacker's sample
	DefaultVimNamePrefix = "kubernetes_vim_"
)

// Params is k8s_cluster_installation_param, validated.
type Params struct {
	// VimName (vim_name) names the cluster's Kubernetes VIM (default
	// kubernetes_vim_<vnfInstanceId>).
	VimName string `json:"vim_name"`
	// Force is a terminate's or entire heal's additionalParams.force: go
	// ahead although CNFs still use the cluster's VIM (it stays registered).
	Force  bool       `json:"force,omitempty"`
	Master NodeParams `json:"master_node"`
	Worker NodeParams `json:"worker_node"`
	// Proxy (proxy) are the cluster's HTTP proxies; k8s_node_cidr goes
	// into kubespray's additional_no_proxy.
	Proxy      kube.Proxy `json:"proxy"`
	Ansible    Ansible    `json:"ansible"`
	ExternalLB ExternalLB `json:"external_lb_param"`
	// HostKeys (ssh_host_key_policy, ssh_host_key_fingerprints) is how the
	// VNFCs' SSH host keys are trusted at first contact (kube.HostKeys);
	// the Ansible server is verified by ansible.host_key_fingerprints.
	HostKeys kube.HostKeys `json:"host_keys"`
}

// NodeParams is master_node or worker_node: which VNFCs are the nodes and
// how to log in to them (kube.NodeParams; the private key may also be given
// as private_key), and for master_node pod_cidr and cluster_cidr (no
// defaults: kubespray's).
type NodeParams struct {
	kube.NodeParams
	kube.Networks
}

// Ansible is the Ansible server the playbooks run on (ansible).
type Ansible struct {
	// IPAddress (ip_address, required) and Port (port, default 22).
	IPAddress string `json:"ip_address"`
	Port      int    `json:"port,omitempty"`
	// Login: username, password and/or private_key (PEM).
	Login kube.Login `json:"login"`
	// HostKeyFingerprints (host_key_fingerprints), when given, are the only
	// acceptable host keys of the server ("SHA256:..."); otherwise its key
	// is pinned at first use.
	HostKeyFingerprints []string `json:"host_key_fingerprints,omitempty"`
	// KubesprayRootPath (kubespray_root_path, required) is the kubespray
	// checkout (cluster.yml ...).
	KubesprayRootPath string `json:"kubespray_root_path"`
	// TransferringInventoryPath (transferring_inventory_path, required) is
	// where inventories go: each cluster gets <path>/<vnfInstanceId>.
	TransferringInventoryPath string `json:"transferring_inventory_path"`
	// PlaybookTimeout (playbook_timeout, seconds 60..86400) bounds one
	// ansible-playbook run (0: the driver's).
	PlaybookTimeout time.Duration `json:"playbook_timeout,omitempty"`
}

// ExternalLB is the load balancer VNFC and its install script
// (external_lb_param).
type ExternalLB struct {
	// SSHCPName (ssh_cp_name, required) is the load balancer's connection
	// point: the VNFC that has it is the load balancer.
	SSHCPName string `json:"ssh_cp_name"`
	// Login: ssh_username, ssh_password and/or ssh_private_key.
	Login kube.Login `json:"login"`
	// ScriptPath (script_path, required) is the load balancer's install
	// script in the VNF package.
	ScriptPath string `json:"script_path"`
	// APIPort (api_port, default 8383) is the API frontend's port.
	APIPort int `json:"api_port"`
	// NodePortRange (nodeport_range: FIRST-LAST or none) is passed to the
	// script's -n (default: the script's).
	NodePortRange string `json:"nodeport_range,omitempty"`
}

var (
	topKeys     = append([]string{"vim_name", "master_node", "worker_node", "proxy", "ansible", "external_lb_param"}, kube.HostKeyParamKeys...)
	topRefused  = map[string]string{"script_path": "is not used by kubespray, which installs Kubernetes with its playbooks; the load balancer's install script is external_lb_param.script_path: remove it"}
	nodeKeys    = append(slices.Clone(kube.NodeKeys), "private_key")
	masterKeys  = append(slices.Clone(nodeKeys), "pod_cidr", "cluster_cidr")
	viaLB       = "is not used by kubespray: the cluster's API is reached through the external load balancer (external_lb_param.ssh_cp_name, api_port); remove it"
	nodeRefused = map[string]string{"cluster_cp_name": viaLB, "cluster_fip_name": viaLB}
	ansibleKeys = []string{"ip_address", "port", "username", "password", "private_key", "host_key_fingerprints", "kubespray_root_path", "transferring_inventory_path", "playbook_timeout"}
	lbKeys      = []string{"ssh_cp_name", "ssh_username", "ssh_password", "ssh_private_key", "script_path", "api_port", "nodeport_range"}
	keyHint     = map[string]string{"key": "is not a known parameter (a private key goes in private_key, or ssh_private_key for the load balancer, so that the VNFM seals it)",
		"ssh_key": "is not a known parameter (a private key goes in private_key, or ssh_private_key for the load balancer, so that the VNFM seals it)"}
)

var userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

var safePathRE = regexp.MustCompile(`^/[A-Za-z0-9._/@+-]*$`)

var nodePortRE = regexp.MustCompile(`^[0-9]{1,5}-[0-9]{1,5}$`)

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func absPath(o *kube.Obj, key string) string {
	p := o.String(key, true)
	if p == "" {
		return ""
	}
	if !safePathRE.MatchString(p) || strings.Contains("/"+p+"/", "/../") {
		o.Addf(key, "%q must be an absolute path of letters, digits and ._/@+- (no spaces, quotes or ..)", p)
		return ""
	}
	if c := path.Clean(p); c != "/" {
		return c
	}
	o.Addf(key, "must not be /")
	return ""
}

func inventoryUser(o *kube.Obj, key, user string) {
	if user != "" && !userRE.MatchString(user) {
		o.Addf(key, "%q may only hold letters, digits and ._- (it goes into the Ansible inventory)", user)
	}
}

func readNode(o *kube.Obj, master bool) NodeParams {
	var n NodeParams
	if o == nil {
		return n
	}
	if master {
		o.Keys(masterKeys, merge(nodeRefused, keyHint))
	} else {
		o.Keys(nodeKeys, merge(merge(nodeRefused, keyHint), map[string]string{"pod_cidr": "belongs in master_node", "cluster_cidr": "belongs in master_node"}))
	}
	n.NodeParams = kube.ReadNode(o, "ssh_private_key", "private_key")
	inventoryUser(o, "username", n.Username)
	if master {
		n.Networks = kube.ReadNetworks(o, "", "")
	}
	return n
}

func readAnsible(o *kube.Obj) Ansible {
	var a Ansible
	if o == nil {
		return a
	}
	o.Keys(ansibleKeys, keyHint)
	a.IPAddress = o.String("ip_address", true)
	if a.IPAddress != "" {
		if ip, err := netip.ParseAddr(a.IPAddress); err != nil || ip.Zone() != "" {
			o.Addf("ip_address", "%q is not an IP address", a.IPAddress)
		}
	}
	a.Port, _ = o.Int("port", 1, 65535)
	a.Login = kube.ReadLogin(o, "username", "password", "private_key", "")
	a.HostKeyFingerprints = o.StringList("host_key_fingerprints")
	a.KubesprayRootPath = absPath(o, "kubespray_root_path")
	a.TransferringInventoryPath = absPath(o, "transferring_inventory_path")
	if s, ok := o.Int("playbook_timeout", 60, 24*3600); ok {
		a.PlaybookTimeout = time.Duration(s) * time.Second
	}
	return a
}

func readLB(o *kube.Obj) ExternalLB {
	var lb ExternalLB
	if o == nil {
		return lb
	}
	o.Keys(lbKeys, keyHint)
	lb.SSHCPName = o.String("ssh_cp_name", true)
	lb.Login = kube.ReadLogin(o, "ssh_username", "ssh_password", "ssh_private_key", "")
	lb.ScriptPath = o.PackagePath("script_path", true)
	lb.APIPort = DefaultAPIPort
	if n, ok := o.Int("api_port", 1, 65535); ok {
		lb.APIPort = n
	}
	lb.NodePortRange = o.String("nodeport_range", false)
	if s := lb.NodePortRange; s != "" && s != "none" && !nodePortRE.MatchString(s) {
		o.Addf("nodeport_range", "must be FIRST-LAST (e.g. 30000-32767) or none, not %q", s)
	}
	return lb
}

// ParseParams reads and validates k8s_cluster_installation_param from
// additionalParams, reporting every problem at once with its JSON path.
func ParseParams(additional map[string]any) (*Params, error) {
	r := &kube.Reader{Docs: DocsURL}
	top := r.Object(root, additional[ParamKey], true)
	if top == nil {
		return nil, r.Err()
	}
	top.Keys(topKeys, topRefused)
	p := &Params{VimName: top.String("vim_name", false)}
	p.Master = readNode(top.Child("master_node", true), true)
	p.Worker = readNode(top.Child("worker_node", true), false)
	p.Proxy = kube.ReadProxy(top.Child("proxy", false))
	p.Ansible = readAnsible(top.Child("ansible", true))
	p.ExternalLB = readLB(top.Child("external_lb_param", true))
	p.HostKeys = kube.ReadHostKeys(top)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// override lays the k8s_cluster_installation_param of a scale or heal
// request over the instantiation's: each object given replaces the stored
// one whole (as Tacker documents for worker_node, ansible and
// external_lb_param).
func (p *Params) override(additional map[string]any) error {
	r := &kube.Reader{Docs: DocsURL}
	top := r.Object(root, additional[ParamKey], false)
	if top == nil {
		return r.Err()
	}
	top.Keys(topKeys, topRefused)
	if top.Has("vim_name") {
		p.VimName = top.String("vim_name", false)
	}
	if top.Has("master_node") {
		p.Master = readNode(top.Child("master_node", true), true)
	}
	if top.Has("worker_node") {
		p.Worker = readNode(top.Child("worker_node", true), false)
	}
	if top.Has("proxy") {
		p.Proxy = kube.ReadProxy(top.Child("proxy", false))
	}
	if top.Has(kube.HostKeyPolicyKey) || top.Has(kube.HostKeyFingerprintsKey) {
		p.HostKeys = kube.ReadHostKeys(top)
	}
	if top.Has("ansible") {
		p.Ansible = readAnsible(top.Child("ansible", true))
	}
	if top.Has("external_lb_param") {
		p.ExternalLB = readLB(top.Child("external_lb_param", true))
	}
	return r.Err()
}

// vimName is the name of the cluster's Kubernetes VIM.
func (p *Params) vimName(instanceID string) string {
	if p.VimName != "" {
		return p.VimName
	}
	return DefaultVimNamePrefix + instanceID
}

// inventoryDir is the cluster's own inventory directory on the Ansible server.
func (p *Params) inventoryDir(instanceID string) (string, error) {
	if !instanceIDRE.MatchString(instanceID) {
		return "", errors.New("kubespray: the VNF instance id is not usable in a path")
	}
	return path.Join(p.Ansible.TransferringInventoryPath, instanceID), nil
}

var instanceIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
