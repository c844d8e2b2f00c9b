package testhosts_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// A persistent network's hosts survive the network: after Close (or the
// process's death) a new network on the same state directory restores them
// with their address, MAC, host keys, accounts, files and enabled services;
// Forget deletes a saved host. The state directory lives under /root here,
// which every host replaces with its own /root.
func TestPersistentHostsSurviveTheNetwork(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: needs root to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	root, err := os.MkdirTemp("/root", "testhosts-persist-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	opts := testhosts.Options{Prefix: "thpers", Subnet: "10.77.19.0/24", StateDir: filepath.Join(root, "state"), Persist: true, Logf: t.Logf}
	n, err := testhosts.NewNetwork(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = n.Close()
		}
	}()
	users := []testhosts.User{{Name: "ubuntu", Password: "pw-1", Sudo: testhosts.SudoNoPasswd}}
	hs, err := n.AddHosts(ctx, testhosts.HostSpec{Name: "keep", Users: users, MAC: "fa:16:3e:00:00:19"},
		testhosts.HostSpec{Name: "gone", Users: users, IP: netip.MustParseAddr("10.77.19.40")})
	if err != nil {
		t.Fatal(err)
	}
	keep := hs[0]
	fps := keep.HostKeyFingerprints()
	// What a driver leaves on a node: a file in /etc, one in a home, an
	// enabled service (through the systemctl stand-in).
	script := `set -e
echo 10.0.0.1 cluster-endpoint >> /etc/hosts
echo data > /home/ubuntu/state.txt
printf '[Service]\nExecStart=/bin/sleep 4242\n' > /etc/systemd/system/thtest.service
systemctl enable --now thtest
pgrep -f 'sleep 4242'`
	if out, err := keep.Exec(ctx, "bash", "-c", script); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if left := netnsWithPrefix(t, "thpers"); len(left) != 0 {
		t.Fatalf("namespaces left after Close: %v", left)
	}

	n, err = testhosts.NewNetwork(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	closed = false
	saved, err := n.Saved()
	if err != nil || !slices.Equal(saved, []string{"gone", "keep"}) {
		t.Fatalf("saved hosts %v, %v", saved, err)
	}
	if err := n.Forget("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(opts.StateDir, "hosts", "gone")); !os.IsNotExist(err) {
		t.Fatalf("forgotten host's disk: %v", err)
	}
	h, err := n.Restore(ctx, "keep", true)
	if err != nil {
		t.Fatal(err)
	}
	if h.IP != keep.IP || !slices.Equal(h.HostKeyFingerprints(), fps) {
		t.Fatalf("restored %s %v, want %s %v", h.IP, h.HostKeyFingerprints(), keep.IP, fps)
	}
	// The host key sshd presents is the saved one; the account logs in.
	var seen ssh.PublicKey
	c, err := n.SSH(ctx, h.IP.String()+":22", testhosts.PasswordConfig("ubuntu", "pw-1", &seen))
	if err != nil {
		t.Fatal(err)
	}
	out, err := testhosts.Run(c, "cat ~/state.txt; grep cluster-endpoint /etc/hosts; cat /sys/class/net/eth0/address")
	c.Close()
	if err != nil || !strings.Contains(out, "data") || !strings.Contains(out, "10.0.0.1 cluster-endpoint") || !strings.Contains(out, "fa:16:3e:00:00:19") {
		t.Fatalf("after restore: %v\n%s", err, out)
	}
	if fp := ssh.FingerprintSHA256(seen); !slices.Contains(fps, fp) {
		t.Fatalf("sshd presented %s, saved keys %v", fp, fps)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := h.Exec(ctx, "pgrep", "-f", "sleep 4242")
		if err == nil && strings.TrimSpace(out) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the enabled service did not start at boot:\n%s", h.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Remove (a deleted server) deletes the disk even in a persistent network.
	if err := h.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if saved, _ := n.Saved(); len(saved) != 0 {
		t.Fatalf("removed host still saved: %v", saved)
	}
}
