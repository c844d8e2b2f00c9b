package vnfpkg

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func TestOpenTackerStyle(t *testing.T) {
	p := mustOpen(t, baseTree().csar(t))
	v := p.Summary()
	if v.ID != "b1db0ce7-ebca-1fb7-95ed-4840d70a1163" || v.Provider != "Company" || v.ProductName != "Sample VNF" ||
		v.SoftwareVersion != "1.0" || v.Version != "1.0" || !slices.Equal(v.VnfmInfo, []string{"Tacker"}) || v.Description != "Sample VNF" {
		t.Errorf("descriptor = %+v", v)
	}
	fl := v.Flavours["simple"]
	if fl == nil || len(v.Flavours) != 1 {
		t.Fatalf("flavours = %v", v.Flavours)
	}
	if fl.Description != "A simple flavour" {
		t.Errorf("description = %q", fl.Description)
	}
	wantHooks := map[string]string{"instantiate_end": "kubeadm", "terminate_end": "kubeadm", "scale_start": "kubeadm", "scale_end": "kubeadm"}
	if !reflect.DeepEqual(fl.Interfaces, wantHooks) {
		t.Errorf("interfaces = %v", fl.Interfaces)
	}
	vdu1 := fl.VDUs["VDU1"]
	one := 1
	zero := 0
	want1 := &model.VDU{ID: "VDU1", Name: "masterNode", MinInstances: 1, MaxInstances: 3, InitialInstances: 1,
		Flavor: "m1.medium", VirtualCPUs: 2, VirtualMemory: "4 GB",
		SwImage: &model.SwImage{Name: "ubuntu-20.04", Version: "20.04", ChecksumAlg: "sha-512", Checksum: "abc",
			ContainerFormat: "bare", DiskFormat: "qcow2", Size: 2e9},
		CPs: []model.VduCP{{ID: "VDU1_CP1", Order: &zero, LayerProtocols: []string{"ipv4"}},
			{ID: "VDU1_CP2", Order: &one, VirtualLink: "internalVL", LayerProtocols: []string{"ipv4"}}},
		Storages:            []string{"VirtualStorage"},
		InstantiationLevels: map[string]int{"instantiation_level_1": 1, "instantiation_level_2": 3},
	}
	if !reflect.DeepEqual(vdu1, want1) {
		g, _ := json.Marshal(vdu1)
		w, _ := json.Marshal(want1)
		t.Errorf("VDU1 =\n%s\nwant\n%s", g, w)
	}
	if vdu2 := fl.VDUs["VDU2"]; vdu2.InitialInstances != 2 || vdu2.MaxInstances != 4 || vdu2.Flavor != "m1.small" || vdu2.CPs[0].VirtualLink != "internalVL" {
		t.Errorf("VDU2 = %+v", vdu2)
	}
	a := fl.ScalingAspects["vdu1_aspect"]
	if a.MaxScaleLevel != 2 || !slices.Equal(a.StepDeltas, []string{"delta_1"}) || a.VduDeltas["VDU1"]["delta_1"] != 1 {
		t.Errorf("aspect = %+v", a)
	}
	if fl.DefaultInstantiationLevel != "instantiation_level_1" || fl.InstantiationLevels["instantiation_level_2"].ScaleLevels["vdu2_aspect"] != 2 {
		t.Errorf("levels = %v default %s", fl.InstantiationLevels, fl.DefaultInstantiationLevel)
	}
	if got := fl.Instances("VDU1", fl.InstantiationLevels["instantiation_level_2"].ScaleLevels); got != 3 {
		t.Errorf("VDU1 at level 2 = %d", got)
	}
	if ext := fl.ExtCPs["VDU1_CP1"]; ext == nil || ext.VDU != "VDU1" || ext.Kind != "VduCp" || ext.Requirement != "virtual_link_external1_1" || len(fl.ExtCPs) != 1 {
		t.Errorf("ext CPs = %v", fl.ExtCPs)
	}
	if vl := fl.VirtualLinks["internalVL"]; vl == nil || vl.Protocols[0].CIDR != "10.10.0.0/24" || vl.LayerProtocols[0] != "ipv4" {
		t.Errorf("VLs = %v", fl.VirtualLinks)
	}
	if st := fl.Storages["VirtualStorage"]; st == nil || st.Size != 10e9 || st.SizeOfStorage != "10 GB" {
		t.Errorf("storages = %v", fl.Storages)
	}
	wantHOT := &model.HOT{Top: fHOT, Nested: []string{fVDU1}, Files: map[string]string{"VDU1.yaml": fVDU1, "userdata.txt": "BaseHOT/simple/nested/userdata.txt"}}
	if !reflect.DeepEqual(fl.HOT, wantHOT) {
		t.Errorf("HOT = %+v", fl.HOT)
	}
	ht, err := p.HeatTemplate("simple")
	if err != nil || !strings.Contains(string(ht.Template), "AutoScalingGroup") || ht.Files["userdata.txt"] != "#cloud-config\n" || ht.Files["VDU1.yaml"] == "" {
		t.Errorf("HeatTemplate = %+v, %v", ht, err)
	}
	if _, err := p.HeatTemplate("nope"); err == nil {
		t.Error("HeatTemplate(nope) succeeded")
	}
	if got := p.VnfdFiles(); !slices.Equal(got, []string{fDF, fTop, fTypes, metaPath}) {
		t.Errorf("VnfdFiles = %v", got)
	}
	if got := p.Scripts(); !slices.Equal(got, []string{"Scripts/install.sh"}) {
		t.Errorf("Scripts = %v", got)
	}
	imgs := p.SoftwareImages()
	if len(imgs) != 1 || imgs[0].ID != "VDU1" || imgs[0].Name != "ubuntu-20.04" || imgs[0].DiskFormat != "QCOW2" || imgs[0].Provider != "Company" {
		t.Errorf("SoftwareImages = %+v", imgs)
	}
	if arts := p.Artifacts(); len(arts) != len(baseTree())-1 || arts[0].Algorithm != "SHA-256" || len(arts[0].Hash) != 64 {
		t.Errorf("Artifacts = %+v", arts)
	}
	if m := p.Meta(); m.CreatedBy != "Dummy User" || m.EntryDefinitions != fTop || m.FileVersion != "1.0" || m.CSARVersion != "1.1" {
		t.Errorf("Meta = %+v", m)
	}
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %q", w)
	}
	files := p.Files()
	if len(files) != len(baseTree()) || files[0].Path != fVDU1 {
		t.Errorf("Files = %v", files)
	}
}

func TestPackageFS(t *testing.T) {
	p := mustOpen(t, baseTree().csar(t))
	var want []string
	for k := range baseTree() {
		want = append(want, k)
	}
	if err := fstest.TestFS(p.FS(), want...); err != nil {
		t.Fatal(err)
	}
	b, err := fs.ReadFile(p.FS(), "Scripts/install.sh")
	if err != nil || string(b) != "#!/bin/sh\necho hi\n" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
	f, err := p.FS().Open(fTop)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(f)
	f.Close()
	if string(b) != baseTree()[fTop] {
		t.Error("Open/Read mismatch")
	}
	for _, bad := range []string{"../x", "/etc/passwd", "nope"} {
		if _, err := p.FS().Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

func TestDriverBindingForms(t *testing.T) {
	base := baseTree()
	arts := `        mgmt-drivers-kubernetes:
          description: Management driver for kubernetes cluster
          type: tosca.artifacts.Implementation.Python
          file: ../Scripts/kubernetes_mgmt.py
`
	for _, c := range []struct {
		name, iface, arts string
		want              string
	}{
		{"native builtin artifact", "          instantiate_end:\n            implementation: drv\n",
			"        drv:\n          type: tosca.artifacts.Implementation.Builtin\n          file: builtin:kubespray\n", "kubespray"},
		{"builtin file, any type", "          instantiate_end:\n            implementation: drv\n",
			"        drv:\n          type: tosca.artifacts.Implementation.Python\n          file: builtin:kubeadm\n", "kubeadm"},
		{"shorthand", "          instantiate_end:\n            implementation: builtin:kubespray\n", arts, "kubespray"},
		{"short operation form", "          instantiate_end: builtin:kubeadm\n", arts, "kubeadm"},
		{"tacker file name", "          instantiate_end:\n            implementation: my-driver\n",
			"        my-driver:\n          type: tosca.artifacts.Implementation.Python\n          file: ../Scripts/kubespray_mgmt.py\n", "kubespray"},
		{"tacker key", "          instantiate_end:\n            implementation: mgmt-drivers-kubespray\n",
			"        mgmt-drivers-kubespray:\n          type: tosca.artifacts.Implementation.Python\n          file: /opt/x.py]\n", "kubespray"},
		{"tacker key without artifact", "          instantiate_end:\n            implementation: mgmt-drivers-kubernetes\n", "        other:\n          file: x\n", "kubeadm"},
		{"primary", "          instantiate_end:\n            implementation:\n              primary: mgmt-drivers-kubernetes\n              dependencies: [ x ]\n", arts, "kubeadm"},
		{"inline primary", "          instantiate_end:\n            implementation:\n              primary:\n                file: builtin:kubespray\n", arts, "kubespray"},
		{"key names driver", "          instantiate_end:\n            implementation: kubeadm\n",
			"        kubeadm:\n          type: tosca.artifacts.Implementation.Python\n          file: ../Scripts/whatever.py\n", "kubeadm"},
		{"noop", "          instantiate_end:\n            implementation: vnflcm_noop\n", arts, ""},
		{"tosca 1.3 operations", "          operations:\n            instantiate_end:\n              implementation: builtin:kubespray\n", arts, "kubespray"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := withHooks(t, base, c.iface).edit(t, fDF, arts, c.arts)
			p, err := openBytes(tr.csar(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := p.Summary().Flavours["simple"].Interfaces
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("interfaces = %v, want none", got)
				}
				return
			}
			if !reflect.DeepEqual(got, map[string]string{"instantiate_end": c.want}) {
				t.Errorf("interfaces = %v, want instantiate_end → %s", got, c.want)
			}
		})
	}
}

// withHooks replaces the hooks of the flavour's VNF node (after instantiate: []).
func withHooks(t *testing.T, tr tree, hooks string) tree {
	return tr.edit(t, fDF, `          instantiate_start: []
          instantiate_end:
            implementation: mgmt-drivers-kubernetes
          terminate_end:
            implementation: mgmt-drivers-kubernetes
          scale_start:
            implementation: mgmt-drivers-kubernetes
          scale_end:
            implementation: mgmt-drivers-kubernetes
`, hooks)
}

func TestKnownDriversOption(t *testing.T) {
	_, err := openBytes(baseTree().csar(t), Options{KnownDrivers: []string{"fake"}})
	wantError(t, err, fDF, 0, `names management driver "kubeadm"`, "known drivers: fake")
	tr := withHooks(t, baseTree(), "          instantiate_end: builtin:fake\n")
	p, err := openBytes(tr.csar(t), Options{KnownDrivers: []string{"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Summary().Flavours["simple"].Interfaces; !reflect.DeepEqual(got, map[string]string{"instantiate_end": "fake"}) {
		t.Errorf("interfaces = %v", got)
	}
}

func TestSingleRootYAMLWithManifest(t *testing.T) {
	vnfd := `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  template_name: single
topology_template:
  node_templates:
    VNF:
      type: tosca.nodes.nfv.VNF
      properties:
        descriptor_id: d1
        provider: P
        product_name: N
        software_version: '2'
        descriptor_version: '3'
        flavour_id: small
      interfaces:
        Vnflcm:
          heal_end: builtin:kubeadm
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 1 }
`
	h := sha256hex(vnfd)
	mf := "metadata:\n  vnf_provider_id: P\n  vnf_product_name: N\n  vnf_release_date_time: 2024-01-01T00:00:00+00:00\n  vnf_package_version: '1.0'\n\n" +
		"Source: vnfd.yaml\nAlgorithm: SHA-256\nHash: " + h + "\n\n" +
		"non_mano_artifact_sets:\n  prv.x:\n    Source: docs/readme.txt\n\n" +
		"-----BEGIN CMS-----\nMIIabc\n-----END CMS-----\n"
	b := zipTree(t, tree{"vnfd.yaml": vnfd, "vnfd.mf": mf, "docs/readme.txt": "x"})
	p := mustOpen(t, b)
	v := p.Summary()
	if v.ID != "d1" || v.Flavours["small"] == nil || v.Flavours["small"].VDUs["VDU1"].Name != "VDU1" || v.Flavours["small"].Interfaces["heal_end"] != "kubeadm" {
		t.Errorf("summary = %+v", v)
	}
	if p.Meta() != nil || p.Manifest() == nil || p.Manifest().Metadata["vnf_provider_id"] != "P" || len(p.Manifest().Entries) != 1 {
		t.Errorf("meta %+v manifest %+v", p.Meta(), p.Manifest())
	}
	if p.EntryDefinitions() != "vnfd.yaml" {
		t.Errorf("entry = %s", p.EntryDefinitions())
	}
	// A wrong manifest hash is caught.
	bad := strings.Replace(mf, h, strings.Repeat("0", 64), 1)
	_, err := openBytes(zipTree(t, tree{"vnfd.yaml": vnfd, "vnfd.mf": bad}), Options{})
	wantError(t, err, "vnfd.mf", 9, "hash mismatch for vnfd.yaml", h)
}

func TestImagesWithoutHashAndAliases(t *testing.T) {
	tr := baseTree()
	tr["Files/images/ubuntu.qcow2"] = "not really an image"
	b := zipTree(t, tr.edit(t, metaPath, "Created-by: Dummy User\n", "Created-By: x\n").
		edit(t, metaPath, fTop+"\n", fTop+"\n\nName: Files/images/ubuntu.qcow2\nContent-Type: application/x-iso9066-image\n\nSource: https://example.com/img.qcow2\n").
		// sw_image artifact relative to the flavour file; anchors and merge keys.
		edit(t, fDF, "      requirements:\n        - virtual_storage: VirtualStorage\n",
			"      artifacts:\n        sw_image:\n          type: tosca.artifacts.nfv.SwImage\n          file: ../Files/images/ubuntu.qcow2\n      requirements:\n        - virtual_storage: VirtualStorage\n").
		edit(t, fDF, "        vdu_profile:\n          min_number_of_instances: 2\n          max_number_of_instances: 4\n",
			"        vdu_profile:\n          <<: *prof\n          max_number_of_instances: 4\n").
		edit(t, fDF, "        vdu_profile:\n          min_number_of_instances: 1\n", "        vdu_profile: &prof\n          min_number_of_instances: 1\n"))
	p, err := openBytes(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fl := p.Summary().Flavours["simple"]
	if fl.VDUs["VDU1"].SwImage.File != "Files/images/ubuntu.qcow2" || fl.VDUs["VDU2"].MinInstances != 1 || fl.VDUs["VDU2"].MaxInstances != 4 {
		t.Errorf("VDUs = %+v %+v", fl.VDUs["VDU1"], fl.VDUs["VDU2"])
	}
	if p.SoftwareImages()[0].ImagePath != "Files/images/ubuntu.qcow2" {
		t.Errorf("images = %+v", p.SoftwareImages())
	}
}

func TestWarnings(t *testing.T) {
	tr := baseTree().edit(t, fTypes, "valid_values: [ simple ]", "valid_values: [ simple, complex ]").
		edit(t, fDF, "number_of_instances: 3\n        targets: [ VDU1 ]", "number_of_instances: 2\n        targets: [ VDU1 ]").
		edit(t, fDF, "          instantiate: []\n", "          instantiate:\n            implementation: mgmt-drivers-kubernetes\n")
	tr["BaseHOT/other/x.yaml"] = "heat_template_version: 2013-05-23\nresources: {}\n"
	p := mustOpen(t, tr.csar(t))
	w := strings.Join(p.Warnings(), "\n")
	for _, s := range []string{`lists "complex" in valid_values`, "gives VDU VDU1 2 instances at level instantiation_level_2, but its initial delta and scaling deltas give 3",
		"implementation of Vnflcm.instantiate is ignored", "BaseHOT/other/ is ignored"} {
		if !strings.Contains(w, s) {
			t.Errorf("warnings %q lack %q", w, s)
		}
	}
}

func sha256hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

func TestStepDeltas(t *testing.T) {
	a := &model.ScalingAspect{MaxScaleLevel: 3, StepDeltas: []string{"d1", "d2"}, VduDeltas: map[string]map[string]int{"w": {"d1": 1, "d2": 2}}}
	if a.StepDelta("w", 0) != 1 || a.StepDelta("w", 1) != 2 || a.StepDelta("w", 5) != 2 || a.StepDelta("x", 0) != 0 {
		t.Error("StepDelta")
	}
	if a.Instances("w", 3) != 5 {
		t.Errorf("Instances = %d", a.Instances("w", 3))
	}
	fl := &model.Flavour{VDUs: map[string]*model.VDU{"w": {InitialInstances: 2}}, ScalingAspects: map[string]*model.ScalingAspect{"a": a}}
	if fl.Instances("w", map[string]int{"a": 2}) != 5 || fl.Instances("nope", nil) != 0 {
		t.Error("Flavour.Instances")
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1 B": 1, "2 GB": 2e9, "2GiB": 2 << 30, "0.5 MiB": 1 << 19, "10 kB": 1e4, "3 tib": 3 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "10", "10 parsecs", "1e400 GB", "-1 GB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}

func TestDescriptorFromTypeDefaults(t *testing.T) {
	tr := baseTree()
	// No VNF node in the top file: descriptor properties from the type's defaults.
	top := tr[fTop]
	tr[fTop] = top[:strings.Index(top, "topology_template:")]
	tr = tr.edit(t, fTypes, "    properties:\n      flavour_id:", `    properties:
      descriptor_id:
        type: string
        default: from-type
      provider:
        type: string
        default: TypeCo
      product_name:
        type: string
        default: Typed
      software_version:
        type: string
        default: '9'
      flavour_id:`).edit(t, fDF, "      flavour_id: simple\n", "      flavour_id: simple\n      descriptor_version: '7'\n")
	// An ETSI type file shipped in the package, with types we do not know.
	tr["Definitions/etsi_nfv_sol001_vnfd_types.yaml"] = `tosca_definitions_version: tosca_simple_yaml_1_3
node_types:
  tosca.nodes.nfv.VduCp:
    derived_from: tosca.nodes.nfv.Cp
  tosca.nodes.nfv.Something:
    derived_from: tosca.nodes.nfv.UnknownBase
data_types:
  tosca.datatypes.nfv.X:
    derived_from: tosca.datatypes.Root
`
	p, err := openBytes(tr.csar(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Summary()
	if v.ID != "from-type" || v.Provider != "TypeCo" || v.ProductName != "Typed" || v.SoftwareVersion != "9" || v.Version != "7" {
		t.Errorf("descriptor = %+v", v)
	}
	if !slices.Contains(p.VnfdFiles(), "Definitions/etsi_nfv_sol001_vnfd_types.yaml") {
		t.Errorf("VnfdFiles = %v", p.VnfdFiles())
	}
}

func TestVnfExtCpAndImportForms(t *testing.T) {
	tr := baseTree().
		edit(t, fTop, "  - types.yaml\n  - df_simple.yaml\n", "  - file: types.yaml\n  - df: {file: df_simple.yaml}\n").
		edit(t, fDF, "      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n",
			"      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n      virtual_link_external2: [ extCP, external_virtual_link ]\n").
		edit(t, fDF, "    internalVL:\n", `    extCP:
      type: tosca.nodes.nfv.VnfExtCp
      properties:
        layer_protocols: [ ipv4 ]
      requirements:
        - internal_virtual_link: internalVL
    vip:
      type: tosca.nodes.nfv.VipCp
      properties:
        vip_function: load_balance
      requirements:
        - target: VDU1_CP2
        - target: { node: VDU2_CP1 }
        - virtual_link: internalVL
    internalVL:
`)
	p, err := openBytes(tr.csar(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fl := p.Summary().Flavours["simple"]
	if e := fl.ExtCPs["extCP"]; e == nil || e.Kind != "VnfExtCp" || e.VirtualLink != "internalVL" || e.Requirement != "virtual_link_external2" {
		t.Errorf("extCP = %+v", e)
	}
	if v := fl.VipCPs["vip"]; v == nil || !slices.Equal(v.Targets, []string{"VDU1_CP2", "VDU2_CP1"}) || v.VirtualLink != "internalVL" || v.VipFunction != "load_balance" {
		t.Errorf("vip = %+v", v)
	}
	_, err = openBytes(tr.edit(t, fDF, "        - target: VDU1_CP2\n", "        - target: VDU1\n").csar(t), Options{})
	wantError(t, err, fDF, 0, `VipCp vip: target "VDU1" is not a VduCp`)
}

// Tacker's CNF packages (helloworld3) write `virtual_link_external: []`
// for a VNF without external links: it maps nothing and onboards; a
// half-given mapping is still refused.
func TestEmptyExternalLinkRequirement(t *testing.T) {
	tr := baseTree().edit(t, fDF, "      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n",
		"      virtual_link_external: []\n      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n")
	p, err := openBytes(tr.csar(t), Options{})
	if err != nil {
		t.Fatalf("virtual_link_external: []: %v", err)
	}
	fl := p.Summary().Flavours["simple"]
	if len(fl.ExtCPs) != 1 || fl.ExtCPs["VDU1_CP1"] == nil {
		t.Errorf("external CPs %+v, want only VDU1_CP1", fl.ExtCPs)
	}
	only := baseTree().edit(t, fDF, "      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n", "      virtual_link_external: []\n")
	if p, err = openBytes(only.csar(t), Options{}); err != nil {
		t.Fatalf("only virtual_link_external: []: %v", err)
	}
	if n := len(p.Summary().Flavours["simple"].ExtCPs); n != 0 {
		t.Errorf("%d external CPs, want none", n)
	}
	bad := baseTree().edit(t, fDF, "      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]\n", "      virtual_link_external1_1: [ VDU1_CP1, virtual_link, extra ]\n")
	if _, err := openBytes(bad.csar(t), Options{}); err == nil || !strings.Contains(err.Error(), "must be [<node template>, <requirement>]") {
		t.Errorf("a three-element mapping: %v", err)
	}
}
