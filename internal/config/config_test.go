package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

func keyID(t *testing.T, b64 string) string {
	t.Helper()
	k, err := secrets.ParseKey(b64)
	if err != nil {
		t.Fatal(err)
	}
	return secrets.KeyID(k)
}

func TestSecretKeys(t *testing.T) {
	k1, k2, k3 := secrets.NewKey(), secrets.NewKey(), secrets.NewKey()
	for _, tc := range []struct {
		name    string
		cfg     func(dir string) Config
		file    string // content of dir/key.file, if any
		wantIDs []string
		wantErr string
	}{
		{"inline key", func(string) Config { return Config{SecretKey: k1} }, "", []string{keyID(t, k1)}, ""},
		{"inline key with old keys", func(string) Config { return Config{SecretKey: k1, SecretKeysOld: k2 + "," + k3} }, "",
			[]string{keyID(t, k1), keyID(t, k2), keyID(t, k3)}, ""},
		{"key file: current then old lines", func(d string) Config {
			return Config{SecretKeyFile: filepath.Join(d, "key.file"), DatabaseURL: "postgres://x"}
		}, "# rotated\n" + k2 + "\n" + k1 + "\n", []string{keyID(t, k2), keyID(t, k1)}, ""},
		{"both inline and file", func(d string) Config { return Config{SecretKey: k1, SecretKeyFile: filepath.Join(d, "key.file")} }, "", nil, "not both"},
		{"missing file with DATABASE_URL", func(d string) Config {
			return Config{SecretKeyFile: filepath.Join(d, "nope"), DatabaseURL: "postgres://x"}
		}, "", nil, "does not exist; with DATABASE_URL no key is generated"},
		{"no key at all with DATABASE_URL", func(d string) Config { return Config{DataDir: d, DatabaseURL: "postgres://x"} }, "", nil,
			"VNFM_SECRET_KEY or VNFM_SECRET_KEY_FILE is required with DATABASE_URL"},
		{"empty key file", func(d string) Config { return Config{SecretKeyFile: filepath.Join(d, "key.file")} }, "# nothing\n", nil, "holds no key"},
		{"bad old key", func(string) Config { return Config{SecretKey: k1, SecretKeysOld: "short"} }, "", nil, "VNFM_SECRET_KEYS_OLD"},
		{"bad inline key", func(string) Config { return Config{SecretKey: "short"} }, "", nil, "VNFM_SECRET_KEY: secret key must be 32 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "key.file"), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := tc.cfg(dir)
			box, err := c.Box()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(box.KeyIDs(), ","); got != strings.Join(tc.wantIDs, ",") {
				t.Fatalf("key ids %s, want %s", got, strings.Join(tc.wantIDs, ","))
			}
		})
	}
}

// Without DATABASE_URL a missing key file is generated once (mode 0600) and
// reused, in the data dir or at VNFM_SECRET_KEY_FILE.
func TestSecretKeyGenerated(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(dir string) Config
		path func(dir string) string
	}{
		{"data dir", func(d string) Config { return Config{DataDir: filepath.Join(d, "data")} }, func(d string) string { return filepath.Join(d, "data", "secret.key") }},
		{"VNFM_SECRET_KEY_FILE", func(d string) Config { return Config{DataDir: d, SecretKeyFile: filepath.Join(d, "keys", "k")} }, func(d string) string { return filepath.Join(d, "keys", "k") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tc.cfg(dir)
			b1, err := c.Box()
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(tc.path(dir))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Fatalf("key file mode %v", st.Mode().Perm())
			}
			if c.SecretKeyPath() != tc.path(dir) {
				t.Fatalf("SecretKeyPath %s", c.SecretKeyPath())
			}
			sealed := b1.SealAt([]byte(`"x"`), secrets.At("t/1"))
			b2, err := c.Box()
			if err != nil {
				t.Fatal(err)
			}
			if b2.KeyID() != b1.KeyID() {
				t.Fatal("a second start generated another key")
			}
			if _, err := b2.OpenAt(sealed, secrets.At("t/1")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLoadRefusesHalfSettings: security settings that cannot be what the
// operator meant stop the server at start, naming the variable.
func TestLoadRefusesHalfSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"origin with a path", map[string]string{"VNFM_ALLOWED_ORIGINS": "https://ui.example/app"}, "VNFM_ALLOWED_ORIGINS"},
		{"origin without scheme", map[string]string{"VNFM_ALLOWED_ORIGINS": "ui.example:8443"}, "VNFM_ALLOWED_ORIGINS"},
		{"origins", map[string]string{"VNFM_ALLOWED_ORIGINS": "https://ui.example:8443/, http://127.0.0.1:3000"}, ""},
		{"outbound loopback typo", map[string]string{"VNFM_OUTBOUND_LOOPBACK": "yes please"}, "VNFM_OUTBOUND_LOOPBACK"},
		{"outbound allow of metadata", map[string]string{"VNFM_OUTBOUND_ALLOW": "169.254.169.254"}, "always refused"},
		{"outbound deny garbage", map[string]string{"VNFM_OUTBOUND_DENY": "10.0.0.0/8,intranet"}, "VNFM_OUTBOUND_DENY"},
		{"CNF sync every millisecond", map[string]string{"VNFM_CNF_SYNC_INTERVAL": "1ms"}, "VNFM_CNF_SYNC_INTERVAL"},
		{"CNF sync off", map[string]string{"VNFM_CNF_SYNC_INTERVAL": "0"}, ""},
		{"CNF sync every 10 s", map[string]string{"VNFM_CNF_SYNC_INTERVAL": "10s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestOutboundPolicyAuto: loopback is allowed in a development setup only.
func TestOutboundPolicyAuto(t *testing.T) {
	for _, tc := range []struct {
		listen    string
		simulator bool
		loopback  string
		want      bool
	}{
		{"127.0.0.1:9890", false, "auto", true},
		{"0.0.0.0:9890", true, "auto", true},
		{":9890", false, "auto", false},
		{"127.0.0.1:9890", false, "deny", false},
		{":9890", false, "allow", true},
	} {
		t.Setenv("VNFM_LISTEN", tc.listen)
		t.Setenv("VNFM_OUTBOUND_LOOPBACK", tc.loopback)
		c, err := Load()
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.OutboundPolicy(tc.simulator)
		if err != nil {
			t.Fatal(err)
		}
		if p.AllowLoopback != tc.want || !p.AllowPrivate {
			t.Errorf("%+v: loopback %v private %v", tc, p.AllowLoopback, p.AllowPrivate)
		}
	}
}

// TestDatabaseSecretsFromFiles: the database password can stay out of the
// environment (docker compose secrets).
func TestDatabaseSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cr3t/p@ss\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urlFile := filepath.Join(dir, "url")
	if err := os.WriteFile(urlFile, []byte("postgres://vnfm:x@db:5432/vnfm?sslmode=disable\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := secrets.NewKey()
	for _, tc := range []struct {
		env     map[string]string
		want    string
		wantErr string
	}{
		{map[string]string{"DATABASE_URL": "postgres://vnfm@db:5432/vnfm?sslmode=disable", "DATABASE_PASSWORD_FILE": pw},
			"postgres://vnfm:s3cr3t%2Fp%40ss@db:5432/vnfm?sslmode=disable", ""},
		{map[string]string{"DATABASE_URL_FILE": urlFile}, "postgres://vnfm:x@db:5432/vnfm?sslmode=disable", ""},
		{map[string]string{"DATABASE_URL": "postgres://vnfm:inline@db/vnfm", "DATABASE_PASSWORD_FILE": pw}, "", "already holds a password"},
		{map[string]string{"DATABASE_PASSWORD_FILE": pw}, "", "needs DATABASE_URL"},
		{map[string]string{"DATABASE_URL": "postgres://db/vnfm", "DATABASE_URL_FILE": urlFile}, "", "not both"},
		{map[string]string{"DATABASE_URL_FILE": filepath.Join(dir, "missing")}, "", "DATABASE_URL_FILE"},
	} {
		for _, k := range []string{"DATABASE_URL", "DATABASE_URL_FILE", "DATABASE_PASSWORD_FILE"} {
			t.Setenv(k, tc.env[k])
		}
		t.Setenv("VNFM_SECRET_KEY", key)
		c, err := Load()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want %q", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if c.DatabaseURL != tc.want {
			t.Errorf("%v: DATABASE_URL %q, want %q", tc.env, c.DatabaseURL, tc.want)
		}
	}
}
