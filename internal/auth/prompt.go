package auth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadPassword reads a password for `vnfm auth hash-password`: from a
// terminal it prompts twice with echo off; from a pipe it reads one line.
func ReadPassword(in *os.File, prompt io.Writer) (string, error) {
	if !isTerminal(in) {
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	read := func(p string) (string, error) {
		fmt.Fprint(prompt, p)
		restore := echoOff(in)
		line, err := bufio.NewReader(in).ReadString('\n')
		restore()
		fmt.Fprintln(prompt)
		return strings.TrimRight(line, "\r\n"), err
	}
	p1, err := read("password: ")
	if err != nil {
		return "", err
	}
	p2, err := read("again: ")
	if err != nil {
		return "", err
	}
	if p1 != p2 {
		return "", errors.New("the passwords differ")
	}
	return p1, nil
}
