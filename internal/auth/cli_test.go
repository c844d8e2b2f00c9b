package auth

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

func pipeStdin(t *testing.T, text string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.WriteString(text)
	w.Close()
	t.Cleanup(func() { r.Close() })
	return r
}

func TestCommands(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	var stdout, stderr bytes.Buffer
	opened := 0
	run := func(args ...string) error {
		stdout.Reset()
		stderr.Reset()
		return RunCommand(ctx, args, CommandIO{Stdin: pipeStdin(t, "s3cret pw\n"), Stdout: &stdout, Stderr: &stderr, EndpointURL: "http://vnfm:9890",
			OpenStore: func(context.Context) (ClientAdmin, func(), error) { opened++; return st, func() {}, nil }})
	}

	// hash-password reads a line from a pipe and needs no database.
	if err := run("hash-password", "-iterations", "1000"); err != nil {
		t.Fatal(err)
	}
	if ok, err := VerifyPassword(strings.TrimSpace(stdout.String()), "s3cret pw"); !ok || err != nil || opened != 0 {
		t.Fatalf("hash-password printed %q (%v, %v), opened the database %d times", stdout.String(), ok, err, opened)
	}

	if err := run("client", "add", "nfvo", "--scopes", "vnflcm:write,vim:read", "--description", "the NFVO"); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`client_secret: (\S+)`).FindStringSubmatch(stdout.String())
	if m == nil || !strings.Contains(stdout.String(), "scopes:        vim:read vnflcm:write") || !strings.Contains(stderr.String(), "http://vnfm:9890/oauth2/token") {
		t.Fatalf("client add printed:\n%s\n%s", stdout.String(), stderr.String())
	}
	secret := m[1]
	c, err := st.GetAuthClient(ctx, "nfvo")
	if err != nil || bytes.Contains(c.SecretSHA256, []byte(secret)) || c.Description != "the NFVO" {
		t.Fatalf("stored client: %+v %v", c, err)
	}

	// The printed secret gets a token; the token authenticates.
	a := newAuth(t, Settings{}, Options{Store: st})
	tr, oe := a.IssueToken(ctx, TokenRequest{GrantType: "client_credentials", ClientID: "nfvo", ClientSecret: secret, Addr: "a"})
	if oe != nil || tr.Scope != "vim:read vnflcm:write" {
		t.Fatalf("token: %+v %v", tr, oe)
	}
	if p, err := a.Authenticate(ctx, "Bearer "+tr.AccessToken, "", "a"); err != nil || p.Name != "nfvo" || p.Method != MethodOAuth2 || !p.Scopes.Has(VnflcmRead) {
		t.Fatalf("authenticate: %+v %v", p, err)
	}

	if err := run("client", "list"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^nfvo\s+vim:read,vnflcm:write\s+1\s+\S+\s+the NFVO$`).MatchString(stdout.String()) || strings.Contains(stdout.String(), secret) {
		t.Fatalf("client list:\n%s", stdout.String())
	}

	for _, bad := range [][]string{
		{"client", "add", "nfvo", "--scopes", "*"},          // exists
		{"client", "add", "x y", "--scopes", "*"},           // bad id
		{"client", "add", "other", "--scopes", "vnflcm:rw"}, // bad scope
		{"client", "add", "other"},                          // no scope
		{"client", "add", "--scopes", "*"},                  // no id
		{"client", "delete", "ghost"},                       // unknown
		{"client", "frob"}, {"frob"}, {}, {"client"},        // unknown commands
		{"hash-password", "-iterations", "0"},                      // bad cost
		{"client", "add", "a", "b", "--scopes", "*"},               // extra argument
		{"client", "add", "other", "--scopes", "*", "--nope", "x"}, // unknown flag
	} {
		if err := run(bad...); err == nil {
			t.Errorf("vnfm auth %s: no error", strings.Join(bad, " "))
		}
	}

	// Flags before the id work too.
	if err := run("client", "add", "--scopes", "metrics:read", "prom"); err != nil {
		t.Fatal(err)
	}
	if err := run("client", "delete", "nfvo"); err != nil || !strings.Contains(stdout.String(), "deleted") {
		t.Fatalf("delete: %v %s", err, stdout.String())
	}
	if _, err := a.Authenticate(ctx, "Bearer "+tr.AccessToken, "", "a"); err == nil || err.Status != 401 {
		t.Errorf("token of a deleted client: %v", err)
	}
	if _, oe := a.IssueToken(ctx, TokenRequest{GrantType: "client_credentials", ClientID: "nfvo", ClientSecret: secret, Addr: "a"}); oe == nil || oe.Code != "invalid_client" {
		t.Errorf("deleted client gets a token: %v", oe)
	}
}

func TestIssueTokenLogsNoSecret(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	secret, err := RegisterClient(ctx, st, "c1", "vnfpkgm:read", "")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a, err := New(Settings{Mode: "on", Realm: "r", TokenTTL: time.Minute}, Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tr, oe := a.IssueToken(ctx, TokenRequest{GrantType: "client_credentials", ClientID: "c1", ClientSecret: secret, Scope: "vnfpkgm:read"})
	if oe != nil {
		t.Fatal(oe)
	}
	_, _ = a.Authenticate(ctx, "Bearer "+tr.AccessToken+"x", "", "a")
	_, _ = a.IssueToken(ctx, TokenRequest{GrantType: "client_credentials", ClientID: "c1", ClientSecret: secret + "x"})
	// A secret pasted as the client id is not logged either.
	_, _ = a.IssueToken(ctx, TokenRequest{GrantType: "client_credentials", ClientID: secret, ClientSecret: "c1"})
	for _, s := range []string{secret, tr.AccessToken} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("logged: %.10s…", s)
		}
	}
	if !strings.Contains(logs.String(), "access token issued") || !strings.Contains(logs.String(), "OAuth client authentication failed") {
		t.Errorf("log:\n%s", logs.String())
	}
}
