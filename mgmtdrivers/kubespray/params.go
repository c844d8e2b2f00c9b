package kubespray

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ParamKey is the additionalParams key holding the driver's parameters.
const ParamKey = "k8s_cluster_installation_param"

// Defaults of the parameters.
const (
	DefaultAPIPort       = 8383 // API frontend of the external load balancer, as Tacker's sample
	DefaultVimNamePrefix = "kubernetes_vim_"
)

// Params is k8s_cluster_installation_param, validated.
type Params struct {
	VimName    string
	Master     NodeParams
	Worker     NodeParams
	Proxy      Proxy
	Ansible    Ansible
	ExternalLB ExternalLB
}

// NodeParams is master_node or worker_node: which VNFCs are the nodes and
// how to log in to them.
type NodeParams struct {
	// Which VNFCs: VduID (v2 style) wins, then AspectID (the scaling group,
	// vnfcResourceInfo.metadata.scaleGroup), else every VNFC with a CP
	// named SSHCPName.
	VduID    string
	AspectID string
	// SSHCPName is the CP whose address the driver and Ansible log in to;
	// NicCPName the CP whose address is the Kubernetes node address (ip=),
	// default SSHCPName.
	SSHCPName string
	NicCPName string
	Username  string
	// Password and/or PrivateKey (PEM).
	Password   string
	PrivateKey string
	// PodCIDR and ClusterCIDR (service CIDR): master_node only.
	PodCIDR     string
	ClusterCIDR string
}

// Proxy are the cluster's HTTP proxies. https_proxy is its own value:
// unlike Tacker, it is never copied from http_proxy.
type Proxy struct {
	HTTPProxy  string
	HTTPSProxy string
	NoProxy    string
}

// Ansible is the Ansible server the playbooks run on.
type Ansible struct {
	IPAddress  string
	Port       int
	Username   string
	Password   string
	PrivateKey string
	// HostKeyFingerprints, when given, are the only acceptable host keys of
	// the server ("SHA256:..."); otherwise its key is pinned at first use.
	HostKeyFingerprints []string
	// KubesprayRootPath is the kubespray checkout (cluster.yml ...).
	KubesprayRootPath string
	// TransferringInventoryPath is where inventories go: each cluster gets
	// its own directory <path>/<vnfInstanceId>.
	TransferringInventoryPath string
	// PlaybookTimeout bounds one ansible-playbook run (0: the driver's).
	PlaybookTimeout time.Duration
}

// ExternalLB is the load balancer VNFC and its install script.
type ExternalLB struct {
	SSHCPName     string
	SSHUsername   string
	SSHPassword   string
	SSHPrivateKey string
	ScriptPath    string
	// APIPort is the port of the API frontend (default 8383).
	APIPort int
	// NodePortRange is passed to the script's -n (default: the script's).
	NodePortRange string
}

// paramError collects every problem of a parameter set.
type paramError struct{ problems []string }

func (e *paramError) Error() string {
	return ParamKey + ": " + strings.Join(e.problems, "; ") + " (every parameter: " + DocsURL + ")"
}

// DocsURL is where the parameters are documented.
const DocsURL = "docs/drivers.md#kubespray"

type reader struct {
	problems []string
}

func (r *reader) addf(format string, a ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, a...))
}

func (r *reader) obj(m map[string]any, key, where string, required bool) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.addf("%s%s is required", where, key)
		}
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		r.addf("%s%s must be an object", where, key)
		return nil
	}
	return o
}

func (r *reader) str(m map[string]any, key, where string, required bool) string {
	if m == nil {
		return ""
	}
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.addf("%s%s is required", where, key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.addf("%s%s must be a string", where, key)
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		r.addf("%s%s must not be empty", where, key)
	}
	return s
}

func (r *reader) num(m map[string]any, key, where string, lo, hi int) int {
	if m == nil {
		return 0
	}
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	var n int
	switch t := v.(type) {
	case float64:
		n = int(t)
		if float64(n) != t {
			r.addf("%s%s must be a whole number", where, key)
			return 0
		}
	case string: // Tacker's CLI sends numbers as strings
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(t)); err != nil {
			r.addf("%s%s must be a number, not %q", where, key, t)
			return 0
		}
	default:
		r.addf("%s%s must be a number", where, key)
		return 0
	}
	if n < lo || n > hi {
		r.addf("%s%s must be between %d and %d, not %d", where, key, lo, hi, n)
		return 0
	}
	return n
}

func (r *reader) strList(m map[string]any, key, where string) []string {
	if m == nil {
		return nil
	}
	switch t := m[key].(type) {
	case nil:
		return nil
	case string:
		var out []string
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	case []any:
		var out []string
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				r.addf("%s%s must be a list of strings", where, key)
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	r.addf("%s%s must be a list of strings", where, key)
	return nil
}

// known lists the accepted keys of each object, to catch typos early.
var known = map[string][]string{
	"":                  {"vim_name", "master_node", "worker_node", "proxy", "ansible", "external_lb_param", "script_path"},
	"master_node":       {"aspect_id", "vdu_id", "ssh_cp_name", "nic_cp_name", "username", "password", "private_key", "pod_cidr", "cluster_cidr", "cluster_cp_name", "cluster_fip_name"},
	"worker_node":       {"aspect_id", "vdu_id", "ssh_cp_name", "nic_cp_name", "username", "password", "private_key"},
	"proxy":             {"http_proxy", "https_proxy", "no_proxy", "k8s_node_cidr"},
	"ansible":           {"ip_address", "port", "username", "password", "private_key", "host_key_fingerprints", "kubespray_root_path", "transferring_inventory_path", "playbook_timeout"},
	"external_lb_param": {"ssh_cp_name", "ssh_username", "ssh_password", "ssh_private_key", "script_path", "api_port", "nodeport_range"},
}

func (r *reader) unknown(m map[string]any, obj string) {
	where := obj + "."
	if obj == "" {
		where = ""
	}
	for k := range m {
		ok := false
		for _, a := range known[obj] {
			if k == a {
				ok = true
				break
			}
		}
		if !ok {
			hint := ""
			switch k {
			case "key", "ssh_key":
				hint = " (a private key goes in private_key, or ssh_private_key for the load balancer, so that the VNFM seals it)"
			}
			r.addf("%s%s is not a known parameter%s; known: %s", where, k, hint, strings.Join(known[obj], ", "))
		}
	}
}

var userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

var safePathRE = regexp.MustCompile(`^/[A-Za-z0-9._/@+-]*$`)

func checkAbsPath(r *reader, what, p string) string {
	if p == "" {
		return ""
	}
	if !safePathRE.MatchString(p) || strings.Contains("/"+p+"/", "/../") {
		r.addf("%s %q must be an absolute path of letters, digits and ._/@+- (no spaces, quotes or ..)", what, p)
		return ""
	}
	if c := path.Clean(p); c == "/" {
		r.addf("%s must not be /", what)
		return ""
	} else {
		return c
	}
}

func checkCIDR(r *reader, what, s string) netip.Prefix {
	if s == "" {
		return netip.Prefix{}
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		r.addf("%s %q is not an IPv4 CIDR (e.g. 10.233.64.0/18)", what, s)
		return netip.Prefix{}
	}
	if p.Masked() != p {
		r.addf("%s %q has host bits set; use %s", what, s, p.Masked())
		return netip.Prefix{}
	}
	return p
}

func checkProxy(r *reader, what, s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.addf("%s must be an http(s) URL such as http://proxy.example:3128, not %q", what, redactURL(s))
	}
}

// redactURL hides a password in a proxy URL for messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return s
}

func (r *reader) node(m map[string]any, key string, master bool) NodeParams {
	where := key + "."
	o := r.obj(m, key, "", true)
	if o == nil {
		return NodeParams{}
	}
	r.unknown(o, key)
	n := NodeParams{
		VduID: r.str(o, "vdu_id", where, false), AspectID: r.str(o, "aspect_id", where, false),
		SSHCPName: r.str(o, "ssh_cp_name", where, true), NicCPName: r.str(o, "nic_cp_name", where, false),
		Username: r.str(o, "username", where, true), Password: r.str(o, "password", where, false),
		PrivateKey: r.str(o, "private_key", where, false),
	}
	if n.Username != "" && !userRE.MatchString(n.Username) {
		r.addf("%susername %q may only hold letters, digits and ._- (it goes into the Ansible inventory)", where, n.Username)
	}
	if n.NicCPName == "" {
		n.NicCPName = n.SSHCPName
	}
	if n.Password == "" && n.PrivateKey == "" {
		r.addf("%s: give password or private_key for %s", key, n.Username)
	}
	if master {
		n.PodCIDR = r.str(o, "pod_cidr", where, false)
		n.ClusterCIDR = r.str(o, "cluster_cidr", where, false)
		pod := checkCIDR(r, where+"pod_cidr", n.PodCIDR)
		svc := checkCIDR(r, where+"cluster_cidr", n.ClusterCIDR)
		if pod.IsValid() && svc.IsValid() && pod.Overlaps(svc) {
			r.addf("master_node.pod_cidr %s and master_node.cluster_cidr %s overlap", pod, svc)
		}
	}
	return n
}

// ParseParams reads and validates k8s_cluster_installation_param from
// additionalParams, reporting every problem at once.
func ParseParams(additional map[string]any) (*Params, error) {
	r := &reader{}
	top := r.obj(additional, ParamKey, "additionalParams.", true)
	if top == nil {
		return nil, &paramError{r.problems}
	}
	r.unknown(top, "")
	p := &Params{VimName: r.str(top, "vim_name", "", false)}
	p.Master = r.node(top, "master_node", true)
	p.Worker = r.node(top, "worker_node", false)
	if px := r.obj(top, "proxy", "", false); px != nil {
		r.unknown(px, "proxy")
		p.Proxy = Proxy{HTTPProxy: r.str(px, "http_proxy", "proxy.", false), HTTPSProxy: r.str(px, "https_proxy", "proxy.", false),
			NoProxy: r.str(px, "no_proxy", "proxy.", false)}
		checkProxy(r, "proxy.http_proxy", p.Proxy.HTTPProxy)
		checkProxy(r, "proxy.https_proxy", p.Proxy.HTTPSProxy)
		if strings.ContainsAny(p.Proxy.NoProxy, " \t\n\"'") {
			r.addf("proxy.no_proxy must be a comma-separated list without spaces or quotes")
		}
	}
	if a := r.obj(top, "ansible", "", true); a != nil {
		r.unknown(a, "ansible")
		w := "ansible."
		p.Ansible = Ansible{IPAddress: r.str(a, "ip_address", w, true), Port: r.num(a, "port", w, 1, 65535),
			Username: r.str(a, "username", w, true), Password: r.str(a, "password", w, false), PrivateKey: r.str(a, "private_key", w, false),
			HostKeyFingerprints: r.strList(a, "host_key_fingerprints", w),
			KubesprayRootPath:   r.str(a, "kubespray_root_path", w, true), TransferringInventoryPath: r.str(a, "transferring_inventory_path", w, true)}
		if p.Ansible.IPAddress != "" {
			if ip, err := netip.ParseAddr(p.Ansible.IPAddress); err != nil || ip.Zone() != "" {
				r.addf("ansible.ip_address %q is not an IP address", p.Ansible.IPAddress)
			}
		}
		if p.Ansible.Password == "" && p.Ansible.PrivateKey == "" && p.Ansible.Username != "" {
			r.addf("ansible: give password or private_key for %s", p.Ansible.Username)
		}
		p.Ansible.KubesprayRootPath = checkAbsPath(r, "ansible.kubespray_root_path", p.Ansible.KubesprayRootPath)
		p.Ansible.TransferringInventoryPath = checkAbsPath(r, "ansible.transferring_inventory_path", p.Ansible.TransferringInventoryPath)
		if s := r.num(a, "playbook_timeout", w, 60, 24*3600); s > 0 {
			p.Ansible.PlaybookTimeout = time.Duration(s) * time.Second
		}
	}
	if lb := r.obj(top, "external_lb_param", "", true); lb != nil {
		r.unknown(lb, "external_lb_param")
		w := "external_lb_param."
		p.ExternalLB = ExternalLB{SSHCPName: r.str(lb, "ssh_cp_name", w, true), SSHUsername: r.str(lb, "ssh_username", w, true),
			SSHPassword: r.str(lb, "ssh_password", w, false), SSHPrivateKey: r.str(lb, "ssh_private_key", w, false),
			ScriptPath: r.str(lb, "script_path", w, true), APIPort: r.num(lb, "api_port", w, 1, 65535),
			NodePortRange: r.str(lb, "nodeport_range", w, false)}
		if p.ExternalLB.APIPort == 0 {
			p.ExternalLB.APIPort = DefaultAPIPort
		}
		if p.ExternalLB.SSHPassword == "" && p.ExternalLB.SSHPrivateKey == "" && p.ExternalLB.SSHUsername != "" {
			r.addf("external_lb_param: give ssh_password or ssh_private_key for %s", p.ExternalLB.SSHUsername)
		}
		if s := p.ExternalLB.NodePortRange; s != "" && s != "none" && !regexp.MustCompile(`^[0-9]{1,5}-[0-9]{1,5}$`).MatchString(s) {
			r.addf("external_lb_param.nodeport_range must be FIRST-LAST (e.g. 30000-32767) or none, not %q", s)
		}
		if sp := p.ExternalLB.ScriptPath; sp != "" {
			clean := path.Clean(strings.TrimPrefix(sp, "./"))
			if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				r.addf("external_lb_param.script_path %q must be a path inside the VNF package (e.g. Scripts/install_external_lb.sh)", sp)
			}
			p.ExternalLB.ScriptPath = clean
		}
	}
	if len(r.problems) > 0 {
		return nil, &paramError{r.problems}
	}
	return p, nil
}

// mergeParams lays the k8s_cluster_installation_param of a scale or heal
// request over the instantiation's: each object given replaces the stored
// one whole (as Tacker documents for worker_node, ansible and
// external_lb_param).
func mergeParams(stored, req map[string]any) map[string]any {
	base, _ := stored[ParamKey].(map[string]any)
	over, _ := req[ParamKey].(map[string]any)
	if over == nil {
		return stored
	}
	merged := maps.Clone(base)
	if merged == nil {
		merged = map[string]any{}
	}
	maps.Copy(merged, over)
	out := maps.Clone(stored)
	if out == nil {
		out = map[string]any{}
	}
	out[ParamKey] = merged
	return out
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
