package openstack

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/mini-vnfm/mini-vnfm/internal/appcred"
	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// The kuryr sample's stack publishes the Kuryr ids as outputs; the driver
// issues and revokes an application credential for the VIM's project.
func TestOutputsAndCredentials(t *testing.T) {
	h := newHarness(t)
	vnfd, pkg := samplePackage(t, "kubeadm-kuryr")
	fl := vnfd.Flavours["simple"]
	req := &model.InstantiateVnfRequest{FlavourID: "simple", ExtVirtualLinks: []model.ExtVirtualLinkData{{ID: "ext", ResourceID: netID,
		ExtCps: []model.VnfExtCpData{{CpdID: "masterNode_CP1"}, {CpdID: "workerNode_CP1"}}}}, AdditionalParams: map[string]any{"node_password": "pw"}}
	in := &model.VnfInstance{ID: uuid.NewString(), VnfdID: vnfd.ID, VimConnectionInfo: []model.VimConnectionInfo{h.vim},
		InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: fl.ID, AdditionalParams: req.AdditionalParams,
			ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 0}}}}
	op := &driverapi.Op{ID: uuid.NewString(), Operation: model.OpInstantiate, Instance: in, Vnfd: vnfd, Flavour: fl, Package: pkg,
		Vim: &in.VimConnectionInfo[0], Request: driverapi.Request{Instantiate: req}, Previous: map[string]json.RawMessage{},
		Scratch: map[string]json.RawMessage{}, ResourceChanges: &model.ResourceChanges{}, Progress: (&journal{}).progress("x")}
	ctx := context.Background()
	if err := h.d.Instantiate(ctx, op); err != nil {
		t.Fatal(err)
	}
	out, err := h.d.Outputs(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	pod, _ := out.Values["kuryr_pod_subnet_id"].(string)
	sgs, _ := out.Values["kuryr_pod_security_group_ids"].([]any)
	if pod == "" || pod != out.Resources["pod_subnet"] || len(sgs) != 1 || sgs[0] != out.Resources["pod_security_group"] ||
		out.Resources["router"] == "" || out.Resources["api_lb"] == "" || out.Project == "" {
		t.Fatalf("outputs %+v", out)
	}
	cred, err := h.d.IssueCredential(ctx, op, driverapi.CredentialRequest{Name: "kuryr-" + in.ID, Roles: []string{"member"}, TTL: time.Hour,
		Services: []string{"network", "load-balancer"}})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Type != "v3applicationcredential" || cred.Secret == "" || cred.ProjectID != out.Project || cred.AuthURL != h.srv.URL+"/v3" {
		t.Fatalf("credential %+v", cred)
	}
	login := func() error {
		_, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: cred.AuthURL, ApplicationCredentialID: cred.ID, ApplicationCredentialSecret: cred.Secret})
		return err
	}
	if err := login(); err != nil {
		t.Fatal(err)
	}
	if err := h.d.RevokeCredential(ctx, op, cred.Name); err != nil {
		t.Fatal(err)
	}
	if err := h.d.RevokeCredential(ctx, op, cred.Name); err != nil {
		t.Errorf("revoking again: %v", err)
	}
	if login() == nil {
		t.Error("the revoked credential logs in")
	}
	if _, err := h.d.IssueCredential(ctx, op, driverapi.CredentialRequest{Name: "kuryr-" + uuid.NewString(), TTL: time.Hour}); err == nil {
		t.Error("a credential named for another instance was issued")
	}
	// Terminate revokes what was issued for the instance (the credential
	// kuryr-controller still holds), and nothing else.
	if cred, err = h.d.IssueCredential(ctx, op, driverapi.CredentialRequest{Name: "kuryr-" + in.ID, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := login(); err != nil {
		t.Fatal(err)
	}

	// What Kuryr made in the VIM with the instance's tag (a Service's
	// load balancer on the service subnet, a pod's port on the pod
	// network) goes before the stack; untagged resources stay.
	vc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: h.srv.URL + "/v3", Username: "admin", Password: "secret",
		DomainName: "Default", TenantName: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	nw, _ := openstack.NewNetworkV2(vc, gophercloud.EndpointOpts{Region: "RegionOne"})
	oct, _ := openstack.NewLoadBalancerV2(vc, gophercloud.EndpointOpts{Region: "RegionOne"})
	tag := driverapi.InstanceTag(in.ID)
	lb, err := loadbalancers.Create(ctx, oct, loadbalancers.CreateOpts{Name: "default/web", VipSubnetID: out.Resources["service_subnet"],
		Tags: []string{"kuryr", tag}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listeners.Create(ctx, oct, listeners.CreateOpts{LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80}).Extract(); err != nil &&
		!gophercloud.ResponseCodeIs(err, 409) {
		t.Fatal(err)
	}
	podNet := out.Resources["pod_net"]
	pp, err := ports.Create(ctx, nw, ports.CreateOpts{NetworkID: podNet, Name: "default/web-1", DeviceOwner: "compute:kuryr"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attributestags.ReplaceAll(ctx, nw, "ports", pp.ID, attributestags.ReplaceAllOpts{Tags: []string{tag}}).Extract(); err != nil {
		t.Fatal(err)
	}
	other, err := ports.Create(ctx, nw, ports.CreateOpts{NetworkID: netID, Name: "someone else's"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	otherCred, err := appcred.Issue(ctx, vc, appcred.Request{Name: "kuryr-" + uuid.NewString(), TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	op.Operation, op.ID, op.Progress = model.OpTerminate, uuid.NewString(), (&journal{}).progress("y")
	op.Request = driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}}
	if err := h.d.Terminate(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.Get(ctx, oct, lb.ID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("the tagged load balancer after terminate: %v", err)
	}
	if _, err := ports.Get(ctx, nw, pp.ID).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("the tagged port after terminate: %v", err)
	}
	if _, err := ports.Get(ctx, nw, other.ID).Extract(); err != nil {
		t.Errorf("the untagged port after terminate: %v", err)
	}
	if login() == nil {
		t.Error("the instance's credential logs in after terminate")
	}
	if _, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: cred.AuthURL, ApplicationCredentialID: otherCred.ID,
		ApplicationCredentialSecret: otherCred.Secret}); err != nil {
		t.Errorf("another instance's credential after terminate: %v", err)
	}
	if s, err := findStack(ctx, must(h.d.connect(ctx, op)), StackName(in.ID)); err != nil || s != nil {
		t.Errorf("the stack after terminate: %+v %v", s, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
