package openstack

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
)

func samplePackage(t *testing.T, name string) (*model.Vnfd, csarPackage) {
	t.Helper()
	b := vnfpkgtest.CSAR(t, name)
	pkg, err := vnfpkg.Open(bytes.NewReader(b), int64(len(b)), vnfpkg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pkg.Summary(), csarPackage{pkg}
}

// seedRequest is the seed's TOSCA VNFD's instantiate request: images and
// flavors in additionalParams, the external CPs on the simulator's network.
func seedRequest() *model.InstantiateVnfRequest {
	img := map[string]any{"flavor": "m1.small", "image": "ubuntu-22.04"}
	return &model.InstantiateVnfRequest{FlavourID: "cluster_install",
		ExtVirtualLinks: []model.ExtVirtualLinkData{{ID: "ext", ResourceID: netID, ExtCps: []model.VnfExtCpData{
			{CpdID: "masterNodeExternalCP"}, {CpdID: "workerNodeExternalCP"}}}},
		AdditionalParams: map[string]any{"node_password": "pw", "nfv": map[string]any{"VDU": map[string]any{"masterNode": img, "workerNode": img}}}}
}

// At the API: a flavour without a base HOT whose template cannot be
// generated is refused naming the nodes; user data classes are checked.
func TestCheckRequestGeneratedAndUserData(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	vnfd, pkg := samplePackage(t, "kubeadm-tosca")
	fl := vnfd.Flavours["cluster_install"]
	accept := func(req *model.InstantiateVnfRequest, v *model.Vnfd, p driverapi.Package, f *model.Flavour) error {
		return d.CheckRequest(ctx, &driverapi.Accept{Operation: model.OpInstantiate, Request: driverapi.Request{Instantiate: req},
			Instance: &model.VnfInstance{ID: "i"}, Vnfd: v, Flavour: f, Package: p})
	}
	if err := accept(seedRequest(), vnfd, pkg, fl); err != nil {
		t.Fatalf("the seed's request: %v", err)
	}
	bare := &model.InstantiateVnfRequest{FlavourID: "cluster_install"}
	err := accept(bare, vnfd, pkg, fl)
	for _, want := range []string{"masterNode: has no compute flavour", "workerNode: has no image", "masterNodeExternalCP: the VduCp of masterNode has no virtual_link"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("no image, no flavour, no network: %v, want %q", err, want)
		}
	}

	kvnfd, kpkg := samplePackage(t, "kubeadm-kuryr")
	kfl := kvnfd.Flavours["simple"]
	ud := func(class string, path any) *model.InstantiateVnfRequest {
		return &model.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: map[string]any{"lcm-operation-user-data": path, "lcm-operation-user-data-class": class}}
	}
	if err := accept(ud("BaseUserData", "UserData/base_user_data.py"), kvnfd, kpkg, kfl); err != nil {
		t.Errorf("BaseUserData: %v", err)
	}
	if err := accept(ud("BaseUserData", "./UserData/base_user_data.py"), kvnfd, kpkg, kfl); err != nil {
		t.Errorf("BaseUserData, ./ path: %v", err)
	}
	err = accept(ud("MyUserData", "UserData/base_user_data.py"), kvnfd, kpkg, kfl)
	if err == nil || !strings.Contains(err.Error(), `"MyUserData" is not a supported user-data class; supported (built-in Go equivalents, the package's Python is never run): BaseUserData, KubernetesClusterUserData, SampleUserData, StandardUserData`) {
		t.Errorf("unknown class: %v", err)
	}
	if err := accept(ud("BaseUserData", "UserData/nope.py"), kvnfd, kpkg, kfl); err == nil || !strings.Contains(err.Error(), "is not in the VNF package") {
		t.Errorf("missing file: %v", err)
	}
}

// A flavour without a base HOT: instantiate generates the template and
// shows it in the operation's progress; an entire heal re-creates the stack
// from the template Heat held.
func TestGeneratedLifecycle(t *testing.T) {
	h := newHarness(t)
	vnfd, pkg := samplePackage(t, "kubeadm-tosca")
	fl := vnfd.Flavours["cluster_install"]
	req := seedRequest()
	in := &model.VnfInstance{ID: uuid.NewString(), VnfdID: vnfd.ID, VimConnectionInfo: []model.VimConnectionInfo{h.vim},
		InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: fl.ID, AdditionalParams: req.AdditionalParams,
			ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 0}}}}
	j := &journal{}
	newOp := func(operation string, r driverapi.Request) *driverapi.Op {
		return &driverapi.Op{ID: uuid.NewString(), Operation: operation, Instance: in, Vnfd: vnfd, Flavour: fl, Package: pkg,
			Vim: &in.VimConnectionInfo[0], Request: r, Previous: map[string]json.RawMessage{},
			Scratch: map[string]json.RawMessage{}, ResourceChanges: &model.ResourceChanges{}, Progress: j.progress(operation)}
	}
	if err := h.d.Instantiate(context.Background(), newOp(model.OpInstantiate, driverapi.Request{Instantiate: req})); err != nil {
		t.Fatal(err)
	}
	raw, ok := j.progress(model.OpInstantiate).NodeCompleted(nodeTemplate)
	if !ok {
		t.Fatal("no generated template in the progress")
	}
	var rec generatedTemplate
	if err := json.Unmarshal(raw, &rec); err != nil || !rec.Generated || len(rec.Digest) != 64 || !strings.Contains(rec.Top, "OS::Heat::AutoScalingGroup") ||
		rec.Files["masterNode.yaml"] == "" || strings.Contains(rec.Top, "pw") {
		t.Fatalf("progress record %+v %v", rec, err)
	}
	before := map[string]bool{}
	for _, v := range in.InstantiatedVnfInfo.VnfcResourceInfo {
		before[v.ComputeResource.ResourceID] = true
	}
	if len(before) != 2 {
		t.Fatalf("VNFCs %+v", in.InstantiatedVnfInfo.VnfcResourceInfo)
	}
	if err := h.d.Heal(context.Background(), newOp(model.OpHeal, driverapi.Request{Heal: &model.HealVnfRequest{}})); err != nil {
		t.Fatal(err)
	}
	after := in.InstantiatedVnfInfo.VnfcResourceInfo
	if len(after) != 2 {
		t.Fatalf("after the entire heal: %+v", after)
	}
	for _, v := range after {
		if before[v.ComputeResource.ResourceID] {
			t.Errorf("server %s survived the entire heal", v.ComputeResource.ResourceID)
		}
		if len(v.VnfcCpInfo) != 2 {
			t.Errorf("VNFC %s CPs %+v", v.ID, v.VnfcCpInfo)
		}
	}
	if len(in.InstantiatedVnfInfo.VirtualLinkResourceInfo) != 1 || in.InstantiatedVnfInfo.VirtualLinkResourceInfo[0].VnfVirtualLinkDescID != "internalVL" {
		t.Errorf("virtual links after the heal %+v", in.InstantiatedVnfInfo.VirtualLinkResourceInfo)
	}
}
