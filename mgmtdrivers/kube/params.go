package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ParamKey is the additionalParams key holding a Kubernetes management
// driver's parameters (Tacker's name).
const ParamKey = "k8s_cluster_installation_param"

// Root is the JSON path of the drivers' parameters in a request.
const Root = "additionalParams." + ParamKey

// ParamError lists every problem found in a request's parameters; each
// starts with the JSON path it is about. Docs is where every parameter is
// documented.
type ParamError struct {
	Problems []string
	Docs     string
}

func (e *ParamError) Error() string {
	s := "invalid additionalParams: " + strings.Join(e.Problems, "; ")
	if e.Docs != "" {
		s += " (every parameter: " + e.Docs + ")"
	}
	return s
}

// Reader reads parameters out of decoded JSON, collecting every problem
// with its JSON path, so that a request learns all its mistakes at once.
// Docs, if set, is where the parameters are documented (named in the error).
type Reader struct {
	Docs     string
	problems []string
}

// Addf records a problem at path.
func (r *Reader) Addf(path, format string, args ...any) {
	r.problems = append(r.problems, path+": "+fmt.Sprintf(format, args...))
}

// Err is nil without problems, else a *ParamError.
func (r *Reader) Err() error {
	if len(r.problems) == 0 {
		return nil
	}
	return &ParamError{Problems: slices.Clone(r.problems), Docs: r.Docs}
}

// Obj is a JSON object being read; a missing object reads as empty.
type Obj struct {
	r    *Reader
	Path string
	m    map[string]any
}

// Object reads v (found at path) as an object; nil when absent or not an
// object (a problem then, or when required and absent).
func (r *Reader) Object(path string, v any, required bool) *Obj {
	if v == nil {
		if required {
			r.Addf(path, "is required")
		}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		r.Addf(path, "must be an object, not %s", jsonType(v))
		return nil
	}
	return &Obj{r: r, Path: path, m: m}
}

func (o *Obj) at(key string) string { return o.Path + "." + key }

// Has reports whether the object has key (with any value but null).
func (o *Obj) Has(key string) bool {
	if o == nil {
		return false
	}
	v, ok := o.m[key]
	return ok && v != nil
}

// Raw returns the value of key.
func (o *Obj) Raw(key string) any {
	if o == nil {
		return nil
	}
	return o.m[key]
}

// Child reads key as an object.
func (o *Obj) Child(key string, required bool) *Obj {
	if o == nil {
		return nil
	}
	return o.r.Object(o.at(key), o.m[key], required)
}

// Addf records a problem at key of the object.
func (o *Obj) Addf(key, format string, args ...any) { o.r.Addf(o.at(key), format, args...) }

// Keys checks that the object has only allowed keys. refused maps keys
// the driver knows but does not take to the reason (a key that is
// accepted must be used: none is silently ignored).
func (o *Obj) Keys(allowed []string, refused map[string]string) {
	if o == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		switch {
		case slices.Contains(allowed, k):
		case refused[k] != "":
			o.Addf(k, "%s", refused[k])
		default:
			o.Addf(k, "is not a known parameter; known: %s", strings.Join(allowed, ", "))
		}
	}
}

// String reads key as a string (spaces trimmed; "" when absent).
func (o *Obj) String(key string, required bool) string {
	if o == nil {
		return ""
	}
	switch t := o.m[key].(type) {
	case nil:
	case string:
		if strings.IndexByte(t, 0) >= 0 {
			o.Addf(key, "must not contain NUL bytes")
			return ""
		}
		if s := strings.TrimSpace(t); s != "" {
			return s
		}
	default:
		o.Addf(key, "must be a string, not %s", jsonType(t))
		return ""
	}
	if required {
		o.Addf(key, "is required")
	}
	return ""
}

// Int reads key as a whole number in lo..hi: a JSON number or a numeric
// string (Tacker bug 1978563: the CLI sends numbers as strings). ok is
// false when absent or wrong.
func (o *Obj) Int(key string, lo, hi int) (n int, ok bool) {
	if !o.Has(key) {
		return 0, false
	}
	v := o.m[key]
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e9 {
			n, ok = int(t), true
		}
	case int:
		n, ok = t, true
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			n, ok = i, true
		}
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			n, ok = i, true
		}
	}
	if !ok {
		o.Addf(key, "must be a whole number, not %v", v)
		return 0, false
	}
	if n < lo || n > hi {
		o.Addf(key, "%d is out of range %d..%d", n, lo, hi)
		return 0, false
	}
	return n, true
}

// Duration reads key as seconds (a number or numeric string) or a Go
// duration ("300s", "5m") in lo..hi; def when absent or wrong.
func (o *Obj) Duration(key string, def, lo, hi time.Duration) time.Duration {
	if !o.Has(key) {
		return def
	}
	var d time.Duration
	switch t := o.m[key].(type) {
	case string:
		s := strings.TrimSpace(t)
		if n, err := strconv.Atoi(s); err == nil {
			d = time.Duration(n) * time.Second
		} else if pd, err := time.ParseDuration(s); err == nil {
			d = pd
		} else {
			o.Addf(key, "%q is neither seconds nor a duration such as 300s or 5m", t)
			return def
		}
	default:
		n, ok := o.Int(key, math.MinInt32, math.MaxInt32)
		if !ok {
			return def
		}
		d = time.Duration(n) * time.Second
	}
	if d < lo || d > hi {
		o.Addf(key, "%v is out of range %v..%v", d, lo, hi)
		return def
	}
	return d
}

// Bool reads key as true/false (also "True"/"False" strings).
func (o *Obj) Bool(key string) bool {
	if !o.Has(key) {
		return false
	}
	switch t := o.m[key].(type) {
	case bool:
		return t
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(t)); err == nil {
			return b
		}
	}
	o.Addf(key, "must be a boolean (true or false), not %v", o.m[key])
	return false
}

// StringList reads key as a list of strings, or one comma-separated string.
func (o *Obj) StringList(key string) []string {
	if !o.Has(key) {
		return nil
	}
	switch t := o.m[key].(type) {
	case string:
		var out []string
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				o.Addf(key, "must be a list of strings")
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	o.Addf(key, "must be a list of strings")
	return nil
}

// PackagePath reads key as a path inside the VNF package ("Scripts/x.sh").
func (o *Obj) PackagePath(key string, required bool) string {
	s := o.String(key, required)
	if s == "" {
		return ""
	}
	clean := path.Clean(strings.TrimPrefix(s, "./"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		o.Addf(key, "%q must be a path inside the VNF package, such as Scripts/install.sh", s)
		return ""
	}
	return clean
}

// CIDR reads key as an IPv4 network in CIDR notation. One rule for both
// drivers: the address must be the network's own (no host bits set), since
// Kubernetes would silently use the network anyway and a typo would go
// unnoticed; the error names the network meant.
func (o *Obj) CIDR(key string) string {
	s := o.String(key, false)
	if s == "" {
		return ""
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		o.Addf(key, "%q is not an IPv4 CIDR such as 192.168.0.0/16", s)
		return ""
	}
	if p.Masked() != p {
		o.Addf(key, "%q has host bits set: give the network address %s (a CIDR names its network, not a host in it)", s, p.Masked())
		return ""
	}
	return p.String()
}

// ProxyURL reads key as an http(s) proxy URL.
func (o *Obj) ProxyURL(key string) string {
	s := o.String(key, false)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		o.Addf(key, "%q is not an http(s) URL such as http://proxy.example.com:3128", RedactURL(s))
		return ""
	}
	return s
}

// RedactURL hides a password in a URL for messages.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return s
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

// NodeParams are master_node, worker_node and the like: which compute
// resources hold a role's nodes and how to log in to them.
type NodeParams struct {
	// AspectID (aspect_id) is the scaling aspect holding the role's VNFCs:
	// a resource belongs to the role when its scaling group is named so
	// (Tacker: the AutoScalingGroup is named after the aspect) or the
	// flavour's aspect of that id scales its VDU.
	AspectID string `json:"aspect_id,omitempty"`
	// VduID (vdu_id) selects the role's VNFCs by VDU; it wins over aspect_id.
	VduID string `json:"vdu_id,omitempty"`
	// SSHCPName (ssh_cp_name, required) is the connection point whose
	// address SSH goes to; when no CP is named so (Tacker names the
	// floating IP resource here), the floating IP of nic_cp_name.
	SSHCPName string `json:"ssh_cp_name"`
	// NICCPName (nic_cp_name) is the connection point whose address is the
	// Kubernetes node address (default ssh_cp_name).
	NICCPName string `json:"nic_cp_name,omitempty"`
	Login
}

// NodeKeys are the keys ReadNode reads.
var NodeKeys = []string{"aspect_id", "vdu_id", "ssh_cp_name", "nic_cp_name", "username", "password", "ssh_private_key", "ssh_private_key_passphrase"}

// ReadNode reads a role's node parameters from o (its keys are the
// caller's to check: see NodeKeys). keyKeys name the private key's key
// (default ssh_private_key); more than one of them given is a problem.
func ReadNode(o *Obj, keyKeys ...string) NodeParams {
	var np NodeParams
	if o == nil {
		return np
	}
	np.AspectID = o.String("aspect_id", false)
	np.VduID = o.String("vdu_id", false)
	np.SSHCPName = o.String("ssh_cp_name", false)
	if _, isStr := o.Raw("ssh_cp_name").(string); np.SSHCPName == "" && (isStr || o.Raw("ssh_cp_name") == nil) {
		o.Addf("ssh_cp_name", "is required: the connection point (port) whose address SSH goes to")
	}
	np.NICCPName = o.String("nic_cp_name", false)
	if np.NICCPName == "" {
		np.NICCPName = np.SSHCPName
	}
	keyKey := "ssh_private_key"
	var given []string
	for _, k := range keyKeys {
		if o.Has(k) {
			given = append(given, k)
		}
	}
	switch len(given) {
	case 0:
		if len(keyKeys) > 0 {
			keyKey = keyKeys[0]
		}
	case 1:
		keyKey = given[0]
	default:
		o.Addf(given[1], "gives the private key again (as %s); give one of them", given[0])
		keyKey = given[0]
	}
	np.Login = ReadLogin(o, "username", "password", keyKey, "ssh_private_key_passphrase")
	return np
}

// ReadLogin reads a login from o under the given keys: the user is
// required, and a password or a private key (PEM that parses, with its
// passphrase when encrypted).
func ReadLogin(o *Obj, userKey, passwordKey, keyKey, passphraseKey string) Login {
	var l Login
	if o == nil {
		return l
	}
	l.Username = o.String(userKey, false)
	l.Password = o.String(passwordKey, false)
	if keyKey != "" {
		l.PrivateKey = o.String(keyKey, false)
	}
	if passphraseKey != "" {
		l.Passphrase = o.String(passphraseKey, false)
	}
	CheckLogin(o, l, userKey, passwordKey, keyKey, passphraseKey)
	return l
}

// CheckLogin reports what is missing or wrong in a login read from o.
func CheckLogin(o *Obj, l Login, userKey, passwordKey, keyKey, passphraseKey string) {
	if l.Username == "" {
		o.Addf(userKey, "is required: the login user (with sudo)")
	}
	if l.Password == "" && l.PrivateKey == "" {
		if keyKey != "" {
			o.Addf(passwordKey, "is required unless %s is given", keyKey)
		} else {
			o.Addf(passwordKey, "is required")
		}
	}
	if l.PrivateKey == "" {
		return
	}
	var err error
	if l.Passphrase != "" {
		_, err = ssh.ParsePrivateKeyWithPassphrase([]byte(l.PrivateKey), []byte(l.Passphrase))
	} else {
		_, err = ssh.ParsePrivateKey([]byte(l.PrivateKey))
	}
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		o.Addf(passphraseKey, "is required: the private key is encrypted")
	} else if err != nil {
		// x/crypto's messages never echo the key material.
		o.Addf(keyKey, "is not a usable private key (PEM: OpenSSH, PKCS#1, PKCS#8 or SEC1): %v", err)
	}
}

// Networks are master_node's pod_cidr and cluster_cidr.
type Networks struct {
	// PodCIDR (pod_cidr) is the pods' network.
	PodCIDR string `json:"pod_cidr,omitempty"`
	// ClusterCIDR (cluster_cidr) is the services' network.
	ClusterCIDR string `json:"cluster_cidr,omitempty"`
}

// ReadNetworks reads pod_cidr and cluster_cidr (defaults when absent) and
// checks that they do not overlap.
func ReadNetworks(o *Obj, defPod, defCluster string) Networks {
	n := Networks{PodCIDR: o.CIDR("pod_cidr"), ClusterCIDR: o.CIDR("cluster_cidr")}
	if n.PodCIDR == "" && !o.Has("pod_cidr") {
		n.PodCIDR = defPod
	}
	if n.ClusterCIDR == "" && !o.Has("cluster_cidr") {
		n.ClusterCIDR = defCluster
	}
	if n.PodCIDR != "" && n.ClusterCIDR != "" {
		pod, err1 := netip.ParsePrefix(n.PodCIDR)
		svc, err2 := netip.ParsePrefix(n.ClusterCIDR)
		if err1 == nil && err2 == nil && pod.Overlaps(svc) {
			o.Addf("cluster_cidr", "the service CIDR %s overlaps the pod CIDR %s", svc, pod)
		}
	}
	return n
}

// Proxy are the nodes' proxy settings (proxy).
type Proxy struct {
	// HTTPProxy (http_proxy) and HTTPSProxy (https_proxy) are http(s)
	// URLs; https_proxy is its own value, never copied from http_proxy.
	HTTPProxy  string `json:"http_proxy,omitempty"`
	HTTPSProxy string `json:"https_proxy,omitempty"`
	// NoProxy (no_proxy) is a comma-separated list of hosts, domains and
	// CIDRs reached without the proxy.
	NoProxy string `json:"no_proxy,omitempty"`
	// K8sNodeCIDR (k8s_node_cidr) is the nodes' network: reached without
	// the proxy too (default: the first master's address /24).
	K8sNodeCIDR string `json:"k8s_node_cidr,omitempty"`
}

// Enabled reports whether a proxy is configured.
func (p Proxy) Enabled() bool { return p.HTTPProxy != "" || p.HTTPSProxy != "" }

// ProxyKeys are the keys of proxy.
var ProxyKeys = []string{"http_proxy", "https_proxy", "no_proxy", "k8s_node_cidr"}

// ReadProxy reads proxy (nil: none).
func ReadProxy(o *Obj) Proxy {
	var p Proxy
	if o == nil {
		return p
	}
	o.Keys(ProxyKeys, nil)
	p.HTTPProxy = o.ProxyURL("http_proxy")
	p.HTTPSProxy = o.ProxyURL("https_proxy")
	p.NoProxy = o.String("no_proxy", false)
	if strings.ContainsAny(p.NoProxy, " \t\n\"'") {
		o.Addf("no_proxy", "must be a comma-separated list of hosts, domains and CIDRs without spaces or quotes")
	}
	p.K8sNodeCIDR = o.CIDR("k8s_node_cidr")
	return p
}
