package k8sstandin

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
)

// env is a command's world.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// phaseError is kubeadm's "error execution phase X: ..." failure.
type phaseError struct {
	phase string
	err   error
}

func (e *phaseError) Error() string {
	return fmt.Sprintf("error execution phase %s: %v", e.phase, e.err)
}

func phase(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *phaseError
	if errors.As(err, &pe) {
		return err
	}
	return &phaseError{name, err}
}

// certsTTL is how long uploaded control-plane certificates live (kubeadm's
// fixed 2 h; K8S_STANDIN_CERTS_TTL shortens it for tests).
func certsTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("K8S_STANDIN_CERTS_TTL")); err == nil && d > 0 {
		return d
	}
	return 2 * time.Hour
}

func kubeadmMain(e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprint(e.stdout, "kubeadm (k8s-standin): easily bootstrap a secure Kubernetes cluster\n\nCommands: init, init phase upload-certs, join, reset, token {create,list,delete,generate}, certs certificate-key, version\n")
		return 0
	}
	var err error
	switch args[0] {
	case "version":
		err = kubeadmVersion(e, args[1:])
	case "init":
		if len(args) > 1 && args[1] == "phase" {
			err = kubeadmInitPhase(e, args[2:])
		} else {
			stepDelay(e)
			err = kubeadmInit(e, args[1:])
		}
	case "join":
		stepDelay(e)
		err = kubeadmJoin(e, args[1:])
	case "token":
		err = kubeadmToken(e, args[1:])
	case "reset":
		err = kubeadmReset(e, args[1:])
	case "certs":
		if len(args) > 1 && args[1] == "certificate-key" {
			fmt.Fprintln(e.stdout, NewCertificateKey())
			return 0
		}
		err = fmt.Errorf("unknown command %q for \"kubeadm certs\" (the stand-in supports: certificate-key)", strings.Join(args[1:], " "))
	default:
		err = fmt.Errorf("unknown command %q for \"kubeadm\"", args[0])
	}
	if err != nil {
		fmt.Fprintln(e.stderr, err.Error())
		var pe *phaseError
		if errors.As(err, &pe) {
			fmt.Fprintln(e.stderr, "To see the stack trace of this error execute with --v=5 or higher")
		}
		return 1
	}
	return 0
}

func kubeadmVersion(e *env, args []string) error {
	p, err := parseFlags(args, spec([]string{"output"}, nil, map[string]string{"o": "output"}))
	if err != nil {
		return err
	}
	switch p.get("output") {
	case "short":
		fmt.Fprintln(e.stdout, KubernetesVersion)
	case "json":
		fmt.Fprintf(e.stdout, "{\"clientVersion\":{\"major\":\"1\",\"gitVersion\":%q,\"platform\":\"linux/amd64\"}}\n", KubernetesVersion)
	default:
		fmt.Fprintf(e.stdout, "kubeadm version: &version.Info{Major:\"1\", GitVersion:%q, GitCommit:\"k8s-standin-%s\", Platform:\"linux/amd64\"}\n", KubernetesVersion, Version)
	}
	return nil
}

// common flags kubeadm accepts and the stand-in ignores
var ignoredFlags = []string{"cri-socket", "v", "ignore-preflight-errors", "kubernetes-version", "image-repository", "skip-phases", "patches"}

func preflightCommon(controlPlane bool, port string, ignore []string) error {
	ignored := map[string]bool{}
	for _, i := range ignore {
		ignored[strings.ToLower(i)] = true
	}
	var errs []string
	add := func(id, msg string) {
		if !ignored["all"] && !ignored[strings.ToLower(id)] {
			errs = append(errs, fmt.Sprintf("\t[ERROR %s]: %s", id, msg))
		}
	}
	if os.Geteuid() != 0 {
		add("IsPrivilegedUser", "user is not running as root")
	}
	if controlPlane {
		if ln, err := net.Listen("tcp", ":"+port); err != nil {
			add("Port-"+port, "Port "+port+" is in use")
		} else {
			ln.Close()
		}
		for _, f := range []string{"kube-apiserver.yaml", "etcd.yaml"} {
			if _, err := os.Stat(filepath.Join(manifestsDir, f)); err == nil {
				add("FileAvailable--etc-kubernetes-manifests-"+f, filepath.Join(manifestsDir, f)+" already exists")
			}
		}
	}
	if _, err := os.Stat(kubeletConf); err == nil {
		add("FileAvailable--etc-kubernetes-kubelet.conf", kubeletConf+" already exists")
	}
	if !controlPlane {
		if _, err := os.Stat(filepath.Join(pkiDir, "ca.crt")); err == nil {
			add("FileAvailable--etc-kubernetes-pki-ca.crt", filepath.Join(pkiDir, "ca.crt")+" already exists")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("[preflight] Some fatal errors occurred:\n%s\n[preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`", strings.Join(errs, "\n"))
}

func etcdAvailable() bool {
	if os.Getenv("K8S_STANDIN_NO_ETCD") == "1" {
		return false
	}
	_, err := exec.LookPath("etcd")
	return err == nil
}

// clusterParams are what the certificates and manifests of a control-plane
// node are made from.
type clusterParams struct {
	nodeName   string
	advertise  string
	port       string
	endpoint   string // host:port
	serviceNet string
	podNet     string
	// etcdSANs are extra SANs of etcd's server certificate
	// (etcd.local.serverCertSANs), apiSANs of the API server's
	// (apiServer.certSANs, --apiserver-cert-extra-sans).
	etcdSANs []string
	apiSANs  []string
}

// sansOf splits SANs into IPs and DNS names.
func sansOf(sans []string) (ips []net.IP, dns []string) {
	for _, s := range sans {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		} else if s != "" {
			dns = append(dns, s)
		}
	}
	return ips, dns
}

func (c clusterParams) serviceIP() net.IP {
	pfx, err := netip.ParsePrefix(c.serviceNet)
	if err != nil {
		return net.ParseIP("10.96.0.1")
	}
	return net.IP(pfx.Masked().Addr().Next().AsSlice())
}

// issueNodeCerts writes the certificates a control-plane node needs, given
// the cluster's CAs (already on disk).
func issueNodeCerts(c clusterParams, ca, etcdCA *CA) error {
	host, _, _ := net.SplitHostPort(c.endpoint)
	dns := []string{c.nodeName, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	ips := []net.IP{c.serviceIP(), net.ParseIP(c.advertise), net.ParseIP("127.0.0.1")}
	xips, xdns := sansOf(append([]string{host}, c.apiSANs...))
	ips, dns = append(ips, xips...), append(dns, xdns...)
	cert, key, err := ca.Issue(CertSpec{CN: "kube-apiserver", DNS: dns, IPs: ips, Server: true})
	if err != nil {
		return err
	}
	if err := WritePair(pkiDir, "apiserver", cert, key); err != nil {
		return err
	}
	etcdIPs := []net.IP{net.ParseIP(c.advertise), net.ParseIP("127.0.0.1"), net.IPv6loopback}
	etcdDNS := []string{c.nodeName, "localhost"}
	xips, xdns = sansOf(c.etcdSANs)
	etcdIPs, etcdDNS = append(etcdIPs, xips...), append(etcdDNS, xdns...)
	for _, x := range []struct {
		dir, base, cn string
		orgs          []string
		server        bool
		signer        *CA
	}{
		{etcdPKIDir, "server", c.nodeName, nil, true, etcdCA},
		{etcdPKIDir, "peer", c.nodeName, nil, true, etcdCA},
		{etcdPKIDir, "healthcheck-client", "kube-etcd-healthcheck-client", nil, false, etcdCA},
		{pkiDir, "apiserver-etcd-client", "kube-apiserver-etcd-client", nil, false, etcdCA},
		{pkiDir, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"kubeadm:cluster-admins"}, false, ca},
	} {
		spec := CertSpec{CN: x.cn, Orgs: x.orgs, Client: true, Server: x.server}
		if x.server {
			spec.IPs, spec.DNS = etcdIPs, etcdDNS
			if x.base == "peer" { // serverCertSANs name etcd's client endpoint only
				spec.IPs, spec.DNS = etcdIPs[:3], etcdDNS[:2]
			}
		}
		cert, key, err := x.signer.Issue(spec)
		if err != nil {
			return err
		}
		if err := WritePair(x.dir, x.base, cert, key); err != nil {
			return err
		}
	}
	return nil
}

// writeAdminConf mints kubernetes-admin credentials (group system:masters).
func writeAdminConf(ca *CA, server string) error {
	cert, key, err := ca.Issue(CertSpec{CN: "kubernetes-admin", Orgs: []string{"system:masters"}, Client: true})
	if err != nil {
		return err
	}
	kp, err := KeyPEM(key)
	if err != nil {
		return err
	}
	kc := NewKubeconfig(server, CertPEM(ca.Cert), "kubernetes-admin", AuthInfo{
		ClientCertificateData: base64.StdEncoding.EncodeToString(CertPEM(cert)),
		ClientKeyData:         base64.StdEncoding.EncodeToString(kp),
	})
	return writeFile(adminConf, kc.Marshal(), 0o600)
}

func writeKubeletFiles(nodeName string) error {
	if err := writeFile(kubeletFlagsEnv, []byte(fmt.Sprintf("KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --hostname-override=%s\"\n", nodeName)), 0o644); err != nil {
		return err
	}
	cfg := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"
	return writeFile(filepath.Join(kubeletDir, "config.yaml"), []byte(cfg), 0o644)
}

// writeControlPlaneManifests writes the etcd and kube-apiserver manifests.
func writeControlPlaneManifests(c clusterParams, useEtcd bool, initialCluster, clusterState string) error {
	if useEtcd {
		if err := writeEtcdManifest(c, initialCluster, clusterState); err != nil {
			return err
		}
	}
	return writeAPIServerManifest(c, useEtcd)
}

func writeEtcdManifest(c clusterParams, initialCluster, clusterState string) error {
	{
		peer := "https://" + net.JoinHostPort(c.advertise, "2380")
		client := "https://" + net.JoinHostPort(c.advertise, "2379")
		cmd := []string{"etcd",
			"--name=" + c.nodeName,
			"--data-dir=" + etcdDataDir,
			"--advertise-client-urls=" + client,
			"--listen-client-urls=https://127.0.0.1:2379," + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + initialCluster,
			"--initial-cluster-state=" + clusterState,
			"--cert-file=" + etcdPKIDir + "/server.crt", "--key-file=" + etcdPKIDir + "/server.key",
			"--client-cert-auth=true", "--trusted-ca-file=" + etcdPKIDir + "/ca.crt",
			"--peer-cert-file=" + etcdPKIDir + "/peer.crt", "--peer-key-file=" + etcdPKIDir + "/peer.key",
			"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + etcdPKIDir + "/ca.crt",
			"--snapshot-count=10000", "--heartbeat-interval=250", "--election-timeout=2500",
			"--logger=zap", "--log-outputs=stderr",
		}
		return writeManifest("etcd", cmd, map[string]string{"kubeadm.kubernetes.io/etcd.advertise-client-urls": client})
	}
}

func writeAPIServerManifest(c clusterParams, useEtcd bool) error {
	cmd := []string{"kube-apiserver",
		"--advertise-address=" + c.advertise,
		"--secure-port=" + c.port,
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--client-ca-file=" + pkiDir + "/ca.crt",
		"--tls-cert-file=" + pkiDir + "/apiserver.crt",
		"--tls-private-key-file=" + pkiDir + "/apiserver.key",
		"--service-account-key-file=" + pkiDir + "/sa.pub",
		"--service-account-signing-key-file=" + pkiDir + "/sa.key",
		"--service-cluster-ip-range=" + c.serviceNet,
		"--cluster-signing-cert-file=" + pkiDir + "/ca.crt",
		"--cluster-signing-key-file=" + pkiDir + "/ca.key",
	}
	if useEtcd {
		cmd = append(cmd, "--etcd-servers=https://127.0.0.1:2379",
			"--etcd-cafile="+etcdPKIDir+"/ca.crt",
			"--etcd-certfile="+pkiDir+"/apiserver-etcd-client.crt",
			"--etcd-keyfile="+pkiDir+"/apiserver-etcd-client.key")
	} else {
		cmd = append(cmd, "--standin-store-file="+standinDataDir+"/store.json")
	}
	return writeManifest("kube-apiserver", cmd, map[string]string{
		"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint": net.JoinHostPort(c.advertise, c.port)})
}

// waitHealthy polls https://addr/healthz until it answers ok.
func waitHealthy(ctx context.Context, addr string, caPEM []byte, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	c, err := NewClient(ClientConfig{Server: "https://" + addr, CAPEM: caPEM, Timeout: 3 * time.Second})
	if err != nil {
		return 0, err
	}
	deadline := t0.Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		var b []byte
		last = c.Do(ctx, http.MethodGet, "/healthz", nil, &b)
		if last == nil && string(b) == "ok" {
			return time.Since(t0), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("the API server at %s did not become healthy within %v (last error: %v); see %s/kube-apiserver.log and %s/etcd.log",
		addr, timeout, last, standinLogDir, standinLogDir)
}

// retry runs fn until it succeeds, fails with a non-connection error, or
// the timeout passes (kubeadm's API client retries while the endpoint, e.g.
// a VIP behind HAProxy, comes up).
func retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		var ce *ConnError
		var se *StatusError
		transient := errors.As(err, &ce) || (errors.As(err, &se) && (se.Code >= 500 || se.Code == 429))
		if err == nil || !transient || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func mirrorPods(ctx context.Context, c *Client, nodeName, advertise, port string, useEtcd bool) error {
	comps := []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
	if useEtcd {
		comps = append([]string{"etcd"}, comps...)
	}
	for _, comp := range comps {
		ann := Obj{"kubernetes.io/config.source": "file", "kubernetes.io/config.mirror": randHex(32), "kubernetes.io/config.hash": randHex(32)}
		switch comp {
		case "etcd":
			ann["kubeadm.kubernetes.io/etcd.advertise-client-urls"] = "https://" + net.JoinHostPort(advertise, "2379")
		case "kube-apiserver":
			ann["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = net.JoinHostPort(advertise, port)
		}
		pod := Obj{"apiVersion": "v1", "kind": "Pod",
			"metadata": Obj{"name": comp + "-" + nodeName, "namespace": "kube-system", "annotations": ann,
				"labels":          Obj{"component": comp, "tier": "control-plane"},
				"ownerReferences": []any{Obj{"apiVersion": "v1", "kind": "Node", "name": nodeName, "controller": true}}},
			"spec": Obj{"nodeName": nodeName, "hostNetwork": true, "priorityClassName": "system-node-critical",
				"containers": []any{Obj{"name": comp, "image": "registry.k8s.io/" + comp + ":" + KubernetesVersion}}}}
		err := retry(ctx, 30*time.Second, func() error {
			_, err := c.Create(ctx, resPods, "kube-system", pod)
			if IsAlreadyExists(err) {
				_ = c.Delete(ctx, resPods, "kube-system", comp+"-"+nodeName)
				_, err = c.Create(ctx, resPods, "kube-system", pod)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func kubeadmInit(e *env, args []string) error {
	p, err := parseFlags(args, spec(append([]string{"control-plane-endpoint", "pod-network-cidr", "service-cidr", "apiserver-advertise-address",
		"apiserver-bind-port", "token", "token-ttl", "certificate-key", "node-name", "apiserver-cert-extra-sans", "service-dns-domain", "config"}, ignoredFlags...),
		[]string{"upload-certs", "skip-token-print", "skip-certificate-key-print"}, nil))
	if err != nil {
		return err
	}
	if cfgPath := p.get("config"); cfgPath != "" {
		if err := applyInitConfig(p, cfgPath); err != nil {
			return err
		}
	}
	ctx, out := e.ctx, e.stdout
	fmt.Fprintf(out, "[init] Using Kubernetes version: %s\n", KubernetesVersion)
	c := clusterParams{nodeName: p.get("node-name"), advertise: p.get("apiserver-advertise-address"), port: p.get("apiserver-bind-port"),
		serviceNet: p.get("service-cidr"), podNet: p.get("pod-network-cidr"), etcdSANs: p.all("etcd-server-cert-sans"),
		apiSANs: p.all("apiserver-cert-extra-sans")}
	if c.port == "" {
		c.port = "6443"
	}
	fmt.Fprintln(out, "[preflight] Running pre-flight checks")
	if err := preflightCommon(true, c.port, p.all("ignore-preflight-errors")); err != nil {
		return phase("preflight", err)
	}
	if c.nodeName == "" {
		c.nodeName = nodeHostname()
	}
	if c.advertise == "" {
		if c.advertise, err = defaultRouteIP(); err != nil {
			return phase("init", err)
		}
	} else if net.ParseIP(c.advertise) == nil {
		return fmt.Errorf("apiserver-advertise-address: invalid IP address %q", c.advertise)
	}
	if c.serviceNet == "" {
		c.serviceNet = "10.96.0.0/12"
	}
	for _, cidr := range []string{c.serviceNet, c.podNet} {
		if _, _, err := net.ParseCIDR(cidr); cidr != "" && err != nil {
			return fmt.Errorf("invalid CIDR %q: %v", cidr, err)
		}
	}
	cpe := p.get("control-plane-endpoint")
	c.endpoint = cpe
	if c.endpoint == "" {
		c.endpoint = net.JoinHostPort(c.advertise, c.port)
	} else if _, _, err := net.SplitHostPort(c.endpoint); err != nil {
		c.endpoint = net.JoinHostPort(c.endpoint, c.port)
	}
	token := p.get("token")
	if token == "" {
		token = NewBootstrapToken()
	} else if !bootstrapTokenRE.MatchString(token) {
		return fmt.Errorf("the bootstrap token %q was not of the form %q", token, `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`)
	}
	ttl := 24 * time.Hour
	if v := p.get("token-ttl"); v != "" {
		if ttl, err = parseTTL(v); err != nil {
			return err
		}
	}
	certKey := p.get("certificate-key")
	if certKey != "" {
		if _, err := certKeyAEAD(certKey); err != nil {
			return err
		}
	}
	upload := p.bool("upload-certs")
	if upload && certKey == "" {
		certKey = NewCertificateKey()
	}

	// certs
	fmt.Fprintf(out, "[certs] Using certificateDir folder %q\n", pkiDir)
	ca, err := NewCA("kubernetes")
	if err != nil {
		return phase("certs", err)
	}
	if err := WritePair(pkiDir, "ca", ca.Cert, ca.Key); err != nil {
		return phase("certs", err)
	}
	fmt.Fprintln(out, "[certs] Generating \"ca\" certificate and key")
	etcdCA, err := NewCA("etcd-ca")
	if err != nil {
		return phase("certs", err)
	}
	if err := WritePair(etcdPKIDir, "ca", etcdCA.Cert, etcdCA.Key); err != nil {
		return phase("certs", err)
	}
	fmt.Fprintln(out, "[certs] Generating \"etcd/ca\" certificate and key")
	if err := issueNodeCerts(c, ca, etcdCA); err != nil {
		return phase("certs", err)
	}
	fmt.Fprintf(out, "[certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local %s] and IPs [%s %s]\n", c.nodeName, c.serviceIP(), c.advertise)
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return phase("certs", err)
	}
	if err := writeSAKeys(saKey); err != nil {
		return phase("certs", err)
	}
	fmt.Fprintln(out, "[certs] Generating \"sa\" key and public key")

	// kubeconfigs
	server := "https://" + c.endpoint
	fmt.Fprintf(out, "[kubeconfig] Using kubeconfig folder %q\n", kubernetesDir)
	if err := writeAdminConf(ca, server); err != nil {
		return phase("kubeconfig", err)
	}
	fmt.Fprintln(out, "[kubeconfig] Writing \"admin.conf\" kubeconfig file")
	if err := writeNodeKubeconfig(ca, server, c.nodeName); err != nil {
		return phase("kubeconfig", err)
	}
	fmt.Fprintln(out, "[kubeconfig] Writing \"kubelet.conf\" kubeconfig file")

	useEtcd := etcdAvailable()
	if useEtcd {
		fmt.Fprintf(out, "[etcd] Creating static Pod manifest for local etcd in %q\n", manifestsDir)
	} else {
		fmt.Fprintf(out, "[etcd] etcd is not installed: the k8s stand-in keeps the cluster state in %s/store.json (single control-plane node only)\n", standinDataDir)
	}
	fmt.Fprintf(out, "[control-plane] Using manifest folder %q\n[control-plane] Creating static Pod manifest for \"kube-apiserver\"\n", manifestsDir)
	if err := writeControlPlaneManifests(c, useEtcd, c.nodeName+"=https://"+net.JoinHostPort(c.advertise, "2380"), "new"); err != nil {
		return phase("control-plane", err)
	}
	if err := writeKubeletFiles(c.nodeName); err != nil {
		return phase("kubelet-start", err)
	}
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet environment file with flags to file %q\n[kubelet-start] Starting the kubelet\n", kubeletFlagsEnv)
	if err := restartKubelet(out); err != nil {
		return phase("kubelet-start", err)
	}
	fmt.Fprintf(out, "[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory %q\n", manifestsDir)
	took, err := waitHealthy(ctx, net.JoinHostPort(c.advertise, c.port), CertPEM(ca.Cert), 2*time.Minute)
	if err != nil {
		return phase("wait-control-plane", err)
	}
	fmt.Fprintf(out, "[api-check] The API server is healthy after %.9fs\n", took.Seconds())

	kc, err := LoadKubeconfig(adminConf)
	if err != nil {
		return err
	}
	admin, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "[upload-config] Storing the configuration used in ConfigMap \"kubeadm-config\" in the \"kube-system\" Namespace")
	if err := retry(ctx, time.Minute, func() error { return uploadConfig(ctx, admin, c, cpe) }); err != nil {
		return phase("upload-config", err)
	}
	if upload {
		fmt.Fprintln(out, "[upload-certs] Storing the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace")
		if err := uploadCerts(ctx, admin, certKey); err != nil {
			return phase("upload-certs", err)
		}
		if !p.bool("skip-certificate-key-print") {
			fmt.Fprintf(out, "[upload-certs] Using certificate key:\n%s\n", certKey)
		}
	} else {
		fmt.Fprintln(out, "[upload-certs] Skipping phase. Please see --upload-certs")
	}
	node := nodeObject(c.nodeName, c.advertise, true)
	if podCIDR := c.podNet; podCIDR != "" {
		ensureMap(node, "spec")["podCIDR"] = podCIDR
	}
	if err := retry(ctx, time.Minute, func() error {
		_, err := admin.Create(ctx, resNodes, "", node)
		if IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return phase("kubelet-start", fmt.Errorf("registering node %s: %w", c.nodeName, err))
	}
	if err := mirrorPods(ctx, admin, c.nodeName, c.advertise, c.port, useEtcd); err != nil {
		return phase("kubelet-start", err)
	}
	fmt.Fprintf(out, "[mark-control-plane] Marking the node %s as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]\n", c.nodeName)
	fmt.Fprintf(out, "[mark-control-plane] Marking the node %s as control-plane by adding the taints [node-role.kubernetes.io/control-plane:NoSchedule]\n", c.nodeName)
	fmt.Fprintf(out, "[bootstrap-token] Using token: %s\n", token)
	if err := createToken(ctx, admin, token, ttl, "The default bootstrap token generated by 'kubeadm init'."); err != nil {
		return phase("bootstrap-token", err)
	}
	fmt.Fprintln(out, "[bootstrap-token] Creating the \"cluster-info\" ConfigMap in the \"kube-public\" namespace")
	if err := clusterInfo(ctx, admin, server, CertPEM(ca.Cert)); err != nil {
		return phase("bootstrap-token", err)
	}
	fmt.Fprintln(out, "[addons] Applied essential addon: CoreDNS\n[addons] Applied essential addon: kube-proxy")
	hash := CACertHash(ca.Cert)
	fmt.Fprint(out, `
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

Alternatively, if you are the root user, you can run:

  export KUBECONFIG=/etc/kubernetes/admin.conf

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

`)
	if cpe != "" {
		fmt.Fprint(out, "You can now join any number of control-plane nodes running the following command on each as root:\n\n")
		fmt.Fprintf(out, "  kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s \\\n\t--control-plane", c.endpoint, token, hash)
		if upload {
			fmt.Fprintf(out, " --certificate-key %s", certKey)
		}
		fmt.Fprint(out, "\n\nPlease note that the certificate-key gives access to cluster sensitive data, keep it secret!\n"+
			"As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use\n"+
			"\"kubeadm init phase upload-certs --upload-certs\" to reload certs afterward.\n\n")
	}
	fmt.Fprint(out, "Then you can join any number of worker nodes by running the following on each as root:\n\n")
	fmt.Fprintf(out, "kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-hash %s \n", c.endpoint, token, hash)
	return nil
}

// clusterConfiguration is what the stand-in reads of kubeadm's
// ClusterConfiguration (the init --config file and the kubeadm-config
// ConfigMap).
type clusterConfiguration struct {
	ControlPlaneEndpoint string `yaml:"controlPlaneEndpoint"`
	Networking           struct {
		PodSubnet     string `yaml:"podSubnet"`
		ServiceSubnet string `yaml:"serviceSubnet"`
		DNSDomain     string `yaml:"dnsDomain"`
	} `yaml:"networking"`
	Etcd struct {
		Local struct {
			ServerCertSANs []string `yaml:"serverCertSANs"`
		} `yaml:"local"`
	} `yaml:"etcd"`
	APIServer struct {
		CertSANs []string `yaml:"certSANs"`
	} `yaml:"apiServer"`
}

// initConfigFlags are the flags kubeadm init accepts next to --config;
// everything else must be in the file.
var initConfigFlags = map[string]bool{"config": true, "upload-certs": true, "ignore-preflight-errors": true, "skip-token-print": true,
	"skip-certificate-key-print": true, "skip-phases": true, "v": true, "dry-run": true}

// applyInitConfig reads kubeadm init's --config file (InitConfiguration and
// ClusterConfiguration, kubeadm.k8s.io/v1beta3 or v1beta4) into the flags
// they stand for; like kubeadm it refuses other flags next to --config.
func applyInitConfig(p *parsedArgs, path string) error {
	var mixed []string
	for name := range p.flags {
		if !initConfigFlags[name] {
			mixed = append(mixed, name)
		}
	}
	if len(mixed) > 0 {
		sort.Strings(mixed)
		return fmt.Errorf("can not mix '--config' with arguments %v", mixed)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("unable to read config from %q : %w", path, err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc struct {
			APIVersion       string `yaml:"apiVersion"`
			Kind             string `yaml:"kind"`
			LocalAPIEndpoint struct {
				AdvertiseAddress string `yaml:"advertiseAddress"`
				BindPort         int    `yaml:"bindPort"`
			} `yaml:"localAPIEndpoint"`
			NodeRegistration struct {
				Name string `yaml:"name"`
			} `yaml:"nodeRegistration"`
			CertificateKey       string `yaml:"certificateKey"`
			clusterConfiguration `yaml:",inline"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if doc.APIVersion != "kubeadm.k8s.io/v1beta3" && doc.APIVersion != "kubeadm.k8s.io/v1beta4" {
			return fmt.Errorf("%s: no kind %q is registered for version %q in scheme (the k8s stand-in reads kubeadm.k8s.io/v1beta3 and v1beta4)", path, doc.Kind, doc.APIVersion)
		}
		set := func(name, v string) {
			if v != "" {
				p.flags[name] = []string{v}
			}
		}
		switch doc.Kind {
		case "InitConfiguration":
			set("apiserver-advertise-address", doc.LocalAPIEndpoint.AdvertiseAddress)
			if doc.LocalAPIEndpoint.BindPort != 0 {
				set("apiserver-bind-port", fmt.Sprint(doc.LocalAPIEndpoint.BindPort))
			}
			set("node-name", doc.NodeRegistration.Name)
			set("certificate-key", doc.CertificateKey)
		case "ClusterConfiguration":
			set("control-plane-endpoint", doc.ControlPlaneEndpoint)
			set("pod-network-cidr", doc.Networking.PodSubnet)
			set("service-cidr", doc.Networking.ServiceSubnet)
			set("service-dns-domain", doc.Networking.DNSDomain)
			if len(doc.Etcd.Local.ServerCertSANs) > 0 {
				p.flags["etcd-server-cert-sans"] = doc.Etcd.Local.ServerCertSANs
			}
			if len(doc.APIServer.CertSANs) > 0 {
				p.flags["apiserver-cert-extra-sans"] = doc.APIServer.CertSANs
			}
		default:
			return fmt.Errorf("%s: the k8s stand-in does not read kind %q in kubeadm init's configuration", path, doc.Kind)
		}
	}
	return nil
}

func parseTTL(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid argument %q for \"--ttl\" flag: time: invalid duration %q", v, v)
	}
	return d, nil
}

func writeSAKeys(k *rsa.PrivateKey) error {
	kp, err := KeyPEM(k)
	if err != nil {
		return err
	}
	pub, err := PublicKeyPEM(k.Public())
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(pkiDir, "sa.key"), kp, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(pkiDir, "sa.pub"), pub, 0o644)
}

func writeNodeKubeconfig(ca *CA, server, nodeName string) error {
	cert, key, err := ca.Issue(CertSpec{CN: "system:node:" + nodeName, Orgs: []string{"system:nodes"}, Client: true})
	if err != nil {
		return err
	}
	return writeKubeletConf(server, CertPEM(ca.Cert), CertPEM(cert), key)
}

func writeKubeletConf(server string, caPEM, certPEM []byte, key any) error {
	var kp []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		var err error
		if kp, err = KeyPEM(k); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unsupported key %T", key)
	}
	kc := NewKubeconfig(server, caPEM, "system:node", AuthInfo{
		ClientCertificateData: base64.StdEncoding.EncodeToString(certPEM),
		ClientKeyData:         base64.StdEncoding.EncodeToString(kp),
	})
	kc.Contexts[0].Name, kc.CurrentContext = "system:node@kubernetes", "system:node@kubernetes"
	return writeFile(kubeletConf, kc.Marshal(), 0o600)
}

func uploadConfig(ctx context.Context, admin *Client, c clusterParams, cpe string) error {
	cfg := map[string]any{
		"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration", "clusterName": "kubernetes",
		"kubernetesVersion": KubernetesVersion, "certificatesDir": pkiDir,
		"networking": map[string]any{"dnsDomain": "cluster.local", "serviceSubnet": c.serviceNet, "podSubnet": c.podNet},
		"etcd":       map[string]any{"local": map[string]any{"dataDir": etcdDataDir}},
	}
	if len(c.etcdSANs) > 0 {
		cfg["etcd"].(map[string]any)["local"].(map[string]any)["serverCertSANs"] = c.etcdSANs
	}
	if len(c.apiSANs) > 0 {
		cfg["apiServer"] = map[string]any{"certSANs": c.apiSANs}
	}
	if cpe != "" {
		cfg["controlPlaneEndpoint"] = c.endpoint
	}
	b, _ := yaml.Marshal(cfg)
	cm := Obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": Obj{"name": "kubeadm-config", "namespace": "kube-system"},
		"data": Obj{"ClusterConfiguration": string(b)}}
	if _, err := admin.Create(ctx, resConfigMaps, "kube-system", cm); err != nil && !IsAlreadyExists(err) {
		return err
	}
	kcm := Obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": Obj{"name": "kubelet-config", "namespace": "kube-system"},
		"data": Obj{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"}}
	if _, err := admin.Create(ctx, resConfigMaps, "kube-system", kcm); err != nil && !IsAlreadyExists(err) {
		return err
	}
	return nil
}

func clusterInfo(ctx context.Context, admin *Client, server string, caPEM []byte) error {
	kc := &Kubeconfig{APIVersion: "v1", Kind: "Config", Preferences: map[string]any{},
		Clusters: []NamedCluster{{Name: "", Cluster: Cluster{Server: server, CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM)}}}}
	cm := Obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": Obj{"name": "cluster-info", "namespace": "kube-public"},
		"data": Obj{"kubeconfig": string(kc.Marshal())}}
	return retry(ctx, 30*time.Second, func() error {
		_, err := admin.Create(ctx, resConfigMaps, "kube-public", cm)
		if IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func createToken(ctx context.Context, admin *Client, token string, ttl time.Duration, desc string) error {
	return retry(ctx, 30*time.Second, func() error {
		_, err := admin.Create(ctx, resSecrets, "kube-system", bootstrapTokenSecret(token, ttl, desc, time.Now()))
		if IsAlreadyExists(err) {
			return fmt.Errorf("a token with id %q already exists", strings.Split(token, ".")[0])
		}
		return err
	})
}

// certFiles are the shared control-plane secrets kubeadm uploads: the
// Secret key → file.
var certFiles = map[string]string{
	"ca.crt":      pkiDir + "/ca.crt",
	"ca.key":      pkiDir + "/ca.key",
	"sa.key":      pkiDir + "/sa.key",
	"sa.pub":      pkiDir + "/sa.pub",
	"etcd-ca.crt": etcdPKIDir + "/ca.crt",
	"etcd-ca.key": etcdPKIDir + "/ca.key",
}

// uploadCerts encrypts the shared certificates with the certificate key into
// the kube-system/kubeadm-certs Secret, replacing an older one.
func uploadCerts(ctx context.Context, admin *Client, certKey string) error {
	data := Obj{}
	for k, f := range certFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		enc, err := encryptWithKey(certKey, b)
		if err != nil {
			return err
		}
		data[k] = base64.StdEncoding.EncodeToString(enc)
	}
	sec := Obj{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": Obj{"name": "kubeadm-certs", "namespace": "kube-system",
			"annotations": Obj{annotationExpires: rfc3339(time.Now().Add(certsTTL()))}},
		"data": data}
	return retry(ctx, 30*time.Second, func() error {
		if err := admin.Delete(ctx, resSecrets, "kube-system", "kubeadm-certs"); err != nil && !IsNotFound(err) {
			return err
		}
		_, err := admin.Create(ctx, resSecrets, "kube-system", sec)
		return err
	})
}

func kubeadmInitPhase(e *env, args []string) error {
	if len(args) == 0 || args[0] != "upload-certs" {
		return fmt.Errorf("the k8s stand-in supports only \"kubeadm init phase upload-certs\"")
	}
	p, err := parseFlags(args[1:], spec(append([]string{"certificate-key", "kubeconfig", "config"}, ignoredFlags...),
		[]string{"upload-certs", "skip-certificate-key-print"}, nil))
	if err != nil {
		return err
	}
	if !p.bool("upload-certs") {
		fmt.Fprintln(e.stdout, "[upload-certs] Skipping phase. Please see --upload-certs")
		return nil
	}
	key := p.get("certificate-key")
	if key == "" {
		key = NewCertificateKey()
	} else if _, err := certKeyAEAD(key); err != nil {
		return phase("upload-certs", err)
	}
	admin, err := adminClient(p.get("kubeconfig"))
	if err != nil {
		return phase("upload-certs", err)
	}
	fmt.Fprintln(e.stdout, "[upload-certs] Storing the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace")
	if err := uploadCerts(e.ctx, admin, key); err != nil {
		return phase("upload-certs", fmt.Errorf("error uploading certs: %w", err))
	}
	if !p.bool("skip-certificate-key-print") {
		fmt.Fprintf(e.stdout, "[upload-certs] Using certificate key:\n%s\n", key)
	}
	return nil
}

func adminClient(path string) (*Client, error) {
	if path == "" {
		path = adminConf
	}
	kc, err := LoadKubeconfig(path)
	if err != nil {
		return nil, fmt.Errorf("failed to load admin kubeconfig: %w", err)
	}
	c, _, err := ClientFromKubeconfig(kc)
	return c, err
}

// discovery validates the API server with the token and the CA pins, like
// kubeadm's token discovery, and returns the cluster-info kubeconfig.
func discovery(ctx context.Context, endpoint, token string, pins []string, skipCA bool, out io.Writer) (Cluster, []byte, error) {
	ic, err := NewClient(ClientConfig{Server: "https://" + endpoint, Insecure: true, Timeout: 10 * time.Second})
	if err != nil {
		return Cluster{}, nil, err
	}
	var cm Obj
	err = retry(ctx, time.Minute, func() error {
		var err error
		cm, err = ic.Get(ctx, resConfigMaps, "kube-public", "cluster-info")
		if err != nil {
			fmt.Fprintf(out, "[discovery] Failed to request cluster-info, will try again: %v\n", err)
		}
		return err
	})
	if err != nil {
		return Cluster{}, nil, fmt.Errorf("couldn't validate the identity of the API Server: %w", err)
	}
	if err := verifyClusterInfo(cm, token); err != nil {
		return Cluster{}, nil, fmt.Errorf("couldn't validate the identity of the API Server: %w", err)
	}
	var kc Kubeconfig
	if err := yaml.Unmarshal([]byte(getStr(cm, "data", "kubeconfig")), &kc); err != nil || len(kc.Clusters) == 0 {
		return Cluster{}, nil, fmt.Errorf("couldn't parse the kubeconfig file in the cluster-info ConfigMap: %v", err)
	}
	cl := kc.Clusters[0].Cluster
	caPEM, err := cl.CAPEM()
	if err != nil {
		return Cluster{}, nil, err
	}
	ca, err := ParseCertPEM(caPEM)
	if err != nil {
		return Cluster{}, nil, fmt.Errorf("couldn't parse the CA of the cluster-info ConfigMap: %v", err)
	}
	if !skipCA {
		got := CACertHash(ca)
		ok := false
		for _, p := range pins {
			if strings.EqualFold(p, got) {
				ok = true
			}
		}
		if !ok {
			return Cluster{}, nil, fmt.Errorf("couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys %q are pinned", got)
		}
	}
	// Confirm over a verified connection.
	sc, err := NewClient(ClientConfig{Server: "https://" + endpoint, CAPEM: caPEM, Timeout: 10 * time.Second})
	if err != nil {
		return Cluster{}, nil, err
	}
	if _, err := sc.Get(ctx, resConfigMaps, "kube-public", "cluster-info"); err != nil {
		return Cluster{}, nil, fmt.Errorf("couldn't validate the identity of the API Server: %w", err)
	}
	fmt.Fprintf(out, "[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server %q\n", endpoint)
	return cl, caPEM, nil
}

// requestKubeletCert does the kubelet's TLS bootstrap: a CSR signed with the
// bootstrap token's credentials.
func requestKubeletCert(ctx context.Context, c *Client, nodeName string) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		return nil, nil, err
	}
	csr := Obj{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
		"metadata": Obj{"generateName": "csr-"},
		"spec": Obj{"request": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})),
			"signerName": "kubernetes.io/kube-apiserver-client-kubelet", "usages": []string{"digital signature", "client auth"}}}
	var out Obj
	if err := retry(ctx, time.Minute, func() error {
		var err error
		out, err = c.Create(ctx, resCSRs, "", csr)
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("TLS bootstrap: %w", err)
	}
	certB64 := getStr(out, "status", "certificate")
	if certB64 == "" {
		return nil, nil, errors.New("TLS bootstrap: timed out waiting for the CSR to be signed")
	}
	certPEM, err := base64.StdEncoding.DecodeString(certB64)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, key, nil
}

func kubeadmJoin(e *env, args []string) error {
	p, err := parseFlags(args, spec(append([]string{"token", "discovery-token", "tls-bootstrap-token", "discovery-token-ca-cert-hash",
		"certificate-key", "apiserver-advertise-address", "apiserver-bind-port", "node-name", "config", "discovery-file"}, ignoredFlags...),
		[]string{"control-plane", "discovery-token-unsafe-skip-ca-verification"}, nil))
	if err != nil {
		return err
	}
	ctx, out := e.ctx, e.stdout
	if len(p.pos) != 1 {
		return phase("preflight", errors.New("discovery.bootstrapToken.apiServerEndpoint: Invalid value: \"\": the API server endpoint (HOST:PORT) must be given"))
	}
	endpoint := p.pos[0]
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return phase("preflight", fmt.Errorf("invalid API server endpoint %q: %v", endpoint, err))
	}
	token := p.get("discovery-token")
	if token == "" {
		token = p.get("token")
	}
	if !bootstrapTokenRE.MatchString(token) {
		return phase("preflight", fmt.Errorf("discovery.bootstrapToken.token: Invalid value: %q: the bootstrap token is invalid", token))
	}
	pins := p.all("discovery-token-ca-cert-hash")
	skipCA := p.bool("discovery-token-unsafe-skip-ca-verification")
	if len(pins) == 0 && !skipCA {
		return phase("preflight", errors.New("discovery.bootstrapToken: Invalid value: \"\": using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue"))
	}
	controlPlane := p.bool("control-plane")
	certKey := p.get("certificate-key")
	if controlPlane && certKey == "" {
		return phase("preflight", errors.New("the k8s stand-in needs --certificate-key for a control-plane join (it does not support copying the certificates by hand)"))
	}
	port := p.get("apiserver-bind-port")
	if port == "" {
		port = "6443"
	}
	fmt.Fprintln(out, "[preflight] Running pre-flight checks")
	if err := preflightCommon(controlPlane, port, p.all("ignore-preflight-errors")); err != nil {
		return phase("preflight", err)
	}
	cl, caPEM, err := discovery(ctx, endpoint, token, pins, skipCA, out)
	if err != nil {
		return phase("preflight", err)
	}
	fmt.Fprintln(out, "[preflight] Reading configuration from the cluster...")
	boot, err := NewClient(ClientConfig{Server: cl.Server, CAPEM: caPEM, Token: token})
	if err != nil {
		return phase("preflight", err)
	}
	nodeName := p.get("node-name")
	if nodeName == "" {
		nodeName = nodeHostname()
	}
	advertise := p.get("apiserver-advertise-address")
	if advertise == "" {
		if advertise, err = defaultRouteIP(); err != nil {
			return phase("preflight", err)
		}
	}
	var cfgData string
	if err := retry(ctx, time.Minute, func() error {
		cm, err := boot.Get(ctx, resConfigMaps, "kube-system", "kubeadm-config")
		cfgData = getStr(cm, "data", "ClusterConfiguration")
		return err
	}); err != nil {
		return phase("preflight", fmt.Errorf("unable to fetch the kubeadm-config ConfigMap: %w", err))
	}
	var clusterCfg clusterConfiguration
	_ = yaml.Unmarshal([]byte(cfgData), &clusterCfg)
	if controlPlane && clusterCfg.ControlPlaneEndpoint == "" {
		return phase("preflight", errors.New("\nOne or more conditions for hosting a new control plane instance is not satisfied.\n\nunable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address\n\nPlease ensure that:\n* The cluster has a stable controlPlaneEndpoint address.\n* The certificates that must be shared among control plane instances are provided."))
	}
	// A Ready node of that name must not be overwritten.
	if n, err := boot.Get(ctx, resNodes, "", nodeName); err == nil {
		for _, c := range getSlice(n, "status", "conditions") {
			if cm, _ := c.(map[string]any); cm != nil && cm["type"] == "Ready" && cm["status"] == "True" {
				return phase("kubelet-start", fmt.Errorf("a Node with name %q and status \"Ready\" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node", nodeName))
			}
		}
	}
	var cp clusterParams
	useEtcd := false
	if controlPlane {
		cp = clusterParams{nodeName: nodeName, advertise: advertise, port: port, endpoint: clusterCfg.ControlPlaneEndpoint,
			serviceNet: clusterCfg.Networking.ServiceSubnet, podNet: clusterCfg.Networking.PodSubnet,
			etcdSANs: clusterCfg.Etcd.Local.ServerCertSANs, apiSANs: clusterCfg.APIServer.CertSANs}
		if cp.serviceNet == "" {
			cp.serviceNet = "10.96.0.0/12"
		}
		fmt.Fprintln(out, "[preflight] Running pre-flight checks before initializing the new control plane instance")
		fmt.Fprintln(out, "[download-certs] Downloading the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace")
		if err := downloadCerts(ctx, boot, certKey); err != nil {
			return phase("control-plane-prepare/download-certs", err)
		}
		ca, err := LoadCA(pkiDir+"/ca.crt", pkiDir+"/ca.key")
		if err != nil {
			return phase("control-plane-prepare/certs", err)
		}
		etcdCA, err := LoadCA(etcdPKIDir+"/ca.crt", etcdPKIDir+"/ca.key")
		if err != nil {
			return phase("control-plane-prepare/certs", err)
		}
		fmt.Fprintf(out, "[certs] Using certificateDir folder %q\n", pkiDir)
		if err := issueNodeCerts(cp, ca, etcdCA); err != nil {
			return phase("control-plane-prepare/certs", err)
		}
		if err := writeAdminConf(ca, cl.Server); err != nil {
			return phase("control-plane-prepare/kubeconfig", err)
		}
		fmt.Fprintln(out, "[kubeconfig] Writing \"admin.conf\" kubeconfig file")
		useEtcd = true
		fmt.Fprintf(out, "[control-plane] Using manifest folder %q\n", manifestsDir)
		if err := writeAPIServerManifest(cp, true); err != nil {
			return phase("control-plane-prepare/control-plane", err)
		}
	}
	fmt.Fprintln(out, "[kubelet-start] Writing kubelet configuration to file \"/var/lib/kubelet/config.yaml\"")
	if err := writeKubeletFiles(nodeName); err != nil {
		return phase("kubelet-start", err)
	}
	certPEM, key, err := requestKubeletCert(ctx, boot, nodeName)
	if err != nil {
		return phase("kubelet-start", err)
	}
	if err := writeKubeletConf(cl.Server, caPEM, certPEM, key); err != nil {
		return phase("kubelet-start", err)
	}
	fmt.Fprintln(out, "[kubelet-start] Starting the kubelet")
	if err := restartKubelet(out); err != nil {
		return phase("kubelet-start", err)
	}
	if controlPlane {
		// control-plane-join/etcd: like kubeadm, after the TLS bootstrap (a
		// member added but not started costs the cluster its quorum).
		admin, err := adminClient("")
		if err != nil {
			return err
		}
		initialCluster, err := etcdMemberAdd(ctx, admin, cp, out)
		if err != nil {
			return phase("control-plane-join/etcd", err)
		}
		fmt.Fprintf(out, "[etcd] Creating static Pod manifest for %q\n", "etcd")
		if err := writeEtcdManifest(cp, initialCluster, "existing"); err != nil {
			return phase("control-plane-join/etcd", err)
		}
		if err := syncStaticPods(false, nil); err != nil {
			return phase("control-plane-join/etcd", err)
		}
		fmt.Fprintln(out, "[etcd] Waiting for the new etcd member to join the cluster. This can take up to 40s")
		if err := waitEtcdMember(ctx, cp.nodeName, time.Minute); err != nil {
			return phase("control-plane-join/etcd", err)
		}
		if _, err := waitHealthy(ctx, net.JoinHostPort(advertise, port), caPEM, 2*time.Minute); err != nil {
			return phase("control-plane-join/wait-control-plane", err)
		}
	}
	fmt.Fprintln(out, "[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap")
	nkc, err := LoadKubeconfig(kubeletConf)
	if err != nil {
		return err
	}
	nc, _, err := ClientFromKubeconfig(nkc)
	if err != nil {
		return err
	}
	node := nodeObject(nodeName, advertise, controlPlane)
	if err := retry(ctx, time.Minute, func() error {
		_, err := nc.Create(ctx, resNodes, "", node)
		if IsAlreadyExists(err) {
			// a stale Node of that name (NotReady): take it over
			patch := deepCopy(node)
			delete(patch, "kind")
			delete(patch, "apiVersion")
			ensureMap(patch, "spec")["unschedulable"] = nil
			_, err = nc.Patch(ctx, resNodes, "", nodeName, patch)
		}
		return err
	}); err != nil {
		return phase("kubelet-start", fmt.Errorf("registering node %s: %w", nodeName, err))
	}
	if controlPlane {
		admin, err := adminClient("")
		if err != nil {
			return err
		}
		if err := mirrorPods(ctx, admin, nodeName, advertise, port, useEtcd); err != nil {
			return phase("control-plane-join/mark-control-plane", err)
		}
		fmt.Fprintf(out, "[mark-control-plane] Marking the node %s as control-plane by adding the labels: [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]\n", nodeName)
		fmt.Fprintf(out, "[mark-control-plane] Marking the node %s as control-plane by adding the taints [node-role.kubernetes.io/control-plane:NoSchedule]\n", nodeName)
		fmt.Fprint(out, `
This node has joined the cluster and a new control plane instance was created:

* Certificate signing request was sent to apiserver and approval was received.
* The Kubelet was informed of the new secure connection details.
* Control plane label and taint were applied to the new node.
* The Kubernetes control plane instances scaled up.
* A new etcd member was added to the local/stacked etcd cluster.

To start administering your cluster from this node, you need to run the following as a regular user:

	mkdir -p $HOME/.kube
	sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
	sudo chown $(id -u):$(id -g) $HOME/.kube/config

Run 'kubectl get nodes' to see this node join the cluster.

`)
		return nil
	}
	fmt.Fprint(out, `
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.

`)
	return nil
}

func downloadCerts(ctx context.Context, boot *Client, certKey string) error {
	if _, err := certKeyAEAD(certKey); err != nil {
		return err
	}
	var sec Obj
	err := retry(ctx, 30*time.Second, func() error {
		var err error
		sec, err = boot.Get(ctx, resSecrets, "kube-system", "kubeadm-certs")
		return err
	})
	if IsNotFound(err) {
		return errors.New("error downloading certs: error downloading the secret: Secret \"kubeadm-certs\" was not found in the \"kube-system\" Namespace. This Secret might have expired. Please, run `kubeadm init phase upload-certs --upload-certs` on a control plane to generate a new one")
	}
	if err != nil {
		return fmt.Errorf("error downloading certs: %w", err)
	}
	files := map[string][]byte{}
	for k, f := range certFiles {
		enc, err := base64.StdEncoding.DecodeString(getStr(sec, "data", k))
		if err != nil {
			return fmt.Errorf("error downloading certs: %s: %w", k, err)
		}
		plain, err := decryptWithKey(certKey, enc)
		if err != nil {
			return fmt.Errorf("error downloading certs: error decoding secret data with provided key: %w", err)
		}
		files[f] = plain
	}
	for f, b := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f, ".key") {
			mode = 0o600
		}
		if err := writeFile(f, b, mode); err != nil {
			return err
		}
	}
	return nil
}

// etcdClient talks to etcd with the API server's etcd client certificate.
func etcdClient(endpoints []string) (*EtcdStore, error) {
	return NewEtcdStore(endpoints, etcdPKIDir+"/ca.crt", pkiDir+"/apiserver-etcd-client.crt", pkiDir+"/apiserver-etcd-client.key")
}

// etcdMemberAdd adds this node to the stacked etcd cluster through the
// existing members (found from the etcd mirror pods, like kubeadm) and
// returns the --initial-cluster value for the new member.
func etcdMemberAdd(ctx context.Context, admin *Client, c clusterParams, out io.Writer) (string, error) {
	var pods []Obj
	if err := retry(ctx, time.Minute, func() error {
		var err error
		pods, err = admin.List(ctx, resPods, "kube-system", "", "component=etcd")
		return err
	}); err != nil {
		return "", err
	}
	var eps []string
	for _, p := range pods {
		if u := annotation(p, "kubeadm.kubernetes.io/etcd.advertise-client-urls"); u != "" && getStr(p, "spec", "nodeName") != c.nodeName {
			eps = append(eps, strings.Split(u, ",")...)
		}
	}
	if len(eps) == 0 {
		return "", errors.New("no etcd members found in the cluster: this cluster keeps its state without etcd (the k8s stand-in's local-store mode supports one control-plane node only; install etcd-server on the nodes)")
	}
	ec, err := etcdClient(eps)
	if err != nil {
		return "", err
	}
	peer := "https://" + net.JoinHostPort(c.advertise, "2380")
	// A member left behind by an earlier attempt of this node goes first.
	if members, err := ec.MemberList(ctx); err == nil {
		for _, m := range members {
			for _, u := range m.PeerURLs {
				if u == peer {
					fmt.Fprintf(out, "[etcd] Removing stale etcd member %s (%s) with this node's peer URL\n", m.ID, m.Name)
					_ = ec.MemberRemove(ctx, m.ID)
				}
			}
		}
	}
	var added EtcdMember
	var members []EtcdMember
	deadline := time.Now().Add(90 * time.Second)
	for {
		added, members, err = ec.MemberAdd(ctx, peer)
		if err == nil || time.Now().After(deadline) {
			break
		}
		fmt.Fprintf(out, "[etcd] member add failed, retrying: %v\n", err)
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		return "", fmt.Errorf("error adding the etcd member: %w", err)
	}
	fmt.Fprintf(out, "[etcd] Announced new etcd member joining to the existing etcd cluster\n")
	var parts []string
	for _, m := range members {
		name := m.Name
		if m.ID == added.ID {
			name = c.nodeName
		}
		if name == "" {
			continue // another member that has not started yet
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ","), nil
}

// waitEtcdMember waits until the local etcd runs as a started member.
func waitEtcdMember(ctx context.Context, name string, timeout time.Duration) error {
	ec, err := etcdClient([]string{"https://127.0.0.1:2379"})
	if err != nil {
		return err
	}
	ec.Client.Timeout = 3 * time.Second
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		members, err := ec.MemberList(ctx)
		if err == nil {
			for _, m := range members {
				if m.Name == name {
					if _, err := ec.Get(ctx, "/registry/health"); err == nil || errors.Is(err, ErrNotFound) {
						return nil
					} else {
						last = err
					}
				}
			}
		} else {
			last = err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("the local etcd member did not join within %v (last error: %v); see %s/etcd.log", timeout, last, standinLogDir)
}

func kubeadmToken(e *env, args []string) error {
	if len(args) == 0 {
		return errors.New("kubeadm token: a subcommand is required (create, list, delete, generate)")
	}
	p, err := parseFlags(args[1:], spec(append([]string{"ttl", "kubeconfig", "description", "certificate-key", "usages", "groups", "output", "config"}, ignoredFlags...),
		[]string{"print-join-command", "dry-run"}, map[string]string{"o": "output"}))
	if err != nil {
		return err
	}
	if args[0] == "generate" {
		fmt.Fprintln(e.stdout, NewBootstrapToken())
		return nil
	}
	admin, err := adminClient(p.get("kubeconfig"))
	if err != nil {
		return err
	}
	ctx := e.ctx
	switch args[0] {
	case "create":
		token := NewBootstrapToken()
		if len(p.pos) > 0 {
			token = p.pos[0]
			if !bootstrapTokenRE.MatchString(token) {
				return fmt.Errorf("the bootstrap token %q was not of the form %q", token, `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`)
			}
		}
		ttl := 24 * time.Hour
		if v := p.get("ttl"); v != "" {
			if ttl, err = parseTTL(v); err != nil {
				return err
			}
		}
		if err := createToken(ctx, admin, token, ttl, p.get("description")); err != nil {
			return fmt.Errorf("failed to create or update bootstrap token with name bootstrap-token-%s: %w", strings.Split(token, ".")[0], err)
		}
		if !p.bool("print-join-command") {
			fmt.Fprintln(e.stdout, token)
			return nil
		}
		u, err := url.Parse(admin.Server)
		if err != nil {
			return err
		}
		kc, _ := LoadKubeconfig(orDefault(p.get("kubeconfig"), adminConf))
		cl, _, _, err := kc.Current()
		if err != nil {
			return err
		}
		caPEM, err := cl.CAPEM()
		if err != nil {
			return err
		}
		ca, err := ParseCertPEM(caPEM)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("kubeadm join %s --token %s --discovery-token-ca-cert-hash %s ", u.Host, token, CACertHash(ca))
		if k := p.get("certificate-key"); k != "" {
			line += "--control-plane --certificate-key " + k + " "
		}
		fmt.Fprintln(e.stdout, line)
	case "list":
		secs, err := admin.List(ctx, resSecrets, "kube-system", "type=bootstrap.kubernetes.io/token", "")
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
		for _, s := range secs {
			ttl, exp := "<forever>", "<never>"
			if x := secretData(s, "expiration"); x != "" {
				exp = x
				if t, ok := parseTime(x); ok {
					ttl = age(time.Until(t))
				}
			}
			var usages []string
			for _, u := range []string{"authentication", "signing"} {
				if secretData(s, "usage-bootstrap-"+u) == "true" {
					usages = append(usages, u)
				}
			}
			desc := secretData(s, "description")
			if desc == "" {
				desc = "<none>"
			}
			fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\t%s\t%s\n", secretData(s, "token-id"), secretData(s, "token-secret"), ttl, exp,
				strings.Join(usages, ","), desc, secretData(s, "auth-extra-groups"))
		}
		return tw.Flush()
	case "delete":
		if len(p.pos) == 0 {
			return errors.New("missing subcommand; 'token delete' is missing token of form \"[a-z0-9]{6}\" or \"[a-z0-9]{6}\\.[a-z0-9]{16}\"")
		}
		for _, t := range p.pos {
			id, _, _ := strings.Cut(t, ".")
			if err := admin.Delete(ctx, resSecrets, "kube-system", "bootstrap-token-"+id); err != nil {
				return fmt.Errorf("failed to delete bootstrap token %q: %w", id, err)
			}
			fmt.Fprintf(e.stdout, "bootstrap token %q deleted\n", id)
		}
	default:
		return fmt.Errorf("unknown command %q for \"kubeadm token\"", args[0])
	}
	return nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

func kubeadmReset(e *env, args []string) error {
	p, err := parseFlags(args, spec(append([]string{"cert-dir", "kubeconfig", "config"}, ignoredFlags...),
		[]string{"force", "cleanup-tmp-dir", "dry-run"}, map[string]string{"f": "force"}))
	if err != nil {
		return err
	}
	out := e.stdout
	if os.Geteuid() != 0 {
		return phase("preflight", errors.New("[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: user is not running as root"))
	}
	if !p.bool("force") {
		fmt.Fprint(out, "W0000 reset.go] [reset] The kubelet will be stopped and this node's Kubernetes state will be deleted.\n[reset] Are you sure you want to proceed? [y/N]: ")
		line, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return phase("preflight", errors.New("aborted reset operation"))
		}
	}
	fmt.Fprintln(out, "[preflight] Running pre-flight checks")
	if _, err := os.Stat(filepath.Join(manifestsDir, "etcd.yaml")); err == nil {
		if err := removeOwnEtcdMember(e.ctx); err != nil {
			fmt.Fprintf(out, "W0000 removeetcdmember.go] [reset] Failed to remove etcd member: %v, Please manually remove this etcd member using etcdctl\n", err)
		} else {
			fmt.Fprintln(out, "[reset] Removed this node's member from the etcd cluster")
		}
	}
	fmt.Fprintln(out, "[reset] Stopping the kubelet service")
	stopKubelet()
	stopStaticPods()
	fmt.Fprintf(out, "[reset] Deleted contents of the etcd data directory: %s\n", etcdDataDir)
	_ = removeContents(etcdDataDir)
	dirs := []string{manifestsDir, kubeletDir, pkiDir, standinDataDir}
	fmt.Fprintf(out, "[reset] Deleting contents of directories: %v\n", dirs)
	for _, d := range dirs {
		_ = removeContents(d)
	}
	files := []string{adminConf, kubeletConf, kubernetesDir + "/bootstrap-kubelet.conf", kubernetesDir + "/controller-manager.conf", kubernetesDir + "/scheduler.conf", kubernetesDir + "/super-admin.conf"}
	fmt.Fprintf(out, "[reset] Deleting files: %v\n", files)
	for _, f := range files {
		_ = os.Remove(f)
	}
	fmt.Fprint(out, `
The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d

The reset process does not reset or clean up iptables rules or IPVS tables.

The reset process does not clean your kubeconfig files and you must remove them manually.
Please, check the contents of the $HOME/.kube/config file.
`)
	return nil
}

func removeContents(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func removeOwnEtcdMember(ctx context.Context) error {
	name := kubeletNodeName()
	ec, err := etcdClient([]string{"https://127.0.0.1:2379"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	members, err := ec.MemberList(ctx)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.Name == name {
			if len(members) == 1 {
				return nil // the last member: nothing to leave
			}
			return ec.MemberRemove(ctx, m.ID)
		}
	}
	return fmt.Errorf("no etcd member named %q", name)
}
