package vnfpkg

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// sampleCSAR builds samples/<name> in memory the way make-samples.sh does.
func sampleCSAR(t *testing.T, name string) []byte {
	t.Helper()
	b, err := BuildCSAR(os.DirFS("../../samples/" + name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSamples(t *testing.T) {
	allHooks := map[string]string{}
	for _, h := range []string{model.HookInstantiateEnd, model.HookTerminateEnd, model.HookScaleStart, model.HookScaleEnd, model.HookHealStart, model.HookHealEnd} {
		allHooks[h] = "kubeadm"
	}
	// The kubeadm samples also validate their parameters before the VMs are made.
	singleHooks := map[string]string{model.HookInstantiateStart: "kubeadm"}
	for h, d := range allHooks {
		singleHooks[h] = d
	}
	spray := map[string]string{}
	for h := range allHooks {
		spray[h] = "kubespray"
	}
	type vduWant struct {
		min, max, initial int
		flavor            string
		cps               []string
	}
	for _, c := range []struct {
		name, vnfdID, flavour string
		hooks                 map[string]string
		vdus                  map[string]vduWant
		aspect                string
		maxLevel              int
		levels                map[string]int // level → worker_instance scale level
		extCPs                []string
		vips                  map[string][]string
		vls                   []string
		hot                   model.HOT
	}{
		{name: "kubeadm-single", vnfdID: "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b21", flavour: "simple", hooks: singleHooks,
			vdus: map[string]vduWant{
				"masterNode": {1, 1, 1, "m1.medium", []string{"masterNode_CP1"}},
				"workerNode": {2, 5, 2, "m1.medium", []string{"workerNode_CP1"}},
			},
			aspect: "worker_instance", maxLevel: 3, levels: map[string]int{"instantiation_level_1": 0, "instantiation_level_2": 3},
			extCPs: []string{"masterNode_CP1", "workerNode_CP1"},
			hot: model.HOT{Top: "BaseHOT/simple/kubeadm_single_top.hot.yaml",
				Nested: []string{"BaseHOT/simple/nested/masterNode.yaml", "BaseHOT/simple/nested/workerNode.yaml"},
				Files:  map[string]string{"masterNode.yaml": "BaseHOT/simple/nested/masterNode.yaml", "workerNode.yaml": "BaseHOT/simple/nested/workerNode.yaml"}}},
		{name: "kubeadm-ha", vnfdID: "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b22", flavour: "ha", hooks: singleHooks,
			vdus: map[string]vduWant{
				"masterNode": {3, 3, 3, "m1.medium", []string{"masterNode_CP1"}},
				"workerNode": {2, 5, 2, "m1.medium", []string{"workerNode_CP1"}},
			},
			aspect: "worker_instance", maxLevel: 3, levels: map[string]int{"instantiation_level_1": 0, "instantiation_level_2": 3},
			extCPs: []string{"masterNode_CP1", "vip_CP", "workerNode_CP1"},
			vips:   map[string][]string{"vip_CP": {"masterNode_CP1"}},
			hot: model.HOT{Top: "BaseHOT/ha/kubeadm_ha_top.hot.yaml",
				Nested: []string{"BaseHOT/ha/nested/masterNode.yaml", "BaseHOT/ha/nested/workerNode.yaml"},
				Files:  map[string]string{"masterNode.yaml": "BaseHOT/ha/nested/masterNode.yaml", "workerNode.yaml": "BaseHOT/ha/nested/workerNode.yaml"}}},
		{name: "kubespray", vnfdID: "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b23", flavour: "simple", hooks: spray,
			vdus: map[string]vduWant{
				"masterNode": {3, 3, 3, "m1.medium", []string{"masterNode_CP1", "masterNode_CP2"}},
				"workerNode": {2, 4, 2, "m1.medium", []string{"workerNode_CP1", "workerNode_CP2"}},
				"externalLB": {1, 1, 1, "m1.small", []string{"externalLB_CP1", "externalLB_CP2"}},
			},
			aspect: "worker_instance", maxLevel: 2, levels: map[string]int{"instantiation_level_1": 0, "instantiation_level_2": 2},
			extCPs: []string{"externalLB_CP1", "masterNode_CP1", "workerNode_CP1"},
			vls:    []string{"internalVL"},
			hot: model.HOT{Top: "BaseHOT/simple/kubespray_top.hot.yaml",
				Nested: []string{"BaseHOT/simple/nested/masterNode.yaml", "BaseHOT/simple/nested/workerNode.yaml"},
				Files:  map[string]string{"masterNode.yaml": "BaseHOT/simple/nested/masterNode.yaml", "workerNode.yaml": "BaseHOT/simple/nested/workerNode.yaml"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := sampleCSAR(t, c.name)
			if b2 := sampleCSAR(t, c.name); !bytes.Equal(b, b2) {
				t.Error("BuildCSAR is not deterministic")
			}
			p := mustOpen(t, b)
			if w := p.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %q", w)
			}
			v := p.Summary()
			if v.ID != c.vnfdID || v.Provider != "mini-VNFM" || v.Version != "1.0" || v.ProductName == "" || v.SoftwareVersion == "" {
				t.Errorf("descriptor = %+v", v)
			}
			if len(v.Flavours) != 1 || v.Flavours[c.flavour] == nil {
				t.Fatalf("flavours = %v", v.Flavours)
			}
			fl := v.Flavours[c.flavour]
			if !reflect.DeepEqual(fl.Interfaces, c.hooks) {
				t.Errorf("interfaces = %v, want %v", fl.Interfaces, c.hooks)
			}
			if len(fl.VDUs) != len(c.vdus) {
				t.Errorf("VDUs = %v", fl.VDUs)
			}
			for id, w := range c.vdus {
				vdu := fl.VDUs[id]
				if vdu == nil {
					t.Errorf("no VDU %s", id)
					continue
				}
				var cps []string
				for i, cp := range vdu.CPs {
					cps = append(cps, cp.ID)
					if cp.Order == nil || *cp.Order != i {
						t.Errorf("%s CP %s order %v", id, cp.ID, cp.Order)
					}
				}
				if vdu.MinInstances != w.min || vdu.MaxInstances != w.max || vdu.InitialInstances != w.initial || vdu.Flavor != w.flavor ||
					!slices.Equal(cps, w.cps) || vdu.SwImage == nil || vdu.SwImage.Name != "ubuntu-22.04-server-cloudimg-amd64" {
					t.Errorf("VDU %s = %+v, want %+v", id, vdu, w)
				}
			}
			a := fl.ScalingAspects[c.aspect]
			if len(fl.ScalingAspects) != 1 || a == nil || a.MaxScaleLevel != c.maxLevel || !reflect.DeepEqual(a.VduDeltas, map[string]map[string]int{"workerNode": {"delta_1": 1}}) {
				t.Errorf("aspects = %+v", fl.ScalingAspects)
			}
			if fl.DefaultInstantiationLevel != "instantiation_level_1" || len(fl.InstantiationLevels) != len(c.levels) {
				t.Errorf("levels = %v default %q", fl.InstantiationLevels, fl.DefaultInstantiationLevel)
			}
			for lid, lvl := range c.levels {
				il := fl.InstantiationLevels[lid]
				if il == nil || il.ScaleLevels[c.aspect] != lvl {
					t.Errorf("level %s = %+v", lid, il)
					continue
				}
				if got, want := fl.Instances("workerNode", il.ScaleLevels), fl.VDUs["workerNode"].InstantiationLevels[lid]; got != want {
					t.Errorf("workerNode at %s: %d instances from the deltas, %d from VduInstantiationLevels", lid, got, want)
				}
			}
			var ext []string
			for id := range fl.ExtCPs {
				ext = append(ext, id)
			}
			sort.Strings(ext)
			if !slices.Equal(ext, c.extCPs) {
				t.Errorf("ext CPs = %v, want %v", ext, c.extCPs)
			}
			for id, targets := range c.vips {
				if vip := fl.VipCPs[id]; vip == nil || !slices.Equal(vip.Targets, targets) {
					t.Errorf("VIP %s = %+v", id, vip)
				}
			}
			if len(fl.VirtualLinks) != len(c.vls) {
				t.Errorf("VLs = %v", fl.VirtualLinks)
			}
			for _, vl := range c.vls {
				if fl.VirtualLinks[vl] == nil {
					t.Errorf("no VL %s", vl)
				}
			}
			if fl.HOT == nil || !reflect.DeepEqual(*fl.HOT, c.hot) {
				t.Errorf("HOT = %+v", fl.HOT)
			}
			ht, err := p.HeatTemplate(c.flavour)
			if err != nil || len(ht.Files) != len(c.hot.Files) {
				t.Errorf("HeatTemplate: %+v, %v", ht, err)
			}
			if len(p.Scripts()) == 0 {
				t.Error("no Scripts/")
			}
			// Every file but TOSCA.meta is listed with its SHA-256.
			if got, want := len(p.Artifacts()), len(p.Files())-1; got != want {
				t.Errorf("%d artifacts for %d files", got, want)
			}
		})
	}
}

// TestCNFSample: the sample CNF package onboards as a Tacker CNF package
// (no base HOT, `virtual_link_external: []`, a VDU named after its
// Deployment) with its manifests as artifacts.
func TestCNFSample(t *testing.T) {
	p := mustOpen(t, sampleCSAR(t, "cnf-helloworld"))
	fl := p.Summary().Flavours["simple"]
	if fl == nil || fl.HOT != nil || len(fl.ExtCPs) != 0 {
		t.Fatalf("flavour simple = %+v", fl)
	}
	web := fl.VDUs["web"]
	if web == nil || web.Name != "web" || web.MinInstances != 1 || web.MaxInstances != 3 || web.InitialInstances != 1 {
		t.Errorf("VDU web = %+v", web)
	}
	if a := fl.ScalingAspects["web_aspect"]; a == nil || a.MaxScaleLevel != 2 || a.StepDelta("web", 0) != 1 {
		t.Errorf("web_aspect = %+v", a)
	}
	found := false
	for _, a := range p.Artifacts() {
		found = found || a.Path == "Files/kubernetes/web.yaml"
	}
	if !found {
		t.Errorf("Files/kubernetes/web.yaml is not an artifact: %+v", p.Artifacts())
	}
}
