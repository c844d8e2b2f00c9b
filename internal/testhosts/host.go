package testhosts

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var (
	hostNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,38}[a-zA-Z0-9])?$`)
	userNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
)

// SudoNoPasswd is the sudo rule cloud images give their default user.
const SudoNoPasswd = "ALL=(ALL) NOPASSWD:ALL"

// User is an account created in a host (only in that host's /etc layer).
type User struct {
	Name string
	// Password in clear text (set with chpasswd); empty = none.
	Password string
	// PasswordHash is a crypt(3) hash (set with chpasswd -e); used when
	// Password is empty.
	PasswordHash string
	// AuthorizedKeys are public-key lines for ~/.ssh/authorized_keys.
	AuthorizedKeys []string
	// Sudo is a sudoers rule for the user, e.g. SudoNoPasswd; empty = no sudo.
	// A user with a rule is also in the "sudo" group.
	Sudo string
	// Groups are extra existing groups.
	Groups []string
	// Shell defaults to /bin/bash.
	Shell string
}

// HostSpec describes a host to create.
type HostSpec struct {
	// Name is the host's key in the Network; its namespace is
	// "<prefix>-<Name>". Letters, digits and "-", at most 40 characters.
	Name string
	// Hostname defaults to Name.
	Hostname string
	// IP is the host's address in the network's subnet; zero = the next free
	// address from .11 on.
	IP netip.Addr
	// MAC of eth0, e.g. a Neutron port's "fa:16:3e:..."; empty = random.
	MAC string
	// Users to create. "root" may be listed to set root's password or keys.
	Users []User
	// NoPasswordAuth turns sshd's PasswordAuthentication off (cloud-init's
	// ssh_pwauth: false).
	NoPasswordAuth bool
	// HostKeys to install; nil = generate fresh ones (see GenerateHostKeys).
	HostKeys []HostKey
	// ExtraHosts are extra /etc/hosts lines.
	ExtraHosts []string
	// NoPeers leaves the network's other hosts out of /etc/hosts (only
	// localhost, the host itself and ExtraHosts), like a cloud VM.
	NoPeers bool
}

// Host is one test host. Name, Hostname, IP and NetNS never change; the host
// keys change on Reimage.
type Host struct {
	Name     string
	Hostname string
	IP       netip.Addr
	// NetNS is the host's network namespace ("<prefix>-<Name>").
	NetNS string

	net  *Network
	idx  int
	spec HostSpec
	dir  string

	mu      sync.Mutex
	keys    []HostKey
	cmd     *exec.Cmd
	pid1    int
	exited  chan struct{}
	removed bool
	netUp   bool
	started time.Time
}

// HostKeys returns the host's current SSH host keys.
func (h *Host) HostKeys() []HostKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HostKey(nil), h.keys...)
}

// HostKeyFingerprints returns the SHA256 fingerprints ("SHA256:...") of the
// host's current keys (ed25519 first, then ecdsa).
func (h *Host) HostKeyFingerprints() []string {
	var out []string
	for _, k := range h.HostKeys() {
		out = append(out, k.Fingerprint)
	}
	return out
}

// PID1 is the host's init process as seen from the root PID namespace (0
// when stopped).
func (h *Host) PID1() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid1
}

// Running reports whether the host's init is alive.
func (h *Host) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.exited == nil {
		return false
	}
	select {
	case <-h.exited:
		return false
	default:
		return h.pid1 > 0
	}
}

// Dir is the host's state directory (upper layers under upper/, /home under
// home/, the init and sshd log in init.log).
func (h *Host) Dir() string { return h.dir }

// UpperPath maps an absolute path inside the host to its copy-on-write layer
// (e.g. /etc/haproxy/haproxy.cfg → <dir>/upper/etc/haproxy/haproxy.cfg). It
// exists only if the host changed that file.
func (h *Host) UpperPath(p string) string {
	return filepath.Join(h.dir, "upper", filepath.Clean("/"+p))
}

// Log returns the host's init log (sshd logs there with -e).
func (h *Host) Log() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "init.log"))
	return string(b)
}

// Command prepares a command that runs as root inside all of the host's
// namespaces (nsenter -a), like a console login. No SSH is involved.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	pid := h.PID1()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(pid), "-a", "--", name}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8", "USER=root", "LOGNAME=root"}
	cmd.Dir = "/"
	return cmd
}

// Exec runs a command in the host as root and returns its combined output. A
// non-zero exit is an error (an *exec.ExitError wrapped with the output).
func (h *Host) Exec(ctx context.Context, name string, args ...string) (string, error) {
	if !h.Running() {
		return "", fmt.Errorf("testhosts: host %s is not running", h.Name)
	}
	out, err := h.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("testhosts: %s: %s: %w: %s", h.Name, strings.Join(append([]string{name}, args...), " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Restart kills everything in the host and boots it again with the same
// filesystem layers and host keys (a reboot).
func (h *Host) Restart(ctx context.Context) error {
	if err := h.Stop(ctx); err != nil {
		return err
	}
	return h.Start(ctx)
}

// Stop kills the host's init and so every process in it (a power-off). The
// address and filesystem layers stay.
func (h *Host) Stop(ctx context.Context) error {
	h.mu.Lock()
	cmd, pid1, exited := h.cmd, h.pid1, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if pid1 > 0 {
		_ = unix.Kill(pid1, unix.SIGKILL)
	}
	_ = cmd.Process.Kill() // unshare --kill-child takes PID 1 with it
	select {
	case <-exited:
	case <-ctx.Done():
		return fmt.Errorf("testhosts: stop %s: %w", h.Name, ctx.Err())
	}
	h.mu.Lock()
	h.cmd, h.pid1 = nil, 0
	h.mu.Unlock()
	// The kernel kills the rest of the PID namespace after its init, not
	// at once: the host is off when none of its processes is left (else a
	// quick Start finds port 22 still bound).
	for deadline := time.Now().Add(5 * time.Second); ; {
		pids, err := pidsInNetns(NetnsPath(h.NetNS))
		if err != nil || len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testhosts: stop %s: %w", h.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// A powered-off VM's NIC is silent: with eth0 up the namespace would
	// still answer ARP for its addresses (keepalived's VIP included) and
	// refuse connections to them, stealing the VIP from its new holder.
	if err := h.setLink(ctx, "down"); err != nil {
		return fmt.Errorf("testhosts: stop %s: %w", h.Name, err)
	}
	return nil
}

// setLink sets the host's eth0 up or down (a running or powered-off VM).
func (h *Host) setLink(ctx context.Context, state string) error {
	if !h.netUp {
		return nil
	}
	return run(ctx, "", "ip", "-n", h.NetNS, "link", "set", "eth0", state)
}

// Start boots a stopped host and waits for its sshd.
func (h *Host) Start(ctx context.Context) error {
	if err := h.setLink(ctx, "up"); err != nil {
		return fmt.Errorf("testhosts: start %s: %w", h.Name, err)
	}
	if err := h.start(); err != nil {
		return err
	}
	return h.waitReady(ctx)
}

// Reimage gives the host a fresh filesystem and new host keys, keeping its
// name, address, MAC and users (what a rebuilt or replaced VM looks like).
func (h *Host) Reimage(ctx context.Context) error {
	if err := h.Stop(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.spec.HostKeys = nil
	h.mu.Unlock()
	if err := h.wipeLayers(); err != nil {
		return err
	}
	if err := h.seed(); err != nil {
		return err
	}
	if err := h.saveIdentity(); err != nil {
		return err
	}
	return h.Start(ctx)
}

// Remove tears the host down: processes, network namespace and state.
func (h *Host) Remove(ctx context.Context) error {
	h.mu.Lock()
	if h.removed {
		h.mu.Unlock()
		return nil
	}
	h.removed = true
	h.mu.Unlock()
	err := h.destroy(ctx)
	h.net.unregister(h)
	return err
}

func (h *Host) create(ctx context.Context) error {
	if h.net.opts.Persist {
		// A saved host of that name is an earlier server's leftover disk.
		if err := os.RemoveAll(h.dir); err != nil {
			return err
		}
	}
	if err := h.seed(); err != nil {
		return err
	}
	if err := h.saveIdentity(); err != nil {
		return err
	}
	if err := h.setupNet(ctx); err != nil {
		return err
	}
	return h.Start(ctx)
}

func (h *Host) destroy(ctx context.Context) error {
	errs := []error{h.Stop(ctx)}
	errs = append(errs, killNetns(ctx, h.NetNS))
	if h.netUp {
		// Forget the host's MAC in the ctl namespace, so that a later host
		// with this address is reached at once and a connect to the removed
		// one fails fast instead of sending SYNs to a vanished MAC.
		_ = run(ctx, "", "ip", "-n", h.net.ctl, "neigh", "flush", "to", h.IP.String())
	}
	if !h.net.opts.Keep {
		errs = append(errs, os.RemoveAll(h.dir))
	}
	return errors.Join(errs...)
}

func (h *Host) setupNet(ctx context.Context) error {
	n := h.net
	if err := run(ctx, "", "ip", "netns", "add", h.NetNS); err != nil {
		return err
	}
	h.netUp = true
	veth := fmt.Sprintf("vh%d", h.idx)
	peer := "peer name eth0"
	if h.spec.MAC != "" {
		if _, err := net.ParseMAC(h.spec.MAC); err != nil {
			return fmt.Errorf("testhosts: host %s: bad MAC %q", h.Name, h.spec.MAC)
		}
		peer += " address " + h.spec.MAC
	}
	ctlBatch := fmt.Sprintf("link add %s type veth %s netns %s\nlink set %s master br0 up\n", veth, peer, h.NetNS, veth)
	if err := run(ctx, ctlBatch, "ip", "-n", n.ctl, "-b", "-"); err != nil {
		return err
	}
	hostBatch := fmt.Sprintf("link set lo up\naddr add %s/%d dev eth0\nlink set eth0 up\nroute add default via %s\n",
		h.IP, n.subnet.Bits(), n.gateway)
	return run(ctx, hostBatch, "ip", "-n", h.NetNS, "-b", "-")
}

func (h *Host) wipeLayers() error {
	for _, d := range []string{"upper", "work", "home", "root", "tmp"} {
		if err := os.RemoveAll(filepath.Join(h.dir, d)); err != nil {
			return err
		}
	}
	return nil
}

// seed prepares the state directory: empty layers and private trees, and the
// files a first boot would write (identity, host keys, sshd and sudo
// configuration), placed straight into the /etc layer.
func (h *Host) seed() error {
	for _, d := range []string{"home", "root", "tmp"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, d := range []string{"etc", "usr", "var", "opt"} {
		for _, base := range []string{"upper", "work"} {
			if err := os.MkdirAll(filepath.Join(h.dir, base, d), 0o755); err != nil {
				return err
			}
		}
	}
	_ = os.Chmod(filepath.Join(h.dir, "root"), 0o700)
	_ = os.Chmod(filepath.Join(h.dir, "tmp"), 0o1777)

	h.mu.Lock()
	keys := h.spec.HostKeys
	h.mu.Unlock()
	if keys == nil {
		var err error
		if keys, err = GenerateHostKeys("root@" + h.Hostname); err != nil {
			return err
		}
	}
	up := filepath.Join(h.dir, "upper")
	mid := make([]byte, 16)
	_, _ = rand.Read(mid)
	files := map[string]string{
		"/etc/hostname":    h.Hostname + "\n",
		"/etc/hosts":       h.net.etcHosts(h),
		"/etc/resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
		"/etc/machine-id":  hex.EncodeToString(mid) + "\n",
		"/etc/ssh/sshd_config.d/00-testhosts.conf": h.sshdConfig(keys),
	}
	for p, content := range files {
		if err := writeLayered(up, p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	ours := map[string]bool{}
	for _, k := range keys {
		ours[k.File], ours[k.File+".pub"] = true, true
		if err := writeLayered(up, "/etc/ssh/"+k.File, k.PrivatePEM, 0o600); err != nil {
			return err
		}
		if err := writeLayered(up, "/etc/ssh/"+k.File+".pub", []byte(k.AuthorizedKey+"\n"), 0o644); err != nil {
			return err
		}
	}
	// Hide the machine's own host keys (whiteouts), so each host has only its own.
	lower, _ := filepath.Glob("/etc/ssh/ssh_host_*")
	for _, l := range lower {
		if b := filepath.Base(l); !ours[b] {
			if err := unix.Mknod(filepath.Join(up, "etc/ssh", b), unix.S_IFCHR|0o000, 0); err != nil {
				return fmt.Errorf("whiteout %s: %w", b, err)
			}
		}
	}
	if sudo := h.sudoers(); sudo != "" {
		if err := writeLayered(up, "/etc/sudoers.d/90-testhosts", []byte(sudo), 0o440); err != nil {
			return err
		}
	}
	if !h.net.opts.NoSystemctlShim {
		if err := writeLayered(up, "/usr/bin/systemctl", systemctlShim, 0o755); err != nil {
			return err
		}
	}
	if err := h.seedUsers(); err != nil {
		return err
	}
	h.mu.Lock()
	h.keys = keys
	h.spec.HostKeys = keys
	h.mu.Unlock()
	return nil
}

func (h *Host) sshdConfig(keys []HostKey) string {
	var b strings.Builder
	b.WriteString("# written by testhosts; included before the stock settings, so these win\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "HostKey /etc/ssh/%s\n", k.File)
	}
	pw := "yes"
	if h.spec.NoPasswordAuth {
		pw = "no"
	}
	fmt.Fprintf(&b, "PasswordAuthentication %s\n", pw)
	root := "prohibit-password"
	for _, u := range h.spec.Users {
		if u.Name == "root" && (u.Password != "" || u.PasswordHash != "") {
			root = "yes"
		}
	}
	fmt.Fprintf(&b, "PermitRootLogin %s\nUseDNS no\nMaxStartups 100:30:200\n", root)
	return b.String()
}

func (h *Host) sudoers() string {
	var b strings.Builder
	for _, u := range h.spec.Users {
		if u.Sudo != "" && u.Name != "root" {
			fmt.Fprintf(&b, "%s %s\n", u.Name, strings.ReplaceAll(u.Sudo, "\n", " "))
		}
	}
	return b.String()
}

// writeLayered writes a file into an overlay upper directory, creating the
// missing parent directories with the mode and owner of the lower ones (the
// merged view takes a directory's attributes from the upper layer).
func writeLayered(upper, p string, data []byte, mode fs.FileMode) error {
	rel := strings.TrimPrefix(filepath.Clean(p), "/")
	parts := strings.Split(filepath.Dir(rel), "/")
	// parts[0] is the layer's own root (etc, usr...), created by seed.
	cur := filepath.Join(upper, parts[0])
	lowerCur := "/" + parts[0]
	for _, part := range parts[1:] {
		cur = filepath.Join(cur, part)
		lowerCur = filepath.Join(lowerCur, part)
		if _, err := os.Lstat(cur); err == nil {
			continue
		}
		dm, uid, gid := fs.FileMode(0o755), 0, 0
		if st, err := os.Stat(lowerCur); err == nil && st.IsDir() {
			dm = st.Mode().Perm() | (st.Mode() & (fs.ModeSetgid | fs.ModeSticky))
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				uid, gid = int(sys.Uid), int(sys.Gid)
			}
		}
		if err := os.Mkdir(cur, dm); err != nil {
			return err
		}
		_ = os.Chmod(cur, dm)
		_ = os.Chown(cur, uid, gid)
	}
	dst := filepath.Join(upper, rel)
	_ = os.Remove(dst)
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func (h *Host) start() error {
	h.mu.Lock()
	if h.removed {
		h.mu.Unlock()
		return fmt.Errorf("testhosts: host %s removed", h.Name)
	}
	if h.cmd != nil {
		h.mu.Unlock()
		return fmt.Errorf("testhosts: host %s is already running", h.Name)
	}
	h.mu.Unlock()
	logf, err := os.OpenFile(filepath.Join(h.dir, "init.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- testhosts: boot %s at %s\n", h.Name, time.Now().Format(time.RFC3339Nano))
	script := filepath.Join(h.net.stateDir, "hostinit.sh")
	cmd := exec.Command("ip", "netns", "exec", h.NetNS,
		"unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
		"/bin/bash", script, h.Hostname, h.dir)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root"}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startPinned(cmd); err != nil {
		return fmt.Errorf("testhosts: start %s: %w", h.Name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// PID 1 of the host is the only child of unshare.
	deadline := time.Now().Add(5 * time.Second)
	pid1 := 0
	for pid1 == 0 {
		if c := childrenOf(cmd.Process.Pid); len(c) > 0 {
			pid1 = c[0]
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("testhosts: host %s died at boot:\n%s", h.Name, readTail(filepath.Join(h.dir, "init.log"), 20))
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("testhosts: host %s: no init process after 5s", h.Name)
		}
	}
	h.mu.Lock()
	h.cmd, h.pid1, h.exited, h.started = cmd, pid1, exited, time.Now()
	h.mu.Unlock()
	return nil
}

// waitReady polls the host's sshd from the ctl namespace until it sends its
// banner.
func (h *Host) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h.mu.Lock()
	exited := h.exited
	h.mu.Unlock()
	addr := net.JoinHostPort(h.IP.String(), "22")
	var last error
	for {
		select {
		case <-exited:
			return fmt.Errorf("testhosts: host %s stopped while booting:\n%s", h.Name, readTail(filepath.Join(h.dir, "init.log"), 20))
		default:
		}
		last = probeSSH(ctx, h.net, addr)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testhosts: host %s: sshd not ready: %v (last probe: %v)\n%s", h.Name, ctx.Err(), last, readTail(filepath.Join(h.dir, "init.log"), 20))
		case <-time.After(15 * time.Millisecond):
		}
	}
}

func probeSSH(ctx context.Context, n *Network, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := n.Dial(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-") {
		return fmt.Errorf("unexpected banner %q", line)
	}
	return nil
}
