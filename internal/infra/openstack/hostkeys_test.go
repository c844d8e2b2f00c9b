package openstack

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// TestPublishedHostKeys: the driver reads a server's fingerprints from its
// console log as cloud-init prints them, none before, the server's own
// after (the management drivers wait on this under the policy published).
func TestPublishedHostKeys(t *testing.T) {
	const after = 700 * time.Millisecond
	h := newHarnessWith(t, ossim.Options{HostKeysAfter: after})
	ctx := context.Background()
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: h.srv.URL + "/v3",
		Username: "admin", Password: "secret", DomainName: "Default",
		Scope: &gophercloud.AuthScope{ProjectName: "admin", DomainName: "Default"}})
	if err != nil {
		t.Fatal(err)
	}
	nova, err := openstack.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	sv, err := servers.Create(ctx, nova, servers.CreateOpts{Name: "vm", FlavorRef: "1", ImageRef: "cirros",
		Networks: []servers.Network{{UUID: netID}}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		got, err := servers.Get(ctx, nova, sv.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "ACTIVE" {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("server %s", got.Status)
		}
	}
	active := time.Now()
	op := &driverapi.Op{Vim: &h.vim}
	var want []string
	for _, si := range h.sim.Servers() {
		if si.ID == sv.ID {
			want = si.HostKeyFingerprints
		}
	}
	if len(want) == 0 {
		t.Fatal("the simulator gave the server no host keys")
	}
	var seenEmpty bool
	deadline := time.Now().Add(10 * time.Second)
	for {
		fps, err := h.d.PublishedHostKeys(ctx, op, sv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(fps) == 0 {
			seenEmpty = true
		} else {
			if time.Since(active) < after-100*time.Millisecond {
				t.Fatalf("fingerprints %s after ACTIVE, before cloud-init printed them", time.Since(active))
			}
			for _, w := range want {
				if !slices.Contains(fps, w) {
					t.Fatalf("published %v lack the server's %s", fps, w)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fingerprints never appeared")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !seenEmpty {
		t.Fatal("the fingerprints were there at once: the wait was not exercised")
	}
	if _, err := h.d.PublishedHostKeys(ctx, op, "00000000-0000-4000-8000-000000000000"); err == nil {
		t.Fatal("a server that does not exist has published keys")
	}
}
