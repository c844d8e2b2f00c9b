package main

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

// The CNF part of the demo (issue 16): the sample CNF (VNF-B) deployed on
// the Kubernetes VIM the cluster (VNF-A) registered, scaled, one pod healed;
// the cluster's termination refused while the CNF runs on it (409); then
// VNF-B terminated and deleted before VNF-A. On a Kuryr cluster the CNF
// also has a Service of type LoadBalancer and the demo shows the Octavia
// load balancer kuryr-controller made for it (issue 17). Everything goes
// through the VNFM's API and, for the VIM's view, the default VIM's
// OpenStack APIs: the demo cannot reach the cluster's nodes.

const (
	cnfNamespace = "default"
	cnfLBService = "web-lb" // the Service of Files/kubernetes/web-lb.yaml
	cnfAspect    = "web_aspect"
	// cnfTargetPort is the Service's targetPort: the members' port.
	cnfTargetPort = 8080
	// kuryrWait bounds the wait for kuryr-controller (a 1 s poll, then
	// Octavia's provisioning of the load balancer and its children).
	kuryrWait = 90 * time.Second
)

// pod is a VNFC of the CNF as the VNFM reports it (vnfcResourceInfo).
type pod struct {
	VNFC, VDU, Name, Node, Phase string
	Ready                        bool
	Port                         string // on a Kuryr cluster: the address of its Neutron port
}

func (d *demo) runCNF(clusterID string, plan samples.Plan) error {
	vimID, vimName, err := d.clusterVim(clusterID)
	if err != nil {
		return err
	}
	pkg, err := d.samplePackage(samples.CNF)
	if err != nil {
		return err
	}
	vnfdID, _ := pkg["vnfdId"].(string)
	lb := plan.Kuryr
	if lb && !hasArtifact(pkg, samples.CNFLoadBalancerFile) {
		// make run replaces a sample's older package only when no VNF
		// instance uses it.
		d.printf("   note: the onboarded %s has no %s (an older make run onboarded it, and VNF instances still use it): the CNF gets no Service of type LoadBalancer;"+
			" terminate and delete those instances, then restart make run to onboard the current one\n", samples.CNF, samples.CNFLoadBalancerFile)
		lb = false
	}
	d.step("deploy the CNF (VNF-B) on the cluster's Kubernetes VIM")
	var inst map[string]any
	if _, err := d.call("POST", "/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": vnfdID,
		"vnfInstanceName": "demo-cnf-" + time.Now().Format("150405")}, &inst); err != nil {
		return err
	}
	cnf, _ := inst["id"].(string)
	d.printf("   created VNF instance %s from package %s; instantiating it on VIM %s (%s)\n", cnf, samples.CNF, vimName, vimID)
	if err := d.operate("CNF instantiate", cnf, "instantiate", samples.CNFRequest(vimID, lb)); err != nil {
		return err
	}
	pods, err := d.showPods(cnf, clusterID, plan.Kuryr)
	if err != nil {
		return err
	}
	var lbID string
	if lb {
		if lbID, err = d.showServiceLB(clusterID, pods); err != nil {
			return err
		}
	}

	d.step("scale the CNF out by 1 pod")
	if err := d.operate("CNF scale out 1", cnf, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": cnfAspect, "numberOfSteps": 1}); err != nil {
		return err
	}
	if pods, err = d.showPods(cnf, clusterID, plan.Kuryr); err != nil {
		return err
	}
	if len(pods) != 2 {
		return fmt.Errorf("the CNF has %d pods after scaling out from 1 by 1", len(pods))
	}
	if lb {
		if _, err := d.showServiceLB(clusterID, pods); err != nil {
			return err
		}
	}

	d.step("heal a pod of the CNF")
	victim := pods[0]
	d.printf("   healing VNFC %s: pod %s on node %s is deleted and replaced\n", victim.VNFC, victim.Name, victim.Node)
	if err := d.operate("CNF heal a pod", cnf, "heal", map[string]any{"vnfcInstanceId": []any{victim.VNFC}, "cause": "demo"}); err != nil {
		return err
	}
	if pods, err = d.showPods(cnf, clusterID, plan.Kuryr); err != nil {
		return err
	}
	i := slices.IndexFunc(pods, func(p pod) bool { return p.VNFC == victim.VNFC })
	if i < 0 || pods[i].Name == victim.Name || len(pods) != 2 {
		return fmt.Errorf("after healing VNFC %s (pod %s) the CNF's pods are %+v: want the VNFC on a new pod", victim.VNFC, victim.Name, pods)
	}
	d.printf("   VNFC %s: pod %s → %s\n", victim.VNFC, victim.Name, pods[i].Name)
	if lb {
		if _, err := d.showServiceLB(clusterID, pods); err != nil {
			return err
		}
	}

	d.step("terminate the cluster (VNF-A) while the CNF runs on it: refused")
	code, _, b, err := d.request("POST", "/vnflcm/v1/vnf_instances/"+clusterID+"/terminate", map[string]any{"terminationType": "FORCEFUL"})
	if err != nil {
		return err
	}
	if code != 409 {
		return fmt.Errorf("terminating the cluster while CNF %s uses its VIM answered %d, want 409: %s", cnf, code, b)
	}
	d.printf("   409 Conflict: %s\n", problemDetail(b))
	var cl map[string]any
	if _, err := d.call("GET", "/vnflcm/v1/vnf_instances/"+clusterID, nil, &cl); err != nil {
		return err
	}
	if cl["instantiationState"] != "INSTANTIATED" {
		return fmt.Errorf("the refused termination left the cluster %v", cl["instantiationState"])
	}
	d.printf("   the cluster is still %s, its VIM %s still registered\n", cl["instantiationState"], vimName)

	d.step("terminate the CNF (VNF-B), then delete it")
	if err := d.operate("CNF terminate", cnf, "terminate", map[string]any{"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 10}); err != nil {
		return err
	}
	if lb {
		if err := d.showServiceLBGone(clusterID, lbID); err != nil {
			return err
		}
	}
	if _, err := d.call("DELETE", "/vnflcm/v1/vnf_instances/"+cnf, nil, nil); err != nil {
		return err
	}
	d.printf("   deleted VNF instance %s: nothing uses VIM %s any more\n", cnf, vimName)
	return nil
}

// clusterVim is the Kubernetes VIM the cluster registered (its id and name).
func (d *demo) clusterVim(id string) (string, string, error) {
	var inst map[string]any
	if _, err := d.call("GET", "/vnflcm/v1/vnf_instances/"+id, nil, &inst); err != nil {
		return "", "", err
	}
	vims, _ := inst["vimConnectionInfo"].([]any)
	for _, x := range vims {
		v, _ := x.(map[string]any)
		if t, _ := v["vimType"].(string); strings.Contains(strings.ToUpper(t), "KUBERNETES") {
			vimID, _ := v["vimId"].(string)
			var vim struct {
				Vim map[string]any `json:"vim"`
			}
			if _, err := d.call("GET", "/v1.0/vims/"+vimID, nil, &vim); err != nil {
				return "", "", err
			}
			name, _ := vim.Vim["name"].(string)
			return vimID, name, nil
		}
	}
	return "", "", errors.New("the instance has no Kubernetes VIM: the management driver did not register the cluster")
}

// sampleVnfd is the vnfdId of an onboarded sample package.
func (d *demo) sampleVnfd(sample string) (string, error) {
	p, err := d.samplePackage(sample)
	if err != nil {
		return "", err
	}
	id, _ := p["vnfdId"].(string)
	return id, nil
}

// samplePackage is the VnfPkgInfo of an onboarded sample package.
func (d *demo) samplePackage(sample string) (map[string]any, error) {
	var pkgs []map[string]any
	if _, err := d.call("GET", "/vnfpkgm/v1/vnf_packages?all_fields", nil, &pkgs); err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		udd, _ := p["userDefinedData"].(map[string]any)
		if udd["sample"] == sample && p["onboardingState"] == "ONBOARDED" && p["operationalState"] == "ENABLED" {
			return p, nil
		}
	}
	return nil, fmt.Errorf("sample package %s is not onboarded and enabled; `make run` onboards the samples when it brings its own cloud", sample)
}

// hasArtifact reports whether a package has a file.
func hasArtifact(pkg map[string]any, path string) bool {
	arts, _ := pkg["additionalArtifacts"].([]any)
	return slices.ContainsFunc(arts, func(a any) bool { m, _ := a.(map[string]any); return m["artifactPath"] == path })
}

// cnfPods lists the CNF's pods from its vnfcResourceInfo.
func (d *demo) cnfPods(id string) ([]pod, error) {
	var inst struct {
		Info struct {
			Vnfcs []struct {
				ID       string         `json:"id"`
				VduID    string         `json:"vduId"`
				Resource map[string]any `json:"computeResource"`
				Metadata map[string]any `json:"metadata"`
			} `json:"vnfcResourceInfo"`
		} `json:"instantiatedVnfInfo"`
	}
	if _, err := d.call("GET", "/vnflcm/v1/vnf_instances/"+id, nil, &inst); err != nil {
		return nil, err
	}
	var out []pod
	for _, v := range inst.Info.Vnfcs {
		p := pod{VNFC: v.ID, VDU: v.VduID}
		p.Name, _ = v.Resource["resourceId"].(string)
		p.Node, _ = v.Metadata["nodeName"].(string)
		p.Phase, _ = v.Metadata["phase"].(string)
		p.Ready, _ = v.Metadata["ready"].(bool)
		out = append(out, p)
	}
	return out, nil
}

// showPods prints the CNF's pods as the VNFM reports them; on a Kuryr
// cluster with the Neutron port kuryr-controller gave each (the VIM's view).
func (d *demo) showPods(id, clusterID string, kuryr bool) ([]pod, error) {
	pods, err := d.cnfPods(id)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, errors.New("the CNF's vnfcResourceInfo lists no pod")
	}
	if kuryr {
		ports, err := d.waitPodPorts(clusterID, pods)
		if err != nil {
			return nil, err
		}
		for i := range pods {
			pods[i].Port = ports[pods[i].Name]
		}
	}
	d.printf("   the CNF's pods (vnfcResourceInfo):\n")
	d.printf("     %-8s %-5s %-28s %-24s %s\n", "VNFC", "VDU", "pod", "node", "state")
	for _, p := range pods {
		state := p.Phase
		if p.Ready {
			state += ", ready"
		}
		if p.Port != "" {
			state += ", Neutron port " + p.Port
		}
		d.printf("     %-8s %-5s %-28s %-24s %s\n", short(p.VNFC), p.VDU, p.Name, p.Node, state)
	}
	return pods, nil
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// waitPodPorts waits (bounded) until kuryr-controller has given every pod
// a Neutron port (named <namespace>/<pod>, tagged with the cluster's
// instance) and returns their addresses by pod name.
func (d *demo) waitPodPorts(clusterID string, pods []pod) (map[string]string, error) {
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(kuryrWait)
	for {
		ports, err := vc.taggedPorts(clusterID)
		if err != nil {
			return nil, err
		}
		got := map[string]string{}
		for _, p := range ports {
			if ns, name, ok := strings.Cut(p.Name, "/"); ok && ns == cnfNamespace && len(p.FixedIPs) > 0 {
				got[name] = p.FixedIPs[0].IP
			}
		}
		missing := slices.DeleteFunc(slices.Clone(pods), func(p pod) bool { return got[p.Name] != "" })
		if len(missing) == 0 {
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kuryr-controller gave pod %s no Neutron port within %s", missing[0].Name, kuryrWait)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// octaviaLB is a load balancer as Octavia lists it.
type octaviaLB struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	VIP         string   `json:"vip_address"`
	VIPSubnet   string   `json:"vip_subnet_id"`
	Status      string   `json:"provisioning_status"`
	Operating   string   `json:"operating_status"`
	Tags        []string `json:"tags"`
	Description string   `json:"description"`
}

type lbMember struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Port    int    `json:"protocol_port"`
}

type lbListener struct {
	ID       string `json:"id"`
	Protocol string `json:"protocol"`
	Port     int    `json:"protocol_port"`
	Pool     string `json:"default_pool_id"`
}

// serviceLB finds the load balancer kuryr-controller made for the CNF's
// Service (named <namespace>/<service>, tagged with the cluster's instance).
func (vc *vimClient) serviceLB(clusterID string) (*octaviaLB, error) {
	var lbs struct {
		LBs []octaviaLB `json:"loadbalancers"`
	}
	if err := vc.get(vc.endpoint["load-balancer"]+"/v2/lbaas/loadbalancers?tags="+url.QueryEscape(driverapi.InstanceTag(clusterID)), &lbs); err != nil {
		return nil, err
	}
	for _, lb := range lbs.LBs {
		if lb.Name == cnfNamespace+"/"+cnfLBService {
			return &lb, nil
		}
	}
	return nil, nil
}

// showServiceLB waits (bounded) until the Octavia load balancer of the
// CNF's Service of type LoadBalancer is ACTIVE with exactly the CNF's pods
// as members, at their Neutron ports' addresses and the Service's
// targetPort, and shows it: VIP, listener, pool, members.
func (d *demo) showServiceLB(clusterID string, pods []pod) (string, error) {
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return "", err
	}
	want := make([]string, len(pods))
	for i, p := range pods {
		want[i] = fmt.Sprintf("%s/%s@%s:%d", cnfNamespace, p.Name, p.Port, cnfTargetPort)
	}
	slices.Sort(want)
	lbAPI := vc.endpoint["load-balancer"] + "/v2/lbaas"
	deadline := time.Now().Add(kuryrWait)
	last := "no load balancer yet"
	for {
		lb, err := vc.serviceLB(clusterID)
		if err != nil {
			return "", err
		}
		var ls struct {
			Listeners []lbListener `json:"listeners"`
		}
		var members struct {
			Members []lbMember `json:"members"`
		}
		if lb != nil {
			last = "load balancer " + lb.ID + " " + lb.Status
			if err := vc.get(lbAPI+"/listeners?loadbalancer_id="+lb.ID, &ls); err != nil {
				return "", err
			}
			if len(ls.Listeners) == 1 && ls.Listeners[0].Pool != "" {
				if err := vc.get(lbAPI+"/pools/"+ls.Listeners[0].Pool+"/members", &members); err != nil {
					return "", err
				}
			}
			var names []string
			for _, m := range members.Members {
				names = append(names, fmt.Sprintf("%s@%s:%d", m.Name, m.Address, m.Port))
			}
			slices.Sort(names)
			last += fmt.Sprintf(", %d listeners, members %v", len(ls.Listeners), names)
			if lb.Status == "ACTIVE" && len(ls.Listeners) == 1 && slices.Equal(names, want) {
				l := ls.Listeners[0]
				d.printf("   Service %s/%s (type LoadBalancer): kuryr-controller made Octavia load balancer %s\n", cnfNamespace, cnfLBService, lb.ID)
				d.printf("     VIP %s on the service subnet %s, %s/%s, tagged %s\n", lb.VIP, lb.VIPSubnet, lb.Status, lb.Operating, strings.Join(lb.Tags, ","))
				d.printf("     listener %s:%d → pool %s → members:\n", l.Protocol, l.Port, short(l.Pool))
				slices.SortFunc(members.Members, func(a, b lbMember) int { return strings.Compare(a.Name, b.Name) })
				for _, m := range members.Members {
					d.printf("       %s:%d  pod %s\n", m.Address, m.Port, m.Name)
				}
				return lb.ID, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the CNF's Service %s/%s has no ACTIVE Octavia load balancer with members %v within %s (%s); kuryr-controller's log is /var/log/k8s-standin/kuryr-controller.log on the master",
				cnfNamespace, cnfLBService, want, kuryrWait, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// showServiceLBGone waits (bounded) until kuryr-controller has deleted the
// load balancer of the terminated CNF's Service.
func (d *demo) showServiceLBGone(clusterID, lbID string) error {
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(kuryrWait)
	for {
		lb, err := vc.serviceLB(clusterID)
		if err != nil {
			return err
		}
		if lb == nil {
			d.printf("   the Service went with the CNF: kuryr-controller deleted its load balancer %s\n", lbID)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the load balancer %s of the terminated CNF's Service is still there after %s (%s)", lb.ID, kuryrWait, lb.Status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
