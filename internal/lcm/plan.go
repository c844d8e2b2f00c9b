package lcm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// plan lists an operation's steps: the management driver's *_start hook, the
// infra driver's work, the *_end hook. Step names are stable: the journal
// refers to them across restarts and versions.
func (r *run) plan(dop *driverapi.Op) ([]step, error) {
	var steps []step
	add := func(hook string) {
		if s, ok := r.mgmtStep(dop, hook); ok {
			steps = append(steps, s)
		}
	}
	infra := func() (driverapi.InfraDriver, error) {
		vimType := ""
		if dop.Vim != nil {
			vimType = dop.Vim.VimType
		}
		d, ok := r.e.svc.infra(vimType)
		if !ok {
			return nil, fmt.Errorf("no infra driver for VIM type %q; give a supported vimConnectionInfo", vimType)
		}
		return d, nil
	}
	switch dop.Operation {
	case model.OpInstantiate:
		d, err := infra()
		if err != nil {
			return nil, err
		}
		add(model.HookInstantiateStart)
		steps = append(steps, step{name: "infra.instantiate", do: d.Instantiate, undo: d.RollbackInstantiate})
		add(model.HookInstantiateEnd)
	case model.OpTerminate:
		d, err := infra()
		if err != nil {
			return nil, err
		}
		add(model.HookTerminateStart)
		steps = append(steps, step{name: "infra.terminate", do: d.Terminate})
		add(model.HookTerminateEnd)
	case model.OpScale:
		d, err := infra()
		if err != nil {
			return nil, err
		}
		add(model.HookScaleStart)
		steps = append(steps, step{name: "infra.scale", do: d.Scale, undo: d.RollbackScale})
		add(model.HookScaleEnd)
	case model.OpHeal:
		d, err := infra()
		if err != nil {
			return nil, err
		}
		add(model.HookHealStart)
		steps = append(steps, step{name: "infra.heal", do: d.Heal})
		add(model.HookHealEnd)
	case model.OpChangeExtConn:
		d, err := infra()
		if err != nil {
			return nil, err
		}
		add(model.HookChangeExtConnStart)
		steps = append(steps, step{name: "infra.change_ext_conn", do: d.ChangeExtConn})
		add(model.HookChangeExtConnEnd)
	case model.OpModifyInfo:
		add(model.HookModifyInformationStart)
		steps = append(steps, step{name: "lcm.modify_info", do: modifyInfo})
		add(model.HookModifyInformationEnd)
	default:
		return nil, fmt.Errorf("operation %s is not supported by this VNFM", dop.Operation)
	}
	return steps, nil
}

// prepare applies a request's immediate effects to a fresh working copy, so
// every step (and every resumed attempt) sees the same target state.
func prepare(dop *driverapi.Op) error {
	in := dop.Instance
	switch req := dop.Request.(type) {
	case *model.InstantiateVnfRequest:
		fl, ok := dop.Vnfd.Flavours[req.FlavourID]
		if !ok {
			return fmt.Errorf("flavour %q is not in VNFD %s", req.FlavourID, dop.Vnfd.ID)
		}
		if len(req.VimConnectionInfo) > 0 {
			in.VimConnectionInfo = req.VimConnectionInfo
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
	case *model.ScaleVnfRequest:
		info := in.InstantiatedVnfInfo
		if info == nil {
			return fmt.Errorf("VNF instance %s is not instantiated", in.ID)
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
	case *model.ChangeExtVnfConnectivityRequest:
		if len(req.VimConnectionInfo) > 0 {
			in.VimConnectionInfo = mergeVims(in.VimConnectionInfo, req.VimConnectionInfo)
		}
	}
	return nil
}

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

// finalize gives the instance its state after a completed operation.
func finalize(dop *driverapi.Op) *model.VnfInstance {
	in := dop.Instance
	switch dop.Operation {
	case model.OpInstantiate:
		in.InstantiationState = model.Instantiated
	case model.OpTerminate:
		in.InstantiationState = model.NotInstantiated
		in.InstantiatedVnfInfo = nil
	}
	return in
}

// modifyInfo applies a VnfInfoModificationRequest (JSON merge patch semantics
// for the key/value attributes) and records changedInfo.
func modifyInfo(_ context.Context, dop *driverapi.Op) error {
	req, ok := dop.Request.(*model.VnfInfoModificationRequest)
	if !ok {
		return fmt.Errorf("modify_info: unexpected request %T", dop.Request)
	}
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

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
