// Package apitest provides conformance checks for tests of the /vnflcm/v1
// API: responses are validated against our OpenAPI document and against the
// ETSI NFV-TST 010 v2.6.1 JSON Schemas.
//
// The ETSI files are reference data that must not be committed to this
// repository. They are read at run time from the shared folder, which CI
// clones next to the repository (../shared relative to the repository root);
// the environment variable VNFM_SHARED_DIR points elsewhere. Tests that need
// them fail, never skip, when they are missing: a conformance suite that
// silently skips proves nothing.
package apitest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SharedDirEnv names the environment variable overriding the shared folder.
const SharedDirEnv = "VNFM_SHARED_DIR"

// tstRelDir is where the NFV-TST 010 v2.6.1 SOL003 VNF LCM data files live
// inside the shared folder.
const tstRelDir = "etsi/api-tests-2.6.1-fix-plu/SOL003/VNFLifecycleManagement-API"

// SharedDir returns the shared reference folder, or fails t with a message
// saying where it was looked for and how to provide it.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := findSharedDir()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	return dir
}

// TSTDir returns the folder holding the NFV-TST 010 v2.6.1 SOL003 VNF LCM
// data files (subfolders jsons/ and schemas/), or fails t.
func TSTDir(t testing.TB) string {
	t.Helper()
	dir, err := findTSTDir()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	return dir
}

// TSTRequestBody returns the content of jsons/<name> from the NFV-TST 010
// data (e.g. "instantiateVnfRequest.json"), or fails t.
func TSTRequestBody(t testing.TB, name string) []byte {
	t.Helper()
	p := filepath.Join(TSTDir(t), "jsons", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("apitest: read NFV-TST 010 request body: %v", err)
	}
	return b
}

func findTSTDir() (string, error) {
	shared, err := findSharedDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(shared, filepath.FromSlash(tstRelDir))
	if st, err := os.Stat(filepath.Join(dir, "schemas")); err != nil || !st.IsDir() {
		return "", fmt.Errorf("NFV-TST 010 v2.6.1 data not found: %s/schemas does not exist in the shared folder %s (set %s to a folder containing %s)",
			dir, shared, SharedDirEnv, tstRelDir)
	}
	return dir, nil
}

func findSharedDir() (string, error) {
	if env := os.Getenv(SharedDirEnv); env != "" {
		abs, err := filepath.Abs(env)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %v", SharedDirEnv, env, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", fmt.Errorf("%s=%q is not a directory: the shared reference data (ETSI NFV-TST 010 schemas) are needed by the API conformance tests", SharedDirEnv, env)
		}
		return abs, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("shared reference folder not found at %s: clone it next to the repository (as CI does) or set %s; the API conformance tests need the ETSI NFV-TST 010 schemas it holds",
			dir, SharedDirEnv)
	}
	return dir, nil
}

// repoRoot walks up from the working directory (a package directory while
// tests run) to the directory holding go.mod. Walking avoids running the go
// command from tests.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s: cannot locate the repository root to find ../shared (set %s)", wd, SharedDirEnv)
		}
		dir = parent
	}
}
