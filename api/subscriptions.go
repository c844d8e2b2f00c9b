package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/notify"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func (a *API) subscriptionDoc(s *store.Subscription) map[string]any {
	doc := map[string]any{"id": s.ID, "callbackUri": s.CallbackURI,
		"_links": map[string]any{"self": a.href("/vnflcm/v1/subscriptions/" + s.ID)}}
	if s.Filter != nil {
		doc["filter"] = s.Filter
	}
	return toDoc(doc)
}

func (a *API) createSubscription(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return
	}
	sub, err := a.cfg.Subscriptions.Create(r.Context(), bodyOf(r))
	var ie *notify.InvalidError
	switch {
	case errors.Is(err, store.ErrDuplicateSubscription):
		// SOL003: a duplicate is answered with the existing one.
		w.Header().Set("Location", a.base+"/vnflcm/v1/subscriptions/"+sub.ID)
		w.WriteHeader(http.StatusSeeOther)
		return
	case errors.As(err, &ie):
		status := http.StatusBadRequest
		if ie.Unprocessable {
			status = http.StatusUnprocessableEntity
		}
		a.writeProblem(w, r, problemf(status, ie.Detail))
		return
	case err != nil:
		a.writeProblem(w, r, err)
		return
	}
	a.logger(r).Info("subscription created", "subscriptionId", sub.ID, "callbackUri", sub.CallbackURI)
	w.Header().Set("Location", a.base+"/vnflcm/v1/subscriptions/"+sub.ID)
	writeJSON(w, http.StatusCreated, a.subscriptionDoc(sub))
}

func (a *API) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	lq, err := a.parseList(r, a.subFields, a.subFields)
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	rows, more, err := a.cfg.Subscriptions.List(r.Context(), store.Page{Filter: lq.filter, Fields: a.subFields, After: lq.after, Limit: a.cfg.PageSize})
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(rows))
	for _, s := range rows {
		doc := a.subscriptionDoc(s)
		lq.selector.Apply(doc, nil)
		out = append(out, doc)
	}
	if more {
		a.nextLink(w, r, rows[len(rows)-1].Seq)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) subscriptionID(w http.ResponseWriter, r *http.Request) (string, bool) {
	if err := onlyParams(r.URL.Query()); err != nil {
		a.writeProblem(w, r, err)
		return "", false
	}
	id := chi.URLParam(r, "id")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		a.writeProblem(w, r, subscriptionNotFound(id))
		return "", false
	}
	return id, true
}

func subscriptionNotFound(id string) error {
	return problemf(http.StatusNotFound, "subscription "+id+" does not exist; list them with GET /vnflcm/v1/subscriptions")
}

func (a *API) getSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := a.subscriptionID(w, r)
	if !ok {
		return
	}
	s, err := a.cfg.Subscriptions.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = subscriptionNotFound(id)
	}
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.subscriptionDoc(s))
}

func (a *API) deleteSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := a.subscriptionID(w, r)
	if !ok {
		return
	}
	err := a.cfg.Subscriptions.Delete(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = subscriptionNotFound(id)
	}
	if err != nil {
		a.writeProblem(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
