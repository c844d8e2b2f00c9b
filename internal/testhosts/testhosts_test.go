package testhosts_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// rootNetState is what must not change in the root namespace.
func rootNetState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"-o", "addr"}, {"route"}, {"-6", "route"}, {"-o", "link"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
		b.WriteString(strings.Join(args, " ") + ":\n" + string(out))
	}
	// Address and route lifetimes (DHCP, router advertisements) count down.
	return lifetimes.ReplaceAllString(b.String(), "")
}

var lifetimes = regexp.MustCompile(`(valid_lft|preferred_lft|expires) \S+`)

func netnsWithPrefix(t *testing.T, prefix string) []string {
	t.Helper()
	ents, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestNotRootOrTools(t *testing.T) {
	if os.Geteuid() == 0 {
		if err := testhosts.CheckTools(); err != nil {
			t.Fatalf("running as root but the host tools are missing: %v", err)
		}
		return
	}
	_, err := testhosts.NewNetwork(context.Background(), testhosts.Options{Prefix: "thnr"})
	if err != testhosts.ErrNotRoot {
		t.Fatalf("NewNetwork as non-root: %v, want ErrNotRoot", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: NewNetwork checks root first")
	}
	// A non-empty directory that is not a state directory is never wiped.
	foreign := t.TempDir()
	if err := os.WriteFile(foreign+"/precious", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := os.Stat(foreign + "/precious"); err != nil {
			t.Errorf("foreign state dir wiped: %v", err)
		}
	}()
	for _, o := range []testhosts.Options{
		{Prefix: "bad-prefix"},
		{Prefix: "Upper"},
		{Prefix: "thx", Subnet: "10.77.0.0/30"},
		{Prefix: "thx", Subnet: "fd00::/64"},
		{Prefix: "thx", Subnet: "nonsense"},
		{Prefix: "thx", StateDir: foreign},
	} {
		if n, err := testhosts.NewNetwork(context.Background(), o); err == nil {
			n.Close()
			t.Errorf("NewNetwork(%+v) succeeded", o)
		}
	}
}

// TestThreeHostsSSH is the main scenario: 3 hosts, password and key logins
// through Network.Dial, hostname and sudo, host keys as published,
// per-host filesystems, isolation, reimage, restart, teardown.
func TestThreeHostsSSH(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: needs root to create network namespaces")
	}
	before := rootNetState(t)
	const prefix = "tht"
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	clientPub, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(clientPriv)
	sshPub, _ := ssh.NewPublicKey(clientPub)
	authKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))

	n, err := testhosts.NewNetwork(ctx, testhosts.Options{Prefix: prefix, Subnet: "10.77.9.0/24", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			n.Close()
		}
	}()
	users := []testhosts.User{
		{Name: "testuser", Password: "testpass", Sudo: testhosts.SudoNoPasswd},
		{Name: "keyuser", AuthorizedKeys: []string{authKey}},
		{Name: "root", Password: "rootpw"},
	}
	t0 := time.Now()
	hosts, err := n.AddHosts(ctx,
		testhosts.HostSpec{Name: "master01", Users: users},
		testhosts.HostSpec{Name: "master02", Users: users, MAC: "fa:16:3e:00:00:02"},
		testhosts.HostSpec{Name: "worker01", Users: users, IP: netip.MustParseAddr("10.77.9.50"), Hostname: "wk1"},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 hosts up in %v", time.Since(t0))
	if got := hosts[0].IP.String(); got != "10.77.9.11" {
		t.Errorf("first auto address = %s, want 10.77.9.11", got)
	}
	if got := hosts[2].IP.String(); got != "10.77.9.50" {
		t.Errorf("explicit address = %s", got)
	}

	t.Run("ssh", func(t *testing.T) {
		for _, h := range hosts {
			t.Run(h.Name, func(t *testing.T) {
				t.Parallel()
				var seen ssh.PublicKey
				c, err := n.SSH(ctx, h.IP.String()+":22", testhosts.PasswordConfig("testuser", "testpass", &seen))
				if err != nil {
					t.Fatalf("password login: %v\n%s", err, h.Log())
				}
				defer c.Close()
				if out, err := testhosts.Run(c, "hostname"); err != nil || strings.TrimSpace(out) != h.Hostname {
					t.Errorf("hostname = %q, %v; want %q", out, err, h.Hostname)
				}
				if out, err := testhosts.Run(c, "sudo -n id -u"); err != nil || strings.TrimSpace(out) != "0" {
					t.Errorf("sudo id -u = %q, %v", out, err)
				}
				if out, err := testhosts.Run(c, "ip -4 -o addr show dev eth0; ip route"); err != nil ||
					!strings.Contains(out, " "+h.IP.String()+"/24") || !strings.Contains(out, "default via 10.77.9.1") {
					t.Errorf("addresses/routes in host: %q, %v", out, err)
				}
				if seen == nil || !slices.Contains(h.HostKeyFingerprints(), ssh.FingerprintSHA256(seen)) {
					t.Errorf("host key seen by the client is not one of the host's keys %v", h.HostKeyFingerprints())
				}
				// Key login, and root with password.
				kc, err := n.SSH(ctx, h.Hostname+":22", &ssh.ClientConfig{User: "keyuser", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
					HostKeyCallback: ssh.FixedHostKey(seen)})
				if err != nil {
					t.Fatalf("key login by host name: %v", err)
				}
				if out, err := testhosts.Run(kc, "id -un; sudo -n true 2>&1 || echo nosudo"); err != nil || !strings.Contains(out, "keyuser") || !strings.Contains(out, "nosudo") {
					t.Errorf("keyuser: %q, %v", out, err)
				}
				kc.Close()
				rc, err := n.SSH(ctx, h.IP.String()+":22", testhosts.PasswordConfig("root", "rootpw", nil))
				if err != nil {
					t.Fatalf("root login: %v", err)
				}
				rc.Close()
				if _, err := n.SSH(ctx, h.IP.String()+":22", testhosts.PasswordConfig("testuser", "wrong", nil)); err == nil {
					t.Error("wrong password accepted")
				}
			})
		}
	})
	if t.Failed() {
		return
	}

	// Per-host filesystems: a write in one host is invisible elsewhere.
	if _, err := hosts[0].Exec(ctx, "sh", "-c", "echo h0 > /etc/th-marker && mkdir -p /var/lib/th-test && touch /root/x"); err != nil {
		t.Fatal(err)
	}
	if out, err := hosts[1].Exec(ctx, "sh", "-c", "cat /etc/th-marker 2>&1; ls /var/lib/th-test 2>&1"); err == nil || !strings.Contains(out, "No such file") {
		t.Errorf("host 2 sees host 1's files: %q %v", out, err)
	}
	if _, err := os.Stat("/etc/th-marker"); err == nil {
		t.Error("/etc/th-marker leaked to the real /etc")
	}
	if b, err := os.ReadFile(hosts[0].UpperPath("/etc/th-marker")); err != nil || string(b) != "h0\n" {
		t.Errorf("upper layer copy: %q %v", b, err)
	}
	if out, _ := hosts[0].Exec(ctx, "sh", "-c", "cat /etc/hosts; cat /etc/resolv.conf; ls /etc/ssh/ | grep host; echo pids=$(ls /proc | grep -c '^[0-9]')"); !strings.Contains(out, "10.77.9.50\twk1") ||
		!strings.Contains(out, "nameserver 127.0.0.1") || strings.Contains(out, "rsa") {
		t.Errorf("host identity files:\n%s", out)
	}
	// Isolation: the ctl namespace has no way out.
	if out, err := exec.Command("ip", "netns", "exec", n.CtlNamespace(), "ip", "route", "get", "1.1.1.1").CombinedOutput(); err == nil || !strings.Contains(string(out), "unreachable") {
		t.Errorf("ctl namespace routes to the outside: %q %v", out, err)
	}
	// The systemctl shim drives a unit file.
	unit := "[Service]\nExecStart=/bin/sleep 300\n"
	if _, err := hosts[0].Exec(ctx, "sh", "-c", "printf '"+unit+"' > /etc/systemd/system/fake.service && systemctl enable --now fake && systemctl is-active fake && systemctl stop fake; systemctl is-active fake; test $? = 3"); err != nil {
		t.Errorf("systemctl shim: %v", err)
	}

	// Reimage: same address, new host key, fresh filesystem.
	h := hosts[0]
	oldFP := h.HostKeyFingerprints()
	t0 = time.Now()
	if err := h.Reimage(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reimage in %v", time.Since(t0))
	var seen ssh.PublicKey
	c, err := n.SSH(ctx, "10.77.9.11:22", testhosts.PasswordConfig("testuser", "testpass", &seen))
	if err != nil {
		t.Fatalf("login after reimage: %v", err)
	}
	if out, _ := testhosts.Run(c, "cat /etc/th-marker 2>&1; hostname"); !strings.Contains(out, "No such file") || !strings.Contains(out, "master01") {
		t.Errorf("after reimage: %q", out)
	}
	c.Close()
	if fp := ssh.FingerprintSHA256(seen); slices.Contains(oldFP, fp) || !slices.Contains(h.HostKeyFingerprints(), fp) {
		t.Errorf("host key after reimage %s; old %v new %v", fp, oldFP, h.HostKeyFingerprints())
	}

	// Restart keeps keys and files.
	if _, err := hosts[1].Exec(ctx, "touch", "/etc/keep-me"); err != nil {
		t.Fatal(err)
	}
	fp1 := hosts[1].HostKeyFingerprints()
	pid := hosts[1].PID1()
	if err := hosts[1].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if hosts[1].PID1() == pid || !slices.Equal(fp1, hosts[1].HostKeyFingerprints()) {
		t.Error("restart: same pid or changed keys")
	}
	if _, err := hosts[1].Exec(ctx, "test", "-e", "/etc/keep-me"); err != nil {
		t.Errorf("restart lost a file: %v", err)
	}

	// Remove one host; its namespace goes away and its address is free again.
	if err := n.RemoveHost(ctx, "worker01"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + prefix + "-worker01"); err == nil {
		t.Error("netns of removed host still exists")
	}
	dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, err := n.Dial(dctx, "tcp", "10.77.9.50:22"); err == nil {
		t.Error("removed host still reachable")
	}
	dcancel()

	t0 = time.Now()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	t.Logf("teardown in %v", time.Since(t0))
	if left := netnsWithPrefix(t, prefix); len(left) > 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if after := rootNetState(t); after != before {
		t.Errorf("root namespace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(n.StateDir()); err == nil {
		t.Errorf("state dir %s left", n.StateDir())
	}
}

// TestCleanupLeftovers simulates a crashed run: namespaces with the prefix
// exist (one with a process in it); NewNetwork/Cleanup removes them, and
// other prefixes' namespaces are left alone.
func TestCleanupLeftovers(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: needs root to create network namespaces")
	}
	ctx := context.Background()
	for _, ns := range []string{"thc-ctl", "thc-ghost", "thcx-other"} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	defer exec.Command("ip", "netns", "del", "thcx-other").Run()
	stray := exec.Command("ip", "netns", "exec", "thc-ghost", "sleep", "300")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stray.Wait() }()
	time.Sleep(50 * time.Millisecond)
	n := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "thc"})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stray process in a leftover namespace was not killed")
	}
	got := netnsWithPrefix(t, "thc")
	if !slices.Equal(got, []string{"thc-ctl"}) {
		t.Errorf("namespaces after NewNetwork: %v, want only the new thc-ctl", got)
	}
	if _, err := os.Stat("/run/netns/thcx-other"); err != nil {
		t.Error("another prefix's namespace was removed")
	}
	h, err := n.AddHost(ctx, testhosts.HostSpec{Name: "solo"})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Exec(ctx, "hostname"); err != nil || strings.TrimSpace(out) != "solo" {
		t.Errorf("exec hostname: %q %v", out, err)
	}
	if _, err := n.AddHost(ctx, testhosts.HostSpec{Name: "dup", IP: h.IP}); err == nil {
		t.Error("duplicate address accepted")
	}
	if _, err := n.AddHost(ctx, testhosts.HostSpec{Name: "gw", IP: n.Gateway()}); err == nil {
		t.Error("gateway address accepted")
	}
	if _, err := n.AddHost(ctx, testhosts.HostSpec{Name: "bad name"}); err == nil {
		t.Error("bad name accepted")
	}
}

func TestSHA512Crypt(t *testing.T) {
	for _, c := range []struct{ pw, salt, want string }{
		// The first from the SHA-crypt specification, the second from glibc crypt(3).
		{"Hello world!", "saltstring", "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"},
		{"we have a short salt string but not a short password", "short", "$6$short$qmfj2meTBr5G2EAGIJ4vjX7RpefsD4JzpEyTAeEUJdzdxlBS6pe8gdMHm5zFftaFSj/2p2bjBwyVS9ZhWpLZt."},
	} {
		if got := testhosts.SHA512Crypt(c.pw, c.salt); got != c.want {
			t.Errorf("SHA512Crypt(%q, %q) = %s, want %s", c.pw, c.salt, got, c.want)
		}
	}
	if h := testhosts.SHA512Crypt("x", ""); !strings.HasPrefix(h, "$6$") || len(h) != 3+16+1+86 {
		t.Errorf("random salt hash %s", h)
	}
}

// A stopped host is a powered-off VM: nothing answers at its addresses (a VIP
// keepalived added included), so another host can take the VIP over; started
// again it answers at its own address.
func TestStoppedHostIsSilent(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: needs root to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: "thoff", Subnet: "10.77.14.0/24"})
	h, err := n.AddHost(ctx, testhosts.HostSpec{Name: "vm1"})
	if err != nil {
		t.Fatal(err)
	}
	const vip = "10.77.14.80"
	if out, err := exec.Command("ip", "-n", h.NetNS, "addr", "add", vip+"/24", "dev", "eth0").CombinedOutput(); err != nil {
		t.Fatalf("adding the VIP: %v %s", err, out)
	}
	dial := func(addr string) error {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		c, err := n.Dial(dctx, "tcp", addr+":22")
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, a := range []string{h.IP.String(), vip} {
		if err := dial(a); err != nil {
			t.Fatalf("running host at %s: %v", a, err)
		}
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{h.IP.String(), vip} {
		err := dial(a)
		if err == nil || strings.Contains(err.Error(), "refused") {
			t.Errorf("stopped host at %s: %v, want no answer (a powered-off VM neither accepts nor refuses)", a, err)
		}
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dial(h.IP.String()); err != nil {
		t.Errorf("started again: %v", err)
	}
}
