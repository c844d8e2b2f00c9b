// Package cli drives the VNFM with the real Tacker command-line client from
// Debian (python3-tackerclient + python3-openstackclient): the server runs as
// a separate process (this test binary re-executed with the real server
// wiring and the in-test drivers) on a throwaway PostgreSQL database, and
// every step is an `openstack --os-auth-type none --os-endpoint URL ...`
// invocation whose output and exit code are checked.
//
// The CLI is a test dependency (.ci/run installs it). When it is missing the
// tests fail and say how to install it: a compatibility suite that skips
// proves nothing.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// roleCLI is this test binary re-executed as the server: the real server
// wiring with the in-test drivers.
var roleCLI = harness.Role("cli", func() int {
	return harness.Serve("cli-test", func(context.Context, *config.Config) (server.Options, func(), error) {
		return server.Options{Infra: lcmtest.Resolver(&lcmtest.Infra{}), Mgmt: lcmtest.Registry(&lcmtest.Mgmt{})}, nil, nil
	})
})

// InstallHint is what to run when the CLI is missing.
const InstallHint = "apt-get install -y python3-tackerclient python3-openstackclient"

func TestMain(m *testing.M) { harness.Main(m) }

// vnfm is a running server process.
type vnfm struct {
	*harness.Process
	base string
	db   string
}

// startVNFM starts a server on a fresh database; its log is shown when the
// test fails.
func startVNFM(t *testing.T) *vnfm {
	t.Helper()
	v := &vnfm{db: pgtest.NewDB(t)}
	v.Process = harness.Start(t, roleCLI, v.db, secrets.NewKey())
	v.base = v.Process.Base
	t.Cleanup(func() {
		v.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("server log:\n%s", v.Logs())
		}
	})
	return v
}

var cliChecked sync.Map // path of a working openstack binary -> true

// requireCLI fails the test (never skips) when the Tacker CLI is missing.
func requireCLI(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("openstack")
	if _, ok := cliChecked.Load(bin); ok && err == nil {
		return bin
	}
	if err != nil {
		t.Fatalf("the Tacker CLI is missing (no openstack on PATH); install it with: %s", InstallHint)
	}
	out, err := exec.Command(bin, "vim", "list", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("openstack has no Tacker commands (%v: %s); install them with: %s", err, bytes.TrimSpace(out), InstallHint)
	}
	cliChecked.Store(bin, true)
	return bin
}

// result of one CLI run.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("openstack %s -> exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// cli runs the openstack client against a server.
type cli struct {
	t    *testing.T
	bin  string
	base string
	dir  string
	env  []string
}

func newCLI(t *testing.T, base string) *cli {
	dir := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		// Stray OS_* variables change the auth path (tacker-cli.md §2.2).
		if !strings.HasPrefix(kv, "OS_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+dir) // no clouds.yaml or cache from the user
	return &cli{t: t, bin: requireCLI(t), base: base, dir: dir, env: env}
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	full := append([]string{"--os-auth-type", "none", "--os-endpoint", c.base}, args...)
	cmd := exec.CommandContext(ctx, c.bin, full...)
	cmd.Dir, cmd.Env = c.dir, c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("openstack %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("want exit 0:\n%s", r)
	}
	return r
}

// fail runs a command that must exit 1 with want in its output.
func (c *cli) fail(want string, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, want) {
		c.t.Fatalf("want exit 1 with %q:\n%s", want, r)
	}
	return r
}

func (c *cli) object(args ...string) map[string]any {
	c.t.Helper()
	r := c.ok(args...)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		c.t.Fatalf("output is not a JSON object: %v\n%s", err, r)
	}
	return m
}

func (c *cli) list(args ...string) []map[string]any {
	c.t.Helper()
	r := c.ok(args...)
	var l []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		c.t.Fatalf("output is not a JSON list: %v\n%s", err, r)
	}
	return l
}

// file writes a file into the CLI's working directory and returns its path.
func (c *cli) file(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}
