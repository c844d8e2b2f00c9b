package ossim_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// Application credentials: created by the user for its project with a
// role subset, an expiry and access rules; a login with them gets only
// those; a restricted one cannot make more; deleting it ends its tokens.
func TestApplicationCredentials(t *testing.T) {
	e := newEnv(t, ossim.Options{Accounts: []ossim.Account{{UserName: "admin", Password: "secret", ProjectName: "admin", Roles: []string{"admin", "member", "reader"}}}})
	ctx := context.Background()
	ident, err := openstack.NewIdentityV3(e.provider, gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	user, err := tokens.Get(ctx, ident, e.provider.Token()).ExtractUser()
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ac, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "kuryr-inst-1",
		Roles: []applicationcredentials.Role{{Name: "member"}}, ExpiresAt: &exp,
		AccessRules: []applicationcredentials.AccessRule{{Service: "network", Method: "*", Path: "/v2.0/**"}, {Service: "load-balancer", Method: "*", Path: "/v2/**"}, {Service: "load-balancer", Method: "*", Path: "/v2.0/**"}}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if ac.Secret == "" || len(ac.Roles) != 1 || ac.Roles[0].Name != "member" || !ac.ExpiresAt.Equal(exp) || len(ac.AccessRules) != 3 || ac.Unrestricted {
		t.Fatalf("created %+v", ac)
	}
	if _, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "x", Roles: []applicationcredentials.Role{{Name: "operator"}}}).Extract(); errCode(err) != 403 {
		t.Errorf("a role the user lacks: %v", err)
	}
	if _, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "kuryr-inst-1"}).Extract(); errCode(err) != 409 {
		t.Errorf("duplicate name: %v", err)
	}
	got, err := applicationcredentials.Get(ctx, ident, user.ID, ac.ID).Extract()
	if err != nil || got.Secret != "" || got.Name != "kuryr-inst-1" {
		t.Errorf("get shows %+v %v (never the secret)", got, err)
	}

	// Log in with it.
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	nw, _ := openstack.NewNetworkV2(p, eo)
	lb, _ := openstack.NewLoadBalancerV2(p, eo)
	heat, _ := openstack.NewOrchestrationV1(p, eo)
	if _, err := networks.List(nw, nil).AllPages(ctx); err != nil {
		t.Errorf("Neutron with the credential: %v", err)
	}
	if _, err := loadbalancers.List(lb, nil).AllPages(ctx); err != nil {
		t.Errorf("Octavia with the credential: %v", err)
	}
	if _, err := stacks.List(heat, nil).AllPages(ctx); errCode(err) != 401 {
		t.Errorf("Heat is outside its access rules: %v", err)
	}
	ident2, _ := openstack.NewIdentityV3(p, gophercloud.EndpointOpts{})
	tok, err := tokens.Get(ctx, ident2, p.Token()).Extract()
	if err == nil {
		t.Errorf("identity is outside the access rules too: %+v", tok)
	}
	bad, _ := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: "wrong"})
	if bad != nil {
		t.Error("logged in with a wrong secret")
	}

	// Restricted (the default), even without access rules: it cannot make another.
	open2, err := applicationcredentials.Create(ctx, ident, user.ID, applicationcredentials.CreateOpts{Name: "open"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	po, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: open2.ID, ApplicationCredentialSecret: open2.Secret})
	if err != nil {
		t.Fatal(err)
	}
	identO, _ := openstack.NewIdentityV3(po, gophercloud.EndpointOpts{})
	if _, err := applicationcredentials.Create(ctx, identO, user.ID, applicationcredentials.CreateOpts{Name: "more"}).Extract(); errCode(err) != 403 {
		t.Errorf("a restricted credential made another: %v", err)
	}

	// Deleted: its tokens stop working.
	if err := applicationcredentials.Delete(ctx, ident, user.ID, ac.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := networks.List(nw, nil).AllPages(ctx); err == nil {
		t.Error("the deleted credential's token still works")
	}
	if _, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret}); err == nil {
		t.Error("logged in with a deleted credential")
	}
}

// SetInternalURL: the catalog's internal endpoints are the simulator as the
// servers reach it (software in a cluster finds Keystone there); the
// public ones stay; a login through the internal URL has its catalog there.
func TestInternalEndpoints(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	inner := httptest.NewServer(e.sim) // the hosts' side
	defer inner.Close()
	e.sim.SetInternalURL(inner.URL + "/")
	for _, tc := range []struct {
		iface gophercloud.Availability
		want  string
	}{{gophercloud.AvailabilityPublic, e.srv.URL}, {gophercloud.AvailabilityInternal, inner.URL}} {
		p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: e.authURL(), Username: "admin", Password: "secret",
			DomainName: "Default", TenantName: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error){
			openstack.NewNetworkV2, openstack.NewLoadBalancerV2, openstack.NewIdentityV3} {
			sc, err := f(p, gophercloud.EndpointOpts{Region: "RegionOne", Availability: tc.iface})
			if err != nil || !strings.HasPrefix(sc.Endpoint, tc.want+"/") {
				t.Errorf("%s endpoint %v %v, want under %s", tc.iface, sc.Endpoint, err, tc.want)
			}
		}
	}
	// Through the internal URL, with the internal identity endpoint.
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: inner.URL + "/v3", Username: "admin", Password: "secret",
		DomainName: "Default", TenantName: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := openstack.NewNetworkV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil || !strings.HasPrefix(nw.Endpoint, inner.URL+"/") {
		t.Fatalf("public endpoint of a login through the internal URL: %v %v", nw.Endpoint, err)
	}
	if _, err := networks.List(nw, nil).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
}
