package lcm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// SCALE: scale_start, infra.scale (undone by RollbackScale to the previous
// scale levels), scale_end. The infra driver chooses a SCALE_IN's victims
// before the first step (Op.Victims); a scale-in is not rolled back.
var opScale = register(&operation{
	name: model.OpScale, requireState: model.Instantiated, verb: "scaled",
	start: model.HookScaleStart, end: model.HookScaleEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.ScaleVnfRequest
		return driverapi.Request{Scale: &req}, decodeInto(raw, &req)
	},
	validate: func(r driverapi.Request) error {
		req := r.Scale
		if req.Type != model.ScaleOut && req.Type != model.ScaleIn {
			return errorf(KindInvalid, `request body: "type" must be SCALE_OUT or SCALE_IN`)
		}
		if req.Steps() < 1 {
			return errorf(KindInvalid, `request body: "numberOfSteps" must be a positive integer`)
		}
		return nil
	},
	check: checkScale,
	infra: func(d driverapi.InfraDriver) step {
		return step{name: "infra.scale", do: d.Scale, undo: d.RollbackScale}
	},
	prepare: prepareScale,
	cannotRollBack: func(r driverapi.Request) string {
		if r.ScaleIn() {
			return "removed VNFCs cannot be restored"
		}
		return ""
	},
})

func checkScale(_ context.Context, _ *Service, a *accepting) error {
	req, in, fl := a.Request.Scale, a.stored, a.Flavour
	if fl == nil {
		return errorf(KindConflict, "VNF instance %s is NOT_INSTANTIATED and cannot be scaled; instantiate it first", in.ID)
	}
	asp, ok := fl.ScalingAspects[req.AspectID]
	if !ok {
		return errorf(KindInvalid, "aspectId %q is not a scaling aspect of flavour %q; use one of: %s", req.AspectID, fl.ID, strings.Join(sortedKeys(fl.ScalingAspects), ", "))
	}
	level := 0
	for _, st := range in.InstantiatedVnfInfo.ScaleStatus {
		if st.AspectID == req.AspectID {
			level = st.ScaleLevel
		}
	}
	switch {
	case req.Type == model.ScaleOut && level+req.Steps() > asp.MaxScaleLevel:
		room := "it cannot be scaled out further"
		if n := asp.MaxScaleLevel - level; n > 0 {
			room = fmt.Sprintf("scale it out by at most %d step(s)", n)
		}
		return errorf(KindInvalid, "cannot scale out aspect %q by %d step(s): it is at level %d of at most %d (the VNFD's max_scale_level); %s",
			req.AspectID, req.Steps(), level, asp.MaxScaleLevel, room)
	case req.Type == model.ScaleIn && level-req.Steps() < 0:
		room := "it is at its lowest level and cannot be scaled in"
		if level > 0 {
			room = fmt.Sprintf("scale it in by at most %d step(s)", level)
		}
		return errorf(KindInvalid, "cannot scale in aspect %q by %d step(s): it is at level %d; %s", req.AspectID, req.Steps(), level, room)
	}
	return nil
}

// prepareScale sets the aspect's target level (the previous levels kept for
// a rollback) and lets the infra driver choose a SCALE_IN's victims.
func prepareScale(ctx context.Context, r *run, dop *driverapi.Op) error {
	req, info := dop.Request.Scale, dop.Instance.InstantiatedVnfInfo
	if info == nil {
		return fmt.Errorf("VNF instance %s is not instantiated", dop.Instance.ID)
	}
	prev, _ := json.Marshal(info.ScaleStatus)
	dop.Previous["scaleStatus"] = prev
	delta := req.Steps()
	if req.Type == model.ScaleIn {
		delta = -delta
	}
	found := false
	for i := range info.ScaleStatus {
		if info.ScaleStatus[i].AspectID == req.AspectID {
			info.ScaleStatus[i].ScaleLevel += delta
			found = true
		}
	}
	if !found {
		info.ScaleStatus = append(info.ScaleStatus, model.ScaleInfo{AspectID: req.AspectID, ScaleLevel: max(delta, 0)})
	}
	if req.Type != model.ScaleIn {
		return nil
	}
	d, err := r.infraDriver(dop)
	if err != nil {
		return err
	}
	victims, err := d.ScaleInVictims(ctx, dop)
	if err != nil {
		return fmt.Errorf("choosing the VNFCs to scale in: %w", err)
	}
	dop.Victims = victims
	return nil
}
