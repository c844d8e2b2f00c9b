package osworld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Packages are the Debian packages a world needs.
var Packages = []string{"heat-api", "heat-engine", "keystone"}

// Python is the interpreter the services run on: Debian's, whatever python3
// comes first on PATH (a pyenv shim has no OpenStack modules).
const Python = "/usr/bin/python3"

// programs a world runs, by the package that ships them.
var programs = map[string]string{
	"/usr/bin/heat-all":        "heat-common",
	"/usr/bin/heat-manage":     "heat-common",
	"/usr/bin/keystone-manage": "keystone",
	Python:                     "python3",
}

var installMu sync.Mutex

// missing lists the packages whose programs or modules are absent.
func missing() []string {
	var out []string
	for prog := range programs {
		if _, err := os.Stat(prog); err != nil {
			out = append(out, prog)
		}
	}
	for _, p := range Packages {
		if st, _ := dpkgStatus(p); st != "install ok installed" {
			out = append(out, p)
		}
	}
	return out
}

func dpkgStatus(pkg string) (string, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", pkg).Output()
	return strings.TrimSpace(string(out)), err
}

// PackageVersions returns the installed versions of Packages (for the
// golden-database cache key and the test log).
func PackageVersions() (map[string]string, error) {
	out := map[string]string{}
	for _, p := range append([]string{"python3-keystone", "python3-heat"}, Packages...) {
		b, err := exec.Command("dpkg-query", "-W", "-f=${Version}", p).Output()
		if err != nil {
			return nil, fmt.Errorf("osworld: dpkg-query %s: %w", p, err)
		}
		out[p] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// EnsurePackages makes sure heat-api, heat-engine and keystone are
// installed. As root it installs what is missing with apt-get (services
// kept from starting by a policy-rc.d that answers 101, as Debian's
// invoke-rc.d honours); otherwise it returns an error naming the command.
func EnsurePackages(ctx context.Context) error {
	installMu.Lock()
	defer installMu.Unlock()
	if len(missing()) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("osworld: real Keystone and Heat need the Debian packages %s (missing: %s); run as root so the "+
			"harness installs them, or: sudo apt-get install --no-install-recommends %s",
			strings.Join(Packages, " "), strings.Join(missing(), ", "), strings.Join(Packages, " "))
	}
	policy := "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("osworld: %w", err)
		}
		defer os.Remove(policy)
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("osworld: apt-get %s: %w\n%s", strings.Join(args, " "), err, tailLines(out.String(), 30))
		}
		return nil
	}
	install := append([]string{"install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends"}, Packages...)
	if err := run(install...); err != nil {
		// A stale package list: update once and try again.
		if uerr := run("update", "-qq", "-o", "DPkg::Lock::Timeout=300"); uerr != nil {
			return errors.Join(err, uerr)
		}
		if err := run(install...); err != nil {
			return err
		}
	}
	if m := missing(); len(m) > 0 {
		return fmt.Errorf("osworld: after apt-get install, still missing: %s", strings.Join(m, ", "))
	}
	return nil
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
