package remote_test

import (
	"context"
	"encoding/pem"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

// The host key tests pin into a real PostgreSQL (internal/pgtest).
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

const (
	testUser = "deploy"
	testPass = "Pa55-w0rd!"
)

func startServer(t *testing.T, o remotetest.Options) *remotetest.Server {
	t.Helper()
	if o.Passwords == nil {
		o.Passwords = map[string]string{testUser: testPass}
	}
	return remotetest.Start(t, o)
}

// targetFor reaches s as testUser, verifying the host key against the
// fingerprint "published" for it (no pin store needed).
func targetFor(t *testing.T, s *remotetest.Server) remote.Target {
	t.Helper()
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return remote.Target{
		Host: host, Port: p, User: testUser, Password: testPass,
		PublishedFingerprints: []string{ssh.FingerprintSHA256(s.HostKey())},
		MaxWait:               10 * time.Second,
	}
}

func dial(t *testing.T, tg remote.Target) *remote.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := remote.Dial(ctx, tg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st := storetest.Open(t)
	return st
}

func pemEncode(b *pem.Block) []byte { return pem.EncodeToMemory(b) }
