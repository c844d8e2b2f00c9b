package lcm

import (
	"context"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// CHANGE_EXT_CONN: change_external_connectivity_start, infra.change_ext_conn,
// change_external_connectivity_end.
var opChangeExtConn = register(&operation{
	name: model.OpChangeExtConn, requireState: model.Instantiated, verb: "reconnected (change_ext_conn)",
	start: model.HookChangeExtConnStart, end: model.HookChangeExtConnEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.ChangeExtVnfConnectivityRequest
		return driverapi.Request{ChangeExtConn: &req}, decodeInto(raw, &req)
	},
	validate: func(r driverapi.Request) error {
		if len(r.ChangeExtConn.ExtVirtualLinks) == 0 {
			return errorf(KindInvalid, `request body: "extVirtualLinks" must list at least one external virtual link`)
		}
		return nil
	},
	infra: func(d driverapi.InfraDriver) step { return step{name: "infra.change_ext_conn", do: d.ChangeExtConn} },
	prepare: func(_ context.Context, _ *run, dop *driverapi.Op) error {
		if req := dop.Request.ChangeExtConn; len(req.VimConnectionInfo) > 0 {
			dop.Instance.VimConnectionInfo = mergeVims(dop.Instance.VimConnectionInfo, req.VimConnectionInfo)
		}
		return nil
	},
	cannotRollBack: func(driverapi.Request) string { return "" },
})

// mergeVims replaces the entries of have with the ids of add and appends the others.
func mergeVims(have, add []model.VimConnectionInfo) []model.VimConnectionInfo {
	out := append([]model.VimConnectionInfo(nil), have...)
	for _, a := range add {
		replaced := false
		for i := range out {
			if out[i].ID == a.ID {
				out[i], replaced = a, true
			}
		}
		if !replaced {
			out = append(out, a)
		}
	}
	return out
}
