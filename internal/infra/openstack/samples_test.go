package openstack

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
)

type csarPackage struct{ p *vnfpkg.Package }

func (c csarPackage) ReadFile(_ context.Context, path string) ([]byte, error) {
	return c.p.ReadFile(path)
}

func (c csarPackage) Files(context.Context) ([]string, error) {
	var out []string
	for _, f := range c.p.Files() {
		out = append(out, f.Path)
	}
	return out, nil
}

// Every flavour of every sample package (samples/) instantiates, scales
// and terminates on the simulator with the parameters the driver builds
// from its VNFD and base HOT, or, for a flavour without one
// (kubeadm-tosca), from the template it generates from the VNFD.
func TestSamplePackages(t *testing.T) {
	for _, name := range vnfpkgtest.Samples {
		b := vnfpkgtest.CSAR(t, name)
		pkg, err := vnfpkg.Open(bytes.NewReader(b), int64(len(b)), vnfpkg.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vnfd := pkg.Summary()
		for _, fid := range slices.Sorted(maps.Keys(vnfd.Flavours)) {
			fl := vnfd.Flavours[fid]
			t.Run(name+"/"+fid, func(t *testing.T) { testSample(t, vnfd, fl, csarPackage{pkg}) })
		}
	}
}

func testSample(t *testing.T, vnfd *model.Vnfd, fl *model.Flavour, pkg driverapi.Package) {
	h := newHarness(t)
	var cps []model.VnfExtCpData
	ext := slices.Collect(maps.Keys(fl.ExtCPs))
	over := map[string]any{}
	for id, v := range fl.VDUs {
		for _, c := range v.CPs {
			if c.VirtualLink == "" && !slices.Contains(ext, c.ID) { // external in the request only (the seed's TOSCA VNFD)
				ext = append(ext, c.ID)
			}
		}
		if v.Flavor == "" || v.SwImage == nil { // the request names them (the seed's TOSCA VNFD)
			over[id] = map[string]any{"flavor": "m1.small", "image": "ubuntu-22.04"}
		}
	}
	slices.Sort(ext)
	for _, id := range ext {
		cps = append(cps, model.VnfExtCpData{CpdID: id})
	}
	req := &model.InstantiateVnfRequest{FlavourID: fl.ID,
		ExtVirtualLinks:  []model.ExtVirtualLinkData{{ID: "ext", ResourceID: netID, ExtCps: cps}},
		AdditionalParams: map[string]any{"node_password": "pw", "node_username": "k8s"}}
	if len(over) > 0 {
		req.AdditionalParams["nfv"] = map[string]any{"VDU": over}
	}
	levels := map[string]int{}
	if l := fl.InstantiationLevels[fl.DefaultInstantiationLevel]; l != nil {
		levels = l.ScaleLevels
	}
	in := &model.VnfInstance{ID: uuid.NewString(), VnfdID: vnfd.ID, VimConnectionInfo: []model.VimConnectionInfo{h.vim},
		InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: fl.ID, AdditionalParams: req.AdditionalParams}}
	for _, a := range slices.Sorted(maps.Keys(fl.ScalingAspects)) {
		in.InstantiatedVnfInfo.ScaleStatus = append(in.InstantiatedVnfInfo.ScaleStatus, model.ScaleInfo{AspectID: a, ScaleLevel: levels[a]})
	}
	newOp := func(operation string, req driverapi.Request) *driverapi.Op {
		return &driverapi.Op{ID: uuid.NewString(), Operation: operation, Instance: in, Vnfd: vnfd, Flavour: fl, Package: pkg,
			Vim: &in.VimConnectionInfo[0], Request: req, Previous: map[string]json.RawMessage{},
			Scratch: map[string]json.RawMessage{}, ResourceChanges: &model.ResourceChanges{}, Progress: (&journal{}).progress("x")}
	}
	op := newOp(model.OpInstantiate, driverapi.Request{Instantiate: req})
	if err := h.d.Instantiate(context.Background(), op); err != nil {
		t.Fatalf("instantiate: %v", err)
	}
	check := func(what string) {
		t.Helper()
		info := in.InstantiatedVnfInfo
		lv := levelsOf(info)
		count := map[string]int{}
		for _, v := range info.VnfcResourceInfo {
			count[v.VduID]++
			vdu := fl.VDUs[v.VduID]
			if vdu == nil {
				t.Errorf("%s: VNFC %s of unknown VDU %s", what, v.ID, v.VduID)
				continue
			}
			if len(v.VnfcCpInfo) != len(vdu.CPs) {
				t.Errorf("%s: VNFC %s has CPs %d, VDU %s has %d", what, v.ID, len(v.VnfcCpInfo), v.VduID, len(vdu.CPs))
			}
			for _, cp := range v.VnfcCpInfo {
				if !slices.ContainsFunc(vdu.CPs, func(c model.VduCP) bool { return c.ID == cp.CpdID }) {
					t.Errorf("%s: VNFC %s CP %s is not a CP of VDU %s", what, v.ID, cp.CpdID, v.VduID)
				}
			}
		}
		for id := range fl.VDUs {
			if want := fl.Instances(id, lv); count[id] != want {
				t.Errorf("%s: %d VNFCs of %s, want %d", what, count[id], id, want)
			}
		}
		if len(h.simServers()) != len(info.VnfcResourceInfo) {
			t.Errorf("%s: %d servers, %d VNFCs", what, len(h.simServers()), len(info.VnfcResourceInfo))
		}
		for id := range fl.VipCPs {
			if !slices.ContainsFunc(info.ExtCpInfo, func(e model.ExtCpInfo) bool { return e.CpdID == id }) {
				t.Errorf("%s: no extCpInfo for VIP %s", what, id)
			}
		}
		if len(info.VirtualLinkResourceInfo) != len(fl.VirtualLinks) {
			t.Errorf("%s: virtual links %+v, VNFD has %d", what, info.VirtualLinkResourceInfo, len(fl.VirtualLinks))
		}
	}
	check("instantiate")
	if len(fl.VirtualLinks) > 0 && len(op.ResourceChanges.AffectedVirtualLinks) != len(fl.VirtualLinks) {
		t.Errorf("affected virtual links %v", op.ResourceChanges.AffectedVirtualLinks)
	}
	for _, aspect := range slices.Sorted(maps.Keys(fl.ScalingAspects)) {
		a := fl.ScalingAspects[aspect]
		for _, typ := range []string{model.ScaleOut, model.ScaleIn} {
			if typ == model.ScaleOut && levels[aspect] >= a.MaxScaleLevel {
				continue
			}
			one := 1
			sreq := &model.ScaleVnfRequest{Type: typ, AspectID: aspect, NumberOfSteps: &one}
			op := newOp(model.OpScale, driverapi.Request{Scale: sreq})
			op.Previous["scaleStatus"], _ = json.Marshal(in.InstantiatedVnfInfo.ScaleStatus)
			for i := range in.InstantiatedVnfInfo.ScaleStatus {
				if s := &in.InstantiatedVnfInfo.ScaleStatus[i]; s.AspectID == aspect {
					if typ == model.ScaleOut {
						s.ScaleLevel++
					} else {
						s.ScaleLevel--
					}
				}
			}
			victims, err := h.d.ScaleInVictims(context.Background(), op)
			if err != nil {
				t.Fatal(err)
			}
			op.Victims = victims
			if err := h.d.Scale(context.Background(), op); err != nil {
				t.Fatalf("%s %s: %v", typ, aspect, err)
			}
			check(typ + " " + aspect)
			if typ == model.ScaleIn && (len(victims) == 0 || slices.ContainsFunc(in.InstantiatedVnfInfo.VnfcResourceInfo, func(v model.VnfcResourceInfo) bool { return slices.Contains(victims, v.ID) })) {
				t.Errorf("scale in %s: victims %v", aspect, victims)
			}
		}
	}
	if err := h.d.Terminate(context.Background(), newOp(model.OpTerminate, driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}})); err != nil {
		t.Fatal(err)
	}
	if len(h.simServers()) != 0 || len(h.stacksNamed(StackName(in.ID))) != 0 {
		t.Error("terminate left resources")
	}
}
