// Package server wires configuration, database, LCM engine, drivers and HTTP
// API into the running VNFM. cmd/vnfm calls it; end-to-end tests call it with
// their own drivers.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/api"
	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/kubernetes"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
	"github.com/mini-vnfm/mini-vnfm/internal/notify"
	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/pglocal"
	"github.com/mini-vnfm/mini-vnfm/internal/simcloud"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers"
)

// Options are the parts that are code, not configuration.
type Options struct {
	Version string
	// Infra resolves infra drivers by VIM type (nil: the built-in OpenStack driver).
	Infra lcm.InfraResolver
	// Mgmt holds the management drivers (nil: the built-in set).
	Mgmt *mgmtdrivers.Registry
	// Observer also receives engine events (tests); metrics always do.
	Observer lcm.Observer
	// Parse reads CSARs for onboarding (nil: the built-in CSAR reader).
	Parse packages.ParseFunc
	// Ready is called with the bound address once the server accepts requests.
	Ready  func(addr string)
	Logger *slog.Logger
}

// Database returns the database URL, starting the embedded PostgreSQL when
// DATABASE_URL is unset; stop must be called on exit.
func Database(ctx context.Context, cfg *config.Config, log *slog.Logger) (url string, stop func(), err error) {
	url, _, stop, err = database(ctx, cfg, log)
	return url, stop, err
}

// database is Database that also returns the URL the server's own pool uses:
// the embedded PostgreSQL's unix socket (cheaper per query than TCP on
// loopback), DATABASE_URL as given otherwise.
func database(ctx context.Context, cfg *config.Config, log *slog.Logger) (url, local string, stop func(), err error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, cfg.DatabaseURL, func() {}, nil
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return "", "", nil, err
	}
	log.Info("DATABASE_URL is unset: starting the embedded PostgreSQL", "dataDir", dir)
	srv, err := pglocal.Start(ctx, pglocal.Options{DataDir: dir, Logger: log.With("component", "pglocal")})
	if err != nil {
		return "", "", nil, err
	}
	return srv.URL("vnfm"), srv.LocalURL("vnfm"), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil {
			log.Error("stopping embedded PostgreSQL", "err", err)
		} else {
			log.Info("embedded PostgreSQL stopped")
		}
	}, nil
}

// adminURL is the maintenance database of the server holding dbURL (where
// real Keystone and Heat create theirs).
func adminURL(dbURL string) string {
	u, err := neturl.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	u.Path = "/postgres"
	return u.String()
}

// Run serves until ctx is cancelled.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	log := o.Logger
	if log == nil {
		log = cfg.Logger()
		slog.SetDefault(log)
	}
	box, err := cfg.Box()
	if err != nil {
		return err
	}
	url, localURL, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopDB()
	if err := store.MigrateUp(ctx, url); err != nil {
		return err
	}
	st, err := store.Open(ctx, localURL, log)
	if err != nil {
		return err
	}
	defer st.Close()

	simOn, err := cfg.SimulatorOn()
	if err != nil {
		return err
	}
	var cloud *simcloud.Cloud
	if simOn {
		dataDir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return err
		}
		cloud, err = simcloud.Start(ctx, simcloud.Options{Listen: cfg.SimulatorListen, Hosts: cfg.SimulatorHosts,
			Prefix: cfg.SimulatorPrefix, StateDir: filepath.Join(dataDir, "cloud"), Logger: log, HostSetup: standinSetup(log),
			Heat: cfg.SimulatorHeat, AdminDBURL: adminURL(url)})
		if err != nil {
			return fmt.Errorf("embedded OpenStack simulator (VNFM_SIMULATOR=off to run without it): %w", err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cloud.Close(cctx); err != nil {
				log.Warn("stopping the simulator", "err", err)
			}
		}()
	}
	mgmt := o.Mgmt
	if mgmt == nil {
		mo := MgmtOptions{Pins: st.HostKeyPins()}
		if cloud != nil {
			mo.Dial = cloud.Dial
		}
		mgmt = DefaultMgmt(mo)
	}
	policy, err := cfg.OutboundPolicy(simOn)
	if err != nil {
		return err
	}
	if cloud != nil && policy.Dial == nil {
		// A cluster built on the embedded cloud serves its API on the
		// hosts' network: the VNFM reaches it there, never through this
		// machine's default route.
		policy.Dial = cloud.OutboundDial(nil)
	}
	infra := o.Infra
	if infra == nil {
		// Both infra drivers connect to client-registered endpoints: through
		// the one outbound-URL policy.
		infra = NewInfraResolver(openstack.New(openstack.Options{Outbound: policy}),
			kubernetes.New(kubernetes.Options{Outbound: policy}), nil)
	}
	log.Info("outbound-URL policy", "loopback", policy.AllowLoopback, "private", policy.AllowPrivate,
		"allow", fmt.Sprint(policy.Allow), "deny", fmt.Sprint(policy.Deny))
	lcmCfg := lcm.Config{Store: st, Box: box, Mgmt: mgmt, Infra: infra, Logger: log, Outbound: policy}
	svc := lcm.NewService(lcmCfg)
	if err := svc.RunPendingTasks(ctx); err != nil {
		// Not fatal: the task stays queued and is tried again at the next start.
		log.Error("a task queued by a migration failed; it is tried again at the next start", "err", err)
	}
	m := metrics.New(svc.Stats, log)

	var engine *lcm.Engine
	if cfg.Engine {
		var obs lcm.Observer = m
		if o.Observer != nil {
			obs = multiObserver{m, o.Observer}
		}
		engine = lcm.NewEngine(lcm.EngineConfig{Config: lcmCfg, Service: svc, Workers: cfg.Workers, Lease: cfg.Lease, Poll: cfg.Poll, Refresh: cfg.CNFSync, Observer: obs})
	}
	parse := o.Parse
	if parse == nil {
		parse = ParseCSAR
	}
	pkgs := packages.New(packages.Config{Store: st, Box: box, Parse: parse, Logger: log, Outbound: policy, MaxFetches: cfg.Uploads})
	defer pkgs.Wait()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (VNFM_LISTEN): %w", cfg.Listen, err)
	}
	defer ln.Close() // on early returns; Serve/Shutdown close it otherwise
	// An endpoint derived from VNFM_LISTEN=...:0 takes the port we got.
	if strings.HasSuffix(cfg.EndpointURL, ":0") {
		cfg.EndpointURL = strings.TrimSuffix(cfg.EndpointURL, "0") + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	notifier := notify.New(notify.Config{Store: st, Box: box, BaseURL: cfg.EndpointURL, Logger: log, Metrics: m,
		BackoffMin: cfg.NotifyBackoffMin, BackoffMax: cfg.NotifyBackoffMax, RetryFor: cfg.NotifyRetryFor, Poll: cfg.Poll,
		Outbound: policy})
	apiCfg := api.Config{Service: svc, Packages: pkgs, EndpointURL: cfg.EndpointURL, Logger: log, Metrics: m,
		PageSize: cfg.PageSize, MaxBodyBytes: cfg.MaxBodyBytes, AllowedOrigins: cfg.AllowedOrigins,
		BodyTimeout: cfg.BodyTimeout, UploadTimeout: cfg.UploadTimeout, Uploads: cfg.Uploads, UploadsPerClient: cfg.UploadsPerClient,
		Subscriptions: notify.NewSubscriptions(notifier, cfg.TestCallbacks)}
	if engine != nil {
		apiCfg.Wake = engine.Wake
	}
	if apiCfg.Auth, err = auth.New(cfg.Auth, auth.Options{Listen: cfg.Listen, Store: st, Logger: log}); err != nil {
		return err
	}
	handler, err := api.New(ctx, apiCfg)
	if err != nil {
		return err
	}
	srv, err := NewHTTPServer(handler, cfg.TLSCertFile, cfg.TLSKeyFile, log)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEngine()
	go pkgs.Run(engineCtx) // resumes onboardings interrupted by a crash
	notifyDone := make(chan struct{})
	go func() {
		defer close(notifyDone)
		if cfg.Engine {
			notifier.Run(engineCtx)
		}
	}()
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		if engine != nil {
			_ = engine.Run(engineCtx)
		}
	}()
	if cloud != nil {
		if err := provisionSimCloud(ctx, log, svc, pkgs, cloud); err != nil {
			log.Error("setting up the embedded cloud", "err", err)
		} else {
			printWelcome(os.Stderr, cfg.EndpointURL, cloud)
		}
	}
	log.Info("vnfm serving", "listen", ln.Addr().String(), "endpoint", cfg.EndpointURL, "version", o.Version, "engine", cfg.Engine)
	fmt.Fprintf(os.Stderr, "\nmini-VNFM is up: %s/vnflcm/v1/vnf_instances  (API spec: %s/vnflcm/v1/openapi.yaml; Ctrl-C stops)\n\n", cfg.EndpointURL, cfg.EndpointURL)
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("http server: %w", err)
		}
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownWait)
	defer cancel()
	_ = srv.Shutdown(sctx)
	stopEngine()
	select {
	case <-engineDone:
	case <-sctx.Done():
		log.Warn("engine did not stop in time; unfinished operations resume on the next start")
	}
	select {
	case <-notifyDone:
	case <-sctx.Done():
	}
	return runErr
}

type multiObserver []lcm.Observer

func (m multiObserver) StepFinished(op, step, state string, d time.Duration) {
	for _, o := range m {
		o.StepFinished(op, step, state, d)
	}
}

func (m multiObserver) Checkpoint(opID, what string) {
	for _, o := range m {
		o.Checkpoint(opID, what)
	}
}
