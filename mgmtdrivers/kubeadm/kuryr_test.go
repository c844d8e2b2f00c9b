package kubeadm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func kuryrBase(t *testing.T) map[string]any {
	m := tackerParams(t)
	delete(m[ParamKey].(map[string]any), "proxy") // Tacker's sample proxy is a placeholder
	return m
}

// cni defaults to calico; kuryr takes the kuryr object, whose problems
// are named with their full path; kuryr without cni kuryr, and other
// CNIs, are refused.
func TestParseCNI(t *testing.T) {
	p, err := ParseParams(kuryrBase(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.CNI != CNICalico || p.Kuryr != nil {
		t.Fatalf("default cni %q, kuryr %+v", p.CNI, p.Kuryr)
	}
	m := kuryrBase(t)
	m[ParamKey].(map[string]any)["cni"] = "kuryr"
	m[ParamKey].(map[string]any)["kuryr"] = map[string]any{"pod_subnet_id": "sub-1", "lbaas": map[string]any{"member_mode": "L2"},
		"credential": map[string]any{"ttl": "24h"}}
	if p, err = ParseParams(m); err != nil {
		t.Fatal(err)
	}
	if p.CNI != CNIKuryr || p.Kuryr == nil || p.Kuryr.PodSubnet.ID != "sub-1" || p.Kuryr.LBaaS.MemberMode != "L2" ||
		p.Kuryr.CredentialTTL != 24*time.Hour || p.Kuryr.ServiceSubnet.Output != "kuryr_service_subnet_id" {
		t.Fatalf("kuryr params %+v", p.Kuryr)
	}
	// cni kuryr without a kuryr object: every id from the stack's outputs.
	m = kuryrBase(t)
	m[ParamKey].(map[string]any)["cni"] = "kuryr"
	if p, err = ParseParams(m); err != nil || p.Kuryr == nil || p.Kuryr.PodSubnet.Output != "kuryr_pod_subnet_id" {
		t.Fatalf("kuryr defaults %+v %v", p, err)
	}
	for _, tc := range []struct {
		name      string
		edit      func(top map[string]any)
		key, text string
	}{
		{"other cni", func(top map[string]any) { top["cni"] = "flannel" }, ParamKey + ".cni", "calico (the default) or kuryr"},
		{"kuryr without cni", func(top map[string]any) { top["kuryr"] = map[string]any{} }, ParamKey + ".kuryr", "only with cni: kuryr"},
		{"kuryr bad provider", func(top map[string]any) {
			top["cni"] = "kuryr"
			top["kuryr"] = map[string]any{"lbaas": map[string]any{"provider": "f5"}}
		}, ParamKey + ".kuryr.lbaas.provider", "f5"},
		{"kuryr unknown key", func(top map[string]any) {
			top["cni"] = "kuryr"
			top["kuryr"] = map[string]any{"pod_subnet": "x"}
		}, ParamKey + ".kuryr.pod_subnet", ""},
		{"kuryr not an object", func(top map[string]any) {
			top["cni"] = "kuryr"
			top["kuryr"] = "yes"
		}, ParamKey + ".kuryr", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := kuryrBase(t)
			tc.edit(m[ParamKey].(map[string]any))
			_, err := ParseParams(m)
			wantProblem(t, err, tc.key, tc.text)
		})
	}
}

// fakeInfra is an infra driver that issues credentials and publishes
// outputs, recording what it was asked.
type fakeInfra struct {
	outputs *driverapi.Outputs
	asked   []driverapi.CredentialRequest
	revoked []string
}

func (f *fakeInfra) ComputeResources(*model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	return nil
}
func (f *fakeInfra) CheckVIP(context.Context, driverapi.VIPCheck) error { return nil }
func (f *fakeInfra) Outputs(context.Context, *driverapi.Op) (*driverapi.Outputs, error) {
	return f.outputs, nil
}

func (f *fakeInfra) IssueCredential(_ context.Context, _ *driverapi.Op, r driverapi.CredentialRequest) (*driverapi.Credential, error) {
	f.asked = append(f.asked, r)
	return &driverapi.Credential{Type: "v3applicationcredential", ID: "cred-1", Name: r.Name, Secret: "s3cr3t-appcred",
		AuthURL: "http://keystone.vim:5000/v3", Region: "RegionOne", ProjectID: "proj-1", ExpiresAt: time.Now().Add(r.TTL),
		Roles: r.Roles, Services: r.Services}, nil
}

func (f *fakeInfra) RevokeCredential(_ context.Context, _ *driverapi.Op, name string) error {
	f.revoked = append(f.revoked, name)
	return nil
}

// plainInfra issues nothing (a Kubernetes VIM, say).
type plainInfra struct{}

func (plainInfra) ComputeResources(*model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	return nil
}
func (plainInfra) CheckVIP(context.Context, driverapi.VIPCheck) error { return nil }

// cni kuryr is refused at accept time on a VIM whose infra driver cannot
// issue credentials; with one that can, kuryr.conf is rendered from the
// stack's outputs and a fresh credential (the secret masked everywhere but
// the file), and terminate revokes it.
func TestKuryrConfig(t *testing.T) {
	m := kuryrBase(t)
	m[ParamKey].(map[string]any)["cni"] = "kuryr"
	m[ParamKey].(map[string]any)["kuryr"] = map[string]any{"auth_url": "http://192.0.2.1:5000/v3", "credential": map[string]any{"roles": []any{"member", "load-balancer_member"}}}
	p, err := ParseParams(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkKuryr(&driverapi.Accept{Infra: plainInfra{}}, p); err == nil || !strings.Contains(err.Error(), "cni: kuryr needs a VIM") {
		t.Errorf("a VIM without credentials: %v", err)
	}
	if err := checkKuryr(&driverapi.Accept{}, p); err == nil {
		t.Error("no infra driver: accepted")
	}
	fi := &fakeInfra{outputs: &driverapi.Outputs{Values: map[string]any{"kuryr_pod_subnet_id": "pod-sub", "kuryr_pod_security_group_ids": []any{"sg-1", "sg-2"},
		"kuryr_service_subnet_id": "svc-sub"}, Resources: map[string]string{}, Project: "proj-1"}}
	if err := checkKuryr(&driverapi.Accept{Infra: fi}, p); err != nil {
		t.Fatal(err)
	}
	pr := &notes{fakeProgress: newProgress()}
	inst := &model.VnfInstance{ID: "inst-1"}
	h := &hook{d: &Driver{}, p: p, op: &driverapi.Op{Instance: inst, Infra: fi, Progress: pr}, log: slog.New(slog.DiscardHandler),
		topo: &Topology{EndpointIP: "10.0.0.100", EndpointPort: 6443}}
	conf, secret, err := h.kuryrConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if secret != "s3cr3t-appcred" || len(fi.asked) != 1 {
		t.Fatalf("secret %q, asked %+v", secret, fi.asked)
	}
	r := fi.asked[0]
	if r.Name != "kuryr-inst-1" || strings.Join(r.Roles, ",") != "member,load-balancer_member" || strings.Join(r.Services, ",") != "network,load-balancer" ||
		r.TTL <= 0 {
		t.Errorf("credential request %+v", r)
	}
	for _, want := range []string{"application_credential_id = cred-1", "application_credential_secret = s3cr3t-appcred",
		"auth_url = http://192.0.2.1:5000/v3", "pod_subnet = pod-sub", "pod_security_groups = sg-1,sg-2", "service_subnet = svc-sub",
		"project = proj-1", "resource_tags = " + driverapi.InstanceTag("inst-1"), "api_root = https://10.0.0.100:6443"} {
		if !strings.Contains(conf, want) {
			t.Errorf("kuryr.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "password") {
		t.Errorf("kuryr.conf has a password:\n%s", conf)
	}
	for _, n := range pr.got {
		if strings.Contains(n, "s3cr3t") {
			t.Errorf("the progress shows the secret: %s", n)
		}
	}
	if len(pr.got) == 0 || !strings.Contains(pr.got[len(pr.got)-1], "cred-1") {
		t.Errorf("progress %q", pr.got)
	}
	d := &Driver{}
	if err := d.revokeKuryr(context.Background(), h.op, p); err != nil || strings.Join(fi.revoked, ",") != "kuryr-inst-1" {
		t.Errorf("revoked %v %v", fi.revoked, err)
	}
	p.CNI = CNICalico
	fi.revoked = nil
	if err := d.revokeKuryr(context.Background(), h.op, p); err != nil || len(fi.revoked) != 0 {
		t.Errorf("calico revoked %v %v", fi.revoked, err)
	}
	// Outputs missing an id: the error names the output.
	p.CNI = CNIKuryr
	delete(fi.outputs.Values, "kuryr_service_subnet_id")
	if _, _, err := h.kuryrConfig(context.Background()); err == nil || !strings.Contains(err.Error(), "kuryr_service_subnet_id") {
		t.Errorf("a missing output: %v", err)
	}
}
