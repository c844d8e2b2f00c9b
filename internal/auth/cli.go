package auth

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// CommandUsage documents `vnfm auth` (cmd/vnfm prints it).
const CommandUsage = `  auth hash-password [-iterations N]
                         read a password (prompted, or one line on stdin) and print its hash
                         for VNFM_AUTH_BASIC_USERS (user:<hash>:scope,scope)
  auth client add ID -scopes S [-description D]
                         register an OAuth 2.0 client; prints its secret once
  auth client list       list OAuth 2.0 clients, their scopes and active tokens
  auth client delete ID  delete a client; its access tokens stop working at once
`

// CommandIO is what `vnfm auth` talks to.
type CommandIO struct {
	Stdin          *os.File
	Stdout, Stderr io.Writer
	// OpenStore opens the (migrated) database for the client commands.
	OpenStore func(ctx context.Context) (ClientAdmin, func(), error)
	// EndpointURL is shown in the example of `client add`.
	EndpointURL string
}

// RunCommand runs `vnfm auth <args>`.
func RunCommand(ctx context.Context, args []string, cio CommandIO) error {
	if len(args) == 0 {
		return &UsageError{"auth: say hash-password or client add|list|delete"}
	}
	switch args[0] {
	case "hash-password":
		return hashPasswordCmd(args[1:], cio)
	case "client":
		if len(args) < 2 {
			return &UsageError{"auth client: say add, list or delete"}
		}
		return clientCmd(ctx, args[1], args[2:], cio)
	}
	return &UsageError{fmt.Sprintf("auth: unknown subcommand %q", args[0])}
}

// UsageError is a command line that cannot be run (unknown subcommand, flag
// or argument); callers print CommandUsage and exit 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// parseFlags parses a flag set; errors other than -h become *UsageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{fs.Name() + ": " + err.Error()}
	}
	return nil
}

func hashPasswordCmd(args []string, cio CommandIO) error {
	fs := flag.NewFlagSet("auth hash-password", flag.ContinueOnError)
	fs.SetOutput(cio.Stderr)
	iter := fs.Int("iterations", DefaultIterations, "PBKDF2-SHA256 iterations")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Sprintf("auth hash-password: unexpected argument %q", fs.Arg(0))}
	}
	pw, err := ReadPassword(cio.Stdin, cio.Stderr)
	if err != nil {
		return fmt.Errorf("auth hash-password: %w", err)
	}
	h, err := HashPasswordIter(pw, *iter)
	if err != nil {
		return fmt.Errorf("auth hash-password: %w", err)
	}
	fmt.Fprintln(cio.Stdout, h)
	return nil
}

// parseWithName accepts the positional ID before or after the flags.
func parseWithName(fs *flag.FlagSet, args []string) (string, error) {
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return "", &UsageError{fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	if name == "" {
		return "", &UsageError{fs.Name() + ": give the client id"}
	}
	return name, nil
}

func clientCmd(ctx context.Context, sub string, args []string, cio CommandIO) error {
	var run func(st ClientAdmin) error
	switch sub {
	case "add":
		fs := flag.NewFlagSet("auth client add", flag.ContinueOnError)
		fs.SetOutput(cio.Stderr)
		scopes := fs.String("scopes", "", "comma-separated scopes: "+strings.Join(KnownScopes, ", "))
		desc := fs.String("description", "", "free text")
		id, err := parseWithName(fs, args)
		if err != nil {
			return err
		}
		if _, err := ParseScopes(*scopes); err != nil {
			return fmt.Errorf("auth client add -scopes: %w", err)
		}
		run = func(st ClientAdmin) error {
			secret, err := RegisterClient(ctx, st, id, *scopes, *desc)
			if err != nil {
				return err
			}
			sc, _ := ParseScopes(*scopes)
			fmt.Fprintf(cio.Stdout, "client_id:     %s\nclient_secret: %s\nscopes:        %s\n", id, secret, sc)
			fmt.Fprintf(cio.Stderr, "\nThe secret is shown only now; only its hash is stored. Get a token with:\n"+
				"  curl -s -u %s:<client_secret> -d grant_type=client_credentials %s%s\n", id, cio.EndpointURL, TokenPath)
			return nil
		}
	case "list":
		fs := flag.NewFlagSet("auth client list", flag.ContinueOnError)
		fs.SetOutput(cio.Stderr)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return &UsageError{fmt.Sprintf("auth client list: unexpected argument %q", fs.Arg(0))}
		}
		run = func(st ClientAdmin) error {
			cs, err := st.ListAuthClients(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cio.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLIENT_ID\tSCOPES\tACTIVE_TOKENS\tCREATED\tDESCRIPTION")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", c.ID, strings.Join(c.Scopes, ","), c.ActiveTokens, c.CreatedAt.UTC().Format(time.RFC3339), c.Description)
			}
			return tw.Flush()
		}
	case "delete":
		fs := flag.NewFlagSet("auth client delete", flag.ContinueOnError)
		fs.SetOutput(cio.Stderr)
		id, err := parseWithName(fs, args)
		if err != nil {
			return err
		}
		run = func(st ClientAdmin) error {
			if err := st.DeleteAuthClient(ctx, id); errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("auth client delete: no client %s (vnfm auth client list shows them)", id)
			} else if err != nil {
				return err
			}
			fmt.Fprintf(cio.Stdout, "client %s deleted; its access tokens no longer work\n", id)
			return nil
		}
	default:
		return &UsageError{fmt.Sprintf("auth client: unknown subcommand %q; say add, list or delete", sub)}
	}
	st, closeStore, err := cio.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	return run(st)
}
