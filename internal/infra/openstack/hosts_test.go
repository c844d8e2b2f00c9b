package openstack

import (
	"context"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// With servers that are real hosts: a VNFC's address answers SSH with the
// user of the template's cloud-config and the host key the driver read from
// the console log; a heal keeps the address and brings a new host key, which
// the VNFC's metadata shows.
func TestHostsHealOneVnfcNewHostKey(t *testing.T) {
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "osdrv", Subnet: "10.77.0.0/24"})
	h := newHarnessWith(t, ossim.Options{Hosts: hn, HostNetwork: "net0", Logf: t.Logf})
	h.instantiate()
	target := workers(h.inst.InstantiatedVnfInfo)[0]
	addr := addrOf(t, target)

	hostKey := func(v model.VnfcResourceInfo) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var seen ssh.PublicKey
		c, err := hn.SSH(ctx, addr+":22", testhosts.PasswordConfig("ubuntu", "pw-9", &seen))
		if err != nil {
			t.Fatalf("ssh ubuntu@%s: %v", addr, err)
		}
		_ = c.Close()
		fp := ssh.FingerprintSHA256(seen)
		if fps := strList(v.Metadata[MetaFingerprints]); !slices.Contains(fps, fp) {
			t.Errorf("host key %s of %s is not in the VNFC's fingerprints %v", fp, addr, fps)
		}
		return fp
	}
	before := hostKey(target)

	r := h.start(model.OpHeal, &model.HealVnfRequest{VnfcInstanceID: []string{target.ID}})
	op := r.step("infra.heal", h.d.Heal)
	r.finish()
	i := slices.IndexFunc(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo, func(v model.VnfcResourceInfo) bool { return v.ID == target.ID })
	healed := op.Instance.InstantiatedVnfInfo.VnfcResourceInfo[i]
	if addrOf(t, healed) != addr || healed.ComputeResource.ResourceID == target.ComputeResource.ResourceID {
		t.Fatalf("healed VNFC %s at %s server %s", healed.ID, addrOf(t, healed), healed.ComputeResource.ResourceID)
	}
	if after := hostKey(healed); after == before {
		t.Error("the host key did not change with the heal")
	}
}
