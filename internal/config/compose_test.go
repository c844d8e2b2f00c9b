package config

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// TestComposeKeepsSecretsInFiles: docker-compose.yml passes no secret in an
// environment variable; every *_FILE variable names a compose secret the
// service mounts, and every such secret comes from a file.
func TestComposeKeepsSecretsInFiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Secrets     []string          `yaml:"secrets"`
		} `yaml:"services"`
		Secrets map[string]struct {
			File string `yaml:"file"`
		} `yaml:"secrets"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Services["vnfm"].Environment) == 0 || len(doc.Secrets) == 0 {
		t.Fatal("docker-compose.yml has no vnfm environment or no secrets")
	}
	files := 0
	for name, svc := range doc.Services {
		for k, v := range svc.Environment {
			if strings.HasSuffix(k, "_FILE") {
				files++
				secret, ok := strings.CutPrefix(v, "/run/secrets/")
				if !ok || !slices.Contains(svc.Secrets, secret) {
					t.Errorf("%s: %s=%s is not a secret the service mounts", name, k, v)
				}
				if doc.Secrets[secret].File == "" {
					t.Errorf("%s: secret %s has no file", name, secret)
				}
				continue
			}
			if secrets.IsSecretKey(k) || strings.Contains(strings.ToUpper(k), "KEY") {
				t.Errorf("%s: %s is passed in the environment; use %s_FILE and a compose secret", name, k, k)
			}
			if u, err := url.Parse(v); err == nil && u.User != nil {
				if _, has := u.User.Password(); has {
					t.Errorf("%s: %s holds a password in its URL", name, k)
				}
			}
		}
	}
	if files < 4 {
		t.Errorf("only %d *_FILE variables: the database password, the secrets key and the API tokens should all come from files", files)
	}
}
