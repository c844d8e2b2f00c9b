package k8sstandin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The kubelet stand-in: what a real kubelet does that kubeadm and the
// drivers rely on, without a container runtime. It
//   - runs the static pods of /etc/kubernetes/manifests as processes (the
//     real control-plane binaries and Debian's etcd),
//   - performs the TLS bootstrap from bootstrap-kubelet.conf (a real CSR,
//     approved and signed by the real controller manager) and writes
//     kubelet.conf pointing at /var/lib/kubelet/pki/kubelet-client-current.pem,
//   - registers its Node and the static pods' mirror pods,
//   - answers /healthz on 127.0.0.1:10248, and
//   - runs kwok for its node only (--manage-single-node): kwok keeps the
//     Node Ready with a lease and sets the status of the pods bound to it.
// When the host dies, so does its kwok, and the real node lifecycle controller
// marks the node NotReady. Unlike a real kubelet it does not register its Node
// again after the Node was deleted (the drivers delete a node just before its
// VM goes).

// kubeletNodeName is the node name kubeadm gave the kubelet
// (--hostname-override), else the hostname.
func kubeletNodeName() string {
	if v := kubeletFlag("hostname-override"); v != "" {
		return v
	}
	h, _ := os.Hostname()
	return strings.ToLower(h)
}

// kubeletFlag reads a flag from kubeadm-flags.env.
func kubeletFlag(name string) string {
	b, err := os.ReadFile(kubeletFlagsEnv)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	s = strings.Trim(strings.TrimPrefix(s, "KUBELET_KUBEADM_ARGS="), `"`)
	for _, f := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

type kubelet struct {
	logf     func(string, ...any)
	node     string
	nodeUID  string
	kwok     *exec.Cmd
	kwokDone chan struct{}
	gone     bool       // our Node was deleted: do not register it again
	mu       sync.Mutex // lastWarn: both loops warn
	lastWarn string
	csrName  string // the pending TLS bootstrap
	csrKey   *ecdsa.PrivateKey
}

// registeredMark records that this kubelet registered its Node (kubeadm
// reset removes it with /var/lib/kubelet).
const registeredMark = kubeletDir + "/k8s-standin-registered"

func runKubelet(ctx context.Context, stderr io.Writer) int {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s kubelet: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
	}
	unlock, err := lockFile(filepath.Join(standinRunDir, "kubelet.lock"), 10*time.Second)
	if err != nil {
		logf("another kubelet is running: %v", err)
		return 1
	}
	defer unlock()
	_ = writeFile(filepath.Join(standinRunDir, "kubelet.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	logf("k8s-standin kubelet (Kubernetes %s, kwok for node status) starting", KubernetesVersion)
	srv := &http.Server{Addr: kubeletHealthzAddr, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("healthz on %s: %v", kubeletHealthzAddr, err)
		}
	}()
	defer srv.Close()
	k := &kubelet{logf: logf}
	defer k.stopKwok()
	// The API side runs apart from the static pods: a control-plane node's
	// kubelet bootstraps against its own API server, which it must start first.
	apiDone := make(chan struct{})
	go func() {
		defer close(apiDone)
		var last time.Time
		for {
			if k.nodeUID == "" || time.Since(last) > 10*time.Second {
				pods, err := readManifests()
				if err == nil {
					err = k.syncAPI(ctx, pods)
				}
				if err != nil {
					k.warn("%v", err)
				} else if k.nodeUID != "" {
					last = time.Now()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if _, err := syncStaticPods(true, logf); err != nil {
			k.warn("static pods: %v", err)
		}
		select {
		case <-ctx.Done():
			<-apiDone
			logf("stopping (static pods keep running)")
			return 0
		case <-tick.C:
		}
	}
}

// warn logs a message unless it repeats the last one.
func (k *kubelet) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	k.mu.Lock()
	defer k.mu.Unlock()
	if msg != k.lastWarn {
		k.logf("%s", msg)
		k.lastWarn = msg
	}
}

// client is the kubelet's API client, or nil while the TLS bootstrap is not
// done (each call advances it by one step).
func (k *kubelet) client(ctx context.Context) (*Client, error) {
	if _, err := os.Stat(kubeletConf); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(bootstrapConf); err != nil {
			return nil, nil // standalone: static pods only
		}
		if done, err := k.tlsBootstrap(ctx); !done || err != nil {
			if err != nil {
				err = fmt.Errorf("TLS bootstrap: %w", err)
			}
			return nil, err
		}
	}
	kc, err := LoadKubeconfig(kubeletConf)
	if err != nil {
		return nil, err
	}
	c, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		return nil, err
	}
	c.HTTP.Timeout = 10 * time.Second
	return c, nil
}

// tlsBootstrap does one step of the kubelet's TLS bootstrap with the bootstrap
// token of bootstrap-kubelet.conf: create the CSR, or look whether the
// controller manager signed it, then write the certificate and kubelet.conf.
func (k *kubelet) tlsBootstrap(ctx context.Context) (bool, error) {
	kc, err := LoadKubeconfig(bootstrapConf)
	if err != nil {
		return false, err
	}
	c, _, err := ClientFromKubeconfig(kc)
	if err != nil {
		return false, err
	}
	c.HTTP.Timeout = 10 * time.Second
	node := kubeletNodeName()
	if k.csrName == "" {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return false, err
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}, key)
		if err != nil {
			return false, err
		}
		csr := Obj{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
			"metadata": Obj{"generateName": "csr-"},
			"spec": Obj{"request": base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})),
				"signerName": "kubernetes.io/kube-apiserver-client-kubelet", "usages": []string{"digital signature", "client auth"}}}
		var created Obj
		if err := c.Do(ctx, http.MethodPost, "/apis/certificates.k8s.io/v1/certificatesigningrequests", csr, &created); err != nil {
			return false, err
		}
		k.csrName, k.csrKey = getStr(created, "metadata", "name"), key
		k.logf("TLS bootstrap: created CSR %s for system:node:%s", k.csrName, node)
	}
	var got Obj
	if err := c.Do(ctx, http.MethodGet, "/apis/certificates.k8s.io/v1/certificatesigningrequests/"+url.PathEscape(k.csrName), nil, &got); err != nil {
		if IsNotFound(err) {
			k.csrName = "" // cleaned up: ask again
		}
		return false, err
	}
	certB64 := getStr(got, "status", "certificate")
	if certB64 == "" {
		return false, nil
	}
	certPEM, err := base64.StdEncoding.DecodeString(certB64)
	if err != nil {
		return false, err
	}
	keyPEM, err := KeyPEM(k.csrKey)
	if err != nil {
		return false, err
	}
	if err := writeFile(kubeletClientPEM, append(certPEM, keyPEM...), 0o600); err != nil {
		return false, err
	}
	cl, _, _, err := kc.Current()
	if err != nil {
		return false, err
	}
	caPEM, err := cl.CAPEM()
	if err != nil {
		return false, err
	}
	out := NewKubeconfig(cl.Server, caPEM, "default-auth", AuthInfo{ClientCertificate: kubeletClientPEM, ClientKey: kubeletClientPEM})
	out.Contexts[0].Name, out.CurrentContext = "default-context", "default-context"
	out.Clusters[0].Name, out.Contexts[0].Context.Cluster = "default-cluster", "default-cluster"
	if err := writeFile(kubeletConf, out.Marshal(), 0o600); err != nil {
		return false, err
	}
	k.logf("TLS bootstrap: CSR %s signed; wrote %s", k.csrName, kubeletConf)
	k.csrName, k.csrKey = "", nil
	return true, nil
}

// syncAPI registers the Node, keeps the mirror pods and runs kwok.
func (k *kubelet) syncAPI(ctx context.Context, pods []staticPod) error {
	c, err := k.client(ctx)
	if c == nil || err != nil {
		return err
	}
	if k.node == "" {
		k.node = kubeletNodeName()
	}
	if k.gone {
		return nil
	}
	var n Obj
	err = c.Do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(k.node), nil, &n)
	switch {
	case IsNotFound(err):
		if _, serr := os.Stat(registeredMark); serr == nil {
			k.logf("node %s was deleted; not registering it again", k.node)
			k.gone = true
			k.stopKwok()
			return nil
		}
		if err := c.Do(ctx, http.MethodPost, "/api/v1/nodes", nodeObject(k.node), &n); err != nil && !IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", k.node, err)
		}
		k.logf("registered node %s", k.node)
		_ = writeFile(registeredMark, []byte(k.node+"\n"), 0o644)
	case err != nil:
		return err
	}
	if k.nodeUID == "" {
		if err := c.Do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(k.node), nil, &n); err != nil {
			return err
		}
		k.nodeUID = getStr(n, "metadata", "uid")
		_ = writeFile(registeredMark, []byte(k.node+"\n"), 0o644)
	}
	if err := k.ensureKwok(); err != nil {
		return fmt.Errorf("kwok: %w", err)
	}
	return k.syncMirrorPods(ctx, c, pods)
}

// nodeObject is the Node the kubelet registers; kwok fills its conditions.
func nodeObject(name string) Obj {
	ip := kubeletFlag("node-ip")
	if ip == "" {
		ip, _ = defaultRouteIP()
	}
	capacity := Obj{"cpu": "2", "memory": "4019852Ki", "pods": "110", "ephemeral-storage": "20134592Ki"}
	mid, _ := os.ReadFile("/etc/machine-id")
	addrs := []any{Obj{"type": "Hostname", "address": name}}
	if ip != "" {
		addrs = append([]any{Obj{"type": "InternalIP", "address": ip}}, addrs...)
	}
	return Obj{
		"apiVersion": "v1", "kind": "Node",
		"metadata": Obj{"name": name,
			"labels": Obj{"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
			"annotations": Obj{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		"status": Obj{
			"addresses": addrs, "capacity": capacity, "allocatable": capacity,
			"daemonEndpoints": Obj{"kubeletEndpoint": Obj{"Port": 10250}},
			"nodeInfo": Obj{"architecture": "amd64", "operatingSystem": "linux", "osImage": osImage(),
				"kernelVersion": kernelVersion(), "kubeletVersion": KubernetesVersion, "kubeProxyVersion": KubernetesVersion,
				"containerRuntimeVersion": "k8s-standin://" + Version, "machineID": strings.TrimSpace(string(mid)),
				"systemUUID": randHex(32), "bootID": randHex(32)},
		},
	}
}

func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func kernelVersion() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// syncMirrorPods creates the mirror pod of every static pod (again when its
// manifest changed) and deletes those without a manifest.
func (k *kubelet) syncMirrorPods(ctx context.Context, c *Client, pods []staticPod) error {
	var list struct {
		Items []Obj `json:"items"`
	}
	q := url.Values{"fieldSelector": {"spec.nodeName=" + k.node}}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/pods?"+q.Encode(), nil, &list); err != nil {
		return err
	}
	have := map[string]Obj{}
	for _, p := range list.Items {
		if getStr(p, "metadata", "annotations", "kubernetes.io/config.mirror") != "" {
			have[getStr(p, "metadata", "namespace")+"/"+getStr(p, "metadata", "name")] = p
		}
	}
	var errs []error
	for _, sp := range pods {
		ns := getStr(sp.Pod, "metadata", "namespace")
		if ns == "" {
			ns = "default"
		}
		name := sp.Name + "-" + k.node
		if old, ok := have[ns+"/"+name]; ok {
			delete(have, ns+"/"+name)
			if getStr(old, "metadata", "annotations", "kubernetes.io/config.mirror") == sp.Hash {
				continue
			}
			_ = c.Do(ctx, http.MethodDelete, "/api/v1/namespaces/"+ns+"/pods/"+url.PathEscape(name), Obj{"gracePeriodSeconds": 0}, nil)
		}
		if err := c.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", k.mirrorPod(sp, ns, name), nil); err != nil && !IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("mirror pod %s/%s: %w", ns, name, err))
		}
	}
	for key := range have {
		ns, name, _ := strings.Cut(key, "/")
		_ = c.Do(ctx, http.MethodDelete, "/api/v1/namespaces/"+ns+"/pods/"+url.PathEscape(name), Obj{"gracePeriodSeconds": 0}, nil)
	}
	return errors.Join(errs...)
}

func (k *kubelet) mirrorPod(sp staticPod, ns, name string) Obj {
	pod := Obj{}
	for key, v := range sp.Pod {
		if key != "status" {
			pod[key] = v
		}
	}
	meta := Obj{}
	for key, v := range getMap(sp.Pod, "metadata") {
		meta[key] = v
	}
	ann := Obj{}
	for key, v := range getMap(sp.Pod, "metadata", "annotations") {
		ann[key] = v
	}
	ann["kubernetes.io/config.mirror"] = sp.Hash
	ann["kubernetes.io/config.hash"] = sp.Hash
	ann["kubernetes.io/config.source"] = "file"
	ann["kubernetes.io/config.seen"] = time.Now().UTC().Format(time.RFC3339Nano)
	meta["annotations"], meta["name"], meta["namespace"] = ann, name, ns
	delete(meta, "creationTimestamp")
	meta["ownerReferences"] = []any{Obj{"apiVersion": "v1", "kind": "Node", "name": k.node, "uid": k.nodeUID, "controller": true}}
	spec := Obj{}
	for key, v := range getMap(sp.Pod, "spec") {
		spec[key] = v
	}
	spec["nodeName"] = k.node
	pod["metadata"], pod["spec"] = meta, spec
	pod["apiVersion"], pod["kind"] = "v1", "Pod"
	return pod
}

// ensureKwok runs kwok for this node (again if it died).
func (k *kubelet) ensureKwok() error {
	if k.kwok != nil {
		select {
		case <-k.kwokDone:
			k.logf("kwok exited (%v); restarting it", k.kwok.ProcessState)
		default:
			return nil
		}
	}
	bin, err := realBinary("kwok")
	if err != nil {
		return err
	}
	dir, _ := binariesDir()
	stages := filepath.Join(filepath.Dir(dir), "kwok-stages.yaml")
	args := []string{"--kubeconfig=" + kubeletConf, "--manage-single-node=" + k.node, "--config=" + stages, "--node-lease-duration-seconds=40"}
	if ip := kubeletFlag("node-ip"); ip != "" {
		args = append(args, "--node-ip="+ip)
	} else if ip, err := defaultRouteIP(); err == nil {
		args = append(args, "--node-ip="+ip)
	}
	if err := os.MkdirAll(standinLogDir, 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(standinLogDir, "kwok.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); lf.Close(); close(done) }()
	k.kwok, k.kwokDone = cmd, done
	k.logf("started kwok for node %s (pid %d)", k.node, cmd.Process.Pid)
	return nil
}

func (k *kubelet) stopKwok() {
	if k.kwok == nil {
		return
	}
	_ = k.kwok.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.kwokDone:
	case <-time.After(5 * time.Second):
		_ = k.kwok.Process.Kill()
		<-k.kwokDone
	}
	k.kwok = nil
}

// stopKubelet stops the kubelet (systemctl, then its pid file).
func stopKubelet() {
	if _, err := exec.LookPath("systemctl"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_ = exec.CommandContext(ctx, "systemctl", "stop", "kubelet").Run()
		cancel()
	}
	stopPid(readPid(filepath.Join(standinRunDir, "kubelet.pid")))
}
