package cli

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
)

// vnflcm create / list / show / delete with the Tacker CLI.
func TestVnflcmCommands(t *testing.T) {
	requireCLI(t) // before anything else: a missing CLI fails fast
	srv := startVNFM(t)
	seedPackage(t, srv.db)
	c := newCLI(t, srv.base)

	if rows := c.list("vnflcm", "list", "-f", "json"); len(rows) != 0 {
		t.Fatalf("list on an empty server: %v", rows)
	}
	inst := c.object("vnflcm", "create", "--name", "k8s-1", "--description", "first cluster", lcmtest.VnfdID, "-f", "json")
	id, _ := inst["ID"].(string)
	if _, err := uuid.Parse(id); err != nil || inst["VNF Instance Name"] != "k8s-1" || inst["VNFD ID"] != lcmtest.VnfdID {
		t.Fatalf("create: %v", inst)
	}
	rows := c.list("vnflcm", "list", "-f", "json")
	if len(rows) != 1 || rows[0]["ID"] != id || rows[0]["VNF Instance Name"] != "k8s-1" || rows[0]["Instantiation State"] != "NOT_INSTANTIATED" ||
		rows[0]["VNF Provider"] != "Company" || rows[0]["VNF Product Name"] != "Sample K8s" || rows[0]["VNFD ID"] != lcmtest.VnfdID {
		t.Fatalf("list: %v", rows)
	}
	show := c.object("vnflcm", "show", id, "-f", "json")
	if show["ID"] != id || show["Instantiation State"] != "NOT_INSTANTIATED" || show["VNF Instance Description"] != "first cluster" {
		t.Fatalf("show: %v", show)
	}
	if r := c.ok("vnflcm", "show", id, "-f", "value", "-c", "Instantiation State"); strings.TrimSpace(r.stdout) != "NOT_INSTANTIATED" {
		t.Fatalf("show value: %s", r)
	}
	missing := uuid.NewString()
	c.fail("VNF instance "+missing+" does not exist", "vnflcm", "show", missing)
	if r := c.ok("vnflcm", "delete", id); !strings.Contains(r.stdout, "Vnf instance '"+id+"' is deleted successfully") {
		t.Fatalf("delete: %s", r)
	}
	if rows := c.list("vnflcm", "list", "-f", "json"); len(rows) != 0 {
		t.Fatalf("list after delete: %v", rows)
	}
}
