// Package kuryr holds the Kuryr-Kubernetes parameters of a cluster the VNFM
// builds (seed 001's "Kuryr Kubernetes: ID of Security group for pods, ID
// of Subnets for Pods, ID of project, ID of Subnet for k8s services, ID of
// LBaaS") and renders kuryr-controller's kuryr.conf from them.
//
// In an instantiate request they are k8s_cluster_installation_param.kuryr
// (with cni: kuryr):
//
//	kuryr:
//	  pod_subnet_id: <subnet id>            # default: stack output kuryr_pod_subnet_id
//	  pod_security_group_ids: [<sg id>]     # default: stack output kuryr_pod_security_group_ids
//	  service_subnet_id: <subnet id>        # default: stack output kuryr_service_subnet_id
//	  project_id: <project id>              # default: the VIM's project
//	  auth_url: http://keystone:5000/v3     # Keystone as the cluster reaches it; default: the VIM's
//	  worker_nodes_subnet_ids: [<subnet>]   # nested pods (pod_vif_driver nested-*); default none
//	  pod_vif_driver: nested-vlan           # nested-vlan | nested-macvlan | neutron-vif
//	  lbaas:
//	    provider: amphora                   # Octavia provider: amphora | ovn
//	    member_mode: L3                     # L3 | L2
//	    lb_algorithm: ROUND_ROBIN           # ROUND_ROBIN | LEAST_CONNECTIONS | SOURCE_IP | SOURCE_IP_PORT
//	    enforce_sg_rules: true
//	    flavor_id: <octavia flavor id>      # optional ("ID of LBaaS")
//	  credential:
//	    ttl: 720h                           # lifetime of kuryr-controller's application credential
//	    roles: [member]                     # its roles in the project
//
// Every id may instead name where the base HOT put it: {stack_output:
// <output>} or {stack_resource: <resource name>} (the resource's physical
// id); a list output (kuryr_pod_security_group_ids) gives all its items.
package kuryr

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ref is an OpenStack resource id, given or taken from the stack.
type Ref struct {
	ID       string `json:"id,omitempty"`
	Output   string `json:"stackOutput,omitempty"`
	Resource string `json:"stackResource,omitempty"`
}

// String says where the id comes from.
func (r Ref) String() string {
	switch {
	case r.Output != "":
		return "stack output " + r.Output
	case r.Resource != "":
		return "stack resource " + r.Resource
	}
	return r.ID
}

// LBaaS are the Octavia settings ([octavia_defaults]).
type LBaaS struct {
	Provider       string `json:"provider"`
	MemberMode     string `json:"memberMode"`
	Algorithm      string `json:"lbAlgorithm"`
	EnforceSGRules bool   `json:"enforceSgRules"`
	FlavorID       string `json:"flavorId,omitempty"`
}

// Params are k8s_cluster_installation_param.kuryr, checked.
type Params struct {
	PodSubnet          Ref           `json:"podSubnet"`
	PodSecurityGroups  []Ref         `json:"podSecurityGroups"`
	ServiceSubnet      Ref           `json:"serviceSubnet"`
	Project            string        `json:"project,omitempty"`
	AuthURL            string        `json:"authUrl,omitempty"`
	WorkerNodesSubnets []Ref         `json:"workerNodesSubnets,omitempty"`
	PodVifDriver       string        `json:"podVifDriver"`
	LBaaS              LBaaS         `json:"lbaas"`
	CredentialTTL      time.Duration `json:"credentialTtl"`
	CredentialRoles    []string      `json:"credentialRoles"`
}

// Default stack outputs of the ids.
const (
	OutputPodSubnet      = "kuryr_pod_subnet_id"
	OutputPodSGs         = "kuryr_pod_security_group_ids"
	OutputServiceSubnet  = "kuryr_service_subnet_id"
	DefaultCredentialTTL = 30 * 24 * time.Hour
)

var (
	keys           = []string{"pod_subnet_id", "pod_security_group_ids", "service_subnet_id", "project_id", "auth_url", "worker_nodes_subnet_ids", "pod_vif_driver", "lbaas", "credential"}
	lbaasKeys      = []string{"provider", "member_mode", "lb_algorithm", "enforce_sg_rules", "flavor_id"}
	credentialKeys = []string{"ttl", "roles"}
	vifDrivers     = []string{"nested-vlan", "nested-macvlan", "neutron-vif"}
	providers      = []string{"amphora", "ovn"}
	memberModes    = []string{"L3", "L2"}
	algorithms     = []string{"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"}
	idRE           = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$`)
	roleRE         = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// ParamNames lists every key Parse accepts, nested ones as
// "lbaas.provider" (for the documentation's tests).
func ParamNames() []string {
	out := slices.Clone(keys)
	for _, k := range lbaasKeys {
		out = append(out, "lbaas."+k)
	}
	for _, k := range credentialKeys {
		out = append(out, "credential."+k)
	}
	return out
}

type checker struct {
	problems []string
}

func (c *checker) addf(key, format string, args ...any) {
	c.problems = append(c.problems, key+": "+fmt.Sprintf(format, args...))
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func unknown(c *checker, key string, m map[string]any, allowed []string) {
	for k := range m {
		if !slices.Contains(allowed, k) {
			c.addf(key+"."+k, "is not a known parameter (known: %s)", strings.Join(allowed, ", "))
		}
	}
}

func (c *checker) ref(key string, v any) (Ref, bool) {
	switch t := v.(type) {
	case string:
		if !idRE.MatchString(t) {
			c.addf(key, "%q is not an OpenStack id", t)
			return Ref{}, false
		}
		return Ref{ID: t}, true
	case map[string]any:
		unknown(c, key, t, []string{"stack_output", "stack_resource"})
		out, _ := t["stack_output"].(string)
		res, _ := t["stack_resource"].(string)
		if (out == "") == (res == "") {
			c.addf(key, "give an id, {stack_output: <output name>} or {stack_resource: <resource name>}")
			return Ref{}, false
		}
		return Ref{Output: out, Resource: res}, true
	}
	c.addf(key, "must be an id or {stack_output: ...} / {stack_resource: ...}, not %s", jsonType(v))
	return Ref{}, false
}

func (c *checker) refs(key string, v any) []Ref {
	switch t := v.(type) {
	case []any:
		if len(t) == 0 {
			c.addf(key, "is empty")
		}
		var out []Ref
		for i, x := range t {
			if r, ok := c.ref(fmt.Sprintf("%s[%d]", key, i), x); ok {
				out = append(out, r)
			}
		}
		return out
	case string:
		var out []Ref
		for _, x := range strings.Split(t, ",") {
			if r, ok := c.ref(key, strings.TrimSpace(x)); ok {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if r, ok := c.ref(key, t); ok {
			return []Ref{r}
		}
		return nil
	}
	c.addf(key, "must be a list of ids, not %s", jsonType(v))
	return nil
}

func (c *checker) enum(key string, v any, allowed []string, def string) string {
	if v == nil {
		return def
	}
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		c.addf(key, "%v is not one of %s", v, strings.Join(allowed, ", "))
		return def
	}
	return s
}

// Parse reads the kuryr parameters at key (raw may be nil: all defaults).
// Problems name their key; none means p is usable.
func Parse(key string, raw any) (Params, []string) {
	c := &checker{}
	p := Params{PodSubnet: Ref{Output: OutputPodSubnet}, PodSecurityGroups: []Ref{{Output: OutputPodSGs}},
		ServiceSubnet: Ref{Output: OutputServiceSubnet}, PodVifDriver: "nested-vlan",
		LBaaS:         LBaaS{Provider: "amphora", MemberMode: "L3", Algorithm: "ROUND_ROBIN", EnforceSGRules: true},
		CredentialTTL: DefaultCredentialTTL, CredentialRoles: []string{"member"}}
	if raw == nil {
		return p, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.addf(key, "must be an object, not %s", jsonType(raw))
		return p, c.problems
	}
	unknown(c, key, m, keys)
	if v, ok := m["pod_subnet_id"]; ok {
		p.PodSubnet, _ = c.ref(key+".pod_subnet_id", v)
	}
	if v, ok := m["pod_security_group_ids"]; ok {
		p.PodSecurityGroups = c.refs(key+".pod_security_group_ids", v)
	}
	if v, ok := m["service_subnet_id"]; ok {
		p.ServiceSubnet, _ = c.ref(key+".service_subnet_id", v)
	}
	if v, ok := m["project_id"]; ok {
		if s, _ := v.(string); !idRE.MatchString(s) {
			c.addf(key+".project_id", "%v is not an OpenStack project id", v)
		} else {
			p.Project = s
		}
	}
	if v, ok := m["auth_url"]; ok {
		s, _ := v.(string)
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			c.addf(key+".auth_url", "%v is not a Keystone URL such as https://keystone.example:5000/v3", v)
		} else {
			p.AuthURL = s
		}
	}
	if v, ok := m["worker_nodes_subnet_ids"]; ok {
		p.WorkerNodesSubnets = c.refs(key+".worker_nodes_subnet_ids", v)
	}
	p.PodVifDriver = c.enum(key+".pod_vif_driver", m["pod_vif_driver"], vifDrivers, p.PodVifDriver)
	if v, ok := m["lbaas"]; ok && v != nil {
		lm, ok := v.(map[string]any)
		if !ok {
			c.addf(key+".lbaas", "must be an object, not %s", jsonType(v))
		} else {
			unknown(c, key+".lbaas", lm, lbaasKeys)
			p.LBaaS.Provider = c.enum(key+".lbaas.provider", lm["provider"], providers, p.LBaaS.Provider)
			p.LBaaS.MemberMode = c.enum(key+".lbaas.member_mode", lm["member_mode"], memberModes, p.LBaaS.MemberMode)
			p.LBaaS.Algorithm = c.enum(key+".lbaas.lb_algorithm", lm["lb_algorithm"], algorithms, p.LBaaS.Algorithm)
			if b, ok := lm["enforce_sg_rules"]; ok {
				switch t := b.(type) {
				case bool:
					p.LBaaS.EnforceSGRules = t
				case string:
					v, err := strconv.ParseBool(t)
					if err != nil {
						c.addf(key+".lbaas.enforce_sg_rules", "%q is not a boolean", t)
					}
					p.LBaaS.EnforceSGRules = v
				default:
					c.addf(key+".lbaas.enforce_sg_rules", "must be a boolean, not %s", jsonType(b))
				}
			}
			if v, ok := lm["flavor_id"]; ok {
				if s, _ := v.(string); !idRE.MatchString(s) {
					c.addf(key+".lbaas.flavor_id", "%v is not an Octavia flavor id", v)
				} else {
					p.LBaaS.FlavorID = s
				}
			}
		}
	}
	if v, ok := m["credential"]; ok && v != nil {
		cm, ok := v.(map[string]any)
		if !ok {
			c.addf(key+".credential", "must be an object, not %s", jsonType(v))
		} else {
			unknown(c, key+".credential", cm, credentialKeys)
			if t, ok := cm["ttl"]; ok {
				d, err := duration(t)
				switch {
				case err != nil:
					c.addf(key+".credential.ttl", "%v", err)
				case d < time.Hour || d > 366*24*time.Hour:
					c.addf(key+".credential.ttl", "%v is out of range 1h..8784h (a year)", d)
				default:
					p.CredentialTTL = d
				}
			}
			if r, ok := cm["roles"]; ok {
				l, _ := r.([]any)
				if len(l) == 0 {
					c.addf(key+".credential.roles", "must be a non-empty list of role names")
				}
				p.CredentialRoles = nil
				for _, x := range l {
					s, _ := x.(string)
					if !roleRE.MatchString(s) {
						c.addf(key+".credential.roles", "%v is not a role name", x)
						continue
					}
					if s == "admin" {
						c.addf(key+".credential.roles", "admin is refused: kuryr-controller needs member (and load-balancer_member where Octavia asks for it), and the credential lives on the cluster")
						continue
					}
					p.CredentialRoles = append(p.CredentialRoles, s)
				}
			}
		}
	}
	return p, c.problems
}

func duration(v any) (time.Duration, error) {
	switch t := v.(type) {
	case float64:
		return time.Duration(t) * time.Second, nil
	case string:
		if n, err := strconv.Atoi(t); err == nil {
			return time.Duration(n) * time.Second, nil
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (seconds, or such as 720h)", t)
		}
		return d, nil
	}
	return 0, fmt.Errorf("must be seconds or a duration such as 720h, not %s", jsonType(v))
}

// Stack is what the infra driver knows of the instance's stack: its outputs
// and its resources' physical ids by name.
type Stack struct {
	Outputs   map[string]any
	Resources map[string]string
}

// Resolved are the concrete ids.
type Resolved struct {
	PodSubnet          string
	PodSecurityGroups  []string
	ServiceSubnet      string
	Project            string
	WorkerNodesSubnets []string
}

func (s Stack) ids(r Ref) ([]string, error) {
	switch {
	case r.ID != "":
		return []string{r.ID}, nil
	case r.Resource != "":
		if id := s.Resources[r.Resource]; id != "" {
			return []string{id}, nil
		}
		return nil, fmt.Errorf("the stack has no resource %s", r.Resource)
	}
	v, ok := s.Outputs[r.Output]
	if !ok {
		return nil, fmt.Errorf("the stack has no output %s (its outputs: %s); give the id in the request or add the output to the base HOT", r.Output, keysOf(s.Outputs))
	}
	var out []string
	switch t := v.(type) {
	case string:
		out = splitIDs(t)
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stack output %s is %v, not an id or a list of ids", r.Output, v)
	}
	return out, nil
}

func splitIDs(s string) []string {
	var out []string
	for _, x := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' || r == '"' }) {
		out = append(out, x)
	}
	return out
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

// Resolve finds the ids; vimProject is the VIM's project (the default).
func (p Params) Resolve(s Stack, vimProject string) (Resolved, error) {
	var r Resolved
	var problems []string
	one := func(what string, ref Ref) string {
		ids, err := s.ids(ref)
		if err != nil {
			problems = append(problems, what+": "+err.Error())
			return ""
		}
		if len(ids) != 1 {
			problems = append(problems, fmt.Sprintf("%s: %s gives %d ids, want one", what, ref, len(ids)))
			return ""
		}
		return ids[0]
	}
	many := func(what string, refs []Ref) []string {
		var out []string
		for _, ref := range refs {
			ids, err := s.ids(ref)
			if err != nil {
				problems = append(problems, what+": "+err.Error())
				continue
			}
			out = append(out, ids...)
		}
		return out
	}
	r.PodSubnet = one("kuryr.pod_subnet_id", p.PodSubnet)
	r.ServiceSubnet = one("kuryr.service_subnet_id", p.ServiceSubnet)
	r.PodSecurityGroups = many("kuryr.pod_security_group_ids", p.PodSecurityGroups)
	r.WorkerNodesSubnets = many("kuryr.worker_nodes_subnet_ids", p.WorkerNodesSubnets)
	r.Project = p.Project
	if r.Project == "" {
		r.Project = vimProject
	}
	if r.Project == "" {
		problems = append(problems, "kuryr.project_id: not given and the VIM's project is unknown")
	}
	if r.PodSubnet != "" && r.PodSubnet == r.ServiceSubnet {
		problems = append(problems, "kuryr: the pod and service subnets are the same subnet "+r.PodSubnet)
	}
	if len(problems) > 0 {
		return r, fmt.Errorf("Kuryr parameters: %s", strings.Join(problems, "; "))
	}
	return r, nil
}

// Conf is what kuryr.conf needs besides the parameters.
type Conf struct {
	// APIRoot is the Kubernetes API (https://host:port).
	APIRoot string
	// AuthURL is the VIM's Keystone (Params.AuthURL overrides it); Region
	// its region ("" for none).
	AuthURL, Region string
	// The application credential kuryr-controller logs in with.
	CredentialID, CredentialSecret string
	// ResourceTags mark what Kuryr creates (the VNF instance).
	ResourceTags []string
}

// Render writes kuryr-controller's kuryr.conf. It holds the credential's
// secret: it goes to the cluster as a Secret, never to a log.
func Render(p Params, r Resolved, c Conf) string {
	var b strings.Builder
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		}
	}
	b.WriteString("# kuryr-controller configuration, written by mini-VNFM. Holds an application credential: keep it in the Secret.\n")
	b.WriteString("[DEFAULT]\nuse_stderr = true\n\n[kubernetes]\n")
	kv("api_root", c.APIRoot)
	kv("token_file", "/var/run/secrets/kubernetes.io/serviceaccount/token")
	kv("ssl_ca_crt_file", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
	kv("ssl_verify_server_crt", "true")
	kv("pod_vif_driver", p.PodVifDriver)
	kv("endpoints_driver_octavia_provider", p.LBaaS.Provider)
	b.WriteString("\n[neutron]\n")
	kv("auth_type", "v3applicationcredential")
	if p.AuthURL != "" {
		kv("auth_url", p.AuthURL)
	} else {
		kv("auth_url", c.AuthURL)
	}
	kv("application_credential_id", c.CredentialID)
	kv("application_credential_secret", c.CredentialSecret)
	kv("region_name", c.Region)
	b.WriteString("\n[neutron_defaults]\n")
	kv("project", r.Project)
	kv("pod_subnet", r.PodSubnet)
	kv("pod_security_groups", strings.Join(r.PodSecurityGroups, ","))
	kv("service_subnet", r.ServiceSubnet)
	kv("resource_tags", strings.Join(c.ResourceTags, ","))
	kv("ovs_bridge", "br-int")
	b.WriteString("\n[octavia_defaults]\n")
	kv("member_mode", p.LBaaS.MemberMode)
	kv("lb_algorithm", p.LBaaS.Algorithm)
	kv("enforce_sg_rules", strconv.FormatBool(p.LBaaS.EnforceSGRules))
	kv("octavia_flavor_id", p.LBaaS.FlavorID)
	if len(r.WorkerNodesSubnets) > 0 {
		b.WriteString("\n[pod_vif_nested]\n")
		kv("worker_nodes_subnets", strings.Join(r.WorkerNodesSubnets, ","))
		b.WriteString("\n[binding]\n")
		kv("link_iface", "eth0")
	}
	return b.String()
}
