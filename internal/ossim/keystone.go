package ossim

import (
	"net/http"
	"strings"
	"time"
)

type token struct {
	id       string
	account  *Account
	methods  []string
	issued   time.Time
	expires  time.Time
	auditID  string
	base     string // public base URL at issue time (for the catalog)
	revoked  bool
	scopeTok string
	// appCred is the application credential the token was issued for;
	// rules are its access rules (keystone_appcred.go).
	appCred string
	rules   []accessRule
}

func keystoneErr(w http.ResponseWriter, code int, title, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "title": title, "message": msg}})
}

func (s *Sim) versionDoc(base string) map[string]any {
	return map[string]any{
		"id":      "v3.14",
		"status":  "stable",
		"updated": "2020-04-07T00:00:00Z",
		"links":   []any{map[string]any{"rel": "self", "href": base + "/v3/"}},
		"media-types": []any{map[string]any{
			"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

func (s *Sim) serveKeystone(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	switch p := r.URL.Path; {
	case p == "/" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{s.versionDoc(base)}}})
	case (p == "/v3" || p == "/v3/") && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"version": s.versionDoc(base)})
	case p == "/v3/auth/tokens":
		switch r.Method {
		case http.MethodPost:
			s.issueToken(w, r)
		case http.MethodGet, http.MethodHead:
			if _, ok := s.authenticate(w, r); !ok {
				return
			}
			s.mu.Lock()
			t := s.validToken(r.Header.Get("X-Subject-Token"))
			s.mu.Unlock()
			if t == nil {
				keystoneErr(w, http.StatusNotFound, "Not Found", "Could not find token: "+r.Header.Get("X-Subject-Token")+".")
				return
			}
			w.Header().Set("X-Subject-Token", t.id)
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusOK)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"token": s.tokenBody(t)})
		case http.MethodDelete:
			if _, ok := s.authenticate(w, r); !ok {
				return
			}
			s.mu.Lock()
			t := s.validToken(r.Header.Get("X-Subject-Token"))
			if t != nil {
				t.revoked = true
			}
			s.mu.Unlock()
			if t == nil {
				keystoneErr(w, http.StatusNotFound, "Not Found", "Could not find token.")
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			keystoneErr(w, http.StatusMethodNotAllowed, "Method Not Allowed", "The method is not allowed for the requested URL.")
		}
	case strings.HasPrefix(p, "/v3/users/"):
		s.serveAppCreds(w, r)
	case p == "/v3/auth/catalog" && r.Method == http.MethodGet:
		t, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"catalog": s.catalog(t), "links": map[string]any{"self": base + "/v3/auth/catalog", "previous": nil, "next": nil}})
	case p == "/v3/auth/projects" && r.Method == http.MethodGet:
		t, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		a := t.account
		writeJSON(w, http.StatusOK, map[string]any{"projects": []any{map[string]any{
			"id": a.ProjectID, "name": a.ProjectName, "domain_id": a.ProjectDomainID, "enabled": true,
			"is_domain": false, "parent_id": a.ProjectDomainID, "description": "",
			"links": map[string]any{"self": base + "/v3/projects/" + a.ProjectID}}},
			"links": map[string]any{"self": base + "/v3/auth/projects", "previous": nil, "next": nil}})
	default:
		keystoneErr(w, http.StatusNotFound, "Not Found", "The resource could not be found.")
	}
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password struct {
				User struct {
					ID       string `json:"id"`
					Name     string `json:"name"`
					Password string `json:"password"`
					Domain   struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"domain"`
				} `json:"user"`
			} `json:"password"`
			Token struct {
				ID string `json:"id"`
			} `json:"token"`
			ApplicationCredential appCredAuth `json:"application_credential"`
		} `json:"identity"`
		Scope *struct {
			Project *struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Domain struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"domain"`
			} `json:"project"`
			Domain *struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"domain"`
			System any `json:"system"`
		} `json:"scope"`
	} `json:"auth"`
}

func (s *Sim) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := readJSON(r, &req); err != nil {
		keystoneErr(w, http.StatusBadRequest, "Bad Request", "Invalid input for field 'auth': "+err.Error())
		return
	}
	id := req.Auth.Identity
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.RefuseAuth {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	var matches []*Account
	var cred *appCred
	switch {
	case contains(id.Methods, "application_credential"):
		if req.Auth.Scope != nil {
			keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "Application credentials cannot request a scope.")
			return
		}
		var acct *Account
		if acct, cred = s.appCredLogin(id.ApplicationCredential); acct != nil {
			matches = append(matches, acct)
		}
	case contains(id.Methods, "password"):
		u := id.Password.User
		for _, a := range s.accounts {
			if u.ID != "" && u.ID != a.UserID {
				continue
			}
			if u.ID == "" {
				if u.Name != a.UserName {
					continue
				}
				if !(u.Domain.ID != "" && u.Domain.ID == a.DomainID) && !(u.Domain.Name != "" && u.Domain.Name == a.DomainName) {
					continue
				}
			}
			if u.Password != a.Password {
				continue
			}
			matches = append(matches, a)
		}
	case contains(id.Methods, "token"):
		if t := s.validToken(id.Token.ID); t != nil {
			for _, a := range s.accounts {
				if a.UserID == t.account.UserID {
					matches = append(matches, a)
				}
			}
		}
	default:
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	if len(matches) == 0 {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	acct := matches[0]
	if sc := req.Auth.Scope; sc != nil {
		if sc.Project == nil {
			keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The simulator only issues project-scoped tokens.")
			return
		}
		p := sc.Project
		acct = nil
		for _, a := range matches {
			switch {
			case p.ID != "":
				if p.ID != a.ProjectID {
					continue
				}
			case p.Name != "":
				if p.Name != a.ProjectName {
					continue
				}
				if !(p.Domain.ID != "" && p.Domain.ID == a.ProjectDomainID) && !(p.Domain.Name != "" && p.Domain.Name == a.ProjectDomainName) {
					continue
				}
			default:
				continue
			}
			acct = a
			break
		}
		if acct == nil {
			keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
			return
		}
	}
	now := time.Now().UTC() // tokens live in real time, whatever Options.Now says
	t := &token{
		id:      "gAAAAA" + randomHex(40),
		account: acct,
		methods: id.Methods,
		issued:  now,
		expires: now.Add(s.opts.TokenTTL),
		auditID: randomHex(11),
		base:    s.baseURL(r),
	}
	if cred != nil {
		t.appCred, t.rules = cred.id, cred.rules
		if !cred.expires.IsZero() && cred.expires.Before(t.expires) {
			t.expires = cred.expires
		}
	}
	s.tokens[t.id] = t
	w.Header().Set("X-Subject-Token", t.id)
	writeJSON(w, http.StatusCreated, map[string]any{"token": s.tokenBody(t)})
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// validToken returns a live token (s.mu held).
func (s *Sim) validToken(id string) *token {
	t := s.tokens[id]
	if t == nil || t.revoked || !time.Now().Before(t.expires) {
		return nil
	}
	return t
}

// authenticate checks X-Auth-Token and answers 401 itself when it is
// missing, unknown, revoked or expired.
func (s *Sim) authenticate(w http.ResponseWriter, r *http.Request) (*token, bool) {
	var t *token
	if s.opts.Identity != nil {
		var err error
		if t, err = s.externalToken(r); err != nil {
			keystoneErr(w, http.StatusServiceUnavailable, "Service Unavailable", "Identity service: "+err.Error())
			return nil, false
		}
	} else {
		s.mu.Lock()
		t = s.validToken(r.Header.Get("X-Auth-Token"))
		s.mu.Unlock()
	}
	if t == nil {
		w.Header().Set("WWW-Authenticate", `Keystone uri="`+s.baseURL(r)+`/v3"`)
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return nil, false
	}
	if !allowedByRules(t.rules, r.Method, r.URL.Path) {
		keystoneErr(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication: the application credential's access rules do not allow "+r.Method+" "+r.URL.Path+".")
		return nil, false
	}
	return t, true
}

// externalToken validates X-Auth-Token with Options.Identity; nil when it is
// missing or unknown.
func (s *Sim) externalToken(r *http.Request) (*token, error) {
	id := r.Header.Get("X-Auth-Token")
	if id == "" {
		return nil, nil
	}
	it, err := s.opts.Identity.ValidateToken(r.Context(), id)
	if err != nil || it == nil {
		return nil, err
	}
	return &token{id: id, account: &Account{UserID: it.UserID, UserName: it.UserName, DomainID: it.UserDomainID,
		ProjectID: it.ProjectID, ProjectName: it.ProjectName, ProjectDomainID: it.ProjectDomainID, Roles: it.Roles},
		expires: it.ExpiresAt, base: s.baseURL(r)}, nil
}

func (s *Sim) tokenBody(t *token) map[string]any {
	a := t.account
	roles := make([]any, 0, len(a.Roles))
	for _, r := range a.Roles {
		roles = append(roles, map[string]any{"id": "role-" + r, "name": r})
	}
	body := map[string]any{
		"methods":    t.methods,
		"user":       map[string]any{"domain": map[string]any{"id": a.DomainID, "name": a.DomainName}, "id": a.UserID, "name": a.UserName, "password_expires_at": nil},
		"audit_ids":  []string{t.auditID},
		"expires_at": t.expires.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":  t.issued.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"project":    map[string]any{"domain": map[string]any{"id": a.ProjectDomainID, "name": a.ProjectDomainName}, "id": a.ProjectID, "name": a.ProjectName},
		"is_domain":  false,
		"roles":      roles,
		"catalog":    s.catalog(t),
	}
	if t.appCred != "" {
		body["application_credential"] = map[string]any{"id": t.appCred, "name": s.appCredTable()[t.appCred].nameOr(), "restricted": !s.appCredTable()[t.appCred].unrestrictedOr()}
	}
	return body
}

func (s *Sim) catalog(t *token) []any {
	base := t.base
	entry := func(typ, name, url string) any {
		var eps []any
		for _, iface := range []string{"public", "internal", "admin"} {
			u := url
			if in := s.internalURL(); iface == "internal" && in != "" {
				u = in + strings.TrimPrefix(url, base) // SetInternalURL
			}
			eps = append(eps, map[string]any{
				"id": keystoneID(), "interface": iface, "region": s.opts.Region, "region_id": s.opts.Region, "url": u})
		}
		return map[string]any{"endpoints": eps, "id": keystoneID(), "type": typ, "name": name}
	}
	return []any{
		entry("identity", "keystone", base+"/v3"),
		entry("orchestration", "heat", base+"/v1/"+t.account.ProjectID),
		entry("compute", "nova", base+"/compute/v2.1"),
		entry("network", "neutron", base+"/networking"),
		entry("load-balancer", "octavia", base+"/load-balancer"),
		entry("image", "glance", base+"/image"),
	}
}

// RevokeTokens invalidates every token issued so far (clients must log in
// again; gophercloud with AllowReauth does so on the next 401).
func (s *Sim) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.revoked = true
	}
}
