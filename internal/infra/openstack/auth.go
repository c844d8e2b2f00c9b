package openstack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
)

// access is the Keystone v3 password authentication of one VIM connection,
// read from vimConnectionInfo (interfaceInfo + accessInfo).
type access struct {
	Endpoint string `json:"endpoint"`
	vim.KeystoneAuth
	Region   string `json:"region"`
	CACert   string `json:"caCert"`
	Insecure bool   `json:"insecure"`
	// Supplied: the request brought the connection (no vimId), so it goes
	// through the outbound-URL policy (Options.Outbound).
	Supplied bool `json:"supplied"`
}

// first returns the first non-empty string value among keys of m.
func first(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// accessOf reads a VIM connection of type ETSINFV.OPENSTACK_KEYSTONE.V_3 as
// the VIM registry resolves it (internal/lcm/vims.go):
//
//	interfaceInfo: endpoint (Keystone v3 URL), ssl_ca_cert (PEM),
//	               skipCertificateVerification (true only when explicit)
//	accessInfo:    username | userId, password, userDomain | userDomainId,
//	               project | projectId, projectDomain | projectDomainId, region
//
// Tacker-style snake_case spellings (auth_url, user_domain_name,
// project_name, cert_verify "False", ...) are accepted too, for
// vimConnectionInfo given inline in a request.
func accessOf(v *model.VimConnectionInfo) (access, error) {
	if v == nil {
		return access{}, errors.New("the operation has no VIM connection; give vimConnectionInfo (or register a default VIM)")
	}
	ii, ai := v.InterfaceInfo, v.AccessInfo
	both := func(keys ...string) string {
		if s := first(ai, keys...); s != "" {
			return s
		}
		return first(ii, keys...)
	}
	a := access{
		Supplied: v.VimID == "",
		Endpoint: first(ii, "endpoint", "authUrl", "auth_url"),
		Region:   both("region", "regionName", "region_name"),
		CACert:   both("ssl_ca_cert", "caCert", "cacert", "sslCaCert"),
	}
	if a.Endpoint == "" {
		a.Endpoint = first(ai, "authUrl", "auth_url", "endpoint")
	}
	if a.Endpoint == "" {
		return a, fmt.Errorf("VIM connection %s has no Keystone endpoint (interfaceInfo.endpoint)", v.ID)
	}
	for _, m := range []map[string]any{ii, ai} {
		if b, ok := m["skipCertificateVerification"]; ok {
			if on, err := vim.Bool(b); err == nil && on {
				a.Insecure = true
			}
		}
		for _, k := range []string{"cert_verify", "certVerify"} {
			if b, ok := m[k]; ok {
				if on, err := vim.Bool(b); err == nil && !on {
					a.Insecure = true
				}
			}
		}
	}
	k := vim.KeystoneAuth{
		Username:          both("username", "userName", "user_name"),
		UserID:            both("userId", "user_id"),
		UserDomainName:    both("userDomain", "userDomainName", "user_domain_name"),
		UserDomainID:      both("userDomainId", "user_domain_id"),
		ProjectName:       both("project", "projectName", "project_name", "tenant"),
		ProjectID:         both("projectId", "project_id", "tenantId", "tenant_id"),
		ProjectDomainName: both("projectDomain", "projectDomainName", "project_domain_name"),
		ProjectDomainID:   both("projectDomainId", "project_domain_id"),
	}
	if p, ok := ai["password"].(string); ok {
		k.Password = p
	}
	switch {
	case k.Username == "" && k.UserID == "":
		return a, fmt.Errorf("VIM connection %s: accessInfo.username (or userId) is required", v.ID)
	case k.Password == "":
		return a, fmt.Errorf("VIM connection %s: accessInfo.password is required", v.ID)
	case k.ProjectName == "" && k.ProjectID == "":
		return a, fmt.Errorf("VIM connection %s: accessInfo.project (or projectId) is required", v.ID)
	}
	if k.UserID == "" && k.UserDomainName == "" && k.UserDomainID == "" {
		k.UserDomainName = "Default"
	}
	if k.ProjectID == "" && k.ProjectDomainName == "" && k.ProjectDomainID == "" {
		k.ProjectDomainName = "Default"
	}
	a.KeystoneAuth = k
	return a, nil
}

// key identifies the credentials for the client cache (a digest: the
// password is not kept as a map key).
func (a access) key() string {
	b, _ := json.Marshal(a) // the embedded KeystoneAuth's fields included
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// clients are the authenticated service clients of one VIM connection.
type clients struct {
	provider *gophercloud.ProviderClient
	heat     *gophercloud.ServiceClient
	nova     *gophercloud.ServiceClient
	neutron  *gophercloud.ServiceClient
	region   string // of the VIM, for the clients made later (Octavia)
}

type clientEntry struct {
	ready chan struct{}
	c     *clients
	err   error
}

// clientCache shares provider clients (and so tokens) between operations on
// the same VIM with the same credentials. Clients re-authenticate by
// themselves when the token expires (AllowReauth).
type clientCache struct {
	mu sync.Mutex
	m  map[string]*clientEntry
}

func (cc *clientCache) get(ctx context.Context, d *Driver, a access) (*clients, error) {
	k := a.key()
	cc.mu.Lock()
	if cc.m == nil {
		cc.m = map[string]*clientEntry{}
	}
	e, ok := cc.m[k]
	if !ok {
		e = &clientEntry{ready: make(chan struct{})}
		cc.m[k] = e
		cc.mu.Unlock()
		e.c, e.err = d.authenticate(ctx, a)
		if e.err != nil {
			cc.mu.Lock()
			delete(cc.m, k) // the next operation tries again
			cc.mu.Unlock()
		}
		close(e.ready)
		return e.c, e.err
	}
	cc.mu.Unlock()
	select {
	case <-e.ready:
		return e.c, e.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (d *Driver) clientsFor(ctx context.Context, a access) (*clients, error) {
	return d.cache.get(ctx, d, a)
}

func (d *Driver) httpClient(a access) (http.Client, error) {
	tlsCfg, err := outbound.TLSConfig([]byte(a.CACert), true, a.Insecure)
	if err != nil {
		return http.Client{}, errors.New("the VIM's ssl_ca_cert holds no PEM certificate")
	}
	if a.Supplied {
		c := d.opts.Outbound.Client(outbound.ClientOptions{TLS: tlsCfg, Timeout: d.opts.HTTPTimeout})
		c.Transport = quietErrors{c.Transport}
		return *c, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	return http.Client{Transport: tr, Timeout: d.opts.HTTPTimeout}, nil
}

// quietErrors drops the bodies of error answers: gophercloud quotes them in
// its errors, and for a connection the client supplied they could be the
// answer of whatever the client's Keystone catalog pointed at. The one fact
// the driver reads from an error body, Heat's StackExists conflict
// (createStackWhenNameFree), is kept as that word alone.
type quietErrors struct{ rt http.RoundTripper }

func (q quietErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := q.rt.RoundTrip(r)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	var body []byte
	if res.StatusCode == http.StatusConflict {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		if bytes.Contains(b, []byte("StackExists")) {
			body = []byte("StackExists")
		}
	}
	_ = res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Del("Content-Length")
	res.Header.Del("Content-Type")
	return res, nil
}

// authenticate gets a project-scoped token and the Heat, Nova and Neutron
// endpoints of the region from its catalog.
func (d *Driver) authenticate(ctx context.Context, a access) (*clients, error) {
	hc, err := d.httpClient(a)
	if err != nil {
		return nil, err
	}
	provider, err := openstack.NewClient(a.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("Keystone endpoint %q: %w", a.Endpoint, err)
	}
	provider.HTTPClient = hc
	provider.UserAgent.Prepend("mini-vnfm")
	opts := a.AuthOptions(a.Endpoint)
	opts.AllowReauth = true
	// The token request does not outlive the operation that asked for it,
	// but the provider (and its re-authentication) does.
	if err := openstack.Authenticate(ctx, provider, opts); err != nil {
		return nil, keystoneErr(a, err)
	}
	eo := gophercloud.EndpointOpts{Region: a.Region, Availability: gophercloud.AvailabilityPublic}
	c := &clients{provider: provider, region: a.Region}
	if c.heat, err = openstack.NewOrchestrationV1(provider, eo); err != nil {
		return nil, fmt.Errorf("the VIM's catalog has no Heat (orchestration) endpoint%s: %w", inRegion(a.Region), err)
	}
	if c.nova, err = openstack.NewComputeV2(provider, eo); err != nil {
		return nil, fmt.Errorf("the VIM's catalog has no Nova (compute) endpoint%s: %w", inRegion(a.Region), err)
	}
	if c.neutron, err = openstack.NewNetworkV2(provider, eo); err != nil {
		return nil, fmt.Errorf("the VIM's catalog has no Neutron (network) endpoint%s: %w", inRegion(a.Region), err)
	}
	return c, nil
}

func inRegion(r string) string {
	if r == "" {
		return ""
	}
	return " in region " + r
}

func keystoneErr(a access, err error) error {
	var code gophercloud.ErrUnexpectedResponseCode
	if a.Supplied {
		// The client named this endpoint: say what happened in our words,
		// never in the remote's (its body, a dial error's details).
		if errors.As(err, &code) {
			return fmt.Errorf("Keystone authentication at %s failed: it answered %d %s", a.Endpoint, code.Actual, http.StatusText(code.Actual))
		}
		return fmt.Errorf("Keystone authentication at %s failed: %s", a.Endpoint, outbound.Describe(err))
	}
	if errors.As(err, &code) {
		switch code.Actual {
		case http.StatusUnauthorized:
			return fmt.Errorf("Keystone at %s rejected the credentials of user %q (401); update the VIM (openstack vim set): %w", a.Endpoint, a.User(), err)
		case http.StatusForbidden:
			return fmt.Errorf("Keystone at %s refused user %q a token for project %q (403): %w", a.Endpoint, a.User(), a.Project(), err)
		}
	}
	return fmt.Errorf("Keystone authentication at %s failed: %w", a.Endpoint, err)
}
