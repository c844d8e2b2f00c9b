// Command openstack-sim runs the OpenStack simulator (internal/ossim):
// Keystone, Heat, Nova and Neutron on one loopback listener, optionally with
// servers that are real SSH hosts in network namespaces.
//
//	openstack-sim serve [--listen 127.0.0.1:5000] [--hosts] [--prefix ossim] [--latency 100ms] ...
//	openstack-sim hosts list|exec NAME CMD...|ssh NAME [USER]
//	openstack-sim faults [show|set JSON|clear]
//	openstack-sim cleanup [--prefix ossim]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

const usage = `openstack-sim: an OpenStack (Keystone, Heat, Nova, Neutron) simulator for tests and demos

usage:
  openstack-sim serve [flags]            run the simulator (see 'openstack-sim serve -h')
  openstack-sim hosts list               servers of a running simulator and their test hosts
  openstack-sim hosts exec NAME CMD...   run CMD as root in a server's host (NAME: server name, id, hostname or IP)
  openstack-sim hosts ssh NAME [USER]    ssh into a server from the private network (password login)
  openstack-sim faults [show]            show fault injection settings
  openstack-sim faults set JSON          replace them, e.g. '{"fail_resources":[{"type":"OS::Nova::Server","times":1}]}'
  openstack-sim faults clear             remove all faults
  openstack-sim cleanup [--prefix P]     remove test hosts and namespaces a crashed simulator left behind

Client commands talk to http://127.0.0.1:5000 unless --url or $OSSIM_URL says otherwise.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = serve(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
	case "hosts":
		err = hosts(os.Args[2:])
	case "faults":
		err = faults(os.Args[2:])
	case "cleanup":
		err = cleanup(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "openstack-sim: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	var ee exitError
	if errors.As(err, &ee) {
		os.Exit(int(ee))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openstack-sim:", err)
		os.Exit(1)
	}
}

// stdout is where client commands print (tests swap it).
var stdout io.Writer = os.Stdout

type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// serve runs the simulator until ctx ends. The banner (auth URL, VIM
// configuration) goes to out, the event log to logw.
func serve(ctx context.Context, args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(logw)
	listen := fs.String("listen", "127.0.0.1:5000", "loopback address to listen on")
	withHosts := fs.Bool("hosts", false, "servers become real SSH hosts in network namespaces (needs root)")
	prefix := fs.String("prefix", "ossim", "name prefix of the hosts' network namespaces")
	subnet := fs.String("subnet", "10.77.0.0/24", "CIDR of net0, the network whose servers are real hosts")
	ctlListen := fs.Bool("ctl-listen", true, "with --hosts, also listen on the gateway address inside <prefix>-ctl")
	latency := fs.Duration("latency", 100*time.Millisecond, "time a server takes from BUILD to ACTIVE")
	user := fs.String("user", "admin", "Keystone user")
	password := fs.String("password", "secret", "Keystone password")
	project := fs.String("project", "admin", "Keystone project")
	region := fs.String("region", "RegionOne", "region in the catalog")
	serverUser := fs.String("server-user", "ubuntu", "login of servers without users in their user_data")
	serverPassword := fs.String("server-password", "ubuntu", "password of that login")
	stateDir := fs.String("state-dir", "", "where the hosts' filesystem layers live (default $TMPDIR/testhosts-<prefix>)")
	keep := fs.Bool("keep-state", false, "keep the hosts' state directory on exit")
	quiet := fs.Bool("quiet", false, "do not log events")
	if err := fs.Parse(args); err != nil {
		return err
	}

	host, port, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", *listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--listen %q: the simulator listens on loopback addresses only", *listen)
	}
	logf := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
		}
	}

	opts := ossim.Options{
		Region: *region, Latency: *latency, ServerUser: *serverUser, ServerPassword: *serverPassword, Logf: logf,
		Accounts: []ossim.Account{{UserName: *user, Password: *password, ProjectName: *project}},
	}
	var hn *testhosts.Network
	if *withHosts {
		hn, err = testhosts.NewNetwork(ctx, testhosts.Options{Prefix: *prefix, Subnet: *subnet, StateDir: *stateDir, Keep: *keep, Logf: logf})
		if err != nil {
			return err
		}
		defer hn.Close()
		opts.Hosts = hn
	} else {
		opts.Networks = []ossim.NetworkSpec{
			{Name: "net0", CIDR: *subnet, Shared: true},
			{Name: "net1", CIDR: "10.77.1.0/24", Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true},
		}
	}
	sim, err := ossim.New(opts)
	if err != nil {
		return err
	}
	defer sim.Close()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	servers := []*http.Server{{Handler: sim, ReadHeaderTimeout: 10 * time.Second}}
	listeners := []net.Listener{ln}
	if hn != nil && *ctlListen {
		cl, err := hn.Listen(ctx, "tcp", net.JoinHostPort(hn.Gateway().String(), port))
		if err != nil {
			return fmt.Errorf("listen inside %s: %w", hn.CtlNamespace(), err)
		}
		servers = append(servers, &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, cl)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	printBanner(out, sim, ln.Addr().String(), hn, port, *ctlListen, *user, *password, *project, *region, *serverUser, *serverPassword)

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	fmt.Fprintln(logw, "openstack-sim: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(sctx)
	}
	return nil
}

func printBanner(w io.Writer, sim *ossim.Sim, addr string, hn *testhosts.Network, port string, ctlListen bool, user, password, project, region, su, sp string) {
	base := "http://" + addr
	acct := sim.Accounts()[0]
	fmt.Fprintf(w, `openstack-sim listening on %[1]s
  auth URL     %[1]s/v3   (user %[2]s, password %[3]s, project %[4]s, domain Default, region %[5]s)
  project id   %[6]s
  admin API    %[1]s/_sim  (faults, servers; see 'openstack-sim -h')
`, base, user, password, project, region, acct.ProjectID)
	if hn != nil {
		fmt.Fprintf(w, `  test hosts   servers on net0 (%[1]s) are real SSH hosts (login %[2]s / %[3]s unless user_data says otherwise)
               reach them from the private network: ip netns exec %[4]s ssh %[2]s@<server ip>
`, hn.Subnet(), su, sp, hn.CtlNamespace())
		if ctlListen {
			fmt.Fprintf(w, `               inside %[1]s the simulator is also at http://%[2]s:%[3]s/v3, so a VNFM started with
               'ip netns exec %[1]s bin/vnfm serve' reaches both the simulator and the servers
`, hn.CtlNamespace(), hn.Gateway(), port)
		}
	} else {
		fmt.Fprintln(w, "  test hosts   off (servers are records only; --hosts makes them real SSH hosts)")
	}
	fmt.Fprintf(w, `
# Tacker CLI: openstack vim register --config-file vim_config.yaml --is-default sim
# vim_config.yaml:
auth_url: '%[1]s/v3'
username: '%[2]s'
password: '%[3]s'
project_name: '%[4]s'
domain_name: 'Default'
project_domain_name: 'Default'
user_domain_name: 'Default'
cert_verify: 'False'

# curl (mini-VNFM, Tacker's /v1.0/vims):
curl -s -XPOST http://127.0.0.1:9890/v1.0/vims -H 'Content-Type: application/json' -d '{"vim": {"name": "sim", "type": "openstack", "is_default": true, "auth_url": "%[1]s/v3", "auth_cred": {"username": "%[2]s", "password": "%[3]s", "user_domain_name": "Default"}, "vim_project": {"name": "%[4]s", "project_domain_name": "Default"}}}'
`, base, user, password, project)
}

// ---- client commands ----

func clientFlags(name string, args []string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	def := os.Getenv("OSSIM_URL")
	if def == "" {
		def = "http://127.0.0.1:5000"
	}
	u := fs.String("url", def, "base URL of the running simulator")
	_ = fs.Parse(args)
	return fs, u
}

func call(method, url string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is the simulator running? %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("%s %s: %s %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil && len(b) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

func hosts(args []string) error {
	if len(args) == 0 {
		return errors.New("hosts: want list, exec NAME CMD... or ssh NAME [USER]")
	}
	fs, u := clientFlags("hosts "+args[0], args[1:])
	rest := fs.Args()
	switch args[0] {
	case "list", "ls":
		var r struct {
			Servers []ossim.ServerInfo `json:"servers"`
		}
		if err := call("GET", *u+"/_sim/servers", nil, &r); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tID\tSTATUS\tADDRESSES\tHOSTNAME\tHOST NETNS\tPID1")
		for _, s := range r.Servers {
			ns, pid := "-", "-"
			if s.NetNS != "" {
				ns, pid = s.NetNS, fmt.Sprint(s.PID1)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.ID, s.Status, strings.Join(s.Addresses, ","), s.Hostname, ns, pid)
		}
		return tw.Flush()
	case "exec":
		if len(rest) < 2 {
			return errors.New("hosts exec NAME CMD...")
		}
		var r struct {
			Output   string `json:"output"`
			ExitCode int    `json:"exit_code"`
		}
		if err := call("POST", *u+"/_sim/servers/"+rest[0]+"/exec", map[string]any{"command": rest[1:]}, &r); err != nil {
			return err
		}
		fmt.Fprint(stdout, r.Output)
		if r.ExitCode != 0 {
			return exitError(r.ExitCode)
		}
		return nil
	case "ssh":
		if len(rest) < 1 {
			return errors.New("hosts ssh NAME [USER]")
		}
		var s ossim.ServerInfo
		if err := call("GET", *u+"/_sim/servers/"+rest[0], nil, &s); err != nil {
			return err
		}
		var sum struct {
			Hosts *struct {
				CtlNetns string `json:"ctl_netns"`
			} `json:"hosts"`
		}
		if err := call("GET", *u+"/_sim", nil, &sum); err != nil {
			return err
		}
		if sum.Hosts == nil || len(s.Addresses) == 0 {
			return errors.New("the simulator runs without --hosts, or the server has no address")
		}
		user := "ubuntu"
		if len(rest) > 1 {
			user = rest[1]
		}
		cmd := exec.Command("ip", "netns", "exec", sum.Hosts.CtlNetns, "ssh", "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", user+"@"+s.Addresses[0])
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		return cmd.Run()
	}
	return fmt.Errorf("hosts: unknown subcommand %q", args[0])
}

func faults(args []string) error {
	sub := "show"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs, u := clientFlags("faults "+sub, args)
	var f ossim.Faults
	switch sub {
	case "show", "get":
		if err := call("GET", *u+"/_sim/faults", nil, &f); err != nil {
			return err
		}
	case "set":
		if fs.NArg() != 1 {
			return errors.New(`faults set '{"fail_resources":[{"name":"VDU1"}]}'`)
		}
		var in ossim.Faults
		if err := json.Unmarshal([]byte(fs.Arg(0)), &in); err != nil {
			return fmt.Errorf("faults set: %w", err)
		}
		if err := call("PUT", *u+"/_sim/faults", in, &f); err != nil {
			return err
		}
	case "clear":
		return call("DELETE", *u+"/_sim/faults", nil, nil)
	default:
		return fmt.Errorf("faults: unknown subcommand %q", sub)
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	fmt.Fprintln(stdout, string(b))
	return nil
}

func cleanup(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
	prefix := fs.String("prefix", "ossim", "namespace prefix to clean up")
	_ = fs.Parse(args)
	if os.Geteuid() != 0 {
		return testhosts.ErrNotRoot
	}
	if err := testhosts.Cleanup(context.Background(), *prefix); err != nil {
		return err
	}
	return os.RemoveAll(fmt.Sprintf("%s/testhosts-%s", os.TempDir(), *prefix))
}
