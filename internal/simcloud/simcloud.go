// Package simcloud is the cloud `make run` brings along: the OpenStack
// simulator on a loopback port, with real SSH hosts when the process may
// create network namespaces (root), else with servers that are records only.
// The VNFM reaches the hosts through Dial, which opens sockets inside the
// simulator's private namespace; the machine's own addresses and routes are
// never touched.
package simcloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// Options configure the embedded cloud.
type Options struct {
	// Listen is the simulator's loopback address (default 127.0.0.1:5000; a
	// taken port falls back to a free one).
	Listen string
	// Hosts: "auto" (default: when root), "on" (fail without root) or "off".
	Hosts string
	// Prefix names the hosts' network namespaces (default "vnfmsim").
	Prefix string
	// StateDir keeps the hosts' filesystem layers (default: a temporary directory).
	StateDir string
	// User, Password and Project of the Keystone account (defaults admin / secret / admin).
	User, Password, Project string
	Logger                  *slog.Logger
	// HostSetup runs on every host right after it boots (e.g. installing the Kubernetes stand-in).
	HostSetup func(ctx context.Context, h *testhosts.Host) error
}

// Cloud is a running embedded simulator.
type Cloud struct {
	Sim *ossim.Sim
	// URL is the simulator's base URL; the Keystone auth URL is URL + "/v3".
	URL     string
	Network *testhosts.Network // nil when the servers are records only
	// NoHostsReason says why servers are records only ("" when hosts are on).
	NoHostsReason           string
	User, Password, Project string
	srv                     *http.Server
}

// Start starts the simulator.
func Start(ctx context.Context, o Options) (*Cloud, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:5000"
	}
	if o.Prefix == "" {
		o.Prefix = "vnfmsim"
	}
	if o.User == "" {
		o.User, o.Password, o.Project = "admin", "secret", "admin"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger.With("component", "simcloud")
	c := &Cloud{User: o.User, Password: o.Password, Project: o.Project}
	opts := ossim.Options{Accounts: []ossim.Account{{UserName: o.User, Password: o.Password, ProjectName: o.Project}},
		Latency: 100 * time.Millisecond, Logf: func(f string, a ...any) { log.Debug(fmt.Sprintf(f, a...)) }}
	switch o.Hosts {
	case "off":
		c.NoHostsReason = "disabled (VNFM_SIMULATOR_HOSTS=off)"
	case "", "auto", "on":
		switch {
		case os.Geteuid() != 0:
			c.NoHostsReason = "real hosts need root (network namespaces)"
		default:
			if err := testhosts.CheckTools(); err != nil {
				c.NoHostsReason = err.Error()
				break
			}
			hn, err := testhosts.NewNetwork(ctx, testhosts.Options{Prefix: o.Prefix, StateDir: o.StateDir,
				Logf: func(f string, a ...any) { log.Debug(fmt.Sprintf(f, a...)) }})
			if err != nil {
				c.NoHostsReason = err.Error()
				break
			}
			c.Network = hn
			opts.Hosts = hn
		}
		if o.Hosts == "on" && c.Network == nil {
			return nil, fmt.Errorf("simcloud: real hosts requested but unavailable: %s", c.NoHostsReason)
		}
	default:
		return nil, fmt.Errorf("simcloud: hosts mode %q: say auto, on or off", o.Hosts)
	}
	if c.Network == nil {
		opts.Networks = []ossim.NetworkSpec{{Name: "net0", CIDR: "10.77.0.0/24", Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true}}
	}
	if o.HostSetup != nil && c.Network != nil {
		opts.HostSetup = o.HostSetup
	}
	sim, err := ossim.New(opts)
	if err != nil {
		c.closeNetwork()
		return nil, err
	}
	c.Sim = sim
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		_ = sim.Close()
		c.closeNetwork()
		return nil, fmt.Errorf("simcloud: %w", err)
	}
	c.URL = "http://" + ln.Addr().String()
	c.srv = &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("simulator stopped", "err", err)
		}
	}()
	log.Info("OpenStack simulator started", "url", c.URL, "realHosts", c.Network != nil)
	return c, nil
}

func (c *Cloud) closeNetwork() {
	if c.Network != nil {
		_ = c.Network.Close()
	}
}

// Dial connects to an address of the simulated cloud: inside the hosts'
// private network when hosts are real, else directly.
func (c *Cloud) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.Network != nil {
		return c.Network.Dial(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// VimRegistration is the "vim" member of POST /v1.0/vims registering the cloud.
func (c *Cloud) VimRegistration(name string) []byte {
	return fmt.Appendf(nil, `{"name": %q, "type": "openstack", "is_default": true, "description": "the OpenStack simulator make run brings along",
		"auth_url": %q, "vim_project": {"name": %q, "project_domain_name": "Default"},
		"auth_cred": {"username": %q, "password": %q, "user_domain_name": "Default", "cert_verify": "False"}}`,
		name, c.URL+"/v3", c.Project, c.User, c.Password)
}

// Close stops the simulator and tears the hosts down.
func (c *Cloud) Close(ctx context.Context) error {
	err := c.srv.Shutdown(ctx)
	err = errors.Join(err, c.Sim.Close())
	if c.Network != nil {
		err = errors.Join(err, c.Network.Close())
	}
	return err
}
