package main

import (
	"bytes"
	"strings"
	"testing"
)

// stubCommands replaces the commands' work so that a test sees what would
// have run, and nothing (no server, no database) starts.
func stubCommands(t *testing.T) *[]string {
	t.Helper()
	saved := commands
	t.Cleanup(func() { commands = saved })
	var ran []string
	commands.serve = func() error { ran = append(ran, "serve"); return nil }
	commands.migrate = func(sub string, n int) error {
		ran = append(ran, "migrate "+sub+" "+strings.Repeat("I", n))
		return nil
	}
	commands.rotate = func() error { ran = append(ran, "rotate"); return nil }
	commands.auth = func(args []string) error {
		ran = append(ran, "auth "+strings.Join(args, " "))
		return nil
	}
	return &ran
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		ran        string // what ran ("" = nothing)
		out, err   string // substrings of stdout / stderr
		notStarted bool
	}{
		{args: []string{"serve"}, code: 0, ran: "serve"},
		{args: []string{"serve", "--help"}, code: 0, out: "usage: vnfm serve"},
		{args: []string{"serve", "-h"}, code: 0, out: "VNFM_DATA_DIR"},
		{args: []string{"serve", "--listen", "x"}, code: 2, err: "flag provided but not defined: -listen"},
		{args: []string{"serve", "now"}, code: 2, err: `unexpected argument "now"`},
		{args: []string{}, code: 2, err: "no command given"},
		{args: []string{"--help"}, code: 0, out: "commands:"},
		{args: []string{"help"}, code: 0, out: "serve"},
		{args: []string{"frobnicate"}, code: 2, err: `unknown command "frobnicate"`},
		{args: []string{"version"}, code: 0, out: "dev"},
		{args: []string{"version", "extra"}, code: 2, err: "unexpected argument"},
		{args: []string{"migrate"}, code: 2, err: "say up, down [N] or version"},
		{args: []string{"migrate", "--help"}, code: 0, out: "usage: vnfm migrate"},
		{args: []string{"migrate", "up"}, code: 0, ran: "migrate up "},
		{args: []string{"migrate", "up", "-h"}, code: 0, out: "usage: vnfm migrate"},
		{args: []string{"migrate", "up", "2"}, code: 2, err: `unexpected argument "2"`},
		{args: []string{"migrate", "down"}, code: 0, ran: "migrate down "},
		{args: []string{"migrate", "down", "2"}, code: 0, ran: "migrate down II"},
		{args: []string{"migrate", "down", "zero"}, code: 2, err: "N must be a positive number"},
		{args: []string{"migrate", "down", "1", "2"}, code: 2, err: `unexpected argument "2"`},
		{args: []string{"migrate", "sideways"}, code: 2, err: `unknown subcommand "sideways"`},
		{args: []string{"secrets"}, code: 2, err: "say rotate"},
		{args: []string{"secrets", "rotate"}, code: 0, ran: "rotate"},
		{args: []string{"secrets", "rotate", "--force"}, code: 2, err: "-force"},
		{args: []string{"secrets", "-h"}, code: 0, out: "usage: vnfm secrets rotate"},
		{args: []string{"auth", "--help"}, code: 0, out: "auth hash-password"},
		{args: []string{"auth", "client", "list"}, code: 0, ran: "auth client list"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			ran := stubCommands(t)
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out.String(), errb.String())
			}
			if got := strings.Join(*ran, ";"); got != tc.ran {
				t.Errorf("ran %q, want %q", got, tc.ran)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.out)
			}
			if !strings.Contains(errb.String(), tc.err) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.err)
			}
			if tc.code == 2 && !strings.Contains(errb.String(), "usage:") {
				t.Errorf("a usage error prints no usage: %q", errb.String())
			}
		})
	}
}

// The real auth command line: unknown subcommands and flags are usage
// errors (exit 2) before any database is opened.
func TestAuthUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"auth"}, {"auth", "nope"}, {"auth", "client"}, {"auth", "client", "list", "extra"},
		{"auth", "client", "delete"}, {"auth", "client", "add", "x", "-bogus"}, {"auth", "hash-password", "-bogus"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage:") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with usage", args, code, errb.String())
		}
	}
}
