package outbound

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTLSConfig: what a connection to a client-registered endpoint trusts.
// The server presents httptest's own certificate, which no system trusts.
func TestTLSConfig(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for _, tc := range []struct {
		name               string
		pem                []byte
		withSystem, unsafe bool
		wantErr            error // from TLSConfig
		connects           bool
	}{
		{name: "the registered CA", pem: caPEM, connects: true},
		{name: "the registered CA and the system's roots", pem: caPEM, withSystem: true, connects: true},
		{name: "no CA: the system's roots only", pem: nil, connects: false},
		{name: "cert_verify False", pem: nil, unsafe: true, connects: true},
		{name: "cert_verify False wins over a CA", pem: []byte("junk"), unsafe: true, connects: true},
		{name: "a CA bundle with no certificate", pem: []byte("-----BEGIN NOTHING-----"), wantErr: ErrNoCertificate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.pem, tc.withSystem, tc.unsafe)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("TLSConfig: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if cfg.MinVersion < 0x0303 {
				t.Fatalf("MinVersion %x, want TLS 1.2 or later", cfg.MinVersion)
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			res, err := c.Get(srv.URL)
			if err == nil {
				res.Body.Close()
			}
			if (err == nil) != tc.connects {
				t.Fatalf("GET %s: %v; want connected %v", srv.URL, err, tc.connects)
			}
		})
	}
}
