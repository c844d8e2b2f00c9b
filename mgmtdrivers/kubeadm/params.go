package kubeadm

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ParamKey is the additionalParams key holding the driver's parameters
// (Tacker's name).
const ParamKey = "k8s_cluster_installation_param"

// Defaults of the parameters.
const (
	DefaultPodCIDR           = "192.168.0.0/16"
	DefaultClusterCIDR       = "10.96.0.0/12"
	DefaultWorkerParallelism = 10
	DefaultDrainTimeout      = 300 * time.Second
	DefaultJoinTokenTTL      = 15 * time.Minute
	// MaxWorkerParallelism bounds worker_parallelism.
	MaxWorkerParallelism = 100
)

// Drain policies (drain_policy).
const (
	// DrainFail (the default) fails the operation when a drain does not
	// finish in time; the node stays cordoned and the error lists the pods
	// that blocked.
	DrainFail = "fail"
	// DrainForce deletes the pods left after the timeout (bypassing
	// PodDisruptionBudgets) and removes the node anyway.
	DrainForce = "force"
)

// NodeParams are master_node / worker_node: how to find the role's VNFCs and
// log in to them.
type NodeParams struct {
	// AspectID is the scaling aspect, or Heat AutoScalingGroup, holding the
	// role's VNFCs (Tacker: the ASG resource name equals the aspect id).
	AspectID string
	// VduID selects the role's VNFCs by VDU (Tacker v2's vdu_id; ours too).
	VduID string
	// SSHCPName is the CP (port) whose address SSH goes to; NICCPName the
	// CP whose address is the Kubernetes node IP (default SSHCPName).
	SSHCPName string
	NICCPName string
	// Username and Password (or SSHPrivateKey, PEM, optionally encrypted
	// with SSHPrivateKeyPassphrase) to log in; the user needs sudo.
	Username                string
	Password                string
	SSHPrivateKey           string
	SSHPrivateKeyPassphrase string

	// Master only.
	PodCIDR        string // default DefaultPodCIDR
	ClusterCIDR    string // service CIDR, default DefaultClusterCIDR
	ClusterCPName  string // CP holding the API server address
	ClusterFIPName string // floating IP of the API address (not supported)
}

// ProxyParams are the proxy settings of the nodes.
type ProxyParams struct {
	HTTPProxy   string
	HTTPSProxy  string
	NoProxy     string
	K8sNodeCIDR string
}

// Enabled reports whether a proxy is configured.
func (p ProxyParams) Enabled() bool { return p.HTTPProxy != "" || p.HTTPSProxy != "" }

// Params is a validated k8s_cluster_installation_param.
type Params struct {
	// ScriptPath is the install script's path in the VNF package; empty:
	// the driver's built-in copy of scripts/install_k8s_cluster.sh.
	ScriptPath string
	// VimName names the Kubernetes VIM registered for the cluster (default
	// kubernetes_vim_<vnfInstanceId>).
	VimName string
	Master  NodeParams
	Worker  NodeParams
	Proxy   ProxyParams

	// Ours.
	WorkerParallelism int           // worker_parallelism: joins and drains at a time
	DrainTimeout      time.Duration // drain_timeout (seconds, or a duration such as "5m")
	DrainPolicy       string        // drain_policy: fail | force
	KubernetesVersion string        // kubernetes_version: "v1.31.4" (default: the script's pin)
	JoinTokenTTL      time.Duration // join_token_ttl: TTL of each bootstrap token
	// HA configures the control plane behind a VIP (used when
	// master_node.cluster_cp_name names a port of its own, such as vip_CP).
	HA HAParams
	// LB selects where HAProxy and keepalived run (ha.lb_topology).
	LB LBParams
}

// ParamError lists every problem found in the parameters; each names the
// key it is about.
type ParamError struct{ Problems []string }

func (e *ParamError) Error() string {
	return "invalid additionalParams: " + strings.Join(e.Problems, "; ") + " (every parameter: " + DocsURL + ")"
}

// DocsURL is where the parameters are documented.
const DocsURL = "docs/drivers.md#kubeadm"

type checker struct{ problems []string }

func (c *checker) addf(key, format string, args ...any) {
	c.problems = append(c.problems, key+": "+fmt.Sprintf(format, args...))
}

func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return &ParamError{Problems: c.problems}
}

var (
	topKeys      = []string{"script_path", "vim_name", "master_node", "worker_node", "proxy", "worker_parallelism", "drain_timeout", "drain_policy", "kubernetes_version", "join_token_ttl", "ha", "lb_node"}
	nodeKeys     = []string{"aspect_id", "vdu_id", "ssh_cp_name", "nic_cp_name", "username", "password", "ssh_private_key", "ssh_private_key_passphrase"}
	masterOnly   = []string{"pod_cidr", "cluster_cidr", "cluster_cp_name", "cluster_fip_name"}
	proxyKeys    = []string{"http_proxy", "https_proxy", "no_proxy", "k8s_node_cidr"}
	tackerExtras = []string{"helm_installation_script_path", "private_registry_connection_info", "storage_server", "pv_registration_params"}

	versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)
)

// ParseParams reads and validates additionalParams.k8s_cluster_installation_param.
// Every problem is reported at once, each naming its key.
func ParseParams(additional map[string]any) (*Params, error) {
	c := &checker{}
	raw, ok := additional[ParamKey]
	if !ok || raw == nil {
		c.addf(ParamKey, "is required: give master_node and worker_node (and script_path)")
		return nil, c.err()
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.addf(ParamKey, "must be an object, not %s", jsonType(raw))
		return nil, c.err()
	}
	p := &Params{}
	unknownKeys(c, ParamKey, m, topKeys, tackerExtras, "")
	p.ScriptPath = str(c, ParamKey+".script_path", m["script_path"])
	if p.ScriptPath != "" {
		clean := path.Clean(strings.TrimPrefix(p.ScriptPath, "./"))
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			c.addf(ParamKey+".script_path", "%q must be a path inside the VNF package, such as Scripts/install_k8s_cluster.sh", p.ScriptPath)
		}
		p.ScriptPath = clean
	}
	p.VimName = str(c, ParamKey+".vim_name", m["vim_name"])
	if len(p.VimName) > 255 {
		c.addf(ParamKey+".vim_name", "is longer than 255 characters")
	}
	p.Master = nodeParams(c, ParamKey+".master_node", m["master_node"], true)
	p.Worker = nodeParams(c, ParamKey+".worker_node", m["worker_node"], false)
	p.Proxy = proxyParams(c, ParamKey+".proxy", m["proxy"])

	p.WorkerParallelism = DefaultWorkerParallelism
	if v, ok := m["worker_parallelism"]; ok && v != nil {
		if n, ok := integer(c, ParamKey+".worker_parallelism", v); ok {
			if n < 1 || n > MaxWorkerParallelism {
				c.addf(ParamKey+".worker_parallelism", "%d is out of range 1..%d", n, MaxWorkerParallelism)
			} else {
				p.WorkerParallelism = n
			}
		}
	}
	p.DrainTimeout = duration(c, ParamKey+".drain_timeout", m["drain_timeout"], DefaultDrainTimeout, time.Second, 24*time.Hour)
	p.JoinTokenTTL = duration(c, ParamKey+".join_token_ttl", m["join_token_ttl"], DefaultJoinTokenTTL, time.Minute, 24*time.Hour)
	p.DrainPolicy = drainPolicy(c, ParamKey+".drain_policy", m["drain_policy"], DrainFail)
	if v := str(c, ParamKey+".kubernetes_version", m["kubernetes_version"]); v != "" {
		if !versionRE.MatchString(v) {
			c.addf(ParamKey+".kubernetes_version", "%q is not a Kubernetes release such as v1.31.4", v)
		} else {
			p.KubernetesVersion = "v" + strings.TrimPrefix(v, "v")
		}
	}
	p.HA = haParams(c, ParamKey+".ha", m["ha"])
	p.LB = lbParams(c, m, p)
	checkEtcdLBPort(c, p)
	if p.Master.PodCIDR != "" && p.Master.ClusterCIDR != "" {
		pod, err1 := netip.ParsePrefix(p.Master.PodCIDR)
		svc, err2 := netip.ParsePrefix(p.Master.ClusterCIDR)
		if err1 == nil && err2 == nil && pod.Overlaps(svc) {
			c.addf(ParamKey+".master_node.cluster_cidr", "the service CIDR %s overlaps the pod CIDR %s", svc, pod)
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return p, nil
}

func nodeParams(c *checker, key string, raw any, master bool) NodeParams {
	var np NodeParams
	if raw == nil {
		c.addf(key, "is required")
		return np
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.addf(key, "must be an object, not %s", jsonType(raw))
		return np
	}
	allowed := nodeKeys
	if master {
		allowed = append(slices.Clone(nodeKeys), masterOnly...)
		unknownKeys(c, key, m, allowed, nil, "")
	} else {
		unknownKeys(c, key, m, allowed, nil, "master_node")
	}
	np.AspectID = str(c, key+".aspect_id", m["aspect_id"])
	np.VduID = str(c, key+".vdu_id", m["vdu_id"])
	np.SSHCPName = str(c, key+".ssh_cp_name", m["ssh_cp_name"])
	np.NICCPName = str(c, key+".nic_cp_name", m["nic_cp_name"])
	np.Username = str(c, key+".username", m["username"])
	np.Password = str(c, key+".password", m["password"])
	np.SSHPrivateKey = str(c, key+".ssh_private_key", m["ssh_private_key"])
	np.SSHPrivateKeyPassphrase = str(c, key+".ssh_private_key_passphrase", m["ssh_private_key_passphrase"])
	if np.SSHCPName == "" {
		c.addf(key+".ssh_cp_name", "is required: the connection point (port) whose address SSH goes to")
	}
	if np.NICCPName == "" {
		np.NICCPName = np.SSHCPName
	}
	checkCredentials(c, func(f string) string { return key + "." + f }, &np)
	if master {
		np.PodCIDR = cidr(c, key+".pod_cidr", m["pod_cidr"], DefaultPodCIDR)
		np.ClusterCIDR = cidr(c, key+".cluster_cidr", m["cluster_cidr"], DefaultClusterCIDR)
		np.ClusterCPName = str(c, key+".cluster_cp_name", m["cluster_cp_name"])
		if np.ClusterCPName == "" {
			c.addf(key+".cluster_cp_name", "is required: the connection point holding the API server address (the master's port for one master)")
		}
		np.ClusterFIPName = str(c, key+".cluster_fip_name", m["cluster_fip_name"])
		if np.ClusterFIPName != "" {
			c.addf(key+".cluster_fip_name", "is not supported: the API server certificate would not name the floating IP (Tacker then drops TLS verification); reach the cluster on the address of cluster_cp_name")
		}
	}
	return np
}

// checkCredentials checks a node role's login; name gives a field's key.
func checkCredentials(c *checker, name func(field string) string, np *NodeParams) {
	if np.Username == "" {
		c.addf(name("username"), "is required: the login user on the nodes (with sudo)")
	}
	if np.Password == "" && np.SSHPrivateKey == "" {
		c.addf(name("password"), "is required unless ssh_private_key is given")
	}
	if np.SSHPrivateKey != "" {
		var err error
		if np.SSHPrivateKeyPassphrase != "" {
			_, err = ssh.ParsePrivateKeyWithPassphrase([]byte(np.SSHPrivateKey), []byte(np.SSHPrivateKeyPassphrase))
		} else {
			_, err = ssh.ParsePrivateKey([]byte(np.SSHPrivateKey))
		}
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			c.addf(name("ssh_private_key_passphrase"), "is required: the private key is encrypted")
		} else if err != nil {
			// x/crypto's messages never echo the key material.
			c.addf(name("ssh_private_key"), "is not a usable private key (PEM: OpenSSH, PKCS#1, PKCS#8 or SEC1): %v", err)
		}
	}
}

func proxyParams(c *checker, key string, raw any) ProxyParams {
	var p ProxyParams
	if raw == nil {
		return p
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.addf(key, "must be an object, not %s", jsonType(raw))
		return p
	}
	unknownKeys(c, key, m, proxyKeys, nil, "")
	p.HTTPProxy = proxyURL(c, key+".http_proxy", m["http_proxy"])
	p.HTTPSProxy = proxyURL(c, key+".https_proxy", m["https_proxy"])
	p.NoProxy = str(c, key+".no_proxy", m["no_proxy"])
	if strings.ContainsAny(p.NoProxy, " \t\n\"'") {
		c.addf(key+".no_proxy", "must be a comma-separated list of hosts, domains and CIDRs without spaces or quotes")
	}
	p.K8sNodeCIDR = cidr(c, key+".k8s_node_cidr", m["k8s_node_cidr"], "")
	return p
}

func proxyURL(c *checker, key string, raw any) string {
	s := str(c, key, raw)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.addf(key, "%q is not an http(s) URL such as http://proxy.example.com:3128", redactURL(s))
	}
	return s
}

// redactURL hides a password in a proxy URL for error messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return s
}

// Overrides are what a scale, heal or terminate request may change:
// Tacker's credential overrides (master_node_username, master_node_password,
// worker_node_username, worker_node_password), our key equivalents
// (master_node_ssh_private_key, worker_node_ssh_private_key and their
// *_passphrase) and the drain and parallelism options (drain_timeout,
// drain_policy, worker_parallelism).
func (p *Params) Overrides(additional map[string]any) error {
	c := &checker{}
	creds := func(prefix string, np *NodeParams) {
		set := func(name string, dst *string) {
			if v, ok := additional[prefix+name]; ok && v != nil {
				if s := str(c, prefix+name, v); s != "" {
					*dst = s
				}
			}
		}
		set("username", &np.Username)
		set("password", &np.Password)
		set("ssh_private_key", &np.SSHPrivateKey)
		set("ssh_private_key_passphrase", &np.SSHPrivateKeyPassphrase)
		checkCredentials(c, func(f string) string { return prefix + f }, np)
	}
	creds("master_node_", &p.Master)
	creds("worker_node_", &p.Worker)
	if v, ok := additional["drain_timeout"]; ok {
		p.DrainTimeout = duration(c, "drain_timeout", v, p.DrainTimeout, time.Second, 24*time.Hour)
	}
	if v, ok := additional["drain_policy"]; ok {
		p.DrainPolicy = drainPolicy(c, "drain_policy", v, p.DrainPolicy)
	}
	if v, ok := additional["worker_parallelism"]; ok && v != nil {
		if n, ok := integer(c, "worker_parallelism", v); ok {
			if n < 1 || n > MaxWorkerParallelism {
				c.addf("worker_parallelism", "%d is out of range 1..%d", n, MaxWorkerParallelism)
			} else {
				p.WorkerParallelism = n
			}
		}
	}
	return c.err()
}

func unknownKeys(c *checker, key string, m map[string]any, allowed, unsupported []string, masterOnlyIn string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case slices.Contains(allowed, k):
		case slices.Contains(unsupported, k):
			c.addf(key+"."+k, "is not supported by this VNFM (Tacker's Helm, private registry and NFS storage extras are not implemented); remove it")
		case masterOnlyIn != "" && slices.Contains(masterOnly, k):
			c.addf(key+"."+k, "belongs in %s", masterOnlyIn)
		default:
			c.addf(key+"."+k, "is not a known parameter; known: %s", strings.Join(allowed, ", "))
		}
	}
}

func str(c *checker, key string, v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			c.addf(key, "must not contain NUL bytes")
			return ""
		}
		return strings.TrimSpace(t)
	}
	c.addf(key, "must be a string, not %s", jsonType(v))
	return ""
}

func cidr(c *checker, key string, v any, def string) string {
	s := str(c, key, v)
	if s == "" {
		return def
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		c.addf(key, "%q is not an IPv4 CIDR such as 192.168.0.0/16", s)
		return def
	}
	return p.Masked().String()
}

// integer accepts JSON numbers and numeric strings (Tacker bug 1978563:
// numbers in additionalParams must work either way).
func integer(c *checker, key string, v any) (int, bool) {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e9 {
			return int(t), true
		}
	case int:
		return t, true
	case json.Number:
		if n, err := strconv.Atoi(t.String()); err == nil {
			return n, true
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return n, true
		}
	}
	c.addf(key, "must be a whole number, not %v", v)
	return 0, false
}

// duration accepts seconds (a number or numeric string) or a Go duration
// ("300s", "5m").
func duration(c *checker, key string, v any, def, lo, hi time.Duration) time.Duration {
	if v == nil {
		return def
	}
	var d time.Duration
	switch t := v.(type) {
	case string:
		s := strings.TrimSpace(t)
		if n, err := strconv.Atoi(s); err == nil {
			d = time.Duration(n) * time.Second
		} else if pd, err := time.ParseDuration(s); err == nil {
			d = pd
		} else {
			c.addf(key, "%q is neither seconds nor a duration such as 300s or 5m", t)
			return def
		}
	default:
		n, ok := integer(c, key, v)
		if !ok {
			return def
		}
		d = time.Duration(n) * time.Second
	}
	if d < lo || d > hi {
		c.addf(key, "%v is out of range %v..%v", d, lo, hi)
		return def
	}
	return d
}

func drainPolicy(c *checker, key string, v any, def string) string {
	s := str(c, key, v)
	switch s {
	case "":
		return def
	case DrainFail, DrainForce:
		return s
	}
	c.addf(key, "%q is not a drain policy; use %q (stop and report the blocking pods) or %q (delete them)", s, DrainFail, DrainForce)
	return def
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
