package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if srv.TLSConfig != nil {
			_ = srv.ServeTLS(ln, "", "")
		} else {
			_ = srv.Serve(ln)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestHalfSentHeadIsClosed is the issue 14 reproduction: a client that
// sends part of a request head and then nothing is disconnected within
// 60 s (HeaderTimeout), without an answer to a request it never finished.
func TestHalfSentHeadIsClosed(t *testing.T) {
	srv, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte("POST /vnflcm/v1/vnf_instances HTTP/1.1\r\nHost: vnfm\r\nContent-Type: appl")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(70 * time.Second)) // the test's own bound
	b, err := io.ReadAll(c)
	took := time.Since(start)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still open after %s", took)
	}
	if took > 60*time.Second || took < HeaderTimeout-time.Second {
		t.Fatalf("closed after %s, want within 60 s and after HeaderTimeout %s", took, HeaderTimeout)
	}
	if strings.Contains(string(b), "200 OK") {
		t.Fatalf("the half-sent request was answered: %q", b)
	}
}

func writePair(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	// Written next to the target and renamed, as cert-manager and certbot do.
	for path, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}),
	} {
		if err := os.WriteFile(path+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

func servedCN(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // the test reads the certificate itself
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSCertificateIsReloaded: a renewed certificate is served without a
// restart; a broken renewal keeps the previous one.
func TestTLSCertificateIsReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, "first")
	srv, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }),
		certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)
	if cn := servedCN(t, addr); cn != "first" {
		t.Fatalf("serves %q", cn)
	}
	// A plain-HTTP request to the TLS port gets no API answer.
	if res, err := http.Get("http://" + addr + "/"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) == "ok" {
			t.Fatal("plain HTTP was served")
		}
	}
	writePair(t, dir, "second")
	deadline := time.Now().Add(10 * time.Second)
	for servedCN(t, addr) != "second" {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate was not served within 10 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A half-written renewal: the key does not match; "second" stays.
	if err := os.WriteFile(certFile, []byte("-----BEGIN CERTIFICATE-----\nnot yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	if cn := servedCN(t, addr); cn != "second" {
		t.Fatalf("after a broken renewal: %q", cn)
	}
	res, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}).Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(res.Body))
	res.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("HTTPS answer %q", b)
	}
}

func TestTLSSettingsAreCheckedAtStart(t *testing.T) {
	dir := t.TempDir()
	certFile, _ := writePair(t, dir, "x")
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct{ cert, key, want string }{
		{certFile, "", "both"},
		{"", certFile, "both"},
		{certFile, filepath.Join(dir, "missing.key"), "VNFM_TLS_KEY_FILE"},
		{certFile, certFile, "TLS certificate"},
	} {
		if _, err := NewHTTPServer(http.NotFoundHandler(), tc.cert, tc.key, log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}
