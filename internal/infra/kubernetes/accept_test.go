package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	kdrv "github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

const deploymentDoc = `apiVersion: apps/v1
kind: Deployment
metadata: {name: vdu2}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: nginx}]}
`

// TestAcceptRefusesHostileManifests: what cannot deploy, or should not, is
// refused when the request is accepted — nothing is created — with a detail
// naming the file, the document and the fix. No API server is needed.
func TestAcceptRefusesHostileManifests(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
	deep := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n"
	many := strings.Repeat("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", 1)
	var manyDocs strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&manyDocs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\n", i)
	}
	cases := []struct {
		name   string
		files  map[string]string
		params map[string]any // default: every file in order
		want   []string
	}{
		{name: "no def files", files: map[string]string{"a.yaml": many}, params: map[string]any{}, want: []string{"lcm-kubernetes-def-files is required"}},
		{name: "def files not a list", files: map[string]string{"a.yaml": many}, params: map[string]any{kdrv.ParamDefFiles: "a.yaml"}, want: []string{"non-empty list"}},
		{name: "missing file", files: map[string]string{}, params: map[string]any{kdrv.ParamDefFiles: []any{"Files/kubernetes/none.yaml"}}, want: []string{"Files/kubernetes/none.yaml", "cannot be read"}},
		{name: "URL", files: map[string]string{}, params: map[string]any{kdrv.ParamDefFiles: []any{"http://127.0.0.1:1/x.yaml"}}, want: []string{"is a URL"}},
		{name: "unknown kind", files: map[string]string{"a.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"}, want: []string{"a.yaml, document 1", `kind "Widget"`, "supported kinds"}},
		{name: "other api version", files: map[string]string{"a.yaml": "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\n"}, want: []string{"write apiVersion: autoscaling/v1"}},
		{name: "node", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"}, want: []string{"Node is not deployed as part of a VNF"}},
		{name: "cluster-scoped with a namespace", files: map[string]string{"a.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: admin-ish, namespace: tenant}\nrules: []\n"}, want: []string{"cluster-scoped", "metadata.namespace"}},
		{name: "yaml bomb", files: map[string]string{"a.yaml": bomb}, want: []string{"anchors and aliases are not accepted"}},
		{name: "deep nesting", files: map[string]string{"a.yaml": deep}, want: []string{"nests deeper"}},
		{name: "huge file", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"" + strings.Repeat("x", 2<<20) + "\"}\n"}, want: []string{"more than the 1048576 allowed"}},
		{name: "too many documents", files: map[string]string{"a.yaml": manyDocs.String()}, want: []string{"more documents than the 500 allowed"}},
		{name: "not YAML", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: [\n"}, want: []string{"a.yaml, document 1: invalid YAML"}},
		{name: "duplicate key", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: x}\n"}, want: []string{`key "kind" is defined twice`}},
		{name: "no name", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n"}, want: []string{"generateName but no metadata.name"}},
		{name: "bad name", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_Valid}\n"}, want: []string{`name "Not_Valid" is not valid`}},
		{name: "defined twice", files: map[string]string{"a.yaml": many, "b.yaml": many}, want: []string{"ConfigMap/x is defined twice"}},
		{name: "two namespaces", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: one}\n", "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y, namespace: two}\n"}, want: []string{"more than one namespace", "additionalParams.namespace"}},
		{name: "workload without VDU", files: map[string]string{"a.yaml": strings.Replace(deploymentDoc, "vdu2", "orphan", 1)}, want: []string{"Deployment/orphan", "no VDU of flavour simple names"}},
		{name: "daemonset on a scaled VDU", files: map[string]string{"a.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: vdu2}\nspec: {}\n"}, want: []string{"cannot be scaled"}},
		{name: "vdu_mapping to an unknown VDU", files: map[string]string{"a.yaml": deploymentDoc},
			params: map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}, kdrv.ParamVduMapping: map[string]any{"VDU9": map[string]any{"kind": "Deployment", "name": "vdu2"}}}, want: []string{"VDU9"}},
		{name: "bad namespace", files: map[string]string{"a.yaml": many}, params: map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}, kdrv.ParamNamespace: "Bad_NS"}, want: []string{"not a valid namespace name"}},
		{name: "owner references", files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u}]}\n"}, want: []string{"ownerReferences"}},
		{name: "empty", files: map[string]string{"a.yaml": "---\n---\n"}, want: []string{"hold no Kubernetes object"}},
		{name: "helm mode", files: map[string]string{"a.yaml": deploymentDoc}, params: map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}, "use_helm": "true"},
			want: []string{"additionalParams.use_helm: Tacker's Helm mode is not supported", "helm template", "lcm-kubernetes-def-files"}},
		{name: "helm parameters", files: map[string]string{"a.yaml": deploymentDoc},
			params: map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}, "using_helm_install_param": []any{map[string]any{"exthelmchart": "false"}}},
			want:   []string{"additionalParams.using_helm_install_param: Tacker's Helm mode is not supported"}},
	}
	drv := kdrv.New(kdrv.Options{})
	vim := model.VimConnectionInfo{ID: "v", VimType: driverapi.VimTypeKubernetes, InterfaceInfo: map[string]any{"endpoint": "https://127.0.0.1:6443"}, AccessInfo: map[string]any{"bearer_token": "t"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkg := mapPackage(tc.files)
			p := tc.params
			if p == nil {
				var fs []any
				names, _ := pkg.Files(context.Background())
				for _, n := range names {
					fs = append(fs, n)
				}
				p = map[string]any{kdrv.ParamDefFiles: fs}
			}
			fl := flavour()
			err := drv.CheckRequest(context.Background(), &driverapi.Accept{Operation: model.OpInstantiate, Flavour: fl, Package: pkg,
				Instance: &model.VnfInstance{ID: "i", VimConnectionInfo: []model.VimConnectionInfo{vim}},
				Request:  driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: p}}})
			if err == nil {
				t.Fatalf("accepted; want a refusal containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not contain %q", err, w)
				}
			}
		})
	}
	// Helm mode turned off, as Tacker's clients may send it, is no Helm mode.
	for _, off := range []any{false, "false", "False", "FALSE", "", nil} {
		err := drv.CheckRequest(context.Background(), &driverapi.Accept{Operation: model.OpInstantiate, Flavour: flavour(), Package: mapPackage{"a.yaml": deploymentDoc},
			Instance: &model.VnfInstance{ID: "i", VimConnectionInfo: []model.VimConnectionInfo{vim}},
			Request:  driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}, "use_helm": off}}}})
		if err != nil {
			t.Errorf("use_helm %#v: %v", off, err)
		}
	}
}

// TestAcceptVimConnection: the VIM connection must carry an API server
// URL and credentials the driver can use.
func TestAcceptVimConnection(t *testing.T) {
	pkg := mapPackage{"a.yaml": deploymentDoc}
	p := map[string]any{kdrv.ParamDefFiles: []any{"a.yaml"}}
	for _, tc := range []struct {
		vim  *model.VimConnectionInfo
		want string
	}{
		{nil, "vimConnectionInfo"},
		{&model.VimConnectionInfo{ID: "v", AccessInfo: map[string]any{"bearer_token": "t"}}, "no Kubernetes API server URL"},
		{&model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": "https://k:6443"}}, "no Kubernetes credentials"},
		{&model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": "https://k:6443"}, AccessInfo: map[string]any{"oidc_token_url": "https://idp/token", "username": "u", "password": "p"}}, "lacks username, password or client_id"},
		{&model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": "https://k:6443"}, AccessInfo: map[string]any{"oidc_token_url": "idp/token", "username": "u", "password": "p", "client_id": "c"}}, "oidc_token_url \"idp/token\" is not an http(s) URL"},
		{&model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": "https://k:6443"}, AccessInfo: map[string]any{"oidc_token_url": "https://idp/token", "username": "u", "password": "p", "client_id": "c"}}, ""},
		{&model.VimConnectionInfo{ID: "v", InterfaceInfo: map[string]any{"endpoint": "https://k:6443"}, AccessInfo: map[string]any{"username": "u", "password": "p"}}, ""},
	} {
		in := &model.VnfInstance{ID: "i"}
		if tc.vim != nil {
			in.VimConnectionInfo = []model.VimConnectionInfo{*tc.vim}
		}
		err := kdrv.New(kdrv.Options{}).CheckRequest(context.Background(), &driverapi.Accept{Operation: model.OpInstantiate, Flavour: flavour(), Package: pkg, Instance: in,
			Request: driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple", AdditionalParams: p}}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.vim, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.vim, err, tc.want)
		}
	}
}

// TestAcceptScaleAndChangeExtConn: a scale of an aspect no workload backs,
// beyond vdu_profile, or reversed is refused; change_ext_conn always is.
func TestAcceptScaleAndChangeExtConn(t *testing.T) {
	drv := kdrv.New(kdrv.Options{})
	cm := mapPackage{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "d.yaml": deploymentDoc}
	in := func(file string, level int) *model.VnfInstance {
		return &model.VnfInstance{ID: "i", InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple",
			ScaleStatus: []model.ScaleInfo{{AspectID: "vdu2_aspect", ScaleLevel: level}}, AdditionalParams: map[string]any{kdrv.ParamDefFiles: []any{file}}}}
	}
	one := 1
	scale := func(typ string, extra map[string]any) driverapi.Request {
		return driverapi.Request{Scale: &model.ScaleVnfRequest{Type: typ, AspectID: "vdu2_aspect", NumberOfSteps: &one, AdditionalParams: extra}}
	}
	for _, tc := range []struct {
		in   *model.VnfInstance
		req  driverapi.Request
		want string
	}{
		{in("a.yaml", 0), scale(model.ScaleOut, nil), "no workload of the deployed manifests backs"},
		{in("d.yaml", 2), scale(model.ScaleOut, nil), "vdu_profile"},
		{in("d.yaml", 1), scale(model.ScaleIn, map[string]any{"is_reverse": "True"}), "is_reverse"},
		{in("d.yaml", 1), scale(model.ScaleIn, nil), ""},
		{in("d.yaml", 1), driverapi.Request{ChangeExtConn: &model.ChangeExtVnfConnectivityRequest{}}, "change_ext_conn is not supported"},
	} {
		err := drv.CheckRequest(context.Background(), &driverapi.Accept{Flavour: flavour(), Package: cm, Instance: tc.in, Request: tc.req})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.req, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.req.Scale, err, tc.want)
		}
	}
}
