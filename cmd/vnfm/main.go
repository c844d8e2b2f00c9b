// Command vnfm is the mini-VNFM server: `vnfm serve` runs the SOL003 VNF LCM
// API and the LCM engine; `vnfm migrate up|down|version` manages the schema.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

const usage = `usage: vnfm <command>

commands:
  serve                  run the VNF LCM API and engine (embedded PostgreSQL when DATABASE_URL is unset)
  migrate up             apply pending database migrations
  migrate down [N]       revert the last N migrations (all when N is omitted)
  migrate version        print the applied and the latest migration version
  secrets rotate         re-seal stored VIM credentials with the current secret key
  version                print the version
` + auth.CommandUsage + `
Configuration comes from environment variables; see README.md.
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "vnfm:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve()
	case "migrate":
		return migrateCmd(args[1:])
	case "auth":
		return authCmd(args[1:])
	case "secrets":
		return secretsCmd(args[1:])
	case "version", "--version":
		fmt.Println(version)
		return nil
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func migrateCmd(args []string) error {
	if len(args) == 0 {
		return errors.New("migrate: say up, down [N] or version")
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := cfg.Logger()
	ctx := context.Background()
	url, stop, err := server.Database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stop()
	switch args[0] {
	case "up":
		if err := store.MigrateUp(ctx, url); err != nil {
			return err
		}
	case "down":
		n := 0
		if len(args) > 1 {
			if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
				return fmt.Errorf("migrate down: N must be a positive number, got %q", args[1])
			}
		}
		if err := store.MigrateDown(ctx, url, n); err != nil {
			return err
		}
	case "version":
	default:
		return fmt.Errorf("migrate: unknown subcommand %q; say up, down [N] or version", args[0])
	}
	cur, dirty, latest, err := store.MigrationVersion(ctx, url)
	if err != nil {
		return err
	}
	fmt.Printf("schema version %d (latest %d)%s\n", cur, latest, map[bool]string{true: " DIRTY: fix by hand, then force", false: ""}[dirty])
	return nil
}

// authCmd runs `vnfm auth ...`; the client commands use the configured
// database (DATABASE_URL, else the embedded one) and migrate it first.
func authCmd(args []string) error {
	ctx := context.Background()
	cio := auth.CommandIO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		OpenStore: func(ctx context.Context) (auth.ClientAdmin, func(), error) {
			cfg, err := config.Load()
			if err != nil {
				return nil, nil, err
			}
			log := cfg.Logger()
			url, stop, err := server.Database(ctx, cfg, log)
			if err != nil {
				return nil, nil, err
			}
			if err := store.MigrateUp(ctx, url); err != nil {
				stop()
				return nil, nil, err
			}
			st, err := store.Open(ctx, url, log)
			if err != nil {
				stop()
				return nil, nil, err
			}
			return st, func() { st.Close(); stop() }, nil
		}}
	if cfg, err := config.Load(); err == nil {
		cio.EndpointURL = cfg.EndpointURL
	}
	return auth.RunCommand(ctx, args, cio)
}

func serve() error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.Run(ctx, cfg, server.Options{Version: version})
}

// secretsCmd runs `vnfm secrets rotate`: after a new key became current (the
// old one listed in VNFM_SECRET_KEYS_OLD), stored VIM credentials are sealed
// again with the new key.
func secretsCmd(args []string) error {
	if len(args) != 1 || args[0] != "rotate" {
		return errors.New("secrets: say rotate")
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := cfg.Logger()
	ctx := context.Background()
	box, err := cfg.Box()
	if err != nil {
		return err
	}
	url, stop, err := server.Database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stop()
	st, err := store.Open(ctx, url, log)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := lcm.NewService(lcm.Config{Store: st, Box: box, Logger: log}).RotateVimKeys(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("re-sealed the credentials of %d VIM(s) with the current key\n", n)
	return nil
}
