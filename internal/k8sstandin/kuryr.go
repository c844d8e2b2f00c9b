package k8sstandin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// The kuryr-controller stand-in: what Kuryr-Kubernetes' controller does for
// the two things a test or a demo looks at, with the OpenStack credential
// of its kuryr.conf (an application credential) and nothing else.
//
//   - Pod network: every pod that is not on the host network gets a Neutron
//     port on [neutron_defaults] pod_subnet with pod_security_groups, named
//     <namespace>/<pod>; the pod is annotated openstack.org/kuryr-vif with
//     the port (id, address, MAC, subnet) and its status.podIP set to the
//     port's address, as Kuryr's CNI would configure it (replacing the
//     address kwok gives it from the node's pod CIDR). A pod's port goes
//     with the pod.
//   - Services of type LoadBalancer: an Octavia load balancer named
//     <namespace>/<service> on service_subnet, a listener and a pool per
//     port (the service's protocol and port, lb_algorithm), the pods the
//     selector picks as members (their Kuryr addresses, targetPort), and the
//     VIP in status.loadBalancer.ingress. A load balancer whose Service is
//     gone (or no longer of type LoadBalancer) is deleted with its children.
//
// Everything it creates is tagged with [neutron_defaults] resource_tags
// (load balancers at creation, ports right after it), so several
// clusters can share a project. It polls (every
// second; the stand-in API server has no watch) and logs one line per change.
// Not modelled: ClusterIP services as load balancers, network policies,
// namespace subnets, ports pools, the CNI daemon.

// kuryrConf is the part of kuryr.conf the stand-in reads.
type kuryrConf struct {
	sections map[string]map[string]string
}

func (c kuryrConf) get(section, key string) string { return c.sections[section][key] }

func parseKuryrConf(r io.Reader) (kuryrConf, error) {
	c := kuryrConf{sections: map[string]map[string]string{}}
	cur := "DEFAULT"
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
			continue
		}
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			cur = strings.TrimSpace(l[1 : len(l)-1])
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return c, fmt.Errorf("line %d: not key = value", n)
		}
		if c.sections[cur] == nil {
			c.sections[cur] = map[string]string{}
		}
		c.sections[cur][strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return c, sc.Err()
}

func splitCSV(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// kuryrController is one running stand-in.
type kuryrController struct {
	k8s         *Client
	net, lb     *gophercloud.ServiceClient
	podSubnet   string
	podSGs      []string
	svcSubnet   string
	project     string
	tags        []string
	algorithm   string
	memberL2    bool
	logf        func(format string, args ...any)
	podNetwork  string // the network of pod_subnet
	lbWaitLimit time.Duration
}

// Kuryr annotations and names.
const (
	kuryrVifAnnotation = "openstack.org/kuryr-vif"
	kuryrLBAnnotation  = "openstack.org/kuryr-lbaas-state"
	kuryrDeviceOwner   = "compute:kuryr"
)

func newKuryrController(ctx context.Context, conf kuryrConf, k8s *Client, logf func(string, ...any)) (*kuryrController, error) {
	ao := gophercloud.AuthOptions{IdentityEndpoint: conf.get("neutron", "auth_url"), AllowReauth: true}
	switch t := conf.get("neutron", "auth_type"); t {
	case "v3applicationcredential":
		ao.ApplicationCredentialID = conf.get("neutron", "application_credential_id")
		ao.ApplicationCredentialName = conf.get("neutron", "application_credential_name")
		ao.ApplicationCredentialSecret = conf.get("neutron", "application_credential_secret")
		ao.Username, ao.DomainName = conf.get("neutron", "username"), conf.get("neutron", "user_domain_name")
	default:
		return nil, fmt.Errorf("[neutron] auth_type %q: the stand-in logs in with an application credential only (v3applicationcredential)", t)
	}
	if ao.IdentityEndpoint == "" {
		return nil, errors.New("[neutron] auth_url is required")
	}
	if !strings.HasSuffix(strings.TrimRight(ao.IdentityEndpoint, "/"), "/v3") {
		ao.IdentityEndpoint = strings.TrimRight(ao.IdentityEndpoint, "/") + "/v3"
	}
	p, err := openstack.AuthenticatedClient(ctx, ao)
	if err != nil {
		return nil, fmt.Errorf("logging in to %s: %w", ao.IdentityEndpoint, err)
	}
	eo := gophercloud.EndpointOpts{Region: conf.get("neutron", "region_name")}
	k := &kuryrController{k8s: k8s, logf: logf, podSubnet: conf.get("neutron_defaults", "pod_subnet"),
		podSGs: splitCSV(conf.get("neutron_defaults", "pod_security_groups")), svcSubnet: conf.get("neutron_defaults", "service_subnet"),
		project: conf.get("neutron_defaults", "project"), tags: splitCSV(conf.get("neutron_defaults", "resource_tags")),
		algorithm: conf.get("octavia_defaults", "lb_algorithm"), memberL2: conf.get("octavia_defaults", "member_mode") == "L2",
		lbWaitLimit: 2 * time.Minute}
	if k.algorithm == "" {
		k.algorithm = "ROUND_ROBIN"
	}
	if k.podSubnet == "" || k.svcSubnet == "" {
		return nil, errors.New("[neutron_defaults] pod_subnet and service_subnet are required")
	}
	if k.net, err = openstack.NewNetworkV2(p, eo); err != nil {
		return nil, err
	}
	if k.lb, err = openstack.NewLoadBalancerV2(p, eo); err != nil {
		return nil, err
	}
	sn, err := subnets.Get(ctx, k.net, k.podSubnet).Extract()
	if err != nil {
		return nil, fmt.Errorf("[neutron_defaults] pod_subnet %s: %w", k.podSubnet, err)
	}
	k.podNetwork = sn.NetworkID
	return k, nil
}

var (
	resServices  = resourceFor("", "v1", "services")
	resEndpoints = resourceFor("", "v1", "endpoints")
)

// reconcile runs one pass: pods, then services.
func (k *kuryrController) reconcile(ctx context.Context) error {
	pods, err := k.k8s.List(ctx, resPods, "", "", "")
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	errPods := k.syncPods(ctx, pods)
	pods, _ = k.k8s.List(ctx, resPods, "", "", "")
	errSvcs := k.syncServices(ctx, pods)
	return errors.Join(errPods, errSvcs)
}

func (k *kuryrController) tagged(tags []string) bool {
	for _, t := range k.tags {
		if !slices.Contains(tags, t) {
			return false
		}
	}
	return true
}

// syncPods gives pods their Neutron ports and removes the ports of pods
// that are gone.
func (k *kuryrController) syncPods(ctx context.Context, pods []Obj) error {
	all, err := ports.List(k.net, ports.ListOpts{DeviceOwner: kuryrDeviceOwner}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("listing Kuryr ports: %w", err)
	}
	existing, err := ports.ExtractPorts(all)
	if err != nil {
		return err
	}
	byName := map[string]ports.Port{}
	var errs []error
	for _, p := range existing {
		if k.tagged(p.Tags) && (len(k.tags) > 0 || p.Description == k.portDescription()) {
			byName[p.Name] = p
		} else if p.Description == k.portDescription() { // made, not yet tagged
			if err := k.tagPort(ctx, p.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			byName[p.Name] = p
		}
	}
	live := map[string]bool{}
	for _, pod := range pods {
		if b, _ := getMap(pod, "spec")["hostNetwork"].(bool); b {
			continue
		}
		ns, name := getStr(pod, "metadata", "namespace"), getStr(pod, "metadata", "name")
		key := ns + "/" + name
		live[key] = true
		p, ok := byName[key]
		if getStr(pod, "metadata", "annotations", kuryrVifAnnotation) != "" &&
			(!ok || len(p.FixedIPs) == 0 || getStr(pod, "status", "podIP") == p.FixedIPs[0].IPAddress) {
			continue
		}
		if !ok {
			sgs := k.podSGs
			created, err := ports.Create(ctx, k.net, ports.CreateOpts{NetworkID: k.podNetwork, Name: key, DeviceOwner: kuryrDeviceOwner, DeviceID: getStr(pod, "metadata", "uid"),
				FixedIPs: []ports.IP{{SubnetID: k.podSubnet}}, SecurityGroups: &sgs, ProjectID: k.project, Description: k.portDescription()}).Extract()
			if err != nil {
				errs = append(errs, fmt.Errorf("pod %s: creating its port: %w", key, err))
				continue
			}
			if err := k.tagPort(ctx, created.ID); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", key, err))
				continue
			}
			p = *created
		}
		if len(p.FixedIPs) == 0 {
			errs = append(errs, fmt.Errorf("pod %s: port %s has no address", key, p.ID))
			continue
		}
		vif, _ := json.Marshal(map[string]any{"port_id": p.ID, "address": p.FixedIPs[0].IPAddress, "mac_address": p.MACAddress,
			"subnet_id": p.FixedIPs[0].SubnetID, "network_id": p.NetworkID})
		patch := Obj{"metadata": Obj{"annotations": Obj{kuryrVifAnnotation: string(vif)}}}
		if _, err := k.k8s.Patch(ctx, resPods, ns, name, patch); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: annotating: %w", key, err))
			continue
		}
		// The pod's address is its port's, as Kuryr's CNI configures it;
		// kwok (the stand-in kubelet's pod status) may have given it one
		// from the node's pod CIDR first, and would give it again before
		// the pod is ready, so this is checked on every pass.
		if getStr(pod, "status", "podIP") != p.FixedIPs[0].IPAddress {
			st := Obj{"status": Obj{"podIP": p.FixedIPs[0].IPAddress, "podIPs": []any{Obj{"ip": p.FixedIPs[0].IPAddress}}}}
			if err := k.k8s.DoCT(ctx, "PATCH", objPath(resPods, ns, name)+"/status", "application/merge-patch+json", st, nil); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: setting podIP: %w", key, err))
			}
		}
		k.logf("pod %s: Neutron port %s, %s on subnet %s", key, p.ID, p.FixedIPs[0].IPAddress, p.FixedIPs[0].SubnetID)
	}
	for key, p := range byName {
		if !live[key] {
			if err := ports.Delete(ctx, k.net, p.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
				errs = append(errs, fmt.Errorf("pod %s is gone: deleting its port %s: %w", key, p.ID, err))
				continue
			}
			k.logf("pod %s is gone: port %s deleted", key, p.ID)
		}
	}
	return errors.Join(errs...)
}

// tagPort gives a pod port the resource tags (Neutron's tag extension), as
// Kuryr does right after creating it.
func (k *kuryrController) tagPort(ctx context.Context, id string) error {
	if len(k.tags) == 0 {
		return nil
	}
	if _, err := attributestags.ReplaceAll(ctx, k.net, "ports", id, attributestags.ReplaceAllOpts{Tags: k.tags}).Extract(); err != nil {
		return fmt.Errorf("tagging port %s: %w", id, err)
	}
	return nil
}

// portDescription marks this cluster's pod ports (the resource tags) until
// they are tagged.
func (k *kuryrController) portDescription() string {
	return "kuryr pod port " + strings.Join(k.tags, ",")
}

// syncServices keeps one load balancer per Service of type LoadBalancer.
func (k *kuryrController) syncServices(ctx context.Context, pods []Obj) error {
	svcs, err := k.k8s.List(ctx, resServices, "", "", "")
	if err != nil {
		return fmt.Errorf("listing services: %w", err)
	}
	all, err := loadbalancers.List(k.lb, loadbalancers.ListOpts{}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("listing load balancers: %w", err)
	}
	lbs, err := loadbalancers.ExtractLoadBalancers(all)
	if err != nil {
		return err
	}
	ours := map[string]loadbalancers.LoadBalancer{}
	for _, lb := range lbs {
		if slices.Contains(lb.Tags, "kuryr") && k.tagged(lb.Tags) {
			ours[lb.Name] = lb
		}
	}
	want := map[string]bool{}
	var errs []error
	for _, svc := range svcs {
		if getStr(svc, "spec", "type") != "LoadBalancer" {
			continue
		}
		key := getStr(svc, "metadata", "namespace") + "/" + getStr(svc, "metadata", "name")
		want[key] = true
		if err := k.syncService(ctx, svc, ours[key], pods); err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", key, err))
		}
	}
	for key, lb := range ours {
		if want[key] {
			continue
		}
		if err := loadbalancers.Delete(ctx, k.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			errs = append(errs, fmt.Errorf("service %s is gone: deleting load balancer %s: %w", key, lb.ID, err))
			continue
		}
		k.logf("service %s is gone: load balancer %s deleted", key, lb.ID)
	}
	return errors.Join(errs...)
}

// waitActive waits for the load balancer to be ACTIVE (bounded).
func (k *kuryrController) waitActive(ctx context.Context, id string) (*loadbalancers.LoadBalancer, error) {
	deadline := time.Now().Add(k.lbWaitLimit)
	for {
		lb, err := loadbalancers.Get(ctx, k.lb, id).Extract()
		if err != nil {
			return nil, err
		}
		switch lb.ProvisioningStatus {
		case "ACTIVE":
			return lb, nil
		case "ERROR":
			return nil, fmt.Errorf("load balancer %s is in ERROR", id)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("load balancer %s still %s after %v", id, lb.ProvisioningStatus, k.lbWaitLimit)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (k *kuryrController) syncService(ctx context.Context, svc Obj, lb loadbalancers.LoadBalancer, pods []Obj) error {
	ns, name := getStr(svc, "metadata", "namespace"), getStr(svc, "metadata", "name")
	key := ns + "/" + name
	if lb.ID == "" {
		created, err := loadbalancers.Create(ctx, k.lb, loadbalancers.CreateOpts{Name: key, VipSubnetID: k.svcSubnet, ProjectID: k.project,
			Tags: append([]string{"kuryr"}, k.tags...), Description: "Kuryr load balancer of Service " + key}).Extract()
		if err != nil {
			return fmt.Errorf("creating its load balancer: %w", err)
		}
		lb = *created
		k.logf("service %s: load balancer %s (VIP %s) created", key, lb.ID, lb.VipAddress)
	}
	cur, err := k.waitActive(ctx, lb.ID)
	if err != nil {
		return err
	}
	// Members: the pods the selector picks, at their Kuryr addresses.
	sel, _ := getMap(svc, "spec")["selector"].(map[string]any)
	var members []Obj
	for _, p := range pods {
		if getStr(p, "metadata", "namespace") != ns || len(sel) == 0 || getStr(p, "status", "podIP") == "" {
			continue
		}
		labels, _ := getMap(p, "metadata")["labels"].(map[string]any)
		match := true
		for k, v := range sel {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			members = append(members, p)
		}
	}
	for _, port := range getSlice(svc, "spec", "ports") {
		pm, _ := port.(map[string]any)
		proto := strings.ToUpper(fmt.Sprint(pm["protocol"]))
		if proto == "" || proto == "<NIL>" {
			proto = "TCP"
		}
		num := toInt(pm["port"])
		target := num
		if t := toInt(pm["targetPort"]); t > 0 {
			target = t
		}
		if err := k.syncListener(ctx, cur, proto, num, target, members); err != nil {
			return err
		}
	}
	ingress := []any{Obj{"ip": cur.VipAddress}}
	if !ingressIs(getSlice(svc, "status", "loadBalancer", "ingress"), cur.VipAddress) {
		st := Obj{"status": Obj{"loadBalancer": Obj{"ingress": ingress}}}
		if err := k.k8s.DoCT(ctx, "PATCH", objPath(resServices, ns, name)+"/status", "application/merge-patch+json", st, nil); err != nil {
			return fmt.Errorf("setting its load balancer ingress: %w", err)
		}
		state, _ := json.Marshal(map[string]any{"loadbalancer": cur.ID, "vip": cur.VipAddress, "members": len(members)})
		_, _ = k.k8s.Patch(ctx, resServices, ns, name, Obj{"metadata": Obj{"annotations": Obj{kuryrLBAnnotation: string(state)}}})
		k.logf("service %s: status.loadBalancer.ingress %s", key, cur.VipAddress)
	}
	return nil
}

// ingressIs reports whether a Service's status.loadBalancer.ingress is the
// one VIP; the API server adds fields of its own (ipMode: VIP), which do not
// count.
func ingressIs(ingress []any, vip string) bool {
	if len(ingress) != 1 {
		return false
	}
	m, _ := ingress[0].(map[string]any)
	return m["ip"] == vip
}

func toInt(v any) int {
	switch t := v.(type) {
	case float64:
		return int(t)
	case int:
		return t
	case json.Number:
		n, _ := t.Int64()
		return int(n)
	}
	return 0
}

// syncListener keeps a listener, its pool and the pool's members.
func (k *kuryrController) syncListener(ctx context.Context, lb *loadbalancers.LoadBalancer, proto string, port, target int, members []Obj) error {
	ls, err := listeners.List(k.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx)
	if err != nil {
		return err
	}
	all, err := listeners.ExtractListeners(ls)
	if err != nil {
		return err
	}
	var l *listeners.Listener
	for i := range all {
		if all[i].ProtocolPort == port && all[i].Protocol == proto {
			l = &all[i]
		}
	}
	if l == nil {
		if l, err = listeners.Create(ctx, k.lb, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.Protocol(proto), ProtocolPort: port,
			Name: fmt.Sprintf("%s:%s:%d", lb.Name, proto, port)}).Extract(); err != nil {
			return fmt.Errorf("listener %s/%d: %w", proto, port, err)
		}
		if _, err := k.waitActive(ctx, lb.ID); err != nil {
			return err
		}
	}
	poolID := l.DefaultPoolID
	if poolID == "" {
		pl, err := pools.Create(ctx, k.lb, pools.CreateOpts{ListenerID: l.ID, Protocol: pools.Protocol(proto), LBMethod: pools.LBMethod(k.algorithm),
			Name: l.Name}).Extract()
		if err != nil {
			return fmt.Errorf("pool of %s/%d: %w", proto, port, err)
		}
		poolID = pl.ID
		if _, err := k.waitActive(ctx, lb.ID); err != nil {
			return err
		}
	}
	mp, err := pools.ListMembers(k.lb, poolID, pools.ListMembersOpts{}).AllPages(ctx)
	if err != nil {
		return err
	}
	have, err := pools.ExtractMembers(mp)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, p := range members {
		addr := getStr(p, "status", "podIP")
		want[addr] = true
		if slices.ContainsFunc(have, func(m pools.Member) bool { return m.Address == addr && m.ProtocolPort == target }) {
			continue
		}
		opts := pools.CreateMemberOpts{Address: addr, ProtocolPort: target, Name: getStr(p, "metadata", "namespace") + "/" + getStr(p, "metadata", "name")}
		if k.memberL2 {
			opts.SubnetID = k.podSubnet
		}
		if _, err := pools.CreateMember(ctx, k.lb, poolID, opts).Extract(); err != nil {
			return fmt.Errorf("member %s:%d: %w", addr, target, err)
		}
		if _, err := k.waitActive(ctx, lb.ID); err != nil {
			return err
		}
		k.logf("load balancer %s: member %s:%d", lb.Name, addr, target)
	}
	for _, m := range have {
		if want[m.Address] {
			continue
		}
		if err := pools.DeleteMember(ctx, k.lb, poolID, m.ID).ExtractErr(); err != nil && !gophercloud.ResponseCodeIs(err, 404) {
			return fmt.Errorf("removing member %s: %w", m.Address, err)
		}
		if _, err := k.waitActive(ctx, lb.ID); err != nil {
			return err
		}
	}
	return nil
}

// runKuryrController is the kuryr-controller personality:
// kuryr-controller --config-file /etc/kuryr/kuryr.conf [--kubeconfig
// /etc/kubernetes/admin.conf] [--once].
func runKuryrController(ctx context.Context, args []string, stderr io.Writer) int {
	p, err := parseFlags(args, spec([]string{"config-file", "kubeconfig"}, []string{"once"}, nil))
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s kuryr-controller: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, a...))
	}
	if err != nil {
		logf("%v", err)
		return 2
	}
	confPath := p.get("config-file")
	if confPath == "" {
		confPath = "/etc/kuryr/kuryr.conf"
	}
	f, err := os.Open(confPath)
	if err != nil {
		logf("%v", err)
		return 1
	}
	conf, err := parseKuryrConf(f)
	f.Close()
	if err != nil {
		logf("%s: %v", confPath, err)
		return 1
	}
	kcPath := p.get("kubeconfig")
	if kcPath == "" {
		kcPath = adminConf
	}
	kc, err := LoadKubeconfig(kcPath)
	if err != nil {
		logf("%v", err)
		return 1
	}
	k8s, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		logf("%v", err)
		return 1
	}
	var k *kuryrController
	for k == nil {
		if k, err = newKuryrController(ctx, conf, k8s, logf); err != nil {
			logf("starting: %v (retrying)", err)
			select {
			case <-ctx.Done():
				return 0
			case <-time.After(5 * time.Second):
			}
		}
	}
	logf("watching pods and services (pod subnet %s, service subnet %s)", k.podSubnet, k.svcSubnet)
	for {
		if err := k.reconcile(ctx); err != nil {
			logf("%v", err)
			if p.bool("once") {
				return 1
			}
		}
		if p.bool("once") {
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(time.Second):
		}
	}
}
