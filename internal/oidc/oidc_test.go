package oidc_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/oidc"
	"github.com/mini-vnfm/mini-vnfm/internal/oidc/oidctest"
)

func provider(t *testing.T, secret string) (*oidctest.Provider, *http.Client) {
	t.Helper()
	p, err := oidctest.Start("vnfm", secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	p.AddUser("alice", "wonderland")
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CAPEM) {
		t.Fatal("provider CA")
	}
	return p, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

func TestFetch(t *testing.T) {
	p, client := provider(t, "s3cret")
	now := time.Now()
	for _, tc := range []struct {
		name     string
		c        oidc.Credentials
		lifetime time.Duration
		want     string // error text; "" = a token
	}{
		{"password grant", oidc.Credentials{Username: "alice", Password: "wonderland", ClientID: "vnfm", ClientSecret: "s3cret"}, time.Hour, ""},
		{"wrong password", oidc.Credentials{Username: "alice", Password: "x", ClientID: "vnfm", ClientSecret: "s3cret"}, time.Hour, "401 Unauthorized: invalid_grant"},
		{"unknown user", oidc.Credentials{Username: "bob", Password: "wonderland", ClientID: "vnfm", ClientSecret: "s3cret"}, time.Hour, "401 Unauthorized: invalid_grant"},
		{"wrong client secret", oidc.Credentials{Username: "alice", Password: "wonderland", ClientID: "vnfm", ClientSecret: "x"}, time.Hour, "401 Unauthorized: invalid_client"},
		{"other client", oidc.Credentials{Username: "alice", Password: "wonderland", ClientID: "other", ClientSecret: "s3cret"}, time.Hour, "401 Unauthorized: invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.TokenURL = p.TokenURL()
			p.SetLifetime(tc.lifetime)
			tok, err := oidc.Fetch(context.Background(), client, tc.c, now)
			if tc.want != "" {
				var re *oidc.RejectedError
				if !errors.As(err, &re) || err.Error() != tc.want {
					t.Fatalf("err %v (%T), want a RejectedError %q", err, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(tok.IDToken, ".") != 2 {
				t.Errorf("ID token %q is not a JWT", tok.IDToken)
			}
			if tok.Issuer != p.URL || tok.RefreshToken == "" {
				t.Errorf("issuer %q (want %q), refresh token %q", tok.Issuer, p.URL, tok.RefreshToken)
			}
			// exp is whole seconds; expires_in from now: the earlier wins.
			if d := tok.Expiry.Sub(now); d > tc.lifetime || d < tc.lifetime-2*time.Second {
				t.Errorf("expiry %v after the request, want about %v", d, tc.lifetime)
			}
		})
	}
	// Nothing listens at this port of 127.0.0.1 once the server is closed.
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL + "/token"
	gone.Close()
	if _, err := oidc.Fetch(context.Background(), client, oidc.Credentials{TokenURL: url, Username: "a", Password: "b", ClientID: "c"}, now); err == nil {
		t.Error("fetch from a closed port: no error")
	} else if _, ok := oidc.IsRejected(err); ok {
		t.Errorf("a transport failure reported as a refusal: %v", err)
	}
}

func TestSourceKeepsRefreshesAndDrops(t *testing.T) {
	p, client := provider(t, "")
	p.SetLifetime(10 * time.Minute)
	cred := oidc.Credentials{TokenURL: p.TokenURL(), Username: "alice", Password: "wonderland", ClientID: "vnfm"}
	s := oidc.NewSource(client, cred)
	t0 := time.Now()
	clock := t0
	oidc.SetClock(s, func() time.Time { return clock })
	ctx := context.Background()
	step := func(what string, wantIssued int) string {
		t.Helper()
		tok, err := s.Token(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := p.Issued(); got != wantIssued {
			t.Fatalf("%s: %d tokens issued, want %d", what, got, wantIssued)
		}
		return tok
	}
	first := step("first use", 1)
	if again := step("second use", 1); again != first {
		t.Error("a second use got another token")
	}
	clock = t0.Add(10*time.Minute - oidc.Refresh - 5*time.Second)
	step("shortly before the refresh margin", 1)
	clock = t0.Add(10*time.Minute - oidc.Refresh + 5*time.Second)
	second := step("within the refresh margin", 2)
	// The new token's exp is ten minutes from the provider's (real) clock.
	clock = t0
	step("the new token, again", 2)
	s.Refused("some other token")
	step("after another token was refused", 2)
	s.Refused(second)
	step("after its token was refused", 3)
}

func TestSourceErrorsSayWhoRejectedWhomAndNoSecret(t *testing.T) {
	p, client := provider(t, "client-secret-value")
	s := oidc.NewSource(client, oidc.Credentials{TokenURL: p.TokenURL(), Username: "alice", Password: "password-value",
		ClientID: "vnfm", ClientSecret: "client-secret-value"})
	_, err := s.Token(context.Background())
	want := `the OIDC provider at ` + p.URL + ` rejected the credentials of user "alice" for client "vnfm" (401 Unauthorized: invalid_grant)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want it to start with %q", err, want)
	}
	for _, secret := range []string{"password-value", "client-secret-value"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows a secret: %v", err)
		}
	}
	if _, ok := oidc.IsRejected(err); !ok {
		t.Errorf("the refusal is not a RejectedError underneath: %v", err)
	}
}

// TestTransport: every request carries the ID token; a 401 makes the next
// request use a new one.
func TestTransport(t *testing.T) {
	p, client := provider(t, "")
	var (
		mu   sync.Mutex
		auth []string
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		n := len(auth)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer api.Close()
	src := oidc.NewSource(client, oidc.Credentials{TokenURL: p.TokenURL(), Username: "alice", Password: "wonderland", ClientID: "vnfm"})
	c := &http.Client{Transport: &oidc.Transport{Source: src, Base: http.DefaultTransport}, Timeout: 10 * time.Second}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK, http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/api", nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want || req.Header.Get("Authorization") != "" {
			t.Fatalf("request %d: %d (want %d), caller's request changed: %q", i, res.StatusCode, want, req.Header.Get("Authorization"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 3 {
		t.Fatalf("%d requests reached the API, want 3", len(auth))
	}
	for i, a := range auth {
		if !strings.HasPrefix(a, "Bearer ey") {
			t.Errorf("request %d: Authorization %q", i, a)
		}
	}
	if auth[1] == auth[0] || auth[2] != auth[1] || p.Issued() != 2 {
		t.Errorf("tokens: refused %q, then %q and %q, %d issued; want a new one after the 401, then kept", auth[0], auth[1], auth[2], p.Issued())
	}
}

// TestFetchExpiry: a token is kept until its exp or the answer's
// expires_in (a number or a string of one), whichever comes first; its iss
// is the issuer.
func TestFetchExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	jwt := func(claims string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256"}`)) + "." +
			base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".c2ln"
	}
	for _, tc := range []struct {
		name, answer string
		want         time.Time
		issuer       string
	}{
		{"exp only", `{"id_token":"` + jwt(`{"exp":1800000600,"iss":"https://idp.example"}`) + `"}`, now.Add(10 * time.Minute), "https://idp.example"},
		{"expires_in sooner", `{"id_token":"` + jwt(`{"exp":1800000600}`) + `","expires_in":120}`, now.Add(2 * time.Minute), ""},
		{"exp sooner", `{"id_token":"` + jwt(`{"exp":1800000060}`) + `","expires_in":120}`, now.Add(time.Minute), ""},
		{"expires_in as a string", `{"id_token":"` + jwt(`{}`) + `","expires_in":"300"}`, now.Add(5 * time.Minute), ""},
		{"neither", `{"id_token":"` + jwt(`{}`) + `"}`, time.Time{}, ""},
		{"not a JWT", `{"id_token":"opaque","expires_in":60}`, now.Add(time.Minute), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			tok, err := oidc.Fetch(context.Background(), srv.Client(), oidc.Credentials{TokenURL: srv.URL, Username: "u", Password: "p", ClientID: "c"}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !tok.Expiry.Equal(tc.want) || tok.Issuer != tc.issuer {
				t.Errorf("expiry %v, issuer %q; want %v, %q", tok.Expiry, tok.Issuer, tc.want, tc.issuer)
			}
		})
	}
}
