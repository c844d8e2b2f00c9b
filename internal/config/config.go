// Package config reads the server configuration from environment variables
// (documented in README "Configuration").
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Config is the whole server configuration.
type Config struct {
	DatabaseURL string `env:"DATABASE_URL"`
	// DatabaseURLFile and DatabasePasswordFile keep the database password out
	// of the environment (docker compose secrets): the URL read from a file,
	// or the password read from a file and put into DATABASE_URL.
	DatabaseURLFile      string        `env:"DATABASE_URL_FILE"`
	DatabasePasswordFile string        `env:"DATABASE_PASSWORD_FILE"`
	DataDir              string        `env:"VNFM_DATA_DIR" envDefault:"./.vnfm"`
	Listen               string        `env:"VNFM_LISTEN" envDefault:"127.0.0.1:9890"`
	EndpointURL          string        `env:"VNFM_ENDPOINT_URL"`
	SecretKey            string        `env:"VNFM_SECRET_KEY"`
	LogLevel             string        `env:"VNFM_LOG_LEVEL" envDefault:"info"`
	LogFormat            string        `env:"VNFM_LOG_FORMAT" envDefault:"text"`
	Engine               bool          `env:"VNFM_ENGINE" envDefault:"true"`
	Workers              int           `env:"VNFM_WORKERS" envDefault:"64"`
	Lease                time.Duration `env:"VNFM_LEASE" envDefault:"30s"`
	Poll                 time.Duration `env:"VNFM_POLL" envDefault:"2s"`
	// CNFSync is how often the VNFC records of settled CNF instances are
	// refreshed from their Kubernetes VIM (Tacker's db_synchronization_interval); 0: never.
	CNFSync      time.Duration `env:"VNFM_CNF_SYNC_INTERVAL" envDefault:"300s"`
	PageSize     int           `env:"VNFM_PAGE_SIZE" envDefault:"100"`
	MaxBodyBytes int64         `env:"VNFM_MAX_BODY_BYTES" envDefault:"1048576"`
	ShutdownWait time.Duration `env:"VNFM_SHUTDOWN_TIMEOUT" envDefault:"15s"`
	// Notifications: retry delays and how long to keep retrying one notification.
	NotifyBackoffMin time.Duration `env:"VNFM_NOTIFY_BACKOFF_MIN" envDefault:"1s"`
	NotifyBackoffMax time.Duration `env:"VNFM_NOTIFY_BACKOFF_MAX" envDefault:"5m"`
	NotifyRetryFor   time.Duration `env:"VNFM_NOTIFY_RETRY_FOR" envDefault:"24h"`
	// TestCallbacks sends GET to a new subscription's callbackUri and requires 204.
	TestCallbacks bool `env:"VNFM_TEST_CALLBACKS" envDefault:"true"`
	// The embedded OpenStack simulator make run brings along: auto (when
	// DATABASE_URL is unset), on or off; its real SSH hosts: auto (as root), on, off.
	Simulator       string `env:"VNFM_SIMULATOR" envDefault:"auto"`
	SimulatorHosts  string `env:"VNFM_SIMULATOR_HOSTS" envDefault:"auto"`
	SimulatorListen string `env:"VNFM_SIMULATOR_LISTEN" envDefault:"127.0.0.1:5000"`
	// SimulatorPrefix names the embedded cloud's network namespaces
	// (<prefix>-ctl, <prefix>-<host>): two VNFMs on one machine need two.
	SimulatorPrefix string `env:"VNFM_SIMULATOR_PREFIX" envDefault:"vnfmsim"`
	// SimulatorHeat: sim (the simulator's own Keystone and Heat, fast start)
	// or real (Debian's Keystone 22 and Heat 19 in front of it, installed
	// when missing as root; see internal/osworld).
	SimulatorHeat string `env:"VNFM_SIMULATOR_HEAT" envDefault:"sim"`

	// SecretKeyFile holds the key (first line) and optionally old keys
	// (further lines); default DataDir/secret.key, see Box.
	SecretKeyFile string `env:"VNFM_SECRET_KEY_FILE"`
	// SecretKeysOld lists retired keys that still open stored values.
	SecretKeysOld string `env:"VNFM_SECRET_KEYS_OLD"`
	// TLSCertFile and TLSKeyFile, both or neither, make the API serve
	// HTTPS; the files are read again when they change.
	TLSCertFile string `env:"VNFM_TLS_CERT_FILE"`
	TLSKeyFile  string `env:"VNFM_TLS_KEY_FILE"`
	// BodyTimeout bounds reading a JSON request body, and the time a
	// package upload may go without sending a byte; UploadTimeout bounds a
	// whole package upload.
	BodyTimeout   time.Duration `env:"VNFM_BODY_TIMEOUT" envDefault:"60s"`
	UploadTimeout time.Duration `env:"VNFM_UPLOAD_TIMEOUT" envDefault:"30m"`
	// Uploads and UploadsPerClient bound the package uploads (PUT
	// package_content) in progress, in all and from one client address.
	Uploads          int `env:"VNFM_UPLOADS" envDefault:"4"`
	UploadsPerClient int `env:"VNFM_UPLOADS_PER_CLIENT" envDefault:"2"`
	// AllowedOrigins are browser origins, besides the VNFM's own
	// (VNFM_ENDPOINT_URL), allowed to call the API (README "Security").
	AllowedOrigins []string `env:"VNFM_ALLOWED_ORIGINS" envSeparator:","`
	// Auth configures API authentication (VNFM_AUTH*, see internal/auth.Settings).
	Auth auth.Settings
	// Outbound is the policy of calls made on a client's behalf
	// (VNFM_OUTBOUND_*, see internal/outbound.Settings).
	Outbound outbound.Settings
}

// Load reads and checks the environment.
func Load() (*Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.databaseFromFiles(); err != nil {
		return nil, err
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, errors.New("config: TLS needs both VNFM_TLS_CERT_FILE and VNFM_TLS_KEY_FILE (PEM files), or neither")
	}
	if c.EndpointURL == "" {
		host := c.Listen
		if strings.HasPrefix(host, ":") || strings.HasPrefix(host, "0.0.0.0:") {
			host = "127.0.0.1:" + host[strings.LastIndex(host, ":")+1:]
		}
		scheme := "http://"
		if c.TLSCertFile != "" {
			scheme = "https://"
		}
		c.EndpointURL = scheme + host
	}
	c.EndpointURL = strings.TrimRight(c.EndpointURL, "/")
	if _, err := c.Auth.Enabled(c.Listen); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.Auth.CheckKeystone(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, err := c.Outbound.Policy(false); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	for i, o := range c.AllowedOrigins {
		o = strings.TrimSpace(o)
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("config: VNFM_ALLOWED_ORIGINS: %q is not an origin; write scheme://host[:port], e.g. https://nfvo-ui.example:8443", o)
		}
		c.AllowedOrigins[i] = strings.TrimRight(o, "/")
	}
	if c.BodyTimeout < time.Second || c.UploadTimeout < c.BodyTimeout || c.Uploads < 1 || c.UploadsPerClient < 1 {
		return nil, errors.New("config: VNFM_BODY_TIMEOUT must be ≥ 1s, VNFM_UPLOAD_TIMEOUT ≥ VNFM_BODY_TIMEOUT, VNFM_UPLOADS and VNFM_UPLOADS_PER_CLIENT ≥ 1")
	}
	if c.Workers < 1 || c.PageSize < 1 || c.Lease < time.Second {
		return nil, errors.New("config: VNFM_WORKERS and VNFM_PAGE_SIZE must be ≥ 1 and VNFM_LEASE ≥ 1s")
	}
	if c.CNFSync != 0 && c.CNFSync < time.Second {
		return nil, fmt.Errorf("config: VNFM_CNF_SYNC_INTERVAL=%s: write 0 to turn the refresh of CNF records off, or a duration of at least 1s (default 300s)", c.CNFSync)
	}
	return &c, nil
}

// OutboundPolicy builds the outbound-URL policy. VNFM_OUTBOUND_LOOPBACK=auto
// allows loopback in a development setup: the VNFM listening on loopback or
// running the embedded cloud (whose endpoints are on 127.0.0.1).
func (c *Config) OutboundPolicy(simulator bool) (*outbound.Policy, error) {
	p, err := c.Outbound.Policy(auth.IsLoopback(c.Listen) || simulator)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return p, nil
}

// databaseFromFiles applies DATABASE_URL_FILE and DATABASE_PASSWORD_FILE.
func (c *Config) databaseFromFiles() error {
	read := func(name, path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("config: %s: %w", name, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("config: %s: %s is empty", name, path)
		}
		return v, nil
	}
	if c.DatabaseURLFile != "" {
		if c.DatabaseURL != "" {
			return errors.New("config: set DATABASE_URL or DATABASE_URL_FILE, not both")
		}
		v, err := read("DATABASE_URL_FILE", c.DatabaseURLFile)
		if err != nil {
			return err
		}
		c.DatabaseURL = v
	}
	if c.DatabasePasswordFile == "" {
		return nil
	}
	pw, err := read("DATABASE_PASSWORD_FILE", c.DatabasePasswordFile)
	if err != nil {
		return err
	}
	u, err := url.Parse(c.DatabaseURL)
	if c.DatabaseURL == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.User == nil || u.User.Username() == "" {
		return errors.New("config: DATABASE_PASSWORD_FILE needs DATABASE_URL as postgres://user@host:port/db (the password goes in from the file)")
	}
	if _, has := u.User.Password(); has {
		return errors.New("config: DATABASE_URL already holds a password; with DATABASE_PASSWORD_FILE leave it out (postgres://user@host/db)")
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	c.DatabaseURL = u.String()
	return nil
}

// SimulatorOn reports whether serve starts the embedded OpenStack simulator.
func (c *Config) SimulatorOn() (bool, error) {
	switch strings.ToLower(c.Simulator) {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	case "", "auto":
		return c.DatabaseURL == "", nil
	}
	return false, fmt.Errorf("config: VNFM_SIMULATOR=%q: say auto, on or off", c.Simulator)
}

// Logger builds the slog logger; secret-named attributes are always masked.
func (c *Config) Logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if secrets.IsSecretKey(a.Key) {
			return slog.String(a.Key, secrets.Mask)
		}
		return a
	}}
	if strings.EqualFold(c.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// Box returns the secrets box: the current key seals, old keys only open.
//
// The current key is VNFM_SECRET_KEY (inline, base64) or the first key in
// the file VNFM_SECRET_KEY_FILE (default DataDir/secret.key); further keys in
// the file and in VNFM_SECRET_KEYS_OLD are old keys. Without DATABASE_URL
// (embedded database) a missing key file is generated (mode 0600); with
// DATABASE_URL a key must be given, since a new key could not open what is
// already stored.
func (c *Config) Box() (*secrets.Box, error) {
	keys, err := c.secretKeys()
	if err != nil {
		return nil, err
	}
	if c.SecretKeysOld != "" {
		old, err := secrets.ParseKeys(c.SecretKeysOld)
		if err != nil {
			return nil, fmt.Errorf("config: VNFM_SECRET_KEYS_OLD: %w", err)
		}
		keys = append(keys, old...)
	}
	return secrets.NewBox(keys[0], keys[1:]...)
}

// SecretKeyPath is the key file Box reads when VNFM_SECRET_KEY is unset.
func (c *Config) SecretKeyPath() string {
	if c.SecretKeyFile != "" {
		return c.SecretKeyFile
	}
	return filepath.Join(c.DataDir, "secret.key")
}

func (c *Config) secretKeys() ([][]byte, error) {
	if c.SecretKey != "" {
		if c.SecretKeyFile != "" {
			return nil, errors.New("config: set VNFM_SECRET_KEY or VNFM_SECRET_KEY_FILE, not both")
		}
		k, err := secrets.ParseKey(c.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("config: VNFM_SECRET_KEY: %w", err)
		}
		return [][]byte{k}, nil
	}
	path := c.SecretKeyPath()
	for attempt := 0; ; attempt++ {
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			keys, err := secrets.ParseKeys(string(b))
			if err != nil {
				return nil, fmt.Errorf("config: secret key file %s: %w", path, err)
			}
			if len(keys) == 0 {
				return nil, fmt.Errorf("config: secret key file %s holds no key (one base64 key per line: head -c32 /dev/urandom | base64)", path)
			}
			return keys, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("config: secret key file: %w", err)
		case c.DatabaseURL != "" && c.SecretKeyFile != "":
			return nil, fmt.Errorf("config: VNFM_SECRET_KEY_FILE %s does not exist; with DATABASE_URL no key is generated (a new key could not open stored secrets): create it with head -c32 /dev/urandom | base64 > %s && chmod 600 %s", path, path, path)
		case c.DatabaseURL != "":
			return nil, errors.New("config: VNFM_SECRET_KEY or VNFM_SECRET_KEY_FILE is required with DATABASE_URL (32 random bytes, base64: head -c32 /dev/urandom | base64); keep it safe, it encrypts stored secrets")
		case attempt > 0:
			return nil, fmt.Errorf("config: secret key file %s: %w", path, err)
		}
		if err := generateKeyFile(path); err != nil {
			return nil, err
		}
	}
}

// generateKeyFile writes a new key to path, mode 0600, unless another
// process got there first (O_EXCL): then its key is used.
func generateKeyFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("config: cannot store the generated secret key: %w", err)
	}
	_, werr := f.WriteString(secrets.NewKey() + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return fmt.Errorf("config: cannot store the generated secret key: %w", werr)
	}
	return nil
}
