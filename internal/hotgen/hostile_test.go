package hotgen

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// variant copies samples/kubeadm-tosca into memory with one file edited
// (old → new, which must occur) or added.
func variant(t *testing.T, file, old, repl string) fs.FS {
	t.Helper()
	src := os.DirFS("../../samples/kubeadm-tosca")
	out := fstest.MapFS{}
	if err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		out[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	f := out[file]
	if f == nil {
		out[file] = &fstest.MapFile{Data: []byte(repl), Mode: 0o644}
		return out
	}
	if !strings.Contains(string(f.Data), old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	f.Data = []byte(strings.Replace(string(f.Data), old, repl, 1))
	return out
}

const (
	dfFile    = "Definitions/kubeadm_tosca_df_cluster_install.yaml"
	typesFile = "Definitions/kubeadm_tosca_types.yaml"
)

// Hostile VNFDs: cycles and unknown or foreign types are refused when the
// package is onboarded, naming the file and node; what onboards but cannot
// become Heat (huge counts, untranslated VIM resources, self-references)
// is refused at generation, naming the node.
func TestHostileVNFDs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tree      fs.FS
		onboard   string // onboarding error wanted
		node, gen string // generation problem wanted
	}{
		{name: "derived_from cycle",
			tree:    variant(t, typesFile, "  Company.Tacker.KubernetesCluster:\n    derived_from: company.provider.VNF", "  Company.Tacker.KubernetesCluster:\n    derived_from: company.provider.Loop\n  company.provider.Loop:\n    derived_from: Company.Tacker.KubernetesCluster"),
			onboard: "derived_from cycle"},
		{name: "import cycle",
			tree: variant(t, typesFile, "  - etsi_nfv_sol001_vnfd_types.yaml\n", "  - etsi_nfv_sol001_vnfd_types.yaml\n  - kubeadm_tosca_df_cluster_install.yaml\n"),
			node: "masterNode", gen: "has no compute flavour"}, // terminates, and the VNFD is read once
		{name: "unknown node type",
			tree:    variant(t, dfFile, "    masterNode:\n      type: tosca.nodes.nfv.Vdu.Compute", "    masterNode:\n      type: tosca.nodes.nfv.Vdu.Computer"),
			onboard: "node template masterNode has type tosca.nodes.nfv.Vdu.Computer, which is neither a SOL001 type nor defined"},
		{name: "binding to itself",
			tree:    variant(t, dfFile, "        - virtual_binding: workerNode\n        - virtual_link: internalVL", "        - virtual_binding: workerNodeInternalCP\n        - virtual_link: internalVL"),
			onboard: `virtual_binding "workerNodeInternalCP" is not a VDU`},
		{name: "link to a VDU",
			tree:    variant(t, dfFile, "        - virtual_binding: workerNode\n        - virtual_link: internalVL", "        - virtual_binding: workerNode\n        - virtual_link: masterNode"),
			onboard: `virtual_link "masterNode" is not a tosca.nodes.nfv.VnfVirtualLink`},
		{name: "absurd count",
			tree:    variant(t, dfFile, "          min_number_of_instances: 1\n          max_number_of_instances: 3", "          min_number_of_instances: 1\n          max_number_of_instances: 100000000"),
			onboard: "max_number_of_instances is 100000000, which is unreasonably large"},
		{name: "huge count",
			tree: variant(t, dfFile, "          min_number_of_instances: 1\n          max_number_of_instances: 3", "          min_number_of_instances: 1\n          max_number_of_instances: 50000"),
			node: "workerNode", gen: "max_number_of_instances 50000 is more than one generated Heat group holds (1000)"},
		{name: "huge step",
			tree:    variant(t, dfFile, "            delta_1:\n              number_of_instances: 1", "            delta_1:\n              number_of_instances: 900"),
			onboard: "VDU workerNode would have 1801 instances with every aspect at its max_scale_level, more than vdu_profile.max_number_of_instances 3"},
		{name: "plain TOSCA compute",
			tree: variant(t, dfFile, "    internalVL:\n", "    legacyVM:\n      type: tosca.nodes.Compute\n\n    internalVL:\n"),
			node: "legacyVM", gen: "is a tosca.nodes.Compute, which the VNFM does not translate into Heat"},
		{name: "anti-affinity",
			tree: variant(t, dfFile, "  policies:\n", "  policies:\n    - spread:\n        type: tosca.policies.nfv.AntiAffinityRule\n        targets: [ workerNode ]\n        properties:\n          scope: nfvi_node\n"),
			node: "spread", gen: "is a tosca.policies.nfv.AntiAffinityRule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := vnfdOf(t, tc.tree)
			if tc.onboard != "" {
				if err == nil || !strings.Contains(err.Error(), tc.onboard) {
					t.Fatalf("onboarding: %v, want %q", err, tc.onboard)
				}
				return
			}
			if err != nil {
				t.Fatalf("onboarding: %v", err)
			}
			fl := v.Flavours["cluster_install"]
			in := seedInput(fl)
			if tc.name == "import cycle" {
				in.AdditionalParams = nil
			}
			_, err = Generate(in)
			if err == nil {
				t.Fatal("generated")
			}
			wantProblem(t, problemsOf(t, err), tc.node, tc.gen)
		})
	}
}
