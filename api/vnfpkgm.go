package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/auth"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/openapi"
)

// Complex VnfPkgInfo attributes left out of lists unless asked for (SOL005).
var packageDefaultExcluded = [][]string{{"checksum"}, {"softwareImages"}, {"additionalArtifacts"}, {"userDefinedData"}, {"onboardingFailureDetails"}}

// packageFields is the attribute tree of VnfPkgInfo for filters and selectors.
var packageFields = func() *sol013.Field {
	str := func() *sol013.Field { return &sol013.Field{Kind: sol013.KindString} }
	free := func() *sol013.Field {
		return &sol013.Field{Kind: sol013.KindObject, FreeForm: true, Props: map[string]*sol013.Field{}}
	}
	checksum := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{"algorithm": str(), "hash": str()}}
	image := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"id": str(), "name": str(), "provider": str(), "version": str(), "checksum": checksum,
		"containerFormat": str(), "diskFormat": str(), "createdAt": {Kind: sol013.KindDateTime}, "minDisk": {Kind: sol013.KindNumber},
		"minRam": {Kind: sol013.KindNumber}, "size": {Kind: sol013.KindNumber}, "userMetadata": free(), "imagePath": str()}}
	artifact := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{"artifactPath": str(), "checksum": checksum, "metadata": free()}}
	return &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"id": str(), "vnfdId": str(), "vnfProvider": str(), "vnfProductName": str(), "vnfSoftwareVersion": str(),
		"vnfdVersion": str(), "checksum": checksum, "softwareImages": {Kind: sol013.KindArray, Elem: image},
		"additionalArtifacts": {Kind: sol013.KindArray, Elem: artifact}, "onboardingState": str(),
		"operationalState": str(), "usageState": str(), "userDefinedData": free(),
		"onboardingFailureDetails": {Kind: sol013.KindObject, FreeForm: true, Props: map[string]*sol013.Field{}},
	}}
}()

func (a *API) vnfpkgmRoutes(r chi.Router, h *routeTable) {
	if a.cfg.Packages == nil {
		return
	}
	p := "/vnfpkgm/v1/vnf_packages"
	r.Group(func(r chi.Router) {
		r.Use(a.readJSON)
		h.handle(r, p, methods{http.MethodGet: a.listPackages, http.MethodPost: a.createPackage})
		h.handle(r, p+"/{id}", methods{http.MethodGet: a.getPackage, http.MethodPatch: a.patchPackage, http.MethodDelete: a.deletePackage})
		h.handle(r, p+"/{id}/package_content/upload_from_uri", methods{http.MethodPost: a.uploadFromURI})
		h.handle(r, p+"/{id}/vnfd", methods{http.MethodGet: a.getVnfd})
		h.handle(r, p+"/{id}/artifacts/*", methods{http.MethodGet: a.getArtifact})
	})
	// The CSAR body is not JSON and may be large: read it here, bounded separately.
	h.handle(r, p+"/{id}/package_content", methods{http.MethodGet: a.getPackageContent, http.MethodPut: a.putPackageContent})
}

func (a *API) packageDoc(p *store.VnfPackage) map[string]any {
	doc := map[string]any{
		"id": p.ID, "onboardingState": p.OnboardingState, "operationalState": p.OperationalState, "usageState": p.UsageState,
	}
	for k, v := range map[string]string{"vnfdId": p.VnfdID, "vnfProvider": p.VnfProvider, "vnfProductName": p.VnfProductName,
		"vnfSoftwareVersion": p.VnfSoftwareVersion, "vnfdVersion": p.VnfdVersion} {
		if v != "" {
			doc[k] = v
		}
	}
	if p.Checksum != nil {
		doc["checksum"] = p.Checksum
	}
	if p.OnboardingState == "ONBOARDED" {
		doc["softwareImages"] = nonNil(p.SoftwareImages)
		doc["additionalArtifacts"] = nonNil(p.AdditionalArtifacts)
	}
	doc["userDefinedData"] = p.UserDefinedData
	if p.UserDefinedData == nil {
		doc["userDefinedData"] = map[string]any{}
	}
	if p.OnboardingFailure != nil {
		doc["onboardingFailureDetails"] = p.OnboardingFailure
	}
	base := "/vnfpkgm/v1/vnf_packages/" + p.ID
	doc["_links"] = map[string]any{"self": a.href(base), "vnfd": a.href(base + "/vnfd"), "packageContent": a.href(base + "/package_content")}
	return toDoc(doc)
}

func nonNil(v []map[string]any) []map[string]any {
	if v == nil {
		return []map[string]any{}
	}
	return v
}

func (a *API) createPackage(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	var req struct {
		UserDefinedData map[string]any `json:"userDefinedData"`
	}
	if b := bodyOf(r); len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &req); err != nil {
			a.writeProblem(w, r, problemf(http.StatusBadRequest, `request body must be {"userDefinedData": {…}} (or empty): `+err.Error()))
			return
		}
		if err := onlyMembers(b, "userDefinedData"); err != nil {
			a.writeProblem(w, r, err)
			return
		}
	}
	p, err := a.cfg.Packages.Create(r.Context(), req.UserDefinedData)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", a.base+"/vnfpkgm/v1/vnf_packages/"+p.ID)
	writeJSON(w, http.StatusCreated, a.packageDoc(p))
}

func (a *API) listPackages(w http.ResponseWriter, r *http.Request) {
	lq, err := a.parseList(r, packageFields, packageFields)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	rows, more, err := a.cfg.Packages.List(r.Context(), store.Page{Filter: lq.filter, Fields: packageFields, After: lq.after, Limit: a.cfg.PageSize})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(rows))
	for _, p := range rows {
		doc := a.packageDoc(p)
		lq.selector.Apply(doc, packageDefaultExcluded)
		out = append(out, doc)
	}
	if more {
		a.nextLink(w, r, rows[len(rows)-1].Seq)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getPackage(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	p, err := a.cfg.Packages.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.packageDoc(p))
}

func (a *API) patchPackage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OperationalState string         `json:"operationalState"`
		UserDefinedData  map[string]any `json:"userDefinedData"`
	}
	if err := json.Unmarshal(bodyOf(r), &req); err != nil {
		a.writeProblem(w, r, problemf(http.StatusBadRequest, `request body must be {"operationalState": "ENABLED"|"DISABLED", "userDefinedData": {…}}: `+err.Error()))
		return
	}
	if err := onlyMembers(bodyOf(r), "operationalState", "userDefinedData"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	_, err := a.cfg.Packages.Update(r.Context(), chi.URLParam(r, "id"), store.PackageUpdate{OperationalState: req.OperationalState, UserDefinedData: req.UserDefinedData})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	// VnfPkgInfoModifications: what the request changed.
	out := map[string]any{}
	if req.OperationalState != "" {
		out["operationalState"] = req.OperationalState
	}
	if req.UserDefinedData != nil {
		out["userDefinedData"] = req.UserDefinedData
	}
	writeJSON(w, http.StatusOK, toDoc(out))
}

func (a *API) deletePackage(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Packages.Delete(r.Context(), chi.URLParam(r, "id")); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) putPackageContent(w http.ResponseWriter, r *http.Request) {
	if err := checkMedia(r, true, zipOnly); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	release, ok := a.uploads.acquire(auth.ClientAddr(r))
	if !ok {
		w.Header().Set("Connection", "close") // the body is not read
		a.writeProblem(w, r, &problem{status: http.StatusTooManyRequests, header: http.Header{"Retry-After": {"10"}},
			detail: fmt.Sprintf("too many package uploads are in progress (at most %d in all, %d per client: VNFM_UPLOADS, VNFM_UPLOADS_PER_CLIENT); retry when one has finished", a.cfg.Uploads, a.cfg.UploadsPerClient)})
		return
	}
	defer release()
	// Streamed to a spool file and into the database: never whole in memory.
	max := a.cfg.Packages.MaxBytes()
	err := a.cfg.Packages.UploadFrom(r.Context(), chi.URLParam(r, "id"), http.MaxBytesReader(w, io.NopCloser(a.uploadBody(w, r)), max))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		a.writeProblem(w, r, problemf(http.StatusRequestEntityTooLarge, fmt.Sprintf("the package is larger than %d bytes", max)))
	case isTimeout(err):
		w.Header().Set("Connection", "close")
		a.writeProblem(w, r, problemf(http.StatusRequestTimeout, fmt.Sprintf("the upload stalled for %s (VNFM_BODY_TIMEOUT) or took longer than %s (VNFM_UPLOAD_TIMEOUT)", a.cfg.BodyTimeout, a.cfg.UploadTimeout)))
	case err != nil:
		a.writeProblem(w, r, err)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func (a *API) uploadFromURI(w http.ResponseWriter, r *http.Request) {
	// SOL005 UploadVnfPkgFromUriRequest (the OAuth 2.0 members are refused
	// by the service, not dropped).
	if err := onlyMembers(bodyOf(r), "addressInformation", "authType", "userName", "password", "paramsOauth2ClientCredentials"); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	if err := a.cfg.Packages.UploadFromURI(r.Context(), chi.URLParam(r, "id"), bodyOf(r)); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (a *API) getPackageContent(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	c, err := a.cfg.Packages.Content(r.Context(), id)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	defer c.Close()
	w.Header().Set("Content-Type", "application/zip")
	http.ServeContent(w, r, id+".zip", time.Time{}, c) // Range support
}

func (a *API) getVnfd(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	wantText := strings.Contains(accept, "text/plain")
	wantZip := accept == "" || strings.Contains(accept, "application/zip") || strings.Contains(accept, "*/*")
	if !wantText && !wantZip {
		a.writeProblem(w, r, problemf(http.StatusNotAcceptable, "the VNFD is served as text/plain (single file) or application/zip; put one of them in Accept"))
		return
	}
	b, ct, err := a.cfg.Packages.VNFD(r.Context(), chi.URLParam(r, "id"), wantText, wantZip)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

func (a *API) getArtifact(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "*")
	b, err := a.cfg.Packages.Artifact(r.Context(), chi.URLParam(r, "id"), name)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = http.DetectContentType(b)
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(b)
}

// onlyMembers refuses a JSON object body with members other than known
// (SOL005 bodies this server reads by hand: no member is dropped unseen).
// A body that is not an object is left to the caller's decoding.
func onlyMembers(body []byte, known ...string) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	bad := unknownKeys(m, known)
	if len(bad) == 0 {
		return nil
	}
	known = slices.Sorted(slices.Values(known))
	return problemf(http.StatusBadRequest, "request body: "+openapi.Unsupported(bad, known))
}
