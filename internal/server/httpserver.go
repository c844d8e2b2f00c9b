package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// HeaderTimeout bounds how long a client may take to send a request head
// (request line and headers): a half-sent head is closed after it. Bodies
// have their own deadlines, set by the API per request (JSON bodies: a
// fixed time; package uploads: progress, then a total).
const HeaderTimeout = 10 * time.Second

// NewHTTPServer builds the API's HTTP server: header and idle timeouts and,
// when certFile and keyFile are given, TLS with the pair reloaded when the
// files change (a renewed certificate needs no restart).
func NewHTTPServer(h http.Handler, certFile, keyFile string, log *slog.Logger) (*http.Server, error) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: HeaderTimeout, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	if certFile == "" && keyFile == "" {
		return srv, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both VNFM_TLS_CERT_FILE and VNFM_TLS_KEY_FILE")
	}
	r, err := newCertReloader(certFile, keyFile, log)
	if err != nil {
		return nil, err
	}
	srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}
	return srv, nil
}

// certReloader serves the certificate in certFile/keyFile and loads the
// pair again when either file changes (checked at most once a second, on a
// handshake). A pair that does not load (a renewal half written) leaves
// the previous certificate in use until the files are complete.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
	failed  [2]fileStamp // the stamps of the last pair that did not load
}

type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = s.Ino
	}
	return st, nil
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	stamp, cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cert, r.stamp, r.checked = cert, stamp, time.Now()
	return r, nil
}

func (r *certReloader) load() ([2]fileStamp, *tls.Certificate, error) {
	var stamp [2]fileStamp
	var err error
	if stamp[0], err = stampOf(r.certFile); err != nil {
		return stamp, nil, fmt.Errorf("VNFM_TLS_CERT_FILE: %w", err)
	}
	if stamp[1], err = stampOf(r.keyFile); err != nil {
		return stamp, nil, fmt.Errorf("VNFM_TLS_KEY_FILE: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return stamp, nil, fmt.Errorf("TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	return stamp, &cert, nil
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < time.Second {
		return r.cert, nil
	}
	r.checked = time.Now()
	c, errC := stampOf(r.certFile)
	k, errK := stampOf(r.keyFile)
	if errC != nil || errK != nil || [2]fileStamp{c, k} == r.stamp || [2]fileStamp{c, k} == r.failed {
		return r.cert, nil
	}
	stamp, cert, err := r.load()
	if err != nil {
		r.failed = stamp
		r.log.Warn("the TLS certificate files changed but do not load; still serving the previous certificate", "err", err)
		return r.cert, nil
	}
	r.cert, r.stamp = cert, stamp
	r.log.Info("TLS certificate reloaded", "certFile", r.certFile)
	return r.cert, nil
}
