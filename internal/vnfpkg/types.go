package vnfpkg

import "strings"

// SOL001 (v2.6.1 … v4.x) type names the reader acts on.
const (
	typeVNF          = "tosca.nodes.nfv.VNF"
	typeVDU          = "tosca.nodes.nfv.Vdu.Compute"
	typeBlockStorage = "tosca.nodes.nfv.Vdu.VirtualBlockStorage"
	typeCp           = "tosca.nodes.nfv.Cp"
	typeVduCp        = "tosca.nodes.nfv.VduCp"
	typeExtCp        = "tosca.nodes.nfv.VnfExtCp"
	typeVipCp        = "tosca.nodes.nfv.VipCp"
	typeVL           = "tosca.nodes.nfv.VnfVirtualLink"

	policyScalingAspects   = "tosca.policies.nfv.ScalingAspects"
	policyAspectDeltas     = "tosca.policies.nfv.VduScalingAspectDeltas"
	policyInitialDelta     = "tosca.policies.nfv.VduInitialDelta"
	policyInstLevels       = "tosca.policies.nfv.InstantiationLevels"
	policyVduInstLevels    = "tosca.policies.nfv.VduInstantiationLevels"
	interfaceVnflcm        = "tosca.interfaces.nfv.Vnflcm"
	artifactBuiltin        = "tosca.artifacts.Implementation.Builtin"
	artifactImplementation = "tosca.artifacts.Implementation"
)

// builtinNodeTypes are the SOL001 and TOSCA normative node types with their
// parent, so packages need not ship the ETSI type files.
var builtinNodeTypes = map[string]string{
	"tosca.nodes.Root":                         "",
	"tosca.nodes.Compute":                      "tosca.nodes.Root",
	"tosca.nodes.SoftwareComponent":            "tosca.nodes.Root",
	"tosca.nodes.BlockStorage":                 "tosca.nodes.Root",
	"tosca.nodes.network.Network":              "tosca.nodes.Root",
	"tosca.nodes.network.Port":                 "tosca.nodes.Root",
	"tosca.nodes.LoadBalancer":                 "tosca.nodes.Root",
	typeVNF:                                    "tosca.nodes.Root",
	typeVDU:                                    "tosca.nodes.Root",
	typeBlockStorage:                           "tosca.nodes.Root",
	"tosca.nodes.nfv.Vdu.VirtualObjectStorage": "tosca.nodes.Root",
	"tosca.nodes.nfv.Vdu.VirtualFileStorage":   "tosca.nodes.Root",
	"tosca.nodes.nfv.Vdu.OsContainer":          "tosca.nodes.Root",
	"tosca.nodes.nfv.Mciop":                    "tosca.nodes.Root",
	typeCp:                                     "tosca.nodes.Root",
	typeVduCp:                                  typeCp,
	typeExtCp:                                  typeCp,
	typeVipCp:                                  typeCp,
	"tosca.nodes.nfv.VirtualCp":                typeCp,
	typeVL:                                     "tosca.nodes.Root",
	"tosca.nodes.nfv.Vdu.OsContainerDeployableUnit":   "tosca.nodes.Root",
	"tosca.nodes.nfv.VNF.Interfaces.Vnflcm.Operation": "tosca.nodes.Root",
}

// builtinPolicyTypes are the SOL001 and normative policy types.
var builtinPolicyTypes = map[string]string{
	"tosca.policies.Root":                                      "",
	"tosca.policies.Placement":                                 "tosca.policies.Root",
	"tosca.policies.Scaling":                                   "tosca.policies.Root",
	"tosca.policies.Update":                                    "tosca.policies.Root",
	"tosca.policies.Performance":                               "tosca.policies.Root",
	policyInstLevels:                                           "tosca.policies.Root",
	policyVduInstLevels:                                        "tosca.policies.Root",
	"tosca.policies.nfv.VirtualLinkInstantiationLevels":        "tosca.policies.Root",
	policyScalingAspects:                                       "tosca.policies.Root",
	policyAspectDeltas:                                         "tosca.policies.Root",
	"tosca.policies.nfv.VirtualLinkBitrateScalingAspectDeltas": "tosca.policies.Root",
	policyInitialDelta:                                         "tosca.policies.Root",
	"tosca.policies.nfv.VirtualLinkBitrateInitialDelta":        "tosca.policies.Root",
	"tosca.policies.nfv.AffinityRule":                          "tosca.policies.Placement",
	"tosca.policies.nfv.AntiAffinityRule":                      "tosca.policies.Placement",
	"tosca.policies.nfv.SecurityGroupRule":                     "tosca.policies.Root",
	"tosca.policies.nfv.SupportedVnfInterface":                 "tosca.policies.Root",
	"tosca.policies.nfv.VnfIndicator":                          "tosca.policies.Root",
	"tosca.policies.nfv.VnfPackageChange":                      "tosca.policies.Root",
	"tosca.policies.nfv.LcmCoordinationAction":                 "tosca.policies.Root",
}

// builtinArtifactTypes are the normative and SOL001 artifact types, plus
// mini-VNFM's tosca.artifacts.Implementation.Builtin.
var builtinArtifactTypes = map[string]string{
	"tosca.artifacts.Root":                       "",
	"tosca.artifacts.File":                       "tosca.artifacts.Root",
	"tosca.artifacts.Deployment":                 "tosca.artifacts.Root",
	"tosca.artifacts.Deployment.Image":           "tosca.artifacts.Deployment",
	"tosca.artifacts.Deployment.Image.VM":        "tosca.artifacts.Deployment.Image",
	"tosca.artifacts.nfv.SwImage":                "tosca.artifacts.Deployment.Image",
	"tosca.artifacts.nfv.HelmChart":              "tosca.artifacts.Root",
	artifactImplementation:                       "tosca.artifacts.Root",
	"tosca.artifacts.Implementation.Bash":        artifactImplementation,
	"tosca.artifacts.Implementation.Python":      artifactImplementation,
	"tosca.artifacts.Implementation.Ansible":     artifactImplementation,
	"tosca.artifacts.Implementation.nfv.Mistral": artifactImplementation,
	artifactBuiltin:                              artifactImplementation,
}

// etsiTypeFiles are type files a package may import without shipping them:
// their content is built in.
func isETSITypeFile(ref string) bool {
	base := ref[strings.LastIndex(ref, "/")+1:]
	return strings.HasPrefix(base, "etsi_nfv_sol001_") && isYAMLName(base)
}

// typeDef is a type defined in the package.
type typeDef struct {
	name, parent string
	file         string
	v            val // the definition
}

// typeSystem resolves a type name to the SOL001 type it derives from.
type typeSystem struct {
	builtin map[string]string
	defs    map[string]*typeDef
}

// derivesFrom reports whether name is base or derives from it.
func (ts *typeSystem) derivesFrom(name, base string) bool {
	for i := 0; name != "" && i < 64; i++ {
		if name == base {
			return true
		}
		if p, ok := ts.builtin[name]; ok {
			name = p
			continue
		}
		d, ok := ts.defs[name]
		if !ok {
			return false
		}
		name = d.parent
	}
	return false
}

// known reports whether name is a built-in or package type.
func (ts *typeSystem) known(name string) bool {
	_, b := ts.builtin[name]
	_, d := ts.defs[name]
	return b || d
}

// chain returns the package-defined types from name up to the first built-in
// one (child first).
func (ts *typeSystem) chain(name string) []*typeDef {
	var out []*typeDef
	for i := 0; i < 64; i++ {
		if _, ok := ts.builtin[name]; ok {
			return out
		}
		d, ok := ts.defs[name]
		if !ok {
			return out
		}
		out = append(out, d)
		name = d.parent
	}
	return out
}
