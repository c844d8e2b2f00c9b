package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Every test here injects the resolver and the dialer: no test sends a
// packet to a non-loopback address, not even to see it refused. The only
// real connections go to httptest servers on 127.0.0.1.

func TestCheck(t *testing.T) {
	strict := &Policy{}
	open := &Policy{AllowLoopback: true, AllowPrivate: true}
	tuned := &Policy{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, Deny: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}
	for _, tc := range []struct {
		addr   string
		policy *Policy
		want   string // "" allowed, else part of the reason
	}{
		{"169.254.169.254", open, "link-local"},
		{"169.254.0.1", open, "link-local"},
		{"fe80::a9fe:a9fe", open, "link-local"},
		{"fe80::1%eth0", open, "link-local"},
		{"100.100.100.200", open, "metadata"},
		{"fd00:ec2::254", open, "metadata"},
		{"168.63.129.16", open, "metadata"},
		{"::ffff:169.254.169.254", open, "link-local"},
		{"64:ff9b::a9fe:a9fe", open, "link-local"}, // NAT64 of 169.254.169.254
		{"0.0.0.0", open, "unspecified"},
		{"::", open, "unspecified"},
		{"224.0.0.1", open, "multicast"},
		{"255.255.255.255", open, "broadcast"},
		{"127.0.0.1", strict, "loopback"},
		{"127.8.9.10", strict, "VNFM_OUTBOUND_LOOPBACK=allow"},
		{"::1", strict, "loopback"},
		{"::ffff:127.0.0.1", strict, "loopback"},
		{"10.0.0.5", strict, "private"},
		{"172.20.1.1", strict, "private"},
		{"192.168.1.1", strict, "VNFM_OUTBOUND_PRIVATE=allow"},
		{"100.64.1.1", strict, "private"},
		{"fd12:3456::1", strict, "private"},
		{"127.0.0.1", open, ""},
		{"10.0.0.5", open, ""},
		{"203.0.113.7", strict, ""},
		{"2001:db8::1", strict, ""},
		{"10.1.2.3", tuned, ""},
		{"10.2.0.1", tuned, "private"},
		{"203.0.113.9", tuned, "VNFM_OUTBOUND_DENY 203.0.113.0/24"},
		{"169.254.169.254", &Policy{Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}, "link-local"},
	} {
		err := tc.policy.Check(netip.MustParseAddr(tc.addr))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.addr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.addr, err, tc.want)
		}
		var re *RefusedError
		if err != nil && (!errors.As(err, &re) || !strings.Contains(err.Error(), "outbound-URL policy")) {
			t.Errorf("%s: %T %v is not a policy refusal", tc.addr, err, err)
		}
	}
}

// fakeNet is an injected resolver and dialer. Dials to 127.0.0.1 really
// connect (to httptest servers); every other dial is recorded and answered
// with the configured behaviour, never sent.
type fakeNet struct {
	mu      sync.Mutex
	names   map[string][][]netip.Addr // successive answers per name
	lookups map[string]int
	dialed  []string
	fail    func(ctx context.Context, addr string) error
}

func (f *fakeNet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answers, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(f.lookups[host], len(answers)-1)
	f.lookups[host]++
	return answers[i], nil
}

func (f *fakeNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, addr)
	f.mu.Unlock()
	host, _, _ := net.SplitHostPort(addr)
	if host == "127.0.0.1" {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	if f.fail != nil {
		return nil, f.fail(ctx, addr)
	}
	return nil, errors.New("fakeNet: no network here")
}

func (f *fakeNet) policy(p Policy) *Policy {
	p.Resolver, p.Dial = f, f.dial
	return &p
}

func newFakeNet(names map[string][][]netip.Addr) *fakeNet {
	return &fakeNet{names: names, lookups: map[string]int{}}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestMetadataNamesAreRefusedBeforeAnyDial(t *testing.T) {
	fn := newFakeNet(map[string][][]netip.Addr{
		"metadata.example":  {addrs("169.254.169.254")},
		"mixed.example":     {addrs("198.51.100.7", "169.254.169.254")},
		"mapped.example":    {addrs("::ffff:169.254.169.254")},
		"alibaba.example":   {addrs("100.100.100.200")},
		"ec2v6.example":     {addrs("fd00:ec2::254")},
		"loopback.example":  {addrs("127.0.0.1")},
		"localhost.example": {addrs("::1")},
	})
	p := fn.policy(Policy{AllowPrivate: true})
	for _, target := range []string{"metadata.example:80", "mixed.example:443", "mapped.example:80", "alibaba.example:80",
		"ec2v6.example:80", "169.254.169.254:80", "[fe80::1]:80", "loopback.example:5000", "localhost.example:22", "127.0.0.1:5432"} {
		_, err := p.DialContext(context.Background(), "tcp", target)
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a policy refusal", target, err)
		}
		if strings.Contains(target, "example") && strings.Contains(err.Error(), re.Addr.String()) {
			t.Errorf("%s: the refusal shows the address the name resolved to: %v", target, err)
		}
	}
	if len(fn.dialed) != 0 {
		t.Fatalf("dialed %v", fn.dialed)
	}
}

// TestDNSRebindingGetsNowhere: the name resolves to an allowed address when
// the URL is checked and to the metadata address when the connection is
// made; the check at dial time refuses it, and the dial goes only to
// addresses that were checked.
func TestDNSRebindingGetsNowhere(t *testing.T) {
	fn := newFakeNet(map[string][][]netip.Addr{
		"rebind.example": {addrs("198.51.100.7"), addrs("169.254.169.254")},
	})
	p := fn.policy(Policy{})
	if err := p.CheckURL(context.Background(), "http://rebind.example/notify"); err != nil {
		t.Fatalf("request-time check: %v", err)
	}
	c := p.Client(ClientOptions{Timeout: 2 * time.Second})
	_, err := c.Get("http://rebind.example/notify")
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("GET after rebinding: %v, want a policy refusal", err)
	}
	if len(fn.dialed) != 0 {
		t.Fatalf("dialed %v", fn.dialed)
	}
	// The other way round: the dial goes to the address that was checked.
	fn2 := newFakeNet(map[string][][]netip.Addr{"ok.example": {addrs("127.0.0.1")}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	p2 := fn2.policy(Policy{AllowLoopback: true})
	res, err := p2.Client(ClientOptions{}).Get("http://ok.example:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || len(fn2.dialed) != 1 || fn2.dialed[0] != "127.0.0.1:"+port {
		t.Fatalf("status %d, dialed %v", res.StatusCode, fn2.dialed)
	}
}

// TestRedirectsAreNotFollowed: an allowed host redirecting elsewhere gets
// a RedirectError; the redirect's target sees nothing.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var hit sync.Mutex
	hits := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit.Lock()
		hits++
		hit.Unlock()
	}))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL+"/secret", http.StatusFound))
	defer redirect.Close()
	p := &Policy{AllowLoopback: true}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, redirect.URL, nil)
		_, err := p.Client(ClientOptions{}).Do(req)
		var rd *RedirectError
		if !errors.As(err, &rd) || rd.Status != http.StatusFound {
			t.Fatalf("%s: %v, want a RedirectError", method, err)
		}
		if d := Describe(err); !strings.Contains(d, "redirects are not followed") || strings.Contains(d, target.URL) {
			t.Fatalf("Describe: %q", d)
		}
	}
	if hits != 0 {
		t.Fatalf("the redirect target was hit %d times", hits)
	}
}

// TestClosedAndFilteredLookAlike: a refused connection (closed port) and
// one that never completes (filtered) give the same error, and a probe
// client takes the connect timeout for both.
func TestClosedAndFilteredLookAlike(t *testing.T) {
	const timeout = 300 * time.Millisecond
	names := map[string][][]netip.Addr{"closed.example": {addrs("198.51.100.1")}, "filtered.example": {addrs("198.51.100.2")},
		"unreachable.example": {addrs("198.51.100.3")}}
	fn := newFakeNet(names)
	fn.fail = func(ctx context.Context, addr string) error {
		switch addr {
		case "198.51.100.1:8080":
			return &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
		case "198.51.100.3:8080":
			return &net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}
		}
		<-ctx.Done()
		return &net.OpError{Op: "dial", Err: ctx.Err()}
	}
	p := fn.policy(Policy{ConnectTimeout: timeout})
	c := p.Client(ClientOptions{Probe: true})
	var texts []string
	for _, host := range []string{"closed.example", "filtered.example", "unreachable.example"} {
		start := time.Now()
		_, err := c.Get("http://" + host + ":8080/")
		took := time.Since(start)
		if took < timeout {
			t.Errorf("%s failed after %v, before the connect timeout %v: the time tells the cause", host, took, timeout)
		}
		var ce *ConnectError
		if !errors.As(err, &ce) || errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("%s: %v", host, err)
		}
		texts = append(texts, strings.ReplaceAll(Describe(err), host, "HOST"))
	}
	if texts[0] != texts[1] || texts[1] != texts[2] {
		t.Fatalf("the errors tell closed, filtered and unreachable apart: %q", texts)
	}
}

func TestCheckURL(t *testing.T) {
	fn := newFakeNet(map[string][][]netip.Addr{"nfvo.example": {addrs("203.0.113.5")}, "internal.example": {addrs("10.0.0.9")}})
	p := fn.policy(Policy{})
	for _, tc := range []struct{ url, want string }{
		{"http://nfvo.example/cb", ""},
		{"https://[2001:db8::1]:8443/cb", ""},
		{"http://unknown.example/cb", ""}, // decided at dial time
		{"http://169.254.169.254/latest/meta-data", "link-local"},
		{"http://[::ffff:a9fe:a9fe]/", "link-local"},
		{"http://internal.example:8080/", "private"},
		{"http://127.0.0.1:5432/", "loopback"},
		{"ftp://nfvo.example/", "not an absolute http(s) URL"},
		{"/relative", "not an absolute http(s) URL"},
		{"http://nfvo.example:99999/", "invalid port"},
	} {
		err := p.CheckURL(context.Background(), tc.url)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
	if len(fn.dialed) != 0 {
		t.Fatalf("CheckURL dialed %v", fn.dialed)
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		s        Settings
		dev      bool
		loop     bool
		priv     bool
		wantErr  string
		allowLen int
	}{
		{s: Settings{Loopback: "auto", Private: "allow"}, dev: true, loop: true, priv: true},
		{s: Settings{}, dev: true, loop: true, priv: true}, // built in code: the defaults
		{s: Settings{Loopback: "auto", Private: "allow"}, dev: false, loop: false, priv: true},
		{s: Settings{Loopback: "allow", Private: "deny", Allow: "10.1.0.0/16, 192.168.7.7"}, loop: true, allowLen: 2},
		{s: Settings{Loopback: "maybe"}, wantErr: "VNFM_OUTBOUND_LOOPBACK"},
		{s: Settings{Private: "auto"}, wantErr: "VNFM_OUTBOUND_PRIVATE"},
		{s: Settings{Private: "allow", Allow: "10.1.0.0/33"}, wantErr: "VNFM_OUTBOUND_ALLOW"},
		{s: Settings{Private: "allow", Allow: "169.254.0.0/16"}, wantErr: "always refused"},
		{s: Settings{Private: "allow", Allow: "0.0.0.0/0"}, wantErr: "always refused"},
		{s: Settings{Private: "allow", Deny: "nope"}, wantErr: "VNFM_OUTBOUND_DENY"},
	} {
		p, err := tc.s.Policy(tc.dev)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: %v, want %q", tc.s, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.s, err)
		}
		if p.AllowLoopback != tc.loop || p.AllowPrivate != tc.priv || len(p.Allow) != tc.allowLen {
			t.Errorf("%+v (dev %v): %+v", tc.s, tc.dev, p)
		}
	}
}
