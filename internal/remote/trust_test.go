package remote_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

// trustTarget reaches s with a pin store and no fingerprints.
func trustTarget(t *testing.T, s *remotetest.Server, pins remote.PinStore, trust remote.HostKeyTrust) remote.Target {
	t.Helper()
	tg := targetFor(t, s)
	tg.PublishedFingerprints = nil
	tg.Pins, tg.PinKey = pins, remote.PinKey{ServerID: "srv-1"}
	tg.HostKeyTrust = trust
	tg.FingerprintPoll = 50 * time.Millisecond
	return tg
}

// TestHostKeyTrustPublished: under the published policy the first contact
// waits (bounded) for the cloud's fingerprints and refuses without them:
// the server never sees a login attempt, so a machine in the middle gets
// no password.
func TestHostKeyTrustPublished(t *testing.T) {
	ctx := context.Background()
	t.Run("fingerprints appear after a while", func(t *testing.T) {
		s := startServer(t, remotetest.Options{})
		pins := &remotetest.Pins{}
		var calls atomic.Int32
		tg := trustTarget(t, s, pins, remote.TrustPublished)
		tg.FetchFingerprints = func(context.Context) ([]string, error) {
			if calls.Add(1) < 3 {
				return nil, nil // cloud-init has not printed them yet
			}
			return []string{ssh.FingerprintSHA256(s.HostKey())}, nil
		}
		c, err := remote.Dial(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if calls.Load() != 3 || pins.Len() != 1 {
			t.Fatalf("%d reads of the fingerprints, %d pins", calls.Load(), pins.Len())
		}
		// Later contacts: the pin decides, nothing is read.
		c, err = remote.Dial(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if calls.Load() != 3 {
			t.Fatalf("a pinned server's fingerprints were read again (%d)", calls.Load())
		}
	})
	t.Run("never published", func(t *testing.T) {
		s := startServer(t, remotetest.Options{})
		tg := trustTarget(t, s, &remotetest.Pins{}, remote.TrustPublished)
		tg.FingerprintWait = 400 * time.Millisecond
		tg.FetchFingerprints = func(context.Context) ([]string, error) { return nil, nil }
		start := time.Now()
		_, err := remote.Dial(ctx, tg)
		var ue *remote.UnpublishedError
		if !errors.As(err, &ue) || !errors.Is(err, remote.ErrHostKeyUnknown) || !strings.Contains(err.Error(), "policy tofu") {
			t.Fatalf("err %v", err)
		}
		if took := time.Since(start); took < 400*time.Millisecond || took > 5*time.Second {
			t.Fatalf("gave up after %s", took)
		}
		if s.Accepted() != 0 || s.Logins() != 0 {
			t.Fatalf("the server saw %d connections and %d logins", s.Accepted(), s.Logins())
		}
	})
	t.Run("no way to read them", func(t *testing.T) {
		s := startServer(t, remotetest.Options{})
		_, err := remote.Dial(ctx, trustTarget(t, s, &remotetest.Pins{}, remote.TrustPublished))
		if !errors.Is(err, remote.ErrHostKeyUnknown) || s.Logins() != 0 {
			t.Fatalf("err %v, %d logins", err, s.Logins())
		}
	})
	t.Run("published but another key answers", func(t *testing.T) {
		s := startServer(t, remotetest.Options{})
		other := remotetest.NewHostKey(t)
		tg := trustTarget(t, s, &remotetest.Pins{}, remote.TrustPublished)
		tg.FetchFingerprints = func(context.Context) ([]string, error) { return []string{fp(other)}, nil }
		_, err := remote.Dial(ctx, tg)
		var me *remote.HostKeyMismatchError
		if !errors.As(err, &me) || s.Logins() != 0 {
			t.Fatalf("err %v, %d logins", err, s.Logins())
		}
	})
}

// TestHostKeyTrustTOFUAndPinned: tofu pins whatever answers first (the old
// behaviour, now opt-in); pinned takes the caller's fingerprints only.
func TestHostKeyTrustTOFUAndPinned(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, remotetest.Options{})
	pins := &remotetest.Pins{}
	c, err := remote.Dial(ctx, trustTarget(t, s, pins, remote.TrustTOFU))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if pins.Len() != 1 {
		t.Fatalf("tofu pinned %d keys", pins.Len())
	}

	s2 := startServer(t, remotetest.Options{})
	tg := trustTarget(t, s2, &remotetest.Pins{}, remote.TrustPinned)
	if _, err := remote.Dial(ctx, tg); err == nil || !strings.Contains(err.Error(), "none were given") || s2.Accepted() != 0 {
		t.Fatalf("pinned without fingerprints: %v", err)
	}
	tg.PublishedFingerprints = []string{fp(remotetest.NewHostKey(t))}
	var me *remote.HostKeyMismatchError
	if _, err := remote.Dial(ctx, tg); !errors.As(err, &me) || s2.Logins() != 0 {
		t.Fatalf("pinned with another key's fingerprint: %v", err)
	}
	tg.PublishedFingerprints = []string{ssh.FingerprintSHA256(s2.HostKey())}
	c, err = remote.Dial(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	for in, want := range map[string]remote.HostKeyTrust{"": "", "Published": remote.TrustPublished, "TOFU": remote.TrustTOFU, " pinned ": remote.TrustPinned} {
		if got, err := remote.ParseHostKeyTrust(in); err != nil || got != want {
			t.Errorf("ParseHostKeyTrust(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := remote.ParseHostKeyTrust("trust-me"); err == nil || !strings.Contains(err.Error(), "published, tofu or pinned") {
		t.Errorf("bad trust: %v", err)
	}
}
