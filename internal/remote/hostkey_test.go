package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

// memPins is an in-memory PinStore (only for configuration tests; the
// behaviour tests use the PostgreSQL one).
type memPins map[string][]remote.Pin

func (m memPins) Get(_ context.Context, s, a string) ([]remote.Pin, error) { return m[s+"|"+a], nil }
func (m memPins) Put(_ context.Context, s, a string, p remote.Pin) error {
	m[s+"|"+a] = append(m[s+"|"+a], p)
	return nil
}
func (m memPins) Replace(_ context.Context, s, a string, p []remote.Pin) error {
	m[s+"|"+a] = p
	return nil
}

func ecdsaHostKey(t *testing.T) ssh.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fp(k ssh.Signer) string { return ssh.FingerprintSHA256(k.PublicKey()) }

// TestHostKeyPinning walks one VNFC through its life: first contact pins,
// later contacts match, a reimaged server (new keys, same id and address) is
// refused before anything runs, Replace and Repin re-pin. Pins live in
// PostgreSQL (internal/store).
func TestHostKeyPinning(t *testing.T) {
	st := openStore(t)
	pins := st.HostKeyPins()
	ctx := context.Background()
	keyA, keyB := remotetest.NewHostKey(t), remotetest.NewHostKey(t)
	vm := startServer(t, remotetest.Options{HostKeys: []ssh.Signer{keyA}})
	reimaged := startServer(t, remotetest.Options{HostKeys: []ssh.Signer{keyB}})
	const serverID, address = "3c5e2a1b-vm-1", "10.10.0.5"

	steps := []struct {
		name      string
		before    func(t *testing.T)
		srv       *remotetest.Server
		policy    remote.HostKeyPolicy
		mismatch  bool   // want *HostKeyMismatchError
		wantPin   string // fingerprint pinned afterwards
		wantFirst bool   // FirstSeen must be unchanged from the previous step
	}{
		{name: "first contact pins", srv: vm, wantPin: fp(keyA)},
		{name: "second contact matches", srv: vm, wantPin: fp(keyA), wantFirst: true},
		{name: "changed key refused", srv: reimaged, mismatch: true, wantPin: fp(keyA), wantFirst: true},
		{name: "changed key refused under RequireKnown too", srv: reimaged, policy: remote.HostKeyRequireKnown, mismatch: true, wantPin: fp(keyA)},
		{name: "Replace re-pins (rebuilt server)", srv: reimaged, wantPin: fp(keyB), before: func(t *testing.T) {
			if err := pins.Replace(ctx, serverID, address, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "old key now refused", srv: vm, mismatch: true, wantPin: fp(keyB)},
		{name: "Repin policy re-pins on connect", srv: vm, policy: remote.HostKeyRepin, wantPin: fp(keyA)},
		{name: "and the pin holds", srv: vm, wantPin: fp(keyA), wantFirst: true},
	}
	var prev []remote.Pin
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if step.before != nil {
				step.before(t)
			}
			tg := targetFor(t, step.srv)
			tg.PublishedFingerprints = nil
			tg.Pins, tg.PinKey, tg.HostKeyPolicy = pins, remote.PinKey{ServerID: serverID, Address: address}, step.policy
			cmdsBefore, acceptedBefore, loginsBefore := len(step.srv.Commands()), step.srv.Accepted(), step.srv.Logins()
			time.Sleep(2 * time.Millisecond) // last_seen moves
			c, err := remote.Dial(ctx, tg)
			if step.mismatch {
				var me *remote.HostKeyMismatchError
				if !errors.As(err, &me) {
					t.Fatalf("Dial = %v, want *HostKeyMismatchError", err)
				}
				if me.ServerID != serverID || me.Address != address || me.Host != step.srv.Addr || me.Source != "pinned" ||
					me.Got != fp(step.srv.HostKeyRaw()) || !slices.Equal(me.Want, []string{step.wantPin}) {
					t.Errorf("mismatch error = %+v", me)
				}
				for _, want := range []string{step.srv.Addr, serverID, me.Got, step.wantPin, "Replace", "Nothing was run"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("message lacks %q: %v", want, err)
					}
				}
				// Refused before authentication: no login, no command, no retry.
				if step.srv.Logins() != loginsBefore || len(step.srv.Commands()) != cmdsBefore {
					t.Errorf("logged in (%d -> %d) or ran commands on the mismatching host: %q", loginsBefore,
						step.srv.Logins(), step.srv.Commands())
				}
				if n := step.srv.Accepted() - acceptedBefore; n != 1 {
					t.Errorf("%d connections: a mismatch must not be retried", n)
				}
			} else {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				res, err := c.Run(ctx, "echo hi", remote.RunOpts{})
				c.Close()
				if err != nil || res.Stdout != "hi\n" {
					t.Fatalf("Run = %q, %v", res.Stdout, err)
				}
			}
			got, err := pins.Get(ctx, serverID, address)
			if err != nil || len(got) != 1 || got[0].Fingerprint != step.wantPin {
				t.Fatalf("pins = %+v, %v; want %s", got, err, step.wantPin)
			}
			if step.wantFirst && len(prev) == 1 && !got[0].FirstSeen.Equal(prev[0].FirstSeen) {
				t.Errorf("first_seen changed: %v -> %v", prev[0].FirstSeen, got[0].FirstSeen)
			}
			if !step.mismatch && len(prev) == 1 && !got[0].LastSeen.After(prev[0].LastSeen) {
				t.Errorf("last_seen not refreshed: %v -> %v", prev[0].LastSeen, got[0].LastSeen)
			}
			prev = got
		})
	}
	// The reimaged server never saw a login while it was refused; the one
	// login it had came after Replace.
	if n := reimaged.Logins(); n != 1 {
		t.Errorf("reimaged server: %d logins, want 1 (after Replace)", n)
	}
}

func TestPublishedFingerprints(t *testing.T) {
	st := openStore(t)
	pins := st.HostKeyPins()
	ctx := context.Background()
	key := remotetest.NewHostKey(t)
	srv := startServer(t, remotetest.Options{HostKeys: []ssh.Signer{key}})
	other := remotetest.NewHostKey(t)
	md5 := ssh.FingerprintLegacyMD5(key.PublicKey())
	console := fmt.Sprintf("[  12.3] cloud-init[812]: ...\n-----BEGIN SSH HOST KEY FINGERPRINTS-----\n"+
		"256 %s root@vm (ED25519)\n-----END SSH HOST KEY FINGERPRINTS-----\n"+
		"-----BEGIN SSH HOST KEY KEYS-----\n%s root@vm\n-----END SSH HOST KEY KEYS-----\n",
		fp(other), strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other.PublicKey()))))
	// A later boot (after a rebuild) printed the current key.
	console += fmt.Sprintf("-----BEGIN SSH HOST KEY FINGERPRINTS-----\nec2: 256 %s root@vm (ED25519)\n-----END SSH HOST KEY FINGERPRINTS-----\n", fp(key))

	for i, tc := range []struct {
		name      string
		published []string
		policy    remote.HostKeyPolicy
		pins      bool // use the pin store
		prepin    string
		ok        bool
		source    string
		wantPin   string
	}{
		{name: "mismatch fails even on first contact", published: []string{fp(other)}, pins: true, source: "published"},
		{name: "mismatch without a pin store", published: []string{fp(other)}, source: "published"},
		{name: "match pins", published: []string{fp(other), fp(key)}, pins: true, ok: true, wantPin: fp(key)},
		{name: "MD5 form", published: []string{md5}, pins: true, ok: true, wantPin: fp(key)},
		{name: "from the console log (last block wins)", published: remote.FingerprintsFromConsole(console), pins: true, ok: true, wantPin: fp(key)},
		{name: "match without a pin store", published: []string{fp(key)}, ok: true},
		{name: "RequireKnown with published pins", published: []string{fp(key)}, policy: remote.HostKeyRequireKnown, pins: true, ok: true, wantPin: fp(key)},
		{name: "RequireKnown without anything", policy: remote.HostKeyRequireKnown, pins: true},
		{name: "an existing pin wins over published", published: []string{fp(key)}, pins: true, prepin: fp(other), source: "pinned", wantPin: fp(other)},
		{name: "Repin checks published", published: []string{fp(other)}, policy: remote.HostKeyRepin, pins: true, prepin: fp(other), source: "published", wantPin: fp(other)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverID := fmt.Sprintf("server-%d", i)
			tg := targetFor(t, srv)
			tg.PublishedFingerprints, tg.HostKeyPolicy = tc.published, tc.policy
			if tc.pins {
				tg.Pins, tg.PinKey = pins, remote.PinKey{ServerID: serverID}
			}
			if tc.prepin != "" {
				if err := pins.Replace(ctx, serverID, "127.0.0.1", []remote.Pin{remote.PinOf(other.PublicKey())}); err != nil {
					t.Fatal(err)
				}
			}
			logins := srv.Logins()
			c, err := remote.Dial(ctx, tg)
			if tc.ok {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				c.Close()
				// The server counts a login after the handshake, possibly after
				// Dial returned: wait for it, so it does not land in the next case.
				for deadline := time.Now().Add(2 * time.Second); srv.Logins() == logins && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			} else {
				var me *remote.HostKeyMismatchError
				switch {
				case tc.source != "" && (!errors.As(err, &me) || me.Source != tc.source):
					t.Fatalf("Dial = %v, want a %s mismatch", err, tc.source)
				case tc.source == "" && !errors.Is(err, remote.ErrHostKeyUnknown):
					t.Fatalf("Dial = %v, want ErrHostKeyUnknown", err)
				}
				if srv.Logins() != logins {
					t.Error("logged in despite the failed verification")
				}
			}
			if tc.pins {
				got, _ := pins.Get(ctx, serverID, "127.0.0.1")
				if tc.wantPin == "" && len(got) != 0 || tc.wantPin != "" && (len(got) != 1 || got[0].Fingerprint != tc.wantPin) {
					t.Errorf("pins = %+v, want %q", got, tc.wantPin)
				}
			}
		})
	}
	if got := remote.FingerprintsFromConsole(console); !slices.Equal(got, []string{fp(key), fp(other)}) {
		// The fingerprint block of the last boot, then the keys block (only one, from the first boot).
		t.Errorf("FingerprintsFromConsole = %q", got)
	}
}

// golang/go#29286: a server with an ed25519 and an ECDSA key, pinned by its
// ECDSA key, must be asked for the ECDSA key (x/crypto would otherwise pick
// its own preference and report a mismatch).
func TestHostKeyAlgorithmsFollowThePin(t *testing.T) {
	st := openStore(t)
	pins := st.HostKeyPins()
	ctx := context.Background()
	ed, ec := remotetest.NewHostKey(t), ecdsaHostKey(t)
	both := startServer(t, remotetest.Options{HostKeys: []ssh.Signer{ed, ec}})
	edOnly := startServer(t, remotetest.Options{HostKeys: []ssh.Signer{ed}})

	tg := targetFor(t, both)
	tg.PublishedFingerprints, tg.Pins = nil, pins

	// First contact prefers ed25519.
	tg.PinKey = remote.PinKey{ServerID: "first"}
	c := dial(t, tg)
	if c.HostKey().Type() != ssh.KeyAlgoED25519 {
		t.Errorf("first contact negotiated %s", c.HostKey().Type())
	}

	tg.PinKey = remote.PinKey{ServerID: "ecdsa-pinned", Address: "vm"}
	if err := pins.Replace(ctx, "ecdsa-pinned", "vm", []remote.Pin{remote.PinOf(ec.PublicKey())}); err != nil {
		t.Fatal(err)
	}
	c = dial(t, tg)
	if c.HostKey().Type() != ssh.KeyAlgoECDSA256 || ssh.FingerprintSHA256(c.HostKey()) != fp(ec) {
		t.Errorf("negotiated %s %s, want the pinned ECDSA key", c.HostKey().Type(), ssh.FingerprintSHA256(c.HostKey()))
	}

	// Only the ECDSA fingerprint was published: the server prefers its
	// ed25519 key, the client asks for its other keys and pins the ECDSA one.
	tg.PinKey = remote.PinKey{ServerID: "ecdsa-published"}
	tg.PublishedFingerprints = []string{fp(ec)}
	c = dial(t, tg)
	if got, _ := pins.Get(ctx, "ecdsa-published", "127.0.0.1"); ssh.FingerprintSHA256(c.HostKey()) != fp(ec) ||
		len(got) != 1 || got[0].Fingerprint != fp(ec) {
		t.Errorf("negotiated %s, pins %+v; want the published ECDSA key", ssh.FingerprintSHA256(c.HostKey()), got)
	}
	// None of its keys published: refused, nothing pinned.
	tg.PinKey = remote.PinKey{ServerID: "none-published"}
	tg.PublishedFingerprints = []string{fp(remotetest.NewHostKey(t))}
	if _, err := remote.Dial(ctx, tg); !errors.As(err, new(*remote.HostKeyMismatchError)) {
		t.Errorf("Dial = %v, want a mismatch", err)
	}
	if got, _ := pins.Get(ctx, "none-published", "127.0.0.1"); len(got) != 0 {
		t.Errorf("pinned %+v", got)
	}
	tg.PublishedFingerprints = nil
	tg.PinKey = remote.PinKey{ServerID: "ecdsa-pinned", Address: "vm"}

	// The same server rebuilt with only an ed25519 key: none of the pinned
	// type is offered. The error still names the key it has now.
	tg2 := targetFor(t, edOnly)
	tg2.PublishedFingerprints, tg2.Pins, tg2.PinKey = nil, pins, tg.PinKey
	_, err := remote.Dial(ctx, tg2)
	var me *remote.HostKeyMismatchError
	if !errors.As(err, &me) || me.Got != fp(ed) || me.KeyType != ssh.KeyAlgoED25519 || !slices.Equal(me.Want, []string{fp(ec)}) {
		t.Fatalf("Dial = %v (%+v), want a mismatch naming the ed25519 key", err, me)
	}
	if edOnly.Logins() != 0 {
		t.Error("logged in")
	}
}

func TestConcurrentFirstContacts(t *testing.T) {
	st := openStore(t)
	pins := st.HostKeyPins()
	ctx := context.Background()
	a := startServer(t, remotetest.Options{})
	b := startServer(t, remotetest.Options{}) // an impostor answering for the same VNFC

	// The same host from many goroutines: all succeed, one pin.
	tg := targetFor(t, a)
	tg.PublishedFingerprints, tg.Pins, tg.PinKey = nil, pins, remote.PinKey{ServerID: "fanout", Address: "vm"}
	errs := remote.ForEach(ctx, make([]int, 12), 0, func(ctx context.Context, _ int) error {
		c, err := remote.Dial(ctx, tg)
		if err == nil {
			c.Close()
		}
		return err
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := pins.Get(ctx, "fanout", "vm"); len(got) != 1 {
		t.Fatalf("pins = %+v", got)
	}

	// Two different keys racing for the first pin: exactly one wins.
	for round := range 5 {
		id := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		res := make([]error, 2)
		for i, s := range []*remotetest.Server{a, b} {
			tg := targetFor(t, s)
			tg.PublishedFingerprints, tg.Pins, tg.PinKey = nil, pins, remote.PinKey{ServerID: id, Address: "vm"}
			wg.Go(func() {
				c, err := remote.Dial(ctx, tg)
				if err == nil {
					c.Close()
				}
				res[i] = err
			})
		}
		wg.Wait()
		var me *remote.HostKeyMismatchError
		okCount := 0
		for _, err := range res {
			if err == nil {
				okCount++
			} else if !errors.As(err, &me) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if okCount != 1 {
			t.Fatalf("round %d: %d winners (%v)", round, okCount, res)
		}
	}
}

func TestInsecureIgnoreHostKeyPinsNothing(t *testing.T) {
	st := openStore(t)
	pins := st.HostKeyPins()
	srv := startServer(t, remotetest.Options{})
	tg := targetFor(t, srv)
	tg.PublishedFingerprints = []string{"SHA256:not-this-one"}
	tg.HostKeyPolicy, tg.Pins, tg.PinKey = remote.InsecureIgnoreHostKey, pins, remote.PinKey{ServerID: "x"}
	dial(t, tg)
	if all, _ := st.ListHostKeys(context.Background()); len(all) != 0 {
		t.Errorf("pinned %+v", all)
	}
}
