package kubeadm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// Paths and names on the nodes.
const (
	remoteDir    = "/var/lib/mini-vnfm"
	remoteScript = remoteDir + "/install_k8s_cluster.sh"
	adminConf    = "/etc/kubernetes/admin.conf"
	caCertPath   = "/etc/kubernetes/pki/ca.crt"
	kubeletConf  = "/etc/kubernetes/kubelet.conf"
	etcdPKIDir   = "/etc/kubernetes/pki/etcd"
	// APIPort is the API server port of a single-master cluster.
	APIPort = 6443

	hostsBegin = "# BEGIN mini-VNFM Kubernetes nodes"
	hostsEnd   = "# END mini-VNFM Kubernetes nodes"

	// The VIM's identity in the cluster.
	vimServiceAccount = "mini-vnfm-vim"
	vimTokenSecret    = "mini-vnfm-vim-token"
	vimBinding        = "mini-vnfm-vim-cluster-admin"
	vimNamespace      = "kube-system"
)

var tokenRE = regexp.MustCompile(`(?m)^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// kubectl is a kubectl command line with the admin kubeconfig (run as root).
func kubectl(args ...string) string {
	return remote.Command("kubectl", append([]string{"--kubeconfig", adminConf}, args...)...)
}

func (d *Driver) sudo(o remote.RunOpts) remote.RunOpts {
	o.Sudo = true
	if o.Timeout == 0 {
		o.Timeout = d.o.CommandTimeout
	}
	return o
}

// nodeState is what the cluster says about a node.
type nodeState struct {
	Ready         bool
	Unschedulable bool
}

// clusterNodes lists the cluster's nodes (kubectl get nodes on a master).
func (d *Driver) clusterNodes(ctx context.Context, m *session) (map[string]nodeState, error) {
	out, err := m.run(ctx, kubectl("get", "nodes", "-o", "json"), d.sudo(remote.RunOpts{}))
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's nodes on %s: %w", m.node.Name, err)
	}
	nodes, err := parseNodes(out)
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's nodes on %s: %w", m.node.Name, err)
	}
	return nodes, nil
}

// parseNodes reads `kubectl get nodes -o json`.
func parseNodes(out string) (map[string]nodeState, error) {
	var l struct {
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
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("unexpected kubectl output: %v", err)
	}
	nodes := map[string]nodeState{}
	for _, it := range l.Items {
		st := nodeState{Unschedulable: it.Spec.Unschedulable}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				st.Ready = true
			}
		}
		nodes[it.Metadata.Name] = st
	}
	return nodes, nil
}

// hasNode asks the cluster whether a node is registered.
func (d *Driver) hasNode(ctx context.Context, m *session, name string) (bool, error) {
	out, err := d.runKube(ctx, m, kubectl("get", "node", name, "-o", "name", "--ignore-not-found"), d.sudo(remote.RunOpts{}))
	if err != nil {
		return false, fmt.Errorf("looking up node %s on %s: %w", name, m.node.Name, err)
	}
	return strings.TrimSpace(out) != "", nil
}

// uploadScript puts the install script on a node (root-owned, 0700).
func (d *Driver) uploadScript(ctx context.Context, s *session, script []byte) error {
	if err := d.stagingDir(ctx, s); err != nil {
		return err
	}
	return s.x.UploadAsRoot(ctx, remoteScript, script, 0o700)
}

// runScript runs the install script and returns its VNFM_RESULT values. Its
// progress lines go to the log and, through note, to the op's progress.
func (d *Driver) runScript(ctx context.Context, s *session, args []string, env map[string]string, secrets []string, note func(string)) (map[string]string, error) {
	return d.runScriptIn(ctx, s, args, env, secrets, nil, note)
}

// runScriptIn is runScript with stdin for the script.
func (d *Driver) runScriptIn(ctx context.Context, s *session, args []string, env map[string]string, secrets []string, stdin io.Reader, note func(string)) (map[string]string, error) {
	o := d.sudo(remote.RunOpts{Env: env, Secrets: secrets, Stdin: stdin, Timeout: d.o.InstallTimeout,
		Output: func(_ remote.Stream, line string) {
			if msg, ok := strings.CutPrefix(line, "[install_k8s_cluster.sh] "); ok {
				s.log.Info("install: " + msg)
				if note != nil {
					note(msg)
				}
			}
		}})
	res, err := s.x.Run(ctx, remote.Command("bash", append([]string{remoteScript}, args...)...), o)
	r := results(res.Stdout)
	if err != nil {
		if msg := r["error"]; msg != "" {
			return r, fmt.Errorf("install script failed on %s: %s: %w", s.node.Name, msg, err)
		}
		return r, fmt.Errorf("install script failed on %s: %w", s.node.Name, err)
	}
	if st := r["status"]; st != "installed" && st != "already-installed" && (st != "prepared" || !slices.Contains(args, "--prepare")) {
		return r, fmt.Errorf("install script on %s ended without a success status (VNFM_RESULT status=%q)", s.node.Name, st)
	}
	return r, nil
}

// caCert reads the cluster CA certificate from a master and computes the
// discovery hash kubeadm join wants (SHA-256 of the public key info).
func (d *Driver) caCert(ctx context.Context, m *session) (pemText, hash string, err error) {
	out, err := m.run(ctx, remote.Command("cat", caCertPath), d.sudo(remote.RunOpts{}))
	if err != nil {
		return "", "", fmt.Errorf("reading the cluster CA on %s: %w", m.node.Name, err)
	}
	if pemText, hash, err = parseCA([]byte(out)); err != nil {
		return "", "", fmt.Errorf("%s on %s: %w", caCertPath, m.node.Name, err)
	}
	return pemText, hash, nil
}

// parseCA reads a PEM CA certificate and returns it with kubeadm's
// discovery hash: "sha256:" + hex SHA-256 of its SubjectPublicKeyInfo.
func parseCA(b []byte) (pemText, hash string, err error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return "", "", errors.New("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", "", err
	}
	if !cert.IsCA {
		return "", "", errors.New("not a CA certificate")
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: blk.Bytes})), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// deleteToken removes a bootstrap token once it served (best effort: it
// expires anyway).
func (d *Driver) deleteToken(ctx context.Context, m *session, token string) {
	id, _, _ := strings.Cut(token, ".")
	if _, err := m.x.Run(ctx, remote.Command("kubeadm", "token", "delete", "--kubeconfig", adminConf, id), d.sudo(remote.RunOpts{})); err != nil {
		m.log.Warn("could not delete a used bootstrap token; it expires on its own", "tokenId", id, "err", err)
	}
}

// hostsBlock is the managed /etc/hosts block listing the nodes.
func hostsBlock(nodes []*Node) string {
	var b strings.Builder
	b.WriteString(hostsBegin + "\n")
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range sorted {
		fmt.Fprintf(&b, "%s %s\n", n.IP, n.Name)
	}
	b.WriteString(hostsEnd + "\n")
	return b.String()
}

// writeHostsScript replaces the managed block of /etc/hosts with stdin, in
// place (/etc/hosts may be a bind mount), keeping every other line.
const writeHostsScript = `set -eu
f=/etc/hosts
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
block=$(cat)
{ sed "/^$1\$/,/^$2\$/d" "$f"; printf '%s\n' "$block"; } > "$tmp"
cat "$tmp" > "$f"`

// hostsAndScript is writeHostsScript with the block as $3, then the install
// script from stdin into remoteScript (root's, 0700, replaced atomically):
// a node's preparation in one round trip.
const hostsAndScript = `set -eu
install -d -m 0700 ` + remoteDir + `
f=/etc/hosts
tmp=$(mktemp)
st=$(mktemp ` + remoteDir + `/.install_k8s_cluster.sh.tmp-XXXXXX)
trap 'rm -f "$tmp" "$st"' EXIT
{ sed "/^$1\$/,/^$2\$/d" "$f"; printf '%s\n' "$3"; } > "$tmp"
cat "$tmp" > "$f"
cat > "$st"
chmod 0700 "$st"
mv -f "$st" ` + remoteScript + ``

// writeHostsAndScript writes the node's /etc/hosts block and uploads the
// install script in one session.
func (d *Driver) writeHostsAndScript(ctx context.Context, s *session, nodes []*Node, script []byte) error {
	cmd := remote.Command("sh", "-c", hostsAndScript, "prepare-node", hostsBegin, hostsEnd, strings.TrimSuffix(hostsBlock(nodes), "\n"))
	if _, err := s.run(ctx, cmd, d.sudo(remote.RunOpts{Stdin: bytes.NewReader(script)})); err != nil {
		return fmt.Errorf("updating /etc/hosts and uploading the install script on %s: %w", s.node.Name, err)
	}
	return nil
}

// writeHosts makes the node's /etc/hosts list exactly these nodes in the
// managed block.
func (d *Driver) writeHosts(ctx context.Context, s *session, nodes []*Node) error {
	cmd := remote.Command("sh", "-c", writeHostsScript, "write-hosts", hostsBegin, hostsEnd)
	if _, err := s.run(ctx, cmd, d.sudo(remote.RunOpts{Stdin: strings.NewReader(hostsBlock(nodes))})); err != nil {
		return fmt.Errorf("updating /etc/hosts on %s: %w", s.node.Name, err)
	}
	return nil
}

// writeHostsAll updates /etc/hosts on every connected node of targets.
func (d *Driver) writeHostsAll(ctx context.Context, ss *sessions, targets, listed []*Node) error {
	errs := remote.ForEach(ctx, targets, 16, func(ctx context.Context, n *Node) error {
		s := ss.get(n)
		if s == nil {
			// A master that is down (HA): it gets the list when it is healed.
			return nil
		}
		return d.writeHosts(ctx, s, listed)
	})
	return remote.JoinErrors(targets, errs, func(n *Node) string { return n.Name })
}

// noProxy extends the user's no_proxy with what must never go through the
// proxy: loopback, the pod and service CIDRs, the API address, the node
// CIDR and every node address.
func noProxy(p *Params, t *Topology) string {
	var items []string
	add := func(s string) {
		if s != "" && !slices.Contains(items, s) {
			items = append(items, s)
		}
	}
	for _, s := range strings.Split(p.Proxy.NoProxy, ",") {
		add(strings.TrimSpace(s))
	}
	add("127.0.0.1")
	add("localhost")
	add(p.Master.PodCIDR)
	add(p.Master.ClusterCIDR)
	add(t.EndpointIP)
	add(p.Proxy.K8sNodeCIDR)
	if p.Proxy.K8sNodeCIDR == "" && len(t.Masters) > 0 {
		// Tacker's default: the first master's /24.
		if ip, err := netip.ParseAddr(t.Masters[0].IP); err == nil && ip.Is4() {
			pfx, _ := ip.Prefix(24)
			add(pfx.String())
		}
	}
	for _, n := range t.All() {
		add(n.IP)
	}
	return strings.Join(items, ",")
}

// scriptEnv is the environment of the install script: proxies and the
// pinned Kubernetes version.
func scriptEnv(p *Params, t *Topology) map[string]string {
	env := map[string]string{}
	if p.Proxy.Enabled() {
		np := noProxy(p, t)
		for k, v := range map[string]string{"http_proxy": p.Proxy.HTTPProxy, "https_proxy": p.Proxy.HTTPSProxy, "no_proxy": np} {
			if v != "" {
				env[k], env[strings.ToUpper(k)] = v, v
			}
		}
	}
	if p.KubernetesVersion != "" {
		env["K8S_VERSION"] = p.KubernetesVersion
	}
	return env
}

// proxySecrets are the proxy URLs' passwords, masked in output.
func proxySecrets(p *Params) []string {
	var out []string
	for _, s := range []string{p.Proxy.HTTPProxy, p.Proxy.HTTPSProxy} {
		if i := strings.Index(s, "://"); i >= 0 {
			if at := strings.LastIndex(s, "@"); at > i {
				if _, pw, ok := strings.Cut(s[i+3:at], ":"); ok && pw != "" {
					out = append(out, pw)
				}
			}
		}
	}
	return out
}

// vimManifest creates the VIM's ServiceAccount, its token Secret (the
// Kubernetes ≥ 1.24 way: no Secret is made for a ServiceAccount on its own)
// and its cluster-admin binding.
const vimManifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + vimServiceAccount + `
  namespace: ` + vimNamespace + `
  labels: {app.kubernetes.io/managed-by: mini-vnfm}
---
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: ` + vimTokenSecret + `
  namespace: ` + vimNamespace + `
  labels: {app.kubernetes.io/managed-by: mini-vnfm}
  annotations: {kubernetes.io/service-account.name: ` + vimServiceAccount + `}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ` + vimBinding + `
  labels: {app.kubernetes.io/managed-by: mini-vnfm}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: ` + vimServiceAccount + `, namespace: ` + vimNamespace + `}
`

// nodePoll is how often the wait for a joined node looks again (one SSH
// round trip; a second was most of a scale-out's tail).
const nodePoll = 250 * time.Millisecond

// vimToken applies the VIM's ServiceAccount and returns its bearer token,
// waiting for the token controller to fill the Secret.
func (d *Driver) vimToken(ctx context.Context, m *session) (string, error) {
	if _, err := m.run(ctx, kubectl("apply", "-f", "-"), d.sudo(remote.RunOpts{Stdin: strings.NewReader(vimManifest)})); err != nil {
		return "", fmt.Errorf("creating the VIM's ServiceAccount on %s: %w", m.node.Name, err)
	}
	deadline := time.Now().Add(d.o.TokenWait)
	for {
		res, err := m.x.Run(ctx, kubectl("-n", vimNamespace, "get", "secret", vimTokenSecret, "-o", "jsonpath={.data.token}"), d.sudo(remote.RunOpts{}))
		if err != nil {
			return "", fmt.Errorf("reading the VIM's token Secret on %s: %w", m.node.Name, err)
		}
		if b64 := strings.TrimSpace(res.Stdout); b64 != "" {
			tok, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || len(tok) == 0 {
				return "", fmt.Errorf("the VIM's token Secret on %s holds no valid token", m.node.Name)
			}
			return string(tok), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the token controller did not fill Secret %s/%s within %v", vimNamespace, vimTokenSecret, d.o.TokenWait)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return "", err
		}
	}
}

// waitNode waits until the node is registered in the cluster.
func (d *Driver) waitNode(ctx context.Context, m *session, name string) error {
	deadline := time.Now().Add(d.o.NodeWait)
	for {
		ok, err := d.hasNode(ctx, m, name)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s did not register with the API server within %v", name, d.o.NodeWait)
		}
		if err := sleep(ctx, nodePoll); err != nil {
			return err
		}
	}
}

// drainResult says how a drain went.
type drainResult struct {
	Forced  bool     `json:"forced,omitempty"`
	Blocked []string `json:"blockedBy,omitempty"`
	Absent  bool     `json:"notInCluster,omitempty"`
}

// removeNode cordons, drains (timeout and policy as configured) and deletes
// a node from the cluster. With policy fail a drain that does not finish
// is an error listing the pods left; the node stays cordoned.
func (d *Driver) removeNode(ctx context.Context, m *session, p *Params, name string, note func(string)) (drainResult, error) {
	var r drainResult
	present, err := d.hasNode(ctx, m, name)
	if err != nil {
		return r, err
	}
	if !present {
		r.Absent = true
		return r, nil
	}
	note("cordon")
	if _, err := d.runKube(ctx, m, kubectl("cordon", name), d.sudo(remote.RunOpts{})); err != nil {
		return r, fmt.Errorf("cordoning node %s: %w", name, err)
	}
	note(fmt.Sprintf("drain (timeout %v, policy %s)", p.DrainTimeout, p.DrainPolicy))
	secs := strconv.Itoa(int(p.DrainTimeout.Seconds())) + "s"
	_, derr := m.run(ctx, kubectl("drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+secs),
		d.sudo(remote.RunOpts{Timeout: p.DrainTimeout + d.o.CommandTimeout}))
	if derr != nil {
		if ctx.Err() != nil {
			return r, derr
		}
		left, lerr := d.podsOn(ctx, m, name)
		if lerr != nil {
			return r, errors.Join(fmt.Errorf("draining node %s: %w", name, derr), lerr)
		}
		r.Blocked = left
		if p.DrainPolicy != DrainForce {
			return r, &DrainError{Node: name, Timeout: p.DrainTimeout, Pods: left, Err: derr}
		}
		m.log.Warn("drain did not finish; deleting the pods left (drain_policy force)", "victim", name, "pods", left)
		note("drain did not finish; deleting the pods left (drain_policy force)")
		if _, err := m.run(ctx, kubectl("drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
			"--disable-eviction", "--grace-period=30", "--timeout=120s"), d.sudo(remote.RunOpts{Timeout: 120*time.Second + d.o.CommandTimeout})); err != nil {
			return r, fmt.Errorf("forced drain of node %s: %w", name, err)
		}
		r.Forced = true
	}
	note("delete node")
	if _, err := d.runKube(ctx, m, kubectl("delete", "node", name, "--ignore-not-found"), d.sudo(remote.RunOpts{})); err != nil {
		return r, fmt.Errorf("deleting node %s: %w", name, err)
	}
	return r, nil
}

// DrainError reports a drain that did not finish in time, with the pods
// left on the node.
type DrainError struct {
	Node    string
	Timeout time.Duration
	Pods    []string
	Err     error
}

func (e *DrainError) Error() string {
	pods := "none listed (see the kubectl error)"
	if len(e.Pods) > 0 {
		pods = strings.Join(e.Pods, ", ")
	}
	return fmt.Sprintf("node %s was not drained within %v (drain_policy fail); pods that blocked: %s. "+
		"The node stays cordoned. Free the pods (e.g. relax their PodDisruptionBudget) and retry, "+
		"or mark this operation failed (POST .../fail) and scale in again with additionalParams.drain_policy \"force\": %v", e.Node, e.Timeout, pods, e.Err)
}

func (e *DrainError) Unwrap() error { return e.Err }

// podsOn lists the pods a drain waits for on a node: all but DaemonSet and
// mirror (static) pods and finished ones.
func (d *Driver) podsOn(ctx context.Context, m *session, node string) ([]string, error) {
	out, err := d.runKube(ctx, m, kubectl("get", "pods", "--all-namespaces", "--field-selector", "spec.nodeName="+node, "-o", "json"), d.sudo(remote.RunOpts{}))
	if err != nil {
		return nil, fmt.Errorf("listing the pods on %s: %w", node, err)
	}
	var l struct {
		Items []struct {
			Metadata struct {
				Name, Namespace string
				Annotations     map[string]string `json:"annotations"`
				OwnerReferences []struct {
					Kind       string `json:"kind"`
					Controller bool   `json:"controller"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Status struct{ Phase string } `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return nil, fmt.Errorf("listing the pods on %s: unexpected kubectl output: %v", node, err)
	}
	var left []string
	for _, it := range l.Items {
		if it.Metadata.Annotations["kubernetes.io/config.mirror"] != "" || it.Status.Phase == "Succeeded" || it.Status.Phase == "Failed" {
			continue
		}
		ds := false
		for _, o := range it.Metadata.OwnerReferences {
			if o.Controller && o.Kind == "DaemonSet" {
				ds = true
			}
		}
		if !ds {
			left = append(left, it.Metadata.Namespace+"/"+it.Metadata.Name)
		}
	}
	slices.Sort(left)
	return left, nil
}

// uncordon makes a node schedulable again (after a failed removal is
// rolled back).
func (d *Driver) uncordon(ctx context.Context, m *session, name string) error {
	present, err := d.hasNode(ctx, m, name)
	if err != nil || !present {
		return err
	}
	if _, err := d.runKube(ctx, m, kubectl("uncordon", name), d.sudo(remote.RunOpts{})); err != nil {
		return fmt.Errorf("uncordoning node %s: %w", name, err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
