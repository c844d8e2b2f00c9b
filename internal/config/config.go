// Package config reads the server configuration from environment variables
// (documented in README "Configuration").
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Config is the whole server configuration.
type Config struct {
	DatabaseURL  string        `env:"DATABASE_URL"`
	DataDir      string        `env:"VNFM_DATA_DIR" envDefault:"./.vnfm"`
	Listen       string        `env:"VNFM_LISTEN" envDefault:"127.0.0.1:9890"`
	EndpointURL  string        `env:"VNFM_ENDPOINT_URL"`
	SecretKey    string        `env:"VNFM_SECRET_KEY"`
	LogLevel     string        `env:"VNFM_LOG_LEVEL" envDefault:"info"`
	LogFormat    string        `env:"VNFM_LOG_FORMAT" envDefault:"text"`
	Engine       bool          `env:"VNFM_ENGINE" envDefault:"true"`
	Workers      int           `env:"VNFM_WORKERS" envDefault:"8"`
	Lease        time.Duration `env:"VNFM_LEASE" envDefault:"30s"`
	Poll         time.Duration `env:"VNFM_POLL" envDefault:"2s"`
	PageSize     int           `env:"VNFM_PAGE_SIZE" envDefault:"100"`
	MaxBodyBytes int64         `env:"VNFM_MAX_BODY_BYTES" envDefault:"1048576"`
	ShutdownWait time.Duration `env:"VNFM_SHUTDOWN_TIMEOUT" envDefault:"15s"`
	// Notifications: retry delays and how long to keep retrying one notification.
	NotifyBackoffMin time.Duration `env:"VNFM_NOTIFY_BACKOFF_MIN" envDefault:"1s"`
	NotifyBackoffMax time.Duration `env:"VNFM_NOTIFY_BACKOFF_MAX" envDefault:"5m"`
	NotifyRetryFor   time.Duration `env:"VNFM_NOTIFY_RETRY_FOR" envDefault:"24h"`
	// TestCallbacks sends GET to a new subscription's callbackUri and requires 204.
	TestCallbacks bool `env:"VNFM_TEST_CALLBACKS" envDefault:"true"`
}

// Load reads and checks the environment.
func Load() (*Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if c.EndpointURL == "" {
		host := c.Listen
		if strings.HasPrefix(host, ":") || strings.HasPrefix(host, "0.0.0.0:") {
			host = "127.0.0.1:" + host[strings.LastIndex(host, ":")+1:]
		}
		c.EndpointURL = "http://" + host
	}
	c.EndpointURL = strings.TrimRight(c.EndpointURL, "/")
	if c.Workers < 1 || c.PageSize < 1 || c.Lease < time.Second {
		return nil, errors.New("config: VNFM_WORKERS and VNFM_PAGE_SIZE must be ≥ 1 and VNFM_LEASE ≥ 1s")
	}
	return &c, nil
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

// Box returns the secrets box. Without VNFM_SECRET_KEY the key lives in
// DataDir/secret.key (created on first use, mode 0600) — fine for the
// embedded database; production sets VNFM_SECRET_KEY.
func (c *Config) Box() (*secrets.Box, error) {
	key := c.SecretKey
	if key == "" {
		path := filepath.Join(c.DataDir, "secret.key")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			key = string(b)
		case errors.Is(err, os.ErrNotExist) && c.DatabaseURL == "":
			key = secrets.NewKey()
			if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
			if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("config: cannot store the generated secret key: %w", err)
			}
		case errors.Is(err, os.ErrNotExist):
			return nil, errors.New("config: VNFM_SECRET_KEY is required with DATABASE_URL (32 random bytes, base64: head -c32 /dev/urandom | base64); keep it safe, it encrypts stored secrets")
		default:
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	raw, err := secrets.ParseKey(key)
	if err != nil {
		return nil, fmt.Errorf("config: VNFM_SECRET_KEY: %w", err)
	}
	return secrets.NewBox(raw)
}
