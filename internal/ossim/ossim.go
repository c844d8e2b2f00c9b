// Package ossim is an OpenStack simulator for tests and demos: one
// http.Handler serving Keystone v3 (password tokens with a catalog), Heat v1
// (stacks with nested AutoScalingGroups, template evaluation, update/PATCH,
// mark-unhealthy), Nova v2.1 (servers with addresses and console log),
// Neutron v2.0 (networks, subnets, ports, floating IPs, security groups,
// routers) and a minimal Octavia v2 (load balancers, listeners, pools,
// members, health monitors with Octavia's provisioning states), all on the
// same listener. Response shapes follow the real services (checked
// against gophercloud's fixtures); see README.md.
//
// With Options.Hosts set, servers on the host-backed network are real SSH
// hosts (internal/testhosts): booting a server creates a host with the port's
// address, its users from the server's cloud-init user_data, and fresh host
// keys published in the console log; deleting the server removes the host.
package ossim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// Account is a Keystone user with a role in one project.
type Account struct {
	UserName string
	UserID   string // default: generated
	Password string
	// User domain; default "Default" / "default".
	DomainName string
	DomainID   string
	// Project the user is scoped to; default "admin" with a generated id.
	ProjectName string
	ProjectID   string
	// Project domain; default "Default" / "default".
	ProjectDomainName string
	ProjectDomainID   string
	// Roles; default ["admin", "member", "reader"].
	Roles []string
}

// NetworkSpec is a Neutron network with one IPv4 subnet, created at start.
type NetworkSpec struct {
	Name string
	ID   string // default: generated
	CIDR string // e.g. "10.77.0.0/24"; gateway = first address
	// External networks are where floating IPs come from (router:external).
	External bool
	Shared   bool
}

// Flavor is a Nova flavor.
type Flavor struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	VCPUs int    `json:"vcpus"`
	RAM   int    `json:"ram"`  // MiB
	Disk  int    `json:"disk"` // GiB
}

// Options configure a Sim. The zero value works: user admin/secret in project
// admin, region RegionOne, networks net0 (10.77.0.0/24), net1 and public.
type Options struct {
	Region string
	// Accounts that may log in; default one: admin / secret, project admin.
	Accounts []Account
	// TokenTTL is how long tokens live (default 1h).
	TokenTTL time.Duration
	// PublicURL is the base URL put in the catalog (e.g.
	// "http://127.0.0.1:5000"); default: taken from each token request's
	// Host header, so a catalog always points back at the listener used.
	PublicURL string
	// Latency is how long a server takes from BUILD to ACTIVE (default
	// 50ms; when hosts are enabled the host's own boot comes on top).
	Latency time.Duration
	// ResourceLatency is how long other resources (ports, groups...) take
	// (default Latency/10).
	ResourceLatency time.Duration
	// Networks created at start; default net0 10.77.0.0/24, net1
	// 10.77.1.0/24 and public 10.77.100.0/24 (external).
	Networks []NetworkSpec
	// Flavors; default m1.tiny, m1.small, m1.medium, m1.large, m1.xlarge.
	Flavors []Flavor
	// Images accepted by name; empty = any image name is accepted.
	Images []string
	// Hosts makes servers real SSH hosts. Servers with a port on
	// HostNetwork become hosts with that port's address; the network's CIDR
	// must equal Hosts.Subnet(). The caller owns Hosts; Close removes the
	// hosts the simulator created.
	Hosts *testhosts.Network
	// HostNetwork names the network backed by Hosts (default: the first
	// network).
	HostNetwork string
	// HostSetup, when set, runs on every host a server boots as (and after
	// a rebuild), after cloud-init and before the server is ACTIVE: e.g.
	// install software the image would carry. An error puts the server in
	// ERROR.
	HostSetup func(ctx context.Context, h *testhosts.Host) error
	// ServerUser and ServerPassword are the login of servers whose user_data
	// names no users (default ubuntu / ubuntu, with passwordless sudo), like
	// a cloud image prepared for password login.
	ServerUser     string
	ServerPassword string
	// Now is the clock for resource timestamps (default time.Now; tokens
	// always use real time). Heat reports times in whole seconds and orders
	// group members by (creation time, name); tests may use a clock that
	// ticks a second per call to make "oldest" unambiguous.
	Now func() time.Time
	// Logf, when set, receives a line per notable event.
	Logf func(format string, args ...any)
	// HostKeysAfter is how long after a server became ACTIVE its console
	// log shows the host key fingerprints (default 0: at once), as
	// cloud-init prints them some seconds into the boot: for clients that
	// must wait for them.
	HostKeysAfter time.Duration
	// Faults are the initial fault-injection settings.
	Faults Faults
	// StateFile keeps the cloud's state across restarts (see persist.go):
	// read by New when it exists, written whenever the state changed. With
	// Hosts, the network must be persistent (testhosts.Options.Persist):
	// servers get their saved hosts back, and Close leaves the hosts to the
	// network instead of removing them.
	StateFile string
	// SaveInterval is how often the state is checked for changes and saved
	// (default 250ms).
	SaveInterval time.Duration
	// Identity, when set, makes the simulator a cloud behind a real Keystone
	// (internal/osworld): tokens are validated by it instead of the
	// simulator's own Keystone, whose accounts then serve only as the owner
	// of the networks created at start (give Accounts[0].ProjectID the real
	// project's id).
	Identity Identity
}

// Identity validates tokens issued by a real Keystone, as keystonemiddleware
// does for Nova and Neutron.
type Identity interface {
	// ValidateToken returns the token's scope, or nil (no error) when
	// Keystone does not know the token (401 to the client).
	ValidateToken(ctx context.Context, token string) (*IdentityToken, error)
}

// IdentityToken is what a validated token says.
type IdentityToken struct {
	UserID, UserName, UserDomainID          string
	ProjectID, ProjectName, ProjectDomainID string
	Roles                                   []string
	ExpiresAt                               time.Time
}

// Sim is the simulator. It is an http.Handler.
type Sim struct {
	opts Options

	mu        stateMutex
	tokens    map[string]*token
	accounts  []*Account
	stacks    map[string]*stack // by id, including nested and deleted ones
	servers   map[string]*server
	flavors   []*Flavor
	nets      map[string]*network
	subnets   map[string]*subnet
	ports     map[string]*port
	fips      map[string]*floatingIP
	sgroups   map[string]*secGroup
	srvGroups map[string]*serverGroup
	routers   map[string]*router  // router.go
	octavia   *octaviaState       // octavia.go
	appCreds  map[string]*appCred // keystone_appcred.go
	faults    Faults
	hostNet   *network
	serverSeq int
	swConfigs map[string]string
	images    map[string]string // Glance: id → name
	lastBase  string
	internal  atomic.Pointer[string] // SetInternalURL
	closed    bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	saver  *saver
	saveWG sync.WaitGroup
}

// New creates a simulator.
func New(opts Options) (*Sim, error) {
	if opts.Region == "" {
		opts.Region = "RegionOne"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Latency <= 0 {
		opts.Latency = 50 * time.Millisecond
	}
	if opts.ResourceLatency <= 0 {
		opts.ResourceLatency = opts.Latency / 10
	}
	if opts.ServerUser == "" {
		opts.ServerUser = "ubuntu"
	}
	if opts.ServerPassword == "" {
		opts.ServerPassword = "ubuntu"
	}
	if len(opts.Accounts) == 0 {
		opts.Accounts = []Account{{UserName: "admin", Password: "secret", ProjectName: "admin"}}
	}
	if len(opts.Networks) == 0 {
		first := "10.77.0.0/24"
		if opts.Hosts != nil {
			first = opts.Hosts.Subnet().String()
		}
		opts.Networks = []NetworkSpec{
			{Name: "net0", CIDR: first, Shared: true},
			{Name: "net1", CIDR: "10.77.1.0/24", Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true},
		}
	}
	if len(opts.Flavors) == 0 {
		opts.Flavors = []Flavor{
			{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
			{ID: "2", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
			{ID: "3", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
			{ID: "4", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
			{ID: "5", Name: "m1.xlarge", VCPUs: 8, RAM: 16384, Disk: 160},
		}
	}
	s := &Sim{
		opts:      opts,
		tokens:    map[string]*token{},
		stacks:    map[string]*stack{},
		servers:   map[string]*server{},
		nets:      map[string]*network{},
		subnets:   map[string]*subnet{},
		ports:     map[string]*port{},
		fips:      map[string]*floatingIP{},
		sgroups:   map[string]*secGroup{},
		srvGroups: map[string]*serverGroup{},
		swConfigs: map[string]string{},
		faults:    opts.Faults.clone(),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for i := range opts.Accounts {
		a := opts.Accounts[i]
		if a.UserName == "" || a.Password == "" {
			return nil, errors.New("ossim: an account needs a user name and a password")
		}
		def := func(p *string, v string) {
			if *p == "" {
				*p = v
			}
		}
		def(&a.UserID, keystoneID())
		def(&a.DomainName, "Default")
		def(&a.DomainID, "default")
		def(&a.ProjectName, "admin")
		def(&a.ProjectDomainName, "Default")
		def(&a.ProjectDomainID, "default")
		if a.ProjectID == "" {
			// Accounts sharing a project share its id.
			for _, o := range s.accounts {
				if o.ProjectName == a.ProjectName && o.ProjectDomainID == a.ProjectDomainID {
					a.ProjectID = o.ProjectID
				}
			}
			def(&a.ProjectID, keystoneID())
		}
		if len(a.Roles) == 0 {
			a.Roles = []string{"admin", "member", "reader"}
		}
		s.accounts = append(s.accounts, &a)
	}
	for i := range opts.Flavors {
		f := opts.Flavors[i]
		s.flavors = append(s.flavors, &f)
	}
	var saved *stateFile
	if opts.StateFile != "" {
		var err error
		if saved, err = loadStateFile(opts.StateFile); err != nil {
			return nil, err
		}
		s.saver = &saver{path: opts.StateFile}
	}
	if saved != nil {
		if err := s.restoreState(saved); err != nil {
			return nil, err
		}
	} else {
		for _, ns := range opts.Networks {
			if _, err := s.addNetwork(ns); err != nil {
				return nil, err
			}
		}
	}
	if opts.Hosts != nil {
		name := opts.HostNetwork
		if name == "" {
			name = opts.Networks[0].Name
		}
		for _, n := range s.nets {
			if n.name == name {
				s.hostNet = n
			}
		}
		if s.hostNet == nil {
			return nil, fmt.Errorf("ossim: host network %q not among the networks", opts.HostNetwork)
		}
		sn := s.subnets[s.hostNet.subnets[0]]
		if sn.cidr != opts.Hosts.Subnet() || sn.gateway != opts.Hosts.Gateway() {
			return nil, fmt.Errorf("ossim: network %s (%s, gateway %s) does not match the hosts' network %s (gateway %s)",
				s.hostNet.name, sn.cidr, sn.gateway, opts.Hosts.Subnet(), opts.Hosts.Gateway())
		}
		s.hostNet.hostBacked = true
	}
	if saved != nil {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Minute)
		s.restoreHosts(ctx, saved)
		cancel()
		s.logf("ossim: state restored from %s (saved %s): %d servers, %d stacks", opts.StateFile, saved.Saved.Format(time.RFC3339), len(saved.Servers), len(saved.Stacks))
	}
	if s.saver != nil {
		if err := s.save(); err != nil {
			return nil, err
		}
		every := opts.SaveInterval
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		s.saveWG.Add(1)
		go s.saveLoop(every)
	}
	return s, nil
}

// Close stops every operation in progress, and removes the test hosts of
// all servers. The simulator answers 503 afterwards.
func (s *Sim) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.saver != nil {
		s.saveWG.Wait()
		err := s.save()
		if s.opts.Hosts != nil {
			// The hosts are the persistent network's to power off; their
			// disks stay for the next start.
			return err
		}
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	var hosts []*testhosts.Host
	for _, sv := range s.servers {
		if sv.host != nil {
			hosts = append(hosts, sv.host)
			sv.host = nil
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs[i] = h.Remove(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SetInternalURL sets the base URL of the catalog's internal endpoints:
// the simulator as the servers reach it (software inside the VNF, such as
// Kuryr's controller, which logs in with a credential the VNFM issued and
// calls Neutron and Octavia). Empty (the default): internal endpoints are
// the public ones. The simulator must also be served at that URL.
func (s *Sim) SetInternalURL(base string) {
	base = strings.TrimRight(base, "/")
	s.internal.Store(&base)
}

func (s *Sim) internalURL() string {
	if p := s.internal.Load(); p != nil {
		return *p
	}
	return ""
}

// HostsEnabled reports whether servers become real hosts.
func (s *Sim) HostsEnabled() bool { return s.opts.Hosts != nil }

// Region is the region in the catalog.
func (s *Sim) Region() string { return s.opts.Region }

// Accounts returns the accounts (with generated ids filled in).
func (s *Sim) Accounts() []Account {
	out := make([]Account, len(s.accounts))
	for i, a := range s.accounts {
		out[i] = *a
	}
	return out
}

func (s *Sim) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Sim) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// sleep waits d or until the simulator closes / ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// go runs fn in the background, tracked by Close.
func (s *Sim) goAsync(fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
}

// ServeHTTP routes to the services by path prefix:
//
//	/, /v3/...                 Keystone
//	/v1/{project_id}/...       Heat
//	/compute/v2.1/...          Nova
//	/networking/v2.0/...       Neutron
//	/load-balancer/v2/...      Octavia
//	/image/v2/...              Glance (images by name and id)
//	/volume/v3/...             Cinder: its extension list only
//	/_sim/...                  simulator admin (faults, hosts); no token
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Openstack-Request-Id", "req-"+uuid.NewString())
	s.mu.Lock()
	closed := s.closed
	if base := s.baseURL(r); base != s.internalURL() {
		s.lastBase = base // the URLs the simulator makes (alarm_url) are the public ones
	}
	s.mu.Unlock()
	if closed {
		http.Error(w, "simulator closed", http.StatusServiceUnavailable)
		return
	}
	p := r.URL.Path
	switch {
	case p == "/" || p == "/v3" || p == "/v3/" || strings.HasPrefix(p, "/v3/"):
		s.serveKeystone(w, r)
	case strings.HasPrefix(p, "/_sim"):
		s.serveAdmin(w, r)
	case p == "/compute" || strings.HasPrefix(p, "/compute/"):
		s.serveNova(w, r)
	case p == "/networking" || strings.HasPrefix(p, "/networking/"):
		s.serveNeutron(w, r)
	case p == "/load-balancer" || strings.HasPrefix(p, "/load-balancer/"):
		s.serveOctavia(w, r)
	case p == "/image" || strings.HasPrefix(p, "/image/"):
		s.serveGlance(w, r)
	case p == "/volume" || strings.HasPrefix(p, "/volume/"):
		s.serveCinder(w, r)
	case strings.HasPrefix(p, "/v1/"):
		s.serveHeat(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404, "title": "Not Found", "message": "The resource could not be found."}})
	}
}

// ---- small helpers ----

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
	}
}

// readJSON decodes a request body into v (numbers as json.Number are not
// used: templates and parameters keep float64).
func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return errors.New("empty request body")
	}
	return json.Unmarshal(b, v)
}

func keystoneID() string { return strings.ReplaceAll(uuid.NewString(), "-", "") }

// shortID is Heat's 12-character id (base32 lower case), used for group
// member names and physical resource name suffixes.
func shortID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func randomMAC() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", b[0], b[1], b[2])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// heatTime formats a time like Heat does (whole seconds, UTC, "Z").
func heatTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// novaTime is Nova's "created"/"updated" format.
func novaTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// baseURL is the public base URL for links and the catalog.
func (s *Sim) baseURL(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return strings.TrimRight(s.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// pathSegments splits the path after prefix into non-empty segments.
func pathSegments(p, prefix string) []string {
	rest := strings.TrimPrefix(p, prefix)
	var out []string
	for _, seg := range strings.Split(rest, "/") {
		if seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

func mustAddr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}
