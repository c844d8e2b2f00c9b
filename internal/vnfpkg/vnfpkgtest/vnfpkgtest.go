// Package vnfpkgtest gives tests the sample VNF packages of samples/ as CSAR
// bytes, built in memory like scripts/make-samples.sh builds them.
package vnfpkgtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
)

// Samples are the package trees under samples/.
var Samples = []string{"kubeadm-single", "kubeadm-ha", "kubespray", "kubeadm-kuryr", "kubeadm-tosca"}

// VnfdIDs are the samples' descriptor ids.
var VnfdIDs = map[string]string{
	"kubeadm-single": "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b21",
	"kubeadm-ha":     "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b22",
	"kubespray":      "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b23",
	"kubeadm-kuryr":  "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b26",
	"kubeadm-tosca":  "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b25",
}

// SamplesDir is the absolute path of the repository's samples/ directory.
func SamplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "samples")
}

// CSAR returns samples/<name> zipped as a CSAR with TOSCA.meta hashes.
func CSAR(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := vnfpkg.BuildCSAR(os.DirFS(filepath.Join(SamplesDir(), name)))
	if err != nil {
		tb.Fatalf("vnfpkgtest: building sample %s: %v", name, err)
	}
	return b
}
