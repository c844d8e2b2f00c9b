// Package outbound is the one policy for every connection the VNFM opens on
// a client's behalf: notification callbacks and their OAuth token
// endpoints, package upload_from_uri downloads, and VIM verification
// (Keystone, Kubernetes API servers, OIDC token endpoints). A client names
// those URLs, so without a policy the VNFM is a proxy into its own network
// (SSRF): to cloud metadata services, to databases on loopback, to
// anything its host can reach.
//
// The policy acts at dial time, on the addresses a name resolved to, so a
// name that resolves to an allowed address for the check and to a
// forbidden one for the connection (DNS rebinding) gets nowhere: the
// connection goes to an address that was checked, and nothing else.
//
//   - Link-local (169.254.0.0/16, fe80::/10), cloud metadata addresses
//     (100.100.100.200, fd00:ec2::254, 168.63.129.16), unspecified,
//     multicast and broadcast addresses are always refused, before any
//     dial, also when written inside IPv4-mapped or NAT64 IPv6 addresses.
//   - Loopback and private ranges (RFC 1918, 100.64.0.0/10, fc00::/7, …)
//     are allowed or refused by Settings; Allow and Deny prefixes refine
//     that.
//   - Redirects are never followed: a client would otherwise name an
//     allowed host that redirects to a forbidden one.
//   - A connection that fails is reported the same way whether the port
//     was closed, filtered or unreachable, and probe clients take the same
//     time for all three, so the error of a callback test is no port
//     scanner. Errors never carry a remote body.
//   - Proxies from the environment are not used: the policy would check
//     the proxy, not the target.
package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Resolver resolves host names (net.DefaultResolver implements it; tests
// inject their own).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc opens a connection to an address (ip:port) the policy allowed.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Policy decides which addresses may be connected to. The zero value
// refuses loopback and private addresses; see Settings for the server's
// configuration.
type Policy struct {
	// AllowLoopback allows 127.0.0.0/8 and ::1.
	AllowLoopback bool
	// AllowPrivate allows the private and shared ranges (privateNets).
	AllowPrivate bool
	// Allow lists prefixes allowed even if loopback or private addresses
	// are refused; never the always-refused ones.
	Allow []netip.Prefix
	// Deny lists prefixes refused whatever else allows them.
	Deny []netip.Prefix
	// ConnectTimeout bounds one connection attempt (default 5 s); a probe
	// client's failed attempts all take this long.
	ConnectTimeout time.Duration

	// Resolver and Dial replace DNS and the network in tests (nil:
	// net.DefaultResolver and a net.Dialer).
	Resolver Resolver
	Dial     DialFunc
}

var (
	// alwaysRefused: link-local (every cloud's metadata service lives
	// there: 169.254.169.254, fe80::a9fe:a9fe) and the metadata
	// addresses outside it.
	alwaysRefused = []struct {
		p      netip.Prefix
		reason string
	}{
		{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address (cloud metadata services live there)"},
		{netip.MustParsePrefix("fe80::/10"), "a link-local address (cloud metadata services live there)"},
		{netip.MustParsePrefix("100.100.100.200/32"), "a cloud metadata address"},
		{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address"},
		{netip.MustParsePrefix("168.63.129.16/32"), "a cloud metadata address"},
		{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified address"},
		{netip.MustParsePrefix("::/128"), "an unspecified address"},
		{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
		{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
		{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	}
	loopbackNets = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	privateNets  = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("fc00::/7"),
	}
	// IPv6 forms that embed an IPv4 address: the IPv4 address is checked too.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// RefusedError is a connection the policy refused; nothing was sent.
type RefusedError struct {
	Host   string     // as the URL names it
	Addr   netip.Addr // the refused address
	Reason string     // why, with the setting that would change it
	// named: Host is a name (the address came from DNS and is not shown).
	named bool
}

func (e *RefusedError) Error() string {
	if e.named {
		return fmt.Sprintf("the VNFM's outbound-URL policy refuses %s: it resolves to %s", e.Host, e.Reason)
	}
	return fmt.Sprintf("the VNFM's outbound-URL policy refuses %s: it is %s", e.Host, e.Reason)
}

// ConnectError is a failed connection. It says the same for a closed, a
// filtered and an unreachable port, and does not unwrap to the cause.
type ConnectError struct {
	Addr string // host:port as the URL names it
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cannot connect to %s (nothing accepted the connection)", e.Addr)
}

// RedirectError is an answer with a redirect, which is never followed.
type RedirectError struct {
	Status int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("it answered %d %s; redirects are not followed: give the final URL", e.Status, http.StatusText(e.Status))
}

// Check tells whether the policy allows connecting to addr.
func (p *Policy) Check(addr netip.Addr) error {
	if r := p.refusal(addr); r != "" {
		return &RefusedError{Host: addr.String(), Addr: addr, Reason: r}
	}
	return nil
}

// refusal returns why addr is refused, or "".
func (p *Policy) refusal(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	cands := []netip.Addr{addr}
	if addr.Is6() && nat64.Contains(addr) {
		b := addr.As16()
		cands = append(cands, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	for _, a := range cands {
		for _, r := range alwaysRefused {
			if r.p.Contains(a) {
				return r.reason
			}
		}
		if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
			return "a broadcast address"
		}
	}
	for _, a := range cands {
		for _, d := range p.Deny {
			if d.Contains(a) {
				return "in a denied range (VNFM_OUTBOUND_DENY " + d.String() + ")"
			}
		}
	}
	for _, a := range cands {
		for _, al := range p.Allow {
			if al.Contains(a) {
				return ""
			}
		}
	}
	for _, a := range cands {
		if contains(loopbackNets, a) && !p.AllowLoopback {
			return "a loopback address (allowed only with VNFM_OUTBOUND_LOOPBACK=allow)"
		}
		if contains(privateNets, a) && !p.AllowPrivate {
			return "a private address (allowed only with VNFM_OUTBOUND_PRIVATE=allow, or listed in VNFM_OUTBOUND_ALLOW)"
		}
	}
	return ""
}

func contains(nets []netip.Prefix, a netip.Addr) bool {
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

func (p *Policy) resolver() Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

func (p *Policy) connectTimeout() time.Duration {
	if p.ConnectTimeout > 0 {
		return p.ConnectTimeout
	}
	return 5 * time.Second
}

// resolve returns the addresses of host after checking every one of them:
// a name with any refused address is refused as a whole (a name that
// points at a metadata address is not an accident).
func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if r := p.refusal(a); r != "" {
			return nil, &RefusedError{Host: host, Addr: a, Reason: r}
		}
		return []netip.Addr{a.WithZone("")}, nil
	}
	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &ResolveError{Host: host}
	}
	if len(addrs) == 0 {
		return nil, &ResolveError{Host: host}
	}
	for _, a := range addrs {
		if r := p.refusal(a); r != "" {
			return nil, &RefusedError{Host: host, Addr: a, Reason: r, named: true}
		}
	}
	return addrs, nil
}

// ResolveError is a host name that does not resolve.
type ResolveError struct{ Host string }

func (e *ResolveError) Error() string { return "cannot resolve host name " + e.Host }

// DialContext resolves, checks and connects: the connection goes to one of
// the checked addresses, never to a second resolution.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("outbound: %w", err)
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	dial := p.Dial
	if dial == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	for _, a := range addrs {
		if ctx.Err() != nil {
			break
		}
		actx, cancel := context.WithTimeout(ctx, p.connectTimeout())
		c, err := dial(actx, network, net.JoinHostPort(a.String(), port))
		cancel()
		if err == nil {
			return c, nil
		}
	}
	return nil, &ConnectError{Addr: address}
}

// CheckURL checks a URL a client gives, at request time: http or https,
// a host, and no refused address (resolving a name; a name that does not
// resolve now is not refused, the dial decides later). The error is a
// *RefusedError or a plain error describing the URL's fault.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	if u.Port() != "" {
		if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q has an invalid port", raw)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = p.resolve(ctx, u.Hostname())
	var re *RefusedError
	if errors.As(err, &re) {
		re.Host = u.Hostname()
		return re
	}
	return nil
}

// ClientOptions shape an HTTP client.
type ClientOptions struct {
	// Timeout bounds a whole request (0: none beyond the context's).
	Timeout time.Duration
	// TLS configures the client's TLS (nil: system roots, TLS 1.2+).
	TLS *tls.Config
	// Probe makes every failed connection take ConnectTimeout, so that a
	// closed port cannot be told from a filtered one by the time an error
	// takes. For request-time checks a client can repeat at will.
	Probe bool
}

// Client returns an HTTP client whose every connection goes through the
// policy, which follows no redirect (RedirectError) and uses no proxy.
func (p *Policy) Client(o ClientOptions) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 0,
	}
	if o.TLS != nil {
		tr.TLSClientConfig = o.TLS
	} else {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.Probe {
		tr.DialContext = p.probeDial
	}
	return &http.Client{Timeout: o.Timeout, Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return &RedirectError{Status: req.Response.StatusCode}
		}}
}

// probeDial is DialContext whose connection failures all take the connect
// timeout (refusals by the policy are answered at once: they reveal
// nothing about the network).
func (p *Policy) probeDial(ctx context.Context, network, address string) (net.Conn, error) {
	start := time.Now()
	c, err := p.DialContext(ctx, network, address)
	var ce *ConnectError
	if errors.As(err, &ce) {
		wait := time.NewTimer(p.connectTimeout() - time.Since(start))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	return c, err
}

// Status names an HTTP answer by its code and the standard reason phrase:
// the phrase a server sends is its own text and is not repeated.
func Status(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return strconv.Itoa(code)
}

// Describe turns an error of a client of this package into a sentence for
// the person who gave the URL: the policy's refusal, a redirect, a name
// that does not resolve, a connection that failed (one sentence for every
// cause), a timeout, or a TLS failure. Remote bodies never appear.
func Describe(err error) string {
	var (
		re  *RefusedError
		rd  *RedirectError
		ce  *ConnectError
		rs  *ResolveError
		ne  net.Error
		cvf *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &re):
		return re.Error()
	case errors.As(err, &rd):
		return rd.Error()
	case errors.As(err, &ce):
		return ce.Error()
	case errors.As(err, &rs):
		return rs.Error()
	case errors.As(err, &cvf):
		return "its TLS certificate is not trusted: " + cvf.Err.Error()
	case errors.As(err, &rhe), err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "it does not speak TLS on that port (use http:// or the HTTPS port)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	case err == nil:
		return ""
	}
	// What is left (EOF, malformed answers) may quote the remote's bytes.
	return "no valid HTTP answer"
}

// ErrNoCertificate is TLSConfig's error for a CA bundle with no PEM
// certificate in it.
var ErrNoCertificate = errors.New("holds no PEM certificate")

// TLSConfig is the TLS of a connection to a client-registered endpoint:
// TLS 1.2 or later, trusting caPEM when given (with the system's roots too
// when withSystem) and the system's roots alone when not; insecure (a VIM
// registered with cert_verify False, explicitly) verifies nothing.
func TLSConfig(caPEM []byte, withSystem, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if insecure {
		cfg.InsecureSkipVerify = true //nolint:gosec // the user asked for it explicitly
		return cfg, nil
	}
	if len(caPEM) == 0 {
		return cfg, nil
	}
	var pool *x509.CertPool
	if withSystem {
		pool, _ = x509.SystemCertPool()
	}
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, ErrNoCertificate
	}
	cfg.RootCAs = pool
	return cfg, nil
}
