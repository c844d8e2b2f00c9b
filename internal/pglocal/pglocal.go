package pglocal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// Database is created by Start when missing; URL("") connects to it.
	Database = "vnfm"
	// User is the superuser that URL connects as.
	User = "postgres"
	// DefaultDataDir is used when Options.DataDir is empty.
	DefaultDataDir = ".vnfm"
)

// File and directory names; see the package documentation.
const (
	stateFile    = "pglocal.json"
	lockFile     = "pglocal.lock"
	logFile      = "postgres.log"
	passwordFile = "pglocal.password"
	pgDataDir    = "pgdata"
	sockDirName  = "pgrun"
	confFile     = "pglocal.conf"

	maxLogSize = 16 << 20
	// sun_path is 108 bytes including the NUL; PostgreSQL adds "/.s.PGSQL.<port>".
	maxSocketDirLen = 107 - len("/.s.PGSQL.65535")
)

// Options configures Start.
type Options struct {
	// DataDir holds the cluster and pglocal's files; created when missing.
	// Default DefaultDataDir (relative to the working directory).
	DataDir string
	// Port is the TCP port on 127.0.0.1. 0 picks one: the port recorded in
	// DataDir by the previous run when it is free, else a free port.
	Port int
	// Logger receives progress and recovery messages; nil discards them.
	Logger *slog.Logger
	// Fast trades durability for speed (tests): initdb --no-sync, fsync=off,
	// synchronous_commit=off, full_page_writes=off, wal_level=minimal.
	Fast bool
	// Settings are extra postgresql.conf parameters (name → value, written
	// quoted, which PostgreSQL accepts for every type), e.g.
	// shared_preload_libraries for the bench's pg_stat_statements. They are
	// rewritten at every start and win over the defaults above.
	Settings map[string]string
}

// Server is a running PostgreSQL server started by Start.
type Server struct {
	opts     Options
	log      *slog.Logger
	dataDir  string // resolved absolute DataDir
	root     string // holds pgdata, pgrun, password; == dataDir unless external
	pgData   string
	sockDir  string // "" when the unix socket is disabled
	logPath  string
	runAs    *account
	bin      binaries
	port     int
	password string

	immediate bool // recoverPrevious: stop a leftover server without a shutdown checkpoint

	mu      sync.Mutex
	lock    *os.File // flock on DataDir/pglocal.lock
	stopped bool
}

type state struct {
	Port int `json:"port,omitempty"`
	// Root is set when the cluster lives outside DataDir (root-run server
	// whose account cannot reach DataDir).
	Root string `json:"root,omitempty"`
}

// Start starts (after creating it if needed) the cluster in o.DataDir and
// makes sure database Database exists. Call Stop when done.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Port < 0 || o.Port > math.MaxUint16 {
		return nil, fmt.Errorf("pglocal: invalid port %d", o.Port)
	}
	for k := range o.Settings {
		if !settingName.MatchString(k) {
			return nil, fmt.Errorf("pglocal: invalid setting name %q", k)
		}
	}
	began := time.Now()
	s := &Server{opts: o, log: o.Logger}
	if err := s.prepareDataDir(2 * time.Second); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	st, err := s.readState()
	if err != nil {
		return nil, err
	}
	if err := s.chooseRoot(&st); err != nil {
		return nil, err
	}
	initialised := fileExists(filepath.Join(s.pgData, "PG_VERSION"))
	wantMajor := ""
	if initialised {
		b, err := os.ReadFile(filepath.Join(s.pgData, "PG_VERSION"))
		if err != nil {
			return nil, fmt.Errorf("pglocal: %w", err)
		}
		wantMajor = strings.TrimSpace(string(b))
	}
	if s.bin, err = findBinaries(ctx, wantMajor); err != nil {
		return nil, err
	}
	if wantMajor != "" && s.bin.major != wantMajor {
		return nil, fmt.Errorf("pglocal: the cluster in %s was created by PostgreSQL %s but the binaries in %s are version %s; "+
			"install postgresql-%s (or set PG_BINDIR), or upgrade the cluster with pg_upgrade, or remove %s to start empty",
			s.pgData, wantMajor, s.bin.dir, s.bin.version, wantMajor, s.pgData)
	}
	if err := s.prepareRoot(); err != nil {
		return nil, err
	}
	if initialised {
		if s.password, err = readPassword(filepath.Join(s.root, passwordFile)); err != nil {
			return nil, err
		}
		if err := s.recoverPrevious(ctx); err != nil {
			return nil, err
		}
	} else {
		if err := s.initdb(ctx); err != nil {
			return nil, err
		}
	}

	autoPort := o.Port == 0
	s.port = o.Port
	if autoPort {
		if st.Port != 0 && portFree(st.Port) {
			s.port = st.Port
		} else if s.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		st.Port = s.port
		if err := s.writeState(st); err != nil {
			return nil, err
		}
		err := s.pgCtlStart(ctx)
		if err == nil {
			break
		}
		// Another process may take an auto-picked port between our probe and
		// the server's bind.
		if autoPort && attempt < 3 && ctx.Err() == nil && strings.Contains(err.Error(), "could not bind") {
			s.log.Warn("pglocal: port taken, retrying with another one", "port", s.port)
			if s.port, err = freePort(); err != nil {
				return nil, err
			}
			continue
		}
		return nil, err
	}
	if err := s.ensureDatabase(ctx); err != nil {
		s.stopQuietly()
		return nil, err
	}
	ok = true
	s.log.Info("pglocal: PostgreSQL started", "version", s.bin.version, "port", s.port, "pgdata", s.pgData,
		"log", s.logPath, "initdb", !initialised, "took", time.Since(began).Round(time.Millisecond))
	return s, nil
}

// URL returns a connection URL for database db (Database when empty) as the
// superuser, over TCP to 127.0.0.1.
func (s *Server) URL(db string) string {
	if db == "" {
		db = Database
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(User, s.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// LocalURL returns a connection URL for database db like URL, but over the
// server's unix socket when it has one: a round trip through a unix socket
// costs both ends less CPU than one through TCP on loopback. Clients that
// take only host:port URLs (other programs) use URL.
func (s *Server) LocalURL(db string) string {
	if s.sockDir == "" {
		return s.URL(db)
	}
	u, _ := url.Parse(s.URL(db)) // our own URL always parses
	u.Host = ""
	u.RawQuery = url.Values{"host": {s.sockDir}, "port": {strconv.Itoa(s.port)}, "sslmode": {"disable"}}.Encode()
	return u.String()
}

// Port returns the TCP port the server listens on (127.0.0.1 only).
func (s *Server) Port() int { return s.port }

// PGData returns the cluster directory.
func (s *Server) PGData() string { return s.pgData }

// LogPath returns the server log file.
func (s *Server) LogPath() string { return s.logPath }

// SocketDir returns the unix socket directory, "" when the socket is disabled
// because the path would be too long.
func (s *Server) SocketDir() string { return s.sockDir }

// Stop shuts the server down (pg_ctl stop -m fast) and releases DataDir. It is
// idempotent and safe for concurrent use; a failed Stop may be retried.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	if err := s.pgCtlStop(ctx, "fast"); err != nil {
		return err
	}
	s.stopped = true
	s.releaseLocked()
	s.log.Info("pglocal: PostgreSQL stopped", "pgdata", s.pgData)
	return nil
}

// Destroy stops the server and deletes the cluster and every file pglocal
// created (DataDir itself is removed when it is then empty). For tests.
func (s *Server) Destroy(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	var errs []error
	if s.root != s.dataDir {
		errs = append(errs, os.RemoveAll(s.root))
	} else {
		for _, name := range []string{pgDataDir, pgDataDir + ".initdb", sockDirName, passwordFile} {
			errs = append(errs, os.RemoveAll(filepath.Join(s.root, name)))
		}
	}
	for _, name := range []string{stateFile, lockFile, logFile, logFile + ".1"} {
		errs = append(errs, os.RemoveAll(filepath.Join(s.dataDir, name)))
	}
	_ = os.Remove(s.dataDir) // only when empty
	return errors.Join(errs...)
}

// ErrInUse is returned (wrapped) by Start and Remove when a running Server,
// in this process or another, holds the data directory.
var ErrInUse = errors.New("data directory is in use")

// Remove deletes a data directory that its owner left behind without Stop or
// Destroy, such as a test binary killed by its timeout: it shuts down a
// server still running there (immediate mode), then removes the cluster
// (including one kept outside DataDir) and DataDir itself. It fails with
// ErrInUse, without waiting, while a Server holds the directory.
func Remove(ctx context.Context, dataDir string) error {
	s := &Server{log: slog.New(slog.DiscardHandler), opts: Options{DataDir: dataDir}, immediate: true}
	if _, err := os.Stat(dataDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := s.prepareDataDir(0); err != nil {
		return err
	}
	defer s.release()
	st, err := s.readState()
	if err != nil {
		return err
	}
	s.root = s.dataDir
	if st.Root != "" {
		s.root = st.Root
	}
	s.pgData = filepath.Join(s.root, pgDataDir)
	if sock := filepath.Join(s.root, sockDirName); fileExists(sock) {
		s.sockDir = sock
	}
	if err := s.recoverPrevious(ctx); err != nil {
		return err
	}
	var errs []error
	if s.root != s.dataDir {
		errs = append(errs, os.RemoveAll(s.root))
	}
	errs = append(errs, os.RemoveAll(s.dataDir))
	return errors.Join(errs...)
}

// abandon forgets the server without stopping it, like a process that is
// killed: tests use it to simulate a crash of the owner.
func (s *Server) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.releaseLocked()
}

func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *Server) releaseLocked() {
	if s.lock != nil {
		_ = s.lock.Close() // drops the flock
		s.lock = nil
	}
}

// stopQuietly is used on failed starts: the server may be up.
func (s *Server) stopQuietly() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.pgCtlStop(ctx, "immediate"); err != nil {
		s.log.Warn("pglocal: stopping server after failed start", "err", err)
	}
}

// prepareDataDir creates and locks DataDir, waiting up to lockWait for a
// lock that is held.
func (s *Server) prepareDataDir(lockWait time.Duration) error {
	abs, err := filepath.Abs(s.opts.DataDir)
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	// 0711 for root: the server account may need to traverse it (not list it).
	mode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		mode = 0o711
	}
	if err := os.MkdirAll(abs, mode); err != nil {
		return fmt.Errorf("pglocal: creating data directory: %w", err)
	}
	if s.dataDir, err = filepath.EvalSymlinks(abs); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	s.logPath = filepath.Join(s.dataDir, logFile)
	f, err := os.OpenFile(filepath.Join(s.dataDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	// A just-released lock can look held for a moment: a process forked by
	// another goroutine keeps a reference to the lock's open file until it
	// execs. Give it a short while before declaring the directory in use.
	var err2 error
	for deadline := time.Now().Add(lockWait); ; {
		err2 = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err2, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := err2; err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("pglocal: data directory %s: %w by another running server (lock %s)", s.dataDir, ErrInUse, f.Name())
		}
		return fmt.Errorf("pglocal: locking %s: %w", f.Name(), err)
	}
	s.lock = f
	return nil
}

func (s *Server) readState() (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(s.dataDir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("pglocal: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("pglocal: %s: %w", filepath.Join(s.dataDir, stateFile), err)
	}
	return st, nil
}

func (s *Server) writeState(st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.dataDir, stateFile), append(b, '\n'), 0o600)
}

// chooseRoot decides where the cluster lives and as whom it runs.
func (s *Server) chooseRoot(st *state) error {
	s.root = s.dataDir
	if st.Root != "" {
		s.root = st.Root
	}
	s.pgData = filepath.Join(s.root, pgDataDir)
	if os.Geteuid() != 0 {
		return nil
	}
	var err error
	if s.runAs, err = serverAccount(s.pgData); err != nil {
		return err
	}
	err = checkTraversable(s.root, s.runAs)
	var ae *AccessError
	if err == nil || !errors.As(err, &ae) || st.Root != "" || fileExists(s.pgData) {
		return err // reachable, another error, or a cluster that must not move
	}
	// A fresh cluster whose DataDir the server account cannot reach, e.g. a
	// checkout under /root: keep the cluster in sysStateDir.
	s.root = externalRoot(s.dataDir)
	s.pgData = filepath.Join(s.root, pgDataDir)
	if s.runAs, err = serverAccount(s.pgData); err != nil {
		return err
	}
	s.log.Info("pglocal: the PostgreSQL server account cannot reach the data directory; keeping the cluster outside it",
		"account", s.runAs.name, "blocked_at", ae.Dir, "cluster_root", s.root)
	if fileExists(s.root) {
		// DataDir does not record this cluster, so DataDir was deleted or
		// replaced since: its owner expects an empty database (and a new
		// VNFM secret key would not decrypt the old one's secrets). Keep the
		// old cluster, but out of the way.
		aside := fmt.Sprintf("%s.orphaned-%s", s.root, time.Now().UTC().Format("20060102T150405Z"))
		s.log.Warn("pglocal: a cluster of a previous, deleted data directory with the same path exists; moving it aside and starting empty",
			"old", aside)
		if err := os.Rename(s.root, aside); err != nil {
			return fmt.Errorf("pglocal: %w", err)
		}
		if s.runAs, err = serverAccount(s.pgData); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := checkTraversable(s.root, s.runAs); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(s.root, "DATADIR"), []byte(s.dataDir+"\n"), 0o644)
	st.Root = s.root
	return s.writeState(*st)
}

// prepareRoot creates the socket directory.
func (s *Server) prepareRoot() error {
	if err := os.MkdirAll(s.root, 0o711); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	sock := filepath.Join(s.root, sockDirName)
	if len(sock) > maxSocketDirLen {
		s.log.Warn("pglocal: data directory path too long for a unix socket; listening on TCP 127.0.0.1 only", "dir", sock)
		return nil
	}
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := os.Chmod(sock, 0o700); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := s.runAs.chown(sock); err != nil {
		return err
	}
	s.sockDir = sock
	return nil
}

// initdb creates the cluster in a scratch directory and renames it into place,
// so that an interrupted initdb never leaves a half-made pgdata behind.
func (s *Server) initdb(ctx context.Context) error {
	began := time.Now()
	tmp := s.pgData + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := s.runAs.chown(tmp); err != nil {
		return err
	}
	pwPath := filepath.Join(s.root, passwordFile)
	pw, err := readPassword(pwPath)
	if err != nil {
		buf := make([]byte, 32)
		_, _ = rand.Read(buf)
		pw = hex.EncodeToString(buf)
		if err := writeFileAtomic(pwPath, []byte(pw+"\n"), 0o600); err != nil {
			return err
		}
	}
	s.password = pw
	// initdb reads the password from a file, which the server account must be
	// able to open: put a copy in the scratch cluster directory (its own).
	pwfile := filepath.Join(tmp, "initdb.pwfile")
	if err := os.WriteFile(pwfile, []byte(pw+"\n"), 0o600); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := s.runAs.chown(pwfile); err != nil {
		return err
	}
	// initdb insists on an empty directory: hand it a subdirectory.
	target := filepath.Join(tmp, "data")
	if err := os.Mkdir(target, 0o700); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := s.runAs.chown(target); err != nil {
		return err
	}
	args := []string{"-D", target, "-U", User, "--pwfile=" + pwfile,
		"--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C"}
	if s.opts.Fast {
		args = append(args, "--no-sync")
	}
	s.log.Info("pglocal: creating cluster", "pgdata", s.pgData, "account", s.runAs.String())
	var out bytes.Buffer
	cmd := s.command(ctx, "initdb", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	s.appendLog("initdb", out.Bytes())
	if err != nil {
		return fmt.Errorf("pglocal: initdb %s failed: %w\n%s", s.pgData, err, tail(out.Bytes(), 30))
	}
	conf := filepath.Join(target, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Added by mini-VNFM pglocal: the settings below are rewritten at every start.\ninclude_if_exists = '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := os.Rename(target, s.pgData); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	_ = os.RemoveAll(tmp)
	s.log.Info("pglocal: cluster created", "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// writeConf writes the settings pglocal owns; postgresql.conf includes it.
func (s *Server) writeConf() error {
	var b strings.Builder
	set := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	b.WriteString("# Written by mini-VNFM pglocal at every start; edits are lost.\n")
	set("listen_addresses", "'127.0.0.1'")
	set("port", strconv.Itoa(s.port))
	set("unix_socket_directories", confString(socketDirList(s.sockDir)))
	set("unix_socket_permissions", "0700")
	set("password_encryption", "'scram-sha-256'")
	set("logging_collector", "off")
	set("log_destination", "'stderr'")
	set("log_line_prefix", "'%m [%p] %q%u@%d '")
	if s.opts.Fast {
		set("fsync", "off")
		set("synchronous_commit", "off")
		set("full_page_writes", "off")
		set("wal_level", "minimal")
		set("max_wal_senders", "0")
		set("max_connections", "200")
	}
	for _, k := range slices.Sorted(maps.Keys(s.opts.Settings)) {
		set(k, confString(s.opts.Settings[k]))
	}
	path := filepath.Join(s.pgData, confFile)
	if err := writeFileAtomic(path, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return s.runAs.chown(path)
}

// settingName is what a postgresql.conf parameter name may be (an
// extension's own have a dot).
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// socketDirList renders dir as a one-element unix_socket_directories list,
// which is comma-separated with double quotes for names that need them.
func socketDirList(dir string) string {
	if strings.ContainsAny(dir, `,"`) || strings.TrimSpace(dir) != dir {
		return `"` + strings.ReplaceAll(dir, `"`, `""`) + `"`
	}
	return dir
}

func confString(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// pgCtlStart runs pg_ctl start -w. The server inherits the log file as its
// stdout/stderr: the descriptor is opened here, so the server account needs
// no access to DataDir, and nothing waits on a pipe the server keeps open.
func (s *Server) pgCtlStart(ctx context.Context) error {
	if err := s.writeConf(); err != nil {
		return err
	}
	s.rotateLog()
	lf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	defer func() { _ = lf.Close() }()
	offset, _ := lf.Seek(0, io.SeekEnd)
	cmd := s.command(ctx, "pg_ctl", "start", "-w", "-t", timeoutSecs(ctx, 60), "-D", s.pgData)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			s.stopQuietly() // pg_ctl was killed; the server may come up anyway
		}
		return fmt.Errorf("pglocal: starting PostgreSQL (pg_ctl start -D %s, port %d) failed: %w; last lines of %s:\n%s",
			s.pgData, s.port, err, s.logPath, s.logTail(offset, 30))
	}
	return nil
}

// pgCtlStop stops the server; a server that is not running is not an error.
func (s *Server) pgCtlStop(ctx context.Context, mode string) error {
	pidFile := filepath.Join(s.pgData, "postmaster.pid")
	if !fileExists(pidFile) {
		return nil
	}
	var out bytes.Buffer
	cmd := s.command(ctx, "pg_ctl", "stop", "-w", "-t", timeoutSecs(ctx, 60), "-m", mode, "-D", s.pgData)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s.appendLog("pg_ctl stop", out.Bytes())
	if err != nil && fileExists(pidFile) {
		// A server that died (crash, kill -9) leaves its pid file behind:
		// nothing to stop, and the next Start recovers the directory.
		if pid, _ := readPostmasterPID(s.pgData); pid != 0 && (pid < 0 || !alive(pid) || !runsIn(pid, s.resolvedPGData())) {
			return nil
		}
		return fmt.Errorf("pglocal: pg_ctl stop -m %s -D %s: %w: %s", mode, s.pgData, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ensureDatabase creates Database when missing.
func (s *Server) ensureDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pglocal: connecting to the new server: %w; last lines of %s:\n%s", err, s.logPath, s.logTail(0, 20))
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{Database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return fmt.Errorf("pglocal: creating database %s: %w", Database, err)
	}
	s.log.Info("pglocal: database created", "database", Database)
	return nil
}

// command prepares a PostgreSQL program run as the server account, with a
// clean environment: PG* variables (PGDATA, PGPORT, PGOPTIONS...) would
// change what pg_ctl and initdb do.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin.path(name), args...)
	cmd.Dir = "/" // the server account may not be able to enter our working directory
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "LC_ALL=C")
	cmd.SysProcAttr = s.runAs.sysProcAttr()
	return cmd
}

func (s *Server) rotateLog() {
	if st, err := os.Stat(s.logPath); err == nil && st.Size() > maxLogSize {
		_ = os.Rename(s.logPath, s.logPath+".1")
	}
}

func (s *Server) appendLog(what string, out []byte) {
	f, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	_, _ = fmt.Fprintf(f, "--- pglocal: %s output (%s) ---\n%s", what, time.Now().Format(time.RFC3339), out)
}

// logTail returns the last n lines of the log written after offset.
func (s *Server) logTail(offset int64, n int) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "(log: " + err.Error() + ")"
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return tail(b, n)
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

func timeoutSecs(ctx context.Context, def int) string {
	if dl, ok := ctx.Deadline(); ok {
		secs := int(math.Ceil(time.Until(dl).Seconds()))
		return strconv.Itoa(max(secs, 1))
	}
	return strconv.Itoa(def)
}

func readPassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("pglocal: reading the superuser password: %w (without it the existing cluster cannot be used; remove its pgdata directory to start empty)", err)
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" {
		return "", fmt.Errorf("pglocal: %s is empty", path)
	}
	return pw, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pglocal: picking a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}
