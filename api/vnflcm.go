package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func problemDetails(status int, detail string) model.ProblemDetails {
	return model.ProblemDetails{Status: status, Title: http.StatusText(status), Detail: detail}
}

func (a *API) createInstance(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	in, err := a.svc.CreateInstance(r.Context(), bodyOf(r))
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	a.logger(r).Info("vnf instance created", "vnfInstanceId", in.ID, "vnfdId", in.VnfdID)
	w.Header().Set("Location", a.base+"/vnflcm/v1/vnf_instances/"+in.ID)
	writeJSON(w, http.StatusCreated, a.instanceDoc(in))
}

func (a *API) listInstances(w http.ResponseWriter, r *http.Request) {
	lq, err := a.parseList(r, a.instFields, a.instFields)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	// Complex attributes the selection leaves out are not read at all.
	var omit []string
	for _, d := range instanceDefaultExcluded {
		if lq.selector.Drops(d[0], instanceDefaultExcluded) {
			omit = append(omit, d[0])
		}
	}
	rows, more, err := a.svc.ListInstances(r.Context(), store.Page{Filter: lq.filter, Fields: a.instFields, After: lq.after, Limit: a.cfg.PageSize, Omit: omit})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(rows))
	for _, in := range rows {
		doc := a.instanceDoc(in)
		lq.selector.Apply(doc, instanceDefaultExcluded)
		out = append(out, doc)
	}
	if more {
		a.nextLink(w, r, rows[len(rows)-1].Seq)
	}
	writeJSON(w, http.StatusOK, out)
}

// instanceDocs holds GET's buffers: a document is read into one, _links
// are appended in place, it is written and serves the next GET.
var instanceDocs = sync.Pool{New: func() any { return new(store.InstanceDoc) }}

func (a *API) getInstance(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" { // strictQuery left one: there are parameters
		if err := onlyParams(r.URL.Query()); err != nil {
			a.writeProblem(w, r, err)
			return
		}
	}
	// The stored document is masked and serialised already (rendered once
	// per change, store.ReadInstanceDoc): only _links are added.
	d := instanceDocs.Get().(*store.InstanceDoc)
	defer func() {
		if cap(d.Doc) > 64<<10 { // a rare big one is not kept
			d.Doc = nil
		}
		instanceDocs.Put(d)
	}()
	if err := a.svc.ReadInstanceDoc(r.Context(), chi.URLParam(r, "id"), d); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	body, err := a.appendLinks(d.Doc, d.ID, d.InstantiationState)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	d.Doc = body[:0] // the grown array, for the next GET
	var date [len(http.TimeFormat)]byte
	// What h.Set does, with the four values in one allocation.
	v := make([]string, 4)
	v[0], v[1] = etag(d.Version), string(d.UpdatedAt.UTC().AppendFormat(date[:0], http.TimeFormat))
	v[2], v[3] = "application/json", strconv.Itoa(len(body))
	h := w.Header()
	h["Etag"], h["Last-Modified"], h["Content-Type"], h["Content-Length"] = v[0:1:1], v[1:2:2], v[2:3:3], v[3:4:4]
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // copied into the connection's buffer (io.Writer never keeps it)
}

func etag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

func (a *API) deleteInstance(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	if err := a.svc.DeleteInstance(r.Context(), id); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	a.logger(r).Info("vnf instance deleted", "vnfInstanceId", id)
	w.WriteHeader(http.StatusNoContent)
}

// modifyInstance handles PATCH with If-Match / If-Unmodified-Since preconditions.
func (a *API) modifyInstance(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	id := chi.URLParam(r, "id")
	var ifVersion int64
	if im := strings.TrimSpace(r.Header.Get("If-Match")); im != "" && im != "*" {
		// If-Match compares strongly (RFC 9110 §13.1.1): a weak tag never matches.
		v, err := strconv.ParseInt(strings.Trim(im, `"`), 10, 64)
		quoted := len(im) >= 2 && strings.HasPrefix(im, `"`) && strings.HasSuffix(im, `"`)
		if err != nil || v <= 0 || !quoted {
			a.writeProblem(w, r, problemf(http.StatusPreconditionFailed, fmt.Sprintf("If-Match %s does not match the VNF instance; GET it and use its ETag", im)))
			return
		}
		ifVersion = v
	}
	if ius := r.Header.Get("If-Unmodified-Since"); ius != "" {
		t, err := http.ParseTime(ius)
		if err != nil {
			a.writeProblem(w, r, problemf(http.StatusBadRequest, "If-Unmodified-Since is not an HTTP date"))
			return
		}
		in, err := a.svc.GetInstance(r.Context(), id)
		if err != nil {
			a.writeProblem(w, r, err)
			return
		}
		if in.UpdatedAt.Truncate(time.Second).After(t) {
			a.writeProblem(w, r, problemf(http.StatusPreconditionFailed, "the VNF instance was modified after "+ius+"; GET it again"))
			return
		}
		if ifVersion == 0 {
			ifVersion = in.Version // make the date check atomic with the enqueue
		}
	}
	op, err := a.svc.Modify(r.Context(), id, bodyOf(r), ifVersion)
	a.accepted(w, r, op, err)
}

type taskFunc func(ctx context.Context, id string, body []byte) (*store.OpOcc, error)

func (a *API) task(f taskFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := onlyParams(r.URL.Query()); err != nil {
			a.writeProblem(w, r, err)
			return
		}
		op, err := f(r.Context(), chi.URLParam(r, "id"), bodyOf(r))
		a.accepted(w, r, op, err)
	}
}

// accepted answers a task: 202, empty body, Location of the op occurrence,
// which is committed (and listed) before this is sent.
func (a *API) accepted(w http.ResponseWriter, r *http.Request, op *store.OpOcc, err error) {
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	if a.cfg.Wake != nil && op.LeaseOwner == "" { // leased: a run here has it already
		a.cfg.Wake()
	}
	w.Header().Set("Location", a.base+"/vnflcm/v1/vnf_lcm_op_occs/"+op.ID)
	w.WriteHeader(http.StatusAccepted)
}

func (a *API) unsupported(task, alternative string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if _, err := a.svc.GetInstance(r.Context(), id); err != nil {
			a.writeProblem(w, r, err)
			return
		}
		a.writeProblem(w, r, problemf(http.StatusNotFound, fmt.Sprintf("the %s task is not supported by this VNFM; %s", task, alternative)))
	}
}

func (a *API) listOpOccs(w http.ResponseWriter, r *http.Request) {
	lq, err := a.parseList(r, a.opFields, a.opSelectFields)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	rows, more, err := a.svc.ListOpOccs(r.Context(), store.Page{Filter: lq.filter, Fields: a.opFields, After: lq.after, Limit: a.cfg.PageSize})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	// Progress comes from the journal: fetch it in one query, only if it will be shown.
	probe := map[string]any{"progress": true}
	lq.selector.Apply(probe, opDefaultExcluded)
	var journal map[string][]store.JournalEntry
	if _, shown := probe["progress"]; shown && len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, op := range rows {
			ids[i] = op.ID
		}
		if journal, err = a.svc.Journal(r.Context(), ids); err != nil {
			a.writeProblem(w, r, err)
			return
		}
	}
	out := make([]map[string]any, 0, len(rows))
	for _, op := range rows {
		doc := a.opDoc(op, journal[op.ID])
		lq.selector.Apply(doc, opDefaultExcluded)
		out = append(out, doc)
	}
	if more {
		a.nextLink(w, r, rows[len(rows)-1].Seq)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getOpOcc(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	op, err := a.svc.GetOpOcc(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	a.writeOp(w, r, http.StatusOK, op)
}

func (a *API) writeOp(w http.ResponseWriter, r *http.Request, status int, op *store.OpOcc) {
	j, err := a.svc.Journal(r.Context(), []string{op.ID})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	writeJSON(w, status, a.opDoc(op, j[op.ID]))
}

func (a *API) retry(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	op, err := a.svc.Retry(r.Context(), chi.URLParam(r, "id"))
	a.accepted(w, r, op, err)
}

func (a *API) rollback(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	op, err := a.svc.Rollback(r.Context(), chi.URLParam(r, "id"))
	a.accepted(w, r, op, err)
}

func (a *API) fail(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	op, err := a.svc.Fail(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	a.writeOp(w, r, http.StatusOK, op)
}

// cancel takes {"cancelMode": ...}, the bare string the TST sends, or no body (GRACEFUL).
func (a *API) cancel(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	mode := ""
	if b := strings.TrimSpace(string(bodyOf(r))); b != "" {
		var obj struct {
			CancelMode string `json:"cancelMode"`
		}
		if err := json.Unmarshal([]byte(b), &obj); err != nil {
			if err2 := json.Unmarshal([]byte(b), &mode); err2 != nil {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, `request body must be {"cancelMode":"GRACEFUL"|"FORCEFUL"}`))
				return
			}
		} else {
			mode = obj.CancelMode
		}
	}
	op, err := a.svc.Cancel(r.Context(), chi.URLParam(r, "id"), mode)
	a.accepted(w, r, op, err)
}
