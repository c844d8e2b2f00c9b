package ossim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"
	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

const twoServers = `
heat_template_version: 2018-08-31
parameters:
  net: {type: string, default: net0}
resources:
  vm1_CP:
    type: OS::Neutron::Port
    properties: {network: {get_param: net}, fixed_ips: [{ip_address: 10.77.0.21}]}
  vm1:
    type: OS::Nova::Server
    properties:
      name: vm1
      flavor: m1.small
      image: debian-12
      networks: [{port: {get_resource: vm1_CP}}]
  vm2:
    type: OS::Nova::Server
    properties:
      name: VM_Two
      flavor: m1.small
      image: debian-12
      networks: [{network: {get_param: net}}]
      user_data_format: RAW
      user_data: |
        #cloud-config
        users:
          - name: ops
            sudo: ALL=(ALL) NOPASSWD:ALL
            plain_text_passwd: opspass
            lock_passwd: false
        ssh_pwauth: true
outputs:
  ip2: {value: {get_attr: [vm2, first_address]}}
`

// hostEnv is a simulator whose servers are real hosts.
func hostEnv(t *testing.T, prefix string) (*env, *testhosts.Network) {
	t.Helper()
	hn := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: prefix, Subnet: "10.77.0.0/24"})
	e := newEnv(t, ossim.Options{Hosts: hn, Latency: 5 * time.Millisecond, Logf: t.Logf})
	return e, hn
}

// login checks that a server is a real host: password login through the
// private network, hostname, sudo, and the host key as published in the
// console log.
func login(t *testing.T, e *env, hn *testhosts.Network, serverID, ip, user, pass, hostname string) ssh.PublicKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen ssh.PublicKey
	c, err := hn.SSH(ctx, ip+":22", testhosts.PasswordConfig(user, pass, &seen))
	if err != nil {
		t.Fatalf("ssh %s@%s: %v", user, ip, err)
	}
	defer c.Close()
	if out, err := testhosts.Run(c, "hostname"); err != nil || strings.TrimSpace(out) != hostname {
		t.Errorf("hostname on %s = %q %v, want %q", ip, out, err, hostname)
	}
	if out, err := testhosts.Run(c, "sudo -n id -u"); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("sudo id -u on %s = %q %v", ip, out, err)
	}
	console, err := servers.ShowConsoleOutput(ctx, e.nova, serverID, servers.ShowConsoleOutputOpts{}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	fps, _ := ossim.ConsoleHostKeys(console)
	if !slices.Contains(fps, ssh.FingerprintSHA256(seen)) {
		t.Errorf("host key %s of %s is not in the console log %v", ssh.FingerprintSHA256(seen), ip, fps)
	}
	return seen
}

func serverIP(t *testing.T, e *env, id string) string {
	t.Helper()
	sv, err := servers.Get(context.Background(), e.nova, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return sv.Addresses["net0"].([]any)[0].(map[string]any)["addr"].(string)
}

func netnsCount(prefix string) int {
	ents, _ := os.ReadDir("/run/netns")
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"-") && e.Name() != prefix+"-ctl" {
			n++
		}
	}
	return n
}

func TestHostsTwoServers(t *testing.T) {
	e, hn := hostEnv(t, "osst")
	ctx := context.Background()
	t0 := time.Now()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "hosts2", Template: twoServers}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	e.wait("hosts2", cs.ID, "CREATE_COMPLETE")
	t.Logf("stack with 2 real servers up in %v", time.Since(t0))
	rs := e.resources("hosts2", cs.ID, 0)
	vm1, vm2 := find(rs, "vm1"), find(rs, "vm2")
	if ip := serverIP(t, e, vm1.PhysicalID); ip != "10.77.0.21" {
		t.Errorf("vm1 ip %s", ip)
	}
	login(t, e, hn, vm1.PhysicalID, "10.77.0.21", "ubuntu", "ubuntu", "vm1")
	ip2 := serverIP(t, e, vm2.PhysicalID)
	login(t, e, hn, vm2.PhysicalID, ip2, "ops", "opspass", "vm-two")
	// user_data named its users, so there is no default user on vm2.
	if _, err := hn.SSH(ctx, ip2+":22", testhosts.PasswordConfig("ubuntu", "ubuntu", nil)); err == nil {
		t.Error("default user exists although user_data lists users")
	}
	if netnsCount("osst") != 2 {
		t.Errorf("host namespaces: %d", netnsCount("osst"))
	}
	// Admin endpoint: exec on a server's host.
	resp, err := httpPostJSON(e.srv.URL+"/_sim/servers/vm1/exec", `{"command": ["cat", "/etc/hostname"]}`)
	if err != nil || !strings.Contains(resp, `"output":"vm1\n"`) || !strings.Contains(resp, `"exit_code":0`) {
		t.Errorf("admin exec: %s %v", resp, err)
	}

	if err := stacks.Delete(ctx, e.heat, "hosts2", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("hosts2", cs.ID, "DELETE_COMPLETE")
	if n := netnsCount("osst"); n != 0 {
		t.Errorf("host namespaces after stack delete: %d", n)
	}
	if len(hn.Hosts()) != 0 {
		t.Errorf("hosts after delete: %v", hn.Hosts())
	}
}

func TestHostsTackerHealAndScale(t *testing.T) {
	e, hn := hostEnv(t, "ossh")
	ctx := context.Background()
	name := "vnflcm_hosts"
	top, files := readTestdata(t, "tacker")
	t0 := time.Now()
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: name, Template: top, Files: files,
		Params: map[string]any{"nfv": nfv(1, "net0"), "worker_instance_desired_capacity": 2, "login_password": "w0rker"}}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	id := cs.ID
	e.wait(name, id, "CREATE_COMPLETE")
	t.Logf("Tacker-style stack (3 real servers) up in %v", time.Since(t0))
	all := e.resources(name, id, 2)
	var master stackresources.Resource
	var workers []stackresources.Resource
	for _, r := range byType(all, "OS::Nova::Server") {
		if r.Name == "masterNode" {
			master = r
		} else {
			workers = append(workers, r)
		}
	}
	if len(workers) != 2 {
		t.Fatalf("workers %d", len(workers))
	}
	// Workers: cloud-config users, chpasswd from a parameter, write_files, runcmd.
	wip := serverIP(t, e, workers[0].PhysicalID)
	login(t, e, hn, workers[0].PhysicalID, wip, "ubuntu", "w0rker", "worker-ubuntu-20-04")
	login(t, e, hn, workers[0].PhysicalID, wip, "kube", "kubepass", "worker-ubuntu-20-04")
	h := e.sim.Host(workers[0].PhysicalID)
	if out, err := h.Exec(ctx, "cat", "/etc/worker-marker", "/var/tmp/runcmd-marker"); err != nil || out != "written by cloud-init\nruncmd-ran\n" {
		t.Errorf("cloud-init files: %q %v", out, err)
	}

	// Heal the master: new server id, same address, new host key, reachable.
	mip := serverIP(t, e, master.PhysicalID)
	oldKey := login(t, e, hn, master.PhysicalID, mip, "ubuntu", "ubuntu", "masternode")
	if _, err := e.sim.Host(master.PhysicalID).Exec(ctx, "touch", "/etc/before-heal"); err != nil {
		t.Fatal(err)
	}
	if err := stackresources.MarkUnhealthy(ctx, e.heat, stackNameOf(master), stackIDOf(master), "masterNode",
		stackresources.MarkUnhealthyOpts{MarkUnhealthy: true, ResourceStatusReason: "Healing"}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	t.Logf("heal of one real server in %v", time.Since(t0))
	r, err := stackresources.Get(ctx, e.heat, stackNameOf(master), stackIDOf(master), "masterNode").Extract()
	if err != nil || r.PhysicalID == master.PhysicalID {
		t.Fatalf("healed resource %+v %v", r, err)
	}
	if ip := serverIP(t, e, r.PhysicalID); ip != mip {
		t.Fatalf("healed server at %s, was %s", ip, mip)
	}
	newKey := login(t, e, hn, r.PhysicalID, mip, "ubuntu", "ubuntu", "masternode")
	if ssh.FingerprintSHA256(newKey) == ssh.FingerprintSHA256(oldKey) {
		t.Error("host key unchanged after heal")
	}
	if _, err := e.sim.Host(r.PhysicalID).Exec(ctx, "test", "-e", "/etc/before-heal"); err == nil {
		t.Error("healed server kept the old filesystem")
	}

	// Scale in to 1 worker: the oldest worker's host goes away.
	if err := stacks.UpdatePatch(ctx, e.heat, name, id, rawPatch{"worker_instance_desired_capacity": 1}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "UPDATE_COMPLETE")
	if n := netnsCount("ossh"); n != 2 {
		t.Errorf("hosts after scale in: %d, want 2", n)
	}
	if err := stacks.Delete(ctx, e.heat, name, id).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait(name, id, "DELETE_COMPLETE")
	if n := netnsCount("ossh"); n != 0 {
		t.Errorf("hosts after delete: %d", n)
	}
}

func TestHostsFloatingIPAndReboot(t *testing.T) {
	e, hn := hostEnv(t, "ossf")
	ctx := context.Background()
	tmpl := `
heat_template_version: 2018-08-31
resources:
  cp:
    type: OS::Neutron::Port
    properties: {network: net0}
  vm:
    type: OS::Nova::Server
    properties: {name: fipvm, flavor: m1.tiny, image: x, networks: [{port: {get_resource: cp}}]}
  fip:
    type: OS::Neutron::FloatingIP
    properties: {floating_network: public, port_id: {get_resource: cp}}
outputs:
  fip: {value: {get_attr: [fip, floating_ip_address]}}
`
	cs, err := stacks.Create(ctx, e.heat, rawCreate{Name: "fip", Template: tmpl}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	st := e.wait("fip", cs.ID, "CREATE_COMPLETE")
	fip := fmt.Sprint(st.Outputs[0]["output_value"])
	if !strings.HasPrefix(fip, "10.77.100.") {
		t.Fatalf("floating ip %s", fip)
	}
	vm := find(e.resources("fip", cs.ID, 0), "vm")
	login(t, e, hn, vm.PhysicalID, fip, "ubuntu", "ubuntu", "fipvm")
	sv, _ := servers.Get(ctx, e.nova, vm.PhysicalID).Extract()
	if l := sv.Addresses["net0"].([]any); len(l) != 2 || l[1].(map[string]any)["OS-EXT-IPS:type"] != "floating" {
		t.Errorf("addresses: %v", sv.Addresses)
	}
	// Reboot through Nova: same host key, new boot.
	pid := e.sim.Host(vm.PhysicalID).PID1()
	if err := servers.Reboot(ctx, e.nova, vm.PhysicalID, servers.RebootOpts{Type: servers.SoftReboot}).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		sv, _ = servers.Get(ctx, e.nova, vm.PhysicalID).Extract()
		if sv.Status == "ACTIVE" && e.sim.Host(vm.PhysicalID).PID1() != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reboot: %s", sv.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	login(t, e, hn, vm.PhysicalID, fip, "ubuntu", "ubuntu", "fipvm")
	if err := stacks.Delete(ctx, e.heat, "fip", cs.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	e.wait("fip", cs.ID, "DELETE_COMPLETE")
	out, _ := exec.Command("ip", "-n", hn.CtlNamespace(), "route").CombinedOutput()
	if strings.Contains(string(out), fip) {
		t.Errorf("floating ip route left in ctl: %s", out)
	}
}
