// Package vims is the VIM registry: Tacker's legacy /v1.0/vims resource
// (register, show, list, update, delete, key rotation), the Kubernetes VIMs
// management drivers register for the clusters they build
// (driverapi.VimRegistry), and the resolution of an LCM request's
// vimConnectionInfo into the access data of a registered VIM — stored
// credentials bound to the VIM they were registered with.
package vims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
)

// Registry is the VIM registry.
type Registry struct {
	st       *store.Store
	box      *secrets.Box
	log      *slog.Logger
	outbound *outbound.Policy
}

// Config wires a Registry.
type Config struct {
	Store *store.Store
	// Box seals and opens the credentials.
	Box    *secrets.Box
	Logger *slog.Logger
	// Outbound is the policy VIM verification goes through (nil: the zero
	// policy, which refuses loopback and private addresses).
	Outbound *outbound.Policy
}

// New returns the registry.
func New(c Config) *Registry {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Outbound == nil {
		c.Outbound = &outbound.Policy{}
	}
	return &Registry{st: c.Store, box: c.Box, log: c.Logger.With("component", "vims"), outbound: c.Outbound}
}

var _ driverapi.VimRegistry = (*Registry)(nil)

// The VIM registry: Tacker's legacy /v1.0/vims resource. A VIM is stored in
// vims (what may be shown) and vim_auths (credentials: every auth_cred value
// except plain identifiers sealed with the current secrets key, whose id is
// recorded). Registration verifies the credentials against the VIM unless
// the caller opts out. Instantiate resolves vimConnectionInfo entries that
// name a VIM by vimId into full access data (resolveVims).

// vimConnectionInfo.vimType of the VIMs in the registry (driverapi's).
const (
	VimTypeOpenStack  = driverapi.VimTypeOpenStack
	VimTypeKubernetes = driverapi.VimTypeKubernetes
)

// NormalizeVimType is driverapi.NormalizeVimType.
func NormalizeVimType(t string) string { return driverapi.NormalizeVimType(t) }

// VIM status values.
const (
	VimStatusActive     = "ACTIVE"     // verified at registration or last credential change
	VimStatusUnverified = "UNVERIFIED" // registered with verification skipped
)

func vimTypeOf(v *store.Vim) string {
	if v.Type == store.VimKubernetes {
		return VimTypeKubernetes
	}
	return VimTypeOpenStack
}

// publicCredKeys are the auth_cred keys stored in the clear and shown by the
// API; every other auth_cred value is sealed and shown as secrets.Mask —
// oidc_token_url too, like every key secrets.IsSecretKey matches (a URL may
// carry a user and password).
var publicCredKeys = []string{
	"username", "user_id", "user_domain_name", "user_domain_id",
	"project_name", "project_id", "project_domain_name", "project_domain_id",
	"cert_verify", "ssl_ca_cert", "client_id", "auth_url",
}

// IsPublicCredKey reports whether an auth_cred value may be shown.
func IsPublicCredKey(key string) bool {
	return slices.Contains(publicCredKeys, key) && !secrets.IsSecretKey(key)
}

func notFoundVim(id string) *reqerr.Error {
	return errorf(KindNotFound, "VIM %s does not exist; list VIMs with GET /v1.0/vims (openstack vim list)", id)
}

// vimRequest is a decoded {"vim": {...}} member, with presence kept.
type vimRequest struct {
	fields map[string]any
}

// vimKeys are the attributes a register or set may carry (set accepts
// auth_url and type only unchanged).
var vimKeys = []string{"name", "description", "type", "auth_url", "vim_project", "auth_cred", "is_default", "extra", "tenant_id", "shared"}

func decodeVim(raw []byte, allowed []string) (*vimRequest, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errorf(KindInvalid, `request body: give the VIM as {"vim": {...}}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errorf(KindInvalid, `request body: "vim" must be a JSON object`)
	}
	var bad []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, errorf(KindInvalid, "vim: unsupported attribute(s) %s; supported: %s", strings.Join(bad, ", "), strings.Join(allowed, ", "))
	}
	return &vimRequest{fields: m}, nil
}

func (r *vimRequest) has(k string) bool { _, ok := r.fields[k]; return ok }

func (r *vimRequest) str(k string, max int) (string, error) {
	v, ok := r.fields[k]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", errorf(KindInvalid, "vim.%s must be a string", k)
	}
	if len(s) > max {
		return "", errorf(KindInvalid, "vim.%s is longer than %d characters", k, max)
	}
	return s, nil
}

func (r *vimRequest) obj(k string) (map[string]any, error) {
	v, ok := r.fields[k]
	if !ok || v == nil {
		return nil, nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return nil, errorf(KindInvalid, "vim.%s must be a JSON object", k)
	}
	if k == "auth_cred" || k == "vim_project" {
		// Credentials and project names are strings (Tacker's VIM files too: cert_verify 'True'/'False').
		for ck, cv := range m {
			switch cv.(type) {
			case string, bool, nil:
			default:
				return nil, errorf(KindInvalid, "vim.%s.%s must be a string", k, ck)
			}
		}
	}
	return m, nil
}

func (r *vimRequest) boolean(k string) (bool, error) {
	v, ok := r.fields[k]
	if !ok || v == nil {
		return false, nil
	}
	b, err := vim.Bool(v)
	if err != nil {
		return false, errorf(KindInvalid, "vim.%s must be true or false, not %v", k, v)
	}
	return b, nil
}

// takeVerify removes extra.verify and reports whether it asks to skip verification.
func takeVerify(extra map[string]any) (skip bool, err error) {
	if err := checkHostKeyPolicy(extra); err != nil {
		return false, err
	}
	v, ok := extra["verify"]
	if !ok {
		return false, nil
	}
	delete(extra, "verify")
	b, err := vim.Bool(v)
	if err != nil {
		return false, errorf(KindInvalid, "vim.extra.verify must be true or false, not %v", v)
	}
	return !b, nil
}

// HostKeyPolicyExtra is the extra key that sets the SSH host key policy of
// the VNFs on a VIM (published or tofu; requests may override it, see
// mgmtdrivers/kube.HostKeys); it is handed on in the VIM connection's extra.
const HostKeyPolicyExtra = "ssh_host_key_policy"

func checkHostKeyPolicy(extra map[string]any) error {
	v, ok := extra[HostKeyPolicyExtra]
	if !ok {
		return nil
	}
	s, _ := v.(string)
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "published", "tofu":
		extra[HostKeyPolicyExtra] = strings.ToLower(strings.TrimSpace(s))
		return nil
	case "pinned":
		return errorf(KindInvalid, "vim.extra.ssh_host_key_policy pinned cannot be a VIM's: the fingerprints are each node's; give them in a request (ssh_host_key_fingerprints), or say published or tofu")
	}
	return errorf(KindInvalid, "vim.extra.ssh_host_key_policy must be published or tofu, not %v", v)
}

func checkAuthURL(s string) error {
	if s == "" {
		return errorf(KindInvalid, "vim.auth_url is required (Keystone URL such as http://host/identity/v3, or the Kubernetes API server URL such as https://host:6443)")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errorf(KindInvalid, "vim.auth_url %q is not an http(s) URL with a host", s)
	}
	return nil
}

// checkAccess validates vim_project and auth_cred for the VIM type.
func checkAccess(typ string, project, cred map[string]any) error {
	if cred == nil {
		return errorf(KindInvalid, "vim.auth_cred is required")
	}
	if v, ok := cred["cert_verify"]; ok {
		if _, err := vim.Bool(v); err != nil {
			return errorf(KindInvalid, "vim.auth_cred.cert_verify must be True or False, not %v", v)
		}
	}
	var err error
	switch typ {
	case store.VimOpenStack:
		_, err = vim.OpenStackAuth(project, cred)
	case store.VimKubernetes:
		_, err = vim.KubernetesAuthKind(cred)
	}
	var ve *vim.Error
	if errors.As(err, &ve) {
		return errorf(KindInvalid, "%s", ve.Detail)
	}
	return err
}

// verifyCred is what verification and vimConnectionInfo use: auth_cred plus,
// for Kubernetes VIMs registered by the CLI (which sends no cert_verify),
// extra.cert_verify.
func verifyCred(cred, extra map[string]any) map[string]any {
	out := maps.Clone(cred)
	if _, ok := out["cert_verify"]; !ok {
		if v, ok := extra["cert_verify"]; ok {
			out["cert_verify"] = v
		}
	}
	return out
}

// verifyVim runs the registration check and returns the status and placement.
func (s *Registry) verify(ctx context.Context, name, typ, authURL string, project, cred, extra map[string]any, skip bool) (string, map[string]any, error) {
	regions := []string{}
	if skip {
		// Not verified, but not unusable either: an address the policy
		// refuses (a literal one: no name is resolved offline) would fail
		// every operation on the VIM.
		if err := s.checkLiteral(authURL); err != nil {
			return "", nil, errorf(KindInvalid, "VIM %q: auth_url: %v (%s)", name, err, refusedHint)
		}
		if tok := vim.Str(cred, "oidc_token_url"); typ == store.VimKubernetes && tok != "" {
			if err := s.checkLiteral(tok); err != nil {
				return "", nil, errorf(KindInvalid, "VIM %q: auth_cred.oidc_token_url: %v (%s)", name, err, refusedHint)
			}
		}
		if ns := vim.Str(project, "name"); typ == store.VimKubernetes && ns != "" {
			regions = append(regions, ns)
		}
		return VimStatusUnverified, map[string]any{"regions": regions}, nil
	}
	plain := verifyCred(cred, extra)
	res, err := vim.Verify(ctx, vim.Target{Type: typ, AuthURL: authURL, Project: project, Cred: plain, Outbound: s.outbound})
	var ve *vim.Error
	if errors.As(err, &ve) {
		detail := secrets.Scrub(ve.Detail, credValues(plain))
		s.log.Info("vim verification failed", "vim", name, "authUrl", authURL, "reason", detail)
		hint := "to register it offline, skip this check with POST /v1.0/vims?verify=false or \"verify\": false in vim.extra"
		var refused *outbound.RefusedError
		switch {
		case errors.As(err, &refused):
			hint = refusedHint // skipping the check would not help
		case typ == store.VimKubernetes:
			hint = "to register it offline, put extra: {verify: 'False'} in the VIM file (or use ?verify=false)"
		}
		return "", nil, errorf(KindInvalid, "VIM %q failed verification: %s (%s)", name, detail, hint)
	}
	if err != nil {
		return "", nil, err
	}
	regions = append(regions, res.Regions...)
	return VimStatusActive, map[string]any{"regions": regions}, nil
}

// refusedHint follows an outbound-policy refusal of a VIM's auth_url.
const refusedHint = "the VNFM would refuse every call to this VIM, verified or not: register it by an address the policy allows"

// checkLiteral applies the outbound-URL policy to an auth_url whose host is
// an IP address; a name is left to the connections (no lookup here).
func (s *Registry) checkLiteral(authURL string) error {
	u, err := url.Parse(strings.TrimSpace(authURL))
	if err != nil {
		return nil // the URL's own check reports it
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return s.outbound.Check(addr)
}

// credValues lists the secret string values of auth_cred, for secrets.Scrub.
func credValues(cred map[string]any) []string {
	var out []string
	for k, v := range cred {
		if s, ok := v.(string); ok && !IsPublicCredKey(k) && len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}

// CredPlace and ExtraPlace are where a VIM's sealed values live (auth_cred
// values each at CredPlace(id).Key(name)): bound to the VIM, a value
// cannot be copied into another VIM or field.
func CredPlace(id string) secrets.Place  { return secrets.At("vims/" + id + "/auth_cred") }
func ExtraPlace(id string) secrets.Place { return secrets.At("vims/" + id + "/extra") }

// sealCred seals every auth_cred value whose key is not public.
func (s *Registry) sealCred(id string, cred map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(cred))
	for k, v := range cred {
		if IsPublicCredKey(k) || v == nil {
			out[k] = v
			continue
		}
		if str, ok := v.(string); ok && secrets.IsSealed(str) {
			// Kept only if it was sealed for this VIM and field.
			r, _, err := s.box.Reseal(str, CredPlace(id).Key(k))
			if err != nil {
				return nil, fmt.Errorf("vim credentials: %w", err)
			}
			out[k] = r
			continue
		}
		sealed, err := s.box.SealValue(v, CredPlace(id).Key(k))
		if err != nil {
			return nil, err
		}
		out[k] = sealed
	}
	return out, nil
}

// openCred reverses sealCred.
func (s *Registry) openCred(id string, cred map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(cred))
	for k, v := range cred {
		str, ok := v.(string)
		if !ok || !secrets.IsSealed(str) {
			out[k] = v
			continue
		}
		plain, err := s.box.OpenValue(str, CredPlace(id).Key(k))
		if err != nil {
			return nil, fmt.Errorf("vim credentials: %w", err)
		}
		out[k] = plain
	}
	return out, nil
}

func (s *Registry) sealExtra(id string, extra map[string]any) (map[string]any, error) {
	if extra == nil {
		return map[string]any{}, nil
	}
	v, err := s.box.SealDoc(extra, ExtraPlace(id))
	if err != nil {
		return nil, fmt.Errorf("vim extra: %w", err)
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// Register registers a VIM from the member of a {"vim": {...}} body
// (Tacker's shape). Unless verify is false or vim.extra.verify is false, the
// credentials are checked against the VIM first.
func (s *Registry) Register(ctx context.Context, raw []byte, verify bool) (*store.Vim, error) {
	r, err := decodeVim(raw, vimKeys)
	if err != nil {
		return nil, err
	}
	v := &store.Vim{ID: uuid.NewString()}
	if v.Name, err = r.str("name", 255); err != nil {
		return nil, err
	}
	if strings.TrimSpace(v.Name) == "" {
		return nil, errorf(KindInvalid, "vim.name is required")
	}
	if v.Description, err = r.str("description", 1024); err != nil {
		return nil, err
	}
	if v.TenantID, err = r.str("tenant_id", 255); err != nil {
		return nil, err
	}
	if v.Type, err = r.str("type", 32); err != nil {
		return nil, err
	}
	if v.Type == "" {
		v.Type = store.VimOpenStack // Tacker's default
	}
	if v.Type != store.VimOpenStack && v.Type != store.VimKubernetes {
		return nil, errorf(KindInvalid, "vim.type %q is not supported; use openstack or kubernetes", v.Type)
	}
	if v.AuthURL, err = r.str("auth_url", 2048); err != nil {
		return nil, err
	}
	if err := checkAuthURL(v.AuthURL); err != nil {
		return nil, err
	}
	if v.VimProject, err = r.obj("vim_project"); err != nil {
		return nil, err
	}
	if v.VimProject == nil {
		v.VimProject = map[string]any{}
	}
	cred, err := r.obj("auth_cred")
	if err != nil {
		return nil, err
	}
	if err := checkAccess(v.Type, v.VimProject, cred); err != nil {
		return nil, err
	}
	if v.IsDefault, err = r.boolean("is_default"); err != nil {
		return nil, err
	}
	if v.Shared, err = r.boolean("shared"); err != nil {
		return nil, err
	}
	extra, err := r.obj("extra")
	if err != nil {
		return nil, err
	}
	extra = maps.Clone(extra)
	skip, err := takeVerify(extra)
	if err != nil {
		return nil, err
	}
	if v.Status, v.PlacementAttr, err = s.verify(ctx, v.Name, v.Type, v.AuthURL, v.VimProject, cred, extra, skip || !verify); err != nil {
		return nil, err
	}
	return s.create(ctx, v, cred, extra)
}

func (s *Registry) create(ctx context.Context, v *store.Vim, cred, extra map[string]any) (*store.Vim, error) {
	sealed, err := s.sealCred(v.ID, cred)
	if err != nil {
		return nil, err
	}
	if v.Extra, err = s.sealExtra(v.ID, extra); err != nil {
		return nil, err
	}
	v.Auth = store.VimAuth{AuthURL: v.AuthURL, VimProject: v.VimProject, AuthCred: sealed, KeyID: s.box.KeyID()}
	out, err := s.st.CreateVim(ctx, v)
	if err != nil {
		return nil, fromStore(err, "")
	}
	s.log.Info("vim registered", "vimId", out.ID, "name", out.Name, "type", out.Type, "authUrl", out.AuthURL, "status", out.Status, "default", out.IsDefault)
	return out, nil
}

// Get reads a VIM (credentials sealed).
func (s *Registry) Get(ctx context.Context, id string) (*store.Vim, error) {
	if !validID(id) {
		return nil, notFoundVim(id)
	}
	v, err := s.st.GetVim(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundVim(id)
	}
	return v, err
}

// List lists VIMs (credentials sealed).
func (s *Registry) List(ctx context.Context, f store.VimFilter) ([]*store.Vim, error) {
	return s.st.ListVims(ctx, f)
}

// Update applies a `vim set` ({"vim": {...}} member): name, description,
// is_default, vim_project, auth_cred and extra may change; auth_url and type
// may only be repeated. A new auth_cred replaces the stored one, except that
// values given as "" or as the mask "******" keep the stored value (a shown
// VIM can be sent back). Changed access data is verified as on registration.
func (s *Registry) Update(ctx context.Context, id string, raw []byte, verify bool) (*store.Vim, error) {
	r, err := decodeVim(raw, vimKeys)
	if err != nil {
		return nil, err
	}
	cur, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	if r.has("name") {
		if next.Name, err = r.str("name", 255); err != nil {
			return nil, err
		}
		if strings.TrimSpace(next.Name) == "" {
			return nil, errorf(KindInvalid, "vim.name must not be empty")
		}
	}
	if r.has("description") {
		if next.Description, err = r.str("description", 1024); err != nil {
			return nil, err
		}
	}
	if r.has("tenant_id") {
		if next.TenantID, err = r.str("tenant_id", 255); err != nil {
			return nil, err
		}
	}
	if r.has("auth_url") {
		u, err := r.str("auth_url", 2048)
		if err != nil {
			return nil, err
		}
		if u != cur.AuthURL {
			return nil, errorf(KindInvalid, "vim.auth_url cannot change (it is %s); register a new VIM for another endpoint", cur.AuthURL)
		}
	}
	if r.has("type") {
		t, err := r.str("type", 32)
		if err != nil {
			return nil, err
		}
		if t != cur.Type {
			return nil, errorf(KindInvalid, "vim.type cannot change (VIM %s is a %s VIM)", cur.Name, cur.Type)
		}
	}
	if r.has("is_default") {
		if next.IsDefault, err = r.boolean("is_default"); err != nil {
			return nil, err
		}
	}
	if r.has("shared") {
		if next.Shared, err = r.boolean("shared"); err != nil {
			return nil, err
		}
	}
	// Stored secrets are opened only when the access data changes, so that a
	// rename works even if the key that sealed them is gone.
	accessChanged := r.has("vim_project") || r.has("auth_cred")
	var extra map[string]any
	skip := false
	if r.has("extra") {
		if extra, err = r.obj("extra"); err != nil {
			return nil, err
		}
		extra = maps.Clone(extra)
		if skip, err = takeVerify(extra); err != nil {
			return nil, err
		}
	} else if accessChanged {
		if extra, err = s.openExtra(id, cur.Extra); err != nil {
			return nil, err
		}
	}
	auth := cur.Auth
	if accessChanged {
		oldCred, err := s.openCred(id, cur.Auth.AuthCred)
		if err != nil {
			return nil, err
		}
		cred := oldCred
		if r.has("vim_project") {
			p, err := r.obj("vim_project")
			if err != nil {
				return nil, err
			}
			if p == nil {
				p = map[string]any{}
			}
			next.VimProject = p
		}
		if r.has("auth_cred") {
			given, err := r.obj("auth_cred")
			if err != nil {
				return nil, err
			}
			cred = make(map[string]any, len(given))
			for k, v := range given {
				if str, ok := v.(string); ok && (str == "" || str == secrets.Mask) && oldCred[k] != nil {
					v = oldCred[k]
				}
				cred[k] = v
			}
		}
		if err := checkAccess(next.Type, next.VimProject, cred); err != nil {
			return nil, err
		}
		if next.Status, next.PlacementAttr, err = s.verify(ctx, next.Name, next.Type, next.AuthURL, next.VimProject, cred, extra, skip || !verify); err != nil {
			return nil, err
		}
		sealed, err := s.sealCred(id, cred)
		if err != nil {
			return nil, err
		}
		auth = store.VimAuth{AuthURL: cur.AuthURL, VimProject: next.VimProject, AuthCred: sealed, KeyID: s.box.KeyID()}
	}
	var sealedExtra map[string]any
	if r.has("extra") {
		if sealedExtra, err = s.sealExtra(id, extra); err != nil {
			return nil, err
		}
	}
	out, err := s.st.UpdateVim(ctx, id, func(v *store.Vim) error {
		if !v.UpdatedAt.Equal(cur.UpdatedAt) {
			return &store.ConflictError{Reason: fmt.Sprintf("VIM %s changed while this update was verified; send the update again", id)}
		}
		v.Name, v.Description, v.TenantID, v.IsDefault, v.Shared = next.Name, next.Description, next.TenantID, next.IsDefault, next.Shared
		v.Status, v.PlacementAttr, v.VimProject, v.Auth = next.Status, next.PlacementAttr, next.VimProject, auth
		if r.has("extra") {
			v.Extra = sealedExtra
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundVim(id)
	}
	if err != nil {
		return nil, fromStore(err, "")
	}
	s.log.Info("vim updated", "vimId", out.ID, "name", out.Name, "status", out.Status, "default", out.IsDefault, "accessChanged", accessChanged)
	return out, nil
}

func (s *Registry) openExtra(id string, extra map[string]any) (map[string]any, error) {
	v, err := s.box.OpenDoc(extra, ExtraPlace(id))
	if err != nil {
		return nil, fmt.Errorf("vim extra: %w", err)
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// Delete deletes a VIM; 409 while a VNF instance or an unfinished
// operation refers to it by vimId.
func (s *Registry) Delete(ctx context.Context, id string) error {
	if !validID(id) {
		return notFoundVim(id)
	}
	if err := s.st.DeleteVim(ctx, id); err != nil {
		return fromStore(err, notFoundVim(id).Detail)
	}
	s.log.Info("vim deleted", "vimId", id)
	return nil
}

// RegisterKubernetesVim (driverapi.VimRegistry) registers (or, by name,
// updates) a Kubernetes VIM for a management driver. It is idempotent: registering the same name and
// auth_url again updates the credentials and returns the same VIM; a VIM of
// that name with another type or auth_url is a conflict.
func (s *Registry) RegisterKubernetesVim(ctx context.Context, k driverapi.KubernetesVim) (vimID string, err error) {
	v, err := s.registerKubernetes(ctx, k)
	if err != nil {
		return "", err
	}
	return v.ID, nil
}

func (s *Registry) registerKubernetes(ctx context.Context, k driverapi.KubernetesVim) (*store.Vim, error) {
	if strings.TrimSpace(k.Name) == "" {
		return nil, errorf(KindInvalid, "kubernetes vim: name is required")
	}
	if err := checkAuthURL(k.AuthURL); err != nil {
		return nil, err
	}
	if k.BearerToken == "" {
		return nil, errorf(KindInvalid, "kubernetes vim %s: bearer token is required", k.Name)
	}
	cred := map[string]any{"bearer_token": k.BearerToken}
	if k.SSLCACert != "" {
		cred["ssl_ca_cert"] = k.SSLCACert
	}
	if k.Insecure {
		cred["cert_verify"] = "False"
	}
	project := map[string]any{"name": k.Namespace}
	body := map[string]any{"name": k.Name, "description": k.Description, "type": store.VimKubernetes, "auth_url": k.AuthURL,
		"vim_project": project, "auth_cred": cred, "extra": k.Extra}
	for attempt := 0; attempt < 3; attempt++ {
		cur, err := s.st.GetVimByName(ctx, k.Name)
		if errors.Is(err, store.ErrNotFound) {
			raw, _ := json.Marshal(body)
			v, err := s.Register(ctx, raw, k.Verify)
			var ce *store.ConflictError
			if errors.As(err, &ce) && attempt < 2 {
				continue // registered concurrently: update it instead
			}
			return v, err
		}
		if err != nil {
			return nil, err
		}
		if cur.Type != store.VimKubernetes || cur.AuthURL != k.AuthURL {
			return nil, errorf(KindConflict, "a VIM named %q already exists for %s (%s); choose another vim_name", k.Name, cur.AuthURL, cur.Type)
		}
		upd := map[string]any{"description": k.Description, "vim_project": project, "auth_cred": cred}
		if k.Extra != nil {
			upd["extra"] = k.Extra
		}
		raw, _ := json.Marshal(upd)
		v, err := s.Update(ctx, cur.ID, raw, k.Verify)
		var le *reqerr.Error
		if errors.As(err, &le) && le.Kind == KindConflict && strings.Contains(le.Detail, "changed while") && attempt < 2 {
			continue
		}
		return v, err
	}
	return nil, errorf(KindConflict, "kubernetes vim %s: concurrent updates, try again", k.Name)
}

// RemoveKubernetesVim deletes the VIM of that name, if any. References from
// the owner instance (the one whose driver registered it) do not block the
// deletion; references from other instances do (409).
func (s *Registry) RemoveKubernetesVim(ctx context.Context, name, ownerInstanceID string) error {
	v, err := s.st.GetVimByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var except []string
	if ownerInstanceID != "" {
		except = append(except, ownerInstanceID)
	}
	if err := s.st.DeleteVim(ctx, v.ID, except...); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fromStore(err, "")
	}
	s.log.Info("vim removed", "vimId", v.ID, "name", name)
	return nil
}

// VimUsers (driverapi.VimRegistry) describes who refers to the VIM of that
// name besides the owner instance: "VNF instance <id>" for instances,
// "LCM operation occurrence <id>" for unfinished operations naming it. None
// when there is no such VIM.
func (s *Registry) VimUsers(ctx context.Context, name, ownerInstanceID string) ([]string, error) {
	v, err := s.st.GetVimByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	insts, ops, err := s.st.VimUsers(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range insts {
		if !strings.EqualFold(id, ownerInstanceID) {
			out = append(out, "VNF instance "+id)
		}
	}
	for _, id := range ops {
		out = append(out, "LCM operation occurrence "+id)
	}
	return out, nil
}

// RotateKeys re-seals the credentials (and sealed extra values) of every
// VIM that a key other than the current one sealed, and returns how many it
// changed. Afterwards no VIM needs an old key.
func (s *Registry) RotateKeys(ctx context.Context) (int, error) {
	all, err := s.st.ListVims(ctx, store.VimFilter{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range all {
		changed := false
		_, err := s.st.UpdateVim(ctx, v.ID, func(v *store.Vim) error {
			cred, c1, err := s.box.ResealDoc(v.Auth.AuthCred, CredPlace(v.ID))
			if err != nil {
				return fmt.Errorf("vim %s credentials: %w", v.ID, err)
			}
			extra, c2, err := s.box.ResealDoc(v.Extra, ExtraPlace(v.ID))
			if err != nil {
				return fmt.Errorf("vim %s extra: %w", v.ID, err)
			}
			changed = c1 || c2 || v.Auth.KeyID != s.box.KeyID()
			v.Auth.AuthCred, _ = cred.(map[string]any)
			v.Extra, _ = extra.(map[string]any)
			v.Auth.KeyID = s.box.KeyID()
			return nil
		})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// Resolve completes the vimConnectionInfo of an instantiate request:
//   - an entry with vimId gets vimType, interfaceInfo and accessInfo from the
//     registered VIM and its decrypted credentials (hints given in the entry,
//     e.g. a region, are layered on top; what would send the credentials
//     elsewhere or weaken TLS for them is refused: checkBinding);
//   - an entry with inline accessInfo passes through;
//   - an entry with neither uses the default VIM if its type matches (with
//     the same checkBinding rule);
//   - an empty request gets the default VIM (none: nil, no error).
//
// vimType names are normalized (NormalizeVimType). The result holds
// plaintext secrets: the engine seals them before storage, the API masks them.
func (s *Registry) Resolve(ctx context.Context, req []model.VimConnectionInfo) ([]model.VimConnectionInfo, error) {
	var def *store.Vim
	defaultVim := func() (*store.Vim, error) {
		if def != nil {
			return def, nil
		}
		v, err := s.st.DefaultVim(ctx)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		def = v
		return v, err
	}
	if len(req) == 0 {
		v, err := defaultVim()
		if v == nil || err != nil {
			return nil, err
		}
		c, err := s.vimConnection(v, model.VimConnectionInfo{}, -1)
		if err != nil {
			return nil, err
		}
		return []model.VimConnectionInfo{c}, nil
	}
	out := make([]model.VimConnectionInfo, 0, len(req))
	for i, c := range req {
		switch {
		case c.VimID != "":
			v, err := s.st.GetVim(ctx, c.VimID)
			if errors.Is(err, store.ErrNotFound) {
				return nil, errorf(KindInvalid, "vimConnectionInfo[%d].vimId %s is not a registered VIM; register it with POST /v1.0/vims (openstack vim register) or pick one from GET /v1.0/vims", i, c.VimID)
			}
			if err != nil {
				return nil, err
			}
			rc, err := s.vimConnection(v, c, i)
			if err != nil {
				return nil, err
			}
			out = append(out, rc)
		case len(c.AccessInfo) > 0:
			if err := s.checkSupplied(ctx, c, i); err != nil {
				return nil, err
			}
			c.VimType = NormalizeVimType(c.VimType)
			out = append(out, c)
		default:
			v, err := defaultVim()
			if err != nil {
				return nil, err
			}
			if v != nil && (c.VimType == "" || NormalizeVimType(c.VimType) == vimTypeOf(v)) {
				rc, err := s.vimConnection(v, c, i)
				if err != nil {
					return nil, err
				}
				out = append(out, rc)
				continue
			}
			c.VimType = NormalizeVimType(c.VimType)
			out = append(out, c)
		}
	}
	return out, nil
}

// vimConnection builds the vimConnectionInfo of a registered VIM, layering
// what the request entry gives on top.
func (s *Registry) vimConnection(v *store.Vim, c model.VimConnectionInfo, i int) (model.VimConnectionInfo, error) {
	typ := vimTypeOf(v)
	if c.VimType != "" && NormalizeVimType(c.VimType) != typ {
		return c, errorf(KindInvalid, "vimConnectionInfo[%d].vimType %q does not match VIM %s (%s), which is a %s VIM (vimType %s)", i, c.VimType, v.Name, v.ID, v.Type, typ)
	}
	cred, err := s.openCred(v.ID, v.Auth.AuthCred)
	if err != nil {
		return c, fmt.Errorf("vim %s (%s): %w", v.Name, v.ID, err)
	}
	extra, err := s.openExtra(v.ID, v.Extra)
	if err != nil {
		return c, err
	}
	cred = verifyCred(cred, extra)
	iface := map[string]any{"endpoint": v.Auth.AuthURL}
	if ca := vim.Str(cred, "ssl_ca_cert"); ca != "" {
		iface["ssl_ca_cert"] = ca
	}
	if cv, ok := cred["cert_verify"]; ok {
		if b, err := vim.Bool(cv); err == nil && !b {
			iface["skipCertificateVerification"] = true
		}
	}
	access := map[string]any{}
	var vcExtra map[string]any
	switch v.Type {
	case store.VimOpenStack:
		k, err := vim.OpenStackAuth(v.Auth.VimProject, cred)
		if err != nil {
			return c, fmt.Errorf("vim %s (%s): stored credentials: %w", v.Name, v.ID, err)
		}
		set := func(key, val string) {
			if val != "" {
				access[key] = val
			}
		}
		set("username", k.Username)
		set("userId", k.UserID)
		set("password", k.Password)
		set("userDomain", k.UserDomainName)
		set("userDomainId", k.UserDomainID)
		set("project", k.ProjectName)
		set("projectId", k.ProjectID)
		set("projectDomain", k.ProjectDomainName)
		set("projectDomainId", k.ProjectDomainID)
		if regions, _ := v.PlacementAttr["regions"].([]any); len(regions) == 1 {
			if r, ok := regions[0].(string); ok {
				access["region"] = r
			}
		}
	case store.VimKubernetes:
		for key, val := range cred {
			switch key {
			case "ssl_ca_cert", "cert_verify", "auth_url", "project_name", "project_id":
			default:
				access[key] = val
			}
		}
		if ns := vim.Str(v.Auth.VimProject, "name"); ns != "" {
			vcExtra = map[string]any{"namespace": ns}
		}
	}
	if err := checkBinding(v, c, i, iface); err != nil {
		return c, err
	}
	if pol := vim.Str(extra, HostKeyPolicyExtra); pol != "" {
		if vcExtra == nil {
			vcExtra = map[string]any{}
		}
		vcExtra[HostKeyPolicyExtra] = pol
	}
	out := model.VimConnectionInfo{ID: c.ID, VimID: v.ID, VimType: typ, InterfaceInfo: iface, AccessInfo: access, Extra: vcExtra}
	if out.ID == "" {
		out.ID = v.ID
	}
	for _, layer := range []struct {
		dst *map[string]any
		src map[string]any
	}{{&out.InterfaceInfo, c.InterfaceInfo}, {&out.AccessInfo, c.AccessInfo}, {&out.Extra, c.Extra}} {
		if len(layer.src) == 0 {
			continue
		}
		if *layer.dst == nil {
			*layer.dst = map[string]any{}
		}
		maps.Copy(*layer.dst, layer.src)
	}
	return out, nil
}

// checkSupplied applies the outbound-URL policy to the endpoint of an entry
// that brings its own credentials: the VNFM connects there on the client's
// behalf, like a notification callback, so a metadata or (by configuration)
// loopback or private address is refused now, with 422 naming the field. The
// infra driver checks again at every connection (internal/infra/openstack:
// Options.Outbound), including the endpoints of the catalog that Keystone
// returns.
func (s *Registry) checkSupplied(ctx context.Context, c model.VimConnectionInfo, i int) error {
	for _, sec := range []struct {
		name string
		m    map[string]any
	}{{"interfaceInfo", c.InterfaceInfo}, {"accessInfo", c.AccessInfo}} {
		for _, k := range append(slices.Clone(endpointKeys), oidcTokenURL) {
			u, ok := sec.m[k].(string)
			if !ok || strings.TrimSpace(u) == "" {
				continue
			}
			if err := s.outbound.CheckURL(ctx, strings.TrimSpace(u)); err != nil {
				return errorf(KindUnprocessable, "vimConnectionInfo[%d].%s.%s: %v", i, sec.name, k, err)
			}
		}
	}
	return nil
}

// The keys of vimConnectionInfo that say where a VIM's credentials go and how
// the server checks who answers there, in every spelling a driver reads
// (internal/infra/openstack accessOf). For a registered VIM they come from
// the registry only.
var (
	endpointKeys = []string{"endpoint", "authUrl", "auth_url"}
	// oidcTokenURL is where a Kubernetes VIM's OIDC credentials go (the
	// password grant), also on the client's behalf.
	oidcTokenURL = "oidc_token_url"
	caCertKeys   = []string{"ssl_ca_cert", "caCert", "cacert", "sslCaCert"}
	certVerify   = []string{"cert_verify", "certVerify"}
	skipVerify   = "skipCertificateVerification"
	// regionKeys are the one hint accessInfo may carry next to stored credentials.
	regionKeys = []string{"region", "regionName", "region_name"}
	// identityKeys say who the credentials log in as and which project they
	// are scoped to. The OpenStack driver reads them from accessInfo and,
	// where accessInfo lacks one, from interfaceInfo (an id beats a name), so
	// a request could otherwise scope a VIM's stored user to another
	// project (interfaceInfo.projectId) or pair its password with another user.
	identityKeys = []string{"username", "userName", "user_name", "userId", "user_id",
		"userDomain", "userDomainName", "user_domain_name", "userDomainId", "user_domain_id",
		"project", "projectName", "project_name", "tenant", "projectId", "project_id", "tenantId", "tenant_id",
		"projectDomain", "projectDomainName", "project_domain_name", "projectDomainId", "project_domain_id",
		"password", "token", "bearer_token", "client_secret"}
)

// checkBinding keeps stored credentials bound to the VIM they were registered
// with: a request entry that uses them (vimId, or the default VIM) may repeat
// the registered endpoint and CA, ask for stricter TLS and pass hints (a
// region, extra, other interfaceInfo), but not send them elsewhere, trust
// another CA, skip certificate checks, log in as another user or project
// (identity keys in interfaceInfo), or add or replace accessInfo values (a
// request with its own credentials gives accessInfo without vimId, and then
// only those are used). iface is the registered interfaceInfo.
func checkBinding(v *store.Vim, c model.VimConnectionInfo, i int, iface map[string]any) error {
	which := fmt.Sprintf("VIM %s (%s)", v.Name, v.ID)
	if c.VimID == "" {
		which = fmt.Sprintf("the default VIM %s (%s)", v.Name, v.ID)
	}
	field := func(section, k string) string { return fmt.Sprintf("vimConnectionInfo[%d].%s.%s", i, section, k) }
	refuse := func(section, k, why string) error {
		return errorf(KindUnprocessable, "%s: this entry uses the stored credentials of %s, which go only to its registered endpoint %s with its TLS settings; %s. "+
			"Drop %s, or give your own credentials in accessInfo (with interfaceInfo.endpoint) and no vimId",
			field(section, k), which, v.Auth.AuthURL, why, field(section, k))
	}
	for _, sec := range []struct {
		name string
		m    map[string]any
	}{{"interfaceInfo", c.InterfaceInfo}, {"accessInfo", c.AccessInfo}} {
		for _, k := range slices.Sorted(maps.Keys(sec.m)) {
			val := sec.m[k]
			switch {
			case slices.Contains(regionKeys, k):
			case slices.Contains(endpointKeys, k):
				s, _ := val.(string)
				if strings.TrimRight(strings.TrimSpace(s), "/") != strings.TrimRight(v.Auth.AuthURL, "/") {
					return refuse(sec.name, k, fmt.Sprintf("the request names the endpoint %v", val))
				}
			case slices.Contains(caCertKeys, k):
				s, _ := val.(string)
				if reg, _ := iface["ssl_ca_cert"].(string); strings.TrimSpace(s) != strings.TrimSpace(reg) {
					return refuse(sec.name, k, "a request cannot make the server trust another CA for them")
				}
			case k == skipVerify:
				if on, err := vim.Bool(val); err != nil || (on && iface[skipVerify] != true) {
					return refuse(sec.name, k, "a request cannot turn certificate verification off for them")
				}
			case slices.Contains(certVerify, k):
				if on, err := vim.Bool(val); err != nil || (!on && iface[skipVerify] != true) {
					return refuse(sec.name, k, "a request cannot turn certificate verification off for them")
				}
			case sec.name == "accessInfo":
				return refuse(sec.name, k, "a request cannot add to or replace them (only a region may be given)")
			case slices.Contains(identityKeys, k):
				return refuse(sec.name, k, "a request cannot choose the user or project they log in as")
			}
		}
	}
	return nil
}

func errorf(k reqerr.Kind, format string, a ...any) *reqerr.Error {
	return reqerr.Errorf(k, format, a...)
}

// Kinds of refused requests, as reqerr names them.
const (
	KindInvalid       = reqerr.Invalid
	KindNotFound      = reqerr.NotFound
	KindConflict      = reqerr.Conflict
	KindUnprocessable = reqerr.Unprocessable
)

// fromStore converts store errors into request errors.
func fromStore(err error, what string) error {
	var ce *store.ConflictError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return &reqerr.Error{Kind: reqerr.NotFound, Detail: what, Err: err}
	case errors.As(err, &ce):
		return &reqerr.Error{Kind: reqerr.Conflict, Detail: ce.Reason, Err: err}
	}
	return err
}

func validID(id string) bool { _, err := uuid.Parse(id); return err == nil && len(id) == 36 }
