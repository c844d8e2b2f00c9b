package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
)

// vimClient is a login to the default VIM (make run's cloud), as an
// operator with the openstack CLI would have: a token and the catalog.
type vimClient struct {
	token    string
	userID   string
	endpoint map[string]string // public, by service type
	internal map[string]string // internal, by service type
}

// vimLogin logs in to the default VIM's Keystone.
func (d *demo) vimLogin(user, password string) (*vimClient, error) {
	if d.vim != nil {
		return d.vim, nil
	}
	var vims struct {
		Vims []map[string]any `json:"vims"`
	}
	if _, err := d.call("GET", "/v1.0/vims", nil, &vims); err != nil {
		return nil, err
	}
	authURL := ""
	for _, v := range vims.Vims {
		if v["is_default"] == true {
			authURL, _ = v["auth_url"].(string)
		}
	}
	if authURL == "" {
		return nil, errors.New("no default VIM is registered; `make run` registers its simulator")
	}
	body := fmt.Sprintf(`{"auth":{"identity":{"methods":["password"],"password":{"user":{"domain":{"name":"Default"},"name":%q,"password":%q}}},"scope":{"project":{"domain":{"name":"Default"},"name":"admin"}}}}`, user, password)
	res, err := http.Post(strings.TrimRight(authURL, "/")+"/auth/tokens", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("Keystone at %s: %w", authURL, err)
	}
	defer res.Body.Close()
	var tok struct {
		Token struct {
			User    struct{ ID string } `json:"user"`
			Catalog []struct {
				Type      string `json:"type"`
				Endpoints []struct {
					Interface, URL string
				} `json:"endpoints"`
			} `json:"catalog"`
		} `json:"token"`
	}
	if res.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("Keystone at %s refused %s: %s (pass -cloud-user/-cloud-password)", authURL, user, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil {
		return nil, err
	}
	vc := &vimClient{token: res.Header.Get("X-Subject-Token"), userID: tok.Token.User.ID, endpoint: map[string]string{}, internal: map[string]string{}}
	for _, cat := range tok.Token.Catalog {
		for _, e := range cat.Endpoints {
			switch e.Interface {
			case "public":
				vc.endpoint[cat.Type] = strings.TrimRight(e.URL, "/")
			case "internal":
				vc.internal[cat.Type] = strings.TrimRight(e.URL, "/")
			}
		}
	}
	d.vim = vc
	return vc, nil
}

// get GETs a URL of the VIM's APIs and decodes the JSON answer.
func (vc *vimClient) get(u string, out any) error { return vc.do("GET", u, nil, out) }

func (vc *vimClient) do(method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-Auth-Token", vc.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, u, r.Status)
	}
	return json.NewDecoder(r.Body).Decode(out)
}

// stackResources lists the top-level resources of the instance's stack.
func (vc *vimClient) stackResources(id string) ([]stackResource, error) {
	var rs struct {
		Resources []stackResource `json:"resources"`
	}
	err := vc.get(vc.endpoint["orchestration"]+"/stacks/"+openstack.StackName(id)+"/resources", &rs)
	sort.Slice(rs.Resources, func(i, j int) bool { return rs.Resources[i].Name < rs.Resources[j].Name })
	return rs.Resources, err
}

type stackResource struct {
	Name   string `json:"resource_name"`
	Type   string `json:"resource_type"`
	ID     string `json:"physical_resource_id"`
	Status string `json:"resource_status"`
}

// neutronPort is a port as Neutron lists it.
type neutronPort struct {
	Name     string `json:"name"`
	FixedIPs []struct {
		IP string `json:"ip_address"`
	} `json:"fixed_ips"`
}

// taggedPorts lists the ports tagged with an instance (what the cluster's
// Kuryr made).
func (vc *vimClient) taggedPorts(id string) ([]neutronPort, error) {
	var ports struct {
		Ports []neutronPort `json:"ports"`
	}
	err := vc.get(vc.endpoint["network"]+"/v2.0/ports?tags="+url.QueryEscape(driverapi.InstanceTag(id)), &ports)
	return ports.Ports, err
}

// kuryrCredential is kuryr-controller's application credential, if any.
func (vc *vimClient) kuryrCredential(id string) (map[string]any, error) {
	var l struct {
		Creds []map[string]any `json:"application_credentials"`
	}
	if err := vc.get(vc.endpoint["identity"]+"/users/"+vc.userID+"/application_credentials?name="+url.QueryEscape("kuryr-"+id), &l); err != nil {
		return nil, err
	}
	if len(l.Creds) == 0 {
		return nil, nil
	}
	return l.Creds[0], nil
}

// showKuryr shows a Kuryr cluster's pod network as the VIM has it: the
// stack's router, networks and API load balancer, kuryr-controller's
// credential, and what Kuryr made for pods and Services (Neutron ports and
// Octavia load balancers with the instance's tag).
func (d *demo) showKuryr(id string) error {
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return err
	}
	rs, err := vc.stackResources(id)
	if err != nil {
		return err
	}
	d.printf("   Kuryr-Kubernetes pod network (the VIM's view, stack %s):\n", openstack.StackName(id))
	var routers, lbs int
	for _, r := range rs {
		switch r.Type {
		case "OS::Neutron::Router":
			routers++
			var rt struct {
				Router struct {
					Gateway struct {
						NetworkID string `json:"network_id"`
					} `json:"external_gateway_info"`
				} `json:"router"`
			}
			if err := vc.get(vc.endpoint["network"]+"/v2.0/routers/"+r.ID, &rt); err != nil {
				return err
			}
			d.printf("     router %-22s %s, gateway on network %s\n", r.Name, r.ID, rt.Router.Gateway.NetworkID)
		case "OS::Neutron::Subnet":
			var sn struct {
				Subnet struct{ CIDR string } `json:"subnet"`
			}
			if err := vc.get(vc.endpoint["network"]+"/v2.0/subnets/"+r.ID, &sn); err != nil {
				return err
			}
			d.printf("     subnet %-22s %s\n", r.Name, sn.Subnet.CIDR)
		case "OS::Neutron::SecurityGroup":
			d.printf("     security group %-14s %s\n", r.Name, r.ID)
		case "OS::Octavia::LoadBalancer":
			lbs++
			var lb struct {
				LB struct {
					VIP    string `json:"vip_address"`
					Status string `json:"provisioning_status"`
				} `json:"loadbalancer"`
			}
			if err := vc.get(vc.endpoint["load-balancer"]+"/v2/lbaas/loadbalancers/"+r.ID, &lb); err != nil {
				return err
			}
			d.printf("     load balancer %-15s VIP %s (%s), the Kubernetes API (Service default/kubernetes)\n", r.Name, lb.LB.VIP, lb.LB.Status)
		}
	}
	if routers == 0 || lbs == 0 {
		return fmt.Errorf("the stack of a Kuryr cluster has %d routers and %d load balancers; the sample's base HOT has one of each", routers, lbs)
	}
	cred, err := vc.kuryrCredential(id)
	if err != nil {
		return err
	}
	if cred == nil {
		return fmt.Errorf("kuryr-controller has no application credential kuryr-%s in the VIM", id)
	}
	var services []string
	rules, _ := cred["access_rules"].([]any)
	for _, r := range rules {
		if m, _ := r.(map[string]any); m != nil {
			if s, _ := m["service"].(string); !slices.Contains(services, s) {
				services = append(services, s)
			}
		}
	}
	var roles []string
	rl, _ := cred["roles"].([]any)
	for _, r := range rl {
		if m, _ := r.(map[string]any); m != nil {
			roles = append(roles, fmt.Sprint(m["name"]))
		}
	}
	d.printf("     kuryr-controller logs in with application credential %s: roles %s, %s only, expires %v (not the VIM's password)\n",
		cred["name"], strings.Join(roles, ", "), strings.Join(services, " and "), cred["expires_at"])
	tag := driverapi.InstanceTag(id)
	ports, err := vc.taggedPorts(id)
	if err != nil {
		return err
	}
	for _, p := range ports {
		ip := ""
		if len(p.FixedIPs) > 0 {
			ip = p.FixedIPs[0].IP
		}
		d.printf("     pod %-28s Neutron port %s\n", p.Name, ip)
	}
	var svcs struct {
		LBs []struct {
			Name string `json:"name"`
			VIP  string `json:"vip_address"`
		} `json:"loadbalancers"`
	}
	if err := vc.get(vc.endpoint["load-balancer"]+"/v2/lbaas/loadbalancers?tags="+url.QueryEscape(tag), &svcs); err != nil {
		return err
	}
	for _, lb := range svcs.LBs {
		d.printf("     Service %-24s Octavia load balancer, VIP %s\n", lb.Name, lb.VIP)
	}
	if len(ports)+len(svcs.LBs) == 0 {
		d.printf("     no pod or Service has a port or load balancer yet (Kuryr makes them as workloads start, tagged %s)\n", tag)
	}
	return nil
}

// showKuryrGone checks, after terminate, that kuryr-controller's
// credential and what Kuryr made are gone.
func (d *demo) showKuryrGone(id string) error {
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return err
	}
	cred, err := vc.kuryrCredential(id)
	if err != nil {
		return err
	}
	if cred != nil {
		return fmt.Errorf("kuryr-controller's application credential %v outlived the cluster", cred["name"])
	}
	d.printf("   kuryr-controller's application credential kuryr-%s is revoked\n", id)
	tag := driverapi.InstanceTag(id)
	var ports struct {
		Ports []map[string]any `json:"ports"`
	}
	if err := vc.get(vc.endpoint["network"]+"/v2.0/ports?tags="+url.QueryEscape(tag), &ports); err != nil {
		return err
	}
	var lbs struct {
		LBs []map[string]any `json:"loadbalancers"`
	}
	if err := vc.get(vc.endpoint["load-balancer"]+"/v2/lbaas/loadbalancers?tags="+url.QueryEscape(tag), &lbs); err != nil {
		return err
	}
	if len(ports.Ports)+len(lbs.LBs) > 0 {
		return fmt.Errorf("%d ports and %d load balancers Kuryr made (tag %s) outlived the cluster", len(ports.Ports), len(lbs.LBs), tag)
	}
	d.printf("   nothing Kuryr made is left in the VIM (no port or load balancer tagged %s)\n", tag)
	return nil
}

// showGenerated shows the Heat template the VNFM generated from the VNFD:
// the instantiation's progress names it, Heat holds it.
func (d *demo) showGenerated(id string, op map[string]any) error {
	msg := ""
	prog, _ := op["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, x := range steps {
		nodes, _ := x.(map[string]any)["nodes"].([]any)
		for _, y := range nodes {
			if n, _ := y.(map[string]any); n != nil && n["name"] == "heat-template" {
				msg, _ = n["message"].(string)
			}
		}
	}
	if msg == "" {
		return errors.New("the instantiation's progress has no heat-template node: the flavour's template was not generated")
	}
	d.printf("   %s\n", msg)
	vc, err := d.vimLogin(d.simUser, d.simPassword)
	if err != nil {
		return err
	}
	rs, err := vc.stackResources(id)
	if err != nil {
		return err
	}
	count := map[string]int{}
	for _, r := range rs {
		count[r.Type]++
	}
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d %s", count[t], t))
	}
	d.printf("   Heat runs it as stack %s: %s\n", openstack.StackName(id), strings.Join(parts, ", "))
	return nil
}
