//go:build !linux

package auth

import "os"

// Elsewhere the password is read as a line (pipe it in); echo stays on.
func isTerminal(*os.File) bool { return false }

func echoOff(*os.File) func() { return func() {} }
