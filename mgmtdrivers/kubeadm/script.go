package kubeadm

import (
	_ "embed"
	"strings"
)

//go:generate sh gen_script.sh

// builtinScript is scripts/install_k8s_cluster.sh (a generated copy, kept
// current by gen_script.sh; TestScriptCopiesAreCurrent checks it): the
// installer run when k8s_cluster_installation_param.script_path is not
// given.
//
//go:embed install_k8s_cluster.sh
var builtinScript []byte

// isOurScript tells our installer (which prints VNFM_RESULT lines) from
// other scripts, such as Tacker's sample install_k8s_cluster.sh.
func isOurScript(b []byte) bool { return strings.Contains(string(b), "VNFM_RESULT") }
