package pglocal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// ServerAccount is the OS account that runs initdb and pg_ctl when this
// process runs as root.
const ServerAccount = "postgres"

// sysStateDir holds clusters of root-run servers whose DataDir the server
// account cannot reach. Tests replace it.
var sysStateDir = "/var/lib/vnfm"

// account is the OS identity the PostgreSQL programs run as; nil means "this
// process's own identity" (not root).
type account struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
}

func (a *account) String() string {
	if a == nil {
		return "current user"
	}
	return fmt.Sprintf("%q (uid %d)", a.name, a.uid)
}

func (a *account) sysProcAttr() *syscall.SysProcAttr {
	if a == nil {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}}
}

// chown gives path to the account; a no-op when not running as root.
func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Lchown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}

func lookupAccount(u *user.User) (*account, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: uid %q of %q: %w", u.Uid, u.Username, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: gid %q of %q: %w", u.Gid, u.Username, err)
	}
	a := &account{name: u.Username, uid: uint32(uid), gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if n, err := strconv.ParseUint(id, 10, 32); err == nil {
				a.groups = append(a.groups, uint32(n))
			}
		}
	}
	return a, nil
}

// serverAccount returns the account for a root-run server: the owner of an
// existing pgdata (so that a cluster created by another user keeps working),
// else ServerAccount.
func serverAccount(pgData string) (*account, error) {
	if st, err := os.Stat(pgData); err == nil {
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok {
			if sys.Uid == 0 {
				return nil, fmt.Errorf("pglocal: %s is owned by root, but PostgreSQL cannot run as root; run `chown -R %s: %s`", pgData, ServerAccount, pgData)
			}
			u, err := user.LookupId(strconv.FormatUint(uint64(sys.Uid), 10))
			if err != nil {
				// An owner without a passwd entry: use the numeric ids.
				return &account{name: strconv.FormatUint(uint64(sys.Uid), 10), uid: sys.Uid, gid: sys.Gid}, nil
			}
			return lookupAccount(u)
		}
	}
	u, err := user.Lookup(ServerAccount)
	if err != nil {
		return nil, fmt.Errorf("pglocal: running as root, so initdb/pg_ctl must run as the unprivileged user %q, which does not exist (%v); `%s` creates it", ServerAccount, err, InstallCommand)
	}
	return lookupAccount(u)
}

// AccessError says that the server account cannot reach a directory it needs.
type AccessError struct {
	Account string      // e.g. "postgres"
	Dir     string      // the first directory that cannot be entered
	Mode    fs.FileMode // its mode
	Target  string      // the directory that had to be reached
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("pglocal: the PostgreSQL server runs as user %s (initdb/pg_ctl refuse to run as root) and cannot enter %s (mode %s) on the way to %s; "+
		"run `chmod o+x %s`, or set VNFM_DATA_DIR to a directory it can reach (e.g. /var/lib/vnfm/data), or set DATABASE_URL to use another server",
		e.Account, e.Dir, e.Mode, e.Target, e.Dir)
}

// checkTraversable returns an *AccessError when a cannot search (x bit) every
// directory from / down to and including dir. ACLs are not consulted.
func checkTraversable(dir string, a *account) error {
	if a == nil {
		return nil
	}
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		st, err := os.Stat(chain[i])
		if err != nil {
			return fmt.Errorf("pglocal: %w", err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		perm := st.Mode().Perm()
		var bit fs.FileMode = 0o001
		switch {
		case sys.Uid == a.uid:
			bit = 0o100
		case sys.Gid == a.gid || slices.Contains(a.groups, sys.Gid):
			bit = 0o010
		}
		if perm&bit == 0 {
			return &AccessError{Account: a.name, Dir: chain[i], Mode: st.Mode(), Target: dir}
		}
	}
	return nil
}

// externalRoot is where a root-run cluster lives when the server account
// cannot reach DataDir.
func externalRoot(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(sysStateDir, hex.EncodeToString(sum[:8]))
}
