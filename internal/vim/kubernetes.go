package vim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
)

// KubernetesAuthKind names how a Kubernetes VIM authenticates.
func KubernetesAuthKind(cred map[string]any) (string, error) {
	switch {
	case Str(cred, "oidc_token_url") != "":
		if Str(cred, "username") == "" || Str(cred, "password") == "" || Str(cred, "client_id") == "" {
			return "", failf(nil, "auth_cred.oidc_token_url needs username, password and client_id (client_secret for confidential clients)")
		}
		return "oidc", nil
	case Str(cred, "bearer_token") != "":
		return "bearer_token", nil
	case Str(cred, "username") != "" && Str(cred, "password") != "":
		return "basic", nil
	}
	return "", failf(nil, "auth_cred of a Kubernetes VIM needs bearer_token, username and password, or oidc_token_url with username, password and client_id")
}

func verifyKubernetes(ctx context.Context, t Target, client *http.Client, timeout time.Duration) (*Result, error) {
	kind, err := KubernetesAuthKind(t.Cred)
	if err != nil {
		return nil, err
	}
	authorize := func(r *http.Request) {}
	what := "the bearer token"
	switch kind {
	case "bearer_token":
		tok := Str(t.Cred, "bearer_token")
		authorize = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	case "basic":
		what = fmt.Sprintf("the password of user %q", Str(t.Cred, "username"))
		authorize = func(r *http.Request) { r.SetBasicAuth(Str(t.Cred, "username"), Str(t.Cred, "password")) }
	case "oidc":
		tok, err := OIDCToken(ctx, t.Outbound, t.Cred, timeout)
		if err != nil {
			return nil, err
		}
		what = fmt.Sprintf("the OIDC token of user %q", Str(t.Cred, "username"))
		authorize = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok.IDToken) }
	}
	base := strings.TrimRight(t.AuthURL, "/")
	get := func(path string) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "mini-vnfm")
		authorize(req)
		res, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		return res, b, nil
	}
	res, body, err := get("/api")
	if err != nil {
		return nil, reachError("the Kubernetes API", t.AuthURL, timeout, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, failf(nil, "the Kubernetes API at %s rejected %s (%s)", t.AuthURL, what, statusText(res.StatusCode))
	case http.StatusForbidden:
		return nil, failf(nil, "the Kubernetes API at %s accepted %s but refused GET /api (%s); the account needs the system:discovery role", t.AuthURL, what, statusText(res.StatusCode))
	default:
		return nil, failf(nil, "the Kubernetes API at %s answered GET /api with %s; is auth_url the API server URL (https://host:6443)?", t.AuthURL, statusText(res.StatusCode))
	}
	var versions struct {
		Kind     string   `json:"kind"`
		Versions []string `json:"versions"`
	}
	if json.Unmarshal(body, &versions) != nil || versions.Kind != "APIVersions" {
		return nil, failf(nil, "%s does not look like a Kubernetes API server: GET /api did not return APIVersions", t.AuthURL)
	}
	out := &Result{}
	// Namespaces are the placement regions; listing them may be forbidden, which is fine.
	if res, body, err := get("/api/v1/namespaces"); err == nil && res.StatusCode == http.StatusOK {
		var list struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if json.Unmarshal(body, &list) == nil {
			for _, it := range list.Items {
				out.Regions = append(out.Regions, it.Metadata.Name)
			}
		}
	}
	if ns := Str(t.Project, "name"); len(out.Regions) == 0 && ns != "" {
		out.Regions = []string{ns}
	}
	out.Regions = uniqSorted(out.Regions)
	return out, nil
}

// OIDCToken gets an ID token by the resource owner password grant with a
// Kubernetes VIM's auth_cred (oidc_token_url, username, password,
// client_id, client_secret), through policy, trusting the system's roots and
// ssl_ca_cert. Its errors are *Error, for people.
func OIDCToken(ctx context.Context, policy *outbound.Policy, cred map[string]any, timeout time.Duration) (oidc.Token, error) {
	tokenURL := Str(cred, "oidc_token_url")
	if u, err := url.Parse(tokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return oidc.Token{}, failf(err, "auth_cred.oidc_token_url %q is not an http(s) URL", tokenURL)
	}
	if err := policy.CheckURL(ctx, tokenURL); err != nil {
		return oidc.Token{}, failf(err, "auth_cred.oidc_token_url: %v", err)
	}
	cfg, err := tlsConfig(cred, true)
	if err != nil {
		return oidc.Token{}, err
	}
	client := policy.Client(outbound.ClientOptions{Timeout: timeout, TLS: cfg, Probe: true})
	c := oidcCredentials(cred)
	tok, err := oidc.Fetch(ctx, client, c, time.Now())
	if re, ok := oidc.IsRejected(err); ok {
		return oidc.Token{}, failf(nil, "%s", c.Rejection(re))
	}
	if err != nil {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return oidc.Token{}, failf(err, "auth_cred.oidc_token_url %q: %v", tokenURL, err)
		}
		return oidc.Token{}, reachError("the OIDC provider", tokenURL, timeout, err)
	}
	return tok, nil
}

// oidcCredentials are the password grant's fields of a Kubernetes VIM's
// auth_cred.
func oidcCredentials(cred map[string]any) oidc.Credentials {
	return oidc.Credentials{TokenURL: Str(cred, "oidc_token_url"), Username: Str(cred, "username"), Password: Str(cred, "password"),
		ClientID: Str(cred, "client_id"), ClientSecret: Str(cred, "client_secret")}
}
