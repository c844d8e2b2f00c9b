package testhosts

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// RequiredEnv, when "1", turns the root check of NewTestNetwork into a test
// failure instead of a skip (for CI machines that must run these tests).
const RequiredEnv = "TESTHOSTS_REQUIRED"

// NewTestNetwork creates a network for a test and closes it in t.Cleanup. It
// skips the test when the process is not root (fails instead when
// TESTHOSTS_REQUIRED=1); any other setup error fails the test.
func NewTestNetwork(tb testing.TB, opts Options) *Network {
	tb.Helper()
	if opts.Logf == nil {
		opts.Logf = tb.Logf
	}
	n, err := NewNetwork(context.Background(), opts)
	if errors.Is(err, ErrNotRoot) {
		if os.Getenv(RequiredEnv) == "1" {
			tb.Fatalf("%v (and %s=1)", err, RequiredEnv)
		}
		tb.Skipf("skipping: %v; run the tests as root to create test hosts", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("testhosts: close: %v", err)
		}
	})
	return n
}

// SSH opens an SSH client connection to addr ("ip:port" or "name:port")
// through the ctl namespace.
func (n *Network) SSH(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	c, err := n.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	sc, chans, reqs, err := ssh.NewClientConn(c, addr, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// PasswordConfig is a client configuration for password login that records
// the host key the server presented into *seen (when seen is not nil) and
// accepts it.
func PasswordConfig(user, password string, seen *ssh.PublicKey) *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User: user,
		Auth: []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if seen != nil {
				*seen = key
			}
			return nil
		},
		Timeout: 10 * time.Second,
	}
}

// Run runs one command over an SSH client and returns its combined output.
func Run(c *ssh.Client, cmd string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return string(out), err
}
