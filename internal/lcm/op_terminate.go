package lcm

import (
	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// TERMINATE: terminate_start, infra.terminate, terminate_end. Not rolled back.
var opTerminate = register(&operation{
	name: model.OpTerminate, requireState: model.Instantiated, verb: "terminated",
	start: model.HookTerminateStart, end: model.HookTerminateEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.TerminateVnfRequest
		return driverapi.Request{Terminate: &req}, decodeInto(raw, &req)
	},
	validate: func(req driverapi.Request) error {
		if t := req.Terminate.TerminationType; t != "FORCEFUL" && t != "GRACEFUL" {
			return errorf(KindInvalid, `request body: "terminationType" must be FORCEFUL or GRACEFUL`)
		}
		return nil
	},
	infra: func(d driverapi.InfraDriver) step { return step{name: "infra.terminate", do: d.Terminate} },
	cannotRollBack: func(driverapi.Request) string {
		return "terminated resources cannot be restored"
	},
	finish: func(in *model.VnfInstance) {
		in.InstantiationState = model.NotInstantiated
		in.InstantiatedVnfInfo = nil
	},
})
