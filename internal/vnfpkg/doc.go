// Package vnfpkg reads VNF packages: SOL004 CSARs holding a SOL001 VNFD, in
// the layout OpenStack Tacker uses, so Tacker's Kubernetes-cluster packages
// onboard unchanged.
//
// Open takes the ZIP through an io.ReaderAt and never extracts it. It rejects
// unsafe archives (absolute or ".." names, backslashes, symbolic links and
// special files, duplicate names, encrypted entries), bounds the archive size,
// the number of entries and the bytes each entry and the whole package
// actually decompress to, and bounds every YAML file (size, nodes with
// aliases expanded, depth). Then it reads, in order:
//
//   - TOSCA-Metadata/TOSCA.meta: TOSCA-Meta-File-Version, CSAR-Version,
//     Created-By, Entry-Definitions, ETSI-Entry-Manifest, and the artifact
//     blocks (Name: or Source:, Content-Type, Algorithm, Hash) after the
//     first, separated by blank lines. Every listed hash is verified (SHA-256,
//     SHA-384, SHA-512, spelt SHA-256, SHA256, sha-256 ...). Only software
//     images (.qcow2, .img, ...) and URIs may be listed without a hash.
//     Without TOSCA.meta, the single YAML file at the root is the entry.
//   - The manifest (ETSI-Entry-Manifest, or <entry>.mf at the root): its
//     Source/Algorithm/Hash entries are verified the same way.
//   - The VNFD: the entry file and its imports (relative to the importing
//     file, inside the package). The ETSI SOL001 type files
//     (etsi_nfv_sol001_*.yaml) may be absent: their types are built in, and
//     node/policy types of the package derived from them are honoured. A
//     deployment flavour is a file whose topology_template has
//     substitution_mappings.properties.flavour_id (Tacker style), or the
//     entry's own topology template when no such file exists.
//   - BaseHOT/<flavourId>/<top>.yaml and BaseHOT/<flavourId>/nested/*.yaml:
//     the Heat templates of each flavour, with every template and get_file
//     they reference and every get_param [nfv, VDU|CP, <id>, ...] checked.
//
// Every failure is an *Error naming the file and line and saying how to fix
// it: these are the onboarding errors users see.
//
// # Management-driver binding
//
// The VNF node's interfaces.Vnflcm.<hook>.implementation names an artifact of
// the VNF node; the artifact selects a built-in management driver. The native
// form names the driver explicitly with the builtin: scheme:
//
//	node_templates:
//	  VNF:
//	    type: company.provider.VNF
//	    interfaces:
//	      Vnflcm:
//	        instantiate_end:
//	          implementation: kubeadm-driver
//	        scale_end:
//	          implementation: kubeadm-driver
//	    artifacts:
//	      kubeadm-driver:
//	        description: mini-VNFM built-in kubeadm management driver
//	        type: tosca.artifacts.Implementation.Builtin
//	        file: builtin:kubeadm
//
// The artifact type tosca.artifacts.Implementation.Builtin (derived from
// tosca.artifacts.Implementation; packages need not define it) requires a
// builtin:<driver> file; any artifact whose file is builtin:<driver> binds to
// that driver whatever its type. The shorthand `implementation:
// builtin:kubeadm` needs no artifact. The kubeadm driver also runs the HA
// (several masters and a VIP) variant.
//
// Tacker's forms map to the same drivers, so its packages need no change: the
// artifact key mgmt-drivers-kubernetes, or an artifact file named
// kubernetes_mgmt.py, binds to kubeadm; mgmt-drivers-kubespray or
// kubespray_mgmt.py to kubespray; vnflcm_noop binds no driver. The Python
// file is never read or run and need not be in the package. An artifact key
// equal to a known driver name binds to it too. Anything else fails
// onboarding with the list of known drivers (Options.KnownDrivers).
//
// Implementations given for Vnflcm operations that are not hooks (instantiate,
// scale, ...) are ignored with a warning, as Tacker ignores them.
//
// # Summary
//
// Package.Summary returns the model.Vnfd the LCM engine and the drivers use:
// descriptor properties and vnfm_info; per flavour the VDUs (instances,
// flavor, image, virtual compute, CPs in NIC order with their virtual links,
// storages, per-level instance counts), scaling aspects (step deltas and the
// per-VDU deltas), instantiation levels, virtual links, storages, external
// and VIP CPs, the hook → driver map and the Heat template paths, and the
// nodes and policies no Heat is generated for (Flavour.Untranslated:
// tosca.nodes.Compute and network nodes, object/file storage, affinity and
// security group rules), which internal/hotgen refuses for a flavour
// without a base HOT.
package vnfpkg
