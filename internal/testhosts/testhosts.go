// Package testhosts creates realistic "VMs" on one Linux machine for
// integration tests: each host is a network namespace on a private bridge,
// with its own mount, UTS, IPC and PID namespaces, copy-on-write /etc /usr
// /var /opt, private /home /root /tmp /run, its own hostname and host keys, and
// a real Debian sshd as the way in.
//
// Network layout (see ../../../shared/reference/test-hosts.md §0; the rules
// are mandatory):
//
//	root netns: untouched (no address, route, bridge or listener is added)
//	<prefix>-ctl: bridge br0 with the gateway address (.1), no uplink,
//	              ip_forward=0, no default route
//	<prefix>-<host>: eth0 with the host's address, default via the gateway
//
// Every address a test creates lives only in namespaces this package made. The
// test process reaches the hosts with [Network.Dial], which creates just the
// socket inside <prefix>-ctl. It needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN),
// iproute2, util-linux (unshare, nsenter) and openssh-server.
package testhosts

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed hostinit.sh
var hostinitScript []byte

//go:embed systemctl-shim.sh
var systemctlShim []byte

// ErrNotRoot is returned by [NewNetwork] when the process is not root.
var ErrNotRoot = errors.New("testhosts: needs root (network, mount and PID namespaces)")

// Options configure a [Network].
type Options struct {
	// Prefix names everything this network creates: namespaces
	// "<prefix>-ctl" and "<prefix>-<host>". Lower-case letters and digits,
	// starting with a letter, at most 10 characters; no "-" so that one
	// prefix can never be the start of another prefix's names. Default "th".
	// Two live networks must not share a prefix: NewNetwork first removes
	// whatever a crashed run with the same prefix left behind.
	Prefix string
	// Subnet is the private network, e.g. "10.77.0.0/24" (the default). The
	// gateway (first address, e.g. 10.77.0.1) lives on the bridge in
	// <prefix>-ctl. Networks with different prefixes may use the same subnet:
	// they never see each other.
	Subnet string
	// StateDir holds the hosts' filesystem layers and logs. Default
	// $TMPDIR/testhosts-<prefix>. Removed by Close unless Keep.
	StateDir string
	// Keep leaves StateDir in place on Close (for debugging).
	Keep bool
	// Persist makes the hosts outlive the network, like VMs outlive their
	// hypervisor's restart: NewNetwork keeps what StateDir holds, Close
	// powers the hosts off but keeps their disks and identities, and Restore
	// boots a saved host again (see persist.go). Remove still deletes a
	// host's disk.
	Persist bool
	// NoSystemctlShim leaves the real /usr/bin/systemctl in the hosts. By
	// default each host's /usr layer gets a small systemctl stand-in that
	// drives /etc/init.d scripts and simple unit files, since there is no
	// systemd inside the hosts.
	NoSystemctlShim bool
	// Logf, when set, receives progress messages.
	Logf func(format string, args ...any)
}

// Network is a private network with its hosts. Its methods are safe for
// concurrent use.
type Network struct {
	prefix   string
	subnet   netip.Prefix
	gateway  netip.Addr
	ctl      string
	stateDir string
	opts     Options

	mu      sync.Mutex
	hosts   map[string]*Host // by Name
	byIP    map[netip.Addr]*Host
	nextIdx int
	closed  bool

	lock *os.File // flock on the prefix, held while the network exists
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,9}$`)

// NewNetwork creates <prefix>-ctl with its bridge. It first removes leftovers
// of a crashed run with the same prefix (see [Cleanup]).
func NewNetwork(ctx context.Context, opts Options) (*Network, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if opts.Prefix == "" {
		opts.Prefix = "th"
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("testhosts: invalid prefix %q (want %s)", opts.Prefix, prefixRE)
	}
	if opts.Subnet == "" {
		opts.Subnet = "10.77.0.0/24"
	}
	pfx, err := netip.ParsePrefix(opts.Subnet)
	if err != nil || !pfx.Addr().Is4() || pfx.Bits() > 29 || pfx.Bits() < 8 {
		return nil, fmt.Errorf("testhosts: invalid subnet %q (want an IPv4 CIDR between /8 and /29)", opts.Subnet)
	}
	pfx = pfx.Masked()
	if err := CheckTools(); err != nil {
		return nil, err
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(os.TempDir(), "testhosts-"+opts.Prefix)
	}
	// Another live process using this prefix holds its lock: wait for it
	// instead of tearing its hosts down. A crashed owner's lock is gone with
	// it, so what is left then is leftovers, safe to clean.
	lock, err := lockPrefix(ctx, opts.Prefix)
	if err != nil {
		return nil, err
	}
	if err := Cleanup(ctx, opts.Prefix); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("testhosts: cleanup of earlier runs: %w", err)
	}
	if err := resetStateDir(opts.StateDir, opts.Persist); err != nil {
		_ = lock.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.StateDir, "hostinit.sh"), hostinitScript, 0o755); err != nil {
		return nil, err
	}
	n := &Network{
		prefix:   opts.Prefix,
		subnet:   pfx,
		gateway:  pfx.Addr().Next(),
		ctl:      opts.Prefix + "-ctl",
		stateDir: opts.StateDir,
		opts:     opts,
		hosts:    map[string]*Host{},
		byIP:     map[netip.Addr]*Host{},
		lock:     lock,
	}
	if err := n.createCtl(ctx); err != nil {
		_ = killNetns(context.Background(), n.ctl)
		_ = lock.Close()
		return nil, err
	}
	n.logf("network %s: %s gateway %s in netns %s", n.prefix, n.subnet, n.gateway, n.ctl)
	return n, nil
}

func (n *Network) createCtl(ctx context.Context) error {
	if err := run(ctx, "", "ip", "netns", "add", n.ctl); err != nil {
		return err
	}
	batch := fmt.Sprintf("link set lo up\nlink add br0 type bridge\naddr add %s/%d dev br0\nlink set br0 up\n",
		n.gateway, n.subnet.Bits())
	if err := run(ctx, batch, "ip", "-n", n.ctl, "-b", "-"); err != nil {
		return err
	}
	// Rule 3: no forwarding out of the private network, whatever the root
	// namespace's defaults are.
	return run(ctx, "", "ip", "netns", "exec", n.ctl, "sysctl", "-qw",
		"net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0")
}

// stateMarker marks a directory as a testhosts state directory, which
// NewNetwork may wipe (it never wipes a directory without it).
const stateMarker = ".testhosts-state"

func resetStateDir(dir string, keep bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(ents) > 0:
		if _, err := os.Stat(filepath.Join(dir, stateMarker)); err != nil {
			return fmt.Errorf("testhosts: state directory %s exists and is not a testhosts state directory; remove it or choose another", dir)
		}
		if keep {
			return nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, stateMarker), nil, 0o644)
}

// CheckTools reports which of the programs the hosts need are missing.
func CheckTools() error {
	var missing []string
	for _, p := range []string{"ip", "unshare", "nsenter", "useradd", "chpasswd", "mount", "hostname"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		missing = append(missing, "/usr/sbin/sshd (apt-get install openssh-server)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("testhosts: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Cleanup removes what a crashed run with this prefix left behind: it kills
// the processes of every network namespace named "<prefix>-*" and deletes the
// namespaces. It touches nothing else.
func Cleanup(ctx context.Context, prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("testhosts: invalid prefix %q", prefix)
	}
	names, err := listNetns()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if strings.HasPrefix(name, prefix+"-") {
			errs = append(errs, killNetns(ctx, name))
		}
	}
	return errors.Join(errs...)
}

func (n *Network) logf(format string, args ...any) {
	if n.opts.Logf != nil {
		n.opts.Logf(format, args...)
	}
}

// Prefix is the name prefix of this network's namespaces.
func (n *Network) Prefix() string { return n.prefix }

// Subnet is the network's address range.
func (n *Network) Subnet() netip.Prefix { return n.subnet }

// Gateway is the address on the bridge in the ctl namespace (the hosts'
// default gateway).
func (n *Network) Gateway() netip.Addr { return n.gateway }

// CtlNamespace is the name of the namespace holding the bridge
// ("<prefix>-ctl"); `ip netns exec <name> CMD` runs CMD on the private
// network.
func (n *Network) CtlNamespace() string { return n.ctl }

// StateDir is where the hosts' layers and logs are kept.
func (n *Network) StateDir() string { return n.stateDir }

// Dial connects to addr from inside the ctl namespace, like a machine on the
// private network. Host names of this network's hosts are resolved from the
// host table; anything else must be an IP address. The returned connection
// is an ordinary net.Conn usable from any goroutine; only its socket lives in
// the namespace. Use it as the dialer of an SSH or HTTP client.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err != nil {
		n.mu.Lock()
		h := n.hosts[host]
		if h == nil {
			for _, x := range n.hosts {
				if x.Hostname == host {
					h = x
					break
				}
			}
		}
		n.mu.Unlock()
		if h == nil {
			return nil, fmt.Errorf("testhosts: dial %s: unknown host %q", addr, host)
		}
		addr = net.JoinHostPort(h.IP.String(), port)
	}
	return DialInNetns(ctx, NetnsPath(n.ctl), network, addr)
}

// Listen opens a listener inside the ctl namespace, e.g. on the gateway
// address so that hosts (and processes run with `ip netns exec <ctl>`) can
// reach a service of the test process.
func (n *Network) Listen(ctx context.Context, network, addr string) (net.Listener, error) {
	return ListenInNetns(ctx, NetnsPath(n.ctl), network, addr)
}

// Host returns the host with that name, or nil.
func (n *Network) Host(name string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[name]
}

// HostByIP returns the host with that address, or nil.
func (n *Network) HostByIP(ip netip.Addr) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byIP[ip]
}

// Hosts lists the hosts by address.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	hs := make([]*Host, 0, len(n.hosts))
	for _, h := range n.hosts {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b *Host) int { return a.IP.Compare(b.IP) })
	return hs
}

// firstAutoIP is the first address handed out when a HostSpec has none
// (.11 in a /24, as in test-hosts.md); .2-.10 stay free for explicit use.
func (n *Network) firstAutoIP() netip.Addr {
	a := n.gateway
	for range 10 {
		a = a.Next()
	}
	if !n.subnet.Contains(a) {
		return n.gateway.Next()
	}
	return a
}

func (n *Network) isBroadcast(a netip.Addr) bool {
	return !n.subnet.Contains(a.Next())
}

// reserve validates spec and books its name, address and index.
func (n *Network) reserve(spec *HostSpec) (*Host, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("testhosts: network closed")
	}
	if !hostNameRE.MatchString(spec.Name) {
		return nil, fmt.Errorf("testhosts: invalid host name %q (want %s)", spec.Name, hostNameRE)
	}
	if _, dup := n.hosts[spec.Name]; dup {
		return nil, fmt.Errorf("testhosts: host %q exists", spec.Name)
	}
	if spec.Hostname == "" {
		spec.Hostname = spec.Name
	}
	if !hostNameRE.MatchString(spec.Hostname) {
		return nil, fmt.Errorf("testhosts: invalid hostname %q", spec.Hostname)
	}
	ip := spec.IP
	if !ip.IsValid() {
		for a := n.firstAutoIP(); n.subnet.Contains(a) && !n.isBroadcast(a); a = a.Next() {
			if n.byIP[a] == nil {
				ip = a
				break
			}
		}
		if !ip.IsValid() {
			return nil, fmt.Errorf("testhosts: no free address in %s", n.subnet)
		}
	}
	if !n.subnet.Contains(ip) || ip == n.gateway || ip == n.subnet.Addr() || n.isBroadcast(ip) {
		return nil, fmt.Errorf("testhosts: address %s is not a host address of %s (gateway %s)", ip, n.subnet, n.gateway)
	}
	if other := n.byIP[ip]; other != nil {
		return nil, fmt.Errorf("testhosts: address %s is taken by host %q", ip, other.Name)
	}
	for _, u := range spec.Users {
		if !userNameRE.MatchString(u.Name) {
			return nil, fmt.Errorf("testhosts: invalid user name %q", u.Name)
		}
	}
	n.nextIdx++
	h := &Host{
		Name:     spec.Name,
		Hostname: spec.Hostname,
		IP:       ip,
		NetNS:    n.prefix + "-" + spec.Name,
		net:      n,
		idx:      n.nextIdx,
		spec:     *spec,
		dir:      filepath.Join(n.stateDir, "hosts", spec.Name),
	}
	h.spec.IP = ip
	n.hosts[h.Name] = h
	n.byIP[ip] = h
	return h, nil
}

func (n *Network) unregister(h *Host) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hosts[h.Name] == h {
		delete(n.hosts, h.Name)
	}
	if n.byIP[h.IP] == h {
		delete(n.byIP, h.IP)
	}
}

// etcHosts renders /etc/hosts for h: localhost, h itself, every other host
// of the network known at this moment (unless NoPeers), and h's extra
// entries.
func (n *Network) etcHosts(h *Host) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	fmt.Fprintf(&b, "%s\t%s\n", h.IP, h.Hostname)
	for _, o := range n.Hosts() {
		if o != h && !h.spec.NoPeers {
			fmt.Fprintf(&b, "%s\t%s\n", o.IP, o.Hostname)
		}
	}
	for _, l := range h.spec.ExtraHosts {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// AddHost creates a host and returns once its sshd accepts connections.
func (n *Network) AddHost(ctx context.Context, spec HostSpec) (*Host, error) {
	h, err := n.reserve(&spec)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := h.create(ctx); err != nil {
		_ = h.destroy(context.Background())
		n.unregister(h)
		return nil, err
	}
	n.logf("host %s (%s) up in %v", h.Name, h.IP, time.Since(t0).Round(time.Millisecond))
	return h, nil
}

// AddHosts creates several hosts in parallel. Each host's /etc/hosts lists
// all of them. On error the hosts that did come up are removed again.
func (n *Network) AddHosts(ctx context.Context, specs ...HostSpec) ([]*Host, error) {
	hs := make([]*Host, len(specs))
	var errs []error
	for i := range specs {
		h, err := n.reserve(&specs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hs[i] = h
	}
	if len(errs) == 0 {
		errc := make(chan error, len(hs))
		for _, h := range hs {
			go func() { errc <- h.create(ctx) }()
		}
		for range hs {
			if err := <-errc; err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, h := range hs {
			if h != nil {
				_ = h.destroy(context.Background())
				n.unregister(h)
			}
		}
		return nil, err
	}
	return hs, nil
}

// RemoveHost tears a host down (processes, namespaces, state).
func (n *Network) RemoveHost(ctx context.Context, name string) error {
	h := n.Host(name)
	if h == nil {
		return fmt.Errorf("testhosts: no host %q", name)
	}
	return h.Remove(ctx)
}

// Close tears down every host and the ctl namespace, sweeps stray
// "<prefix>-*" namespaces and removes the state directory (unless Keep).
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	hs := n.Hosts()
	var wg sync.WaitGroup
	errs := make([]error, len(hs))
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n.opts.Persist {
				errs[i] = h.shutdown(ctx) // powered off, disk and identity kept
				n.unregister(h)
				return
			}
			errs[i] = h.Remove(ctx)
		}()
	}
	wg.Wait()
	errs = append(errs, killNetns(ctx, n.ctl), Cleanup(ctx, n.prefix))
	if !n.opts.Keep && !n.opts.Persist {
		errs = append(errs, os.RemoveAll(n.stateDir))
	}
	n.logf("network %s down in %v", n.prefix, time.Since(t0).Round(time.Millisecond))
	if n.lock != nil {
		errs = append(errs, n.lock.Close()) // releases the flock
	}
	return errors.Join(errs...)
}

// lockPrefix takes an exclusive flock for a prefix, waiting (bounded by ctx,
// at most 5 minutes) while another process holds it.
func lockPrefix(ctx context.Context, prefix string) (*os.File, error) {
	dir := filepath.Join(os.TempDir(), "testhosts-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, prefix+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("testhosts: lock for prefix %s: %w", prefix, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("testhosts: prefix %s is in use by another live process (lock %s); use another prefix", prefix, f.Name())
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readTail returns the last lines of a log file, for error messages.
func readTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var all []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// RefreshLower makes what was installed on the machine after the hosts
// booted visible inside them. Their /etc, /usr, /var and /opt are overlays
// whose lower layers are the machine's own directories, and overlayfs keeps
// the negative lookups of a host that looked for a program before it was
// installed ("sudo: command not found" stays so after `apt-get install
// sudo`). Dropping the kernel's reclaimable dentries and inodes
// (vm.drop_caches=2) forgets them; it is machine-wide but only costs a brief
// re-lookup, and files in use are unaffected. Needs root.
func RefreshLower() error {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("2\n"), 0)
}
