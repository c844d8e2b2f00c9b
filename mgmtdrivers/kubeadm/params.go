package kubeadm

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube/kuryr"
)

// ParamKey is the additionalParams key holding the driver's parameters
// (Tacker's name).
const ParamKey = kube.ParamKey

// DocsURL is where the parameters are documented.
const DocsURL = "docs/drivers.md#kubeadm"

// root is the JSON path of the parameters in a request.
const root = kube.Root

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

// NodeParams are master_node, worker_node and lb_node: which VNFCs hold the
// role and how to log in to them (kube.NodeParams), and for master_node the
// cluster's networks and API address.
type NodeParams struct {
	kube.NodeParams
	// PodCIDR (pod_cidr, default DefaultPodCIDR) and ClusterCIDR
	// (cluster_cidr, the services', default DefaultClusterCIDR): master_node
	// only.
	kube.Networks
	// ClusterCPName (cluster_cp_name, master_node only, required) is the
	// connection point holding the API server address: the master's own port
	// for one master, a port of its own (a VipCp such as vip_CP, the VIP
	// keepalived moves) for an HA control plane.
	ClusterCPName string `json:"cluster_cp_name,omitempty"`
}

// Params is a validated k8s_cluster_installation_param, with what the
// operation's request adds (credential and drain overrides, force).
type Params struct {
	// ScriptPath (script_path) is the install script's path in the VNF
	// package; empty: the driver's built-in copy of
	// scripts/install_k8s_cluster.sh. A script must print the mini-VNFM
	// result lines (VNFM_RESULT), which Tacker's sample does not.
	ScriptPath string `json:"script_path,omitempty"`
	// VimName (vim_name) names the Kubernetes VIM registered for the
	// cluster (default kubernetes_vim_<vnfInstanceId>).
	VimName string     `json:"vim_name"`
	Master  NodeParams `json:"master_node"`
	Worker  NodeParams `json:"worker_node"`
	// Proxy (proxy) are the nodes' proxy settings.
	Proxy kube.Proxy `json:"proxy"`

	// WorkerParallelism (worker_parallelism, 1..100, default 10) is how
	// many workers join or drain at a time.
	WorkerParallelism int `json:"worker_parallelism"`
	// DrainTimeout (drain_timeout: seconds, or a duration such as "5m";
	// default 300 s) bounds each node's drain.
	DrainTimeout time.Duration `json:"drain_timeout"`
	// DrainPolicy (drain_policy) is fail (default) or force.
	DrainPolicy string `json:"drain_policy"`
	// KubernetesVersion (kubernetes_version, "v1.31.4"; default: the
	// script's pin).
	KubernetesVersion string `json:"kubernetes_version,omitempty"`
	// JoinTokenTTL (join_token_ttl, default 15 min) is each bootstrap
	// token's lifetime.
	JoinTokenTTL time.Duration `json:"join_token_ttl"`
	// HA (ha) configures the control plane behind a VIP (used when
	// master_node.cluster_cp_name names a port of its own, such as vip_CP).
	HA HAParams `json:"ha"`
	// LB selects where HAProxy and keepalived run (ha.lb_topology,
	// ha.lb_vdu_id, lb_node).
	LB LBParams `json:"lb"`
	// CNI (cni) is the pod network: calico (default) or kuryr
	// (Kuryr-Kubernetes: pods and Services on Neutron ports and Octavia
	// load balancers; needs a VIM whose infra driver issues credentials).
	CNI string `json:"cni"`
	// Kuryr (kuryr, with cni kuryr) are the Kuryr-Kubernetes parameters
	// (mgmtdrivers/kube/kuryr).
	Kuryr *kuryr.Params `json:"kuryr,omitempty"`

	// Force is the heal request's additionalParams.force: heal more masters
	// at once than etcd quorum allows.
	Force bool `json:"force,omitempty"`
	// HostKeys (ssh_host_key_policy, ssh_host_key_fingerprints) is how the
	// nodes' SSH host keys are trusted at first contact (kube.HostKeys).
	HostKeys kube.HostKeys `json:"host_keys"`
}

var (
	topKeys      = append([]string{"script_path", "vim_name", "master_node", "worker_node", "proxy", "worker_parallelism", "drain_timeout", "drain_policy", "kubernetes_version", "join_token_ttl", "ha", "lb_node", "cni", "kuryr"}, kube.HostKeyParamKeys...)
	masterOnly   = []string{"pod_cidr", "cluster_cidr", "cluster_cp_name"}
	tackerExtras = map[string]string{
		"helm_installation_script_path":    "is not supported by this VNFM (Tacker's Helm extra is not implemented); remove it",
		"private_registry_connection_info": "is not supported by this VNFM (Tacker's private registry extra is not implemented); remove it",
		"storage_server":                   "is not supported by this VNFM (Tacker's NFS storage extra is not implemented); remove it",
		"pv_registration_params":           "is not supported by this VNFM (Tacker's persistent volume extra is not implemented); remove it",
	}
	fipRefused = "is not supported: the API server certificate would not name the floating IP (Tacker then drops TLS verification); reach the cluster on the address of cluster_cp_name"

	versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)
)

// ParseParams reads and validates additionalParams.k8s_cluster_installation_param
// (what can be told without the VNF package and VNFD: see the driver's
// ParseParams for the rest). Every problem is reported at once, each with
// its JSON path.
func ParseParams(additional map[string]any) (*Params, error) {
	r := &kube.Reader{Docs: DocsURL}
	top := r.Object(root, additional[ParamKey], false)
	if top == nil {
		if additional[ParamKey] == nil {
			r.Addf(root, "is required: give master_node and worker_node (and script_path)")
		}
		return nil, r.Err()
	}
	p := &Params{}
	top.Keys(topKeys, tackerExtras)
	p.ScriptPath = top.PackagePath("script_path", false)
	p.VimName = top.String("vim_name", false)
	if len(p.VimName) > 255 {
		top.Addf("vim_name", "is longer than 255 characters")
	}
	p.Master = readNode(top.Child("master_node", true), true)
	p.Worker = readNode(top.Child("worker_node", true), false)
	p.Proxy = kube.ReadProxy(top.Child("proxy", false))
	p.HostKeys = kube.ReadHostKeys(top)
	p.WorkerParallelism = DefaultWorkerParallelism
	if n, ok := top.Int("worker_parallelism", 1, MaxWorkerParallelism); ok {
		p.WorkerParallelism = n
	}
	p.DrainTimeout = top.Duration("drain_timeout", DefaultDrainTimeout, time.Second, 24*time.Hour)
	p.JoinTokenTTL = top.Duration("join_token_ttl", DefaultJoinTokenTTL, time.Minute, 24*time.Hour)
	p.DrainPolicy = drainPolicy(top, "drain_policy", DrainFail)
	if v := top.String("kubernetes_version", false); v != "" {
		if !versionRE.MatchString(v) {
			top.Addf("kubernetes_version", "%q is not a Kubernetes release such as v1.31.4", v)
		} else {
			p.KubernetesVersion = "v" + strings.TrimPrefix(v, "v")
		}
	}
	ha := top.Child("ha", false)
	p.HA = haParams(ha)
	p.LB = lbParams(top, ha, p)
	checkEtcdLBPort(ha, top, p)
	readCNI(r, top, p)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// Pod networks (cni).
const (
	CNICalico = "calico"
	CNIKuryr  = "kuryr"
)

// readCNI reads cni and kuryr.
func readCNI(r *kube.Reader, top *kube.Obj, p *Params) {
	p.CNI = CNICalico
	switch c := top.String("cni", false); c {
	case "", CNICalico:
	case CNIKuryr:
		p.CNI = CNIKuryr
	default:
		top.Addf("cni", "%q is not a pod network this driver installs: calico (the default) or kuryr (Kuryr-Kubernetes)", c)
	}
	if p.CNI != CNIKuryr {
		if top.Has("kuryr") {
			top.Addf("kuryr", "is used only with cni: kuryr")
		}
		return
	}
	kp, problems := kuryr.Parse(top.Path+".kuryr", top.Raw("kuryr"))
	for _, pr := range problems {
		path, msg, _ := strings.Cut(pr, ": ")
		r.Addf(path, "%s", msg)
	}
	p.Kuryr = &kp
}

func readNode(o *kube.Obj, master bool) NodeParams {
	var np NodeParams
	if o == nil {
		return np
	}
	if master {
		o.Keys(append(slices.Clone(kube.NodeKeys), masterOnly...), map[string]string{"cluster_fip_name": fipRefused})
	} else {
		refused := map[string]string{"cluster_fip_name": fipRefused}
		for _, k := range masterOnly {
			refused[k] = "belongs in master_node"
		}
		o.Keys(kube.NodeKeys, refused)
	}
	np.NodeParams = kube.ReadNode(o)
	if master {
		np.Networks = kube.ReadNetworks(o, DefaultPodCIDR, DefaultClusterCIDR)
		np.ClusterCPName = o.String("cluster_cp_name", false)
		if np.ClusterCPName == "" {
			o.Addf("cluster_cp_name", "is required: the connection point holding the API server address (the master's port for one master)")
		}
	}
	return np
}

// Overrides applies what a scale, heal or terminate request may change:
// Tacker's credential overrides (master_node_username, master_node_password,
// worker_node_username, worker_node_password), our key equivalents
// (master_node_ssh_private_key, worker_node_ssh_private_key and their
// *_passphrase), the drain and parallelism options (drain_timeout,
// drain_policy, worker_parallelism) and a heal's force.
func (p *Params) Overrides(additional map[string]any) error {
	r := &kube.Reader{Docs: DocsURL}
	o := r.Object("additionalParams", additional, false)
	if o == nil {
		return r.Err()
	}
	creds := func(prefix string, np *NodeParams) {
		set := func(name string, dst *string) {
			if s := o.String(prefix+name, false); s != "" {
				*dst = s
			}
		}
		set("username", &np.Username)
		set("password", &np.Password)
		set("ssh_private_key", &np.PrivateKey)
		set("ssh_private_key_passphrase", &np.Passphrase)
		kube.CheckLogin(o, np.Login, prefix+"username", prefix+"password", prefix+"ssh_private_key", prefix+"ssh_private_key_passphrase")
	}
	creds("master_node_", &p.Master)
	creds("worker_node_", &p.Worker)
	p.DrainTimeout = o.Duration("drain_timeout", p.DrainTimeout, time.Second, 24*time.Hour)
	p.DrainPolicy = drainPolicy(o, "drain_policy", p.DrainPolicy)
	if n, ok := o.Int("worker_parallelism", 1, MaxWorkerParallelism); ok {
		p.WorkerParallelism = n
	}
	p.Force = o.Bool("force")
	if o.Has(kube.HostKeyPolicyKey) || o.Has(kube.HostKeyFingerprintsKey) {
		p.HostKeys = kube.ReadHostKeys(o)
	}
	return r.Err()
}

func drainPolicy(o *kube.Obj, key, def string) string {
	s := o.String(key, false)
	switch s {
	case "":
		return def
	case DrainFail, DrainForce:
		return s
	}
	o.Addf(key, "%q is not a drain policy; use %q (stop and report the blocking pods) or %q (delete them)", s, DrainFail, DrainForce)
	return def
}
