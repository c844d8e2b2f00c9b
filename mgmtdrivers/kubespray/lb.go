package kubespray

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

// lbScriptPath is where the LB script goes on the load balancer, relative
// to the login user's home.
const lbScriptPath = ".mini-vnfm/install_external_lb.sh"

func nodeList(nodes []*Node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = n.Name + "=" + n.IP
	}
	return strings.Join(parts, ",")
}

// configureLB runs external_lb_param.script_path on the load balancer VNFC
// (as root) with the masters and the given workers: HAProxy's API frontend
// to the masters' :6443 and the NodePort frontend to the workers. The script
// writes the whole configuration each time, so this both installs the load
// balancer and adds or removes workers' routes.
func (s *session) configureLB(ctx context.Context, workers []*Node) error {
	script, err := s.op.Package.ReadFile(ctx, s.p.ExternalLB.ScriptPath)
	if err != nil {
		return fmt.Errorf("kubespray: external_lb_param.script_path %s: %w", s.p.ExternalLB.ScriptPath, err)
	}
	c, err := s.node(ctx, s.c.LB, s.d.o.NodeWait)
	if err != nil {
		return err
	}
	if _, err := c.Run(ctx, "mkdir -p .mini-vnfm && chmod 700 .mini-vnfm", remote.RunOpts{Timeout: time.Minute}); err != nil {
		return fmt.Errorf("kubespray: load balancer %s: %w", s.c.LB.Name, err)
	}
	if err := c.Upload(ctx, lbScriptPath, script, 0o700); err != nil {
		return fmt.Errorf("kubespray: load balancer %s: %w", s.c.LB.Name, err)
	}
	args := []string{lbScriptPath, "-m", nodeList(s.c.Masters), "-w", nodeList(workers), "-p", strconv.Itoa(s.p.ExternalLB.APIPort)}
	if s.p.ExternalLB.NodePortRange != "" {
		args = append(args, "-n", s.p.ExternalLB.NodePortRange)
	}
	env := map[string]string{}
	if s.p.Proxy.HTTPProxy != "" {
		env["http_proxy"] = s.p.Proxy.HTTPProxy
	}
	if s.p.Proxy.HTTPSProxy != "" {
		env["https_proxy"] = s.p.Proxy.HTTPSProxy
	}
	res, err := c.Run(ctx, remote.Command("bash", args...), remote.RunOpts{Sudo: true, Env: env, Timeout: 10 * time.Minute,
		Output: s.outputLogger("external-lb")})
	if err != nil {
		return fmt.Errorf("kubespray: installing the external load balancer on %s with %s: %w", s.c.LB.Name, s.p.ExternalLB.ScriptPath, err)
	}
	if !strings.Contains(res.Stdout, "VNFM_RESULT lb=ready") {
		s.log.Warn("the load balancer script did not report VNFM_RESULT lb=ready; checking the API port myself")
		if _, err := c.Run(ctx, "exec 3<>/dev/tcp/127.0.0.1/"+strconv.Itoa(s.p.ExternalLB.APIPort), remote.RunOpts{Timeout: 30 * time.Second}); err != nil {
			return fmt.Errorf("kubespray: the load balancer %s does not listen on port %d after %s: %w", s.c.LB.Name, s.p.ExternalLB.APIPort, s.p.ExternalLB.ScriptPath, err)
		}
	}
	s.log.Info("external load balancer configured", "lb", s.c.LB.Name, "masters", names(s.c.Masters), "workers", names(workers))
	return nil
}

// apiURL is the cluster's API through the load balancer.
func (s *session) apiURL() string {
	return "https://" + net.JoinHostPort(s.c.LB.SSHAddr, strconv.Itoa(s.p.ExternalLB.APIPort))
}

// checkAPI calls the API server through the load balancer with the VIM's
// credentials (CA-verified TLS, bearer token) and returns the node names
// it lists; it retries while HAProxy's health checks bring the masters in.
func (s *session) checkAPI(ctx context.Context, base, token, caPEM string) ([]string, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("kubespray: the cluster CA certificate is not PEM")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}
	if s.d.o.Dial != nil {
		tr.DialContext = s.d.o.Dial
	}
	client := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	defer tr.CloseIdleConnections()
	deadline := time.Now().Add(s.d.o.VimWait)
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/nodes", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err == nil {
			var doc struct {
				Items []struct {
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				} `json:"items"`
			}
			derr := json.NewDecoder(res.Body).Decode(&doc)
			res.Body.Close()
			switch {
			case res.StatusCode == http.StatusOK && derr == nil:
				var out []string
				for _, it := range doc.Items {
					out = append(out, it.Metadata.Name)
				}
				return out, nil
			case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
				return nil, fmt.Errorf("kubespray: %s rejects the VIM token (%s)", base, res.Status)
			default:
				last = fmt.Errorf("GET /api/v1/nodes: %s", res.Status)
			}
		} else {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			last = err
			var ce *tls.CertificateVerificationError
			var he x509.HostnameError
			if errors.As(err, &ce) || errors.As(err, &he) {
				return nil, fmt.Errorf("kubespray: the API server's certificate does not verify through the load balancer %s: %w", base, err)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kubespray: the Kubernetes API does not answer through the load balancer %s within %v: %w", base, s.d.o.VimWait, last)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// vimConnExtraKey marks the vimConnectionInfo entry the driver adds.
const vimConnExtraKey = "kubesprayVim"

// registerVim creates the VIM's service account token, checks the API
// through the load balancer with it and the cluster CA, and registers the
// Kubernetes VIM with both (the CA included, unlike Tacker).
func (s *session) registerVim(ctx context.Context) error {
	k, err := s.kubectl(ctx)
	if err != nil {
		return err
	}
	token, ca, err := k.ServiceAccountToken(ctx, "kube-system", "mini-vnfm-vim", "cluster-admin")
	if err != nil {
		return fmt.Errorf("kubespray: %w", err)
	}
	base := s.apiURL()
	nodes, err := s.checkAPI(ctx, base, token, ca)
	if err != nil {
		return err
	}
	var missing []string
	for _, n := range s.c.All() {
		if !slices.Contains(nodes, n.Name) {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubespray: the cluster at %s lists nodes %v; missing %v", base, nodes, missing)
	}
	name := s.p.vimName(s.op.Instance.ID)
	id, err := s.op.Vims.RegisterKubernetesVim(ctx, driverapi.KubernetesVim{
		Name:        name,
		Description: "Kubernetes cluster of VNF instance " + s.op.Instance.ID + " (kubespray, through the external load balancer)",
		AuthURL:     base, BearerToken: token, SSLCACert: ca, Namespace: "default",
		Extra: map[string]any{"mgmtDriver": Name, "vnfInstanceId": s.op.Instance.ID},
		// The VNFM checks the VIM itself when it reaches the cluster the way
		// this driver does; with a custom dialer (private network) only the
		// driver can, and did above.
		Verify: s.d.o.Dial == nil,
	})
	if err != nil {
		return fmt.Errorf("kubespray: registering the Kubernetes VIM %s: %w", name, err)
	}
	in := s.op.Instance
	in.VimConnectionInfo = slices.DeleteFunc(in.VimConnectionInfo, func(v model.VimConnectionInfo) bool {
		return v.VimID == id || v.Extra[vimConnExtraKey] != nil
	})
	in.VimConnectionInfo = append(in.VimConnectionInfo, model.VimConnectionInfo{ID: "kubernetes-" + id, VimID: id, VimType: "ETSINFV.KUBERNETES.V_1",
		AccessInfo: map[string]any{"auth_url": base}, Extra: map[string]any{vimConnExtraKey: name}})
	s.log.Info("Kubernetes VIM registered", "vim", name, "vimId", id, "authUrl", base, "nodes", nodes)
	return nil
}

// removeVim deletes the cluster's VIM and its vimConnectionInfo entry.
func (s *session) removeVim(ctx context.Context) error {
	name := s.p.vimName(s.op.Instance.ID)
	if s.p.Force {
		// The operator went ahead although CNFs use the VIM: it stays
		// registered for them.
		users, err := s.op.Vims.VimUsers(ctx, name, s.op.Instance.ID)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			s.log.Warn("force: the cluster's Kubernetes VIM stays registered for its users", "vim", name, "users", strings.Join(users, ", "))
			return nil
		}
	}
	if err := s.op.Vims.RemoveKubernetesVim(ctx, name, s.op.Instance.ID); err != nil {
		return fmt.Errorf("kubespray: removing the Kubernetes VIM %s: %w", name, err)
	}
	in := s.op.Instance
	in.VimConnectionInfo = slices.DeleteFunc(in.VimConnectionInfo, func(v model.VimConnectionInfo) bool {
		return v.Extra[vimConnExtraKey] != nil
	})
	return nil
}
