// Package simcloud is the cloud `make run` brings along: the OpenStack
// simulator on a loopback port, with real SSH hosts when the process may
// create network namespaces (root), else with servers that are records only.
// The VNFM reaches the hosts through Dial, which opens sockets inside the
// simulator's private namespace; the machine's own addresses and routes are
// never touched.
//
// With real hosts the cloud also runs an Ansible server (a server named
// ansible-server with Debian's ansible and the stand-in kubespray tree, see
// internal/ansiblehost) for the kubespray sample, checks at start that its
// hosts have every program the samples' clusters use (internal/deps), and
// watches the machine's package database so that a package installed while
// it runs becomes visible in running hosts.
package simcloud

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ansiblehost"
	"github.com/mini-vnfm/mini-vnfm/internal/deps"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

// AnsibleServerName is the Nova name (and hostname) of the cloud's Ansible
// server.
const AnsibleServerName = "ansible-server"

// Metadata keys of the Ansible server, for clients that build a kubespray
// request (cmd/vnfm-demo).
const (
	MetaRole          = "role"
	MetaAnsibleUser   = "ansible_username"
	MetaAnsiblePass   = "ansible_password"
	MetaKubesprayRoot = "kubespray_root_path"
	MetaInventories   = "transferring_inventory_path"
)

// dpkgStatus changes whenever a Debian package is installed or removed.
const dpkgStatus = "/var/lib/dpkg/status"

// Options configure the embedded cloud.
type Options struct {
	// Listen is the simulator's loopback address (default 127.0.0.1:5000; a
	// taken port falls back to a free one).
	Listen string
	// Hosts: "auto" (default: when root), "on" (fail without root) or "off".
	Hosts string
	// Prefix names the hosts' network namespaces (default "vnfmsim").
	Prefix string
	// StateDir keeps the cloud across restarts, as a real cloud keeps its
	// database and disks: the simulator's state (cloud.json) and every
	// host's disk and identity (hosts/). Servers, networks and stacks are
	// there again after a restart, graceful or not, and the servers' hosts
	// boot again. Empty: a throwaway cloud in a temporary directory.
	StateDir string
	// User, Password and Project of the Keystone account (defaults admin / secret / admin).
	User, Password, Project string
	Logger                  *slog.Logger
	// HostSetup runs on every host right after it boots (e.g. installing the Kubernetes stand-in).
	HostSetup func(ctx context.Context, h *testhosts.Host) error
	// NoAnsibleServer leaves the Ansible server out.
	NoAnsibleServer bool
	// PackagePoll is how often the machine's package database is looked at
	// (default 2s).
	PackagePoll time.Duration
	// Packages are what the hosts must have (default: what the hosts and
	// every sample's clusters use, from internal/deps).
	Packages []deps.Package
	// PackageDB is the file that changes when packages are installed
	// (default /var/lib/dpkg/status).
	PackageDB string
	// Heat: "sim" (default) serves the simulator's own Keystone and Heat;
	// "real" starts Debian's Keystone and Heat (internal/osworld) with their
	// databases on AdminDBURL, the simulator serving only Nova, Neutron
	// and Glance behind them.
	Heat       string
	AdminDBURL string
}

// Cloud is a running embedded simulator.
type Cloud struct {
	Sim *ossim.Sim
	// URL is the simulator's base URL; the Keystone auth URL is URL + "/v3".
	URL string
	// HostURL is the simulator as the hosts reach it (the private network's
	// gateway, same port): what software inside a cluster, such as Kuryr's
	// controller, logs in to; the catalog's internal endpoints. Empty
	// without real hosts.
	HostURL string
	Network *testhosts.Network // nil when the servers are records only
	// NoHostsReason says why servers are records only ("" when hosts are on).
	NoHostsReason           string
	User, Password, Project string
	srv                     *http.Server
	log                     *slog.Logger

	packages []deps.Package

	mu      sync.Mutex
	missing []deps.Package
	ansible *samples.AnsibleServer
	ansErr  error

	stop context.CancelFunc
	wg   sync.WaitGroup
	// AuthURL is the Keystone v3 URL to register as the VIM: the
	// simulator's (URL + "/v3"), or real Keystone's with Heat "real".
	AuthURL string
	// World is the real Keystone and Heat (nil unless Heat is "real").
	World *osworld.World
}

// Start starts the simulator.
func Start(ctx context.Context, o Options) (*Cloud, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:5000"
	}
	if o.Prefix == "" {
		o.Prefix = "vnfmsim"
	}
	if o.User == "" {
		o.User, o.Password, o.Project = "admin", "secret", "admin"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PackagePoll <= 0 {
		o.PackagePoll = 2 * time.Second
	}
	if o.Packages == nil {
		o.Packages = hostPackages()
	}
	if o.PackageDB == "" {
		o.PackageDB = dpkgStatus
	}
	switch o.Heat {
	case "", "sim", "real":
	default:
		return nil, fmt.Errorf("simcloud: Heat %q: say sim or real", o.Heat)
	}
	log := o.Logger.With("component", "simcloud")
	c := &Cloud{User: o.User, Password: o.Password, Project: o.Project, log: log, packages: o.Packages}
	opts := ossim.Options{Accounts: []ossim.Account{{UserName: o.User, Password: o.Password, ProjectName: o.Project}},
		Latency: 100 * time.Millisecond, Logf: func(f string, a ...any) { log.Debug(fmt.Sprintf(f, a...)) }}
	switch o.Hosts {
	case "off":
		c.NoHostsReason = "disabled (VNFM_SIMULATOR_HOSTS=off)"
	case "", "auto", "on":
		switch {
		case os.Geteuid() != 0:
			c.NoHostsReason = "real hosts need root (network namespaces)"
		default:
			if err := testhosts.CheckTools(); err != nil {
				c.NoHostsReason = err.Error()
				break
			}
			to := testhosts.Options{Prefix: o.Prefix, Logf: func(f string, a ...any) { log.Debug(fmt.Sprintf(f, a...)) }}
			if o.StateDir != "" {
				to.StateDir, to.Persist = filepath.Join(o.StateDir, "hosts"), true
			}
			hn, err := testhosts.NewNetwork(ctx, to)
			if err != nil {
				c.NoHostsReason = err.Error()
				break
			}
			c.Network = hn
			opts.Hosts = hn
		}
		if o.Hosts == "on" && c.Network == nil {
			return nil, fmt.Errorf("simcloud: real hosts requested but unavailable: %s", c.NoHostsReason)
		}
	default:
		return nil, fmt.Errorf("simcloud: hosts mode %q: say auto, on or off", o.Hosts)
	}
	if c.Network == nil {
		opts.Networks = []ossim.NetworkSpec{{Name: "net0", CIDR: "10.77.0.0/24", Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true}}
	}
	if o.StateDir != "" && o.Heat != "real" {
		// Real Keystone and Heat start afresh each time (their databases
		// go with the world), so the cloud behind them does too.
		opts.StateFile = filepath.Join(o.StateDir, "cloud.json")
	}
	if c.Network != nil {
		opts.HostSetup = func(ctx context.Context, h *testhosts.Host) error {
			if o.HostSetup != nil {
				if err := o.HostSetup(ctx, h); err != nil {
					return err
				}
			}
			if h.Hostname == AnsibleServerName {
				return ansiblehost.Setup(ctx, h, ansiblehost.User)
			}
			return nil
		}
	}
	if o.Heat == "real" {
		log.Info("starting real Keystone and Heat (VNFM_SIMULATOR_HEAT=real)")
		w, err := osworld.Start(ctx, osworld.Options{AdminDBURL: o.AdminDBURL,
			Logf: func(f string, a ...any) { log.Info(fmt.Sprintf(f, a...)) }})
		if err != nil {
			c.closeNetwork()
			return nil, err
		}
		c.World = w
		opts = w.SimOptions(w.Admin, opts)
		c.User, c.Password, c.Project = w.Admin.User, w.Admin.Password, w.Admin.Project
	}
	sim, err := ossim.New(opts)
	if err != nil {
		c.closeNetwork()
		return nil, err
	}
	c.Sim = sim
	ln, err := listen(o.Listen, o.StateDir)
	if err != nil {
		_ = sim.Close()
		c.closeNetwork()
		return nil, fmt.Errorf("simcloud: %w", err)
	}
	c.URL = "http://" + ln.Addr().String()
	c.AuthURL = c.URL + "/v3"
	if c.World != nil {
		c.World.Serve(c.World.Admin.ProjectID, sim)
		c.AuthURL = c.World.AuthURL
	}
	c.srv = &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("simulator stopped", "err", err)
		}
	}()
	if c.Network != nil {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		hostAddr := net.JoinHostPort(c.Network.Gateway().String(), port)
		hln, err := c.Network.Listen(ctx, "tcp", hostAddr)
		if err != nil {
			_ = c.srv.Close()
			_ = sim.Close()
			c.closeNetwork()
			return nil, fmt.Errorf("simcloud: listening on the hosts' network: %w", err)
		}
		c.HostURL = "http://" + hostAddr
		sim.SetInternalURL(c.HostURL) // the catalog's internal endpoints
		go func() {
			if err := c.srv.Serve(hln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("simulator stopped (hosts' side)", "err", err)
			}
		}()
	}
	log.Info("OpenStack simulator started", "url", c.URL, "hostURL", c.HostURL, "realHosts", c.Network != nil)
	var bg context.Context
	bg, c.stop = context.WithCancel(context.WithoutCancel(ctx))
	if c.Network != nil {
		if !o.NoAnsibleServer {
			c.ensureAnsibleServer(ctx)
		}
		c.checkHosts(ctx)
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.watchPackages(bg, o.PackageDB, o.PackagePoll, !o.NoAnsibleServer) }()
	}
	return c, nil
}

// endpointFile keeps the address the cloud listened on.
const endpointFile = "endpoint"

// listen opens the simulator's listener. A cloud keeps its endpoint across
// restarts (the VNFM's VIM registration and every instance using it name
// it): the address of the last start comes first, unless another fixed
// address is asked for; then the one asked for; a taken port falls back to
// a free one.
func listen(addr, stateDir string) (net.Listener, error) {
	var tries []string
	if stateDir != "" {
		if b, err := os.ReadFile(filepath.Join(stateDir, endpointFile)); err == nil {
			last := strings.TrimSpace(string(b))
			if _, port, err := net.SplitHostPort(addr); err == nil && (port == "0" || last == addr) {
				tries = append(tries, last)
			}
		}
	}
	tries = append(tries, addr, "127.0.0.1:0")
	var ln net.Listener
	var err error
	for _, a := range tries {
		if ln, err = net.Listen("tcp", a); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if stateDir != "" {
		if err := os.MkdirAll(stateDir, 0o700); err != nil {
			_ = ln.Close()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(stateDir, endpointFile), []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	return ln, nil
}

func (c *Cloud) closeNetwork() {
	if c.World != nil {
		_ = c.World.Close()
	}
	if c.Network != nil {
		_ = c.Network.Close()
	}
}

// ensureAnsibleServer creates (or finds) the Ansible server. A failure is
// logged and kept for the welcome text: the cloud serves without it.
func (c *Cloud) ensureAnsibleServer(ctx context.Context) {
	gw := c.Network.Gateway()
	ip := gw
	for range 4 {
		ip = ip.Next() // .5 in a /24: a fixed, easy address (ports get the next free one)
	}
	pw := randomPassword()
	userData := fmt.Sprintf("#cloud-config\nssh_pwauth: true\nusers:\n  - default\n  - name: %s\n    plain_text_passwd: %q\n    lock_passwd: false\n    shell: /bin/bash\n",
		ansiblehost.User, pw)
	spec := ossim.ServerSpec{Name: AnsibleServerName, FixedIP: ip.String(), UserData: userData,
		Metadata: map[string]string{MetaRole: "ansible-server", MetaAnsibleUser: ansiblehost.User, MetaAnsiblePass: pw,
			MetaKubesprayRoot: ansiblehost.KubesprayRoot, MetaInventories: ansiblehost.Inventories}}
	si, err := c.Sim.EnsureServer(ctx, spec)
	if err != nil && strings.Contains(err.Error(), ip.String()) {
		spec.FixedIP = "" // the address is taken: any will do
		si, err = c.Sim.EnsureServer(ctx, spec)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.ansErr = err
		c.log.Error("the embedded cloud's Ansible server did not come up: the kubespray sample cannot run", "err", err)
		return
	}
	c.ansErr = nil
	c.ansible = AnsibleFromMetadata(si.Addresses, si.Metadata)
	c.log.Info("Ansible server ready", "address", c.ansible.Address, "user", c.ansible.User, "kubespray", c.ansible.KubesprayRoot)
}

// AnsibleFromMetadata reads the Ansible server's login from its Nova
// metadata and first address.
func AnsibleFromMetadata(addresses []string, md map[string]string) *samples.AnsibleServer {
	a := &samples.AnsibleServer{User: md[MetaAnsibleUser], Password: md[MetaAnsiblePass],
		KubesprayRoot: md[MetaKubesprayRoot], Inventories: md[MetaInventories]}
	if len(addresses) > 0 {
		a.Address = addresses[0]
	}
	return a
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Ansible returns the Ansible server's login, or nil with the reason.
func (c *Cloud) Ansible() (*samples.AnsibleServer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ansible == nil && c.ansErr == nil {
		return nil, errors.New("the embedded cloud has no Ansible server (no real hosts)")
	}
	return c.ansible, c.ansErr
}

// hostPackages are what the cloud's hosts need: the hosts' own tools and
// what any sample's clusters use (make run onboards them all).
func hostPackages() []deps.Package {
	return deps.For(append([]string{deps.NeedCloud}, samples.Names...)...)
}

// checkHosts looks, inside a running host, for the program of every package
// the hosts need, and says plainly what is missing.
func (c *Cloud) checkHosts(ctx context.Context) {
	h := c.Sim.Host(AnsibleServerName)
	if h == nil {
		for _, x := range c.Network.Hosts() {
			if x.Running() {
				h = x
				break
			}
		}
	}
	if h == nil {
		c.log.Warn("no running host to check the host packages in")
		return
	}
	pkgs := c.packages
	out, err := h.Exec(ctx, "sh", append([]string{"-c", deps.CheckScript, "sh"}, deps.CheckArgs(pkgs)...)...)
	if err != nil {
		c.log.Warn("checking the hosts' packages", "err", err)
		return
	}
	missing := deps.Missing(pkgs, out)
	c.mu.Lock()
	c.missing = missing
	c.mu.Unlock()
	if len(missing) > 0 {
		c.log.Error("the embedded cloud's hosts cannot run what the samples need:\n" + deps.Report(missing, os.Geteuid() == 0))
	}
}

// MissingPackages returns what the last check found missing.
func (c *Cloud) MissingPackages() []deps.Package {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]deps.Package(nil), c.missing...)
}

// watchPackages notices packages installed (or removed) on the machine
// while the cloud runs: running hosts forget their stale lookups
// (testhosts.RefreshLower), the check runs again, and an Ansible server that
// failed for want of ansible is tried again.
func (c *Cloud) watchPackages(ctx context.Context, db string, every time.Duration, ansible bool) {
	last := modTime(db)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		m := modTime(db)
		if m.Equal(last) {
			continue
		}
		last = m
		if err := testhosts.RefreshLower(); err != nil {
			c.log.Warn("making newly installed packages visible in the hosts", "err", err)
		}
		before := len(c.MissingPackages())
		c.checkHosts(ctx)
		if _, err := c.Ansible(); err != nil && ansible {
			c.ensureAnsibleServer(ctx)
		}
		if now := c.MissingPackages(); before > 0 && len(now) == 0 {
			c.log.Info("the embedded cloud's hosts now have every package the samples need; retry a failed operation (POST .../vnf_lcm_op_occs/<id>/retry)")
		}
	}
}

func modTime(p string) time.Time {
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Dial connects to an address of the simulated cloud: inside the hosts'
// private network when hosts are real, else directly.
func (c *Cloud) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.Network != nil {
		return c.Network.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// OutboundDial is the dialer under the VNFM's outbound-URL policy while the
// cloud is embedded: an address on the hosts' network is dialled inside the
// cloud (Dial), as the nodes' SSH is; every other address with next (nil: a
// net.Dialer). The VNFM's clients of what runs on the hosts — a built
// cluster's API server, for the Kubernetes infra driver and the VIM's
// verification — thus reach the hosts, not whatever this machine's default
// route leads to.
func (c *Cloud) OutboundDial(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if next == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		next = d.DialContext
	}
	if c.Network == nil {
		return next
	}
	subnet := c.Network.Subnet()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if a, err := netip.ParseAddr(host); err == nil && subnet.Contains(a.Unmap()) {
			return c.Network.Dial(ctx, network, addr)
		}
		return next(ctx, network, addr)
	}
}

// VimRegistration is the "vim" member of POST /v1.0/vims registering the cloud.
func (c *Cloud) VimRegistration(name string) []byte {
	return fmt.Appendf(nil, `{"name": %q, "type": "openstack", "is_default": true, "description": "the OpenStack simulator make run brings along",
		"auth_url": %q, "vim_project": {"name": %q, "project_domain_name": "Default"},
		"auth_cred": {"username": %q, "password": %q, "user_domain_name": "Default", "cert_verify": "False"}}`,
		name, c.AuthURL, c.Project, c.User, c.Password)
}

// Close stops the simulator and tears the hosts down.
func (c *Cloud) Close(ctx context.Context) error {
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
	err := c.srv.Shutdown(ctx)
	err = errors.Join(err, c.Sim.Close())
	if c.World != nil {
		err = errors.Join(err, c.World.Close())
	}
	if c.Network != nil {
		err = errors.Join(err, c.Network.Close())
	}
	return err
}

// Summary is a line for logs and the welcome text: hosts, Ansible server,
// missing packages.
func (c *Cloud) Summary() string {
	if c.Network == nil {
		return "servers are records only: " + c.NoHostsReason
	}
	var b strings.Builder
	b.WriteString("servers are real SSH hosts in network namespaces " + c.Network.Prefix() + "-*")
	if a, err := c.Ansible(); err == nil {
		fmt.Fprintf(&b, "; Ansible server %s (user %s)", a.Address, a.User)
	} else {
		fmt.Fprintf(&b, "; NO Ansible server: %v", err)
	}
	return b.String()
}
