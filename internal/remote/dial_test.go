package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

// freeAddr returns a local address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A VM that is still booting: nothing listens for the first attempts, then
// sshd accepts and drops connections, then it works.
func TestDialRetriesWhileTheHostBoots(t *testing.T) {
	addr := freeAddr(t)
	hostKey := remotetest.NewHostKey(t)
	var attempts atomic.Int32
	var srv *remotetest.Server
	var mu sync.Mutex
	tg := remote.Target{
		User: testUser, Password: testPass,
		PublishedFingerprints: []string{ssh.FingerprintSHA256(hostKey.PublicKey())},
		InitialBackoff:        20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxWait: 10 * time.Second,
		Dialer: func(ctx context.Context, network, a string) (net.Conn, error) {
			if attempts.Add(1) == 4 { // the listener appears before the 4th attempt
				mu.Lock()
				srv = startServer(t, remotetest.Options{Addr: addr, HostKeys: []ssh.Signer{hostKey}, DropFirst: 2})
				mu.Unlock()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, a)
		},
	}
	tg.Host, tg.Port = "127.0.0.1", portOf(t, addr)
	var retried []string
	tg.OnRetry = func(_ context.Context, attempt int, err error) {
		retried = append(retried, fmt.Sprintf("%d %v", attempt, err))
	}
	start := time.Now()
	c := dial(t, tg)
	if n := attempts.Load(); n != 6 {
		t.Errorf("%d attempts, want 3 refused + 2 dropped + 1 good", n)
	}
	// Every failed attempt was reported before its retry, with its cause.
	if len(retried) != 5 || !strings.HasPrefix(retried[0], "1 ") || !strings.Contains(retried[0], "connection refused") || !strings.HasPrefix(retried[4], "5 ") {
		t.Errorf("OnRetry calls: %q", retried)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v", took)
	}
	if _, err := c.Run(context.Background(), "true", remote.RunOpts{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if srv.Accepted() != 3 || srv.Logins() != 1 {
		t.Errorf("server accepted %d, logins %d", srv.Accepted(), srv.Logins())
	}
	mu.Unlock()
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return tcp.Port
}

func TestDialGivesUpAtTheDeadline(t *testing.T) {
	addr := freeAddr(t)
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
		ctxWait time.Duration
		cause   error
	}{
		{"MaxWait", 700 * time.Millisecond, 0, context.DeadlineExceeded},
		{"context deadline", time.Minute, 700 * time.Millisecond, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctxWait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxWait)
				defer cancel()
			}
			start := time.Now()
			_, err := remote.Dial(ctx, remote.Target{Host: "127.0.0.1", Port: portOf(t, addr), User: "u", Password: "p",
				HostKeyPolicy: remote.InsecureIgnoreHostKey, MaxWait: tc.maxWait, InitialBackoff: 50 * time.Millisecond})
			took := time.Since(start)
			var ce *remote.ConnectError
			if !errors.As(err, &ce) || ce.Attempts < 3 || !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, tc.cause) {
				t.Fatalf("err = %v (%+v), want a ConnectError after several refused attempts", err, ce)
			}
			if took > time.Second || took < 400*time.Millisecond {
				t.Errorf("gave up after %v, want about 0.7 s", took)
			}
			if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "attempt") {
				t.Errorf("message: %v", err)
			}
		})
	}
}

func TestAuthFailureIsTypedAndNotRetried(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	for _, tc := range []struct {
		name      string
		mod       func(*remote.Target)
		retryAuth bool
		methods   string
	}{
		{"wrong password", func(tg *remote.Target) { tg.Password = "wrong" }, false, "password"},
		{"unknown user", func(tg *remote.Target) { tg.User = "nobody" }, false, "password"},
		{"wrong key", func(tg *remote.Target) { tg.Password, tg.PrivateKey = "", ed25519PEM(t) }, false, "publickey"},
		{"RetryAuth retries until MaxWait", func(tg *remote.Target) { tg.Password = "wrong"; tg.MaxWait = 600 * time.Millisecond }, true, "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := targetFor(t, s)
			tc.mod(&tg)
			tg.RetryAuth = tc.retryAuth
			tg.InitialBackoff = 50 * time.Millisecond
			before := s.Accepted()
			start := time.Now()
			_, err := remote.Dial(context.Background(), tg)
			var ae *remote.AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %T %v, want *AuthError", err, err)
			}
			if ae.User != tg.User || ae.Host != s.Addr || !strings.Contains(strings.Join(ae.Methods, ","), tc.methods) {
				t.Errorf("AuthError = %+v", ae)
			}
			msg := err.Error()
			if !strings.Contains(msg, `"`+tg.User+`"`) || !strings.Contains(msg, s.Addr) || strings.Contains(msg, "wrong") {
				t.Errorf("message: %s", msg)
			}
			n := s.Accepted() - before
			if !tc.retryAuth && (n != 1 || time.Since(start) > time.Second) {
				t.Errorf("auth failure retried: %d connections in %v", n, time.Since(start))
			}
			if tc.retryAuth && n < 3 {
				t.Errorf("RetryAuth: only %d connections", n)
			}
		})
	}
}

// ed25519PEM makes a fresh private key in OpenSSH PEM form.
func ed25519PEM(t *testing.T) []byte {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	return marshalKey(t, priv)
}

func marshalKey(t *testing.T, priv any) []byte {
	t.Helper()
	blk, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(blk)
}

func TestKeyAuth(t *testing.T) {
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)})
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})
	// An encrypted key as ssh-keygen writes it (-a 2: few KDF rounds, so
	// that the test stays fast under -race).
	encrypted, err := os.ReadFile("testdata/id_ed25519_encrypted")
	if err != nil {
		t.Fatal(err)
	}
	encPubLine, err := os.ReadFile("testdata/id_ed25519_encrypted.pub")
	if err != nil {
		t.Fatal(err)
	}
	encPub, _, _, _, err := ssh.ParseAuthorizedKey(encPubLine)
	if err != nil {
		t.Fatal(err)
	}
	mustPub := func(k any) ssh.PublicKey {
		p, err := ssh.NewPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, passphrase string
		pem              []byte
		pub              ssh.PublicKey
	}{
		{"ed25519 openssh", "", marshalKey(t, edKey), mustPub(edKey.Public())},
		{"ed25519 openssh with passphrase (ssh-keygen)", "correct horse", encrypted, encPub},
		{"rsa pkcs1", "", pkcs1, mustPub(&rsaKey.PublicKey)},
		{"ecdsa pkcs8", "", pkcs8, mustPub(&ecKey.PublicKey)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := tc.pub
			s := startServer(t, remotetest.Options{AuthorizedKeys: map[string][]ssh.PublicKey{testUser: {pub}}})
			tg := targetFor(t, s)
			tg.Password, tg.PrivateKey, tg.Passphrase = "", tc.pem, tc.passphrase
			c := dial(t, tg)
			if res, err := c.Run(context.Background(), "echo ok", remote.RunOpts{}); err != nil || res.Stdout != "ok\n" {
				t.Fatalf("Run = %q, %v", res.Stdout, err)
			}
		})
	}
	t.Run("missing passphrase", func(t *testing.T) {
		tg := remote.Target{Host: "127.0.0.1", User: "u", PrivateKey: encrypted, HostKeyPolicy: remote.InsecureIgnoreHostKey}
		_, err := remote.Dial(context.Background(), tg)
		if err == nil || !strings.Contains(err.Error(), "Passphrase") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("wrong passphrase", func(t *testing.T) {
		tg := remote.Target{Host: "127.0.0.1", User: "u", PrivateKey: encrypted, Passphrase: "nope",
			HostKeyPolicy: remote.InsecureIgnoreHostKey}
		_, err := remote.Dial(context.Background(), tg)
		if err == nil || strings.Contains(err.Error(), "correct horse") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("key first, then password", func(t *testing.T) {
		s := startServer(t, remotetest.Options{}) // the key is not authorized; the password is
		tg := targetFor(t, s)
		tg.PrivateKey = ed25519PEM(t)
		dial(t, tg)
	})
}

func TestKeyboardInteractive(t *testing.T) {
	s := startServer(t, remotetest.Options{KeyboardInteractiveOnly: true})
	c := dial(t, targetFor(t, s))
	if _, err := c.Run(context.Background(), "true", remote.RunOpts{}); err != nil {
		t.Fatal(err)
	}
	tg := targetFor(t, s)
	tg.Password = "wrong"
	_, err := remote.Dial(context.Background(), tg)
	var ae *remote.AuthError
	if !errors.As(err, &ae) || !strings.Contains(strings.Join(ae.Methods, ","), "keyboard-interactive") {
		t.Fatalf("err = %v", err)
	}
}

func TestDialConfigErrors(t *testing.T) {
	for name, tg := range map[string]remote.Target{
		"no host":            {User: "u", Password: "p", HostKeyPolicy: remote.InsecureIgnoreHostKey},
		"no credentials":     {Host: "h", User: "u", HostKeyPolicy: remote.InsecureIgnoreHostKey},
		"no verification":    {Host: "h", User: "u", Password: "p"},
		"pins without id":    {Host: "h", User: "u", Password: "p", Pins: memPins{}},
		"repin without pins": {Host: "h", User: "u", Password: "p", HostKeyPolicy: remote.HostKeyRepin, PublishedFingerprints: []string{"SHA256:x"}},
		"bad key":            {Host: "h", User: "u", PrivateKey: []byte("not a key"), HostKeyPolicy: remote.InsecureIgnoreHostKey},
	} {
		if _, err := remote.Dial(context.Background(), tg); err == nil {
			t.Errorf("%s: Dial succeeded", name)
		} else if strings.Contains(err.Error(), "connect") {
			t.Errorf("%s: tried to connect: %v", name, err)
		}
	}
}

// freezeConn stops delivering data in both directions once frozen, like a
// host that died without closing its connections.
type freezeConn struct {
	net.Conn
	frozen atomic.Bool
	closed chan struct{}
	once   sync.Once
}

func (c *freezeConn) Read(p []byte) (int, error) {
	if c.frozen.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(p)
	if c.frozen.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *freezeConn) Write(p []byte) (int, error) {
	if c.frozen.Load() {
		return len(p), nil // into the void
	}
	return c.Conn.Write(p)
}

func (c *freezeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A host that dies mid-command: keepalives notice, the command fails instead
// of hanging.
func TestDeadHostFailsTheCommand(t *testing.T) {
	s := startServer(t, remotetest.Options{})
	var fc *freezeConn
	tg := targetFor(t, s)
	tg.KeepAlive = 100 * time.Millisecond
	tg.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		fc = &freezeConn{Conn: c, closed: make(chan struct{})}
		return fc, nil
	}
	c := dial(t, tg)
	time.AfterFunc(300*time.Millisecond, func() { fc.frozen.Store(true) })
	start := time.Now()
	_, err := c.Run(context.Background(), "echo started; sleep 20", remote.RunOpts{})
	took := time.Since(start)
	var ce *remote.CommandError
	if !errors.As(err, &ce) || ce.ExitCode != -1 || !errors.Is(err, remote.ErrConnectionLost) ||
		!strings.Contains(err.Error(), "keepalives") {
		t.Fatalf("err = %v, want a CommandError for the lost connection", err)
	}
	// Later commands fail at once.
	if _, err := c.Run(context.Background(), "true", remote.RunOpts{}); err == nil {
		t.Error("command on a dead connection succeeded")
	}
	if took > 2*time.Second {
		t.Errorf("took %v to notice the dead host", took)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
}
