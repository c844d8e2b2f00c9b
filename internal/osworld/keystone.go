package osworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
)

var httpClient = &http.Client{Timeout: 60 * time.Second}

// errUnknownToken is Keystone's 404 for X-Subject-Token.
var errUnknownToken = errors.New("token not found")

// doJSON sends a JSON request with a token and decodes the answer into out
// (when not nil); any status other than the wanted ones is an error.
func doJSON(ctx context.Context, method, url, token string, in, out any, want ...int) error {
	_, err := doJSONHeader(ctx, method, url, token, nil, in, out, want...)
	return err
}

func doJSONHeader(ctx context.Context, method, url, token string, hdr map[string]string, in, out any, want ...int) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	for _, c := range want {
		if res.StatusCode == c {
			if out != nil && len(bytes.TrimSpace(b)) > 0 {
				if err := json.Unmarshal(b, out); err != nil {
					return res.Header, fmt.Errorf("%s %s: %w", method, url, err)
				}
			}
			return res.Header, nil
		}
	}
	if res.StatusCode == http.StatusNotFound && hdr["X-Subject-Token"] != "" {
		return res.Header, errUnknownToken
	}
	return res.Header, fmt.Errorf("%s %s: %s: %s", method, url, res.Status, strings.TrimSpace(string(b)))
}

// keystoneClient holds a project-scoped token of one account, renewed
// before it expires, and validates other tokens with it.
type keystoneClient struct {
	authURL                 string
	user, password, project string

	mu      sync.Mutex
	tok     string
	expires time.Time

	cacheMu sync.Mutex
	cache   map[string]cachedToken
}

type cachedToken struct {
	tok   *ossim.IdentityToken // nil: unknown token
	until time.Time
}

func newKeystoneClient(authURL, user, password, project string) *keystoneClient {
	return &keystoneClient{authURL: authURL, user: user, password: password, project: project, cache: map[string]cachedToken{}}
}

func passwordAuth(user, password, project string) map[string]any {
	return map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": user, "domain": map[string]any{"id": "default"}, "password": password}}},
		"scope": map[string]any{"project": map[string]any{"name": project, "domain": map[string]any{"id": "default"}}}}}
}

// token returns a valid token, issuing one when needed.
func (k *keystoneClient) token(ctx context.Context) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tok != "" && time.Until(k.expires) > 5*time.Minute {
		return k.tok, nil
	}
	var out struct {
		Token struct {
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"token"`
	}
	h, err := doJSONHeader(ctx, http.MethodPost, k.authURL+"/auth/tokens?nocatalog", "", nil, passwordAuth(k.user, k.password, k.project), &out, 201)
	if err != nil {
		return "", fmt.Errorf("osworld: Keystone login of %s: %w", k.user, err)
	}
	k.tok, k.expires = h.Get("X-Subject-Token"), out.Token.ExpiresAt
	return k.tok, nil
}

// forget drops the held token (after a 401).
func (k *keystoneClient) forget() {
	k.mu.Lock()
	k.tok = ""
	k.mu.Unlock()
}

// call is doJSON with the held token, retried once with a fresh token
// after a 401.
func (k *keystoneClient) call(ctx context.Context, method, path string, in, out any, want ...int) error {
	for attempt := 0; ; attempt++ {
		tok, err := k.token(ctx)
		if err != nil {
			return err
		}
		err = doJSON(ctx, method, k.authURL+path, tok, in, out, want...)
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "401 Unauthorized") {
			k.forget()
			continue
		}
		return err
	}
}

// ValidateToken implements ossim.Identity: GET /v3/auth/tokens, as
// keystonemiddleware does, with answers cached for a minute (a revoked
// token may be honoured that long, as by the real services' token cache).
func (k *keystoneClient) ValidateToken(ctx context.Context, token string) (*ossim.IdentityToken, error) {
	now := time.Now()
	k.cacheMu.Lock()
	if c, ok := k.cache[token]; ok && now.Before(c.until) {
		k.cacheMu.Unlock()
		return c.tok, nil
	}
	k.cacheMu.Unlock()
	var out struct {
		Token struct {
			ExpiresAt time.Time `json:"expires_at"`
			User      struct {
				ID, Name string
				Domain   struct{ ID string } `json:"domain"`
			} `json:"user"`
			Project *struct {
				ID, Name string
				Domain   struct{ ID string } `json:"domain"`
			} `json:"project"`
			Roles []struct{ Name string } `json:"roles"`
		} `json:"token"`
	}
	var it *ossim.IdentityToken
	for attempt := 0; ; attempt++ {
		svc, err := k.token(ctx)
		if err != nil {
			return nil, err
		}
		_, err = doJSONHeader(ctx, http.MethodGet, k.authURL+"/auth/tokens?nocatalog", svc,
			map[string]string{"X-Subject-Token": token}, nil, &out, 200)
		if errors.Is(err, errUnknownToken) {
			break
		}
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "401 Unauthorized") {
			k.forget()
			continue
		}
		if err != nil {
			return nil, err
		}
		t := out.Token
		it = &ossim.IdentityToken{UserID: t.User.ID, UserName: t.User.Name, UserDomainID: t.User.Domain.ID, ExpiresAt: t.ExpiresAt}
		if t.Project != nil {
			it.ProjectID, it.ProjectName, it.ProjectDomainID = t.Project.ID, t.Project.Name, t.Project.Domain.ID
		}
		for _, r := range t.Roles {
			it.Roles = append(it.Roles, r.Name)
		}
		break
	}
	until := now.Add(time.Minute)
	if it != nil && it.ExpiresAt.Before(until) {
		until = it.ExpiresAt
	}
	k.cacheMu.Lock()
	if len(k.cache) > 10000 {
		k.cache = map[string]cachedToken{}
	}
	k.cache[token] = cachedToken{tok: it, until: until}
	k.cacheMu.Unlock()
	return it, nil
}

// NewIdentity returns a token validator (ossim.Identity) that checks tokens
// with the Keystone at authURL as the given account, which needs the admin
// (or service) role to validate other users' tokens.
func NewIdentity(authURL, user, password, project string) ossim.Identity {
	return newKeystoneClient(authURL, user, password, project)
}

// Identity returns the token validator for the simulators of this world
// (ossim.Options.Identity).
func (w *World) Identity() ossim.Identity { return w.identity }

// setupCatalog registers what Heat needs (its service user, the stack
// user domain and its admin, roles) and the catalog — Keystone itself, Heat,
// and the simulator's services on the front — with placeholder hosts that
// each world rewrites (rewriteEndpoints). It runs once, on the golden
// database.
func setupCatalog(ctx context.Context, k *keystoneClient, svcPW, domPW string) error {
	var eps struct {
		Endpoints []struct{ ID, URL string } `json:"endpoints"`
	}
	if err := k.call(ctx, http.MethodGet, "/endpoints", nil, &eps, 200); err != nil {
		return err
	}
	if len(eps.Endpoints) != 3 {
		return fmt.Errorf("osworld: the bootstrapped Keystone has %d endpoints, want its own 3", len(eps.Endpoints))
	}
	roleID := map[string]string{}
	var roles struct {
		Roles []struct{ ID, Name string } `json:"roles"`
	}
	if err := k.call(ctx, http.MethodGet, "/roles", nil, &roles, 200); err != nil {
		return err
	}
	for _, r := range roles.Roles {
		roleID[r.Name] = r.ID
	}
	create := func(path, kind string, body map[string]any) (string, error) {
		var out map[string]map[string]any
		if err := k.call(ctx, http.MethodPost, path, map[string]any{kind: body}, &out, 201); err != nil {
			return "", err
		}
		id, _ := out[kind]["id"].(string)
		return id, nil
	}
	for _, name := range []string{"heat_stack_user", "heat_stack_owner"} {
		if _, err := create("/roles", "role", map[string]any{"name": name}); err != nil {
			return err
		}
	}
	svcProject, err := create("/projects", "project", map[string]any{"name": "service", "domain_id": "default"})
	if err != nil {
		return err
	}
	heatUser, err := create("/users", "user", map[string]any{"name": "heat", "domain_id": "default", "password": svcPW})
	if err != nil {
		return err
	}
	if err := k.call(ctx, http.MethodPut, "/projects/"+svcProject+"/users/"+heatUser+"/roles/"+roleID["admin"], nil, nil, 204); err != nil {
		return err
	}
	heatDomain, err := create("/domains", "domain", map[string]any{"name": "heat", "description": "Heat stack projects and users"})
	if err != nil {
		return err
	}
	domAdmin, err := create("/users", "user", map[string]any{"name": "heat_domain_admin", "domain_id": heatDomain, "password": domPW})
	if err != nil {
		return err
	}
	if err := k.call(ctx, http.MethodPut, "/domains/"+heatDomain+"/users/"+domAdmin+"/roles/"+roleID["admin"], nil, nil, 204); err != nil {
		return err
	}
	for _, c := range catalog {
		sid, err := create("/services", "service", map[string]any{"name": c.name, "type": c.typ, "enabled": true})
		if err != nil {
			return err
		}
		for _, iface := range []string{"public", "internal", "admin"} {
			if _, err := create("/endpoints", "endpoint", map[string]any{"service_id": sid, "interface": iface,
				"region_id": defaultRegion, "url": c.url, "enabled": true}); err != nil {
				return err
			}
		}
	}
	return nil
}

// catalog is what the golden Keystone lists besides itself, on the
// placeholder hosts.
var catalog = []struct{ typ, name, url string }{
	{"orchestration", "heat", heatPlaceholder + "v1/%(tenant_id)s"},
	{"compute", "nova", cloudPlaceholder + "compute/v2.1"},
	{"network", "neutron", cloudPlaceholder + "networking"},
	{"image", "glance", cloudPlaceholder + "image"},
	{"load-balancer", "octavia", cloudPlaceholder + "load-balancer"},
	// Cinder is not simulated, but Heat refuses even to validate a template
	// with volumes unless the catalog has it.
	{"volumev3", "cinderv3", cloudPlaceholder + "volume/v3/%(tenant_id)s"},
	{"block-storage", "cinder", cloudPlaceholder + "volume/v3/%(tenant_id)s"},
}

// NewTenant creates a project and a user with the admin role in it (as a
// VIM account of Tacker's is set up), for a test of its own.
func (w *World) NewTenant(ctx context.Context, name string) (Tenant, error) {
	k := w.identity
	t := Tenant{Project: name, User: name, Password: randomHex(10)}
	var p struct{ Project struct{ ID string } }
	if err := k.call(ctx, http.MethodPost, "/projects", map[string]any{"project": map[string]any{"name": name, "domain_id": "default"}}, &p, 201); err != nil {
		return t, err
	}
	var u struct{ User struct{ ID string } }
	if err := k.call(ctx, http.MethodPost, "/users", map[string]any{"user": map[string]any{"name": name, "domain_id": "default",
		"password": t.Password, "default_project_id": p.Project.ID}}, &u, 201); err != nil {
		return t, err
	}
	t.ProjectID, t.UserID = p.Project.ID, u.User.ID
	var roles struct {
		Roles []struct{ ID string } `json:"roles"`
	}
	if err := k.call(ctx, http.MethodGet, "/roles?name=admin", nil, &roles, 200); err != nil {
		return t, err
	}
	if len(roles.Roles) != 1 {
		return t, errors.New("osworld: no admin role")
	}
	if err := k.call(ctx, http.MethodPut, "/projects/"+t.ProjectID+"/users/"+t.UserID+"/roles/"+roles.Roles[0].ID, nil, nil, 204); err != nil {
		return t, err
	}
	return t, nil
}

// SetUserEnabled disables or enables a user; disabling revokes every token
// the user holds (Keystone's revocation event), as an operator would cut a
// client off.
func (w *World) SetUserEnabled(ctx context.Context, userID string, enabled bool) error {
	err := w.identity.call(ctx, http.MethodPatch, "/users/"+userID, map[string]any{"user": map[string]any{"enabled": enabled}}, nil, 200)
	if err == nil {
		w.identity.cacheMu.Lock()
		w.identity.cache = map[string]cachedToken{}
		w.identity.cacheMu.Unlock()
	}
	return err
}

// AdminToken returns a token of the cloud administrator.
func (w *World) AdminToken(ctx context.Context) (string, error) { return w.identity.token(ctx) }

// Serve routes the simulator APIs of project projectID to h (a *ossim.Sim
// started with Options.Identity = w.Identity()). Requests whose token
// belongs to no served project get 401 like an unknown token; those without
// a token (version discovery) go to the first handler served.
func (w *World) Serve(projectID string, h http.Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.routes[projectID] = h
	if w.routes[""] == nil {
		w.routes[""] = h
	}
}

// Unserve removes the route of a project.
func (w *World) Unserve(projectID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.routes[projectID]
	delete(w.routes, projectID)
	if w.routes[""] == h {
		delete(w.routes, "")
		for _, o := range w.routes {
			w.routes[""] = o
			break
		}
	}
}

func (w *World) serveCloud(rw http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim") || r.URL.Path == "/v3" || strings.HasPrefix(r.URL.Path, "/v3/") ||
		strings.HasPrefix(r.URL.Path, "/v1/") {
		// The simulator's own Keystone, Heat and admin API are not part of
		// this cloud.
		http.NotFound(rw, r)
		return
	}
	project := ""
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		it, err := w.identity.ValidateToken(r.Context(), tok)
		if err != nil {
			http.Error(rw, "identity: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if it == nil {
			rw.Header().Set("WWW-Authenticate", `Keystone uri="`+w.AuthURL+`"`)
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusUnauthorized)
			_, _ = rw.Write([]byte(`{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`))
			return
		}
		project = it.ProjectID
	}
	w.mu.Lock()
	h := w.routes[project]
	if h == nil && project == "" {
		h = w.routes[""]
	}
	w.mu.Unlock()
	if h == nil {
		http.Error(rw, "osworld: no simulator serves project "+project, http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(rw, r)
}

// whoami logs in and returns the account's ids.
func (k *keystoneClient) whoami(ctx context.Context) (Tenant, error) {
	var out struct {
		Token struct {
			ExpiresAt time.Time           `json:"expires_at"`
			User      struct{ ID string } `json:"user"`
			Project   struct{ ID string } `json:"project"`
		} `json:"token"`
	}
	h, err := doJSONHeader(ctx, http.MethodPost, k.authURL+"/auth/tokens?nocatalog", "", nil, passwordAuth(k.user, k.password, k.project), &out, 201)
	if err != nil {
		return Tenant{}, fmt.Errorf("osworld: Keystone login of %s: %w", k.user, err)
	}
	k.mu.Lock()
	k.tok, k.expires = h.Get("X-Subject-Token"), out.Token.ExpiresAt
	k.mu.Unlock()
	return Tenant{Project: k.project, ProjectID: out.Token.Project.ID, User: k.user, UserID: out.Token.User.ID, Password: k.password}, nil
}

// ValidateTemplate asks Heat whether a template is valid (POST
// /v1/{project}/validate, what `openstack orchestration template validate`
// does) as tenant tn, whose project must be served by a simulator (Heat
// asks Neutron which extensions it has, for instance); files are the
// nested templates and get_file contents by the names the template uses.
// The error carries Heat's message.
func (w *World) ValidateTemplate(ctx context.Context, tn Tenant, template string, files map[string]string) (map[string]any, error) {
	tok, err := newKeystoneClient(w.AuthURL, tn.User, tn.Password, tn.Project).token(ctx)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	body := map[string]any{"template": template, "files": files, "environment": map[string]any{}}
	if err := doJSON(ctx, http.MethodPost, w.HeatURL+"/v1/"+tn.ProjectID+"/validate", tok, body, &out, 200); err != nil {
		return nil, err
	}
	return out, nil
}

// Stack is a top-level stack as Heat lists it.
type Stack struct {
	ID     string `json:"id"`
	Name   string `json:"stack_name"`
	Status string `json:"stack_status"`
	Reason string `json:"stack_status_reason"`
	Links  []struct {
		Href string `json:"href"`
		Rel  string `json:"rel"`
	} `json:"links"`
}

// Stacks lists tenant tn's top-level stacks that are not deleted. Heat
// lists every project's stacks to a user with the admin role, which every
// tenant's user has here, so the list is narrowed to the stacks whose own
// link is under tn's project (/v1/<project id>/stacks/…).
func (w *World) Stacks(ctx context.Context, tn Tenant) ([]Stack, error) {
	k := newKeystoneClient(w.AuthURL, tn.User, tn.Password, tn.Project)
	tok, err := k.token(ctx)
	if err != nil {
		return nil, err
	}
	var out struct {
		Stacks []Stack `json:"stacks"`
	}
	if err := doJSON(ctx, http.MethodGet, w.HeatURL+"/v1/"+tn.ProjectID+"/stacks", tok, nil, &out, 200); err != nil {
		return nil, err
	}
	var live []Stack
	for _, s := range out.Stacks {
		if s.Status != "DELETE_COMPLETE" && s.inProject(tn.ProjectID) {
			live = append(live, s)
		}
	}
	return live, nil
}

// inProject tells whether the stack's self link is under project's path.
func (s Stack) inProject(project string) bool {
	for _, l := range s.Links {
		if l.Rel == "self" {
			return strings.Contains(l.Href, "/v1/"+project+"/stacks/")
		}
	}
	return false
}
