// Package deps is the one list of Debian packages `make run` needs: the
// VNFM's own (the embedded PostgreSQL), the embedded cloud's hosts' (sshd,
// sudo, haproxy, keepalived, etcd, Ansible...) and the README walk-through's
// tools. scripts/ensure-deps.sh installs from the same file (packages.list)
// before anything starts; the embedded cloud checks its hosts against it
// (Check) so that what is missing is said at start, not when an operation
// fails.
package deps

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed packages.list
var listFile string

// Who needs a package, besides sample package names.
const (
	NeedVNFM  = "vnfm"  // the VNFM itself, when it runs its embedded PostgreSQL
	NeedCloud = "cloud" // every host of the embedded cloud
	NeedTools = "tools" // the README's walk-through
)

// Package is one line of the list.
type Package struct {
	Name    string
	Program string // proves the package installed
	Unit    string // machine-wide service ensure-deps leaves disabled; "" = none
	Needs   []string
	Why     string
}

// NeededBy reports whether any of who needs the package.
func (p Package) NeededBy(who ...string) bool {
	for _, w := range who {
		if slices.Contains(p.Needs, w) {
			return true
		}
	}
	return false
}

// Samples lists the sample packages that need p.
func (p Package) Samples() []string {
	var out []string
	for _, n := range p.Needs {
		if n != NeedVNFM && n != NeedCloud && n != NeedTools {
			out = append(out, n)
		}
	}
	return out
}

// List returns the packages of packages.list in file order.
func List() []Package {
	pkgs, err := Parse(listFile)
	if err != nil {
		panic(err) // the embedded list is checked by the package's tests
	}
	return pkgs
}

// Parse reads a list in the packages.list format.
func Parse(text string) ([]Package, error) {
	var out []Package
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("deps: packages.list line %d: want package, program, unit, needs and why, got %q", i+1, line)
		}
		p := Package{Name: f[0], Program: f[1], Unit: f[2], Needs: strings.Split(f[3], ","), Why: strings.Join(f[4:], " ")}
		if p.Unit == "-" {
			p.Unit = ""
		}
		out = append(out, p)
	}
	return out, nil
}

// For returns the packages that any of who needs.
func For(who ...string) []Package {
	var out []Package
	for _, p := range List() {
		if p.NeededBy(who...) {
			out = append(out, p)
		}
	}
	return out
}

// Names returns the package names.
func Names(pkgs []Package) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Name
	}
	return out
}

// InstallCommand is the command that installs pkgs on Debian or Ubuntu, with
// sudo unless asRoot.
func InstallCommand(pkgs []Package, asRoot bool) string {
	sudo := "sudo "
	if asRoot {
		sudo = ""
	}
	return fmt.Sprintf("%sapt-get update && %sapt-get install -y --no-install-recommends %s", sudo, sudo, strings.Join(Names(pkgs), " "))
}

// CheckScript is a shell script that prints the program of every package
// given as "package=program" arguments which the running system lacks, one
// "package=program" a line. It runs inside a host.
const CheckScript = `for a in "$@"; do command -v "${a#*=}" >/dev/null 2>&1 || echo "$a"; done`

// CheckArgs are CheckScript's arguments for pkgs.
func CheckArgs(pkgs []Package) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Name + "=" + p.Program
	}
	return out
}

// Missing parses CheckScript's output into the packages it names.
func Missing(pkgs []Package, output string) []Package {
	var out []Package
	for _, line := range strings.Split(output, "\n") {
		name, _, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		for _, p := range pkgs {
			if p.Name == name {
				out = append(out, p)
			}
		}
	}
	return out
}

// Report says plainly what the missing packages break and how to fix it.
func Report(missing []Package, asRoot bool) string {
	if len(missing) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the embedded cloud's hosts lack %s:\n", strings.Join(Names(missing), ", "))
	for _, p := range missing {
		who := strings.Join(p.Samples(), ", ")
		if p.NeededBy(NeedCloud) {
			who = "every host"
		}
		fmt.Fprintf(&b, "  %-15s %s (needed by %s)\n", p.Name, p.Why, who)
	}
	fmt.Fprintf(&b, "install them on this machine (the hosts share its /usr and /etc):\n  %s\n", InstallCommand(missing, asRoot))
	b.WriteString("running hosts see them within seconds, so a failed operation can then be retried; `make run` installs them itself when run as root")
	return b.String()
}
