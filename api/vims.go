package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
	"github.com/mini-vnfm/mini-vnfm/internal/vims"
)

// The VIM registry: Tacker's legacy NFVO resource /v1.0/vims, which the
// Tacker CLI (`openstack vim register|list|show|set|delete`) calls with a
// ".json" suffix and without a Version header. Bodies are {"vim": {...}} and
// {"vims": [...]}; credentials are never returned (masked as "******"). It is
// not part of SOL003 and has no OpenAPI description: the handlers validate
// bodies themselves, errors are ProblemDetails as everywhere else.

const vimsPath = "/v1.0/vims"

// vimRoutes registers /v1.0/vims[.json] and /v1.0/vims/{id}[.json]. Bodies
// are read and checked as JSON (readJSON); there is no Version header to
// check and no OpenAPI description to validate against.
func (a *API) vimRoutes(r chi.Router, h *routeTable) {
	r.Group(func(r chi.Router) {
		r.Use(a.readJSON)
		collection := methods{http.MethodGet: a.listVims, http.MethodPost: a.registerVim}
		h.handle(r, vimsPath, collection)
		h.handle(r, vimsPath+".json", collection)
		h.handle(r, vimsPath+"/{id}", methods{http.MethodGet: a.showVim, http.MethodPut: a.updateVim, http.MethodDelete: a.deleteVim})
		h.handle(r, vimsPath+"/{id}/kubeconfig", methods{http.MethodGet: a.vimKubeconfig})
	})
}

// vimKubeconfig serves a Kubernetes VIM's kubeconfig (its credentials in the
// clear: the scope vim:kubeconfig, which nothing else implies, guards it),
// never cached, and records who fetched it.
func (a *API) vimKubeconfig(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	b, v, err := a.vims.Kubeconfig(r.Context(), vimID(r))
	who, method := "anonymous", ""
	if p := auth.FromContext(r.Context()); p != nil {
		who, method = p.Name, string(p.Method)
	}
	if err != nil {
		if v != nil {
			a.log.Warn("audit: kubeconfig refused", "audit", true, "vimId", v.ID, "principal", who, "authMethod", method, "remote", r.RemoteAddr, "err", err)
		}
		a.writeProblem(w, r, err)
		return
	}
	a.log.Info("audit: kubeconfig issued", "audit", true, "vimId", v.ID, "vimName", v.Name, "authUrl", v.AuthURL,
		"principal", who, "authMethod", method, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", `attachment; filename="vim-`+v.ID+`.kubeconfig"`)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// vimID is the {id} path segment without the ".json" the legacy client appends.
func vimID(r *http.Request) string {
	return strings.TrimSuffix(chi.URLParam(r, "id"), ".json")
}

// vimDoc renders a VIM as Tacker shows it. auth_cred keeps only public
// values (user and domain names, cert_verify, ssl_ca_cert, …); every other
// credential is "******".
func vimDoc(v *store.Vim) map[string]any {
	cred := make(map[string]any, len(v.Auth.AuthCred))
	for k, val := range v.Auth.AuthCred {
		s, isStr := val.(string)
		if vims.IsPublicCredKey(k) && !(isStr && secrets.IsSealed(s)) {
			cred[k] = val
		} else {
			cred[k] = secrets.Mask
		}
	}
	return toDoc(map[string]any{
		"id":             v.ID,
		"name":           v.Name,
		"description":    v.Description,
		"type":           v.Type,
		"tenant_id":      v.TenantID,
		"auth_url":       v.AuthURL,
		"vim_project":    v.VimProject,
		"auth_cred":      cred,
		"placement_attr": v.PlacementAttr,
		"is_default":     v.IsDefault,
		"shared":         v.Shared,
		"status":         v.Status,
		"extra":          v.Extra, // sealed values sit under secret-named keys: toDoc masks them
		"created_at":     v.CreatedAt.UTC().Format(time.RFC3339),
		"updated_at":     v.UpdatedAt.UTC().Format(time.RFC3339),
	})
}

// selectFields applies the legacy ?fields=a&fields=b selector (the CLI's
// name/id lookups send fields=id); unknown names are ignored.
func selectFields(doc map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return doc
	}
	out := map[string]any{}
	for _, f := range fields {
		for _, name := range strings.Split(f, ",") {
			if v, ok := doc[strings.TrimSpace(name)]; ok {
				out[strings.TrimSpace(name)] = v
			}
		}
	}
	return out
}

// vimBody unwraps {"vim": {...}}.
func vimBody(r *http.Request) ([]byte, error) {
	raw := bodyOf(r)
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, problemf(http.StatusBadRequest, `request body is empty; send {"vim": {...}}`)
	}
	var wrapper map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wrapper); err != nil || wrapper == nil {
		return nil, problemf(http.StatusBadRequest, `request body must be a JSON object {"vim": {...}}`)
	}
	inner, ok := wrapper["vim"]
	if !ok || len(wrapper) != 1 {
		return nil, problemf(http.StatusBadRequest, `request body must be {"vim": {...}} with the VIM attributes inside "vim"`)
	}
	if t := bytes.TrimSpace(inner); len(t) == 0 || t[0] != '{' {
		return nil, problemf(http.StatusBadRequest, `request body: "vim" must be a JSON object`)
	}
	return inner, nil
}

// verifyParam reads ?verify=true|false (default true).
func verifyParam(q url.Values) (bool, error) {
	vs, ok := q["verify"]
	if !ok {
		return true, nil
	}
	if len(vs) != 1 {
		return false, problemf(http.StatusBadRequest, "give the verify parameter once")
	}
	b, err := vim.Bool(vs[0])
	if err != nil {
		return false, problemf(http.StatusBadRequest, "verify must be true or false, not "+vs[0])
	}
	return b, nil
}

func (a *API) registerVim(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyParams(q, "verify"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	verify, err := verifyParam(q)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	body, err := vimBody(r)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	v, err := a.vims.Register(r.Context(), body, verify)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", a.base+vimsPath+"/"+v.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"vim": vimDoc(v)})
}

func (a *API) listVims(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyParams(q, "id", "name", "type", "fields"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	vims, err := a.vims.List(r.Context(), store.VimFilter{IDs: q["id"], Names: q["name"], Types: q["type"]})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(vims))
	for _, v := range vims {
		out = append(out, selectFields(vimDoc(v), q["fields"]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"vims": out})
}

func (a *API) showVim(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyParams(q, "fields"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	v, err := a.vims.Get(r.Context(), vimID(r))
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"vim": selectFields(vimDoc(v), q["fields"])})
}

func (a *API) updateVim(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := onlyParams(q, "verify"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	verify, err := verifyParam(q)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	body, err := vimBody(r)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	v, err := a.vims.Update(r.Context(), vimID(r), body, verify)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"vim": vimDoc(v)})
}

func (a *API) deleteVim(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	if err := a.vims.Delete(r.Context(), vimID(r)); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
