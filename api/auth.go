package api

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
)

// authenticate enforces Config.Auth (nil: authentication is off): open
// paths pass, others need credentials (401) carrying the scope the policy
// names for the method and path (403). The credentials are removed from the
// request before the handlers see it, so nothing downstream can log or
// forward them.
func (a *API) authenticate(next http.Handler) http.Handler {
	au := a.cfg.Auth
	if au == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := au.Policy.Require(r.Method, r.URL.Path)
		if need.Open {
			next.ServeHTTP(w, r)
			return
		}
		p, err := au.Authenticate(r.Context(), r.Header.Get("Authorization"), r.Header.Get("X-Auth-Token"), auth.ClientAddr(r))
		if err != nil {
			h := http.Header{}
			switch err.Status {
			case http.StatusUnauthorized:
				for _, c := range au.Challenges(err.BearerError, "", "") {
					h.Add("WWW-Authenticate", c)
				}
			case http.StatusTooManyRequests:
				h.Set("Retry-After", strconv.Itoa(int(err.RetryAfter.Seconds())))
			}
			a.writeProblem(w, r, &problem{status: err.Status, detail: err.Detail, header: h})
			return
		}
		r.Header.Del("Authorization")
		r.Header.Del("X-Auth-Token")
		if !p.Scopes.Has(need.Scope) {
			h := http.Header{}
			if p.Method != auth.MethodBasic {
				for _, c := range au.Challenges("insufficient_scope", "", need.Scope) {
					h.Add("WWW-Authenticate", c)
				}
			}
			a.logger(r).InfoContext(r.Context(), "forbidden", "principal", p.Name, "authMethod", p.Method, "need", need.Scope, "path", r.URL.Path)
			a.writeProblem(w, r, &problem{status: http.StatusForbidden, detail: forbiddenDetail(r, p, need.Scope), header: h})
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

func forbiddenDetail(r *http.Request, p *auth.Principal, scope string) string {
	have := p.Scopes.String()
	if have == "" {
		have = "none"
	}
	if scope == auth.Admin {
		return fmt.Sprintf("%s %s is outside the API families of this VNFM (/vnflcm, /vnfpkgm, /v1.0/vims, /metrics), so only scope * (admin) may call it; "+
			"check the URL. %s (%s) has scopes: %s", r.Method, r.URL.Path, p.Name, p.Method, have)
	}
	return fmt.Sprintf("scope %s is missing: %s %s needs it, and %s (%s) has scopes: %s", scope, r.Method, r.URL.Path, p.Name, p.Method, have)
}

// authRoutes serves the OAuth 2.0 token endpoint when auth is on.
func (a *API) authRoutes(r chi.Router, h *routeTable) {
	if a.cfg.Auth == nil || !a.cfg.Auth.OAuthEnabled() {
		return
	}
	h.handle(r, auth.TokenPath, methods{http.MethodPost: a.oauthToken})
}

// oauthToken is the token endpoint of the OAuth 2.0 client credentials
// grant (RFC 6749 4.4; SOL013 8.3); errors are RFC 6749 5.2 bodies.
func (a *API) oauthToken(w http.ResponseWriter, r *http.Request) {
	au := a.cfg.Auth
	invalid := func(d string) {
		a.writeOAuthError(w, &auth.OAuthError{Status: http.StatusBadRequest, Code: "invalid_request", Description: d})
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		invalid("send the parameters as application/x-www-form-urlencoded (e.g. curl -u id:secret -d grant_type=client_credentials)")
		return
	}
	if q := r.URL.Query(); q.Has("client_secret") || q.Has("grant_type") {
		invalid("send the parameters in the request body, never in the URL")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		invalid("the form body cannot be read (at most 16 KiB, application/x-www-form-urlencoded)")
		return
	}
	for k, v := range r.PostForm {
		if len(v) > 1 {
			invalid("parameter " + k + " is given more than once")
			return
		}
	}
	f := r.PostForm
	id, secret, oe := auth.ClientAuth(r.Header.Get("Authorization"), f.Get("client_id"), f.Get("client_secret"))
	if oe != nil {
		a.writeOAuthError(w, oe)
		return
	}
	res, oe := au.IssueToken(r.Context(), auth.TokenRequest{GrantType: f.Get("grant_type"), ClientID: id, ClientSecret: secret,
		Scope: f.Get("scope"), Addr: auth.ClientAddr(r)})
	if oe != nil {
		a.writeOAuthError(w, oe)
		return
	}
	b, _ := json.Marshal(res)
	noStore(w)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

func (a *API) writeOAuthError(w http.ResponseWriter, oe *auth.OAuthError) {
	noStore(w)
	switch oe.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q, charset=\"UTF-8\"", a.cfg.Auth.Realm()))
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int(oe.RetryAfter.Seconds())))
	}
	b, _ := json.Marshal(oe)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(oe.Status)
	_, _ = w.Write(b)
}
