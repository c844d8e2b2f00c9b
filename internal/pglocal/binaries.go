package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// InstallCommand is the command that installs the PostgreSQL server binaries
// on Debian and Ubuntu.
const InstallCommand = "apt-get install -y postgresql"

// ErrBinariesNotFound is matched (errors.Is) by the *BinariesNotFoundError
// that Start returns when initdb, pg_ctl or postgres cannot be found.
var ErrBinariesNotFound = errors.New("PostgreSQL server binaries not found")

// BinariesNotFoundError tells where the PostgreSQL server binaries were
// looked for and how to install them.
type BinariesNotFoundError struct {
	// Searched lists the directories that were looked at, or the glob pattern
	// when no candidate directory exists at all.
	Searched []string
	// Detail says what was wrong, e.g. which binary is missing.
	Detail string
}

func (e *BinariesNotFoundError) Error() string {
	msg := "pglocal: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in " +
		strings.Join(e.Searched, ", ")
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg + "; install them with `" + InstallCommand + "` (as root; `make run` does it via scripts/ensure-deps.sh), " +
		"or set PG_BINDIR to the directory that contains them, or set DATABASE_URL to use an existing server"
}

// Is makes errors.Is(err, ErrBinariesNotFound) true.
func (e *BinariesNotFoundError) Is(target error) bool { return target == ErrBinariesNotFound }

// pgLibDir is where Debian installs one bin/ directory per major version.
// Tests replace it.
var pgLibDir = "/usr/lib/postgresql"

var requiredBinaries = []string{"initdb", "pg_ctl", "postgres"}

type binaries struct {
	dir     string
	version string // full version, e.g. "15.18"
	major   string // "15" (or "9.6" for pre-10 servers)
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// findBinaries locates the PostgreSQL server binaries. PG_BINDIR wins;
// otherwise the directory of wantMajor (the PG_VERSION of an existing cluster)
// is used when installed, else the newest major version.
func findBinaries(ctx context.Context, wantMajor string) (binaries, error) {
	if dir := os.Getenv("PG_BINDIR"); dir != "" {
		if missing := missingBinaries(dir); len(missing) > 0 {
			return binaries{}, &BinariesNotFoundError{
				Searched: []string{dir + " (PG_BINDIR)"},
				Detail:   "missing " + strings.Join(missing, ", "),
			}
		}
		return probeVersion(ctx, dir)
	}
	entries, err := os.ReadDir(pgLibDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return binaries{}, fmt.Errorf("pglocal: reading %s: %w", pgLibDir, err)
	}
	type candidate struct {
		dir string
		key []int
	}
	var cands []candidate
	var searched []string
	for _, e := range entries {
		key, ok := parseVersionKey(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(pgLibDir, e.Name(), "bin")
		searched = append(searched, dir)
		if len(missingBinaries(dir)) > 0 {
			continue
		}
		if wantMajor != "" && e.Name() == wantMajor {
			return probeVersion(ctx, dir)
		}
		cands = append(cands, candidate{dir, key})
	}
	if len(cands) == 0 {
		if len(searched) == 0 {
			searched = []string{filepath.Join(pgLibDir, "*", "bin")}
		}
		return binaries{}, &BinariesNotFoundError{Searched: searched}
	}
	slices.SortFunc(cands, func(a, b candidate) int { return slices.Compare(b.key, a.key) })
	return probeVersion(ctx, cands[0].dir)
}

func missingBinaries(dir string) []string {
	var missing []string
	for _, name := range requiredBinaries {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

func parseVersionKey(s string) ([]int, bool) {
	var key []int
	for part := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, false
		}
		key = append(key, n)
	}
	return key, len(key) > 0
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+(?:\.\d+)*)`)

// probeVersion runs "postgres --version" (allowed as root) so that the major
// version can be checked against an existing cluster's PG_VERSION.
func probeVersion(ctx context.Context, dir string) (binaries, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").CombinedOutput()
	if err != nil {
		return binaries{}, fmt.Errorf("pglocal: %s --version: %w: %s", filepath.Join(dir, "postgres"), err, strings.TrimSpace(string(out)))
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return binaries{}, fmt.Errorf("pglocal: cannot parse %q from %s/postgres --version", strings.TrimSpace(string(out)), dir)
	}
	b := binaries{dir: dir, version: m[1]}
	parts := strings.Split(m[1], ".")
	b.major = parts[0]
	if n, _ := strconv.Atoi(parts[0]); n < 10 && len(parts) > 1 {
		b.major += "." + parts[1] // 9.6 style majors
	}
	return b, nil
}
