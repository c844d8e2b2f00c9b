package samples

import (
	"fmt"
	"strings"
)

// Cloud is what a complete instantiate request of a sample needs to know of
// the cloud it is instantiated on.
type Cloud struct {
	// NetworkID is the Neutron network every VNFC's external CP goes on
	// (the embedded cloud's net0).
	NetworkID string
	// NodePassword is the password cloud-init gives the nodes' login
	// "ubuntu" (Heat parameter node_password) and the drivers log in with.
	NodePassword string
	// VimName names the Kubernetes VIM the driver registers (must be unique;
	// empty: the driver's default kubernetes_vim_<vnfInstanceId>).
	VimName string
	// Ansible is the kubespray sample's Ansible server.
	Ansible *AnsibleServer
	// ClusterAuthURL is Keystone as software inside the cluster reaches it
	// (the kubeadm-kuryr sample's kuryr.auth_url, for Kuryr's controller;
	// the embedded cloud's internal identity endpoint); empty: the VIM's.
	ClusterAuthURL string
}

// AnsibleServer is the server the kubespray driver runs playbooks on.
type AnsibleServer struct {
	Address, User, Password    string
	KubesprayRoot, Inventories string
}

// Plan is how a demo drives a sample through its lifecycle.
type Plan struct {
	Flavour string
	// Description says what the sample builds, for listings.
	Description string
	// ScaleAspect is the aspect of the worker scaling.
	ScaleAspect string
	// HealVDUs are the VDUs whose first VNFC is healed, in order.
	HealVDUs []string
	// NeedsAnsible: the request needs Cloud.Ansible.
	NeedsAnsible bool
	// NoMasterHeal says why a master is not healed (HealVDUs lacks masterNode).
	NoMasterHeal string
	// Kuryr: the cluster's pod network is Kuryr-Kubernetes (the demo shows
	// it: the stack's router, networks and load balancer, kuryr-controller's
	// credential, the pods' Neutron ports).
	Kuryr bool
	// Generated: the flavour has no Heat template; the VNFM generates it
	// from the VNFD (the demo shows the template's digest).
	Generated bool
}

// Plans describes every sample.
var Plans = map[string]Plan{
	"kubeadm-single": {Flavour: "simple", Description: "kubeadm: 1 master, 2 workers", ScaleAspect: "worker_instance",
		HealVDUs: []string{"workerNode"}, NoMasterHeal: "a single master cannot be replaced in place (make demo PACKAGE=kubeadm-ha can)"},
	"kubeadm-ha": {Flavour: "ha", Description: "kubeadm HA: 3 masters behind a keepalived VIP with HAProxy on the masters, 2 workers",
		ScaleAspect: "worker_instance", HealVDUs: []string{"workerNode", "masterNode"}},
	"kubeadm-ha-lb": {Flavour: "ha", Description: "kubeadm HA with dedicated load balancers: 2 LB nodes (HAProxy + keepalived VIP), 3 masters, 2 workers",
		ScaleAspect: "worker_instance", HealVDUs: []string{"workerNode", "masterNode"}},
	"kubespray": {Flavour: "simple", Description: "kubespray on an Ansible server: 3 masters, 2 workers, an external HAProxy load balancer",
		ScaleAspect: "worker_instance", HealVDUs: []string{"workerNode"}, NeedsAnsible: true,
		NoMasterHeal: "kubespray has no playbook that replaces a control-plane node (the driver refuses it)"},
	"kubeadm-kuryr": {Flavour: "simple", Description: "kubeadm with Kuryr-Kubernetes: pods and Services on Neutron ports and Octavia load balancers (router, pod and service networks, API load balancer in the stack), 1 master, 2 workers",
		ScaleAspect: "worker_instance", HealVDUs: []string{"workerNode"}, Kuryr: true,
		NoMasterHeal: "a single master cannot be replaced in place (make demo PACKAGE=kubeadm-ha can)"},
	"kubeadm-tosca": {Flavour: "cluster_install", Description: "kubeadm from the seed's TOSCA VNFD, no Heat template in the package (the VNFM generates it): 1 master, 1 worker, an internal network",
		ScaleAspect: "worker_instance", HealVDUs: []string{"workerNode"}, Generated: true,
		NoMasterHeal: "a single master cannot be replaced in place (make demo PACKAGE=kubeadm-ha can)"},
}

// Images and flavors the requests of samples without them in the VNFD
// name (additionalParams.nfv.VDU).
const (
	DefaultImage  = "ubuntu-22.04-server-cloudimg-amd64"
	DefaultFlavor = "m1.medium"
)

// InstantiateRequest returns a complete InstantiateVnfRequest for a sample
// on a cloud: flavour, external virtual links for every external CP, the
// Heat parameter node_password and the management driver's parameters
// (docs/drivers.md documents each).
func InstantiateRequest(name string, c Cloud) (map[string]any, error) {
	plan, ok := Plans[name]
	if !ok {
		return nil, fmt.Errorf("no sample package %q; the samples are %s", name, strings.Join(Names, ", "))
	}
	if c.NetworkID == "" || c.NodePassword == "" {
		return nil, fmt.Errorf("sample %s: the request needs the network id and a node password", name)
	}
	if plan.NeedsAnsible && c.Ansible == nil {
		return nil, fmt.Errorf("sample %s: the request needs an Ansible server", name)
	}
	node := func(vdu, aspect string) map[string]any {
		n := map[string]any{"ssh_cp_name": vdu + "_CP1", "nic_cp_name": vdu + "_CP1", "username": "ubuntu", "password": c.NodePassword}
		if aspect != "" {
			n["aspect_id"] = aspect
		} else {
			n["vdu_id"] = vdu
		}
		return n
	}
	cps := []string{"masterNode_CP1", "workerNode_CP1"}
	var params map[string]any
	paramKey := "k8s_cluster_installation_param"
	switch name {
	case "kubeadm-single", "kubeadm-ha", "kubeadm-ha-lb":
		master := node("masterNode", "")
		master["pod_cidr"] = "10.244.0.0/16"
		master["cluster_cidr"] = "10.96.0.0/12"
		master["cluster_cp_name"] = "masterNode_CP1"
		params = map[string]any{"script_path": "Scripts/install_k8s_cluster.sh", "master_node": master,
			"worker_node": node("workerNode", "worker_instance")}
		if plan.Flavour == "ha" {
			master["cluster_cp_name"] = "vip_CP"
			cps = append(cps, "vip_CP")
		}
		if name == "kubeadm-ha-lb" {
			cps = append(cps, "lbNode_CP1")
			params["ha"] = map[string]any{"lb_topology": "dedicated", "lb_vdu_id": "lbNode"}
			lb := node("lbNode", "")
			delete(lb, "vdu_id")
			params["lb_node"] = lb
		}
	case "kubespray":
		master := node("masterNode", "")
		delete(master, "vdu_id") // every VNFC with the CP: the masters' group
		master["pod_cidr"] = "10.244.0.0/16"
		master["cluster_cidr"] = "10.96.0.0/12"
		cps = append(cps, "externalLB_CP1")
		a := c.Ansible
		params = map[string]any{"master_node": master, "worker_node": node("workerNode", "worker_instance"),
			"ansible": map[string]any{"ip_address": a.Address, "username": a.User, "password": a.Password,
				"kubespray_root_path": a.KubesprayRoot, "transferring_inventory_path": a.Inventories, "playbook_timeout": 900},
			"external_lb_param": map[string]any{"ssh_cp_name": "externalLB_CP1", "ssh_username": "ubuntu", "ssh_password": c.NodePassword,
				"script_path": "Scripts/install_external_lb.sh"}}
	case "kubeadm-kuryr":
		// Kuryr's networks are the base HOT's: the pod and service CIDRs
		// are its pod_cidr and service_cidr defaults.
		master := node("masterNode", "")
		master["pod_cidr"] = "10.244.0.0/16"
		master["cluster_cidr"] = "10.96.0.0/16"
		master["cluster_cp_name"] = "masterNode_CP1"
		kuryr := map[string]any{}
		if c.ClusterAuthURL != "" {
			kuryr["auth_url"] = c.ClusterAuthURL
		}
		params = map[string]any{"master_node": master, "worker_node": node("workerNode", "worker_instance"), "cni": "kuryr", "kuryr": kuryr}
	case "kubeadm-tosca":
		// The seed's VNFD has no external links in its substitution
		// mappings, no images and no flavors: the request gives them. The
		// nodes talk on the external network (the VNFM reaches them there).
		cps = []string{"masterNodeExternalCP", "workerNodeExternalCP"}
		tn := func(vdu, aspect string) map[string]any {
			n := node(vdu, aspect)
			n["ssh_cp_name"], n["nic_cp_name"] = vdu+"ExternalCP", vdu+"ExternalCP"
			return n
		}
		master := tn("masterNode", "")
		master["pod_cidr"] = "10.244.0.0/16"
		master["cluster_cidr"] = "10.96.0.0/12"
		master["cluster_cp_name"] = "masterNodeExternalCP"
		params = map[string]any{"master_node": master, "worker_node": tn("workerNode", "")}
	default:
		return nil, fmt.Errorf("sample %s has no request template", name)
	}
	if c.VimName != "" {
		params["vim_name"] = c.VimName
	}
	extCps := make([]any, len(cps))
	for i, cp := range cps {
		extCps[i] = map[string]any{"cpdId": cp}
	}
	additional := map[string]any{"node_username": "ubuntu", "node_password": c.NodePassword, paramKey: params}
	switch name {
	case "kubeadm-kuryr":
		// Tacker's user-data class, as the seed's package names it; the VNFM
		// runs its built-in equivalent, never the package's Python.
		additional["lcm-operation-user-data"] = "./UserData/base_user_data.py"
		additional["lcm-operation-user-data-class"] = "BaseUserData"
	case "kubeadm-tosca":
		vdu := map[string]any{"image": DefaultImage, "flavor": DefaultFlavor}
		additional["nfv"] = map[string]any{"VDU": map[string]any{"masterNode": vdu, "workerNode": vdu}}
	}
	return map[string]any{
		"flavourId":        plan.Flavour,
		"extVirtualLinks":  []any{map[string]any{"id": "ext-net0", "resourceId": c.NetworkID, "extCps": extCps}},
		"additionalParams": additional,
	}, nil
}

// CNF is the sample CNF package (VNF-B) the demo deploys on the cluster a
// sample built.
const CNF = "cnf-helloworld"

// CNFLoadBalancerFile is the sample CNF's Service of type LoadBalancer.
const CNFLoadBalancerFile = "Files/kubernetes/web-lb.yaml"

// CNFRequest returns the InstantiateVnfRequest of the sample CNF on the
// Kubernetes VIM vimID (the one a cluster sample registered), Tacker v1's
// shape. loadBalancer adds the Service of type LoadBalancer
// (Files/kubernetes/web-lb.yaml), for a cluster that gives Services load
// balancers (Kuryr-Kubernetes).
func CNFRequest(vimID string, loadBalancer bool) map[string]any {
	files := []any{"Files/kubernetes/web.yaml"}
	if loadBalancer {
		files = append(files, CNFLoadBalancerFile)
	}
	return map[string]any{
		"flavourId":         "simple",
		"vimConnectionInfo": []any{map[string]any{"id": "cluster", "vimId": vimID, "vimType": "kubernetes"}},
		"additionalParams":  map[string]any{"lcm-kubernetes-def-files": files, "namespace": "default"},
	}
}
