package kuryr

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	p, probs := Parse("k.kuryr", nil)
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if p.PodSubnet.Output != OutputPodSubnet || p.ServiceSubnet.Output != OutputServiceSubnet || len(p.PodSecurityGroups) != 1 ||
		p.PodSecurityGroups[0].Output != OutputPodSGs || p.PodVifDriver != "nested-vlan" || p.LBaaS != (LBaaS{Provider: "amphora", MemberMode: "L3", Algorithm: "ROUND_ROBIN", EnforceSGRules: true}) ||
		p.CredentialTTL != 720*time.Hour || !slices.Equal(p.CredentialRoles, []string{"member"}) {
		t.Errorf("defaults %+v", p)
	}
}

func TestParse(t *testing.T) {
	p, probs := Parse("k.kuryr", map[string]any{
		"pod_subnet_id": "3f2b7c1e-0000-4000-8000-000000000001", "pod_security_group_ids": []any{"sg-1", map[string]any{"stack_resource": "pod_sg"}},
		"service_subnet_id": map[string]any{"stack_output": "svc"}, "project_id": "abc123", "worker_nodes_subnet_ids": "n1, n2", "auth_url": "http://10.77.0.1:5000/v3",
		"pod_vif_driver": "nested-macvlan", "lbaas": map[string]any{"provider": "ovn", "member_mode": "L2", "lb_algorithm": "SOURCE_IP_PORT", "enforce_sg_rules": "false", "flavor_id": "f1"},
		"credential": map[string]any{"ttl": "48h", "roles": []any{"member", "load-balancer_member"}}})
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if p.PodSubnet.ID != "3f2b7c1e-0000-4000-8000-000000000001" || len(p.PodSecurityGroups) != 2 || p.PodSecurityGroups[1].Resource != "pod_sg" ||
		p.ServiceSubnet.Output != "svc" || p.Project != "abc123" || p.AuthURL != "http://10.77.0.1:5000/v3" || len(p.WorkerNodesSubnets) != 2 || p.PodVifDriver != "nested-macvlan" ||
		p.LBaaS != (LBaaS{Provider: "ovn", MemberMode: "L2", Algorithm: "SOURCE_IP_PORT", EnforceSGRules: false, FlavorID: "f1"}) ||
		p.CredentialTTL != 48*time.Hour || !slices.Equal(p.CredentialRoles, []string{"member", "load-balancer_member"}) {
		t.Errorf("parsed %+v", p)
	}
	_, probs = Parse("k.kuryr", map[string]any{"pod_subnet": "x", "pod_subnet_id": "bad id", "pod_security_group_ids": []any{},
		"service_subnet_id": map[string]any{"stack_output": "a", "stack_resource": "b"}, "pod_vif_driver": "macvlan",
		"lbaas":      map[string]any{"provider": "f5", "member_mode": "L4", "enforce_sg_rules": 3, "extra": 1},
		"credential": map[string]any{"ttl": "5m", "roles": []any{"admin"}}, "auth_url": "ftp://x"})
	all := strings.Join(probs, "\n")
	for _, want := range []string{
		`k.kuryr.pod_subnet: is not a known parameter`, `k.kuryr.pod_subnet_id: "bad id" is not an OpenStack id`,
		`k.kuryr.pod_security_group_ids: is empty`, `k.kuryr.service_subnet_id: give an id, {stack_output`,
		`k.kuryr.pod_vif_driver: macvlan is not one of nested-vlan, nested-macvlan, neutron-vif`,
		`k.kuryr.lbaas.provider: f5 is not one of amphora, ovn`, `k.kuryr.lbaas.member_mode: L4`, `k.kuryr.lbaas.enforce_sg_rules: must be a boolean`,
		`k.kuryr.lbaas.extra: is not a known parameter`, `k.kuryr.credential.ttl: 5m0s is out of range`, `k.kuryr.credential.roles: admin is refused`, `k.kuryr.auth_url: ftp://x is not a Keystone URL`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if _, probs := Parse("k.kuryr", "yes"); len(probs) != 1 || !strings.Contains(probs[0], "must be an object, not a string") {
		t.Errorf("a string: %v", probs)
	}
}

func TestResolveAndRender(t *testing.T) {
	p, _ := Parse("k", map[string]any{"pod_security_group_ids": []any{map[string]any{"stack_output": "kuryr_pod_security_group_ids"}, "sg-extra"},
		"service_subnet_id": map[string]any{"stack_resource": "service_subnet"}})
	st := Stack{Outputs: map[string]any{"kuryr_pod_subnet_id": "pod-sub", "kuryr_pod_security_group_ids": []any{"sg-1"}},
		Resources: map[string]string{"service_subnet": "svc-sub"}}
	r, err := p.Resolve(st, "proj-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.PodSubnet != "pod-sub" || r.ServiceSubnet != "svc-sub" || !slices.Equal(r.PodSecurityGroups, []string{"sg-1", "sg-extra"}) || r.Project != "proj-1" {
		t.Errorf("resolved %+v", r)
	}
	conf := Render(p, r, Conf{APIRoot: "https://10.0.0.11:6443", AuthURL: "http://keystone:5000/v3", CredentialID: "ac-1",
		CredentialSecret: "s3cret", ResourceTags: []string{"mini-vnfm-inst-1"}})
	for _, want := range []string{"[neutron]\nauth_type = v3applicationcredential\nauth_url = http://keystone:5000/v3\napplication_credential_id = ac-1\napplication_credential_secret = s3cret\n",
		"[neutron_defaults]\nproject = proj-1\npod_subnet = pod-sub\npod_security_groups = sg-1,sg-extra\nservice_subnet = svc-sub\nresource_tags = mini-vnfm-inst-1\n",
		"api_root = https://10.0.0.11:6443", "pod_vif_driver = nested-vlan", "member_mode = L3"} {
		if !strings.Contains(conf, want) {
			t.Errorf("kuryr.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "password") || strings.Contains(conf, "[pod_vif_nested]") {
		t.Errorf("kuryr.conf:\n%s", conf)
	}
	p.AuthURL = "http://10.77.0.1:5000/v3"
	if c := Render(p, r, Conf{AuthURL: "http://127.0.0.1:5000/v3"}); !strings.Contains(c, "auth_url = http://10.77.0.1:5000/v3\n") || strings.Contains(c, "127.0.0.1") {
		t.Errorf("auth_url override:\n%s", c)
	}
	// What is missing is said.
	_, err = p.Resolve(Stack{}, "")
	for _, want := range []string{"kuryr.pod_subnet_id: the stack has no output kuryr_pod_subnet_id (its outputs: none)", "the stack has no resource service_subnet",
		"kuryr.project_id: not given"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resolve without a stack: %v, want %q", err, want)
		}
	}
	same, _ := Parse("k", map[string]any{"pod_subnet_id": "s", "service_subnet_id": "s", "pod_security_group_ids": []any{"g"}})
	if _, err := same.Resolve(Stack{}, "p"); err == nil || !strings.Contains(err.Error(), "the same subnet") {
		t.Errorf("same subnets: %v", err)
	}
}
