package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

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
	d := &Dialer{Pins: pins}
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
	d := &Dialer{Pins: &remotetest.Pins{}}
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
