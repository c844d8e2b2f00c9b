package k8sstandin

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KubernetesVersion is the version the stand-in reports (kubeadm, kubelet,
// kubectl, /version). The install script pins the same minor version.
const KubernetesVersion = "v1.31.4"

// Version of the stand-in itself.
const Version = "0.1.0"

// Obj is an unstructured Kubernetes object, as decoded from JSON.
type Obj = map[string]any

// resource describes one API resource the stand-in serves.
type resource struct {
	Name       string // plural, e.g. "pods"
	Singular   string
	Kind       string
	Group      string // "" = core
	Version    string
	Namespaced bool
	Short      []string
}

func (r *resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// qualified is the resource name as kubectl prints it: "clusterrolebinding.rbac.authorization.k8s.io".
func (r *resource) qualified() string {
	if r.Group == "" {
		return r.Singular
	}
	return r.Singular + "." + r.Group
}

var resources = []*resource{
	{Name: "nodes", Singular: "node", Kind: "Node", Version: "v1", Short: []string{"no"}},
	{Name: "namespaces", Singular: "namespace", Kind: "Namespace", Version: "v1", Short: []string{"ns"}},
	{Name: "pods", Singular: "pod", Kind: "Pod", Version: "v1", Namespaced: true, Short: []string{"po"}},
	{Name: "secrets", Singular: "secret", Kind: "Secret", Version: "v1", Namespaced: true},
	{Name: "serviceaccounts", Singular: "serviceaccount", Kind: "ServiceAccount", Version: "v1", Namespaced: true, Short: []string{"sa"}},
	{Name: "configmaps", Singular: "configmap", Kind: "ConfigMap", Version: "v1", Namespaced: true, Short: []string{"cm"}},
	{Name: "clusterrolebindings", Singular: "clusterrolebinding", Kind: "ClusterRoleBinding", Group: "rbac.authorization.k8s.io", Version: "v1"},
	{Name: "clusterroles", Singular: "clusterrole", Kind: "ClusterRole", Group: "rbac.authorization.k8s.io", Version: "v1"},
	{Name: "rolebindings", Singular: "rolebinding", Kind: "RoleBinding", Group: "rbac.authorization.k8s.io", Version: "v1", Namespaced: true},
	{Name: "roles", Singular: "role", Kind: "Role", Group: "rbac.authorization.k8s.io", Version: "v1", Namespaced: true},
	{Name: "certificatesigningrequests", Singular: "certificatesigningrequest", Kind: "CertificateSigningRequest", Group: "certificates.k8s.io", Version: "v1", Short: []string{"csr"}},
	// Stored only (no controller acts on them but the kuryr-controller
	// stand-in, which reads Services): what add-on manifests such as
	// Kuryr's apply.
	{Name: "services", Singular: "service", Kind: "Service", Version: "v1", Namespaced: true, Short: []string{"svc"}},
	{Name: "endpoints", Singular: "endpoints", Kind: "Endpoints", Version: "v1", Namespaced: true, Short: []string{"ep"}},
	{Name: "deployments", Singular: "deployment", Kind: "Deployment", Group: "apps", Version: "v1", Namespaced: true, Short: []string{"deploy"}},
	{Name: "daemonsets", Singular: "daemonset", Kind: "DaemonSet", Group: "apps", Version: "v1", Namespaced: true, Short: []string{"ds"}},
	{Name: "customresourcedefinitions", Singular: "customresourcedefinition", Kind: "CustomResourceDefinition", Group: "apiextensions.k8s.io", Version: "v1", Short: []string{"crd", "crds"}},
}

// resourceFor finds a resource by its API path (group, version, plural).
func resourceFor(group, version, name string) *resource {
	for _, r := range resources {
		if r.Group == group && r.Version == version && r.Name == name {
			return r
		}
	}
	return nil
}

// resourceByKind finds a resource by apiVersion and kind.
func resourceByKind(apiVersion, kind string) *resource {
	for _, r := range resources {
		if r.Kind == kind && (apiVersion == "" || r.APIVersion() == apiVersion) {
			return r
		}
	}
	return nil
}

// resourceByArg finds a resource by a kubectl argument: plural, singular,
// short name or kind, optionally qualified with its group.
func resourceByArg(arg string) *resource {
	a := strings.ToLower(arg)
	name, group, _ := strings.Cut(a, ".")
	for _, r := range resources {
		if group != "" && r.Group != group {
			continue
		}
		if name == r.Name || name == r.Singular || name == strings.ToLower(r.Kind) {
			return r
		}
		for _, s := range r.Short {
			if name == s {
				return r
			}
		}
	}
	return nil
}

func storeKey(r *resource, ns, name string) string {
	if r.Namespaced {
		return "/registry/" + r.Name + "/" + ns + "/" + name
	}
	return "/registry/" + r.Name + "/" + name
}

func storePrefix(r *resource, ns string) string {
	if r.Namespaced && ns != "" {
		return "/registry/" + r.Name + "/" + ns + "/"
	}
	return "/registry/" + r.Name + "/"
}

// path helpers on unstructured objects

func getMap(o Obj, path ...string) Obj {
	cur := o
	for _, p := range path {
		next, _ := cur[p].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

// ensureMap returns the map at path, creating missing levels.
func ensureMap(o Obj, path ...string) Obj {
	cur := o
	for _, p := range path {
		next, _ := cur[p].(map[string]any)
		if next == nil {
			next = Obj{}
			cur[p] = next
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
	if m == nil {
		return ""
	}
	s, _ := m[path[len(path)-1]].(string)
	return s
}

func getSlice(o Obj, path ...string) []any {
	if len(path) == 0 {
		return nil
	}
	m := getMap(o, path[:len(path)-1]...)
	if m == nil {
		return nil
	}
	s, _ := m[path[len(path)-1]].([]any)
	return s
}

func getBool(o Obj, path ...string) bool {
	if len(path) == 0 {
		return false
	}
	m := getMap(o, path[:len(path)-1]...)
	if m == nil {
		return false
	}
	b, _ := m[path[len(path)-1]].(bool)
	return b
}

func metaName(o Obj) string      { return getStr(o, "metadata", "name") }
func metaNamespace(o Obj) string { return getStr(o, "metadata", "namespace") }

func annotation(o Obj, k string) string { return getStr(o, "metadata", "annotations", k) }

func labelsOf(o Obj) map[string]string {
	out := map[string]string{}
	for k, v := range getMap(o, "metadata", "labels") {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// deepCopy copies a JSON-shaped value.
func deepCopy(o Obj) Obj {
	b, _ := json.Marshal(o)
	var out Obj
	_ = json.Unmarshal(b, &out)
	return out
}

func decodeObj(b []byte) (Obj, error) {
	var o Obj
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// newUID returns a random RFC 4122 version 4 UUID.
func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// randSuffix is a generateName suffix: 5 characters of Kubernetes' alphabet.
func randSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// mergePatch applies an RFC 7386 JSON merge patch to target (in place) and
// returns it. Strategic merge patches are applied the same way, which is
// enough for what the stand-in's clients send (labels, annotations,
// spec.unschedulable, whole condition lists).
func mergePatch(target Obj, patch Obj) Obj {
	if target == nil {
		target = Obj{}
	}
	for k, v := range patch {
		if v == nil {
			delete(target, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			tm, _ := target[k].(map[string]any)
			target[k] = mergePatch(tm, pm)
			continue
		}
		target[k] = v
	}
	return target
}

// age renders a duration like kubectl (5s, 3m, 2h, 4d).
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	default:
		return strconv.Itoa(int(d.Hours()/24)) + "d"
	}
}
