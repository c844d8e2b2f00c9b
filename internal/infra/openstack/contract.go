package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// heatTemplate reads a flavour's Heat base template (BaseHOT/<flavourId>/)
// from the package: the top template and the nested files keyed as the
// templates reference them.
func heatTemplate(ctx context.Context, pkg driverapi.Package, fl *model.Flavour) ([]byte, map[string]string, error) {
	if fl.HOT == nil || fl.HOT.Top == "" {
		return nil, nil, fmt.Errorf("flavour %q has no Heat template (BaseHOT/%s/)", fl.ID, fl.ID)
	}
	top, err := pkg.ReadFile(ctx, fl.HOT.Top)
	if err != nil {
		return nil, nil, err
	}
	files := map[string]string{}
	for k, path := range fl.HOT.Files {
		b, err := pkg.ReadFile(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		files[k] = string(b)
	}
	return top, files, nil
}

// ComputeResources implements driverapi.Infra: the servers of the stack as
// vnfcResourceInfo records them, with what discovery put in their metadata
// (scaling group, creation time, server name, floating IPs, host key
// fingerprints from the console log).
func (d *Driver) ComputeResources(info *model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	out := driverapi.BaseComputeResources(info)
	for i, v := range info.VnfcResourceInfo {
		r := &out[i]
		r.Group, _ = v.Metadata[MetaScaleGroup].(string)
		r.Name, _ = v.Metadata[MetaServerName].(string)
		if s, _ := v.Metadata[MetaCreationTime].(string); s != "" {
			r.Created, _ = time.Parse(time.RFC3339, s)
		}
		r.HostKeyFingerprints = strList(v.Metadata[MetaFingerprints])
		for j, cp := range v.VnfcCpInfo {
			if j < len(r.CPs) {
				r.CPs[j].FloatingAddress, _ = cp.Metadata[MetaFloatingIP].(string)
			}
		}
	}
	return out
}

// CheckRequest implements driverapi.InfraDriver: it refuses what cannot
// work before anything is created or deleted — a flavour without a Heat
// template, an aspect the template cannot scale, scale-in victims that do
// not fit (additionalParams.vnfcInstanceIds, is_reverse).
func (d *Driver) CheckRequest(ctx context.Context, a *driverapi.Accept) error {
	fl := a.Flavour
	if fl == nil {
		return nil
	}
	needTemplate := a.Request.Instantiate != nil || a.Request.Scale != nil
	if !needTemplate {
		return nil
	}
	if err := checkUserData(ctx, a); err != nil {
		return err
	}
	var lay *layout
	if fl.HOT == nil {
		// No base HOT: the template is generated from the VNFD.
		if err := checkGenerated(a); err != nil {
			return err
		}
		lay = generatedLayout(fl)
	} else {
		if a.Package == nil {
			return errors.New("the VNF package cannot be read")
		}
		tmpl, files, err := heatTemplate(ctx, a.Package, fl)
		if err != nil {
			return fmt.Errorf("the OpenStack infra driver deploys a flavour from its Heat base template: %w", err)
		}
		if lay, err = analyze(tmpl, files, fl); err != nil {
			return err
		}
	}
	if req := a.Request.Scale; req != nil {
		if err := lay.canScale(fl, req.AspectID); err != nil {
			return err
		}
		if req.Type == model.ScaleIn {
			// The victims as the engine will choose them, from the instance
			// at the target level.
			in := *a.Instance
			info := *in.InstantiatedVnfInfo
			info.ScaleStatus = slices.Clone(info.ScaleStatus)
			for i := range info.ScaleStatus {
				if info.ScaleStatus[i].AspectID == req.AspectID {
					info.ScaleStatus[i].ScaleLevel -= req.Steps()
				}
			}
			in.InstantiatedVnfInfo = &info
			if _, err := chooseVictims(&in, fl, req); err != nil {
				return err
			}
		} else if _, ok := req.AdditionalParams[ParamVnfcInstanceIDs]; ok {
			return fmt.Errorf("additionalParams.%s names the VNFCs a SCALE_IN removes; a SCALE_OUT takes none", ParamVnfcInstanceIDs)
		}
	}
	return nil
}
