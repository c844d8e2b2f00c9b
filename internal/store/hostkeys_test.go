package store_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/sshpin"
)

func edPin(t *testing.T) sshpin.Pin {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sshpin.Of(k)
}

func ecPin(t *testing.T) sshpin.Pin {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return sshpin.Of(k)
}

func TestHostKeyPins(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	pins := st.HostKeyPins()
	const srv, addr = "6f0c8f4e-0000-4000-8000-000000000001", "10.77.0.11"

	got, err := pins.Get(ctx, srv, addr)
	if err != nil || len(got) != 0 {
		t.Fatalf("Get before any pin = %v, %v", got, err)
	}
	ed := edPin(t)
	if err := pins.Put(ctx, srv, addr, ed); err != nil {
		t.Fatal(err)
	}
	got, err = pins.Get(ctx, srv, addr)
	if err != nil || len(got) != 1 {
		t.Fatalf("Get = %v, %v", got, err)
	}
	first := got[0]
	if first.KeyType != ssh.KeyAlgoED25519 || first.Fingerprint != ed.Fingerprint || string(first.Key) != string(ed.Key) ||
		first.FirstSeen.IsZero() || !first.LastSeen.Equal(first.FirstSeen) {
		t.Fatalf("stored pin = %+v, want %+v", first, ed)
	}

	// The same key again refreshes last_seen only.
	time.Sleep(5 * time.Millisecond)
	if err := pins.Put(ctx, srv, addr, ed); err != nil {
		t.Fatal(err)
	}
	got, _ = pins.Get(ctx, srv, addr)
	if len(got) != 1 || !got[0].FirstSeen.Equal(first.FirstSeen) || !got[0].LastSeen.After(first.LastSeen) {
		t.Fatalf("after re-Put: %+v (first %+v)", got, first)
	}

	// A different key of the same type conflicts and changes nothing.
	other := edPin(t)
	err = pins.Put(ctx, srv, addr, other)
	if !errors.Is(err, sshpin.ErrConflict) {
		t.Fatalf("conflicting Put = %v, want ErrPinConflict", err)
	}
	got, _ = pins.Get(ctx, srv, addr)
	if len(got) != 1 || got[0].Fingerprint != ed.Fingerprint {
		t.Fatalf("conflicting Put changed the pins: %+v", got)
	}

	// Another key type is a second pin; other addresses and servers are separate.
	ec := ecPin(t)
	if err := pins.Put(ctx, srv, addr, ec); err != nil {
		t.Fatal(err)
	}
	if err := pins.Put(ctx, srv, "192.0.2.10", other); err != nil {
		t.Fatal(err)
	}
	if err := pins.Put(ctx, "another-server", addr, other); err != nil {
		t.Fatal(err)
	}
	got, _ = pins.Get(ctx, srv, addr)
	if len(got) != 2 {
		t.Fatalf("pins = %+v, want ed25519 and ecdsa", got)
	}

	// Replace swaps the set; Replace with none empties it.
	if err := pins.Replace(ctx, srv, addr, []sshpin.Pin{other}); err != nil {
		t.Fatal(err)
	}
	got, _ = pins.Get(ctx, srv, addr)
	if len(got) != 1 || got[0].Fingerprint != other.Fingerprint {
		t.Fatalf("after Replace: %+v", got)
	}
	if err := pins.Replace(ctx, srv, addr, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ = pins.Get(ctx, srv, addr); len(got) != 0 {
		t.Fatalf("after Replace(nil): %+v", got)
	}
	if err := pins.Replace(ctx, srv, addr, []sshpin.Pin{ed, edPin(t)}); err == nil {
		t.Fatal("Replace with two keys of one type succeeded")
	}

	all, err := st.ListHostKeys(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListHostKeys = %+v, %v", all, err)
	}
	n, err := st.DeleteHostKeys(ctx, srv, "another-server")
	if err != nil || n != 2 {
		t.Fatalf("DeleteHostKeys = %d, %v", n, err)
	}
	if all, _ = st.ListHostKeys(ctx); len(all) != 0 {
		t.Fatalf("left after delete: %+v", all)
	}
}

func TestHostKeyPinsRejectInconsistentPins(t *testing.T) {
	ctx := context.Background()
	pins := open(t).HostKeyPins()
	good := edPin(t)
	for name, p := range map[string]sshpin.Pin{
		"fingerprint of another key": {KeyType: good.KeyType, Fingerprint: edPin(t).Fingerprint, Key: good.Key},
		"wrong type":                 {KeyType: ssh.KeyAlgoRSA, Fingerprint: good.Fingerprint, Key: good.Key},
		"no key":                     {KeyType: good.KeyType, Fingerprint: good.Fingerprint},
	} {
		if err := pins.Put(ctx, "s", "a", p); err == nil {
			t.Errorf("%s: Put accepted %+v", name, p)
		}
	}
	if err := pins.Put(ctx, "", "a", good); err == nil {
		t.Error("Put without server id accepted")
	}
}

// Concurrent first contacts with different keys: exactly one wins, the others
// see a conflict.
func TestHostKeyPinsConcurrentFirstContact(t *testing.T) {
	ctx := context.Background()
	pins := open(t).HostKeyPins()
	keys := make([]sshpin.Pin, 8)
	for i := range keys {
		keys[i] = edPin(t)
	}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { errs[i] = pins.Put(ctx, "srv", "10.0.0.1", keys[i]) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, sshpin.ErrConflict):
			t.Errorf("unexpected error: %v", err)
		}
	}
	got, _ := pins.Get(ctx, "srv", "10.0.0.1")
	if ok != 1 || len(got) != 1 {
		t.Fatalf("%d Puts succeeded, pins %+v; want exactly one", ok, got)
	}
}
