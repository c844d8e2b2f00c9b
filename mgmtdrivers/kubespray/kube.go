package kubespray

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// AdminKubeconfig is kubeadm's admin kubeconfig on control-plane nodes.
const AdminKubeconfig = "/etc/kubernetes/admin.conf"

// Kubectl runs kubectl on a control-plane node over SSH, as root with the
// admin kubeconfig. It is independent of kubespray (the kubeadm driver can
// use it the same way).
type Kubectl struct {
	Exec       remote.Executor
	Kubeconfig string // default AdminKubeconfig
	// Output, when set, receives the commands' output lines (masked).
	Output func(stream remote.Stream, line string)
}

func (k *Kubectl) cmd(args ...string) string {
	kc := k.Kubeconfig
	if kc == "" {
		kc = AdminKubeconfig
	}
	return remote.Command("kubectl", append([]string{"--kubeconfig=" + kc}, args...)...)
}

func (k *Kubectl) run(ctx context.Context, timeout time.Duration, stdin string, args ...string) (remote.Result, error) {
	o := remote.RunOpts{Sudo: true, Timeout: timeout, Output: k.Output}
	if stdin != "" {
		o.Stdin = strings.NewReader(stdin)
	}
	return k.Exec.Run(ctx, k.cmd(args...), o)
}

func isNotFound(res remote.Result) bool {
	s := res.Stderr + res.Stdout
	return strings.Contains(s, "NotFound") || strings.Contains(s, "not found")
}

// NodeExists tells whether the cluster has a Node object of that name.
func (k *Kubectl) NodeExists(ctx context.Context, name string) (bool, error) {
	res, err := k.run(ctx, time.Minute, "", "get", "node", name, "-o", "name")
	if err == nil {
		return true, nil
	}
	if _, ok := remote.ExitCode(err); ok && isNotFound(res) {
		return false, nil
	}
	return false, fmt.Errorf("kubectl get node %s: %w", name, err)
}

// Nodes lists the cluster's node names.
func (k *Kubectl) Nodes(ctx context.Context) ([]string, error) {
	res, err := k.run(ctx, time.Minute, "", "get", "nodes", "-o", "name")
	if err != nil {
		return nil, fmt.Errorf("kubectl get nodes: %w", err)
	}
	var out []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(l), "node/"); ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// Drain cordons a node and evicts its pods (DaemonSet pods stay), bounded
// by timeout. A node that is not in the cluster is drained already.
// Evictions a PodDisruptionBudget blocks make it fail at the timeout.
func (k *Kubectl) Drain(ctx context.Context, name string, timeout time.Duration) error {
	ok, err := k.NodeExists(ctx, name)
	if err != nil || !ok {
		return err
	}
	secs := max(int(timeout.Seconds()), 1)
	_, err = k.run(ctx, timeout+30*time.Second, "", "drain", name, "--ignore-daemonsets", "--delete-emptydir-data",
		fmt.Sprintf("--timeout=%ds", secs))
	if err != nil {
		return fmt.Errorf("draining node %s (bounded to %v) failed; if a PodDisruptionBudget blocks the eviction, relax it, then retry the operation: %w", name, timeout, err)
	}
	return nil
}

// DeleteNode deletes a Node object (absent: nothing to do).
func (k *Kubectl) DeleteNode(ctx context.Context, name string) error {
	if _, err := k.run(ctx, time.Minute, "", "delete", "node", name, "--ignore-not-found"); err != nil {
		return fmt.Errorf("kubectl delete node %s: %w", name, err)
	}
	return nil
}

// ServiceAccountToken makes sure a ServiceAccount bound to clusterRole
// exists in namespace with a long-lived token Secret (the
// kubernetes.io/service-account-token type, since Kubernetes 1.24 no longer
// creates one), and returns the token and the cluster CA (PEM).
func (k *Kubectl) ServiceAccountToken(ctx context.Context, namespace, name, clusterRole string) (token, caPEM string, err error) {
	manifest := fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[1]s
  namespace: %[2]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[1]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: %[3]s
subjects:
  - kind: ServiceAccount
    name: %[1]s
    namespace: %[2]s
---
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s-token
  namespace: %[2]s
  annotations:
    kubernetes.io/service-account.name: %[1]s
type: kubernetes.io/service-account-token
`, name, namespace, clusterRole)
	if _, err := k.run(ctx, time.Minute, manifest, "apply", "-f", "-"); err != nil {
		return "", "", fmt.Errorf("creating the VIM service account %s/%s: %w", namespace, name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := k.run(ctx, time.Minute, "", "-n", namespace, "get", "secret", name+"-token", "-o", "json")
		if err != nil {
			return "", "", fmt.Errorf("reading the token Secret %s/%s-token: %w", namespace, name, err)
		}
		var sec struct {
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &sec); err != nil {
			return "", "", fmt.Errorf("the token Secret %s/%s-token is not JSON: %w", namespace, name, err)
		}
		tok, _ := base64.StdEncoding.DecodeString(sec.Data["token"])
		ca, _ := base64.StdEncoding.DecodeString(sec.Data["ca.crt"])
		if len(tok) > 0 {
			if len(ca) == 0 {
				r, err := k.Exec.Run(ctx, "cat /etc/kubernetes/pki/ca.crt", remote.RunOpts{Sudo: true, Timeout: time.Minute})
				if err != nil {
					return "", "", fmt.Errorf("reading the cluster CA: %w", err)
				}
				ca = []byte(r.Stdout)
			}
			if c, ok := k.Exec.(*remote.Client); ok {
				c.AddSecrets(string(tok))
			}
			return string(tok), string(ca), nil
		}
		if time.Now().After(deadline) {
			return "", "", errors.New("the token controller did not fill the Secret " + namespace + "/" + name + "-token within a minute")
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
