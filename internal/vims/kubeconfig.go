package vims

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
)

// Kubeconfig renders a Kubernetes VIM's stored access — the API server
// (auth_url), its CA (ssl_ca_cert, or cert_verify False) and the credentials
// (bearer_token, or username and password) — as a kubeconfig whose context
// uses the VIM's namespace: the cluster a kubeadm or kubespray VNF built
// becomes usable with kubectl in one call. It holds the VIM's secrets in the
// clear: callers serve it only to a principal allowed to see them, and
// record that they did.
func (s *Registry) Kubeconfig(ctx context.Context, id string) ([]byte, *store.Vim, error) {
	v, err := s.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if v.Type != store.VimKubernetes {
		return nil, v, errorf(KindConflict, "VIM %s (%s) is an %s VIM; a kubeconfig exists only for Kubernetes VIMs", v.Name, v.ID, v.Type)
	}
	cred, err := s.openCred(v.ID, v.Auth.AuthCred)
	if err != nil {
		return nil, v, fmt.Errorf("vim %s (%s): %w", v.Name, v.ID, err)
	}
	cluster := &clientcmdapi.Cluster{Server: v.Auth.AuthURL}
	if ca := vim.Str(cred, "ssl_ca_cert"); ca != "" {
		cluster.CertificateAuthorityData = []byte(ca)
	}
	if cv, ok := cred["cert_verify"]; ok {
		if b, err := vim.Bool(cv); err == nil && !b {
			cluster.InsecureSkipTLSVerify = true
			cluster.CertificateAuthorityData = nil
		}
	}
	user := &clientcmdapi.AuthInfo{}
	switch kind, _ := vim.KubernetesAuthKind(cred); kind {
	case "bearer_token":
		user.Token = vim.Str(cred, "bearer_token")
	case "basic":
		user.Username, user.Password = vim.Str(cred, "username"), vim.Str(cred, "password")
	default:
		return nil, v, errorf(KindConflict, "VIM %s (%s) authenticates with %s; a kubeconfig can be made only for a bearer token or a username and password", v.Name, v.ID, orUnknown(kind))
	}
	name := v.Name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = cluster
	cfg.AuthInfos[name] = user
	ctxt := &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	if ns := vim.Str(v.Auth.VimProject, "name"); ns != "" {
		ctxt.Namespace = ns
	}
	cfg.Contexts[name] = ctxt
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, v, err
	}
	return b, v, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown credentials"
	}
	return s
}
