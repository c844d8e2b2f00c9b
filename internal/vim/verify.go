// Package vim checks a VIM's access data before the VNFM stores it: an
// OpenStack VIM by a Keystone v3 password token request (gophercloud), a
// Kubernetes VIM by an authenticated call to its API server. Failures are
// *Error values whose Detail says, for a person, what went wrong: rejected
// credentials, an unreachable endpoint, an untrusted certificate.
//
// The input is Tacker's VIM shape (auth_url, vim_project, auth_cred, extra)
// with plaintext credentials; this package never logs or stores them.
package vim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
)

// Types of VIM.
const (
	TypeOpenStack  = "openstack"
	TypeKubernetes = "kubernetes"
)

// DefaultTimeout bounds a whole verification (all requests together).
const DefaultTimeout = 15 * time.Second

// Target is the VIM to verify.
type Target struct {
	Type    string         // TypeOpenStack or TypeKubernetes
	AuthURL string         // Keystone URL (…/v3) or Kubernetes API server URL
	Project map[string]any // vim_project: name/id, project_domain_name/_id (OpenStack) or name = namespace
	Cred    map[string]any // auth_cred, plaintext
	// Timeout bounds the verification; 0 means DefaultTimeout.
	Timeout time.Duration
	// Outbound is the policy every request of the verification goes
	// through (nil: the zero policy, which refuses loopback and private
	// addresses). The registering client names auth_url and
	// oidc_token_url, so these are requests on a client's behalf.
	Outbound *outbound.Policy
}

// Result is what a successful verification learnt about the VIM.
type Result struct {
	// Regions are the OpenStack regions of the token's catalog, or the
	// Kubernetes namespaces the credentials may list (Tacker's
	// placement_attr.regions).
	Regions []string
}

// Error is a verification failure with a Detail written for the user.
type Error struct {
	Detail string
	Err    error
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Err }

func failf(err error, format string, a ...any) *Error {
	return &Error{Detail: fmt.Sprintf(format, a...), Err: err}
}

// Verify checks that the VIM accepts the credentials.
func Verify(ctx context.Context, t Target) (*Result, error) {
	u, err := url.Parse(t.AuthURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, failf(err, "auth_url %q is not an http(s) URL with a host", t.AuthURL)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if t.Outbound == nil {
		t.Outbound = &outbound.Policy{}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := t.Outbound.CheckURL(ctx, t.AuthURL); err != nil {
		return nil, failf(err, "auth_url: %v", err)
	}
	tlsCfg, err := tlsConfig(t.Cred, false)
	if err != nil {
		return nil, err
	}
	client := t.Outbound.Client(outbound.ClientOptions{Timeout: timeout, TLS: tlsCfg, Probe: true})
	switch t.Type {
	case TypeOpenStack:
		return verifyOpenStack(ctx, t, client, timeout)
	case TypeKubernetes:
		return verifyKubernetes(ctx, t, client, timeout)
	}
	return nil, failf(nil, "VIM type %q is not supported; use openstack or kubernetes", t.Type)
}

// tlsConfig builds the client TLS settings from auth_cred: ssl_ca_cert (PEM)
// trusts that CA (with withSystem, in addition to the system roots);
// cert_verify "False" skips certificate checks (explicit only).
func tlsConfig(cred map[string]any, withSystem bool) (*tls.Config, error) {
	insecure := false
	if v, ok := cred["cert_verify"]; ok {
		b, err := Bool(v)
		if err != nil {
			return nil, failf(err, "auth_cred.cert_verify must be True or False, not %v", v)
		}
		insecure = !b
	}
	cfg, err := outbound.TLSConfig([]byte(Str(cred, "ssl_ca_cert")), withSystem, insecure)
	if err != nil {
		return nil, failf(nil, "auth_cred.ssl_ca_cert holds no PEM certificate (give the CA certificate text, -----BEGIN CERTIFICATE----- …)")
	}
	return cfg, nil
}

// Str returns m[key] as a string ("" when absent, null or not a string).
func Str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// Bool reads a boolean the way Tacker's clients send them: true/false, or
// the strings "True"/"False" (any case), "yes"/"no", "1"/"0".
func Bool(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "yes", "1", "on":
			return true, nil
		case "false", "no", "0", "off":
			return false, nil
		}
	}
	return false, fmt.Errorf("not a boolean: %v", v)
}

// reachError explains a transport error: what could not be reached and
// why, in the outbound policy's words (one sentence for a closed, a
// filtered and an unreachable port; never the remote's body).
func reachError(what, target string, timeout time.Duration, err error) *Error {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		refused   *outbound.RefusedError
	)
	switch {
	case errors.As(err, &refused):
		return failf(err, "%s at %s: %v", what, target, refused)
	case errors.As(err, &unknownCA):
		return failf(err, "cannot trust %s at %s: its TLS certificate is not signed by a CA the VNFM trusts; give the CA certificate as ssl_ca_cert (PEM), or set cert_verify to False to skip the check", what, target)
	case errors.As(err, &hostErr):
		return failf(err, "cannot trust %s at %s: its TLS certificate is not valid for %s (%v)", what, target, hostErr.Host, hostErr)
	case errors.As(err, &invalid):
		return failf(err, "cannot trust %s at %s: its TLS certificate is invalid (%v)", what, target, invalid)
	}
	why := outbound.Describe(err)
	if why == "no answer in time" {
		why = fmt.Sprintf("no answer within %s", timeout)
	}
	return failf(err, "cannot reach %s at %s: %s", what, target, why)
}

// host returns scheme://host[:port] of a URL, for messages.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

func uniqSorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

func statusText(code int) string {
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
