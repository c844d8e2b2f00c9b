package userdata

import (
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	has := func(p string) bool {
		return p == "UserData/base_user_data.py" || p == "UserData/k8s_cluster_user_data.py"
	}
	if sel, err := Select(map[string]any{"node_password": "x"}, has); sel != nil || err != nil {
		t.Errorf("no user data asked: %v %v", sel, err)
	}
	for _, tc := range []struct {
		name       string
		params     map[string]any
		wantClass  string
		wantPath   string
		wantErrors []string
	}{
		{name: "seed request", params: map[string]any{KeyPath: "UserData/base_user_data.py", KeyClass: "BaseUserData"},
			wantClass: "BaseUserData", wantPath: "UserData/base_user_data.py"},
		{name: "Tacker's kubeadm sample, ./ path", params: map[string]any{KeyPath: "./UserData/k8s_cluster_user_data.py", KeyClass: "KubernetesClusterUserData"},
			wantClass: "KubernetesClusterUserData", wantPath: "UserData/k8s_cluster_user_data.py"},
		{name: "unknown class", params: map[string]any{KeyPath: "UserData/base_user_data.py", KeyClass: "MyUserData"},
			wantErrors: []string{`additionalParams.lcm-operation-user-data-class: "MyUserData" is not a supported user-data class; supported (built-in Go equivalents, the package's Python is never run): BaseUserData, KubernetesClusterUserData, SampleUserData, StandardUserData`}},
		{name: "class only", params: map[string]any{KeyClass: "BaseUserData"},
			wantErrors: []string{"additionalParams.lcm-operation-user-data: is required with lcm-operation-user-data-class"}},
		{name: "path only", params: map[string]any{KeyPath: "UserData/base_user_data.py"},
			wantErrors: []string{"additionalParams.lcm-operation-user-data-class: is required with lcm-operation-user-data: give one of BaseUserData, KubernetesClusterUserData"}},
		{name: "missing file", params: map[string]any{KeyPath: "UserData/nope.py", KeyClass: "BaseUserData"},
			wantErrors: []string{`"UserData/nope.py" is not in the VNF package`}},
		{name: "outside the package", params: map[string]any{KeyPath: "../../etc/passwd", KeyClass: "BaseUserData"},
			wantErrors: []string{`"../../etc/passwd" must be a path inside the VNF package`}},
		{name: "absolute", params: map[string]any{KeyPath: "/usr/lib/x.py", KeyClass: "BaseUserData"},
			wantErrors: []string{"must be a path inside the VNF package"}},
		{name: "wrong types", params: map[string]any{KeyPath: 3.0, KeyClass: []any{"BaseUserData"}},
			wantErrors: []string{"lcm-operation-user-data: must be a string", "lcm-operation-user-data-class: must be a string"}},
		{name: "two problems at once", params: map[string]any{KeyPath: "", KeyClass: "Nope"},
			wantErrors: []string{`"" must be a path inside`, `"Nope" is not a supported`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(tc.params, has)
			if len(tc.wantErrors) > 0 {
				e, ok := err.(*Error)
				if !ok || sel != nil {
					t.Fatalf("want *Error, got %v %v", sel, err)
				}
				for _, w := range tc.wantErrors {
					if !strings.Contains(e.Error(), w) {
						t.Errorf("error %q lacks %q", e.Error(), w)
					}
				}
				if len(e.Problems) != len(tc.wantErrors) {
					t.Errorf("problems %q, want %d", e.Problems, len(tc.wantErrors))
				}
				return
			}
			if err != nil || sel.Class.Name != tc.wantClass || sel.Path != tc.wantPath {
				t.Fatalf("%+v %v", sel, err)
			}
			if n := sel.Note(); !strings.Contains(n, tc.wantClass) || !strings.Contains(n, "Python is not run") {
				t.Errorf("note %q", n)
			}
		})
	}
}
