package pglocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dataDir returns the path of a fresh data directory in a parent that the
// server account can traverse when the tests run as root (t.TempDir is mode
// 0700). Memory-backed /dev/shm, when there, makes initdb several times faster.
func dataDir(t *testing.T) string {
	t.Helper()
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 0o3) == nil {
		base = "/dev/shm"
	}
	d, err := os.MkdirTemp(base, "pglocal-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(d); err != nil {
			t.Error(err)
		}
	})
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "vnfm")
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Errorf("Stop in cleanup: %v", err)
		}
	})
	return s
}

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect %s: %v", redact(u), err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

func queryString(t *testing.T, c *pgx.Conn, sql string) string {
	t.Helper()
	var v string
	if err := c.QueryRow(context.Background(), sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func postmasterPID(t *testing.T, s *Server) int {
	t.Helper()
	pid, err := readPostmasterPID(s.PGData())
	if err != nil || pid <= 0 {
		t.Fatalf("postmaster.pid: pid %d, err %v", pid, err)
	}
	return pid
}

func TestStartRestartStop(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	ctx := context.Background()

	s := start(t, Options{DataDir: dir, Fast: true})
	if got, want := s.PGData(), filepath.Join(dir, "pgdata"); got != want {
		t.Errorf("PGData() = %q, want %q (inside DataDir)", got, want)
	}
	if s.URL("") != s.URL(Database) {
		t.Errorf("URL(\"\") = %q, want the %q database", redact(s.URL("")), Database)
	}
	c := connect(t, s.URL(""))

	t.Run("settings", func(t *testing.T) {
		for _, tc := range []struct{ sql, want string }{
			{"SELECT current_database()", Database},
			{"SELECT current_user", User},
			{"SHOW listen_addresses", "127.0.0.1"},
			{"SHOW unix_socket_directories", socketDirList(filepath.Join(dir, "pgrun"))},
			{"SHOW unix_socket_permissions", "0700"},
			{"SHOW fsync", "off"},
			{"SHOW port", strconv.Itoa(s.Port())},
		} {
			if got := queryString(t, c, tc.sql); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.sql, got, tc.want)
			}
		}
	})

	t.Run("local URL", func(t *testing.T) {
		// Over the unix socket: the server sees no client address.
		lc := connect(t, s.LocalURL(""))
		if got := queryString(t, lc, "SELECT coalesce(host(inet_client_addr()), 'unix') || ' ' || current_database()"); got != "unix "+Database {
			t.Errorf("LocalURL connection: %q, want the %s database over the unix socket", got, Database)
		}
		if got := queryString(t, c, "SELECT host(inet_client_addr())"); got != "127.0.0.1" {
			t.Errorf("URL connection from %q, want 127.0.0.1", got)
		}
	})

	t.Run("password required", func(t *testing.T) {
		for _, tc := range []struct{ name, password string }{
			{"wrong password", "wrong"},
			{"no password", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cfg, err := pgx.ParseConfig(s.URL(""))
				if err != nil {
					t.Fatal(err)
				}
				cfg.Password = tc.password
				cfg.ConnectTimeout = 10 * time.Second
				c, err := pgx.ConnectConfig(ctx, cfg)
				if err == nil {
					_ = c.Close(ctx)
					t.Fatal("connected without the right password")
				}
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "28P01" { // invalid_password
					t.Errorf("err = %v, want SQLSTATE 28P01", err)
				}
			})
		}
	})

	t.Run("files", func(t *testing.T) {
		for _, name := range []string{stateFile, lockFile, logFile, passwordFile} {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if st.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %v, want no group/other access", name, st.Mode())
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, logFile)); !strings.Contains(string(b), "database system is ready") {
			t.Errorf("server log %s does not contain the server's start message", filepath.Join(dir, logFile))
		}
	})

	t.Run("second Start on the same DataDir fails", func(t *testing.T) {
		_, err := Start(ctx, Options{DataDir: dir, Fast: true})
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second Start: err = %v, want 'in use'", err)
		}
	})

	if _, err := c.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('across restarts')"); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	_ = c.Close(ctx)
	for i := range 2 {
		if err := s.Stop(ctx); err != nil {
			t.Fatalf("Stop #%d: %v", i+1, err)
		}
	}
	if fileExists(filepath.Join(s.PGData(), "postmaster.pid")) {
		t.Error("postmaster.pid still there after Stop")
	}
	if _, err := pgx.Connect(ctx, s.URL("")); err == nil {
		t.Error("connected after Stop")
	}

	// Restart without Fast: same port, same data, durable settings back.
	s2 := start(t, Options{DataDir: dir})
	if s2.Port() != port {
		t.Errorf("restart picked port %d, want the recorded %d", s2.Port(), port)
	}
	c2 := connect(t, s2.URL(""))
	if got := queryString(t, c2, "SELECT v FROM kept"); got != "across restarts" {
		t.Errorf("after restart: %q", got)
	}
	if got := queryString(t, c2, "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %q without Fast, want on", got)
	}
}

func TestExplicitPort(t *testing.T) {
	t.Parallel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{DataDir: dataDir(t), Fast: true, Port: port})
	if s.Port() != port {
		t.Fatalf("Port() = %d, want %d", s.Port(), port)
	}
	c := connect(t, s.URL("postgres"))
	if got := queryString(t, c, "SHOW port"); got != strconv.Itoa(port) {
		t.Errorf("SHOW port = %s, want %d", got, port)
	}
}

// TestSettings: extra settings reach the server, a preloaded library
// included, and a name that could break out of its line is refused.
func TestSettings(t *testing.T) {
	t.Parallel()
	s := start(t, Options{DataDir: dataDir(t), Fast: true, Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"pg_stat_statements.track": "all",
		"work_mem":                 "7MB",
	}})
	c := connect(t, s.URL(""))
	for setting, want := range map[string]string{"work_mem": "7MB", "shared_preload_libraries": "pg_stat_statements",
		"pg_stat_statements.track": "all"} {
		if got := queryString(t, c, "SHOW "+setting); got != want {
			t.Errorf("SHOW %s = %q, want %q", setting, got, want)
		}
	}
	if _, err := c.Exec(context.Background(), "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, c, "SELECT count(*)::text FROM pg_stat_statements WHERE query LIKE 'CREATE EXTENSION%'"); got != "1" {
		t.Errorf("pg_stat_statements rows for the CREATE EXTENSION = %s, want 1", got)
	}
	for _, bad := range []string{"work_mem = 1\nfsync", "", "a-b", "a.b.c"} {
		_, err := Start(context.Background(), Options{DataDir: dataDir(t), Fast: true, Settings: map[string]string{bad: "1"}})
		if err == nil || !strings.Contains(err.Error(), "invalid setting name") {
			t.Errorf("setting %q: err %v, want invalid setting name", bad, err)
		}
	}
}

func TestStartErrorIncludesLogTail(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := dataDir(t)
	// An explicit port is not replaced by another one when taken.
	s, err := Start(context.Background(), Options{DataDir: dir, Fast: true, Port: port})
	if err == nil {
		_ = s.Stop(context.Background())
		t.Fatalf("Start on a taken port %d succeeded", port)
	}
	t.Logf("error:\n%v", err)
	for _, want := range []string{"could not bind", filepath.Join(dir, logFile), "pg_ctl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if left := processesIn(filepath.Join(dir, "pgdata")); len(left) > 0 {
		t.Errorf("server processes left after the failed start: %v", left)
	}
}

func TestRecordedPortTakenPicksAnother(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	s := start(t, Options{DataDir: dir, Fast: true})
	port := s.Port()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Occupy the recorded port.
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot occupy port %d: %v", port, err)
	}
	defer l.Close()
	s2 := start(t, Options{DataDir: dir, Fast: true})
	if s2.Port() == port {
		t.Fatalf("reused port %d although it was taken", port)
	}
	connect(t, s2.URL(""))
}

func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, s *Server)
	}{
		{
			// kill -9 of the postmaster: its backends linger briefly and
			// postmaster.pid stays behind.
			name: "postmaster killed",
			crash: func(t *testing.T, s *Server) {
				pid := postmasterPID(t, s)
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				s.abandon()
			},
		},
		{
			// kill -9 of the owning process (vnfm): the server, detached by
			// pg_ctl, goes on running.
			name:  "owner killed, server still running",
			crash: func(t *testing.T, s *Server) { s.abandon() },
		},
		{
			// A reboot later the PID in postmaster.pid belongs to another
			// process; PostgreSQL alone would refuse to start.
			name: "stale pid file naming a live unrelated process",
			crash: func(t *testing.T, s *Server) {
				if err := s.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				other := exec.Command("sleep", "60")
				if err := other.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
				content := fmt.Sprintf("%d\n%s\n0\n%d\n", other.Process.Pid, s.PGData(), s.Port())
				if err := os.WriteFile(filepath.Join(s.PGData(), "postmaster.pid"), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// A killed postmaster that nobody reaps (container without a
			// real init) keeps its PID as a zombie, in postmaster.pid and
			// in the socket lock file.
			name: "pid and socket lock files naming a zombie",
			crash: func(t *testing.T, s *Server) {
				if err := s.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				z := exec.Command("true")
				if err := z.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = z.Wait() })
				pid := z.Process.Pid
				deadline := time.Now().Add(10 * time.Second)
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) || !exists(pid) {
					t.Fatalf("pid %d: alive %v exists %v, want a zombie", pid, alive(pid), exists(pid))
				}
				files := map[string]string{
					filepath.Join(s.PGData(), "postmaster.pid"):                             fmt.Sprintf("%d\n%s\n", pid, s.PGData()),
					filepath.Join(s.SocketDir(), fmt.Sprintf(".s.PGSQL.%d.lock", s.Port())): fmt.Sprintf("%d\n%s\n", pid, s.PGData()),
				}
				for f, content := range files {
					if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := dataDir(t)
			s := start(t, Options{DataDir: dir, Fast: true})
			c := connect(t, s.URL(""))
			// Fast sets synchronous_commit=off, which may lose the last
			// 200 ms of commits in a crash; this test wants them durable.
			if _, err := c.Exec(ctx, "SET synchronous_commit = on; CREATE TABLE t (v int); INSERT INTO t VALUES (42)"); err != nil {
				t.Fatal(err)
			}
			oldPID := postmasterPID(t, s)

			tc.crash(t, s)

			s2 := start(t, Options{DataDir: dir, Fast: true})
			if pid := postmasterPID(t, s2); pid == oldPID {
				t.Errorf("postmaster pid %d unchanged: the previous server was adopted, not restarted", pid)
			}
			if alive(oldPID) && runsIn(oldPID, s2.resolvedPGData()) {
				t.Errorf("old postmaster %d still runs", oldPID)
			}
			c2 := connect(t, s2.URL(""))
			if got := queryString(t, c2, "SELECT v::text FROM t"); got != "42" {
				t.Errorf("data after recovery = %q, want 42", got)
			}
			if err := s2.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if left := processesIn(s2.resolvedPGData()); len(left) > 0 {
				t.Errorf("PostgreSQL processes left after Stop: %v", left)
			}
		})
	}
}

func TestBinariesNotFound(t *testing.T) {
	// Not parallel: changes the environment and pgLibDir.
	emptyLib := t.TempDir()
	partial := t.TempDir()
	if err := os.WriteFile(filepath.Join(partial, "pg_ctl"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		bindir     string
		libDir     string
		wantInMsg  []string
		wantSearch string
	}{
		{"PG_BINDIR does not exist", "/nonexistent/pg/bin", "", []string{"/nonexistent/pg/bin (PG_BINDIR)", "missing initdb, pg_ctl, postgres"}, "/nonexistent/pg/bin (PG_BINDIR)"},
		{"PG_BINDIR lacks binaries", partial, "", []string{"missing initdb, postgres"}, partial + " (PG_BINDIR)"},
		{"no /usr/lib/postgresql/*/bin", "", emptyLib, []string{filepath.Join(emptyLib, "*", "bin")}, filepath.Join(emptyLib, "*", "bin")},
		{"no lib dir at all", "", "/nonexistent/usr/lib/postgresql", nil, "/nonexistent/usr/lib/postgresql/*/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PG_BINDIR", tc.bindir)
			if tc.libDir != "" {
				old := pgLibDir
				pgLibDir = tc.libDir
				t.Cleanup(func() { pgLibDir = old })
			}
			dir := dataDir(t)
			s, err := Start(context.Background(), Options{DataDir: dir, Fast: true})
			if err == nil {
				_ = s.Stop(context.Background())
				t.Fatal("Start succeeded without binaries")
			}
			if !errors.Is(err, ErrBinariesNotFound) {
				t.Errorf("errors.Is(%v, ErrBinariesNotFound) = false", err)
			}
			var bnf *BinariesNotFoundError
			if !errors.As(err, &bnf) {
				t.Fatalf("error %T is not a *BinariesNotFoundError", err)
			}
			if len(bnf.Searched) != 1 || bnf.Searched[0] != tc.wantSearch {
				t.Errorf("Searched = %q, want [%q]", bnf.Searched, tc.wantSearch)
			}
			for _, want := range append(tc.wantInMsg, "apt-get install -y postgresql", "PG_BINDIR") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			// The failed Start must release the data directory.
			if err := tryLock(filepath.Join(dir, lockFile)); err != nil {
				t.Errorf("lock still held after failed Start: %v", err)
			}
		})
	}
}

func tryLock(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// fakePG creates <lib>/<name>/bin with initdb, pg_ctl and a postgres that
// prints version.
func fakePG(t *testing.T, lib, name, version string) {
	t.Helper()
	bin := filepath.Join(lib, name, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range requiredBinaries {
		script := "#!/bin/sh\nexit 0\n"
		if b == "postgres" {
			script = "#!/bin/sh\necho 'postgres (PostgreSQL) " + version + "'\n"
		}
		if err := os.WriteFile(filepath.Join(bin, b), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindBinaries(t *testing.T) {
	lib := t.TempDir()
	fakePG(t, lib, "9.6", "9.6.24")
	fakePG(t, lib, "14", "14.11 (Debian 14.11-1)")
	fakePG(t, lib, "15", "15.18 (Debian 15.18-0+deb12u1)")
	if err := os.MkdirAll(filepath.Join(lib, "16", "bin"), 0o755); err != nil { // incomplete: ignored
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(lib, "notaversion", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := pgLibDir
	pgLibDir = lib
	t.Cleanup(func() { pgLibDir = old })
	t.Setenv("PG_BINDIR", "")
	for _, tc := range []struct {
		name, wantMajor, wantDir, wantVersion string
	}{
		{"newest complete version", "", "15", "15.18"},
		{"version of the existing cluster", "14", "14", "14.11"},
		{"pre-10 major", "9.6", "9.6", "9.6.24"},
		{"wanted version not installed: newest", "13", "15", "15.18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := findBinaries(context.Background(), tc.wantMajor)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(lib, tc.wantDir, "bin"); b.dir != want || b.version != tc.wantVersion || b.major != tc.wantDir {
				t.Errorf("got dir %s version %s major %s, want %s %s %s", b.dir, b.version, b.major, want, tc.wantVersion, tc.wantDir)
			}
		})
	}
}

func TestCheckTraversable(t *testing.T) {
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	other := &account{name: "nobody-test", uid: 65533, gid: 65533}
	for _, tc := range []struct {
		name    string
		mode    os.FileMode
		wantErr bool
	}{
		{"world searchable", 0o711, false},
		{"owner only", 0o700, true},
		{"group only, not our group", 0o750, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "_"))
			target := filepath.Join(d, "data")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(d, tc.mode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(d, 0o755) })
			err := checkTraversable(target, other)
			var ae *AccessError
			switch {
			case tc.wantErr && !errors.As(err, &ae):
				t.Fatalf("err = %v, want *AccessError", err)
			case tc.wantErr:
				if ae.Dir != d {
					t.Errorf("AccessError.Dir = %s, want %s", ae.Dir, d)
				}
				for _, want := range []string{d, "chmod o+x " + d, "VNFM_DATA_DIR", "nobody-test"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
			case err != nil:
				t.Fatalf("err = %v, want nil", err)
			}
		})
	}
	if err := checkTraversable("/root/anything", nil); err != nil {
		t.Errorf("non-root (nil account) must not be checked: %v", err)
	}
}

// TestUnreachableDataDirAsRoot covers a checkout under a 0700 directory such
// as /root when running as root.
func TestUnreachableDataDirAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to another account")
	}
	// Not parallel: changes sysStateDir.
	ctx := context.Background()
	sys := dataDir(t)
	if err := os.MkdirAll(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	old := sysStateDir
	sysStateDir = sys
	t.Cleanup(func() { sysStateDir = old })

	t.Run("fresh cluster goes outside DataDir", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home") // like /root: 0700
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(home, "checkout", ".vnfm")
		s := start(t, Options{DataDir: dir, Fast: true})
		if !strings.HasPrefix(s.PGData(), sys+string(filepath.Separator)) {
			t.Fatalf("PGData = %s, want it under %s", s.PGData(), sys)
		}
		st, err := s.readState()
		if err != nil || st.Root != filepath.Dir(s.PGData()) {
			t.Errorf("state = %+v, %v; want root %s recorded", st, err, filepath.Dir(s.PGData()))
		}
		if !fileExists(filepath.Join(dir, logFile)) {
			t.Errorf("log not in DataDir")
		}
		c := connect(t, s.URL(""))
		if _, err := c.Exec(ctx, "CREATE TABLE t (); "); err != nil {
			t.Fatal(err)
		}
		_ = c.Close(ctx)
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		// Even when DataDir becomes reachable, the recorded location wins.
		if err := os.Chmod(home, 0o711); err != nil {
			t.Fatal(err)
		}
		s2 := start(t, Options{DataDir: dir, Fast: true})
		if s2.PGData() != s.PGData() {
			t.Errorf("restart used %s, want recorded %s", s2.PGData(), s.PGData())
		}
		connect(t, s2.URL(""))
		root := filepath.Dir(s2.PGData())
		if err := s2.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		if fileExists(root) || fileExists(dir) {
			t.Errorf("Destroy left %s or %s behind", root, dir)
		}
	})

	t.Run("deleted DataDir starts empty", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		if err := os.Mkdir(home, 0o700); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(home, ".vnfm")
		s := start(t, Options{DataDir: dir, Fast: true})
		c := connect(t, s.URL(""))
		if _, err := c.Exec(ctx, "CREATE TABLE old_data ()"); err != nil {
			t.Fatal(err)
		}
		_ = c.Close(ctx)
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		root := filepath.Dir(s.PGData())
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		s2 := start(t, Options{DataDir: dir, Fast: true})
		t.Cleanup(func() { _ = s2.Destroy(ctx) })
		var n int
		if err := connect(t, s2.URL("")).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'old_data'").Scan(&n); err != nil || n != 0 {
			t.Errorf("new cluster has the old table (%d, %v)", n, err)
		}
		aside, _ := filepath.Glob(root + ".orphaned-*")
		if len(aside) != 1 || !fileExists(filepath.Join(aside[0], "pgdata", "PG_VERSION")) {
			t.Errorf("old cluster not kept aside: %v", aside)
		}
	})

	t.Run("existing cluster becomes unreachable", func(t *testing.T) {
		parent := dataDir(t)
		dir := filepath.Join(parent, "vnfm")
		s := start(t, Options{DataDir: dir, Fast: true})
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(parent, 0o711) })
		_, err := Start(ctx, Options{DataDir: dir, Fast: true})
		var ae *AccessError
		if !errors.As(err, &ae) {
			t.Fatalf("Start: err = %v, want *AccessError", err)
		}
		if ae.Dir != parent || !strings.Contains(err.Error(), "chmod o+x "+parent) {
			t.Errorf("error %q should name %s and the fix", err, parent)
		}
	})
}

func TestStartCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := dataDir(t)
	if s, err := Start(ctx, Options{DataDir: dir, Fast: true}); err == nil {
		_ = s.Stop(context.Background())
		t.Fatal("Start with a cancelled context succeeded")
	}
	// A later Start on the same directory works.
	s := start(t, Options{DataDir: dir, Fast: true})
	connect(t, s.URL(""))
}

func TestHelpers(t *testing.T) {
	t.Run("confString", func(t *testing.T) {
		for in, want := range map[string]string{
			"":          "''",
			"/a/b":      "'/a/b'",
			"it's":      "'it''s'",
			`back\dir`:  `'back\\dir'`,
			"/x y/sock": "'/x y/sock'",
		} {
			if got := confString(in); got != want {
				t.Errorf("confString(%q) = %s, want %s", in, got, want)
			}
		}
	})
	t.Run("socketDirList", func(t *testing.T) {
		for in, want := range map[string]string{
			"/tmp/a/pgrun":   "/tmp/a/pgrun",
			"/tmp/a b/pgrun": "/tmp/a b/pgrun",
			"/tmp/a,b/pgrun": `"/tmp/a,b/pgrun"`,
			`/tmp/a"b/pgrun`: `"/tmp/a""b/pgrun"`,
		} {
			if got := socketDirList(in); got != want {
				t.Errorf("socketDirList(%q) = %s, want %s", in, got, want)
			}
		}
	})
	t.Run("tail", func(t *testing.T) {
		for _, tc := range []struct {
			in   string
			n    int
			want string
		}{
			{"a\nb\nc\n", 2, "    b\n    c"},
			{"a\n", 5, "    a"},
		} {
			if got := tail([]byte(tc.in), tc.n); got != tc.want {
				t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
		}
	})
	t.Run("readPostmasterPID", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			content *string
			want    int
		}{
			{"no file", nil, 0},
			{"valid", ptr("1234\n/data\n"), 1234},
			{"empty", ptr(""), -1},
			{"garbage", ptr("x\n"), -1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := t.TempDir()
				if tc.content != nil {
					if err := os.WriteFile(filepath.Join(d, "postmaster.pid"), []byte(*tc.content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				got, err := readPostmasterPID(d)
				if err != nil || got != tc.want {
					t.Errorf("got %d, %v; want %d", got, err, tc.want)
				}
			})
		}
	})
	t.Run("timeoutSecs", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		if got := timeoutSecs(ctx, 60); got != "3" {
			t.Errorf("timeoutSecs(2.5s) = %s, want 3", got)
		}
		if got := timeoutSecs(context.Background(), 60); got != "60" {
			t.Errorf("timeoutSecs(no deadline) = %s, want 60", got)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestRemove(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, s *Server) // s is running
		wantErr error
	}{
		{"server left running by a dead owner", func(t *testing.T, s *Server) { s.abandon() }, nil},
		{"stopped server", func(t *testing.T, s *Server) {
			if err := s.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"running server", func(*testing.T, *Server) {}, ErrInUse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := dataDir(t)
			s := start(t, Options{DataDir: dir, Fast: true})
			pgData := s.resolvedPGData()
			tc.prepare(t, s)
			began := time.Now()
			err := Remove(ctx, dir)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Remove: err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if d := time.Since(began); d > time.Second {
					t.Errorf("Remove of a directory in use took %v, want an immediate answer", d)
				}
				connect(t, s.URL("")) // still serving
				return
			}
			if left := processesIn(pgData); len(left) > 0 {
				t.Errorf("server processes left: %v", left)
			}
			if fileExists(dir) {
				t.Errorf("%s still exists", dir)
			}
		})
	}
	t.Run("missing directory", func(t *testing.T) {
		if err := Remove(context.Background(), filepath.Join(t.TempDir(), "nope")); err != nil {
			t.Errorf("Remove(missing) = %v, want nil", err)
		}
	})
}
