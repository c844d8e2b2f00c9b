package k8sstandin

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kubeconfig is the subset of a kubeconfig file the stand-in reads and
// writes (the same layout as kubeadm's admin.conf).
type Kubeconfig struct {
	APIVersion     string         `yaml:"apiVersion"`
	Clusters       []NamedCluster `yaml:"clusters"`
	Contexts       []NamedContext `yaml:"contexts"`
	CurrentContext string         `yaml:"current-context"`
	Kind           string         `yaml:"kind"`
	Preferences    map[string]any `yaml:"preferences"`
	Users          []NamedUser    `yaml:"users"`
}

// NamedCluster is a kubeconfig cluster entry.
type NamedCluster struct {
	Name    string  `yaml:"name"`
	Cluster Cluster `yaml:"cluster"`
}

// Cluster is where the API server is and how to trust it.
type Cluster struct {
	CertificateAuthorityData string `yaml:"certificate-authority-data,omitempty"`
	CertificateAuthority     string `yaml:"certificate-authority,omitempty"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify,omitempty"`
	Server                   string `yaml:"server"`
}

// NamedContext is a kubeconfig context entry.
type NamedContext struct {
	Name    string  `yaml:"name"`
	Context Context `yaml:"context"`
}

// Context binds a cluster and a user.
type Context struct {
	Cluster   string `yaml:"cluster"`
	User      string `yaml:"user"`
	Namespace string `yaml:"namespace,omitempty"`
}

// NamedUser is a kubeconfig user entry.
type NamedUser struct {
	Name string   `yaml:"name"`
	User AuthInfo `yaml:"user"`
}

// AuthInfo holds credentials.
type AuthInfo struct {
	ClientCertificateData string `yaml:"client-certificate-data,omitempty"`
	ClientKeyData         string `yaml:"client-key-data,omitempty"`
	ClientCertificate     string `yaml:"client-certificate,omitempty"`
	ClientKey             string `yaml:"client-key,omitempty"`
	Token                 string `yaml:"token,omitempty"`
	TokenFile             string `yaml:"tokenFile,omitempty"`
}

// NewKubeconfig builds a single-context kubeconfig like kubeadm writes.
func NewKubeconfig(server string, caPEM []byte, user string, auth AuthInfo) *Kubeconfig {
	ctxName := user + "@kubernetes"
	return &Kubeconfig{
		APIVersion:     "v1",
		Kind:           "Config",
		Clusters:       []NamedCluster{{Name: "kubernetes", Cluster: Cluster{Server: server, CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM)}}},
		Contexts:       []NamedContext{{Name: ctxName, Context: Context{Cluster: "kubernetes", User: user}}},
		CurrentContext: ctxName,
		Preferences:    map[string]any{},
		Users:          []NamedUser{{Name: user, User: auth}},
	}
}

// Marshal renders the kubeconfig as YAML.
func (k *Kubeconfig) Marshal() []byte {
	b, _ := yaml.Marshal(k)
	return b
}

// LoadKubeconfig reads a kubeconfig file.
func LoadKubeconfig(path string) (*Kubeconfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k Kubeconfig
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("error loading config file %q: %w", path, err)
	}
	return &k, nil
}

// Current returns the current context's cluster, user and namespace.
func (k *Kubeconfig) Current() (Cluster, AuthInfo, string, error) {
	name := k.CurrentContext
	if name == "" && len(k.Contexts) == 1 {
		name = k.Contexts[0].Name
	}
	var c *Context
	for i := range k.Contexts {
		if k.Contexts[i].Name == name {
			c = &k.Contexts[i].Context
		}
	}
	if c == nil {
		return Cluster{}, AuthInfo{}, "", fmt.Errorf("context %q not found", name)
	}
	var cl Cluster
	var u AuthInfo
	found := false
	for _, x := range k.Clusters {
		if x.Name == c.Cluster {
			cl, found = x.Cluster, true
		}
	}
	if !found {
		return Cluster{}, AuthInfo{}, "", fmt.Errorf("cluster %q not found", c.Cluster)
	}
	for _, x := range k.Users {
		if x.Name == c.User {
			u = x.User
		}
	}
	return cl, u, c.Namespace, nil
}

// CAPEM returns the cluster's CA bundle (inline or from its file).
func (c Cluster) CAPEM() ([]byte, error) {
	if c.CertificateAuthorityData != "" {
		return base64.StdEncoding.DecodeString(c.CertificateAuthorityData)
	}
	if c.CertificateAuthority != "" {
		return os.ReadFile(c.CertificateAuthority)
	}
	return nil, nil
}

// Client is a small REST client for the API server.
type Client struct {
	Server string
	HTTP   *http.Client
	Token  string
}

// ClientConfig are the pieces a Client is built from.
type ClientConfig struct {
	Server   string
	CAPEM    []byte
	Insecure bool
	CertPEM  []byte
	KeyPEM   []byte
	Token    string
	// Dial, when set, replaces the dialer (tests reach hosts through a netns).
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	Timeout time.Duration
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when asked (discovery, --insecure-skip-tls-verify)
	if len(cfg.CAPEM) > 0 && !cfg.Insecure {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAPEM) {
			return nil, errors.New("unable to load root certificates: no valid certificate authority data")
		}
		tc.RootCAs = pool
	}
	if len(cfg.CertPEM) > 0 {
		pair, err := tls.X509KeyPair(cfg.CertPEM, cfg.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: tc, TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 4}
	if cfg.Dial != nil {
		tr.DialContext = cfg.Dial
	} else {
		tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	to := cfg.Timeout
	if to == 0 {
		to = 60 * time.Second
	}
	return &Client{Server: strings.TrimRight(cfg.Server, "/"), HTTP: &http.Client{Transport: tr, Timeout: to}, Token: cfg.Token}, nil
}

// ClientFromKubeconfig builds a client from a kubeconfig's current context.
func ClientFromKubeconfig(k *Kubeconfig) (*Client, string, error) {
	cl, u, ns, err := k.Current()
	if err != nil {
		return nil, "", err
	}
	cfg := ClientConfig{Server: cl.Server, Insecure: cl.InsecureSkipTLSVerify, Token: u.Token}
	if cfg.CAPEM, err = cl.CAPEM(); err != nil {
		return nil, "", err
	}
	if u.TokenFile != "" && cfg.Token == "" {
		b, err := os.ReadFile(u.TokenFile)
		if err != nil {
			return nil, "", err
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	if u.ClientCertificateData != "" {
		if cfg.CertPEM, err = base64.StdEncoding.DecodeString(u.ClientCertificateData); err != nil {
			return nil, "", err
		}
		if cfg.KeyPEM, err = base64.StdEncoding.DecodeString(u.ClientKeyData); err != nil {
			return nil, "", err
		}
	} else if u.ClientCertificate != "" {
		if cfg.CertPEM, err = os.ReadFile(u.ClientCertificate); err != nil {
			return nil, "", err
		}
		if cfg.KeyPEM, err = os.ReadFile(u.ClientKey); err != nil {
			return nil, "", err
		}
	}
	c, err := NewClient(cfg)
	return c, ns, err
}

// StatusError is a non-2xx answer of the API server.
type StatusError struct {
	Code   int
	Reason string
	Msg    string
	Status Obj
}

func (e *StatusError) Error() string { return e.Msg }

// IsNotFound etc. classify API errors.
func IsNotFound(err error) bool { return reasonIs(err, "NotFound") }

// IsAlreadyExists reports a 409 AlreadyExists answer.
func IsAlreadyExists(err error) bool { return reasonIs(err, "AlreadyExists") }

func reasonIs(err error, reason string) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Reason == reason
}

// ConnError is a failure to reach the server at all.
type ConnError struct {
	Server string
	Err    error
}

func (e *ConnError) Error() string {
	host := e.Server
	if u, err := url.Parse(e.Server); err == nil && u.Host != "" {
		host = u.Host
	}
	if errors.Is(e.Err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", host)
	}
	return fmt.Sprintf("Unable to connect to the server: %v", e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// Do sends a request; body (if not nil) is sent as JSON (or as is when
// []byte); out (if not nil) receives the decoded JSON answer.
func (c *Client) Do(ctx context.Context, method, path string, body any, out any) error {
	return c.DoCT(ctx, method, path, "application/json", body, out)
}

// DoCT is Do with an explicit request content type (patches).
func (c *Client) DoCT(ctx context.Context, method, path, contentType string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Server+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "k8s-standin/"+Version)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return &ConnError{Server: c.Server, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &ConnError{Server: c.Server, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Code: resp.StatusCode}
		var st Obj
		if json.Unmarshal(b, &st) == nil && st["kind"] == "Status" {
			se.Status = st
			se.Reason, _ = st["reason"].(string)
			se.Msg, _ = st["message"].(string)
		}
		if se.Msg == "" {
			se.Msg = fmt.Sprintf("the server responded with %s: %s", resp.Status, strings.TrimSpace(string(b)))
		}
		if se.Reason == "" {
			se.Reason = http.StatusText(resp.StatusCode)
		}
		return se
	}
	if out != nil {
		if p, ok := out.(*[]byte); ok {
			*p = b
			return nil
		}
		return json.Unmarshal(b, out)
	}
	return nil
}

// objPath is the API path of a resource collection or object.
func objPath(r *resource, ns, name string) string {
	var p string
	if r.Group == "" {
		p = "/api/" + r.Version
	} else {
		p = "/apis/" + r.Group + "/" + r.Version
	}
	if r.Namespaced && ns != "" {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	p += "/" + r.Name
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// List lists objects (ns "" = all namespaces) with optional selectors.
func (c *Client) List(ctx context.Context, r *resource, ns, fieldSel, labelSel string) ([]Obj, error) {
	q := url.Values{}
	if fieldSel != "" {
		q.Set("fieldSelector", fieldSel)
	}
	if labelSel != "" {
		q.Set("labelSelector", labelSel)
	}
	p := objPath(r, ns, "")
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var l struct {
		Items []Obj `json:"items"`
	}
	if err := c.Do(ctx, http.MethodGet, p, nil, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Get fetches one object.
func (c *Client) Get(ctx context.Context, r *resource, ns, name string) (Obj, error) {
	var o Obj
	err := c.Do(ctx, http.MethodGet, objPath(r, ns, name), nil, &o)
	return o, err
}

// Create posts a new object.
func (c *Client) Create(ctx context.Context, r *resource, ns string, o Obj) (Obj, error) {
	var out Obj
	err := c.Do(ctx, http.MethodPost, objPath(r, ns, ""), o, &out)
	return out, err
}

// Delete deletes an object.
func (c *Client) Delete(ctx context.Context, r *resource, ns, name string) error {
	return c.Do(ctx, http.MethodDelete, objPath(r, ns, name), nil, nil)
}

// Patch sends a merge patch.
func (c *Client) Patch(ctx context.Context, r *resource, ns, name string, patch Obj) (Obj, error) {
	var out Obj
	err := c.DoCT(ctx, http.MethodPatch, objPath(r, ns, name), "application/merge-patch+json", patch, &out)
	return out, err
}

// defaultKubeconfigPath is $KUBECONFIG (first entry) or ~/.kube/config.
func defaultKubeconfigPath() string {
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return strings.Split(p, string(os.PathListSeparator))[0]
	}
	home := os.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".kube", "config")
}
