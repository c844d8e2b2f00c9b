package vnfpkg

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"testing/fstest"
)

// tree is a package source tree: path → content.
type tree map[string]string

func (t tree) clone() tree { return maps.Clone(t) }

// edit replaces old by new in file f (which must contain old).
func (t tree) edit(tb testing.TB, f, old, new string) tree {
	tb.Helper()
	c := t.clone()
	if !strings.Contains(c[f], old) {
		tb.Fatalf("%s does not contain %q", f, old)
	}
	c[f] = strings.Replace(c[f], old, new, 1)
	return c
}

// lineOf returns the 1-based line of the first occurrence of s in file f.
func (t tree) lineOf(tb testing.TB, f, s string) int {
	tb.Helper()
	i := strings.Index(t[f], s)
	if i < 0 {
		tb.Fatalf("%s does not contain %q", f, s)
	}
	return strings.Count(t[f][:i], "\n") + 1
}

func (t tree) fs() fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range t {
		m[k] = &fstest.MapFile{Data: []byte(v), Mode: 0o644}
	}
	return m
}

// csar builds the tree with BuildCSAR (TOSCA.meta gets SHA-256 hashes).
func (t tree) csar(tb testing.TB) []byte {
	tb.Helper()
	b, err := BuildCSAR(t.fs())
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// zent is a raw archive entry.
type zent struct {
	name  string
	body  string
	mode  fs.FileMode
	flags uint16
	// declared, when set, is the uncompressed size written in the headers
	// whatever body's real size (a lying header).
	declared uint64
}

// rawZip builds an archive exactly as described, entries in order.
func rawZip(tb testing.TB, ents ...zent) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: BuildEpoch, Flags: e.flags}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h.SetMode(mode)
		if e.declared > 0 {
			var comp bytes.Buffer
			fw, _ := flate.NewWriter(&comp, flate.BestCompression)
			fw.Write([]byte(e.body))
			fw.Close()
			h.CompressedSize64 = uint64(comp.Len())
			h.UncompressedSize64 = e.declared
			h.CRC32 = crc32.ChecksumIEEE([]byte(e.body))
			w, err := zw.CreateRaw(h)
			if err != nil {
				tb.Fatal(err)
			}
			w.Write(comp.Bytes())
			continue
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			tb.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// zipTree zips a tree as is (no TOSCA.meta generation), sorted.
func zipTree(tb testing.TB, t tree) []byte {
	var ents []zent
	for _, k := range sortedKeys(t) {
		ents = append(ents, zent{name: k, body: t[k]})
	}
	return rawZip(tb, ents...)
}

func openBytes(b []byte, o Options) (*Package, error) {
	return Open(bytes.NewReader(b), int64(len(b)), o)
}

// mustOpen opens b and fails the test on error.
func mustOpen(tb testing.TB, b []byte) *Package {
	tb.Helper()
	p, err := openBytes(b, Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return p
}

// wantError checks err is an *Error for file (and line when > 0) whose
// message contains every substring.
func wantError(tb testing.TB, err error, file string, line int, subs ...string) {
	tb.Helper()
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("want *Error, got %T %v", err, err)
	}
	if e.File != file {
		tb.Errorf("error file = %q, want %q (%v)", e.File, file, e)
	}
	if line > 0 && e.Line != line {
		tb.Errorf("error line = %d, want %d (%v)", e.Line, line, e)
	}
	for _, s := range subs {
		if !strings.Contains(e.Error(), s) {
			tb.Errorf("error %q does not contain %q", e.Error(), s)
		}
	}
}

// Tacker-style test package: ETSI type files absent, company.provider.VNF in
// a types file, one flavour file, mgmt-drivers-kubernetes.
const (
	fTop   = "Definitions/top.vnfd.yaml"
	fTypes = "Definitions/types.yaml"
	fDF    = "Definitions/df_simple.yaml"
	fHOT   = "BaseHOT/simple/top.hot.yaml"
	fVDU1  = "BaseHOT/simple/nested/VDU1.yaml"
)

func baseTree() tree {
	return tree{
		metaPath: "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: Dummy User\nEntry-Definitions: " + fTop + "\n",
		fTop: `tosca_definitions_version: tosca_simple_yaml_1_2
description: Sample VNF
imports:
  - etsi_nfv_sol001_common_types.yaml
  - etsi_nfv_sol001_vnfd_types.yaml
  - types.yaml
  - df_simple.yaml
topology_template:
  inputs:
    selected_flavour:
      type: string
  node_templates:
    VNF:
      type: company.provider.VNF
      properties:
        flavour_id: { get_input: selected_flavour }
        descriptor_id: b1db0ce7-ebca-1fb7-95ed-4840d70a1163
        provider: Company
        product_name: Sample VNF
        software_version: '1.0'
        descriptor_version: '1.0'
        vnfm_info:
          - Tacker
`,
		fTypes: `tosca_definitions_version: tosca_simple_yaml_1_2
description: VNF type definition
imports:
  - etsi_nfv_sol001_common_types.yaml
  - etsi_nfv_sol001_vnfd_types.yaml
node_types:
  company.provider.VNF:
    derived_from: tosca.nodes.nfv.VNF
    properties:
      flavour_id:
        type: string
        constraints: [ valid_values: [ simple ] ]
        default: simple
      flavour_description:
        type: string
        default: ""
    interfaces:
      Vnflcm:
        type: tosca.interfaces.nfv.Vnflcm
  company.provider.Port:
    derived_from: tosca.nodes.nfv.VduCp
`,
		fDF: `tosca_definitions_version: tosca_simple_yaml_1_2
description: Simple deployment flavour
imports:
  - etsi_nfv_sol001_common_types.yaml
  - etsi_nfv_sol001_vnfd_types.yaml
  - types.yaml
topology_template:
  substitution_mappings:
    node_type: company.provider.VNF
    properties:
      flavour_id: simple
    requirements:
      virtual_link_external1_1: [ VDU1_CP1, virtual_link ]
  node_templates:
    VNF:
      type: company.provider.VNF
      properties:
        flavour_description: A simple flavour
      interfaces:
        Vnflcm:
          instantiate: []
          instantiate_start: []
          instantiate_end:
            implementation: mgmt-drivers-kubernetes
          terminate_end:
            implementation: mgmt-drivers-kubernetes
          scale_start:
            implementation: mgmt-drivers-kubernetes
          scale_end:
            implementation: mgmt-drivers-kubernetes
      artifacts:
        mgmt-drivers-kubernetes:
          description: Management driver for kubernetes cluster
          type: tosca.artifacts.Implementation.Python
          file: ../Scripts/kubernetes_mgmt.py
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: masterNode
        vdu_profile:
          min_number_of_instances: 1
          max_number_of_instances: 3
        sw_image_data:
          name: ubuntu-20.04
          version: '20.04'
          checksum:
            algorithm: sha-512
            hash: abc
          container_format: bare
          disk_format: qcow2
          min_disk: 0 GB
          size: 2 GB
      capabilities:
        virtual_compute:
          properties:
            requested_additional_capabilities:
              properties:
                requested_additional_capability_name: m1.medium
                support_mandatory: true
            virtual_memory:
              virtual_mem_size: 4 GB
            virtual_cpu:
              num_virtual_cpu: 2
      requirements:
        - virtual_storage: VirtualStorage
    VDU2:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: workerNode
        vdu_profile:
          min_number_of_instances: 2
          max_number_of_instances: 4
      capabilities:
        virtual_compute:
          properties:
            requested_additional_capabilities:
              properties:
                requested_additional_capability_name: m1.small
    VirtualStorage:
      type: tosca.nodes.nfv.Vdu.VirtualBlockStorage
      properties:
        virtual_block_storage_data:
          size_of_storage: 10 GB
    VDU1_CP1:
      type: tosca.nodes.nfv.VduCp
      properties:
        layer_protocols: [ ipv4 ]
        order: 0
      requirements:
        - virtual_binding: VDU1
    VDU1_CP2:
      type: company.provider.Port
      properties:
        layer_protocols: [ ipv4 ]
        order: 1
      requirements:
        - virtual_binding: VDU1
        - virtual_link: internalVL
    VDU2_CP1:
      type: tosca.nodes.nfv.VduCp
      properties:
        order: 0
      requirements:
        - virtual_binding: VDU2
        - virtual_link: internalVL
    internalVL:
      type: tosca.nodes.nfv.VnfVirtualLink
      properties:
        connectivity_type:
          layer_protocols: [ ipv4 ]
        vl_profile:
          virtual_link_protocol_data:
            - associated_layer_protocol: ipv4
              l3_protocol_data:
                ip_version: ipv4
                cidr: 10.10.0.0/24
  policies:
    - scaling_aspects:
        type: tosca.policies.nfv.ScalingAspects
        properties:
          aspects:
            vdu1_aspect:
              name: vdu1_aspect
              max_scale_level: 2
              step_deltas:
                - delta_1
            vdu2_aspect:
              name: vdu2_aspect
              max_scale_level: 2
              step_deltas:
                - delta_1
    - VDU1_initial_delta:
        type: tosca.policies.nfv.VduInitialDelta
        properties:
          initial_delta:
            number_of_instances: 1
        targets: [ VDU1 ]
    - VDU2_initial_delta:
        type: tosca.policies.nfv.VduInitialDelta
        properties:
          initial_delta:
            number_of_instances: 2
        targets: [ VDU2 ]
    - VDU1_scaling_aspect_deltas:
        type: tosca.policies.nfv.VduScalingAspectDeltas
        properties:
          aspect: vdu1_aspect
          deltas:
            delta_1:
              number_of_instances: 1
        targets: [ VDU1 ]
    - VDU2_scaling_aspect_deltas:
        type: tosca.policies.nfv.VduScalingAspectDeltas
        properties:
          aspect: vdu2_aspect
          deltas:
            delta_1:
              number_of_instances: 1
        targets: [ VDU2 ]
    - instantiation_levels:
        type: tosca.policies.nfv.InstantiationLevels
        properties:
          levels:
            instantiation_level_1:
              description: Smallest size
              scale_info:
                vdu1_aspect:
                  scale_level: 0
                vdu2_aspect:
                  scale_level: 0
            instantiation_level_2:
              description: Largest size
              scale_info:
                vdu1_aspect:
                  scale_level: 2
                vdu2_aspect:
                  scale_level: 2
          default_level: instantiation_level_1
    - VDU1_instantiation_levels:
        type: tosca.policies.nfv.VduInstantiationLevels
        properties:
          levels:
            instantiation_level_1:
              number_of_instances: 1
            instantiation_level_2:
              number_of_instances: 3
        targets: [ VDU1 ]
`,
		fHOT: `heat_template_version: 2013-05-23
parameters:
  nfv:
    type: json
resources:
  vdu1_aspect:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 3
      desired_capacity: 1
      resource:
        type: VDU1.yaml
        properties:
          flavor: { get_param: [ nfv, VDU, VDU1, flavor ] }
          image: { get_param: [ nfv, VDU, VDU1, image ] }
          net1: { get_param: [ nfv, CP, VDU1_CP1, network ] }
`,
		fVDU1: `heat_template_version: 2013-05-23
parameters:
  flavor: {type: string}
  image: {type: string}
  net1: {type: string}
resources:
  VDU1:
    type: OS::Nova::Server
    properties:
      flavor: { get_param: flavor }
      image: { get_param: image }
      networks:
        - port: { get_resource: VDU1_CP1 }
      user_data: { get_file: userdata.txt }
  VDU1_CP1:
    type: OS::Neutron::Port
    properties:
      network: { get_param: net1 }
`,
		"BaseHOT/simple/nested/userdata.txt": "#cloud-config\n",
		"Scripts/install.sh":                 "#!/bin/sh\necho hi\n",
	}
}
