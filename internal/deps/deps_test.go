package deps

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/samples"
)

func TestListIsWellFormed(t *testing.T) {
	known := append([]string{NeedVNFM, NeedCloud, NeedTools}, samples.Names...)
	seen := map[string]bool{}
	for _, p := range List() {
		if seen[p.Name] {
			t.Errorf("%s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Program == "" || p.Why == "" || len(p.Needs) == 0 {
			t.Errorf("%s: incomplete %+v", p.Name, p)
		}
		for _, n := range p.Needs {
			if !slices.Contains(known, n) {
				t.Errorf("%s: needed by %q, which is neither vnfm, cloud, tools nor a sample (%v)", p.Name, n, samples.Names)
			}
		}
	}
	// What the newcomer found missing, one at a time.
	for _, want := range []string{"sudo", "haproxy", "keepalived", "etcd-server", "etcd-client", "openssh-server", "iproute2", "ansible", "sshpass", "postgresql"} {
		if !seen[want] {
			t.Errorf("%s is not in the list", want)
		}
	}
	// Every sample needs something on its hosts (sudo at least).
	for _, s := range samples.Names {
		if len(For(s)) == 0 {
			t.Errorf("no package lists sample %s", s)
		}
	}
}

func TestParseRejectsShortLines(t *testing.T) {
	if _, err := Parse("sudo sudo - kubeadm-single\n"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a line without why: %v", err)
	}
	p, err := Parse("# c\n\nhaproxy haproxy haproxy a,b the load balancer\nsudo sudo - a root\n")
	if err != nil || len(p) != 2 || p[0].Unit != "haproxy" || p[1].Unit != "" || p[0].Why != "the load balancer" || !p[0].NeededBy("b") {
		t.Fatalf("parsed %+v, %v", p, err)
	}
}

// CheckScript really finds what a system lacks (here: this machine, with a
// program that cannot exist).
func TestCheckScriptAndReport(t *testing.T) {
	pkgs := []Package{{Name: "coreutils", Program: "ls", Needs: []string{NeedCloud}, Why: "ls"},
		{Name: "no-such-pkg", Program: "no-such-program-xyz", Needs: []string{"kubespray"}, Why: "nothing"}}
	out, err := exec.Command("sh", append([]string{"-c", CheckScript, "sh"}, CheckArgs(pkgs)...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	miss := Missing(pkgs, string(out))
	if len(miss) != 1 || miss[0].Name != "no-such-pkg" {
		t.Fatalf("missing %+v from %q", miss, out)
	}
	r := Report(miss, true)
	for _, want := range []string{"no-such-pkg", "needed by kubespray", "apt-get install -y --no-install-recommends no-such-pkg", "retried"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	if strings.Contains(r, "sudo ") {
		t.Errorf("report for root says sudo:\n%s", r)
	}
	if !strings.Contains(Report(miss, false), "sudo apt-get install") {
		t.Errorf("report for a user lacks sudo")
	}
	if Report(nil, true) != "" {
		t.Error("report with nothing missing")
	}
}

// The script reads the same file: its path is fixed here.
func TestScriptReadsThisList(t *testing.T) {
	b, err := os.ReadFile("../../scripts/ensure-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "internal/deps/packages.list") {
		t.Fatal("scripts/ensure-deps.sh does not read internal/deps/packages.list")
	}
}

// The README's quick start says what make run installs: every package of
// the list is named there.
func TestReadmeNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	qs := s[strings.Index(s, "## Quick start"):]
	qs = qs[:strings.Index(qs[3:], "\n## ")+3]
	for _, p := range List() {
		if !strings.Contains(qs, "`"+p.Name+"`") {
			t.Errorf("README's quick start does not say that make run installs %s (%s)", p.Name, p.Why)
		}
	}
}
