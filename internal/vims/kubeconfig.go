package vims

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
)

// Kubeconfig renders a Kubernetes VIM's stored access — the API server
// (auth_url), its CA (ssl_ca_cert, or cert_verify False) and the credentials
// (bearer_token, username and password, or OIDC) — as a kubeconfig whose context
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
	extra, err := s.openExtra(v.ID, v.Extra)
	if err != nil {
		return nil, v, err
	}
	cred = verifyCred(cred, extra) // the CLI's VIM file puts cert_verify in extra
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
	case "oidc":
		if user.AuthProvider, err = s.oidcAuthProvider(ctx, v, cred, cluster.InsecureSkipTLSVerify); err != nil {
			return nil, v, err
		}
	default:
		return nil, v, errorf(KindConflict, "VIM %s (%s) authenticates with %s; a kubeconfig can be made only for a bearer token, a username and password, or OIDC", v.Name, v.ID, orUnknown(kind))
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

// oidcAuthProvider is kubectl's oidc auth provider for an OIDC VIM: an ID
// token got now by the VIM's password grant, the issuer it names (where
// kubectl finds the token endpoint), the client, and the refresh token when
// the provider gave one — kubectl refreshes the ID token with it when it
// expires. ssl_ca_cert (Tacker's cluster CA and IdP CA concatenated) is the
// provider's CA too. The password itself is not in the kubeconfig.
func (s *Registry) oidcAuthProvider(ctx context.Context, v *store.Vim, cred map[string]any, insecure bool) (*clientcmdapi.AuthProviderConfig, error) {
	tok, err := vim.OIDCToken(ctx, s.outbound, cred, vim.DefaultTimeout)
	var ve *vim.Error
	if errors.As(err, &ve) {
		return nil, errorf(KindConflict, "VIM %s (%s): no ID token for its kubeconfig: %s (update the VIM's auth_cred, or check its OIDC provider)",
			v.Name, v.ID, secrets.Scrub(ve.Detail, credValues(cred)))
	}
	if err != nil {
		return nil, fmt.Errorf("vim %s (%s): %w", v.Name, v.ID, err)
	}
	if tok.Issuer == "" {
		return nil, errorf(KindConflict, "VIM %s (%s): the ID token of its OIDC provider names no issuer (iss claim), which kubectl needs to refresh it", v.Name, v.ID)
	}
	cfg := map[string]string{"idp-issuer-url": tok.Issuer, "client-id": vim.Str(cred, "client_id"), "id-token": tok.IDToken}
	if sec := vim.Str(cred, "client_secret"); sec != "" {
		cfg["client-secret"] = sec
	}
	if tok.RefreshToken != "" {
		cfg["refresh-token"] = tok.RefreshToken
	}
	if ca := vim.Str(cred, "ssl_ca_cert"); ca != "" && !insecure {
		cfg["idp-certificate-authority-data"] = base64.StdEncoding.EncodeToString([]byte(ca))
	}
	return &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: cfg}, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown credentials"
	}
	return s
}
