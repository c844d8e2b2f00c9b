package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Request guards that keep browsers and sloppy clients from doing what the
// API does not allow: cross-site writes (CSRF), bodies in media types a web
// form can send, queries that would be half-read, and sealed values smuggled
// in by a client.

// strictQuery parses the raw query itself: Go's URL.Query drops every pair
// holding a raw ';', which is how SOL013 joins filter expressions and how
// curl sends them, so a filter would silently match everything. A query
// that cannot be parsed is 400. The parsed query is written back in
// canonical form (';' as %3B), so everything downstream may use
// r.URL.Query().
func (a *API) strictQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			q, err := ParseQuery(r.URL.RawQuery)
			if err != nil {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, err.Error()))
				return
			}
			r.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, r)
	})
}

// ParseQuery parses a URL query string: pairs are separated by '&' only,
// keys and values are percent-decoded ('+' is a space), a key without '='
// has the empty value. Unlike url.ParseQuery, ';' is an ordinary character.
// Invalid percent-encoding is an error naming the pair.
func ParseQuery(raw string) (url.Values, error) {
	q := url.Values{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("the query cannot be parsed: %q is not valid percent-encoding; encode '%%' as %%25", shorten(k))
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("the query cannot be parsed: the value of %s is not valid percent-encoding (%q); encode '%%' as %%25", shorten(key), shorten(v))
		}
		q[key] = append(q[key], val)
	}
	return q, nil
}

func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// originCheck refuses requests a browser sends on behalf of another site.
// Browsers name the page's origin in Origin (always on cross-origin
// requests and on every POST/PUT/PATCH/DELETE); a request whose Origin is
// neither the VNFM's own (its EndpointURL) nor configured in
// VNFM_ALLOWED_ORIGINS is refused with 403 before authentication, so a web
// page cannot use the operator's loopback access or cached Basic
// credentials. Sec-Fetch-Site covers browsers that leave Origin out.
// Clients that are not browsers send neither header and are not affected.
func (a *API) originCheck(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	if o := originOf(a.base); o != "" {
		allowed[o] = true
	}
	for _, o := range a.cfg.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(o), "/")] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		refused := ""
		switch {
		case origin != "":
			if !allowed[strings.ToLower(origin)] {
				refused = fmt.Sprintf("Origin %s", shorten(origin))
			}
		case !safeMethod(r.Method):
			if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
				refused = "a " + s + " page (Sec-Fetch-Site)"
			}
		}
		if refused != "" {
			a.writeProblem(w, r, problemf(http.StatusForbidden, fmt.Sprintf(
				"requests from %s are refused: browsers may only call this VNFM from its own origin %s; "+
					"to allow a web front end, list its origin in VNFM_ALLOWED_ORIGINS", refused, originOf(a.base))))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostCheck guards a VNFM without authentication against DNS rebinding: a
// page on evil.example whose name is made to resolve to 127.0.0.1 is
// same-origin with what it fetches there, so its GETs carry no Origin. Such
// requests name the attacker's host in Host; only IP addresses, localhost
// and the hosts of VNFM_ENDPOINT_URL and VNFM_ALLOWED_ORIGINS are served.
// With authentication on, a page has no credentials to send.
func (a *API) hostCheck(next http.Handler) http.Handler {
	if a.cfg.Auth != nil {
		return next
	}
	allowed := map[string]bool{"localhost": true}
	for _, o := range append([]string{a.base}, a.cfg.AllowedOrigins...) {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			allowed[strings.ToLower(u.Hostname())] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		if _, err := netip.ParseAddr(host); err != nil && !allowed[host] {
			a.writeProblem(w, r, problemf(http.StatusForbidden, fmt.Sprintf(
				"Host %s is not a name of this VNFM, which runs without authentication; use its address or the host of VNFM_ENDPOINT_URL (%s)",
				strconv.Quote(shorten(r.Host)), a.base)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// originOf returns scheme://host[:port] of a URL, lower case, with the
// scheme's default port left out (as browsers write Origin).
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// mediaRule names the media types a write accepts.
type mediaRule struct {
	types []string // accepted media types (no parameters)
	hint  string   // what to send, for the 415 detail
}

var (
	jsonOnly  = mediaRule{types: []string{"application/json"}, hint: "send the body as Content-Type: application/json"}
	jsonPatch = mediaRule{types: []string{"application/merge-patch+json", "application/json"},
		hint: "send the body as Content-Type: application/merge-patch+json (or application/json)"}
	zipOnly = mediaRule{types: []string{"application/zip"}, hint: "send the CSAR as Content-Type: application/zip"}
)

// checkMedia enforces the media type of a write. A body needs a declared,
// accepted type; a request without body may leave Content-Type out but
// must not declare another type (an HTML form posting nothing is still a
// form). Only JSON, merge-patch JSON and ZIP are accepted: none of them can
// be sent by a web form or a simple cross-site fetch without a CORS
// preflight, which this server never grants.
func checkMedia(r *http.Request, hasBody bool, rule mediaRule) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if !hasBody {
			return nil
		}
		return problemf(http.StatusUnsupportedMediaType, "the request has a body but no Content-Type; "+rule.hint)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(rule.types, mt) {
		return problemf(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %s is not accepted here; %s", strconv.Quote(shorten(ct)), rule.hint))
	}
	if cs, ok := params["charset"]; ok && rule.types[0] != "application/zip" && !strings.EqualFold(cs, "utf-8") {
		return problemf(http.StatusUnsupportedMediaType, fmt.Sprintf("charset %s is not accepted; JSON is UTF-8 (RFC 8259 §8.1): %s", strconv.Quote(shorten(cs)), rule.hint))
	}
	return nil
}

// ruleFor picks the media rule of a JSON write.
func ruleFor(r *http.Request) mediaRule {
	if r.Method == http.MethodPatch {
		return jsonPatch
	}
	return jsonOnly
}

// writeMethod reports whether the method may carry a request body the
// handlers read.
func writeMethod(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch
}

// sealedInRequest finds a string that looks like a sealed value
// (enc:v1:…, enc:v3:…, any version) anywhere in a JSON body. Only the server seals, and
// no API response ever contains a sealed value, so a client sending one is
// replaying something taken from the database or a backup: opening it
// would make the engine use a secret the client never knew.
func sealedInRequest(body []byte) (string, bool) {
	if !bytes.Contains(body, []byte("enc:v")) {
		return "", false
	}
	return findInBody(body, secrets.LooksSealed, false)
}

// nulInRequest finds a member name or string of a JSON body that holds
// U+0000 (written \u0000: JSON allows no raw control character in a
// string). PostgreSQL stores no NUL in text or jsonb, so such a request
// can never be stored; it is refused before anything is created.
func nulInRequest(body []byte) (string, bool) {
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return "", false
	}
	return findInBody(body, func(s string) bool { return strings.IndexByte(s, 0) >= 0 }, true)
}

// findInBody decodes body and returns the JSON pointer of the first string
// (in member-name order) that match accepts — with keys, of a member name
// too.
func findInBody(body []byte, match func(string) bool, keys bool) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	return findString(v, "", match, keys)
}

func findString(v any, path string, match func(string) bool, keys bool) (string, bool) {
	switch t := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(t))
		for k := range t {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			if keys && match(k) {
				return path + "/" + pointerToken(k), true
			}
			if p, ok := findString(t[k], path+"/"+pointerToken(k), match, keys); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range t {
			if p, ok := findString(e, path+"/"+strconv.Itoa(i), match, keys); ok {
				return p, true
			}
		}
	case string:
		if match(t) {
			if path == "" {
				path = "/"
			}
			return path, true
		}
	}
	return "", false
}

// pointerToken is a member name as a JSON pointer token (RFC 6901), its
// control characters written \u00XX so that the path can be read.
func pointerToken(k string) string {
	k = strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
	if strings.IndexFunc(k, func(r rune) bool { return r < 0x20 }) < 0 {
		return k
	}
	var b strings.Builder
	for _, r := range k {
		if r < 0x20 {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
