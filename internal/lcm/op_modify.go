package lcm

import (
	"context"
	"errors"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// MODIFY_INFO (PATCH of an instance): modify_information_start, the engine's
// own lcm.modify_info step, modify_information_end.
var opModify = register(&operation{
	name: model.OpModifyInfo, verb: "modified",
	start: model.HookModifyInformationStart, end: model.HookModifyInformationEnd,
	decode: func(raw []byte) (driverapi.Request, error) {
		var req model.VnfInfoModificationRequest
		return driverapi.Request{Modify: &req}, decodeInto(raw, &req)
	},
	check:          checkModify,
	local:          &step{name: "lcm.modify_info", do: modifyInfo},
	cannotRollBack: func(driverapi.Request) string { return "" },
})

func checkModify(ctx context.Context, s *Service, a *accepting) error {
	req, in := a.Request.Modify, a.stored
	target := req.VnfdID
	if target == "" && req.VnfPkgID != "" {
		return errorf(KindInvalid, "changing vnfPkgId is not supported; give the target vnfdId instead")
	}
	if target != "" && target != in.VnfdID {
		pkg, err := s.st.PackageByVnfdID(ctx, target)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(KindInvalid, "vnfdId %s does not belong to an onboarded VNF package", target)
		}
		if err != nil {
			return err
		}
		if pkg.OperationalState != model.Enabled {
			return errorf(KindInvalid, "VNF package %s with vnfdId %s is not ENABLED", pkg.ID, target)
		}
	}
	return nil
}

// modifyInfo applies a VnfInfoModificationRequest (JSON merge patch semantics
// for the key/value attributes) and records changedInfo.
func modifyInfo(_ context.Context, dop *driverapi.Op) error {
	req := dop.Request.Modify
	in := dop.Instance
	changed := map[string]any{}
	if req.VnfInstanceName != nil {
		in.VnfInstanceName = *req.VnfInstanceName
		changed["vnfInstanceName"] = in.VnfInstanceName
	}
	if req.VnfInstanceDescription != nil {
		in.VnfInstanceDescription = *req.VnfInstanceDescription
		changed["vnfInstanceDescription"] = in.VnfInstanceDescription
	}
	if req.VnfdID != "" && req.VnfdID != in.VnfdID {
		in.VnfdID = req.VnfdID
		changed["vnfdId"] = req.VnfdID
	}
	if req.VnfConfigurableProperties != nil {
		in.VnfConfigurableProperties = store.MergePatch(in.VnfConfigurableProperties, req.VnfConfigurableProperties)
		changed["vnfConfigurableProperties"] = req.VnfConfigurableProperties
	}
	if req.Metadata != nil {
		in.Metadata = store.MergePatch(in.Metadata, req.Metadata)
		changed["metadata"] = req.Metadata
	}
	if req.Extensions != nil {
		in.Extensions = store.MergePatch(in.Extensions, req.Extensions)
		changed["extensions"] = req.Extensions
	}
	if len(req.VimConnectionInfo) > 0 {
		in.VimConnectionInfo = mergeVims(in.VimConnectionInfo, req.VimConnectionInfo)
		changed["vimConnectionInfo"] = req.VimConnectionInfo
	}
	dop.ChangedInfo = changed
	return nil
}
