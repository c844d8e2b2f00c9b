package lcm

import (
	"context"
	"slices"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// HEAL: heal_start, infra.heal, heal_end. Not rolled back (a healed VNFC has
// no previous state to return to).
var opHeal = register(&operation{
	name: model.OpHeal, requireState: model.Instantiated, verb: "healed",
	start: model.HookHealStart, end: model.HookHealEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.HealVnfRequest
		return driverapi.Request{Heal: &req}, decodeInto(raw, &req)
	},
	check: func(_ context.Context, _ *Service, a *accepting) error {
		in := a.stored
		if a.Flavour == nil {
			return errorf(KindConflict, "VNF instance %s is NOT_INSTANTIATED and cannot be healed; instantiate it first", in.ID)
		}
		for _, c := range a.Request.Heal.VnfcInstanceID {
			if !slices.ContainsFunc(in.InstantiatedVnfInfo.VnfcResourceInfo, func(r model.VnfcResourceInfo) bool { return r.ID == c }) {
				return errorf(KindInvalid, "vnfcInstanceId %q is not a VNFC of VNF instance %s; see instantiatedVnfInfo.vnfcResourceInfo[].id", c, in.ID)
			}
		}
		return nil
	},
	infra: func(d driverapi.InfraDriver) step { return step{name: "infra.heal", do: d.Heal} },
	cannotRollBack: func(driverapi.Request) string {
		return "healed VNFCs are replaced, there is no previous state to return to"
	},
})
