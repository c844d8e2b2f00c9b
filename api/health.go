package api

import (
	"context"
	"net/http"
	"time"

	"github.com/mini-vnfm/mini-vnfm/openapi"
)

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready when the database answers and its schema is current.
func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := a.svc.Ready(ctx); err != nil {
		writeProblemDetails(w, problemDetails(http.StatusServiceUnavailable, "not ready: "+err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (a *API) apiVersions(prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := onlyParams(r.URL.Query()); err != nil {
			a.writeProblem(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"uriPrefix": prefix,
			"apiVersions": []map[string]any{{"version": APIVersion, "isDeprecated": false}}})
	}
}

func (a *API) openapiSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openapi.Spec())
}
