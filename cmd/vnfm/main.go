// Command vnfm is the mini-VNFM server: `vnfm serve` runs the SOL003 VNF LCM
// API and the LCM engine; `vnfm migrate up|down|version` manages the schema.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

const usage = `usage: vnfm <command> [arguments]   (vnfm <command> -h: that command's usage)

commands:
  serve                  run the VNF LCM API and engine (embedded PostgreSQL when DATABASE_URL is unset)
  migrate up             apply pending database migrations
  migrate down [N]       revert the last N migrations (all when N is omitted)
  migrate version        print the applied and the latest migration version
  secrets rotate         re-seal every stored secret with the current secret key (and format)
  version                print the version
` + auth.CommandUsage + `
Configuration comes from environment variables; see README.md.
`

// Exit codes: 0 success or help, 1 failure, 2 bad usage (as flag and most
// Unix tools).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is a command line that cannot be run; it exits 2 with usage.
type usageError struct {
	msg   string
	usage string
}

func (e *usageError) Error() string { return e.msg }

// commands the functions that do the work; tests replace them so that a
// parsed command line can be checked without starting anything.
var commands = struct {
	serve   func() error
	migrate func(sub string, n int) error
	rotate  func() error
	auth    func(args []string) error
}{serve: serve, migrate: migrate, rotate: rotateSecrets, auth: authCmd}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "vnfm: %s\n\n%s", ue.msg, ue.usage)
		return exitUsage
	case errors.As(err, new(*auth.UsageError)):
		fmt.Fprintf(stderr, "vnfm: %v\n\nusage:\n%s", err, auth.CommandUsage)
		return exitUsage
	}
	fmt.Fprintln(stderr, "vnfm:", err)
	return exitFail
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{"no command given", usage}
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "-version", "--version":
		if err := noArgs("version", "usage: vnfm version\n\nprints the version of this binary\n", args[1:], stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout, version)
		return nil
	case "serve":
		if err := noArgs("serve", serveUsage, args[1:], stdout); err != nil {
			return err
		}
		return commands.serve()
	case "migrate":
		return migrateCmd(args[1:], stdout)
	case "secrets":
		return secretsCmd(args[1:], stdout)
	case "auth":
		if len(args) > 1 && isHelp(args[1]) {
			fmt.Fprintf(stdout, "usage:\n%s", auth.CommandUsage)
			return nil
		}
		return commands.auth(args[1:])
	}
	return &usageError{fmt.Sprintf("unknown command %q", args[0]), usage}
}

const serveUsage = `usage: vnfm serve

Runs the SOL003 VNF LCM API (/vnflcm/v1), package management (/vnfpkgm/v1),
the VIM registry (/v1.0/vims) and the LCM engine until SIGINT or SIGTERM.
Without DATABASE_URL it starts an embedded PostgreSQL in VNFM_DATA_DIR (./.vnfm)
and, unless VNFM_SIMULATOR=off, its own OpenStack cloud (the simulator) with the
sample packages onboarded. All settings are environment variables (VNFM_LISTEN,
VNFM_DATA_DIR, VNFM_SIMULATOR*, ...): see the Configuration table of README.md.
`

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "help" }

// noArgs parses a command that takes neither flags nor arguments: -h prints
// its usage (flag.ErrHelp), anything else is a usage error.
func noArgs(name, text string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("vnfm "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, text)
			return err
		}
		return &usageError{name + ": " + err.Error(), text}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("%s: unexpected argument %q", name, fs.Arg(0)), text}
	}
	return nil
}

const migrateUsage = `usage: vnfm migrate up | down [N] | version

  up         apply pending migrations
  down [N]   revert the last N migrations (all when N is omitted)
  version    print the applied and the latest migration version

Uses DATABASE_URL, else the embedded PostgreSQL in VNFM_DATA_DIR.
`

func migrateCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{"migrate: say up, down [N] or version", migrateUsage}
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, migrateUsage)
		return nil
	}
	sub, rest := args[0], args[1:]
	n := 0
	switch sub {
	case "up", "version":
		if err := noArgs("migrate "+sub, migrateUsage, rest, stdout); err != nil {
			return err
		}
	case "down":
		fs := flag.NewFlagSet("vnfm migrate down", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, migrateUsage)
				return err
			}
			return &usageError{"migrate down: " + err.Error(), migrateUsage}
		}
		switch fs.NArg() {
		case 0:
		case 1:
			var err error
			if n, err = strconv.Atoi(fs.Arg(0)); err != nil || n < 1 {
				return &usageError{fmt.Sprintf("migrate down: N must be a positive number, got %q", fs.Arg(0)), migrateUsage}
			}
		default:
			return &usageError{fmt.Sprintf("migrate down: unexpected argument %q", fs.Arg(1)), migrateUsage}
		}
	default:
		return &usageError{fmt.Sprintf("migrate: unknown subcommand %q; say up, down [N] or version", sub), migrateUsage}
	}
	return commands.migrate(sub, n)
}

func migrate(sub string, n int) error {
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
	switch sub {
	case "up":
		if err := store.MigrateUp(ctx, url); err != nil {
			return err
		}
	case "down":
		if err := store.MigrateDown(ctx, url, n); err != nil {
			return err
		}
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

const secretsUsage = `usage: vnfm secrets rotate

Re-seals every stored secret (VIM credentials, instances, operation parameters and
working state, journal outputs, subscription credentials, package sources) with the
current secret key, after a new key became current and the old one is listed in
VNFM_SECRET_KEYS_OLD (or the key file). Values of earlier formats are re-sealed in the
current one, bound to the row and field where they are stored.
`

// secretsCmd runs `vnfm secrets rotate`.
func secretsCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &usageError{"secrets: say rotate", secretsUsage}
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, secretsUsage)
		return nil
	}
	if args[0] != "rotate" {
		return &usageError{fmt.Sprintf("secrets: unknown subcommand %q; say rotate", args[0]), secretsUsage}
	}
	if err := noArgs("secrets rotate", secretsUsage, args[1:], stdout); err != nil {
		return err
	}
	return commands.rotate()
}

// rotateSecrets: after a new key became current (the old one listed in
// VNFM_SECRET_KEYS_OLD), every stored secret is sealed again with it.
func rotateSecrets() error {
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
	n, err := vims.New(vims.Config{Store: st, Box: box, Logger: log}).RotateKeys(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("re-sealed the credentials of %d VIM(s) with the current key\n", n)
	docs, err := st.ResealAll(ctx, box.ResealJSON)
	if err != nil {
		return err
	}
	fmt.Printf("re-sealed %d other stored document(s) with the current key\n", docs)
	return nil
}
