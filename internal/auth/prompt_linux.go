package auth

import (
	"os"
	"syscall"
	"unsafe"
)

func termios(f *os.File) (*syscall.Termios, bool) {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return &t, errno == 0
}

func isTerminal(f *os.File) bool {
	_, ok := termios(f)
	return ok
}

// echoOff turns terminal echo off and returns the function restoring it.
func echoOff(f *os.File) func() {
	t, ok := termios(f)
	if !ok {
		return func() {}
	}
	saved := *t
	t.Lflag &^= syscall.ECHO
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCSETS, uintptr(unsafe.Pointer(t)))
	return func() {
		_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCSETS, uintptr(unsafe.Pointer(&saved)))
	}
}
