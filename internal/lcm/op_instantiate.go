package lcm

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// INSTANTIATE: instantiate_start, infra.instantiate (undone by the infra
// driver's RollbackInstantiate), instantiate_end.
var opInstantiate = register(&operation{
	name: model.OpInstantiate, requireState: model.NotInstantiated, verb: "instantiated",
	start: model.HookInstantiateStart, end: model.HookInstantiateEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.InstantiateVnfRequest
		return driverapi.Request{Instantiate: &req}, decodeInto(raw, &req)
	},
	check: checkInstantiate,
	infra: func(d driverapi.InfraDriver) step {
		return step{name: "infra.instantiate", do: d.Instantiate, undo: d.RollbackInstantiate}
	},
	prepare:        prepareInstantiate,
	cannotRollBack: func(driverapi.Request) string { return "" },
	finish:         func(in *model.VnfInstance) { in.InstantiationState = model.Instantiated },
})

func checkInstantiate(ctx context.Context, s *Service, a *accepting) error {
	req, in, vnfd := a.Request.Instantiate, a.stored, a.Vnfd
	if in.InstantiationState == model.Instantiated {
		// Checked again atomically by the store; this early answer saves validation noise.
		return errorf(KindConflict, "VNF instance %s is already INSTANTIATED; terminate it before instantiating it again", in.ID)
	}
	fl, ok := vnfd.Flavours[req.FlavourID]
	if !ok {
		return errorf(KindInvalid, "flavourId %q is not a deployment flavour of VNFD %s; use one of: %s", req.FlavourID, vnfd.ID, flavourNames(vnfd))
	}
	a.Flavour = fl
	if req.InstantiationLevelID != "" {
		if _, ok := fl.InstantiationLevels[req.InstantiationLevelID]; !ok {
			return errorf(KindInvalid, "instantiationLevelId %q is not defined in flavour %q; use one of: %s",
				req.InstantiationLevelID, fl.ID, strings.Join(sortedKeys(fl.InstantiationLevels), ", "))
		}
	}
	if len(fl.ExtCPs) > 0 {
		for _, l := range req.ExtVirtualLinks {
			for _, cp := range l.ExtCps {
				if _, ok := fl.ExtCPs[cp.CpdID]; !ok {
					return errorf(KindInvalid, "extVirtualLinks %q: cpdId %q is not an external connection point of flavour %q; use one of: %s",
						l.ID, cp.CpdID, fl.ID, strings.Join(sortedKeys(fl.ExtCPs), ", "))
				}
			}
		}
	}
	if len(req.VimConnectionInfo) > 1 {
		return errorf(KindInvalid, "vimConnectionInfo: give at most one VIM connection")
	}
	// Resolve now to reject unknown VIMs and credentials a request may not
	// redirect. A run this process starts at once takes this resolution
	// (handed.vims); one that starts later (claimed, retried, resumed)
	// resolves again, so a VIM's current credentials are used.
	vims, err := s.vims.Resolve(ctx, req.VimConnectionInfo)
	if err != nil {
		return err
	}
	a.vims = vims
	if len(vims) > 0 {
		// Drivers validating the request see the VIM it will run on.
		a.Instance.VimConnectionInfo = vims
	}
	return nil
}

func prepareInstantiate(ctx context.Context, r *run, dop *driverapi.Op) error {
	req, in := dop.Request.Instantiate, dop.Instance
	fl, ok := dop.Vnfd.Flavours[req.FlavourID]
	if !ok {
		return errorf(KindInvalid, "flavour %q is not in VNFD %s; use one of: %s", req.FlavourID, dop.Vnfd.ID, strings.Join(slices.Sorted(maps.Keys(dop.Vnfd.Flavours)), ", "))
	}
	vims := r.vims
	if !r.vimsResolved {
		var err error
		if vims, err = r.e.svc.vims.Resolve(ctx, req.VimConnectionInfo); err != nil {
			return err
		}
	}
	if len(vims) > 0 {
		in.VimConnectionInfo = vims
	}
	info := &model.InstantiatedVnfInfo{FlavourID: fl.ID, VnfState: "STARTED", LocalizationLanguage: req.LocalizationLanguage}
	levelID := req.InstantiationLevelID
	if levelID == "" {
		levelID = fl.DefaultInstantiationLevel
	}
	var levels map[string]int
	if l := fl.InstantiationLevels[levelID]; l != nil {
		levels = l.ScaleLevels
	}
	for _, id := range sortedKeys(fl.ScalingAspects) {
		info.ScaleStatus = append(info.ScaleStatus, model.ScaleInfo{AspectID: id, ScaleLevel: levels[id]})
	}
	if len(req.AdditionalParams) > 0 {
		info.AdditionalParams = req.AdditionalParams
	}
	in.InstantiatedVnfInfo = info
	if len(req.Extensions) > 0 {
		if in.Extensions == nil {
			in.Extensions = map[string]any{}
		}
		maps.Copy(in.Extensions, req.Extensions)
	}
	return nil
}
