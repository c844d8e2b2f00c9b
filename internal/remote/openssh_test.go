package remote_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// injected is a password that breaks out of naive quoting. It is the login
// and sudo password of "deploy" on the test hosts, and is passed as data to
// scripts.
const injected = "a'b; touch /tmp/pwned #"

// TestOpenSSH runs against real Debian sshd hosts (internal/testhosts:
// network namespaces reached through Network.Dial). Needs root; CI runs as
// root with openssh-server installed.
func TestOpenSSH(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping the real OpenSSH tests: they need root to create test hosts in network namespaces " +
			"(internal/testhosts); run `go test` as root (CI does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	_, clientKey, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(clientKey)
	blk, _ := ssh.MarshalPrivateKey(clientKey, "vnfm")
	keyPEM := pemEncode(blk)
	authKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))

	n := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: testPrefix(ctx, t), Subnet: "10.77.21.0/24"})
	users := []testhosts.User{
		{Name: "deploy", Password: injected, Sudo: "ALL=(ALL) ALL"}, // sudo asks for the password
		{Name: "cloud", Password: "cloud-pass", Sudo: testhosts.SudoNoPasswd},
		{Name: "keyuser", AuthorizedKeys: []string{authKey}},
	}
	start := time.Now()
	hosts, err := n.AddHosts(ctx, testhosts.HostSpec{Name: "vm1", Users: users}, testhosts.HostSpec{Name: "vm2", Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 hosts up in %v", time.Since(start).Round(time.Millisecond))
	vm1, vm2 := hosts[0], hosts[1]
	pins := openStore(t).HostKeyPins()

	target := func(h *testhosts.Host, user, password string) remote.Target {
		return remote.Target{
			Host: h.IP.String(), User: user, Password: password, Dialer: n.Dial,
			Pins: pins, PinKey: remote.PinKey{ServerID: "nova-" + h.Name},
			MaxWait: 30 * time.Second,
		}
	}
	hostFile := func(t *testing.T, h *testhosts.Host, path string) string {
		t.Helper()
		out, err := h.Exec(ctx, "cat", path)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	deploy := dial(t, target(vm1, "deploy", injected))
	cloud := dial(t, target(vm1, "cloud", "cloud-pass"))

	t.Run("password login pins the host key", func(t *testing.T) {
		res, err := deploy.Run(ctx, "hostname; id -un", remote.RunOpts{})
		if err != nil || res.Stdout != "vm1\ndeploy\n" {
			t.Fatalf("Run = %q, %v", res.Stdout, err)
		}
		got, err := pins.Get(ctx, "nova-vm1", vm1.IP.String())
		if err != nil || len(got) != 1 || !slices.Contains(vm1.HostKeyFingerprints(), got[0].Fingerprint) ||
			got[0].KeyType != ssh.KeyAlgoED25519 {
			t.Fatalf("pins = %+v, %v; host keys %v", got, err, vm1.HostKeyFingerprints())
		}
	})

	t.Run("key login", func(t *testing.T) {
		tg := target(vm1, "keyuser", "")
		tg.PrivateKey = keyPEM
		c := dial(t, tg)
		if res, err := c.Run(ctx, "id -un", remote.RunOpts{}); err != nil || res.Stdout != "keyuser\n" {
			t.Fatalf("Run = %q, %v", res.Stdout, err)
		}
	})

	t.Run("sudo", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			c    *remote.Client
		}{{"password (sudo -S)", deploy}, {"NOPASSWD (sudo -n)", cloud}} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := tc.c.Run(ctx, "id -u", remote.RunOpts{Sudo: true})
				if err != nil || res.Stdout != "0\n" {
					t.Fatalf("sudo id -u = %q, %v", res.Stdout, err)
				}
				// stdin reaches the command; the password line does not.
				res, err = tc.c.Run(ctx, "cat", remote.RunOpts{Sudo: true, Stdin: strings.NewReader("payload\nline 2\n")})
				if err != nil || res.Stdout != "payload\nline 2\n" {
					t.Fatalf("sudo cat = %q, %v", res.Stdout, err)
				}
				// The password is in no process's argv while sudo runs.
				res, err = tc.c.Run(ctx, "ps -eo args", remote.RunOpts{Sudo: true})
				if err != nil || !strings.Contains(res.Stdout, "sudo") || strings.Contains(res.Stdout, "pwned") {
					t.Fatalf("ps under sudo: %q, %v", res.Stdout, err)
				}
				// A failing sudo command is a CommandError with its stderr.
				_, err = tc.c.Run(ctx, "echo denied >&2; exit 5", remote.RunOpts{Sudo: true})
				var ce *remote.CommandError
				if !errors.As(err, &ce) || ce.ExitCode != 5 || !ce.Sudo || !strings.Contains(ce.StderrTail, "denied") {
					t.Fatalf("err = %v", err)
				}
				if strings.Contains(err.Error(), injected) {
					t.Errorf("password leaked: %v", err)
				}
			})
		}
		t.Run("wrong sudo password", func(t *testing.T) {
			tg := target(vm1, "deploy", injected)
			tg.SudoPassword = "not-the-password"
			c := dial(t, tg)
			_, err := c.Run(ctx, "id -u", remote.RunOpts{Sudo: true})
			var se *remote.SudoError
			if !errors.As(err, &se) || strings.Contains(err.Error(), "not-the-password") {
				t.Fatalf("err = %v, want *SudoError without the password", err)
			}
		})
	})

	t.Run("a password reaches the script as data", func(t *testing.T) {
		script := "#!/bin/sh\nprintf '%s' \"$1\" > \"$2\"\n"
		if err := deploy.Upload(ctx, "/tmp/recv.sh", []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, out, cmd string
			opts           remote.RunOpts
		}{
			{"argument", "/tmp/got-arg", remote.Command("/tmp/recv.sh", injected, "/tmp/got-arg"), remote.RunOpts{}},
			{"argument under sudo", "/tmp/got-sudo", remote.Command("/tmp/recv.sh", injected, "/tmp/got-sudo"), remote.RunOpts{Sudo: true}},
			{"nested sh -c", "/tmp/got-nested", "sh -c " + remote.Quote(remote.Command("/tmp/recv.sh", injected, "/tmp/got-nested")), remote.RunOpts{}},
			{"environment", "/tmp/got-env", `/tmp/recv.sh "$PW" /tmp/got-env`, remote.RunOpts{Env: map[string]string{"PW": injected}}},
			{"environment under sudo", "/tmp/got-env-sudo", `/tmp/recv.sh "$PW" /tmp/got-env-sudo`, remote.RunOpts{Sudo: true, Env: map[string]string{"PW": injected}}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := deploy.Run(ctx, tc.cmd, tc.opts); err != nil {
					t.Fatal(err)
				}
				if got := hostFile(t, vm1, tc.out); got != injected {
					t.Errorf("the script received %q, want %q", got, injected)
				}
			})
		}
		if out, err := vm1.Exec(ctx, "sh", "-c", "ls -la /tmp/pwned 2>&1; true"); err != nil || !strings.Contains(out, "No such file") {
			t.Fatalf("/tmp/pwned exists on the host: %q %v", out, err)
		}
	})

	t.Run("upload", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			c      *remote.Client
			asRoot bool
			path   string
			mode   os.FileMode
			want   string // stat -c '%a %U:%G'
		}{
			{"sftp as the user", deploy, false, "/home/deploy/admin.conf", 0o600, "600 deploy:deploy"},
			{"sftp, executable", cloud, false, "/home/cloud/run.sh", 0o755, "755 cloud:cloud"},
			{"as root through sudo -S", deploy, true, "/etc/mini-vnfm-test.conf", 0o644, "644 root:root"},
			{"as root through sudo -n", cloud, true, "/usr/local/bin/mini-vnfm-test", 0o750, "750 root:root"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				data := []byte("content of " + tc.path + "\n")
				var err error
				if tc.asRoot {
					err = tc.c.UploadAsRoot(ctx, tc.path, data, tc.mode)
				} else {
					err = tc.c.Upload(ctx, tc.path, data, tc.mode)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := hostFile(t, vm1, tc.path); got != string(data) {
					t.Errorf("content = %q", got)
				}
				if out, err := vm1.Exec(ctx, "stat", "-c", "%a %U:%G", tc.path); err != nil || strings.TrimSpace(out) != tc.want {
					t.Errorf("stat = %q, %v; want %q", out, err, tc.want)
				}
			})
		}
		// A plain user cannot write /etc over SFTP: a clear error.
		if err := deploy.Upload(ctx, "/etc/nope", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "/etc/nope") {
			t.Errorf("upload to /etc as a user: %v", err)
		}
	})

	t.Run("cancel kills the remote command", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			sudo bool
			cmd  string
		}{{"as the user", false, "sleep 301"}, {"under sudo", true, "sleep 302"}} {
			t.Run(tc.name, func(t *testing.T) {
				cctx, ccancel := context.WithTimeout(ctx, 500*time.Millisecond)
				defer ccancel()
				start := time.Now()
				_, err := deploy.Run(cctx, tc.cmd, remote.RunOpts{Sudo: tc.sudo})
				took := time.Since(start)
				if !errors.Is(err, context.DeadlineExceeded) || took > 3*time.Second {
					t.Fatalf("Run = %v after %v", err, took)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					out, _ := vm1.Exec(ctx, "sh", "-c", "pgrep -af '^"+tc.cmd+"$' || true")
					if strings.TrimSpace(out) == "" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("still running on the host: %q", out)
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
		}
	})

	t.Run("parallel fan-out over hosts", func(t *testing.T) {
		errs := remote.ForEach(ctx, hosts, 0, func(ctx context.Context, h *testhosts.Host) error {
			c, err := remote.Dial(ctx, target(h, "cloud", "cloud-pass"))
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Run(ctx, "hostname", remote.RunOpts{Sudo: true})
			if err == nil && strings.TrimSpace(res.Stdout) != h.Hostname {
				err = errors.New("wrong host " + res.Stdout)
			}
			return err
		})
		if err := remote.JoinErrors(hosts, errs, func(h *testhosts.Host) string { return h.Name }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("reimaged host is refused, then re-pinned", func(t *testing.T) {
		old := vm2.HostKeyFingerprints()
		if got, _ := pins.Get(ctx, "nova-vm2", vm2.IP.String()); len(got) != 1 || !slices.Contains(old, got[0].Fingerprint) {
			t.Fatalf("vm2 pins before the reimage: %+v", got)
		}
		if err := vm2.Reimage(ctx); err != nil {
			t.Fatal(err)
		}
		logins := strings.Count(vm2.Log(), "Accepted ")
		_, err := remote.Dial(ctx, target(vm2, "cloud", "cloud-pass"))
		var me *remote.HostKeyMismatchError
		if !errors.As(err, &me) {
			t.Fatalf("Dial = %v, want *HostKeyMismatchError", err)
		}
		if !slices.Contains(vm2.HostKeyFingerprints(), me.Got) || !slices.Contains(old, me.Want[0]) || me.ServerID != "nova-vm2" {
			t.Errorf("mismatch %+v; old keys %v, new %v", me, old, vm2.HostKeyFingerprints())
		}
		t.Logf("error: %v", err)
		if n := strings.Count(vm2.Log(), "Accepted "); n != logins {
			t.Errorf("the host accepted a login despite the mismatch (%d -> %d)", logins, n)
		}
		// The cloud publishes the new fingerprints on the console; a heal
		// re-pins with them.
		console := "-----BEGIN SSH HOST KEY FINGERPRINTS-----\n" +
			strings.Join(testhosts.FingerprintLines(vm2.HostKeys(), "root@vm2"), "\n") +
			"\n-----END SSH HOST KEY FINGERPRINTS-----\n"
		tg := target(vm2, "cloud", "cloud-pass")
		tg.HostKeyPolicy, tg.PublishedFingerprints = remote.HostKeyRepin, remote.FingerprintsFromConsole(console)
		c := dial(t, tg)
		if _, err := c.Run(ctx, "true", remote.RunOpts{}); err != nil {
			t.Fatal(err)
		}
		got, _ := pins.Get(ctx, "nova-vm2", vm2.IP.String())
		if len(got) != 1 || !slices.Contains(vm2.HostKeyFingerprints(), got[0].Fingerprint) {
			t.Fatalf("pins after re-pin: %+v", got)
		}
		dial(t, target(vm2, "cloud", "cloud-pass")) // and the normal policy is happy again
	})

}

// prefixBase marks this package's test networks: "rmte" + the test
// process's pid in base 36.
const prefixBase = "rmte"

// testPrefix gives this test process its own testhosts prefix. A fixed
// prefix is not enough: testhosts removes every network of its prefix when
// it starts, so two `go test` processes on one machine (people share
// checkouts and CI machines) would tear down each other's hosts. Networks
// left behind by crashed runs (their process is gone) are removed here.
func testPrefix(ctx context.Context, t *testing.T) string {
	t.Helper()
	prefix := prefixBase + strconv.FormatInt(int64(os.Getpid()), 36)
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		p, ok := strings.CutSuffix(e.Name(), "-ctl")
		if !ok || p == prefix || !strings.HasPrefix(p, prefixBase) {
			continue
		}
		pid, err := strconv.ParseInt(p[len(prefixBase):], 36, 64)
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(int(pid), 0), syscall.ESRCH) {
			continue // not ours, or its process still runs
		}
		t.Logf("removing the test network %s left by process %d", p, pid)
		if err := testhosts.Cleanup(ctx, p); err != nil {
			t.Logf("cleanup %s: %v", p, err)
		}
	}
	return prefix
}
