package k8sstandin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// runAPIServer is `k8s-standin apiserver` (kube-apiserver's flags).
func runAPIServer(ctx context.Context, args []string, stderr io.Writer) int {
	p, err := parseFlags(args, spec([]string{
		"advertise-address", "secure-port", "bind-address", "client-ca-file", "tls-cert-file", "tls-private-key-file",
		"service-account-key-file", "service-account-signing-key-file", "service-account-issuer", "etcd-servers", "etcd-cafile",
		"etcd-certfile", "etcd-keyfile", "cluster-signing-cert-file", "cluster-signing-key-file", "standin-store-file",
		"service-cluster-ip-range", "node-monitor-grace-period", "authorization-mode", "v",
	}, []string{"allow-privileged"}, nil))
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	logger := log.New(stderr, "kube-apiserver: ", log.LstdFlags)
	if err := serveAPI(ctx, p, logger); err != nil {
		logger.Printf("fatal: %v", err)
		return 1
	}
	return 0
}

func serveAPI(ctx context.Context, p *parsedArgs, logger *log.Logger) error {
	caPEM, err := os.ReadFile(p.get("client-ca-file"))
	if err != nil {
		return err
	}
	ca, err := ParseCertPEM(caPEM)
	if err != nil {
		return err
	}
	s := &APIServer{ClientCA: ca}
	if f := p.get("service-account-signing-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if s.SAKey, err = ParseKeyPEM(b); err != nil {
			return err
		}
		s.SAPub = s.SAKey.Public()
	}
	if f := p.get("service-account-key-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if s.SAPub, err = ParsePublicKeyPEM(b); err != nil {
			return err
		}
	}
	if cf, kf := p.get("cluster-signing-cert-file"), p.get("cluster-signing-key-file"); cf != "" && kf != "" {
		if s.Signer, err = LoadCA(cf, kf); err != nil {
			return err
		}
	}
	if g := p.get("node-monitor-grace-period"); g != "" {
		if s.NodeMonitorGracePeriod, err = time.ParseDuration(g); err != nil {
			return err
		}
	}
	if eps := p.all("etcd-servers"); len(eps) > 0 {
		if s.Store, err = NewEtcdStore(eps, p.get("etcd-cafile"), p.get("etcd-certfile"), p.get("etcd-keyfile")); err != nil {
			return err
		}
	} else {
		f := p.get("standin-store-file")
		if f == "" {
			return errors.New("either --etcd-servers or --standin-store-file is required")
		}
		if s.Store, err = NewMemStore(f); err != nil {
			return err
		}
	}
	port := p.get("secure-port")
	if port == "" {
		port = "6443"
	}
	bind := p.get("bind-address")
	if bind == "" {
		bind = "0.0.0.0"
	}
	adv := p.get("advertise-address")
	s.AdvertiseAddress = net.JoinHostPort(adv, port)
	pair, err := tls.LoadX509KeyPair(p.get("tls-cert-file"), p.get("tls-private-key-file"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	ln, err := net.Listen("tcp", net.JoinHostPort(bind, port))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.VerifyClientCertIfGiven,
			ClientCAs:    pool,
		},
	}
	// The store may still be electing a leader: create the default objects
	// as soon as it answers.
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := s.EnsureDefaults(c)
			cancel()
			if err == nil {
				break
			}
			if i%10 == 0 {
				logger.Printf("waiting for storage: %v", err)
			}
			time.Sleep(time.Second)
		}
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				s.ReconcileTokens(c)
				cancel()
			}
		}
	}()
	go func() {
		<-ctx.Done()
		sc, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sc)
	}()
	logger.Printf("serving on https://%s (advertise %s, storage %s)", ln.Addr(), s.AdvertiseAddress, storeKind(s.Store))
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func storeKind(st Store) string {
	switch st := st.(type) {
	case *EtcdStore:
		return "etcd " + strings.Join(st.Endpoints, ",")
	case *MemStore:
		return "file " + st.file
	}
	return fmt.Sprintf("%T", st)
}
