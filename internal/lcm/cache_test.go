package lcm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Requests and runs use a cached, decoded VNFD; what happens to the package
// after it was cached is still seen: a disabled package creates no instance,
// and a VNFD replaced under the same package id is the one requests are
// checked against and operations run with.
func TestPackageChangesAfterCaching(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.instance() // the VNFD is read (and cached) here
	if _, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"big"}`)); !isKind(err, lcm.KindInvalid) {
		t.Fatalf("unknown flavour: %v", err)
	}

	if _, err := w.st.UpdatePackage(ctx, lcmtest.PackageID, store.PackageUpdate{OperationalState: model.Disabled}); err != nil {
		t.Fatal(err)
	}
	_, err := w.svc.CreateInstance(ctx, []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`))
	if !isKind(err, lcm.KindUnprocessable) || !strings.Contains(err.Error(), "DISABLED") {
		t.Fatalf("instance of a disabled package: %v", err)
	}
	if _, err := w.st.UpdatePackage(ctx, lcmtest.PackageID, store.PackageUpdate{OperationalState: model.Enabled}); err != nil {
		t.Fatal(err)
	}

	// The VNFD now has a flavour "big" whose level sets the worker aspect to 2.
	pkg := lcmtest.SamplePackage()
	big := *pkg.Vnfd.Flavours["simple"]
	big.ID = "big"
	big.InstantiationLevels = map[string]*model.InstantiationLevel{"l": {ScaleLevels: map[string]int{"worker_aspect": 2}}}
	big.DefaultInstantiationLevel = "l"
	pkg.Vnfd.Flavours["big"] = &big
	if err := w.st.PutPackage(ctx, pkg); err != nil {
		t.Fatal(err)
	}
	w.engine(10*time.Second, nil)
	op, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"big","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}]}`))
	if err != nil {
		t.Fatalf("instantiate with the new flavour: %v", err)
	}
	w.wait(op.ID, model.StateCompleted)
	in := w.mustInst(id)
	if in.InstantiatedVnfInfo.FlavourID != "big" || len(in.InstantiatedVnfInfo.ScaleStatus) != 1 || in.InstantiatedVnfInfo.ScaleStatus[0].ScaleLevel != 2 {
		t.Fatalf("instantiated %+v; want flavour big at worker_aspect level 2", in.InstantiatedVnfInfo)
	}
}
