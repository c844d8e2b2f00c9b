package osworld

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// watch samples the services' sockets every second until Close and records
// every remote address that is not loopback (the network rule: Keystone and
// Heat may only talk to this machine's loopback services).
func (w *World) watch() {
	defer close(w.watchDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, s := range []*service{w.ks, w.heat} {
			if s == nil || s.cmd.Process == nil {
				continue
			}
			for _, remote := range offLoopback(s.cmd.Process.Pid) {
				w.mu.Lock()
				w.outbound[s.name+" → "+remote] = true
				w.mu.Unlock()
			}
		}
		select {
		case <-w.stopWatch:
			return
		case <-t.C:
		}
	}
}

// Outbound lists the connections off loopback seen so far ("heat → addr").
func (w *World) Outbound() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.outbound))
	for k := range w.outbound {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// offLoopback returns the remote addresses of pid's sockets that are
// neither unset nor loopback.
func offLoopback(pid int) []string {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var out []string
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			addr, ok := parseProcAddr(f[2])
			if !ok || addr.Addr().IsUnspecified() || addr.Addr().Unmap().IsLoopback() {
				continue
			}
			out = append(out, proto+" "+addr.String())
		}
	}
	return out
}

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90" (little-endian
// 32-bit words).
func parseProcAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	var port uint16
	if _, err := fmt.Sscanf(p, "%X", &port); err != nil {
		return netip.AddrPort{}, false
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, port), true
}
