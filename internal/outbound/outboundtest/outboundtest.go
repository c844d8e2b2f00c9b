// Package outboundtest gives tests an outbound-URL policy that cannot leave
// loopback. Its resolver knows only "localhost" and its dialer connects only
// to loopback addresses, so a test that offers the server a metadata, link-local
// or private address proves the policy refuses it without a packet ever going
// there: if the policy let it through, the dial fails here and the test sees
// "cannot connect" instead of the refusal it expects (DEVELOPERS.md: never
// send test traffic to a non-loopback address, not even to see it refused).
package outboundtest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
)

// Policy returns a policy that allows loopback, as the servers of a test
// listen there, with a connect timeout (0: the policy's default).
func Policy(connectTimeout time.Duration) *outbound.Policy {
	return &outbound.Policy{AllowLoopback: true, ConnectTimeout: connectTimeout, Resolver: resolver{}, Dial: dial}
}

type resolver struct{}

func (resolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		switch network {
		case "ip4":
			return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}, nil
		case "ip6":
			return []netip.Addr{netip.IPv6Loopback()}, nil
		}
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	return nil, &net.DNSError{Err: "outboundtest resolves only localhost", Name: host, IsNotFound: true}
}

var (
	mu     sync.Mutex
	strays []string
)

func dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	mu.Lock()
	strays = append(strays, address)
	mu.Unlock()
	return nil, fmt.Errorf("outboundtest: the policy let a dial to %s through; tests never leave loopback", address)
}

// Strays lists the non-loopback addresses a policy of this package was
// asked to connect to (and did not), in order.
func Strays() []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), strays...)
}
