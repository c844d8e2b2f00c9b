package vnfpkg

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// billionLaughs is a YAML alias bomb: 9 levels of 9 aliases each.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestOpenRejects(t *testing.T) {
	base := baseTree()
	bad := func(f, old, new string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return base.edit(t, f, old, new).csar(t) }
	}
	type tc struct {
		name string
		pkg  func(t *testing.T) []byte
		opts Options
		file string
		line int // 0: not checked
		subs []string
	}
	cases := []tc{
		// Archive.
		{name: "empty", pkg: func(*testing.T) []byte { return nil }, subs: []string{"the package is empty"}},
		{name: "not a zip", pkg: func(*testing.T) []byte { return []byte("hello, this is not a zip file at all") }, subs: []string{"not a valid ZIP archive"}},
		{name: "archive too large", pkg: func(t *testing.T) []byte { return base.csar(t) }, opts: Options{MaxArchiveSize: 1000}, subs: []string{"more than the 1000 bytes"}},
		{name: "zip slip", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "../../evil.sh", body: "x"}) }, file: "../../evil.sh", subs: []string{"path traversal"}},
		{name: "zip slip inside", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "Scripts/../../evil.sh", body: "x"}) }, file: "Scripts/../../evil.sh", subs: []string{".."}},
		{name: "absolute path", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "/etc/cron.d/x", body: "x"}) }, file: "/etc/cron.d/x", subs: []string{"absolute path"}},
		{name: "drive letter", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "C:/x", body: "x"}) }, file: "C:/x", subs: []string{"drive-letter"}},
		{name: "backslash", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: `Definitions\top.yaml`, body: "x"}) }, file: `Definitions\top.yaml`, subs: []string{"backslash"}},
		{name: "dot element", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "a/./b", body: "x"}) }, file: "a/./b", subs: []string{"not a clean relative path"}},
		{name: "control char", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "a\x01b", body: "x"}) }, file: `a\x01b`, subs: []string{"control characters"}},
		{name: "symlink", pkg: func(t *testing.T) []byte {
			return rawZip(t, zent{name: metaPath, body: "Entry-Definitions: x.yaml\n"}, zent{name: "x.yaml", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777})
		}, file: "x.yaml", subs: []string{"symbolic link"}},
		{name: "fifo", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "p", mode: fs.ModeNamedPipe | 0o644}) }, file: "p", subs: []string{"special file"}},
		{name: "encrypted", pkg: func(t *testing.T) []byte { return rawZip(t, zent{name: "x.yaml", body: "a: b", flags: 1}) }, file: "x.yaml", subs: []string{"encrypted"}},
		{name: "duplicate", pkg: func(t *testing.T) []byte {
			return rawZip(t, zent{name: "x.yaml", body: "a: 1"}, zent{name: "x.yaml", body: "a: 2"})
		}, file: "x.yaml", subs: []string{"holds this name twice"}},
		{name: "file and directory", pkg: func(t *testing.T) []byte {
			return rawZip(t, zent{name: "Definitions", body: "x"}, zent{name: "Definitions/top.yaml", body: "a: 1"})
		}, file: "Definitions", subs: []string{"both as a file and as the directory"}},
		{name: "too many files", pkg: func(t *testing.T) []byte { return base.csar(t) }, opts: Options{MaxFiles: 5}, subs: []string{"has 8 entries, more than the 5"}},
		{name: "zip bomb (declared)", pkg: func(t *testing.T) []byte {
			return rawZip(t, zent{name: "bomb.bin", body: strings.Repeat("\x00", 3<<20)})
		}, opts: Options{MaxFileSize: 1 << 20}, file: "bomb.bin", subs: []string{"3 MiB uncompressed, more than the 1 MiB per file"}},
		{name: "zip bomb (lying header)", pkg: func(t *testing.T) []byte {
			ents := []zent{{name: "bomb.bin", body: strings.Repeat("\x00", 3<<20), declared: 100}}
			for _, k := range sortedKeys(base) {
				ents = append(ents, zent{name: k, body: base[k]})
			}
			return rawZip(t, ents...)
		}, opts: Options{MaxFileSize: 1 << 20}, file: "bomb.bin", subs: []string{"does not match its header"}},
		{name: "total size", pkg: func(t *testing.T) []byte {
			var es []zent
			for i := range 5 {
				es = append(es, zent{name: fmt.Sprintf("f%d", i), body: strings.Repeat("x", 300<<10)})
			}
			return rawZip(t, es...)
		}, opts: Options{MaxTotalSize: 1 << 20}, subs: []string{"more than 1 MiB uncompressed"}},
		{name: "big yaml", pkg: func(t *testing.T) []byte { return base.csar(t) }, opts: Options{MaxYAMLSize: 1000}, file: fDF, subs: []string{"larger than 1000 bytes"}},

		// TOSCA.meta and manifest.
		{name: "no entry", pkg: func(t *testing.T) []byte { return zipTree(t, tree{"README": "x", "Definitions/a.yaml": "a: 1"}) }, subs: []string{"neither TOSCA-Metadata/TOSCA.meta nor a VNFD YAML file at its root"}},
		{name: "zipped directory", pkg: func(t *testing.T) []byte { return zipTree(t, tree{"pkg/" + metaPath: "Entry-Definitions: a.yaml\n"}) }, file: "pkg/" + metaPath, subs: []string{"zip the content of the package directory", "cd pkg"}},
		{name: "two root yamls", pkg: func(t *testing.T) []byte { return zipTree(t, tree{"a.yaml": "a: 1", "b.yml": "b: 1"}) }, subs: []string{`the entry VNFD is ambiguous`, `"a.yaml", "b.yml"`}},
		{name: "missing Entry-Definitions", pkg: bad(metaPath, "Entry-Definitions: "+fTop+"\n", "Entry-Definition: "+fTop+"\n"), file: metaPath, subs: []string{"Entry-Definitions is missing"}},
		{name: "Entry-Definitions not in package", pkg: bad(metaPath, fTop, "Definitions/nope.yaml"), file: metaPath, subs: []string{`"Definitions/nope.yaml", which is not in the package`}},
		{name: "Entry-Definitions outside", pkg: bad(metaPath, fTop, "../top.yaml"), file: metaPath, line: 4, subs: []string{"points outside the package"}},
		{name: "meta syntax", pkg: bad(metaPath, "CSAR-Version: 1.1\n", "CSAR-Version 1.1\n"), file: metaPath, line: 2, subs: []string{"expected a `Key: value` line"}},
		{name: "meta artifact first", pkg: func(t *testing.T) []byte {
			return zipTree(t, tree{metaPath: "Name: a.yaml\nAlgorithm: SHA-256\n", "a.yaml": "a: 1"})
		}, file: metaPath, line: 1, subs: []string{"first block must be the metadata block"}},
		{name: "meta duplicate key", pkg: bad(metaPath, "CSAR-Version: 1.1\n", "CSAR-Version: 1.1\ncsar-version: 1.2\n"), file: metaPath, line: 3, subs: []string{"appears twice"}},
		{name: "bad hash", pkg: func(t *testing.T) []byte {
			b := base.csar(t)
			tr := tree{}
			p := mustOpen(t, b)
			for _, f := range p.Files() {
				c, _ := p.ReadFile(f.Path)
				tr[f.Path] = string(c)
			}
			tr["Scripts/install.sh"] = "#!/bin/sh\nrm -rf /\n"
			return zipTree(t, tr)
		}, file: metaPath, subs: []string{"hash mismatch for Scripts/install.sh", "sha256sum Scripts/install.sh"}},
		{name: "listed file missing", pkg: func(t *testing.T) []byte {
			tr := base.clone()
			tr[metaPath] += "\nName: Scripts/gone.sh\nContent-Type: application/x-sh\nAlgorithm: SHA-256\nHash: " + strings.Repeat("a", 64) + "\n"
			return zipTree(t, tr)
		}, file: metaPath, line: 6, subs: []string{`lists "Scripts/gone.sh" but the package has no such file`}},
		{name: "no hash for script", pkg: func(t *testing.T) []byte {
			tr := base.clone()
			tr[metaPath] += "\nName: Scripts/install.sh\nContent-Type: application/x-sh\n"
			return zipTree(t, tr)
		}, file: metaPath, line: 6, subs: []string{"has no Algorithm and Hash", "sha256sum"}},
		{name: "unknown algorithm", pkg: func(t *testing.T) []byte {
			tr := base.clone()
			tr[metaPath] += "\nName: Scripts/install.sh\nAlgorithm: MD5\nHash: abc\n"
			return zipTree(t, tr)
		}, file: metaPath, line: 7, subs: []string{`unsupported hash algorithm "MD5"`}},
		{name: "short hash", pkg: func(t *testing.T) []byte {
			tr := base.clone()
			tr[metaPath] += "\nName: Scripts/install.sh\nAlgorithm: SHA-512\nHash: abcd\n"
			return zipTree(t, tr)
		}, file: metaPath, line: 8, subs: []string{"not a SHA-512 digest (128 hexadecimal digits"}},
		{name: "manifest missing", pkg: bad(metaPath, "Created-by", "ETSI-Entry-Manifest: x.mf\nCreated-by"), file: metaPath, subs: []string{`ETSI-Entry-Manifest names "x.mf"`}},
		{name: "manifest bad hash", pkg: func(t *testing.T) []byte {
			tr := base.edit(t, metaPath, "Created-by", "ETSI-Entry-Manifest: top.mf\nCreated-by")
			tr["top.mf"] = "metadata:\n  vnf_provider_id: Company\n\nSource: " + fTop + "\nAlgorithm: SHA-512\nHash: " + strings.Repeat("0", 128) + "\n"
			return tr.csar(t)
		}, file: "top.mf", line: 6, subs: []string{"hash mismatch for " + fTop, "SHA-512", "sha512sum"}},

		// YAML.
		{name: "broken yaml", pkg: bad(fDF, "      properties:\n        flavour_description: A simple flavour\n", "      properties:\n        flavour_description: A simple: flavour\n"),
			file: fDF, line: base.lineOf(t, fDF, "flavour_description: A simple flavour"), subs: []string{"invalid YAML", "mapping values are not allowed"}},
		{name: "tab indentation", pkg: bad(fDF, "    VDU2:\n", "\tVDU2:\n"), file: fDF, line: base.lineOf(t, fDF, "    VDU2:\n") - 1, subs: []string{"invalid YAML"}},
		{name: "alias bomb", pkg: bad(fTop, "description: Sample VNF\n", "description: Sample VNF\n"+billionLaughs()), file: fTop, subs: []string{"more than 200000 YAML nodes", "alias"}},
		{name: "deep nesting", pkg: bad(fTop, "description: Sample VNF\n", "description: Sample VNF\nx: "+strings.Repeat("[", 80)+strings.Repeat("]", 80)+"\n"), file: fTop, subs: []string{"nests deeper than 64 levels"}},
		{name: "duplicate key", pkg: bad(fDF, "    VDU2:\n", "    VDU1:\n      type: tosca.nodes.nfv.Vdu.Compute\n    VDU2:\n"), file: fDF, line: base.lineOf(t, fDF, "    VDU2:\n"), subs: []string{`key "VDU1" is defined twice`}},
		{name: "two documents", pkg: bad(fTypes, "node_types:", "---\nnode_types:"), file: fTypes, subs: []string{"more than one YAML document"}},
		{name: "not a mapping", pkg: func(t *testing.T) []byte { tr := base.clone(); tr[fTypes] = "- x\n- y\n"; return tr.csar(t) }, file: fTypes, line: 1, subs: []string{"must hold a YAML mapping", "got a list"}},
		{name: "empty file", pkg: func(t *testing.T) []byte { tr := base.clone(); tr[fTypes] = "# nothing\n"; return tr.csar(t) }, file: fTypes, subs: []string{"the file is empty"}},

		// VNFD structure.
		{name: "no tosca version", pkg: bad(fTop, "tosca_definitions_version: tosca_simple_yaml_1_2\n", ""), file: fTop, subs: []string{"tosca_definitions_version is missing"}},
		{name: "bad tosca version", pkg: bad(fTypes, "tosca_simple_yaml_1_2", "tosca_simple_yaml_9_9"), file: fTypes, line: 1, subs: []string{`unsupported tosca_definitions_version "tosca_simple_yaml_9_9"`}},
		{name: "missing flavour file", pkg: bad(fTop, "  - df_simple.yaml\n", "  - df_simple.yaml\n  - df_complex.yaml\n"), file: fTop, line: 8, subs: []string{`imports "df_complex.yaml" (Definitions/df_complex.yaml relative to this file), which is not in the package`}},
		{name: "import outside", pkg: bad(fTop, "  - types.yaml\n", "  - ../../types.yaml\n"), file: fTop, line: 6, subs: []string{"points outside the package"}},
		{name: "import url", pkg: bad(fTop, "  - types.yaml\n", "  - https://example.com/types.yaml\n"), file: fTop, subs: []string{"from the network"}},
		{name: "no flavour", pkg: func(t *testing.T) []byte {
			return base.edit(t, fDF, "    properties:\n      flavour_id: simple\n", "").edit(t, fTypes, "        default: simple\n", "").csar(t)
		}, file: fDF, subs: []string{"substitution_mappings has no properties.flavour_id"}},
		{name: "no flavour at all", pkg: func(t *testing.T) []byte {
			return base.edit(t, fTop, "  - df_simple.yaml\n", "").edit(t, fTypes, "        default: simple\n", "").csar(t)
		}, file: fTop, subs: []string{"has no flavour_id and no file defines a flavour"}},
		{name: "duplicate flavour", pkg: func(t *testing.T) []byte {
			tr := base.edit(t, fTop, "  - df_simple.yaml\n", "  - df_simple.yaml\n  - df_copy.yaml\n")
			tr["Definitions/df_copy.yaml"] = tr[fDF]
			return tr.csar(t)
		}, file: "Definitions/df_copy.yaml", subs: []string{`flavour "simple" is defined twice (also in ` + fDF}},
		{name: "missing descriptor_id", pkg: bad(fTop, "        descriptor_id: b1db0ce7-ebca-1fb7-95ed-4840d70a1163\n", ""), file: fTop, line: base.lineOf(t, fTop, "    VNF:"), subs: []string{"the VNF node has no descriptor_id"}},
		{name: "conflicting descriptor", pkg: bad(fDF, "        flavour_description: A simple flavour\n", "        flavour_description: A simple flavour\n        provider: Other\n"), file: fDF, subs: []string{`provider is "Other" here but "Company"`}},
		{name: "unknown node type", pkg: bad(fDF, "    VDU2:\n      type: tosca.nodes.nfv.Vdu.Compute", "    VDU2:\n      type: tosca.nodes.nfv.VDU.Compute"), file: fDF, subs: []string{"type tosca.nodes.nfv.VDU.Compute", "did you mean tosca.nodes.nfv.Vdu.Compute?"}},
		{name: "unknown parent type", pkg: bad(fTypes, "derived_from: tosca.nodes.nfv.VduCp", "derived_from: tosca.nodes.nfv.Port"), file: fTypes, subs: []string{"derives from tosca.nodes.nfv.Port, which is neither"}},
		{name: "type cycle", pkg: bad(fTypes, "derived_from: tosca.nodes.nfv.VduCp", "derived_from: company.provider.Port"), file: fTypes, subs: []string{"derived_from cycle"}},
		{name: "missing vdu_profile", pkg: bad(fDF, "        vdu_profile:\n          min_number_of_instances: 2\n          max_number_of_instances: 4\n", ""), file: fDF, subs: []string{"VDU VDU2 has no properties.vdu_profile"}},
		{name: "vdu_profile min > max", pkg: bad(fDF, "min_number_of_instances: 2\n          max_number_of_instances: 4", "min_number_of_instances: 5\n          max_number_of_instances: 4"), file: fDF, subs: []string{"min_number_of_instances <= max_number_of_instances"}},
		{name: "not an integer", pkg: bad(fDF, "max_number_of_instances: 4", "max_number_of_instances: four"), file: fDF, line: base.lineOf(t, fDF, "max_number_of_instances: 4"), subs: []string{`max_number_of_instances must be a non-negative integer, got "four"`}},
		{name: "bad size", pkg: bad(fDF, "size_of_storage: 10 GB", "size_of_storage: ten"), file: fDF, subs: []string{`"ten" is not a size`}},
		{name: "sw_image file missing", pkg: bad(fDF, "      requirements:\n        - virtual_storage: VirtualStorage\n", "      artifacts:\n        sw_image:\n          file: ../Files/images/x.qcow2\n      requirements:\n        - virtual_storage: VirtualStorage\n"), file: fDF, subs: []string{"Files/images/x.qcow2, which is not in the package"}},
		{name: "cp binds unknown vdu", pkg: bad(fDF, "- virtual_binding: VDU2", "- virtual_binding: VDU3"), file: fDF, subs: []string{`virtual_binding "VDU3" is not a VDU`, `"VDU1", "VDU2"`}},
		{name: "cp without binding", pkg: bad(fDF, "        - virtual_binding: VDU2\n", ""), file: fDF, subs: []string{"VduCp VDU2_CP1 has no virtual_binding"}},
		{name: "unknown virtual link", pkg: bad(fDF, "        - virtual_binding: VDU2\n        - virtual_link: internalVL", "        - virtual_binding: VDU2\n        - virtual_link: externalVL"), file: fDF, subs: []string{`virtual_link "externalVL" is not a tosca.nodes.nfv.VnfVirtualLink`}},
		{name: "requirements as map", pkg: bad(fDF, "      requirements:\n        - virtual_binding: VDU2\n        - virtual_link: internalVL\n", "      requirements:\n        virtual_binding: VDU2\n        virtual_link: internalVL\n"), file: fDF, subs: []string{"must be a list of single-key maps"}},
		{name: "unknown storage", pkg: bad(fDF, "- virtual_storage: VirtualStorage", "- virtual_storage: Disk"), file: fDF, subs: []string{`requires virtual_storage "Disk"`}},
		{name: "ext cp unknown node", pkg: bad(fDF, "[ VDU1_CP1, virtual_link ]", "[ VDU9_CP1, virtual_link ]"), file: fDF, subs: []string{`names "VDU9_CP1", which is not a node template`}},
		{name: "ext cp not a cp", pkg: bad(fDF, "[ VDU1_CP1, virtual_link ]", "[ VDU1, virtual_link ]"), file: fDF, subs: []string{"external CPs must be VduCp, VnfExtCp or VipCp"}},
		{name: "ext cp on internal vl", pkg: bad(fDF, "[ VDU1_CP1, virtual_link ]", "[ VDU2_CP1, virtual_link ]"), file: fDF, subs: []string{"also attached to the internal virtual link internalVL"}},

		// Policies.
		{name: "policies as map", pkg: bad(fDF, "  policies:\n    - scaling_aspects:\n", "  policies:\n    scaling_aspects:\n"), file: fDF, line: base.lineOf(t, fDF, "  policies:"), subs: []string{"invalid YAML"}},
		{name: "policies mapping", pkg: func(t *testing.T) []byte {
			df := base[fDF]
			i := strings.Index(df, "  policies:\n")
			return base.edit(t, fDF, df[i:], "  policies:\n    scaling_aspects:\n      type: tosca.policies.nfv.ScalingAspects\n").csar(t)
		}, file: fDF, line: base.lineOf(t, fDF, "  policies:"), subs: []string{"policies must be a list of single-key maps", "not a mapping"}},
		{name: "policy with two keys", pkg: bad(fDF, "    - VDU1_initial_delta:\n", "    - other: {type: tosca.policies.nfv.VduInitialDelta}\n      VDU1_initial_delta:\n"), file: fDF, subs: []string{"each policy must be a single-key map"}},
		{name: "unknown policy type", pkg: bad(fDF, "type: tosca.policies.nfv.VduInitialDelta", "type: tosca.policies.nfv.vduinitialdelta"), file: fDF, subs: []string{"did you mean tosca.policies.nfv.VduInitialDelta?"}},
		{name: "delta for unknown aspect", pkg: bad(fDF, "aspect: vdu2_aspect", "aspect: vdu3_aspect"), file: fDF, subs: []string{`refers to aspect "vdu3_aspect"`, `"vdu1_aspect", "vdu2_aspect"`}},
		{name: "missing step delta", pkg: bad(fDF, "              step_deltas:\n                - delta_1\n            vdu2_aspect:", "              step_deltas:\n                - delta_1\n                - delta_2\n            vdu2_aspect:"), file: fDF, subs: []string{`has no delta "delta_2"`}},
		{name: "target not a vdu", pkg: bad(fDF, "        targets: [ VDU2 ]", "        targets: [ internalVL ]"), file: fDF, subs: []string{`targets "internalVL", which is not a VDU`}},
		{name: "level above max", pkg: bad(fDF, "                vdu2_aspect:\n                  scale_level: 2", "                vdu2_aspect:\n                  scale_level: 3"), file: fDF, subs: []string{"scale_level 3, above its max_scale_level 2"}},
		{name: "level unknown aspect", pkg: bad(fDF, "                vdu2_aspect:\n                  scale_level: 2", "                vdu9_aspect:\n                  scale_level: 2"), file: fDF, subs: []string{`refers to aspect "vdu9_aspect"`}},
		{name: "unknown default level", pkg: bad(fDF, "default_level: instantiation_level_1", "default_level: instantiation_level_9"), file: fDF, subs: []string{`default_level "instantiation_level_9" is not one of the levels`}},
		{name: "vdu level unknown", pkg: bad(fDF, "            instantiation_level_2:\n              number_of_instances: 3", "            instantiation_level_3:\n              number_of_instances: 3"), file: fDF, subs: []string{`names instantiation level "instantiation_level_3"`}},
		{name: "initial delta out of range", pkg: bad(fDF, "number_of_instances: 2\n        targets: [ VDU2 ]", "number_of_instances: 7\n        targets: [ VDU2 ]"), file: fDF, subs: []string{"VDU VDU2 starts with 7 instances (VduInitialDelta) but vdu_profile allows 2 to 4"}},
		{name: "max scale over max", pkg: bad(fDF, "            vdu2_aspect:\n              name: vdu2_aspect\n              max_scale_level: 2", "            vdu2_aspect:\n              name: vdu2_aspect\n              max_scale_level: 3"), file: fDF, subs: []string{"VDU VDU2 would have 5 instances with every aspect at its max_scale_level, more than vdu_profile.max_number_of_instances 4"}},

		// Drivers.
		{name: "unknown builtin driver", pkg: bad(fDF, "file: ../Scripts/kubernetes_mgmt.py", "file: builtin:helm"), file: fDF, subs: []string{`names management driver "helm"`, "known drivers: kubeadm, kubespray"}},
		{name: "unknown artifact file", pkg: func(t *testing.T) []byte {
			return base.edit(t, fDF, "file: ../Scripts/kubernetes_mgmt.py", "file: ../Scripts/my_mgmt.py").
				edit(t, fDF, "        mgmt-drivers-kubernetes:\n", "        my-driver:\n").
				edit(t, fDF, "          instantiate_end:\n            implementation: mgmt-drivers-kubernetes\n          terminate_end:\n            implementation: mgmt-drivers-kubernetes\n          scale_start:\n            implementation: mgmt-drivers-kubernetes\n          scale_end:\n            implementation: mgmt-drivers-kubernetes\n",
					"          instantiate_end:\n            implementation: my-driver\n").csar(t)
		}, file: fDF, subs: []string{`artifact "my-driver" (file ../Scripts/my_mgmt.py) is not a management driver`}},
		{name: "builtin type without builtin file", pkg: bad(fDF, "type: tosca.artifacts.Implementation.Python", "type: tosca.artifacts.Implementation.Builtin"), file: fDF, subs: []string{"so its file must be builtin:<driver>"}},
		{name: "unknown hook", pkg: bad(fDF, "          instantiate: []\n", "          frobnicate_end:\n            implementation: mgmt-drivers-kubernetes\n"), file: fDF, subs: []string{`unknown Vnflcm operation "frobnicate_end"`}},

		// Heat templates.
		{name: "two top templates", pkg: func(t *testing.T) []byte {
			tr := base.clone()
			tr["BaseHOT/simple/other.yaml"] = tr[fHOT]
			return tr.csar(t)
		}, file: "BaseHOT/simple", subs: []string{"has 2 top-level templates", "move the nested ones"}},
		{name: "nested missing", pkg: bad(fHOT, "type: VDU1.yaml", "type: VDU9.yaml"), file: fHOT, line: base.lineOf(t, fHOT, "type: VDU1.yaml"), subs: []string{`template "VDU9.yaml" is not in the package`}},
		{name: "get_file missing", pkg: bad(fVDU1, "get_file: userdata.txt", "get_file: nope.txt"), file: fVDU1, subs: []string{`file "nope.txt" is not in the package`}},
		{name: "nfv vdu typo", pkg: bad(fHOT, "[ nfv, VDU, VDU1, image ]", "[ nfv, VDU, VDU11, image ]"), file: fHOT, line: base.lineOf(t, fHOT, "[ nfv, VDU, VDU1, image ]"), subs: []string{`flavour simple has no VDU "VDU11"`}},
		{name: "nfv cp typo", pkg: bad(fHOT, "[ nfv, CP, VDU1_CP1, network ]", "[ nfv, CP, VDU1_CP9, network ]"), file: fHOT, subs: []string{`no connection point "VDU1_CP9"`}},
		{name: "nfv param missing", pkg: bad(fHOT, "parameters:\n  nfv:\n    type: json\n", ""), file: fHOT, subs: []string{"declares no nfv parameter"}},
		{name: "not a hot", pkg: bad(fVDU1, "heat_template_version: 2013-05-23\n", ""), file: fVDU1, subs: []string{"not a Heat template"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.pkg(t)
			p, err := Open(bytes.NewReader(b), int64(len(b)), c.opts)
			if err == nil {
				t.Fatalf("Open succeeded (warnings %q)", p.Warnings())
			}
			wantError(t, err, c.file, c.line, c.subs...)
			t.Log(err)
		})
	}
}
