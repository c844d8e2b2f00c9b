package k8sstandin

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/mini-vnfm/mini-vnfm/internal/kubeworld/kubebin"
)

// KubernetesVersion is the release of the real binaries the stand-in runs.
const KubernetesVersion = kubebin.KubernetesVersion

// Version of the stand-in itself.
const Version = "0.2.0"

// Obj is an unstructured Kubernetes object, as decoded from JSON.
type Obj = map[string]any

func getMap(o Obj, path ...string) Obj {
	cur := o
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

func getStr(o Obj, path ...string) string {
	if len(path) == 0 {
		return ""
	}
	m := getMap(o, path[:len(path)-1]...)
	s, _ := m[path[len(path)-1]].(string)
	return s
}

func randHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func getSlice(o Obj, path ...string) []any {
	if len(path) == 0 {
		return nil
	}
	m := getMap(o, path[:len(path)-1]...)
	s, _ := m[path[len(path)-1]].([]any)
	return s
}

// resource names one API resource (for the kuryr-controller's client).
type resource struct {
	Name       string // plural, e.g. "pods"
	Group      string // "" = core
	Version    string
	Namespaced bool
}

var (
	resPods     = &resource{Name: "pods", Version: "v1", Namespaced: true}
	resourceSet = []*resource{resPods,
		{Name: "services", Version: "v1", Namespaced: true},
		{Name: "endpoints", Version: "v1", Namespaced: true},
		{Name: "nodes", Version: "v1"}}
)

// resourceFor finds a resource by group, version and plural.
func resourceFor(group, version, name string) *resource {
	for _, r := range resourceSet {
		if r.Group == group && r.Version == version && r.Name == name {
			return r
		}
	}
	return nil
}
