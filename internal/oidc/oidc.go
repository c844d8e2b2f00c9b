// Package oidc gets OpenID Connect ID tokens by the resource owner password
// grant (RFC 6749 4.3, scope openid), the way a Tacker Kubernetes VIM
// registered with oidc_token_url authenticates: the ID token is the bearer
// token of every Kubernetes API call. Source keeps one until shortly before
// it expires. The caller supplies the HTTP client, so its dialer (the
// outbound policy), TLS roots and timeout apply.
package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Credentials are what the password grant sends.
type Credentials struct {
	TokenURL     string
	Username     string
	Password     string
	ClientID     string
	ClientSecret string // "" for a public client
}

// Token is an ID token and when it expires (zero: not known).
type Token struct {
	IDToken string
	Expiry  time.Time
	// Issuer is the ID token's iss claim ("" when it has none): the
	// provider's issuer URL, where its discovery document is.
	Issuer string
	// RefreshToken is the grant's refresh_token ("" when it sent none).
	RefreshToken string
}

// RejectedError is a provider's answer without an ID token.
type RejectedError struct {
	Status int    // the HTTP status
	Code   string // the RFC 6749 5.2 error code, "" when it sent none of them
}

func (e *RejectedError) Error() string {
	switch {
	case e.Code != "":
		return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Code)
	case e.Status == http.StatusOK:
		return "200 OK without an id_token"
	}
	return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
}

// errorCodes are RFC 6749 5.2's: only these are repeated to users (the
// free-text error_description is the remote's own).
var errorCodes = map[string]bool{"invalid_request": true, "invalid_client": true, "invalid_grant": true,
	"unauthorized_client": true, "unsupported_grant_type": true, "invalid_scope": true}

// Fetch asks the provider for an ID token. A transport failure is returned
// as the client's error (wrapped); an answer without a token is a
// *RejectedError.
func Fetch(ctx context.Context, client *http.Client, c Credentials, now time.Time) (Token, error) {
	form := url.Values{"grant_type": {"password"}, "scope": {"openid"}, "client_id": {c.ClientID},
		"username": {c.Username}, "password": {c.Password}}
	if c.ClientSecret != "" {
		form.Set("client_secret", c.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return Token{}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var tok struct {
		IDToken      string          `json:"id_token"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		Error        string          `json:"error"`
	}
	_ = json.Unmarshal(body, &tok)
	if res.StatusCode != http.StatusOK || tok.IDToken == "" {
		e := &RejectedError{Status: res.StatusCode}
		if errorCodes[tok.Error] {
			e.Code = tok.Error
		}
		return Token{}, e
	}
	t := Token{IDToken: tok.IDToken, RefreshToken: tok.RefreshToken}
	t.Expiry, t.Issuer = jwtClaims(tok.IDToken)
	if secs := seconds(tok.ExpiresIn); secs > 0 {
		if at := now.Add(time.Duration(secs * float64(time.Second))); t.Expiry.IsZero() || at.Before(t.Expiry) {
			t.Expiry = at
		}
	}
	return t, nil
}

// seconds reads expires_in, a number or (as some providers send it) a
// string of one; 0 when it is neither.
func seconds(raw json.RawMessage) float64 {
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		n, _ = strconv.ParseFloat(s, 64)
	}
	return n
}

// jwtClaims are the exp and iss claims of a JWT, read without verifying it
// (the API server verifies the token; these only say when to get a new one
// and where its provider is); zero when it has none.
func jwtClaims(jwt string) (exp time.Time, iss string) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return time.Time{}, ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, ""
	}
	var claims struct {
		Exp float64 `json:"exp"`
		Iss string  `json:"iss"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return time.Time{}, ""
	}
	if claims.Exp > 0 {
		exp = time.Unix(int64(claims.Exp), 0)
	}
	return exp, claims.Iss
}

// Refresh is how long before its expiry a token is replaced: a request
// sent with it must still be accepted when it arrives.
const Refresh = 30 * time.Second

// Source hands out an ID token, fetching one on first use, shortly before
// the one it holds expires, and after a request was refused with it.
type Source struct {
	client *http.Client
	cred   Credentials
	now    func() time.Time

	mu  sync.Mutex
	tok Token
}

// NewSource returns a Source fetching with client.
func NewSource(client *http.Client, c Credentials) *Source {
	return &Source{client: client, cred: c, now: time.Now}
}

// Token returns a token that is not about to expire.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock() // one fetch at a time: the others wait for its token
	now := s.now()
	if s.tok.IDToken != "" && (s.tok.Expiry.IsZero() || now.Add(Refresh).Before(s.tok.Expiry)) {
		return s.tok.IDToken, nil
	}
	t, err := Fetch(ctx, s.client, s.cred, now)
	if err != nil {
		return "", s.explain(err)
	}
	s.tok = t
	return t.IDToken, nil
}

// Provider is the scheme and host of the token URL: how messages name the
// provider (never its path or query).
func (c Credentials) Provider() string {
	if u, err := url.Parse(c.TokenURL); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return c.TokenURL
}

// Rejection says who rejected whose credentials: never the password or the
// client secret, never the provider's free text.
func (c Credentials) Rejection(re *RejectedError) string {
	return fmt.Sprintf("the OIDC provider at %s rejected the credentials of user %q for client %q (%s)", c.Provider(), c.Username, c.ClientID, re.Error())
}

// rejectedError is a refusal worded for an operation's error.
type rejectedError struct {
	msg string
	re  *RejectedError
}

func (e *rejectedError) Error() string { return e.msg }
func (e *rejectedError) Unwrap() error { return e.re }

// explain words a failed fetch for the operation's error.
func (s *Source) explain(err error) error {
	if re, ok := IsRejected(err); ok {
		return &rejectedError{msg: s.cred.Rejection(re) + "; correct them in the VIM's registration (openstack vim set --config-file) or at the provider", re: re}
	}
	return fmt.Errorf("getting an ID token from the OIDC provider at %s: %w", s.cred.Provider(), err)
}

// Refused drops tok (a request was refused with it, 401), so that the
// next Token fetches another.
func (s *Source) Refused(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok.IDToken == tok {
		s.tok = Token{}
	}
}

// Transport adds "Authorization: Bearer <ID token>" to every request.
type Transport struct {
	Source *Source
	Base   http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.Source.Token(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	res, err := t.Base.RoundTrip(r)
	if err == nil && res.StatusCode == http.StatusUnauthorized {
		t.Source.Refused(tok)
	}
	return res, err
}

// IsRejected reports whether err is the provider's refusal.
func IsRejected(err error) (*RejectedError, bool) {
	var re *RejectedError
	ok := errors.As(err, &re)
	return re, ok
}
