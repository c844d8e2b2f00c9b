package sol013

// A throwaway PostgreSQL cluster for the SQL tests, started once per test
// binary. It is self-contained so that it can later be replaced by the
// shared internal/pgtest helper.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgBin = "/usr/lib/postgresql/15/bin"

var (
	pgOnce sync.Once
	pgURL  string
	pgErr  error
	pgStop func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgStop != nil {
		pgStop()
	}
	os.Exit(code)
}

// testConn connects to TEST_DATABASE_URL or to a cluster started on first
// use. It skips the test when neither is available.
func testConn(t *testing.T) *pgx.Conn {
	t.Helper()
	pgOnce.Do(func() {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			pgURL = u
			return
		}
		pgURL, pgStop, pgErr = startCluster()
	})
	if pgErr != nil {
		if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
			t.Skipf("no PostgreSQL: set TEST_DATABASE_URL or install PostgreSQL 15 (%v)", err)
		}
		t.Fatalf("starting PostgreSQL: %v", pgErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func startCluster() (url string, stop func(), err error) {
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "sol013-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }

	// initdb and pg_ctl refuse to run as root.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return "", nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(pgBin, name), args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}

	port, err := freePort()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		cleanup()
		return "", nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, dir)
	if err := run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		cleanup()
		return "", nil, fmt.Errorf("%v\n%s", err, log)
	}
	stop = func() {
		_ = run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		cleanup()
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
