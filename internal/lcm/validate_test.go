package lcm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
)

// validatingMgmt is the fake management driver whose ParseParams refuses
// instantiations asking for it and heals naming a VDU "master" VNFC.
type validatingMgmt struct {
	*lcmtest.Mgmt
	seen []*driverapi.Accept
}

func (v *validatingMgmt) ParseParams(ctx context.Context, a *driverapi.Accept, stored *lcmtest.MgmtParams) (*lcmtest.MgmtParams, error) {
	v.seen = append(v.seen, a)
	switch {
	case a.Request.Instantiate != nil:
		if a.Request.Instantiate.AdditionalParams["reject"] == true {
			return nil, errors.New("k8s_cluster_installation_param.ansible is required")
		}
	case a.Request.Heal != nil:
		for _, c := range a.ComputeResources() {
			if c.VduID == "master" && slices.Contains(a.Request.Heal.VnfcInstanceID, c.VnfcID) {
				return nil, fmt.Errorf("healing control-plane VNFC %s is not supported", c.VnfcID)
			}
		}
	}
	return v.Mgmt.ParseParams(ctx, a, stored)
}

func TestDriversValidateRequests(t *testing.T) {
	w := newWorld(t)
	v := &validatingMgmt{Mgmt: w.mgmt}
	w.cfg.Mgmt = mgmtdrivers.NewRegistry(mgmtdrivers.New[lcmtest.MgmtParams](v))
	w.svc = lcm.NewService(w.cfg)
	w.engine(2*time.Second, nil)
	ctx := context.Background()
	id := w.instance()

	// A refused instantiation creates no operation: 422 with the reason.
	_, err := w.svc.Instantiate(ctx, id, []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"vim1","vimType":"`+lcmtest.VimType+`"}],
		"additionalParams":{"reject":true}}`))
	var le *lcm.Error
	if !errors.As(err, &le) || le.Kind != lcm.KindUnprocessable || le.Detail != "management driver "+lcmtest.MgmtDriverName+": k8s_cluster_installation_param.ansible is required" {
		t.Fatalf("refused instantiate: %#v", err)
	}
	if ops, _, _ := w.svc.ListOpOccs(ctx, store.Page{Limit: 10}); len(ops) != 0 {
		t.Fatalf("a refused request created %d operation(s)", len(ops))
	}
	if len(v.seen) != 1 || v.seen[0].Operation != model.OpInstantiate || v.seen[0].Flavour == nil || v.seen[0].Instance.ID != id || v.seen[0].Infra == nil {
		t.Errorf("validator saw %+v (once per driver, not per hook)", v.seen)
	}

	op, err := w.svc.Instantiate(ctx, id, instantiateBody(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	w.wait(op.ID, model.StateCompleted)
	in := w.mustInst(id)
	var master, worker string
	for _, c := range in.InstantiatedVnfInfo.VnfcResourceInfo {
		switch c.VduID {
		case "master":
			master = c.ID
		case "worker":
			worker = c.ID
		}
	}
	_, err = w.svc.Heal(ctx, id, []byte(`{"vnfcInstanceId":["`+master+`"]}`))
	if !errors.As(err, &le) || le.Kind != lcm.KindUnprocessable || !strings.Contains(le.Detail, "healing control-plane VNFC "+master) {
		t.Fatalf("heal of the master: %v", err)
	}
	if after := w.mustInst(id); after.Version != in.Version {
		t.Error("the refused heal changed the instance")
	}
	op, err = w.svc.Heal(ctx, id, []byte(`{"vnfcInstanceId":["`+worker+`"]}`))
	if err != nil {
		t.Fatalf("heal of a worker: %v", err)
	}
	w.wait(op.ID, model.StateCompleted)
}
