package kubeadm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHAParams(t *testing.T) {
	base := func(ha any) map[string]any {
		m := tackerParams(t)
		param(m, "proxy")["http_proxy"] = "http://user1:password1@host1:3128"
		if ha != nil {
			m[ParamKey].(map[string]any)["ha"] = ha
		}
		return m
	}
	p, err := ParseParams(base(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.HA != (HAParams{LBPort: 16443, AdvertInt: 1, EtcdLBPort: 12379}) {
		t.Errorf("defaults %+v", p.HA)
	}
	p, err = ParseParams(base(map[string]any{"lb_port": "6440", "virtual_router_id": 77, "vrrp_interface": "ens3", "vrrp_unicast": "true", "vrrp_advert_int": 2}))
	if err != nil {
		t.Fatal(err)
	}
	if p.HA != (HAParams{LBPort: 6440, VirtualRouterID: 77, Interface: "ens3", Unicast: true, AdvertInt: 2, EtcdLBPort: 12379}) || p.vrid("x") != 77 {
		t.Errorf("parsed %+v", p.HA)
	}
	_, err = ParseParams(base(map[string]any{"lb_port": 6443, "virtual_router_id": 256, "vrrp_interface": "eth0; reboot", "vrrp_unicast": 3, "vrrp_advert_int": 0, "stats": true}))
	for key, text := range map[string]string{
		".ha.lb_port":           "used by Kubernetes",
		".ha.virtual_router_id": "out of VRRP's range 1..255",
		".ha.vrrp_interface":    "not a network interface name",
		".ha.vrrp_unicast":      "must be a boolean",
		".ha.vrrp_advert_int":   "out of range 1..10",
		".ha.stats":             "not a known parameter",
	} {
		wantProblem(t, err, ParamKey+key, text)
	}
	if _, err := ParseParams(base("yes")); err == nil || !strings.Contains(err.Error(), ParamKey+".ha: must be an object") {
		t.Errorf("ha as a string: %v", err)
	}
	// The etcd frontend: a port of its own, 0 turns it off.
	for _, tc := range []struct {
		ha   map[string]any
		want int
		bad  string
	}{
		{map[string]any{"etcd_lb_port": 0}, 0, ""},
		{map[string]any{"etcd_lb_port": "22379"}, 22379, ""},
		{map[string]any{"etcd_lb_port": 2379}, 0, "2379 is used by Kubernetes on the masters, where HAProxy runs with ha.lb_topology colocated"},
		{map[string]any{"etcd_lb_port": 2380}, 0, "2380 is used by Kubernetes on the masters"},
		{map[string]any{"etcd_lb_port": 16443}, 0, "16443 is also ha.lb_port"},
		{map[string]any{"lb_port": 12379}, 0, "12379 is also ha.lb_port"},
		{map[string]any{"etcd_lb_port": 70000}, 0, "70000 is not a TCP port (0: no etcd frontend)"},
		{map[string]any{"etcd_lb_port": "x"}, 0, "etcd_lb_port"},
	} {
		p, err := ParseParams(base(tc.ha))
		switch {
		case tc.bad != "":
			wantProblem(t, err, ParamKey+".ha.etcd_lb_port", tc.bad)
		case err != nil:
			t.Errorf("%v: %v", tc.ha, err)
		case p.HA.EtcdLBPort != tc.want:
			t.Errorf("%v: etcd_lb_port %d, want %d", tc.ha, p.HA.EtcdLBPort, tc.want)
		}
	}
}

// The derived virtual_router_id is stable per instance, in 1..255, and
// spreads: clusters on one network rarely collide.
func TestDeriveVRID(t *testing.T) {
	if DeriveVRID("inst-a") != DeriveVRID("inst-a") {
		t.Fatal("not stable")
	}
	seen := map[int]int{}
	for i := range 2000 {
		v := DeriveVRID("3f7c2a9e-0000-4000-8000-" + strings.Repeat("0", 6) + string(rune('a'+i%26)) + strings.Repeat("1", i%5) + string(rune('0'+i%10)) + string(rune('a'+(i/260)%26)))
		if v < 1 || v > 255 {
			t.Fatalf("VRID %d out of range", v)
		}
		seen[v]++
	}
	if len(seen) < 200 {
		t.Errorf("only %d distinct VRIDs for 2000 ids", len(seen))
	}
	p := &Params{}
	if p.vrid("inst-a") != DeriveVRID("inst-a") {
		t.Error("vrid does not derive")
	}
}

func TestVRRPSecret(t *testing.T) {
	a, err := newVRRPSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newVRRPSecret()
	if len(a) != 8 || a == b || !regexpAlnum(a) {
		t.Errorf("secrets %q %q", a, b)
	}
	conf := keepalivedConfig(vrrpConfig{ClusterID: "i", VRID: 9, VIP: netip.MustParsePrefix("10.0.0.80/24"), Secret: a, AdvertInt: 1, LBPort: 16443},
		vrrpNode{Name: "m1", IP: "10.0.0.11", Interface: "eth0", Priority: 103, Master: true})
	if vrrpSecretOf(conf) != a {
		t.Errorf("secret not read back from\n%s", conf)
	}
	if vrrpSecretOf("vrrp_instance X {\n auth_pass abc\n}") != "" {
		t.Error("read the secret of a keepalived.conf we did not write")
	}
}

func regexpAlnum(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func TestHAProxyConfig(t *testing.T) {
	cfg := haproxyConfig("inst-1", 16443, []lbMember{{"masternode-b", "10.0.0.12"}, {"masternode-a", "10.0.0.11"}, {"masternode-c", "10.0.0.13"}}, nil)
	for _, want := range []string{
		"bind *:16443",
		"mode tcp",
		"option httpchk",
		"http-check connect ssl",
		"http-check send meth GET uri /healthz",
		"http-check expect status 200",
		"\tserver masternode-a 10.0.0.11:6443 check verify none\n\tserver masternode-b 10.0.0.12:6443 check verify none\n\tserver masternode-c 10.0.0.13:6443 check verify none\n",
		"stats socket /run/haproxy/admin.sock mode 600 level admin",
		managedMarker,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	for _, bad := range []string{"stats uri", "stats auth", "awesomePassword", "listen stats"} {
		if strings.Contains(cfg, bad) {
			t.Errorf("haproxy.cfg has %q (no unprotected statistics page):\n%s", bad, cfg)
		}
	}
	if strings.Contains(cfg, "etcd") {
		t.Errorf("no etcd frontend was asked for:\n%s", cfg)
	}
	checkWith(t, cfg, "haproxy", "-c", "-q", "-f")
}

// The etcd frontend passes TLS through to every master's etcd client port;
// its health checks present the health-check client certificate and verify
// the members against the etcd CA.
func TestHAProxyConfigEtcd(t *testing.T) {
	dir := t.TempDir()
	ca, client := testEtcdPKI(t)
	caFile, certFile := filepath.Join(dir, "etcd-ca.crt"), filepath.Join(dir, "client.pem")
	if err := os.WriteFile(caFile, []byte(ca), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, []byte(client), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := haproxyConfig("inst-1", 16443, []lbMember{{"masternode-b", "10.0.0.12"}, {"masternode-a", "10.0.0.11"}},
		&etcdFrontend{Port: 12379, CAFile: caFile, CertFile: certFile})
	for _, want := range []string{
		"frontend k8s-api\n\tbind *:16443\n",
		"frontend etcd\n\tbind *:12379\n\tdefault_backend etcd\n",
		"backend etcd\n\tbalance roundrobin\n\toption httpchk\n\thttp-check connect ssl\n\thttp-check send meth GET uri /health\n\thttp-check expect status 200\n",
		"\tserver masternode-a 10.0.0.11:2379 check verify required ca-file " + caFile + " crt " + certFile + "\n\tserver masternode-b 10.0.0.12:2379 check",
		"\tserver masternode-a 10.0.0.11:6443 check verify none\n\tserver masternode-b 10.0.0.12:6443 check verify none\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	checkWith(t, cfg, "haproxy", "-c", "-q", "-f")
}

func TestParseEtcdCheckTLS(t *testing.T) {
	ca, client := testEtcdPKI(t)
	got, err := parseEtcdCheckTLS(ca + etcdCheckSep + "\n" + client)
	if err != nil || got == nil || got.CA != ca || got.ClientPEM != client {
		t.Fatalf("parse: %v %+v", err, got)
	}
	if got, err := parseEtcdCheckTLS("\n"); got != nil || err != nil {
		t.Errorf("nothing printed (before kubeadm init): %v %v", got, err)
	}
	otherCA, _ := testEtcdPKI(t)
	for name, out := range map[string]string{
		"no separator":   ca + client,
		"not a cert":     "hello\n" + etcdCheckSep + "\n" + client,
		"no key":         ca + etcdCheckSep + "\n" + client[:strings.Index(client, "-----BEGIN EC PRIVATE KEY")],
		"other CA":       otherCA + etcdCheckSep + "\n" + client,
		"key only":       ca + etcdCheckSep + "\n" + client[strings.Index(client, "-----BEGIN EC PRIVATE KEY"):],
		"cert is the CA": ca + etcdCheckSep + "\n" + ca,
	} {
		if _, err := parseEtcdCheckTLS(out); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the error quotes key material: %v", name, err)
		}
	}
	if keys := privateKeyBlocks(client); len(keys) != 1 || !strings.HasPrefix(keys[0], "-----BEGIN EC PRIVATE KEY") || !strings.Contains(client, keys[0]) {
		t.Errorf("private key blocks to mask: %q", keys)
	}
}

// testEtcdPKI makes an etcd CA and a client certificate with its key (PEM).
func testEtcdPKI(t *testing.T) (caPEM, clientPEM string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-etcd-healthcheck-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) + string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}

func TestKeepalivedConfig(t *testing.T) {
	v := vrrpConfig{ClusterID: "inst-1", VRID: 42, VIP: netip.MustParsePrefix("10.77.61.80/26"), Secret: "s3cretAB", AdvertInt: 1, LBPort: 16443}
	n1 := vrrpNode{Name: "masternode-a", IP: "10.77.61.11", Interface: "ens3", Priority: priorityOf(0, 3), Master: true}
	n3 := vrrpNode{Name: "masternode-c", IP: "10.77.61.13", Interface: "ens3", Priority: priorityOf(2, 3)}
	c1, c3 := keepalivedConfig(v, n1), keepalivedConfig(v, n3)
	for _, want := range []string{"state MASTER", "priority 103", "virtual_router_id 42", "interface ens3", "10.77.61.80/26 dev ens3",
		"auth_type PASS", "auth_pass s3cretAB", "track_script {\n\t\tchk_k8s_api_lb", `script "` + lbCheckPath + `"`,
		"router_id masternode-a", "enable_script_security", "advert_int 1"} {
		if !strings.Contains(c1, want) {
			t.Errorf("master 1 lacks %q:\n%s", want, c1)
		}
	}
	if !strings.Contains(c3, "state BACKUP") || !strings.Contains(c3, "priority 101") {
		t.Errorf("master 3:\n%s", c3)
	}
	if strings.Contains(c1, "unicast") || strings.Contains(c1, "weight") {
		t.Errorf("multicast config with unicast peers or a weighted track script:\n%s", c1)
	}
	// Priorities fall in master order and stay distinct.
	if priorityOf(0, 5) != 105 || priorityOf(4, 5) != 101 {
		t.Errorf("priorities %d..%d", priorityOf(0, 5), priorityOf(4, 5))
	}
	v.Peers = []string{"10.77.61.11", "10.77.61.12", "10.77.61.13"}
	u := keepalivedConfig(v, n1)
	if !strings.Contains(u, "unicast_src_ip 10.77.61.11\n\tunicast_peer {\n\t\t10.77.61.12\n\t\t10.77.61.13\n\t}") {
		t.Errorf("unicast peers:\n%s", u)
	}
	if !strings.Contains(lbCheckScript(16443), "/dev/tcp/127.0.0.1/16443") {
		t.Error("check script")
	}
	// keepalived -t wants the track script and the interface to exist:
	// /bin/true and one of this machine's interfaces stand in.
	if local := ethernetInterface(); local != "" {
		checkWith(t, strings.NewReplacer(lbCheckPath, "/bin/true", "ens3", local).Replace(c1), "keepalived", "-t", "-f")
	}
}

func ethernetInterface() string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if addrs, _ := i.Addrs(); i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 && len(addrs) > 0 {
			return i.Name
		}
	}
	return ""
}

// checkWith runs the real program's config check on cfg when it is installed.
func checkWith(t *testing.T, cfg, prog string, args ...string) {
	t.Helper()
	path, err := exec.LookPath(prog)
	if err != nil {
		for _, d := range []string{"/usr/sbin", "/sbin"} {
			if _, err := os.Stat(filepath.Join(d, prog)); err == nil {
				path = filepath.Join(d, prog)
			}
		}
	}
	if path == "" {
		t.Logf("%s not installed: config not checked by it", prog)
		return
	}
	f := filepath.Join(t.TempDir(), prog+".conf")
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, append(args, f)...).CombinedOutput()
	if err != nil {
		t.Errorf("%s %s: %v\n%s\n%s", prog, strings.Join(args, " "), err, out, cfg)
	}
}

func TestVRRPPlacement(t *testing.T) {
	addrs := parseIPAddr(`1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
2: eth0    inet 10.77.61.11/24 brd 10.77.61.255 scope global eth0\       valid_lft forever preferred_lft forever
2: eth0    inet 10.77.61.80/24 scope global secondary eth0\       valid_lft forever preferred_lft forever
3: ens4@if9    inet 192.168.5.3/28 brd 192.168.5.15 scope global ens4
`)
	if len(addrs) != 4 || !addrs[2].Secondary || addrs[3].Iface != "ens4" {
		t.Fatalf("parsed %+v", addrs)
	}
	iface, vip, err := vrrpPlacement(addrs, "10.77.61.11", "10.77.61.80", "")
	if err != nil || iface != "eth0" || vip.String() != "10.77.61.80/24" {
		t.Errorf("placement %s %s %v", iface, vip, err)
	}
	if _, vip, err := vrrpPlacement(addrs, "192.168.5.3", "192.168.5.9", ""); err != nil || vip.String() != "192.168.5.9/28" {
		t.Errorf("prefix from the subnet: %s %v", vip, err)
	}
	if _, _, err := vrrpPlacement(addrs, "192.168.5.3", "192.168.5.20", ""); err == nil || !strings.Contains(err.Error(), "not in the masters' subnet 192.168.5.0/28") {
		t.Errorf("VIP outside: %v", err)
	}
	if _, _, err := vrrpPlacement(addrs, "10.77.61.11", "10.77.61.80", "ens4"); err == nil || !strings.Contains(err.Error(), "vrrp_interface is ens4") {
		t.Errorf("wrong interface: %v", err)
	}
	if _, _, err := vrrpPlacement(addrs, "10.9.9.9", "10.9.9.8", ""); err == nil || !strings.Contains(err.Error(), "no interface holds the node address 10.9.9.9") {
		t.Errorf("no address: %v", err)
	}
	if !holdsVIP(addrs, "10.77.61.80") || holdsVIP(addrs, "10.77.61.81") {
		t.Error("holdsVIP")
	}
}
