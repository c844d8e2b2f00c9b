package cli

import (
	"net/http/httptest"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

// The bundled OpenStack simulator registers as a VIM with the Tacker CLI like
// a real cloud: the VNFM verifies the credentials with a Keystone token.
func TestRegisterSimulatorAsVim(t *testing.T) {
	requireCLI(t)
	sim, err := ossim.New(ossim.Options{Accounts: []ossim.Account{{UserName: "nfv_user", Password: "devstack", ProjectName: "nfv"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	defer ts.Close()
	defer sim.Close()
	srv := startVNFM(t)
	c := newCLI(t, srv.base)
	y := c.file("sim.yaml", openstackYAML(ts.URL+"/v3", "devstack"))
	v := c.object("vim", "register", "--config-file", y, "--is-default", "sim", "-f", "json")
	if v["status"] != "ACTIVE" || v["type"] != "openstack" || v["is_default"] != true {
		t.Fatalf("simulator VIM: %v", v)
	}
	if regions := nested(t, v, "placement_attr")["regions"]; regions == nil {
		t.Fatalf("regions from the simulator's catalog missing: %v", v)
	}
	c.fail("Keystone rejected the credentials", "vim", "register", "--config-file", c.file("bad.yaml", openstackYAML(ts.URL+"/v3", "nope")), "sim2")
}
