package ossim

import (
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// Keystone application credentials (/v3/users/{user_id}/application_credentials):
// a user creates one for the project of its token, with a subset of its
// roles, an optional expiry and optional access rules; the credential logs
// in by id (or name and user) and secret with the application_credential
// method, getting a token scoped to that project with those roles only; a
// restricted credential (the default) cannot create or delete credentials;
// deleting it ends its tokens. Access rules are enforced on every request
// the token makes to the simulator's services, as Keystone's middleware
// does. This is what the VNFM hands a cluster's Kuryr controller instead of
// the VIM's password.

type accessRule struct {
	ID      string `json:"id"`
	Service string `json:"service"`
	Method  string `json:"method"`
	Path    string `json:"path"`
}

type appCred struct {
	id, name, description, secret string
	userID, projectID             string
	roles                         []string
	expires                       time.Time // zero: never
	unrestricted                  bool
	rules                         []accessRule
}

func (s *Sim) appCredTable() map[string]*appCred {
	if s.appCreds == nil {
		s.appCreds = map[string]*appCred{}
	}
	return s.appCreds
}

func (c *appCred) json(withSecret bool) map[string]any {
	roles := []any{}
	for _, r := range c.roles {
		roles = append(roles, map[string]any{"id": "role-" + r, "name": r, "domain_id": nil})
	}
	var exp any
	if !c.expires.IsZero() {
		exp = c.expires.UTC().Format("2006-01-02T15:04:05.000000")
	}
	rules := []any{}
	for _, r := range c.rules {
		rules = append(rules, map[string]any{"id": r.ID, "service": r.Service, "method": r.Method, "path": r.Path})
	}
	j := map[string]any{"id": c.id, "name": c.name, "description": c.description, "user_id": c.userID, "project_id": c.projectID,
		"roles": roles, "expires_at": exp, "unrestricted": c.unrestricted, "access_rules": rules,
		"links": map[string]any{"self": "/v3/users/" + c.userID + "/application_credentials/" + c.id}}
	if withSecret {
		j["secret"] = c.secret
	}
	return j
}

// nameOr and unrestrictedOr read a credential that may have been deleted
// since its token was issued.
func (c *appCred) nameOr() string {
	if c == nil {
		return ""
	}
	return c.name
}

func (c *appCred) unrestrictedOr() bool { return c != nil && c.unrestricted }

// serveAppCreds serves /v3/users/{user_id}/application_credentials[/{id}].
func (s *Sim) serveAppCreds(w http.ResponseWriter, r *http.Request) {
	segs := pathSegments(r.URL.Path, "/v3/users")
	if len(segs) < 2 || len(segs) > 3 || segs[1] != "application_credentials" {
		keystoneErr(w, http.StatusNotFound, "Not Found", "The resource could not be found.")
		return
	}
	t, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	userID := segs[0]
	if t.account.UserID != userID {
		keystoneErr(w, http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:create_application_credential.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	creds := s.appCredTable()
	if len(segs) == 3 {
		c := creds[segs[2]]
		if c == nil || c.userID != userID {
			keystoneErr(w, http.StatusNotFound, "Not Found", "Could not find application credential: "+segs[2]+".")
			return
		}
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, map[string]any{"application_credential": c.json(false)})
		case http.MethodDelete:
			if t.appCred != "" && !creds[t.appCred].unrestrictedOr() {
				keystoneErr(w, http.StatusForbidden, "Forbidden", "Using method 'application_credential' is not allowed for managing additional application credentials.")
				return
			}
			delete(creds, c.id)
			for _, x := range s.tokens {
				if x.appCred == c.id {
					x.revoked = true
				}
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			keystoneErr(w, http.StatusMethodNotAllowed, "Method Not Allowed", "The method is not allowed for the requested URL.")
		}
		return
	}
	switch r.Method {
	case http.MethodGet:
		var out []any
		for _, c := range creds {
			if c.userID == userID && (r.URL.Query().Get("name") == "" || r.URL.Query().Get("name") == c.name) {
				out = append(out, c.json(false))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"application_credentials": orDefault(out, []any{})})
	case http.MethodPost:
		if t.appCred != "" && !creds[t.appCred].unrestrictedOr() {
			keystoneErr(w, http.StatusForbidden, "Forbidden", "Using method 'application_credential' is not allowed for managing additional application credentials.")
			return
		}
		var body struct {
			AC struct {
				Name         string       `json:"name"`
				Description  string       `json:"description"`
				Secret       string       `json:"secret"`
				ExpiresAt    *string      `json:"expires_at"`
				Roles        []roleRef    `json:"roles"`
				Unrestricted bool         `json:"unrestricted"`
				AccessRules  []accessRule `json:"access_rules"`
			} `json:"application_credential"`
		}
		if err := readJSON(r, &body); err != nil || body.AC.Name == "" {
			keystoneErr(w, http.StatusBadRequest, "Bad Request", "Invalid input for field 'application_credential': 'name' is a required property.")
			return
		}
		ac := body.AC
		for _, c := range creds {
			if c.userID == userID && c.name == ac.Name {
				keystoneErr(w, http.StatusConflict, "Conflict", "Conflict occurred attempting to store application_credential - Duplicate entry found with name "+ac.Name+".")
				return
			}
		}
		c := &appCred{id: keystoneID(), name: ac.Name, description: ac.Description, secret: ac.Secret, userID: userID,
			projectID: t.account.ProjectID, unrestricted: ac.Unrestricted}
		if c.secret == "" {
			c.secret = randomHex(32)
		}
		if ac.ExpiresAt != nil && *ac.ExpiresAt != "" {
			exp, err := parseKeystoneTime(*ac.ExpiresAt)
			if err != nil {
				keystoneErr(w, http.StatusBadRequest, "Bad Request", "Invalid input for field 'expires_at': "+*ac.ExpiresAt+" is not a valid date-time.")
				return
			}
			if !exp.After(time.Now()) {
				keystoneErr(w, http.StatusBadRequest, "Bad Request", "The requested expiration time is in the past.")
				return
			}
			c.expires = exp
		}
		if len(ac.Roles) == 0 {
			c.roles = slices.Clone(t.account.Roles)
		}
		for _, rr := range ac.Roles {
			name := cmpOr(rr.Name, strings.TrimPrefix(rr.ID, "role-"))
			if !slices.Contains(t.account.Roles, name) {
				keystoneErr(w, http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: Cannot create an application credential with unassigned role: "+name+".")
				return
			}
			c.roles = append(c.roles, name)
		}
		for i, rule := range ac.AccessRules {
			if rule.Service == "" || rule.Method == "" || rule.Path == "" {
				keystoneErr(w, http.StatusBadRequest, "Bad Request", "Invalid input for field 'access_rules': service, method and path are required.")
				return
			}
			rule.ID = keystoneID()[:16]
			ac.AccessRules[i] = rule
		}
		c.rules = ac.AccessRules
		creds[c.id] = c
		writeJSON(w, http.StatusCreated, map[string]any{"application_credential": c.json(true)})
	default:
		keystoneErr(w, http.StatusMethodNotAllowed, "Method Not Allowed", "The method is not allowed for the requested URL.")
	}
}

type roleRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func parseKeystoneTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000000", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000000Z"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errf(400, "BadRequest", "bad time %q", v)
}

// appCredLogin is the application_credential auth method: the account the
// credential acts as (its project, its roles) and the credential, or nil
// (s.mu held).
func (s *Sim) appCredLogin(a appCredAuth) (*Account, *appCred) {
	var c *appCred
	creds := s.appCredTable()
	if a.ID != "" {
		c = creds[a.ID]
	} else {
		for _, x := range creds {
			if x.name != a.Name {
				continue
			}
			for _, acct := range s.accounts {
				if acct.UserID == x.userID && (a.User.ID == acct.UserID || (a.User.Name == acct.UserName &&
					(a.User.Domain.ID == acct.DomainID || a.User.Domain.Name == acct.DomainName))) {
					c = x
				}
			}
		}
	}
	if c == nil || c.secret != a.Secret || (!c.expires.IsZero() && !time.Now().Before(c.expires)) {
		return nil, nil
	}
	for _, acct := range s.accounts {
		if acct.UserID == c.userID && acct.ProjectID == c.projectID {
			x := *acct
			x.Roles = slices.Clone(c.roles)
			return &x, c
		}
	}
	return nil, nil
}

type appCredAuth struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Secret string `json:"secret"`
	User   struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Domain struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"domain"`
	} `json:"user"`
}

// serviceOfPath names the catalog service a request path belongs to.
func serviceOfPath(p string) (service, rest string) {
	for _, x := range []struct{ prefix, service string }{
		{"/networking", "network"}, {"/load-balancer", "load-balancer"}, {"/compute", "compute"}, {"/v3", "identity"},
	} {
		if p == x.prefix || strings.HasPrefix(p, x.prefix+"/") {
			return x.service, strings.TrimPrefix(p, x.prefix)
		}
	}
	if strings.HasPrefix(p, "/v1/") {
		return "orchestration", p
	}
	return "", p
}

// allowedByRules reports whether an application credential's access rules
// let a request through (no rules: everything its roles allow). A rule's
// path is a glob where * matches one segment and ** any number.
func allowedByRules(rules []accessRule, method, p string) bool {
	if len(rules) == 0 {
		return true
	}
	service, rest := serviceOfPath(p)
	for _, r := range rules {
		if r.Service != service || (r.Method != "*" && !strings.EqualFold(r.Method, method)) {
			continue
		}
		if globPath(r.Path, rest) {
			return true
		}
	}
	return false
}

func globPath(pattern, p string) bool {
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(p, "/"), "/")
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(ps) {
			return j == len(xs)
		}
		if ps[i] == "**" {
			for k := j; k <= len(xs); k++ {
				if match(i+1, k) {
					return true
				}
			}
			return false
		}
		if j == len(xs) {
			return false
		}
		if ok, _ := path.Match(ps[i], xs[j]); !ok {
			return false
		}
		return match(i+1, j+1)
	}
	return match(0, 0)
}
