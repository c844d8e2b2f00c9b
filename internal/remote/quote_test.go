package remote_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// tricky are strings that must reach a command unchanged.
var tricky = []string{
	"", "plain", "with space", "a'b", "'", "''", `"`, `\`, `\'`, "$HOME", "$(touch /tmp/x)", "`id`", "a;b", "a|b",
	"a&&b", "#comment", "~", "~root", "*", "?", "[a]", "{a,b}", "a=b", "-n", "--flag=value", "new\nline", "tab\tchar",
	"a'b; touch /tmp/pwned #", "ünïcødé", "!bang", "%", "end\\", "'\"'\"'", "\x01\x7f", "trailing\n",
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "''"},
		{"abc", "abc"},
		{"/usr/local/bin/x-y_z.sh", "/usr/local/bin/x-y_z.sh"},
		{"user@host:1,2%+", "user@host:1,2%+"},
		{"a b", "'a b'"},
		{"a'b", `'a'\''b'`},
		{"a=b", "'a=b'"},
		{"$x", "'$x'"},
		{"~", "'~'"},
	} {
		if got := remote.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := remote.Command("kubeadm", "join", "--token", "a b", "x'y"); got != `kubeadm join --token 'a b' 'x'\''y'` {
		t.Errorf("Command = %s", got)
	}
}

// Every tricky string survives a real POSIX shell (dash and bash), alone,
// as an argument, and inside a nested sh -c (as sudo uses it).
func TestQuoteThroughShells(t *testing.T) {
	for _, sh := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := exec.LookPath(sh); err != nil {
			continue
		}
		for _, s := range tricky {
			cmd := remote.Command("printf", "%s", s)
			nested := "sh -c " + remote.Quote(cmd)
			for _, line := range []string{cmd, nested} {
				out, err := exec.Command(sh, "-c", line).Output()
				if err != nil || string(out) != s {
					t.Errorf("%s -c %s: got %q, %v; want %q", sh, line, out, err, s)
				}
			}
		}
	}
	// Assignment-looking words are commands, not assignments.
	out, err := exec.Command("/bin/sh", "-c", remote.Command("a=b")+" 2>&1; echo rc=$?").Output()
	if err != nil || !strings.Contains(string(out), "rc=127") {
		t.Errorf("quoted a=b ran as an assignment: %q %v", out, err)
	}
}
