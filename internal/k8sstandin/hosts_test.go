package k8sstandin_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"golang.org/x/crypto/ssh"
)

// cluster is a set of test hosts with the stand-in installed.
type cluster struct {
	t     *testing.T
	n     *testhosts.Network
	hosts map[string]*testhosts.Host
	ssh   map[string]*ssh.Client
}

func newCluster(t *testing.T, prefix, subnet string, names ...string) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the k8s stand-in host tests create network namespaces and need root; run `go test` as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := testhosts.NewTestNetwork(t, testhosts.Options{Prefix: prefix, Subnet: subnet})
	var specs []testhosts.HostSpec
	for _, name := range names {
		specs = append(specs, testhosts.HostSpec{Name: name,
			Users: []testhosts.User{{Name: "ubuntu", Password: "ubuntu", Sudo: testhosts.SudoNoPasswd}}})
	}
	hs, err := n.AddHosts(ctx, specs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8sstandin.InstallAll(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, n: n, hosts: map[string]*testhosts.Host{}, ssh: map[string]*ssh.Client{}}
	for _, h := range hs {
		c.hosts[h.Name] = h
	}
	return c
}

// requireEtcd fails (as root) when etcd is missing: several control-plane
// nodes share their state through a real etcd cluster.
func requireEtcd(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the k8s stand-in host tests create network namespaces and need root; run `go test` as root")
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatal("etcd is not installed: `apt-get install etcd-server etcd-client` (the stand-in's control-plane nodes share state through a real etcd cluster)")
	}
}

func (c *cluster) ip(name string) string { return c.hosts[name].IP.String() }

// run executes a command over SSH as ubuntu (as a driver would) and returns
// its combined output and exit error.
func (c *cluster) run(host, cmd string) (string, error) {
	c.t.Helper()
	cl := c.ssh[host]
	if cl == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var err error
		cl, err = c.n.SSH(ctx, c.ip(host)+":22", testhosts.PasswordConfig("ubuntu", "ubuntu", nil))
		if err != nil {
			c.t.Fatalf("ssh %s: %v", host, err)
		}
		c.ssh[host] = cl
		c.t.Cleanup(func() { cl.Close() })
	}
	return testhosts.Run(cl, cmd)
}

func (c *cluster) mustRun(host, cmd string) string {
	c.t.Helper()
	out, err := c.run(host, cmd)
	if err != nil {
		c.t.Fatalf("%s: %s: %v\n%s\n--- logs:\n%s", host, cmd, err, out, c.logs(host))
	}
	return out
}

func (c *cluster) logs(host string) string {
	out, _ := c.hosts[host].Exec(context.Background(), "sh", "-c", "tail -n 30 /var/log/k8s-standin/*.log /var/log/kubelet.log 2>/dev/null")
	return out
}

var (
	joinRE    = regexp.MustCompile(`kubeadm join (\S+) --token (\S+) \\\s+--discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})`)
	certKeyRE = regexp.MustCompile(`(?m)^\[upload-certs\] Using certificate key:\n([0-9a-f]{64})$`)
)

const kubectlAdmin = "sudo kubectl --kubeconfig /etc/kubernetes/admin.conf "

type nodeList struct {
	Items []struct {
		Metadata struct{ Name string } `json:"metadata"`
		Spec     struct {
			Unschedulable bool `json:"unschedulable"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	} `json:"items"`
}

func readyNodes(t *testing.T, js string) map[string]bool {
	t.Helper()
	var l nodeList
	if err := json.Unmarshal([]byte(js), &l); err != nil {
		t.Fatalf("node list: %v\n%s", err, js)
	}
	out := map[string]bool{}
	for _, it := range l.Items {
		ready := false
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				ready = true
			}
		}
		out[it.Metadata.Name] = ready
	}
	return out
}

func TestClusterOnHosts(t *testing.T) {
	c := newCluster(t, "ksta", "10.77.51.0/24", "master1", "worker1", "worker2", "worker3")
	m := c.ip("master1")

	// kubeadm init over SSH, output parsed as a driver parses real kubeadm's.
	out := c.mustRun("master1", "sudo kubeadm init --apiserver-advertise-address "+m+" --pod-network-cidr 192.168.0.0/16 --token-ttl 1h")
	j := joinRE.FindStringSubmatch(out)
	if j == nil {
		t.Fatalf("no join command in kubeadm init output:\n%s", out)
	}
	if j[1] != m+":6443" {
		t.Fatalf("join endpoint %q, want %s:6443", j[1], m)
	}
	caPEM := c.mustRun("master1", "sudo cat /etc/kubernetes/pki/ca.crt")
	ca, err := k8sstandin.ParseCertPEM([]byte(caPEM))
	if err != nil {
		t.Fatal(err)
	}
	if got := k8sstandin.CACertHash(ca); got != j[3] {
		t.Fatalf("printed CA hash %s, ca.crt hashes to %s", j[3], got)
	}
	// The openssl recipe drivers use gives the same hash.
	if h := c.mustRun("master1", "sudo openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //'"); "sha256:"+strings.TrimSpace(h) != j[3] {
		t.Fatalf("openssl hash %q != %s", h, j[3])
	}
	if !strings.Contains(c.mustRun("master1", "sudo cat /etc/kubernetes/admin.conf"), "server: https://"+m+":6443") {
		t.Fatal("admin.conf does not point at the API server")
	}

	// A fresh short-lived token per worker, as the driver does.
	tok := strings.TrimSpace(c.mustRun("master1", "sudo kubeadm token create --ttl 10m"))
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(tok) {
		t.Fatalf("token create printed %q", tok)
	}
	c.mustRun("worker1", fmt.Sprintf("sudo kubeadm join %s --token %s --discovery-token-ca-cert-hash %s", j[1], tok, j[3]))
	joinLine := strings.TrimSpace(c.mustRun("master1", "sudo kubeadm token create --print-join-command"))
	if !strings.HasPrefix(joinLine, "kubeadm join "+m+":6443 --token ") || !strings.HasSuffix(joinLine, j[3]) {
		t.Fatalf("print-join-command: %q", joinLine)
	}
	if out := c.mustRun("worker2", "sudo "+joinLine); !strings.Contains(out, "This node has joined the cluster") {
		t.Fatalf("join output:\n%s", out)
	}

	// Joining again is refused by preflight (the install script relies on it).
	if out, err := c.run("worker2", "sudo "+joinLine); err == nil || !strings.Contains(out, "kubelet.conf already exists") {
		t.Fatalf("second join: err=%v\n%s", err, out)
	}

	// An expired token and a wrong CA hash are refused; then a correct join
	// works. The real kubeadm retries discovery until its timeout (5 min by
	// default): a JoinConfiguration shortens it.
	expired := strings.TrimSpace(c.mustRun("master1", "sudo kubeadm token create --ttl 1s"))
	time.Sleep(1500 * time.Millisecond)
	joinCfg := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken: {apiServerEndpoint: "%s", token: %s, caCertHashes: ["%s"]}
timeouts: {discovery: 15s}
`, j[1], expired, j[3])
	out, err = c.run("worker3", "cat > /tmp/join.yaml <<'EOF'\n"+joinCfg+"EOF\nsudo kubeadm join --config /tmp/join.yaml")
	if err == nil || !strings.Contains(out, "could not find a JWS signature in the cluster-info ConfigMap for token ID") {
		t.Fatalf("join with expired token: err=%v\n%s", err, out)
	}
	if strings.Contains(c.mustRun("master1", "sudo kubeadm token list"), expired) {
		t.Fatal("token list shows the expired token")
	}
	wrong := "sha256:" + strings.Repeat("ab", 32)
	out, err = c.run("worker3", fmt.Sprintf("sudo kubeadm join %s --token %s --discovery-token-ca-cert-hash %s", j[1], j[2], wrong))
	if err == nil || !strings.Contains(out, "none of the public keys") {
		t.Fatalf("join with wrong CA hash: err=%v\n%s", err, out)
	}
	c.mustRun("worker3", fmt.Sprintf("sudo kubeadm join %s --token %s --discovery-token-ca-cert-hash %s", j[1], j[2], j[3]))

	nodes := readyNodes(t, c.mustRun("master1", kubectlAdmin+"get nodes -o json"))
	for _, n := range []string{"master1", "worker1", "worker2", "worker3"} {
		if !nodes[n] {
			t.Fatalf("node %s not Ready: %v", n, nodes)
		}
	}
	table := c.mustRun("master1", kubectlAdmin+"get nodes -o wide")
	if !regexp.MustCompile(`(?m)^master1\s+Ready\s+control-plane\s+\S+\s+v1\.\d+\.\d+\s+` + regexp.QuoteMeta(m)).MatchString(table) {
		t.Fatalf("get nodes -o wide:\n%s", table)
	}

	// The driver's user copies admin.conf (like the install script does).
	c.mustRun("master1", "mkdir -p ~/.kube && sudo cp /etc/kubernetes/admin.conf ~/.kube/config && sudo chown $(id -u):$(id -g) ~/.kube/config")
	if out := c.mustRun("master1", "kubectl cluster-info"); !strings.Contains(out, "is running at https://"+m+":6443") {
		t.Fatalf("cluster-info:\n%s", out)
	}

	t.Run("drain", func(t *testing.T) {
		// web runs on worker1; db too, guarded by a PodDisruptionBudget that
		// allows no disruption; an unmanaged pod runs on worker2.
		objs := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker1}
      containers: [{name: web, image: nginx}]
      volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker1}
      containers: [{name: db, image: postgres}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere, namespace: default}
spec:
  nodeName: worker2
  containers: [{name: x, image: busybox}]
`
		c.mustRun("master1", "cat > /tmp/objs.yaml <<'EOF'\n"+objs+"EOF\nkubectl apply -f /tmp/objs.yaml")
		onWorker1 := "kubectl get pods -A --field-selector spec.nodeName=worker1,status.phase=Running -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}'"
		deadline := time.Now().Add(90 * time.Second)
		var onNode string
		for {
			onNode = c.mustRun("master1", onWorker1)
			pdb := c.mustRun("master1", "kubectl get pdb db -o jsonpath='{.status.currentHealthy}'")
			if strings.Contains(onNode, "default/web-") && strings.Contains(onNode, "default/db-") && strings.TrimSpace(pdb) == "1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pods on worker1 (want web and db Running, the PDB counting db):\n%s\n%s", onNode, c.mustRun("master1", "kubectl get pods -A -o wide; kubectl get pdb"))
			}
			time.Sleep(time.Second)
		}
		if !strings.Contains(onNode, "kube-system/kube-proxy-") || strings.Contains(onNode, "elsewhere") {
			t.Fatalf("pods on worker1:\n%s", onNode)
		}
		// Without --ignore-daemonsets kubectl refuses.
		out, err := c.run("master1", "kubectl drain worker1 --delete-emptydir-data --timeout=5s")
		if err == nil || !strings.Contains(out, "cannot delete DaemonSet-managed Pods") {
			t.Fatalf("drain without --ignore-daemonsets: err=%v\n%s", err, out)
		}
		t0 := time.Now()
		out, err = c.run("master1", "kubectl drain worker1 --ignore-daemonsets --delete-emptydir-data --timeout=3s")
		if err == nil {
			t.Fatalf("drain with a blocking pod succeeded:\n%s", out)
		}
		if time.Since(t0) > 20*time.Second {
			t.Fatalf("drain took %v with --timeout=3s", time.Since(t0))
		}
		for _, want := range []string{"evicting pod default/web-", "Cannot evict pod as it would violate the pod's disruption budget",
			"There are pending pods in node \"worker1\"", "pod/db-", "global timeout reached: 3s", "There are pending nodes to be drained"} {
			if !strings.Contains(out, want) {
				t.Errorf("drain output lacks %q:\n%s", want, out)
			}
		}
		// web was evicted (it may still be terminating), db was not.
		left := c.mustRun("master1", "kubectl get pods -n default --field-selector spec.nodeName=worker1 -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{\"\\n\"}{end}'")
		if regexp.MustCompile(`(?m)^web-\S+ $`).MatchString(left) || !regexp.MustCompile(`(?m)^db-\S+ $`).MatchString(left) {
			t.Fatalf("pods on worker1 after the failed drain:\n%s", left)
		}
		nodes := c.mustRun("master1", "kubectl get nodes")
		if !regexp.MustCompile(`(?m)^worker1\s+Ready,SchedulingDisabled`).MatchString(nodes) {
			t.Fatalf("worker1 not cordoned:\n%s", nodes)
		}
		// Lift the blocker: the drain completes, then the node is deleted.
		c.mustRun("master1", "kubectl delete pdb db")
		out = c.mustRun("master1", "kubectl drain worker1 --ignore-daemonsets --delete-emptydir-data --timeout=60s")
		if !strings.Contains(out, "node/worker1 drained") {
			t.Fatalf("drain:\n%s", out)
		}
		if out := c.mustRun("master1", "kubectl delete node worker1"); !strings.Contains(out, `node "worker1" deleted`) {
			t.Fatalf("delete node: %s", out)
		}
		if out, err := c.run("master1", "kubectl get node worker1"); err == nil || !strings.Contains(out, `Error from server (NotFound): nodes "worker1" not found`) {
			t.Fatalf("get deleted node: err=%v %s", err, out)
		}
		// reset clears local state so that the node can join again.
		c.mustRun("worker1", "sudo kubeadm reset -f")
		tok := strings.TrimSpace(c.mustRun("master1", "sudo kubeadm token create --ttl 5m"))
		c.mustRun("worker1", fmt.Sprintf("sudo kubeadm join %s --token %s --discovery-token-ca-cert-hash %s", j[1], tok, j[3]))
		if !readyNodes(t, c.mustRun("master1", "kubectl get nodes -o json"))["worker1"] {
			t.Fatal("worker1 did not rejoin")
		}
	})

	t.Run("service account token", func(t *testing.T) {
		manifest := `apiVersion: v1
kind: ServiceAccount
metadata: {name: vnfm, namespace: kube-system}
---
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: vnfm-token
  namespace: kube-system
  annotations: {kubernetes.io/service-account.name: vnfm}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: vnfm-cluster-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: vnfm, namespace: kube-system}]
`
		out := c.mustRun("master1", "cat > /tmp/sa.yaml <<'EOF'\n"+manifest+"EOF\nkubectl apply -f /tmp/sa.yaml")
		for _, want := range []string{"serviceaccount/vnfm created", "secret/vnfm-token created", "clusterrolebinding.rbac.authorization.k8s.io/vnfm-cluster-admin created"} {
			if !strings.Contains(out, want) {
				t.Fatalf("apply output lacks %q:\n%s", want, out)
			}
		}
		if out := c.mustRun("master1", "kubectl apply -f /tmp/sa.yaml"); strings.Count(out, "unchanged") != 3 {
			t.Fatalf("second apply:\n%s", out)
		}
		b64 := c.mustRun("master1", "kubectl get secret vnfm-token -n kube-system -o jsonpath='{.data.token}'")
		tokB, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil || len(tokB) < 20 {
			t.Fatalf("token %q: %v", b64, err)
		}
		caB64 := c.mustRun("master1", "kubectl get secret vnfm-token -n kube-system -o jsonpath='{.data.ca\\.crt}'")
		secretCA, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(caB64))
		if strings.TrimSpace(string(secretCA)) != strings.TrimSpace(caPEM) {
			t.Fatal("the token Secret's ca.crt is not the cluster CA")
		}
		// The VIM's view: HTTPS from outside with the token and the CA.
		get := func(token string) (int, []byte) {
			cl, err := k8sstandin.NewClient(k8sstandin.ClientConfig{Server: "https://" + m + ":6443", CAPEM: secretCA, Token: token, Dial: c.n.Dial})
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			err = cl.Do(context.Background(), http.MethodGet, "/api/v1/nodes", nil, &body)
			if se, ok := err.(*k8sstandin.StatusError); ok {
				return se.Code, nil
			}
			if err != nil {
				t.Fatal(err)
			}
			return 200, body
		}
		code, body := get(string(tokB))
		if code != 200 || len(readyNodes(t, string(body))) != 4 {
			t.Fatalf("GET /api/v1/nodes with the SA token: %d %s", code, body)
		}
		if code, _ := get(""); code != 403 {
			t.Fatalf("anonymous GET /api/v1/nodes: %d, want 403", code)
		}
		if code, _ := get(string(tokB) + "x"); code != 401 {
			t.Fatalf("bad token: %d, want 401", code)
		}
		// Deleting the Secret revokes the token (once the API server's
		// Secret cache has seen the deletion).
		c.mustRun("master1", "kubectl delete secret vnfm-token -n kube-system")
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _ := get(string(tokB))
			if code == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("token of a deleted Secret: %d, want 401", code)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("static pod restart and control-plane join refused", func(t *testing.T) {
		// The API server crashes: the kubelet starts it again from its
		// manifest, and the state (in etcd) is still there. (SIGKILL: on
		// SIGTERM the real API server stops listening at once but shuts down
		// gracefully for up to a minute while watches are open, so the
		// kubelet could restart it only then.)
		c.mustRun("master1", kubectlAdmin+"create namespace kept")
		c.mustRun("master1", "sudo kill -KILL $(cat /run/k8s-standin/pods/kube-apiserver.pid)")
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := c.run("master1", kubectlAdmin+"get ns kept -o name")
			if err == nil && strings.TrimSpace(out) == "namespace/kept" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("API server not back with its state: %v %s\n%s", err, out, c.logs("master1"))
			}
			time.Sleep(500 * time.Millisecond)
		}
		// A control-plane join needs a cluster with a controlPlaneEndpoint.
		tok := strings.TrimSpace(c.mustRun("master1", "sudo kubeadm token create --ttl 5m"))
		out, err := c.run("worker3", "sudo kubeadm reset -f && sudo kubeadm join "+j[1]+" --token "+tok+" --discovery-token-ca-cert-hash "+j[3]+
			" --control-plane --certificate-key "+strings.Repeat("ab", 32))
		if err == nil || !strings.Contains(out, "controlPlaneEndpoint") {
			t.Fatalf("control-plane join to a cluster without endpoint: err=%v\n%s", err, out)
		}
	})

	t.Run("reboot", func(t *testing.T) {
		// The whole cloud powers off and boots again (make run restarted):
		// each host's enabled kubelet starts the static pods from their
		// manifests and its kwok, and the cluster works with its state.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for _, name := range []string{"master1", "worker1", "worker2"} {
			if cl := c.ssh[name]; cl != nil {
				cl.Close()
				delete(c.ssh, name)
			}
			if err := c.hosts[name].Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"master1", "worker1", "worker2"} {
			if err := c.hosts[name].Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			out, err := c.run("master1", kubectlAdmin+"get ns kept -o name")
			if err == nil && strings.TrimSpace(out) == "namespace/kept" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("API server not back after the reboot: %v %s\n%s", err, out, c.logs("master1"))
			}
			time.Sleep(time.Second)
		}
		// New pods on a rebooted worker run: the scheduler, the controller
		// manager and that node's kwok are back.
		c.mustRun("master1", "cat <<'EOF' | "+kubectlAdmin+`apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: {name: after-reboot, namespace: kept}
spec:
  replicas: 2
  selector: {matchLabels: {app: after-reboot}}
  template:
    metadata: {labels: {app: after-reboot}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker2}
      containers: [{name: web, image: nginx}]
EOF`)
		for {
			out, _ := c.run("master1", kubectlAdmin+"get deployment after-reboot -n kept -o jsonpath='{.status.readyReplicas}'")
			if strings.TrimSpace(out) == "2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the reboot, deployment ready replicas %q\n%s\n%s", out, c.mustRun("master1", kubectlAdmin+"get pods -A -o wide"), c.logs("worker2"))
			}
			time.Sleep(time.Second)
		}
		if !readyNodes(t, c.mustRun("master1", kubectlAdmin+"get nodes -o json"))["master1"] {
			t.Fatal("master1 not Ready after the reboot")
		}
	})
}

func TestHAControlPlaneOnHosts(t *testing.T) {
	requireEtcd(t)
	c := newCluster(t, "kstb", "10.77.52.0/24", "m1", "m2", "m3")
	m1 := c.ip("m1")
	ep := m1 + ":6443"
	out := c.mustRun("m1", "sudo kubeadm init --control-plane-endpoint "+ep+" --upload-certs --apiserver-advertise-address "+m1)
	k := certKeyRE.FindStringSubmatch(out)
	j := joinRE.FindStringSubmatch(out)
	if k == nil || j == nil || !strings.Contains(out, "--control-plane --certificate-key "+k[1]) {
		t.Fatalf("init output lacks the certificate key or the control-plane join:\n%s", out)
	}
	// A fresh certificate key replaces the uploaded certificates.
	up := c.mustRun("m1", "sudo kubeadm init phase upload-certs --upload-certs")
	lines := strings.Split(strings.TrimSpace(up), "\n")
	fresh := lines[len(lines)-1]
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(fresh) || fresh == k[1] {
		t.Fatalf("upload-certs output:\n%s", up)
	}
	joinCP := func(host, key string) (string, error) {
		tok := strings.TrimSpace(c.mustRun("m1", "sudo kubeadm token create --ttl 15m"))
		return c.run(host, fmt.Sprintf("sudo kubeadm join %s --token %s --discovery-token-ca-cert-hash %s --control-plane --certificate-key %s --apiserver-advertise-address %s",
			ep, tok, j[3], key, c.ip(host)))
	}
	if out, err := joinCP("m2", k[1]); err == nil || !strings.Contains(out, "error decoding secret data with provided key") {
		t.Fatalf("control-plane join with the replaced key: err=%v\n%s", err, out)
	}
	if out, err := joinCP("m2", fresh); err != nil || !strings.Contains(out, "a new control plane instance was created") {
		t.Fatalf("control-plane join m2: %v\n%s\n%s", err, out, c.logs("m2"))
	}
	fresh3 := strings.TrimSpace(c.mustRun("m1", "sudo kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -1"))
	if out, err := joinCP("m3", fresh3); err != nil {
		t.Fatalf("control-plane join m3: %v\n%s\n%s", err, out, c.logs("m3"))
	}

	local := func(host string) string {
		return "sudo kubectl --kubeconfig /etc/kubernetes/admin.conf --server https://" + c.ip(host) + ":6443 "
	}
	// Every API server sees the same objects.
	c.mustRun("m3", local("m3")+"create namespace from-m3")
	for _, h := range []string{"m1", "m2", "m3"} {
		nodes := readyNodes(t, c.mustRun(h, local(h)+"get nodes -o json"))
		if len(nodes) != 3 || !nodes["m1"] || !nodes["m2"] || !nodes["m3"] {
			t.Fatalf("nodes seen by %s: %v", h, nodes)
		}
		if !strings.Contains(c.mustRun(h, local(h)+"get ns"), "from-m3") {
			t.Fatalf("%s does not see the namespace created through m3", h)
		}
	}
	etcdctl := "sudo ETCDCTL_API=3 etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt " +
		"--cert /etc/kubernetes/pki/etcd/server.crt --key /etc/kubernetes/pki/etcd/server.key "
	if _, err := c.run("m2", "command -v etcdctl"); err == nil {
		members := c.mustRun("m2", etcdctl+"member list")
		for _, h := range []string{"m1", "m2", "m3"} {
			if !strings.Contains(members, ", started, "+h+", https://"+c.ip(h)+":2380") {
				t.Fatalf("etcd member list lacks %s:\n%s", h, members)
			}
		}
	} else {
		t.Log("etcdctl not installed (etcd-client); skipping the member list check")
	}

	// The first master dies: the two others keep quorum and all the state.
	if err := c.hosts["m1"].Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		out, err := c.run("m2", local("m2")+"create namespace after-m1")
		if err == nil || strings.Contains(out, "AlreadyExists") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write through m2 after m1 died: %v\n%s\n%s", err, out, c.logs("m2"))
		}
		time.Sleep(time.Second)
	}
	for _, h := range []string{"m2", "m3"} {
		ns := c.mustRun(h, local(h)+"get ns -o name")
		if !strings.Contains(ns, "namespace/after-m1") || !strings.Contains(ns, "namespace/from-m3") {
			t.Fatalf("%s lost state: %s", h, ns)
		}
		if n := readyNodes(t, c.mustRun(h, local(h)+"get nodes -o json")); len(n) != 3 {
			t.Fatalf("%s nodes: %v", h, n)
		}
	}
}

func parseResults(out string) map[string]string {
	res := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if kv, ok := strings.CutPrefix(l, "VNFM_RESULT "); ok {
			k, v, _ := strings.Cut(kv, "=")
			res[k] = v
		}
	}
	return res
}

// TestInstallScriptOnHosts runs scripts/install_k8s_cluster.sh as the
// driver would: it finds the stand-in, skips the packages and drives its
// kubeadm; re-runs change nothing.
func TestInstallScriptOnHosts(t *testing.T) {
	requireEtcd(t)
	c := newCluster(t, "kstc", "10.77.53.0/24", "m1", "m2", "w1")
	script, err := os.ReadFile("../../scripts/install_k8s_cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range c.hosts {
		cmd := h.Command(context.Background(), "sh", "-c", "cat > /tmp/install_k8s_cluster.sh && chmod 755 /tmp/install_k8s_cluster.sh")
		cmd.Stdin = strings.NewReader(string(script))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("copy script: %v %s", err, out)
		}
	}
	m1, m2, w1 := c.ip("m1"), c.ip("m2"), c.ip("w1")
	masters := m1 + "," + m2
	out := c.mustRun("m1", "bash /tmp/install_k8s_cluster.sh -m "+masters+" -i "+m1+" --api-port 6443 -p 10.244.0.0/16")
	r := parseResults(out)
	if r["status"] != "installed" || r["role"] != "main-master" || r["standin"] != "true" || r["node_name"] != "m1" ||
		r["api_endpoint"] != "https://"+m1+":6443" || !strings.HasPrefix(r["ca_cert_hash"], "sha256:") ||
		len(r["certificate_key"]) != 64 || r["join_token"] == "" || !strings.Contains(out, "Install Success!") {
		t.Fatalf("main master results %v\n%s", r, out)
	}
	caPEM, err := base64.StdEncoding.DecodeString(r["ca_cert_b64"])
	if err != nil {
		t.Fatal(err)
	}
	if ca, err := k8sstandin.ParseCertPEM(caPEM); err != nil || k8sstandin.CACertHash(ca) != r["ca_cert_hash"] {
		t.Fatalf("ca_cert_b64 does not match ca_cert_hash: %v", err)
	}
	// Idempotent: a re-run does not init again but hands out fresh credentials.
	r2 := parseResults(c.mustRun("m1", "bash /tmp/install_k8s_cluster.sh -m "+masters+" -i "+m1+" --api-port 6443"))
	if r2["status"] != "already-installed" || r2["join_token"] == r["join_token"] || r2["ca_cert_hash"] != r["ca_cert_hash"] {
		t.Fatalf("re-run results %v", r2)
	}
	bareHash := strings.TrimPrefix(r2["ca_cert_hash"], "sha256:") // Tacker passes the bare hex
	out = c.mustRun("m2", fmt.Sprintf("bash /tmp/install_k8s_cluster.sh -m %s -i %s --api-port 6443 -t %s -s %s -k %s",
		masters, m1, r2["join_token"], bareHash, r2["certificate_key"]))
	if r := parseResults(out); r["status"] != "installed" || r["role"] != "control-plane" || r["node_ip"] != m2 {
		t.Fatalf("control-plane join results %v\n%s", r, out)
	}
	workerCmd := fmt.Sprintf("bash /tmp/install_k8s_cluster.sh -w %s -i %s -t %s -s %s", w1, m1, r2["join_token"], r2["ca_cert_hash"])
	if r := parseResults(c.mustRun("w1", workerCmd)); r["status"] != "installed" || r["role"] != "worker" || r["node_name"] != "w1" {
		t.Fatalf("worker results %v", r)
	}
	if r := parseResults(c.mustRun("w1", workerCmd)); r["status"] != "already-installed" {
		t.Fatalf("worker re-run results %v", r)
	}
	// The driver's user got a kubeconfig on the masters.
	for _, h := range []string{"m1", "m2"} {
		nodes := readyNodes(t, c.mustRun(h, "kubectl get nodes -o json"))
		if len(nodes) != 3 || !nodes["m1"] || !nodes["m2"] || !nodes["w1"] {
			t.Fatalf("nodes seen from %s: %v", h, nodes)
		}
	}
	// Failures exit non-zero with a status=failed line.
	out, err = c.run("w1", "bash /tmp/install_k8s_cluster.sh -w "+w1+" -i "+m1)
	if err == nil || parseResults(out)["status"] != "failed" || !strings.Contains(out, "-t (token) is required") {
		t.Fatalf("worker without token: err=%v\n%s", err, out)
	}
}
