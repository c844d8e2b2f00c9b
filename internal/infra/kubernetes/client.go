package kubernetes

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// cluster is a connection to the VIM's API server.
type cluster struct {
	dyn dynamic.Interface
	cs  k8s.Interface
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func boolean(m map[string]any, key string) bool {
	switch v := m[key].(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// restConfig is the client configuration of a Kubernetes VIM connection as
// internal/vims resolves it: interfaceInfo.endpoint (and ssl_ca_cert,
// skipCertificateVerification), accessInfo.bearer_token or
// username/password. It makes no request.
func (d *Driver) restConfig(vim *model.VimConnectionInfo) (*rest.Config, error) {
	if vim == nil {
		return nil, errors.New("the operation has no VIM connection; instantiate with vimConnectionInfo [{\"vimId\": <Kubernetes VIM>, \"vimType\": \"kubernetes\"}]")
	}
	endpoint := str(vim.InterfaceInfo, "endpoint", "authUrl", "auth_url")
	if endpoint == "" {
		endpoint = str(vim.AccessInfo, "auth_url", "authUrl", "endpoint")
	}
	u, err := url.Parse(endpoint)
	if endpoint == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("VIM connection %s has no Kubernetes API server URL (interfaceInfo.endpoint, https://host:6443); register the VIM with auth_url", vim.ID)
	}
	cfg := &rest.Config{Host: endpoint, Timeout: d.opts.RequestTimeout, QPS: 50, Burst: 100, UserAgent: "mini-vnfm"}
	if ca := str(vim.InterfaceInfo, "ssl_ca_cert", "caCert"); ca != "" {
		cfg.CAData = []byte(ca)
	}
	if boolean(vim.InterfaceInfo, "skipCertificateVerification") {
		cfg.Insecure = true
		cfg.CAData = nil
	}
	switch {
	case str(vim.AccessInfo, "oidc_token_url") != "":
		return nil, fmt.Errorf("VIM connection %s authenticates with OIDC, which the Kubernetes infra driver does not support yet; register the VIM with a bearer_token (a ServiceAccount token)", vim.ID)
	case str(vim.AccessInfo, "bearer_token", "bearerToken") != "":
		cfg.BearerToken = str(vim.AccessInfo, "bearer_token", "bearerToken")
	case str(vim.AccessInfo, "username") != "" && str(vim.AccessInfo, "password") != "":
		cfg.Username, cfg.Password = str(vim.AccessInfo, "username"), str(vim.AccessInfo, "password")
	default:
		return nil, fmt.Errorf("VIM connection %s has no Kubernetes credentials (accessInfo.bearer_token, or username and password)", vim.ID)
	}
	if d.opts.Outbound != nil {
		cfg.Dial = d.opts.Outbound.DialContext
	}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return resendOnBrokenConnection{rt} }
	return cfg, nil
}

func (d *Driver) connect(vim *model.VimConnectionInfo) (*cluster, error) {
	cfg, err := d.restConfig(vim)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{dyn: dyn, cs: cs}, nil
}

func (c *cluster) resource(o *object) dynamic.ResourceInterface {
	r := c.dyn.Resource(o.Kind.gvr())
	if o.Kind.namespaced {
		return r.Namespace(o.Obj.GetNamespace())
	}
	return r
}

// backoff is a bounded poll interval.
type backoff struct{ cur, max time.Duration }

func (b *backoff) next() time.Duration {
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d
}
