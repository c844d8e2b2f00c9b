package osworld_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
)

// The databases of the world live in the test binary's cluster.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, nil)) }

type rawCreate map[string]any

func (o rawCreate) ToStackCreateMap() (map[string]any, error) { return o, nil }

func provider(t *testing.T, w *osworld.World, tn osworld.Tenant) *gophercloud.ProviderClient {
	t.Helper()
	p, err := openstack.AuthenticatedClient(context.Background(), gophercloud.AuthOptions{IdentityEndpoint: w.AuthURL,
		Username: tn.User, Password: tn.Password, DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: tn.Project, DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A stack with a port and a server, created by real Heat in the
// simulator: Heat resolves the flavor through Nova, the image through
// Glance and the network through Neutron, then boots the server.
func TestRealHeatServerStack(t *testing.T) {
	w := osworld.Shared(t, pgtest.Cluster())
	tn := w.Tenant(t)
	sim, err := ossim.New(w.SimOptions(tn, ossim.Options{Latency: 5 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	w.Serve(tn.ProjectID, sim)
	heat, err := openstack.NewOrchestrationV1(provider(t, w, tn), gophercloud.EndpointOpts{Region: w.Region})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := map[string]any{"heat_template_version": "2018-08-31", "resources": map[string]any{
		"port": map[string]any{"type": "OS::Neutron::Port", "properties": map[string]any{"network": "net0"}},
		"vm": map[string]any{"type": "OS::Nova::Server", "properties": map[string]any{"name": "vm1", "flavor": "m1.small",
			"image": "ubuntu-22.04", "networks": []any{map[string]any{"port": map[string]any{"get_resource": "port"}}}}}},
		"outputs": map[string]any{"ip": map[string]any{"value": map[string]any{"get_attr": []any{"vm", "first_address"}}}}}
	ctx := context.Background()
	st, err := stacks.Create(ctx, heat, rawCreate{"stack_name": "s1", "template": tmpl, "timeout_mins": 10}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for {
		got, err := stacks.Get(ctx, heat, "s1", st.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "CREATE_COMPLETE" {
			t.Logf("CREATE_COMPLETE after %s", time.Since(began).Round(time.Millisecond))
			break
		}
		if got.Status != "CREATE_IN_PROGRESS" || time.Since(began) > 5*time.Minute {
			t.Fatalf("%s: %s\n%s", got.Status, got.StatusReason, w.LogTail("heat", 40))
		}
		time.Sleep(time.Second)
	}
	servers := sim.Servers()
	if len(servers) != 1 || servers[0].Name != "vm1" || servers[0].Status != "ACTIVE" {
		t.Fatalf("servers in the simulator: %+v", servers)
	}
	// The tenant lists its stack; another tenant's user (admin role too,
	// to whom Heat lists every project's stacks) does not see it as its own.
	if sts, err := w.Stacks(ctx, tn); err != nil || len(sts) != 1 || sts[0].ID != st.ID || sts[0].Name != "s1" {
		t.Errorf("the tenant's stacks: %+v %v", sts, err)
	}
	if sts, err := w.Stacks(ctx, w.Tenant(t)); err != nil || len(sts) != 0 {
		t.Errorf("another tenant's stacks: %+v %v", sts, err)
	}
	if err := stacks.Delete(ctx, heat, "s1", st.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	for len(sim.Servers()) > 0 {
		if time.Since(began) > 10*time.Minute {
			t.Fatalf("server not deleted: %+v", sim.Servers())
		}
		time.Sleep(time.Second)
	}
}

// Keystone is the real one: an application credential of a tenant logs
// in and sees the catalog with the simulator's services.
func TestRealHeatKeystoneApplicationCredential(t *testing.T) {
	w := osworld.Shared(t, pgtest.Cluster())
	tn := w.Tenant(t)
	ctx := context.Background()
	id, err := openstack.NewIdentityV3(provider(t, w, tn), gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := applicationcredentials.Create(ctx, id, tn.UserID, applicationcredentials.CreateOpts{Name: "vnfm"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: w.AuthURL,
		ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: ac.Secret})
	if err != nil {
		t.Fatalf("application credential login: %v", err)
	}
	for _, typ := range []string{"compute", "network", "image", "orchestration"} {
		if _, err := p.EndpointLocator(gophercloud.EndpointOpts{Type: typ, Region: w.Region, Availability: gophercloud.AvailabilityPublic}); err != nil {
			t.Errorf("catalog entry %s: %v", typ, err)
		}
	}
	if _, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: w.AuthURL,
		ApplicationCredentialID: ac.ID, ApplicationCredentialSecret: "wrong"}); err == nil {
		t.Error("a wrong application credential secret logged in")
	}
}
