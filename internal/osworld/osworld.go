package osworld

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure a world.
type Options struct {
	// AdminDBURL is a postgres:// URL of a role that may create databases
	// (the test binary's pgtest.Cluster(), or the embedded server of make
	// run). The world creates two databases there and drops them on Close.
	AdminDBURL string
	// Dir holds configuration, keys and logs (default: a temporary
	// directory, removed by Close).
	Dir string
	// Debug turns on Heat's debug log (every request it makes).
	Debug bool
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
}

// World is a running Keystone + Heat.
type World struct {
	// AuthURL is Keystone's v3 URL (http://127.0.0.1:port/v3).
	AuthURL string
	// HeatURL is Heat's v1 root (the catalog has HeatURL/v1/<project id>).
	HeatURL string
	// CloudURL is the front for the simulator's APIs: the catalog's
	// compute (CloudURL/compute/v2.1), network (CloudURL/networking), image
	// (CloudURL/image) and load-balancer (CloudURL/load-balancer) entries.
	CloudURL string
	// Region of the catalog.
	Region string
	// Admin is the cloud administrator (user admin, project admin).
	Admin Tenant
	// Started is how long Start took.
	Started time.Duration

	opts     Options
	dir      string
	ownDir   bool
	dbs      []string
	lock     *os.File
	ks       *service
	heat     *service
	front    *http.Server
	identity *keystoneClient

	mu        sync.Mutex
	routes    map[string]http.Handler // project id → simulator
	outbound  map[string]bool
	closed    bool
	watching  bool
	stopWatch chan struct{}
	watchDone chan struct{}
}

// Tenant is a Keystone project with a user holding the admin role in it.
type Tenant struct {
	Project, ProjectID string
	User, UserID       string
	Password           string
}

// service is one of the world's processes.
type service struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// Start brings up Keystone and Heat (installing their packages first when
// root and missing). ctx bounds the start only.
func Start(ctx context.Context, o Options) (_ *World, err error) {
	began := time.Now()
	if o.AdminDBURL == "" {
		return nil, errors.New("osworld: Options.AdminDBURL is required (a PostgreSQL server where the world may create its databases)")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if err := EnsurePackages(ctx); err != nil {
		return nil, err
	}
	gold, err := golden(ctx, o.AdminDBURL, o.Logf)
	if err != nil {
		return nil, err
	}
	w := &World{opts: o, Region: defaultRegion, routes: map[string]http.Handler{}, outbound: map[string]bool{},
		stopWatch: make(chan struct{}), watchDone: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = w.Close()
		}
	}()
	w.dir = o.Dir
	if w.dir == "" {
		reapLeftovers()
		if w.dir, err = os.MkdirTemp("", "osworld-"); err != nil {
			return nil, fmt.Errorf("osworld: %w", err)
		}
		w.ownDir = true
		// Held while the world lives (a test binary's shared world is never
		// closed: it ends with the process, and the next start removes it).
		if w.lock, err = os.OpenFile(filepath.Join(w.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
			return nil, fmt.Errorf("osworld: %w", err)
		}
		if err := syscall.Flock(int(w.lock.Fd()), syscall.LOCK_EX); err != nil {
			return nil, fmt.Errorf("osworld: %w", err)
		}
	}
	if err := writeKeys(w.dir); err != nil {
		return nil, err
	}

	// Databases from the golden dumps.
	id := randomHex(4)
	ksDB, heatDB := "osworld_"+id+"_keystone", "osworld_"+id+"_heat"
	if err := createDBs(ctx, o.AdminDBURL, ksDB, heatDB); err != nil {
		return nil, err
	}
	w.dbs = []string{ksDB, heatDB}
	ksURL, _ := dbURL(o.AdminDBURL, ksDB)
	heatURL, _ := dbURL(o.AdminDBURL, heatDB)
	errc := make(chan error, 1)
	go func() { errc <- restore(ctx, heatURL, filepath.Join(gold, goldenHeatDB)) }()
	err = restore(ctx, ksURL, filepath.Join(gold, goldenKeystoneDB))
	if herr := <-errc; err == nil {
		err = herr
	}
	if err != nil {
		return nil, err
	}

	// Ports, configuration, processes.
	ksPort, err := freePort()
	if err != nil {
		return nil, err
	}
	heatPort, err := freePort()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("osworld: %w", err)
	}
	w.CloudURL = "http://" + ln.Addr().String()
	w.front = &http.Server{Handler: http.HandlerFunc(w.serveCloud), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.front.Serve(ln) }()

	w.AuthURL = fmt.Sprintf("http://127.0.0.1:%d/v3", ksPort)
	w.HeatURL = fmt.Sprintf("http://127.0.0.1:%d", heatPort)
	ksSQLA, _ := sqlalchemyURL(ksURL)
	heatSQLA, _ := sqlalchemyURL(heatURL)
	sec, err := readSecrets(gold)
	if err != nil {
		return nil, err
	}
	if err := rewriteEndpoints(ctx, ksURL, fmt.Sprintf("http://127.0.0.1:%d/", ksPort), w.HeatURL+"/", w.CloudURL+"/"); err != nil {
		return nil, err
	}
	files := map[string]string{
		"keystone.conf":      renderKeystoneConf(keystoneConfig{DB: ksSQLA, Dir: w.dir}),
		"keystone-server.py": keystoneServer,
		"heat.conf": renderHeatConf(heatConfig{DB: heatSQLA, Dir: w.dir, KeystonePort: ksPort, HeatPort: heatPort,
			AuthKey: randomHex(16), ServicePassword: sec.Service, DomainAdminPassword: sec.DomainAdmin, Host: "osworld-" + id,
			Debug: o.Debug}),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("osworld: %w", err)
		}
	}
	w.ks, err = spawn(w.dir, "keystone", []string{"OS_KEYSTONE_CONFIG_FILES=" + filepath.Join(w.dir, "keystone.conf"),
		fmt.Sprintf("OSWORLD_KEYSTONE_PORT=%d", ksPort)}, Python, filepath.Join(w.dir, "keystone-server.py"))
	if err != nil {
		return nil, err
	}
	w.heat, err = spawn(w.dir, "heat", nil, "/usr/bin/heat-all", "--config-file", filepath.Join(w.dir, "heat.conf"),
		"--config-dir", filepath.Join(w.dir, "conf.d"))
	if err != nil {
		return nil, err
	}
	w.watching = true
	go w.watch()

	if err := waitHTTP(ctx, w.ks, w.AuthURL, 200); err != nil {
		return nil, err
	}
	o.Logf("osworld: Keystone up at %s after %s", w.AuthURL, time.Since(began).Round(time.Millisecond))
	w.identity = newKeystoneClient(w.AuthURL, adminUser, adminPassword, adminProject)
	if w.Admin, err = w.identity.whoami(ctx); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, w.heat, w.HeatURL+"/", 300); err != nil {
		return nil, err
	}
	// The engine answers once its RPC server runs: a stack list goes
	// through the API, the token middleware and the engine.
	if err := w.waitStacks(ctx); err != nil {
		return nil, err
	}
	w.Started = time.Since(began)
	o.Logf("osworld: Keystone %s and Heat %s ready in %s", w.AuthURL, w.HeatURL, w.Started.Round(time.Millisecond))
	return w, nil
}

// writeKeys makes dir's subdirectories and fresh fernet keys, as
// keystone-manage fernet_setup / credential_setup write them: 0 is the
// staged key, 1 the primary.
func writeKeys(dir string) error {
	for _, d := range []string{"fernet-keys", "credential-keys", "plugins", "conf.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("osworld: %w", err)
		}
	}
	for _, d := range []string{"fernet-keys", "credential-keys"} {
		for _, n := range []string{"0", "1"} {
			k := make([]byte, 32)
			_, _ = rand.Read(k)
			if err := os.WriteFile(filepath.Join(dir, d, n), []byte(base64.URLEncoding.EncodeToString(k)), 0o600); err != nil {
				return fmt.Errorf("osworld: %w", err)
			}
		}
	}
	return nil
}

// spawn starts a process in its own process group, killed with its parent;
// its output goes to dir/<name>.log.
func spawn(dir, name string, env []string, prog string, args ...string) (*service, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("osworld: %w", err)
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("osworld: starting %s: %w", name, err)
	}
	s := &service{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		f.Close()
		close(s.exited)
	}()
	return s, nil
}

// cleanEnv is the environment of the services: no proxy settings (requests
// would send loopback calls through a proxy) and no OS_* credentials.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		lk := strings.ToLower(k)
		if strings.HasSuffix(lk, "_proxy") || strings.HasPrefix(k, "OS_") || strings.HasPrefix(k, "PYTHON") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "no_proxy=*", "PYTHONDONTWRITEBYTECODE=1")
}

func (s *service) logTail(n int) string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return err.Error()
	}
	return tailLines(string(b), n)
}

// LogTail returns the last n lines of a service's log ("keystone", "heat").
func (w *World) LogTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(w.dir, name+".log"))
	if err != nil {
		return err.Error()
	}
	return tailLines(string(b), n)
}

// Dir is the world's directory (configuration, keys, logs).
func (w *World) Dir() string { return w.dir }

func waitHTTP(ctx context.Context, s *service, url string, want int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == want {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("osworld: %s exited (%v) before answering %s:\n%s", s.name, s.err, url, s.logTail(40))
		case <-ctx.Done():
			return fmt.Errorf("osworld: %s did not answer %s: %w\n%s", s.name, url, ctx.Err(), s.logTail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *World) waitStacks(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		tok, err := w.identity.token(ctx)
		if err == nil {
			var out map[string]any
			err = doJSON(ctx, http.MethodGet, w.HeatURL+"/v1/"+w.Admin.ProjectID+"/stacks", tok, nil, &out, 200)
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-w.heat.exited:
			return fmt.Errorf("osworld: heat exited (%v):\n%s", w.heat.err, w.LogTail("heat", 40))
		case <-ctx.Done():
			return fmt.Errorf("osworld: Heat does not list stacks: %v\n%s", last, w.LogTail("heat", 40))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Close stops Heat and Keystone, drops their databases and removes the
// world's directory when it made it. It reports any connection the
// services opened off loopback.
func (w *World) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	var errs []error
	if w.watching {
		close(w.stopWatch)
		<-w.watchDone
	}
	for _, s := range []*service{w.heat, w.ks} {
		if s != nil {
			s.stop()
		}
	}
	if w.front != nil {
		_ = w.front.Close()
	}
	if len(w.dbs) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs = append(errs, dropDBs(ctx, w.opts.AdminDBURL, w.dbs...))
		cancel()
	}
	if out := w.Outbound(); len(out) > 0 {
		errs = append(errs, fmt.Errorf("osworld: Keystone or Heat connected off loopback: %s", strings.Join(out, ", ")))
	}
	if w.ownDir && w.dir != "" {
		errs = append(errs, os.RemoveAll(w.dir))
	}
	if w.lock != nil {
		_ = w.lock.Close()
	}
	return errors.Join(errs...)
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (s *service) stop() {
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.exited
	}
	// Whatever the leader left in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Stopped reports whether a service ("keystone", "heat") has exited.
func (w *World) Stopped(name string) bool {
	s := w.ks
	if name == "heat" {
		s = w.heat
	}
	if s == nil {
		return true
	}
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// reapLeftovers removes the directories of worlds whose process is gone
// (their lock is free).
func reapLeftovers() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "osworld-*"))
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "lock"), os.O_RDWR, 0)
		if err != nil {
			continue // not ours, or not yet locked
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(d)
		}
		f.Close()
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("osworld: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The services die with the test binary through Pdeathsig, which fires when
// the *thread* that forked them exits. Go ends a thread when a goroutine
// that locked it (as the network-namespace code of the test hosts does)
// returns without unlocking, so every child is forked from one goroutine
// locked to a thread that never exits.
var (
	spawnOnce sync.Once
	spawnReqs = make(chan spawnReq)
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func startLocked(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for r := range spawnReqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}
