package appcred

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

func login(t *testing.T, url string, ao gophercloud.AuthOptions) (*gophercloud.ProviderClient, error) {
	t.Helper()
	ao.IdentityEndpoint = url + "/v3"
	return openstack.AuthenticatedClient(context.Background(), ao)
}

func TestIssueAndRevoke(t *testing.T) {
	sim, err := ossim.New(ossim.Options{Accounts: []ossim.Account{
		{UserName: "vim", Password: "vim-password", ProjectName: "tenant", Roles: []string{"admin", "member", "reader"}},
		{UserName: "ro", Password: "ro-password", ProjectName: "tenant", Roles: []string{"reader"}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	ctx := context.Background()
	scope := &gophercloud.AuthScope{ProjectName: "tenant", DomainName: "Default"}
	vimP, err := login(t, srv.URL, gophercloud.AuthOptions{Username: "vim", Password: "vim-password", DomainName: "Default", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c, err := Issue(ctx, vimP, Request{Name: "kuryr-inst-1", Description: "Kuryr of inst-1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == "" || c.Secret == "" || c.ProjectID == "" || c.UserID == "" || strings.Join(c.Roles, ",") != "member" ||
		strings.Join(c.Services, ",") != "network,load-balancer" || !c.ExpiresAt.Equal(now.Add(DefaultTTL).UTC().Truncate(time.Second)) {
		t.Fatalf("credential %+v", c)
	}
	// Its tokens reach Neutron, not Heat.
	kp, err := login(t, srv.URL, gophercloud.AuthOptions{ApplicationCredentialID: c.ID, ApplicationCredentialSecret: c.Secret})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	nw, _ := openstack.NewNetworkV2(kp, eo)
	heat, _ := openstack.NewOrchestrationV1(kp, eo)
	if _, err := networks.List(nw, nil).AllPages(ctx); err != nil {
		t.Errorf("Neutron: %v", err)
	}
	if _, err := stacks.List(heat, nil).AllPages(ctx); !gophercloud.ResponseCodeIs(err, 401) {
		t.Errorf("Heat with the Kuryr credential: %v", err)
	}
	// Issued again under the same name (a retried operation): replaced.
	c2, err := Issue(ctx, vimP, Request{Name: "kuryr-inst-1", TTL: time.Hour}, now)
	if err != nil || c2.ID == c.ID {
		t.Fatalf("reissue: %+v %v", c2, err)
	}
	if _, err := login(t, srv.URL, gophercloud.AuthOptions{ApplicationCredentialID: c.ID, ApplicationCredentialSecret: c.Secret}); err == nil {
		t.Error("the replaced credential still logs in")
	}
	if err := Revoke(ctx, vimP, c2.ID); err != nil {
		t.Fatal(err)
	}
	if err := Revoke(ctx, vimP, c2.ID); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	if _, err := login(t, srv.URL, gophercloud.AuthOptions{ApplicationCredentialID: c2.ID, ApplicationCredentialSecret: c2.Secret}); err == nil {
		t.Error("the revoked credential still logs in")
	}
	// Refusals.
	roP, err := login(t, srv.URL, gophercloud.AuthOptions{Username: "ro", Password: "ro-password", DomainName: "Default", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(ctx, roP, Request{Name: "kuryr-x"}, now); err == nil || !strings.Contains(err.Error(), "it must hold them in the project") {
		t.Errorf("a user without the member role: %v", err)
	}
	for _, r := range []Request{{Name: "bad name"}, {Name: "x", TTL: time.Second}, {Name: "x", TTL: 400 * 24 * time.Hour}} {
		if _, err := Issue(ctx, vimP, r, now); err == nil {
			t.Errorf("%+v accepted", r)
		}
	}
}
