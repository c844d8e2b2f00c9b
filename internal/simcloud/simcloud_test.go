package simcloud

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/mini-vnfm/mini-vnfm/internal/deps"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv(testhosts.RequiredEnv) == "1" {
			t.Fatal("the embedded cloud's hosts need root")
		}
		t.Skip("the embedded cloud's hosts need root (network namespaces)")
	}
}

// The cloud brings an Ansible server that can run kubespray's playbooks, and
// finds nothing missing on a machine that has every package of the list.
func TestAnsibleServerAndHostCheck(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Listen: "127.0.0.1:0", Hosts: "on", Prefix: "sctans", StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	a, err := c.Ansible()
	if err != nil {
		t.Fatal(err)
	}
	if a.Address != "10.77.0.5" || a.User != "ansible" || a.Password == "" || a.KubesprayRoot != "/opt/kubespray" || a.Inventories != "/home/ansible/inventories" {
		t.Fatalf("Ansible server %+v", a)
	}
	h := c.Sim.Host(AnsibleServerName)
	if h == nil {
		t.Fatal("no host for the Ansible server")
	}
	out, err := h.Exec(ctx, "sh", "-c", "cd /opt/kubespray && ansible-playbook --syntax-check -i localhost, cluster.yml && stat -c %U /home/ansible/inventories")
	if err != nil || !strings.Contains(out, "ansible\n") {
		t.Fatalf("kubespray tree in the Ansible server: %v\n%s", err, out)
	}
	// Software in the hosts (a cluster's Kuryr controller) reaches the
	// simulator's Keystone on the private network's gateway.
	if !strings.HasPrefix(c.HostURL, "http://10.77.0.1:") {
		t.Errorf("HostURL %q", c.HostURL)
	}
	if out, err := h.Exec(ctx, "python3", "-c", "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).status)", c.HostURL+"/v3"); err != nil || strings.TrimSpace(out) != "200" {
		t.Errorf("GET %s/v3 from a host: %v %s", c.HostURL, err, out)
	}
	// It is the catalog's internal identity endpoint.
	p, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: c.AuthURL, Username: c.User, Password: c.Password,
		DomainName: "Default", TenantName: c.Project})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := openstack.NewIdentityV3(p, gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityInternal}); err != nil || !strings.HasPrefix(id.Endpoint, c.HostURL+"/v3") {
		t.Errorf("internal identity endpoint %v %v, want %s/v3", id, err, c.HostURL)
	}
	if m := c.MissingPackages(); len(m) != 0 {
		t.Fatalf("this machine has every package of the list (see .ci/run), yet the hosts lack %v", deps.Names(m))
	}
	if !strings.Contains(c.Summary(), "Ansible server 10.77.0.5 (user ansible)") {
		t.Errorf("summary: %s", c.Summary())
	}
}

// A program the hosts lack is reported at start with what it breaks and the
// command that installs it; once it appears on the machine (here: a file in
// the machine's /opt, a lower layer of every host) and the package database
// changes, the running hosts see it and the report clears, without a restart.
func TestMissingPackageReportedThenInstalledWhileRunning(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("/opt", "simcloud-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	prog := filepath.Join(dir, "bin", "late-tool")
	db := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(db, []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkgs := []deps.Package{{Name: "sudo", Program: "sudo", Needs: []string{"kubeadm-single"}, Why: "root through sudo"},
		{Name: "late-tool", Program: prog, Needs: []string{"kubespray"}, Why: "installed later"}}
	c, err := Start(ctx, Options{Listen: "127.0.0.1:0", Hosts: "on", Prefix: "sctlate", StateDir: filepath.Join(t.TempDir(), "state"),
		NoAnsibleServer: true, Packages: pkgs, PackageDB: db, PackagePoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	// Without the Ansible server there is no host yet: boot one, as a
	// cluster would, and look the program up in it before it exists.
	h, err := c.Network.AddHost(ctx, testhosts.HostSpec{Name: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Exec(ctx, "test", "-x", prog); err == nil {
		t.Fatal("the program exists before it was installed")
	}
	c.checkHosts(ctx)
	m := c.MissingPackages()
	if len(m) != 1 || m[0].Name != "late-tool" {
		t.Fatalf("missing %v, want late-tool", deps.Names(m))
	}
	r := deps.Report(m, true)
	if !strings.Contains(r, "late-tool") || !strings.Contains(r, "needed by kubespray") || !strings.Contains(r, "apt-get install -y --no-install-recommends late-tool") {
		t.Fatalf("report:\n%s", r)
	}
	// "apt-get install": the file appears in the lower layer, dpkg's status changes.
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho late\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Second)
	_ = os.Chtimes(db, future, future)
	deadline := time.Now().Add(10 * time.Second)
	for len(c.MissingPackages()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still missing after the install: %v", deps.Names(c.MissingPackages()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := h.Exec(ctx, prog); err != nil || strings.TrimSpace(out) != "late" {
		t.Fatalf("the running host cannot run the program installed after it booted: %v %q", err, out)
	}
}

// A cloud keeps its endpoint and its state across restarts: the port picked
// for 127.0.0.1:0 comes back, and so do the networks (records-only hosts
// here, so this runs without root).
func TestEndpointAndStateSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c, err := Start(ctx, Options{Listen: "127.0.0.1:0", Hosts: "off", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	url := c.URL
	net0 := c.Sim.NetworkID("net0")
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c, err = Start(ctx, Options{Listen: "127.0.0.1:0", Hosts: "off", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if c.URL != url {
		t.Fatalf("endpoint %s after a restart, was %s", c.URL, url)
	}
	if net0 == "" || c.Sim.NetworkID("net0") != net0 {
		t.Fatalf("net0 (%s) is gone after a restart", net0)
	}
}

// The VNFM's outbound dialer reaches an address of the hosts' network
// inside the cloud (where a built cluster's API server listens), and hands
// every other address to the next dialer: nothing for the hosts goes
// through this machine's own routes.
func TestOutboundDialReachesHostsInside(t *testing.T) {
	needRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := testhosts.NewNetwork(ctx, testhosts.Options{Prefix: "sctdial", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	inside, err := n.Listen(ctx, "tcp", net.JoinHostPort(n.Gateway().String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	go func() {
		for {
			c, err := inside.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("inside"))
			c.Close()
		}
	}()
	var handedOn []string
	next := func(_ context.Context, _, addr string) (net.Conn, error) {
		handedOn = append(handedOn, addr)
		return nil, errors.New("refused by the test")
	}
	dial := (&Cloud{Network: n}).OutboundDial(next)
	c, err := dial(ctx, "tcp", inside.Addr().String())
	if err != nil {
		t.Fatalf("dialling %s on the hosts' network: %v", inside.Addr(), err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "inside" || len(handedOn) != 0 {
		t.Fatalf("dialling %s: read %q, handed on %v; want the listener inside the cloud", inside.Addr(), b, handedOn)
	}
	for _, addr := range []string{"127.0.0.1:9", "192.0.2.7:443", "[::1]:9"} {
		if _, err := dial(ctx, "tcp", addr); err == nil || len(handedOn) == 0 || handedOn[len(handedOn)-1] != addr {
			t.Errorf("dialling %s: %v, handed on %v; want it handed to the next dialer", addr, err, handedOn)
		}
	}
	if d := (&Cloud{}).OutboundDial(next); d == nil {
		t.Error("a cloud without hosts has no outbound dialer")
	} else if _, err := d(ctx, "tcp", "10.77.0.2:6443"); err == nil || handedOn[len(handedOn)-1] != "10.77.0.2:6443" {
		t.Errorf("a cloud without hosts: %v, handed on %v; want the next dialer", err, handedOn)
	}
}
