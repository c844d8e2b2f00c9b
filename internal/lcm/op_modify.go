package lcm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	prepare:        prepareModify,
	local:          &step{name: "lcm.modify_info", do: modifyInfo},
	cannotRollBack: func(driverapi.Request) string { return "" },
})

func checkModify(ctx context.Context, s *Service, a *accepting) error {
	req, in := a.Request.Modify, a.stored
	target, err := modifyTargetVnfd(ctx, s.st, req)
	if err != nil {
		return err
	}
	if target != "" && target != in.VnfdID {
		pkg, err := s.st.PackageByVnfdID(ctx, target)
		if errors.Is(err, store.ErrNotFound) {
			return errorf(KindInvalid, "vnfdId %s does not belong to an onboarded VNF package; onboard its package first, or give the vnfdId of one listed by GET /vnfpkgm/v1/vnf_packages", target)
		}
		if err != nil {
			return err
		}
		if pkg.OperationalState != model.Enabled {
			return errorf(KindInvalid, "VNF package %s with vnfdId %s is not ENABLED; enable it first (PATCH /vnfpkgm/v1/vnf_packages/%s with {\"operationalState\": \"ENABLED\"})", pkg.ID, target, pkg.ID)
		}
		if info := in.InstantiatedVnfInfo; info != nil && pkg.Vnfd != nil && pkg.Vnfd.Flavours[info.FlavourID] == nil {
			return errorf(KindInvalid, "VNFD %s has no deployment flavour %q, which VNF instance %s is instantiated with; pick a VNF package whose VNFD has it, or terminate the instance first",
				target, info.FlavourID, in.ID)
		}
	}
	return nil
}

// modifyTargetVnfd is the vnfdId a modification moves the instance to
// ("" when none): vnfdId, or the vnfdId of the package vnfPkgId names;
// both given must agree.
func modifyTargetVnfd(ctx context.Context, st *store.Store, req *model.VnfInfoModificationRequest) (string, error) {
	if req.VnfPkgID == "" {
		return req.VnfdID, nil
	}
	p, err := st.GetPackage(ctx, req.VnfPkgID)
	if errors.Is(err, store.ErrNotFound) {
		return "", errorf(KindInvalid, "vnfPkgId %s is not a VNF package; list them with GET /vnfpkgm/v1/vnf_packages", req.VnfPkgID)
	}
	if err != nil {
		return "", err
	}
	if p.VnfdID == "" {
		return "", errorf(KindInvalid, "VNF package %s is %s, not ONBOARDED: upload its content first (PUT /vnfpkgm/v1/vnf_packages/%s/package_content)", p.ID, p.OnboardingState, p.ID)
	}
	if req.VnfdID != "" && req.VnfdID != p.VnfdID {
		return "", errorf(KindInvalid, "vnfdId %s and vnfPkgId %s disagree: that package holds vnfdId %s; give one of them", req.VnfdID, req.VnfPkgID, p.VnfdID)
	}
	return p.VnfdID, nil
}

// scratchModifyTarget keeps, in the working copy, the package a
// modification moves the instance to, as read when the run began.
const scratchModifyTarget = "lcm.modify_target"

// modifyTarget is what the instance takes from its new package (SOL003:
// vnfProvider, vnfProductName, vnfSoftwareVersion and vnfdVersion follow
// vnfPkgId/vnfdId).
type modifyTarget struct {
	VnfPkgID, VnfdID, VnfProvider, VnfProductName, VnfSoftwareVersion, VnfdVersion string
}

func prepareModify(ctx context.Context, r *run, dop *driverapi.Op) error {
	target, err := modifyTargetVnfd(ctx, r.e.svc.st, dop.Request.Modify)
	if err != nil || target == "" || target == dop.Instance.VnfdID {
		return err
	}
	pkg, err := r.e.svc.st.PackageByVnfdID(ctx, target)
	if err != nil {
		return fmt.Errorf("VNF package of vnfdId %s: %w", target, err)
	}
	v := pkg.Vnfd
	b, err := json.Marshal(modifyTarget{VnfPkgID: pkg.ID, VnfdID: v.ID, VnfProvider: v.Provider, VnfProductName: v.ProductName,
		VnfSoftwareVersion: v.SoftwareVersion, VnfdVersion: v.Version})
	if err != nil {
		return err
	}
	dop.Scratch[scratchModifyTarget] = b
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
	if raw, ok := dop.Scratch[scratchModifyTarget]; ok {
		var t modifyTarget
		if err := json.Unmarshal(raw, &t); err != nil {
			return fmt.Errorf("the modification's target package is corrupt in the working copy: %w", err)
		}
		for _, f := range []struct {
			key      string
			cur      *string
			newValue string
		}{{"vnfdId", &in.VnfdID, t.VnfdID}, {"vnfPkgId", &in.VnfPkgID, t.VnfPkgID}, {"vnfProvider", &in.VnfProvider, t.VnfProvider},
			{"vnfProductName", &in.VnfProductName, t.VnfProductName}, {"vnfSoftwareVersion", &in.VnfSoftwareVersion, t.VnfSoftwareVersion},
			{"vnfdVersion", &in.VnfdVersion, t.VnfdVersion}} {
			if *f.cur != f.newValue {
				*f.cur = f.newValue
				changed[f.key] = f.newValue
			}
		}
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
