package kubernetes

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
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
	var src *oidc.Source
	switch {
	case str(vim.AccessInfo, "oidc_token_url") != "":
		if src, err = d.oidcSource(vim, cfg.CAData, cfg.Insecure); err != nil {
			return nil, err
		}
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
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if src != nil {
			rt = &oidc.Transport{Source: src, Base: rt}
		}
		return resendOnBrokenConnection{rt}
	}
	return cfg, nil
}

// oidcSource is the ID token source of a VIM connection registered with
// oidc_token_url (Tacker's OIDC Kubernetes VIM): the resource owner password
// grant with accessInfo's username, password, client_id and client_secret,
// its TLS trusting the system's roots and ssl_ca_cert (Tacker's "cluster CA
// and IdP CA concatenated"), through the outbound policy. Connections with
// the same credentials share one source, so operations and refreshes reuse
// a token until it is about to expire (oidcSources).
func (d *Driver) oidcSource(vim *model.VimConnectionInfo, caPEM []byte, insecure bool) (*oidc.Source, error) {
	c := oidc.Credentials{TokenURL: str(vim.AccessInfo, "oidc_token_url"), Username: str(vim.AccessInfo, "username"),
		Password: str(vim.AccessInfo, "password"), ClientID: str(vim.AccessInfo, "client_id"), ClientSecret: str(vim.AccessInfo, "client_secret")}
	if u, err := url.Parse(c.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("VIM connection %s: accessInfo.oidc_token_url %q is not an http(s) URL of the OIDC provider's token endpoint", vim.ID, c.TokenURL)
	}
	if c.Username == "" || c.Password == "" || c.ClientID == "" {
		return nil, fmt.Errorf("VIM connection %s authenticates with OIDC (accessInfo.oidc_token_url) but lacks username, password or client_id; register the VIM with all of them", vim.ID)
	}
	h := sha256.New()
	for _, f := range []string{c.TokenURL, c.Username, c.Password, c.ClientID, c.ClientSecret, string(caPEM), strconv.FormatBool(insecure)} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return d.oidc.get(string(h.Sum(nil)), func() (*oidc.Source, *http.Client, error) {
		tc, err := outbound.TLSConfig(caPEM, true, insecure)
		if err != nil {
			return nil, nil, fmt.Errorf("VIM connection %s: interfaceInfo.ssl_ca_cert holds no PEM certificate", vim.ID)
		}
		var client *http.Client
		if d.opts.Outbound != nil {
			client = d.opts.Outbound.Client(outbound.ClientOptions{Timeout: d.opts.RequestTimeout, TLS: tc})
		} else {
			client = &http.Client{Timeout: d.opts.RequestTimeout, Transport: &http.Transport{TLSClientConfig: tc}}
		}
		return oidc.NewSource(client, c), client, nil
	})
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
