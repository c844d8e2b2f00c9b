package osworld

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// goldenFormat changes whenever what the golden databases hold changes.
const goldenFormat = "3"

// bootstrap account and placeholders of the golden Keystone database: the
// identity endpoints are re-pointed at each world's port after start.
const (
	adminUser     = "admin"
	adminPassword = "secret"
	adminProject  = "admin"
	// Placeholder hosts of the golden catalog (ports nothing listens on;
	// rewriteEndpoints puts each world's ports in their place).
	keystonePlaceholder = "http://127.0.0.1:9/"
	heatPlaceholder     = "http://127.0.0.1:8/"
	cloudPlaceholder    = "http://127.0.0.1:7/"
	defaultRegion       = "RegionOne"
	goldenKeystoneDB    = "keystone.sql"
	goldenHeatDB        = "heat.sql"
)

// pgBin finds a PostgreSQL client program of the newest installed major.
func pgBin(name string) (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a > b
	})
	for _, d := range dirs {
		if p := filepath.Join(d, name); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("osworld: %s not found (install postgresql-client)", name)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// dbURL returns adminURL with the database replaced.
func dbURL(adminURL, db string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("osworld: database URL: %w", err)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// sqlalchemyURL is the oslo.db form (psycopg2) of a postgres:// URL.
func sqlalchemyURL(pgURL string) (string, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	u.Scheme = "postgresql+psycopg2"
	u.RawQuery = "" // sslmode=disable etc. are libpq's; psycopg2 passes them too, but keep the URL plain
	return u.String(), nil
}

// cacheDir is where golden dumps live: $OSWORLD_CACHE or the user cache.
func cacheDir() (string, error) {
	if d := os.Getenv("OSWORLD_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("osworld: no cache directory (set OSWORLD_CACHE): %w", err)
	}
	return filepath.Join(d, "mini-vnfm", "osworld"), nil
}

// golden returns the directory holding the golden dumps for the installed
// package versions, building it first if needed (once per machine and
// versions; concurrent test binaries wait on a lock).
func golden(ctx context.Context, adminURL string, logf func(string, ...any)) (string, error) {
	vers, err := PackageVersions()
	if err != nil {
		return "", err
	}
	keys := make([]string, 0, len(vers))
	for k, v := range vers {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(goldenFormat + "\n" + strings.Join(keys, "\n")))
	base, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, hex.EncodeToString(sum[:8]))
	if fileExists(filepath.Join(dir, "done")) {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("osworld: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(base, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("osworld: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("osworld: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if fileExists(filepath.Join(dir, "done")) {
		return dir, nil
	}
	began := time.Now()
	tmp, err := os.MkdirTemp(base, "build-")
	if err != nil {
		return "", fmt.Errorf("osworld: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := buildGolden(ctx, adminURL, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "versions"), []byte(strings.Join(keys, "\n")+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("osworld: %w", err)
	}
	// Dumps of other package versions or formats are stale now.
	if olds, err := filepath.Glob(filepath.Join(base, "[0-9a-f]*")); err == nil {
		for _, o := range olds {
			if o != dir && len(filepath.Base(o)) == 16 {
				_ = os.RemoveAll(o)
			}
		}
	}
	logf("osworld: golden Keystone and Heat databases built in %s (%s)", time.Since(began).Round(time.Millisecond), dir)
	return dir, nil
}

// buildGolden migrates and bootstraps fresh databases and dumps them into dir.
func buildGolden(ctx context.Context, adminURL, dir string) error {
	suffix := randomHex(4)
	ksDB, heatDB := "osworld_golden_keystone_"+suffix, "osworld_golden_heat_"+suffix
	if err := createDBs(ctx, adminURL, ksDB, heatDB); err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = dropDBs(c, adminURL, ksDB, heatDB)
	}()
	ksURL, _ := dbURL(adminURL, ksDB)
	heatURL, _ := dbURL(adminURL, heatDB)
	ksSQLA, err := sqlalchemyURL(ksURL)
	if err != nil {
		return err
	}
	heatSQLA, err := sqlalchemyURL(heatURL)
	if err != nil {
		return err
	}
	if err := writeKeys(dir); err != nil {
		return err
	}
	ksConf := filepath.Join(dir, "keystone.conf")
	if err := os.WriteFile(ksConf, []byte(renderKeystoneConf(keystoneConfig{DB: ksSQLA, Dir: dir})), 0o600); err != nil {
		return err
	}
	heatConf := filepath.Join(dir, "heat.conf")
	if err := os.WriteFile(heatConf, []byte(renderHeatConf(heatConfig{DB: heatSQLA, Dir: dir, KeystonePort: 9, HeatPort: 9,
		AuthKey: randomHex(16), ServicePassword: "x", DomainAdminPassword: "x", Host: "golden"})), 0o600); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		errc <- manage(ctx, "/usr/bin/heat-manage", "--config-file", heatConf, "--config-dir", filepath.Join(dir, "conf.d"), "db_sync")
	}()
	err = manage(ctx, "/usr/bin/keystone-manage", "--config-file", ksConf, "db_sync")
	if err == nil {
		err = manage(ctx, "/usr/bin/keystone-manage", "--config-file", ksConf, "bootstrap",
			"--bootstrap-username", adminUser, "--bootstrap-password", adminPassword,
			"--bootstrap-project-name", adminProject, "--bootstrap-role-name", "admin",
			"--bootstrap-service-name", "keystone", "--bootstrap-region-id", defaultRegion,
			"--bootstrap-public-url", keystonePlaceholder+"v3", "--bootstrap-internal-url", keystonePlaceholder+"v3",
			"--bootstrap-admin-url", keystonePlaceholder+"v3")
	}
	if herr := <-errc; err == nil {
		err = herr
	}
	if err != nil {
		return err
	}
	// The service accounts and the catalog, through Keystone's API.
	sec := secrets{Service: randomHex(12), DomainAdmin: randomHex(12)}
	if err := withKeystone(ctx, dir, ksConf, func(k *keystoneClient) error {
		return setupCatalog(ctx, k, sec.Service, sec.DomainAdmin)
	}); err != nil {
		return err
	}
	b, _ := json.Marshal(sec)
	if err := os.WriteFile(filepath.Join(dir, "secrets.json"), b, 0o600); err != nil {
		return err
	}
	dump, err := pgBin("pg_dump")
	if err != nil {
		return err
	}
	for db, file := range map[string]string{ksURL: goldenKeystoneDB, heatURL: goldenHeatDB} {
		out, err := exec.CommandContext(ctx, dump, "--no-owner", "--no-privileges", "-f", filepath.Join(dir, file), db).CombinedOutput()
		if err != nil {
			return fmt.Errorf("osworld: pg_dump: %w\n%s", err, out)
		}
	}
	return nil
}

// secrets are the service passwords in the golden Keystone.
type secrets struct {
	Service     string `json:"service"`      // user heat, project service
	DomainAdmin string `json:"domain_admin"` // user heat_domain_admin, domain heat
}

func readSecrets(dir string) (secrets, error) {
	var s secrets
	b, err := os.ReadFile(filepath.Join(dir, "secrets.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return s, fmt.Errorf("osworld: golden database secrets: %w", err)
	}
	return s, nil
}

// withKeystone runs Keystone on conf for fn, then stops it.
func withKeystone(ctx context.Context, dir, conf string, fn func(*keystoneClient) error) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "keystone-server.py"), []byte(keystoneServer), 0o600); err != nil {
		return err
	}
	s, err := spawn(dir, "keystone", []string{"OS_KEYSTONE_CONFIG_FILES=" + conf, fmt.Sprintf("OSWORLD_KEYSTONE_PORT=%d", port)},
		Python, filepath.Join(dir, "keystone-server.py"))
	if err != nil {
		return err
	}
	defer s.stop()
	authURL := fmt.Sprintf("http://127.0.0.1:%d/v3", port)
	if err := waitHTTP(ctx, s, authURL, 200); err != nil {
		return err
	}
	return fn(newKeystoneClient(authURL, adminUser, adminPassword, adminProject))
}

// rewriteEndpoints points the restored catalog at this world's ports.
func rewriteEndpoints(ctx context.Context, db string, ks, heat, cloud string) error {
	c, err := pgx.Connect(ctx, db)
	if err != nil {
		return fmt.Errorf("osworld: %w", err)
	}
	defer c.Close(context.Background())
	for from, to := range map[string]string{keystonePlaceholder: ks, heatPlaceholder: heat, cloudPlaceholder: cloud} {
		if _, err := c.Exec(ctx, "UPDATE endpoint SET url = $2 || substr(url, length($1) + 1) WHERE url LIKE $1 || '%'", from, to); err != nil {
			return fmt.Errorf("osworld: rewriting the catalog: %w", err)
		}
	}
	return nil
}

// manage runs a keystone-manage / heat-manage command.
func manage(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = os.TempDir()
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := startLocked(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("osworld: %s %s: %w\n%s", filepath.Base(prog), args[len(args)-1], err, tailLines(out.String(), 30))
	}
	return nil
}

// restore loads a golden dump into a new database.
func restore(ctx context.Context, dbURL, file string) error {
	psql, err := pgBin("psql")
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbURL, "-f", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("osworld: restoring %s: %w\n%s", filepath.Base(file), err, tailLines(string(out), 20))
	}
	return nil
}

func createDBs(ctx context.Context, adminURL string, names ...string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("osworld: database server: %w", err)
	}
	defer c.Close(context.Background())
	for _, n := range names {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{n}.Sanitize()); err != nil {
			return fmt.Errorf("osworld: creating database %s: %w", n, err)
		}
	}
	return nil
}

func dropDBs(ctx context.Context, adminURL string, names ...string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("osworld: database server: %w", err)
	}
	defer c.Close(context.Background())
	var errs []error
	for _, n := range names {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("osworld: dropping database %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
