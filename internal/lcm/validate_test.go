package lcm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
)

// validatingMgmt is the fake management driver with a RequestValidator
// that refuses instantiations asking for it and heals naming a VDU "master" VNFC.
type validatingMgmt struct {
	*lcmtest.Mgmt
	seen []mgmtdrivers.Request
}

func (v *validatingMgmt) ValidateRequest(_ context.Context, r mgmtdrivers.Request) error {
	v.seen = append(v.seen, r)
	switch b := r.Body.(type) {
	case *model.InstantiateVnfRequest:
		if b.AdditionalParams["reject"] == true {
			return errors.New("k8s_cluster_installation_param.ansible is required")
		}
	case *model.HealVnfRequest:
		for _, c := range r.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
			for _, id := range b.VnfcInstanceID {
				if id == c.ID && c.VduID == "master" {
					return fmt.Errorf("healing control-plane VNFC %s is not supported", id)
				}
			}
		}
	}
	return nil
}

func TestDriversValidateRequests(t *testing.T) {
	w := newWorld(t)
	v := &validatingMgmt{Mgmt: w.mgmt}
	w.cfg.Mgmt = mgmtdrivers.NewRegistry(v)
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
	if len(v.seen) != 1 || v.seen[0].Operation != model.OpInstantiate || v.seen[0].Flavour == nil || v.seen[0].Instance.ID != id {
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
