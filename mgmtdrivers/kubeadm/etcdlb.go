package kubeadm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// etcd behind the VIP (seed 000: "signal distribution settings for k8s-api
// and etcd"). HAProxy on every load-balancer node (the masters, or the
// dedicated LBs) gets a second TCP frontend, ha.etcd_lb_port (12379), that
// passes TLS through to every master's etcd client port 2379; etcd clients
// outside the masters (a VIM owner's etcdctl, backup jobs) reach
// https://<VIP>:12379 and survive the loss of the VIP holder like API
// clients do. Two things make that work:
//   - etcd's server certificates name the VIP: the main master's kubeadm init
//     gets etcd.local.serverCertSANs = [VIP] (install script
//     --etcd-cert-sans), which kubeadm keeps in the kubeadm-config ConfigMap,
//     so control-plane joins (also of healed masters) issue theirs with it;
//   - HAProxy's health checks present a client certificate (etcd wants one on
//     every connection): copies of kubeadm's etcd CA and healthcheck-client
//     pair, taken from a master once kubeadm made them and refreshed at every
//     load-balancer reconfiguration. Before kubeadm init there is no etcd and
//     no certificate, so the frontend appears once the control plane exists.

// etcdCheckTLS is HAProxy's material for its etcd health checks.
type etcdCheckTLS struct {
	CA        string // the etcd CA certificate (PEM)
	ClientPEM string // healthcheck-client certificate and key (PEM)
}

// etcdCheckCmd prints the etcd CA, a separator and the health-check client
// pair: kubeadm's originals on a master, else HAProxy's copies (a dedicated
// load balancer configured before); nothing when neither exists yet.
const etcdCheckSep = "--- mini-vnfm etcd client ---"

var etcdCheckCmd = `p=` + etcdPKIDir + ` h=/etc/haproxy
if [ -s $p/ca.crt ] && [ -s $p/healthcheck-client.crt ] && [ -s $p/healthcheck-client.key ]; then
	cat $p/ca.crt; echo "` + etcdCheckSep + `"; cat $p/healthcheck-client.crt $p/healthcheck-client.key
elif [ -s $h/` + etcdCheckCAFile + ` ] && [ -s $h/` + etcdCheckCertFile + ` ]; then
	cat $h/` + etcdCheckCAFile + `; echo "` + etcdCheckSep + `"; cat $h/` + etcdCheckCertFile + `
fi`

// parseEtcdCheckTLS checks what etcdCheckCmd printed: a CA certificate and
// a client certificate with its key, issued by that CA for client auth.
// Empty output: nil, nil.
func parseEtcdCheckTLS(out string) (*etcdCheckTLS, error) {
	if strings.TrimSpace(out) == "" {
		return nil, nil
	}
	caPEM, clientPEM, ok := strings.Cut(out, etcdCheckSep+"\n")
	if !ok {
		return nil, errors.New("unexpected output (no separator)")
	}
	blk, _ := pem.Decode([]byte(caPEM))
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("the etcd CA is not a PEM certificate")
	}
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the etcd CA: %w", err)
	}
	pair, err := tls.X509KeyPair([]byte(clientPEM), []byte(clientPEM))
	if err != nil { // its message never quotes the key
		return nil, fmt.Errorf("the etcd health-check client certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("the etcd health-check client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	return &etcdCheckTLS{CA: caPEM, ClientPEM: clientPEM}, nil
}

// etcdCheckTLS finds HAProxy's etcd health-check material on the connected
// masters (or load balancers), once per hook. Nil without an etcd frontend
// (ha.etcd_lb_port 0) or before kubeadm made the certificates.
func (h *hook) etcdCheckTLS(ctx context.Context, ss *sessions) (*etcdCheckTLS, error) {
	if h.p.HA.EtcdLBPort == 0 || h.lbWithoutEtcd {
		return nil, nil
	}
	if h.etcdTLS != nil {
		return h.etcdTLS, nil
	}
	var errs []string
	for _, n := range append(h.topo.All(), h.topo.LBs...) {
		s := ss.get(n)
		if s == nil {
			continue
		}
		out, err := s.run(ctx, etcdCheckCmd, h.d.sudo(remote.RunOpts{Timeout: 30 * time.Second}))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if _, key, ok := strings.Cut(out, etcdCheckSep); ok {
			ss.addSecrets(privateKeyBlocks(key)...)
		}
		t, err := parseEtcdCheckTLS(out)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", n.Name, err))
			continue
		}
		if t != nil {
			h.etcdTLS = t
			return t, nil
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("reading the etcd client certificate for HAProxy's etcd health checks: %s", strings.Join(errs, "; "))
	}
	return nil, nil
}

// privateKeyBlocks returns the PEM private key blocks of s (to be masked).
func privateKeyBlocks(s string) []string {
	var out []string
	rest := []byte(s)
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return out
		}
		if strings.Contains(blk.Type, "PRIVATE KEY") {
			out = append(out, strings.TrimSpace(string(pem.EncodeToMemory(blk))))
		}
	}
}

// enableEtcdLB adds the etcd frontend to HAProxy on every load-balancer
// node once the control plane exists (kubeadm made the certificates).
func (h *hook) enableEtcdLB(ctx context.Context, ss *sessions) error {
	if h.p.HA.EtcdLBPort == 0 {
		return nil
	}
	t := h.topo
	etls, err := h.etcdCheckTLS(ctx, ss)
	if err != nil {
		return err
	}
	if etls == nil {
		return fmt.Errorf("no master has kubeadm's etcd CA and healthcheck-client certificate (%s) after kubeadm init: cannot put etcd behind the VIP; set ha.etcd_lb_port to 0 to go without", etcdPKIDir)
	}
	h.note(ctx, "etcd behind the VIP: HAProxy's etcd frontend on :%d to the %d masters' etcd (:%d), health-checked", h.p.HA.EtcdLBPort, len(t.Masters), EtcdClientPort)
	if h.p.LB.Dedicated() {
		return h.reloadDedicatedLBs(ctx, t.Masters, nil)
	}
	_, err = h.configureLB(ctx, ss, reachable(ss, t.Masters), t.Masters, t.Masters, false)
	return err
}

// EtcdEndpoint is the etcd client URL through the VIP ("" without an HA
// control plane or an etcd frontend).
func (t *Topology) EtcdEndpoint(p *Params) string {
	if !t.HA() || p.HA.EtcdLBPort == 0 {
		return ""
	}
	return "https://" + net.JoinHostPort(t.VIP, strconv.Itoa(p.HA.EtcdLBPort))
}
