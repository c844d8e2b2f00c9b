package kubeadm

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		tok := newToken()
		if !tokenRE.MatchString(tok) {
			t.Fatalf("token %q is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q twice", tok)
		}
		seen[tok] = true
	}
}

// The Secrets are kubeadm's bootstrap tokens: what kubeadm token create
// writes, with the expiry left for the master to fill in.
func TestTokenSecrets(t *testing.T) {
	toks := map[string]string{"w1": "abcdef.0123456789abcdef", "m2": "ghijkl.0123456789ghijkl"}
	desc := map[string]string{"w1": `mini-VNFM join of w1 (op "x")`, "m2": "mini-VNFM control-plane join of m2"}
	out := tokenSecrets(toks, []string{"w1", "m2"}, desc)
	docs := strings.Split(strings.TrimSuffix(out, "---\n"), "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents:\n%s", len(docs), out)
	}
	for i, name := range []string{"w1", "m2"} {
		var s struct {
			Kind     string `yaml:"kind"`
			Type     string `yaml:"type"`
			Metadata struct {
				Name      string `yaml:"name"`
				Namespace string `yaml:"namespace"`
			} `yaml:"metadata"`
			Data map[string]string `yaml:"stringData"`
		}
		if err := yaml.Unmarshal([]byte(docs[i]), &s); err != nil {
			t.Fatalf("%v:\n%s", err, docs[i])
		}
		id, secret, _ := strings.Cut(toks[name], ".")
		want := map[string]string{"token-id": id, "token-secret": secret, "description": desc[name], "expiration": expiryMark,
			"usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": bootstrapGroup}
		if s.Kind != "Secret" || s.Type != "bootstrap.kubernetes.io/token" || s.Metadata.Name != "bootstrap-token-"+id || s.Metadata.Namespace != "kube-system" {
			t.Errorf("%s: %+v", name, s)
		}
		for k, v := range want {
			if s.Data[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, s.Data[k], v)
			}
		}
	}
}
