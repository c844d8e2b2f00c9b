package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

func hostPlan(s *remotetest.Server, id string) Plan {
	host, port, _ := strings.Cut(s.Addr, ":")
	p := Plan{Key: id, Name: id, ServerID: "server-" + id, Addr: host, Login: Login{Username: "u", Password: "pw-secret"}, Wait: -1}
	for _, c := range port {
		p.Port = p.Port*10 + int(c-'0')
	}
	return p
}

func TestDialerPinsAndRefusesAnotherKey(t *testing.T) {
	ctx := context.Background()
	pins := &remotetest.Pins{}
	d := &Dialer{Pins: pins, Trust: remote.TrustTOFU} // pinning itself is under test
	a := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	b := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	ss, err := d.OpenAll(ctx, []Plan{hostPlan(a, "a"), hostPlan(b, "b")})
	if err != nil {
		t.Fatal(err)
	}
	if ss.Get("a") == nil || ss.Get("b") == nil || pins.Len() != 2 {
		t.Fatalf("sessions a=%v b=%v, %d pins", ss.Get("a"), ss.Get("b"), pins.Len())
	}
	if res, err := ss.Get("a").Run(ctx, "echo hi", remote.RunOpts{}); err != nil || strings.TrimSpace(res.Stdout) != "hi" {
		t.Fatalf("run: %q %v", res.Stdout, err)
	}
	ss.Close()

	// b comes back with another host key: nothing is opened anywhere, and
	// the error says why.
	b2 := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	p2 := hostPlan(b2, "b")
	if err := pins.Put(ctx, p2.ServerID, p2.Addr, remote.PinOf(b.HostKey())); err != nil { // b's key pinned for b2's address
		t.Fatal(err)
	}
	_, err = d.OpenAll(ctx, []Plan{hostPlan(a, "a"), p2})
	if err == nil || !IsHostKeyMismatch(err) || !strings.Contains(err.Error(), "nothing was run on any node") {
		t.Fatalf("OpenAll with a changed host key: %v", err)
	}
	_, _, err = d.OpenSome(ctx, []Plan{hostPlan(a, "a"), p2})
	if !IsHostKeyMismatch(err) {
		t.Fatalf("OpenSome with a changed host key: %v", err)
	}
	// A repin accepts the new key and pins it.
	p2.Repin = true
	ss, err = d.OpenAll(ctx, []Plan{p2})
	if err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if got, _ := pins.Get(ctx, p2.ServerID, p2.Addr); len(got) != 1 || got[0].Fingerprint != ssh.FingerprintSHA256(b2.HostKey()) {
		t.Fatalf("pins after the repin: %+v", got)
	}
}

func TestDialerOpenSomeSkipsDeadHosts(t *testing.T) {
	ctx := context.Background()
	d := &Dialer{Pins: &remotetest.Pins{}, Trust: remote.TrustTOFU}
	a := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	dead := remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	pd := hostPlan(dead, "dead")
	dead.Close()
	pd.ConnectTimeout = 2 * time.Second
	ss, failed, err := d.OpenSome(ctx, []Plan{hostPlan(a, "a"), pd})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if ss.Get("a") == nil || ss.Get("dead") != nil || failed["dead"] == nil {
		t.Fatalf("sessions a=%v dead=%v failed %v", ss.Get("a"), ss.Get("dead"), failed)
	}
	if _, err := d.OpenAll(ctx, []Plan{hostPlan(a, "a"), pd}); err == nil || !strings.Contains(err.Error(), "cannot connect to the nodes") {
		t.Fatalf("OpenAll with a dead host: %v", err)
	}
	if _, err := (&Dialer{}).Open(ctx, hostPlan(a, "a")); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("a dialer without a pin store opened a session: %v", err)
	}
}

// TestDialerHostKeyPolicies: by default (published) a VNF server is only
// trusted with the fingerprints its VIM published — read again through the
// infra driver while they are not there yet — and refused without them,
// before any password is sent; pinned takes the request's fingerprints;
// tofu is explicit; a server outside the VNF is verified by its own
// fingerprints when given.
func TestDialerHostKeyPolicies(t *testing.T) {
	ctx := context.Background()
	start := func() *remotetest.Server {
		return remotetest.Start(t, remotetest.Options{Passwords: map[string]string{"u": "pw-secret"}})
	}
	fpOf := func(s *remotetest.Server) string { return ssh.FingerprintSHA256(s.HostKey()) }

	// published: not yet in the console, then there.
	a := start()
	reads := 0
	d := &Dialer{Pins: &remotetest.Pins{}, FingerprintWait: 5 * time.Second,
		Publisher: func(_ context.Context, id string) ([]string, error) {
			if id != "server-a" {
				t.Errorf("fingerprints of %q asked", id)
			}
			if reads++; reads < 2 {
				return nil, nil
			}
			return []string{fpOf(a)}, nil
		}}
	ss, err := d.OpenAll(ctx, []Plan{hostPlan(a, "a")})
	if err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if reads < 2 {
		t.Fatalf("the fingerprints were read %d times", reads)
	}

	// published, never: refused, nothing sent.
	b := start()
	d = &Dialer{Pins: &remotetest.Pins{}, FingerprintWait: 300 * time.Millisecond,
		Publisher: func(context.Context, string) ([]string, error) { return nil, nil }}
	if _, err := d.OpenAll(ctx, []Plan{hostPlan(b, "b")}); !errors.Is(err, remote.ErrHostKeyUnknown) || b.Logins() != 0 {
		t.Fatalf("unpublished: %v (%d logins)", err, b.Logins())
	}
	// published without a publisher (a VIM that publishes nothing): refused.
	if _, err := (&Dialer{Pins: &remotetest.Pins{}, FingerprintWait: 100 * time.Millisecond}).OpenAll(ctx, []Plan{hostPlan(b, "b")}); !errors.Is(err, remote.ErrHostKeyUnknown) {
		t.Fatalf("no publisher: %v", err)
	}
	// ...unless the infra driver put them in the plan already.
	pb := hostPlan(b, "b")
	pb.Fingerprints = []string{fpOf(b)}
	if ss, err := (&Dialer{Pins: &remotetest.Pins{}}).OpenAll(ctx, []Plan{pb}); err != nil {
		t.Fatal(err)
	} else {
		ss.Close()
	}

	// pinned: by VNFC key, server id or address; another key is refused.
	c := start()
	pinned := HostKeys{Policy: remote.TrustPinned, Fingerprints: map[string][]string{"server-c": {fpOf(c)}}}
	d = &Dialer{Pins: &remotetest.Pins{}, Trust: pinned.Trust(nil), Pinned: pinned}
	if ss, err := d.OpenAll(ctx, []Plan{hostPlan(c, "c")}); err != nil {
		t.Fatal(err)
	} else {
		ss.Close()
	}
	e := start()
	if _, err := d.OpenAll(ctx, []Plan{hostPlan(e, "e")}); err == nil || !strings.Contains(err.Error(), "none were given") || e.Accepted() != 0 {
		t.Fatalf("pinned, no fingerprint for the node: %v", err)
	}
	wrong := HostKeys{Policy: remote.TrustPinned, Fingerprints: map[string][]string{"e": {fpOf(c)}}}
	if _, err := (&Dialer{Pins: &remotetest.Pins{}, Trust: remote.TrustPinned, Pinned: wrong}).OpenAll(ctx, []Plan{hostPlan(e, "e")}); !IsHostKeyMismatch(err) || e.Logins() != 0 {
		t.Fatalf("pinned, another key: %v", err)
	}

	// A server outside the VNF: its fingerprints verify it; without them
	// its first key is pinned (nothing can be published for it).
	x := start()
	px := hostPlan(x, "ansible")
	px.External = true
	px.Fingerprints = []string{fpOf(a)}
	if _, err := (&Dialer{Pins: &remotetest.Pins{}}).OpenAll(ctx, []Plan{px}); !IsHostKeyMismatch(err) {
		t.Fatalf("external with another key's fingerprint: %v", err)
	}
	px.Fingerprints = nil
	if ss, err := (&Dialer{Pins: &remotetest.Pins{}}).OpenAll(ctx, []Plan{px}); err != nil {
		t.Fatal(err)
	} else {
		ss.Close()
	}
}

// TestHostKeyParams: the policy and the fingerprints are read and checked
// with the request; the VIM's policy applies when the request has none.
func TestHostKeyParams(t *testing.T) {
	read := func(v map[string]any) (HostKeys, error) {
		r := &Reader{}
		h := ReadHostKeys(r.Object("p", v, false))
		return h, r.Err()
	}
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"ssh_host_key_policy": "trust-all"}, "p.ssh_host_key_policy: is \"trust-all\""},
		{map[string]any{"ssh_host_key_policy": "pinned"}, "p.ssh_host_key_fingerprints: is required"},
		{map[string]any{"ssh_host_key_policy": "pinned", "ssh_host_key_fingerprints": map[string]any{"vnfc-1": []any{"abc"}}}, "is not a host key fingerprint"},
		{map[string]any{"ssh_host_key_policy": "tofu", "ssh_host_key_fingerprints": map[string]any{"vnfc-1": []any{"SHA256:x"}}}, "only used with"},
	} {
		if _, err := read(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.in, err, tc.want)
		}
	}
	h, err := read(map[string]any{"ssh_host_key_policy": "Pinned", "ssh_host_key_fingerprints": map[string]any{"10.0.0.5": "SHA256:a, SHA256:b"}})
	if err != nil || h.Policy != remote.TrustPinned || len(h.For("x", "10.0.0.5")) != 2 {
		t.Fatalf("%+v %v", h, err)
	}
	none, _ := read(nil)
	vimTofu := &model.VimConnectionInfo{Extra: map[string]any{"ssh_host_key_policy": "tofu"}}
	if none.Trust(nil) != remote.TrustPublished || none.Trust(vimTofu) != remote.TrustTOFU || h.Trust(vimTofu) != remote.TrustPinned {
		t.Fatal("policy resolution: request, then VIM, then published")
	}
}
