package ossim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/attachinterfaces"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// What real Heat's python clients need from the simulator (see
// internal/osworld): negotiated Nova microversions, Glance image lookups by
// name and id, and interface detach/attach.

func TestNovaMicroversionNegotiation(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	for _, tc := range []struct {
		header, want string
		code         int
	}{
		{"", "compute 2.1", 200},
		{"compute 2.42", "compute 2.42", 200},
		{"compute latest", "compute 2.42", 200},
		{"compute 2.79", "", 406},
	} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/compute/v2.1/flavors", nil)
		req.Header.Set("X-Auth-Token", e.provider.Token())
		if tc.header != "" {
			req.Header.Set("OpenStack-API-Version", tc.header)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.code || (tc.want != "" && res.Header.Get("OpenStack-API-Version") != tc.want) {
			t.Errorf("%q: %d %q, want %d %q", tc.header, res.StatusCode, res.Header.Get("OpenStack-API-Version"), tc.code, tc.want)
		}
	}
}

func TestGlanceImagesByNameAndID(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	glance, err := openstack.NewImageV2(e.provider, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	pages, err := images.List(glance, images.ListOpts{Name: "debian-12"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := images.ExtractImages(pages)
	if err != nil || len(list) != 1 || list[0].Name != "debian-12" || list[0].Status != "active" {
		t.Fatalf("images named debian-12: %+v %v", list, err)
	}
	img, err := images.Get(ctx, glance, list[0].ID).Extract()
	if err != nil || img.Name != "debian-12" {
		t.Fatalf("image %s: %+v %v", list[0].ID, img, err)
	}
	if _, err := images.Get(ctx, glance, "5a1c8a0e-7d0b-4f43-9a51-0c8f3f2a0fff").Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("unknown image: %v", err)
	}
	// Nova takes the id (what Heat passes) as imageRef.
	sv, err := servers.Create(ctx, e.nova, servers.CreateOpts{Name: "vm", FlavorRef: "2", ImageRef: img.ID}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	got, err := servers.Get(ctx, e.nova, sv.ID).Extract()
	if err != nil || got.Image["id"] != img.ID {
		t.Errorf("server image %v (%v), want %s", got.Image, err, img.ID)
	}
	// Limited images: only those exist.
	e2 := newEnv(t, ossim.Options{Images: []string{"cirros"}})
	if _, err := servers.Create(ctx, e2.nova, servers.CreateOpts{Name: "vm", FlavorRef: "2", ImageRef: "debian-12"}, nil).Extract(); err == nil {
		t.Error("an image outside Options.Images booted")
	}
}

func TestInterfaceDetachAttach(t *testing.T) {
	e := newEnv(t, ossim.Options{})
	ctx := context.Background()
	pages, err := networks.List(e.neutron, networks.ListOpts{Name: "net0"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil || len(nets) != 1 {
		t.Fatalf("net0: %+v %v", nets, err)
	}
	p, err := ports.Create(ctx, e.neutron, ports.CreateOpts{NetworkID: nets[0].ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	sv, err := servers.Create(ctx, e.nova, servers.CreateOpts{Name: "vm", FlavorRef: "2", ImageRef: "debian-12",
		Networks: []servers.Network{{Port: p.ID}}}, nil).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := attachinterfaces.Delete(ctx, e.nova, sv.ID, p.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	// Heat polls until the port is no longer listed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pages, err := attachinterfaces.List(e.nova, sv.ID).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ias, _ := attachinterfaces.ExtractInterfaces(pages)
		if len(ias) == 0 {
			// Nova's empty list is [], not null (novaclient iterates it).
			if body := pages.GetBody(); !strings.Contains(fmt.Sprint(body), "interfaceAttachments:[]") {
				t.Errorf("empty interface list as %v", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("port still attached: %+v", ias)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, _ := ports.Get(ctx, e.neutron, p.ID).Extract(); got.DeviceID != "" {
		t.Errorf("detached port still has device %q", got.DeviceID)
	}
	// The freed port can be attached again (Heat's rollback of a replace).
	ia, err := attachinterfaces.Create(ctx, e.nova, sv.ID, attachinterfaces.CreateOpts{PortID: p.ID}).Extract()
	if err != nil || ia.PortID != p.ID {
		t.Fatalf("attach: %+v %v", ia, err)
	}
	if got, _ := ports.Get(ctx, e.neutron, p.ID).Extract(); got.DeviceID != sv.ID || !strings.HasPrefix(got.DeviceOwner, "compute:") {
		t.Errorf("attached port: device %q owner %q", got.DeviceID, got.DeviceOwner)
	}
	if err := attachinterfaces.Delete(ctx, e.nova, sv.ID, "5a1c8a0e-7d0b-4f43-9a51-0c8f3f2a0fff").ExtractErr(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("detaching a port that is not attached: %v", err)
	}
}
