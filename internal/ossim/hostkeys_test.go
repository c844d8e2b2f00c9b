package ossim_test

import (
	"context"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// TestConsoleHostKeysAfter: like cloud-init, the console log shows a
// server's host key fingerprints some time after it became ACTIVE
// (Options.HostKeysAfter), so a client that needs them must wait; then they
// are the server's.
func TestConsoleHostKeysAfter(t *testing.T) {
	const after = 600 * time.Millisecond
	e := newEnv(t, ossim.Options{HostKeysAfter: after})
	ctx := context.Background()
	np, _ := networks.List(e.neutron, networks.ListOpts{Name: "net1"}).AllPages(ctx)
	nl, _ := networks.ExtractNetworks(np)
	sv, err := servers.Create(ctx, e.nova, servers.CreateOpts{Name: "keys-vm", FlavorRef: "1", ImageRef: "cirros",
		Networks: []servers.Network{{UUID: nl[0].ID}}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := servers.Get(ctx, e.nova, sv.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s", s.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	active := time.Now()
	console := func() []string {
		out, err := servers.ShowConsoleOutput(ctx, e.nova, sv.ID, servers.ShowConsoleOutputOpts{}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		return remote.FingerprintsFromConsole(out)
	}
	if fps := console(); len(fps) != 0 && time.Since(active) < after {
		t.Fatalf("fingerprints shown right after ACTIVE: %v", fps)
	}
	var want []string
	for _, si := range e.sim.Servers() {
		if si.ID == sv.ID {
			want = si.HostKeyFingerprints
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		fps := console()
		if len(fps) > 0 {
			if time.Since(active) < after-50*time.Millisecond {
				t.Fatalf("fingerprints shown %s after ACTIVE, before %s", time.Since(active), after)
			}
			for _, w := range want {
				found := false
				for _, f := range fps {
					found = found || f == w
				}
				if !found {
					t.Fatalf("console fingerprints %v lack the server's %s", fps, w)
				}
			}
			if len(want) == 0 {
				t.Fatal("the simulator reports no host keys for the server")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the fingerprints never appeared")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
