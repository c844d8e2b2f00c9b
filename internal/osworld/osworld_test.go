package osworld_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, nil)) }

type rawCreate map[string]any

func (o rawCreate) ToStackCreateMap() (map[string]any, error) { return o, nil }

func heatClient(t *testing.T, w *osworld.World, tn osworld.Tenant) *gophercloud.ServiceClient {
	t.Helper()
	ctx := context.Background()
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: w.AuthURL, Username: tn.User,
		Password: tn.Password, DomainName: "Default", Scope: &gophercloud.AuthScope{ProjectName: tn.Project, DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := openstack.NewOrchestrationV1(p, gophercloud.EndpointOpts{Region: w.Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRealHeatServerStack(t *testing.T) {
	w := osworld.Shared(t, pgtest.Cluster())
	tn := w.Tenant(t)
	sim, err := ossim.New(w.SimOptions(tn, ossim.Options{Latency: 5 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	w.Serve(tn.ProjectID, sim)
	heat := heatClient(t, w, tn)
	tmpl := map[string]any{"heat_template_version": "2018-08-31", "resources": map[string]any{
		"port": map[string]any{"type": "OS::Neutron::Port", "properties": map[string]any{"network": "net0"}},
		"vm": map[string]any{"type": "OS::Nova::Server", "properties": map[string]any{"name": "vm1", "flavor": "m1.small",
			"image": "ubuntu-22.04", "networks": []any{map[string]any{"port": map[string]any{"get_resource": "port"}}}}}}}
	ctx := context.Background()
	st, err := stacks.Create(ctx, heat, rawCreate{"stack_name": "s1", "template": tmpl, "timeout_mins": 5}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		got, err := stacks.Get(ctx, heat, "s1", st.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "CREATE_IN_PROGRESS" {
			if got.Status != "CREATE_COMPLETE" {
				t.Fatalf("%s: %s\n%s", got.Status, got.StatusReason, w.LogTail("heat", 60))
			}
			t.Logf("%s in %s", got.Status, time.Since(deadline.Add(-3*time.Minute)))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal("timeout")
}

var _ = httptest.NewServer
