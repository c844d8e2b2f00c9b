package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/reqerr"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
)

// problem is an error that renders as SOL013 ProblemDetails.
type problem struct {
	status int
	detail string
	header http.Header
}

func (p *problem) Error() string { return p.detail }

func problemf(status int, detail string) *problem { return &problem{status: status, detail: detail} }

// writeProblem renders err as application/problem+json. Unknown errors are
// logged and answered with a 500 that leaks nothing.
func (a *API) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	var (
		p   *problem
		le  *reqerr.Error
		pe  *sol013.ParseError
		se  *sol013.SelectorError
		ve  *sol013.ValidationError
		out model.ProblemDetails
	)
	switch {
	case errors.As(err, &p):
		out = model.ProblemDetails{Status: p.status, Detail: p.detail}
		for k, v := range p.header {
			w.Header()[k] = v
		}
	case errors.As(err, &le):
		out = model.ProblemDetails{Status: statusOf(le.Kind), Detail: le.Detail}
	case errors.As(err, &pe), errors.As(err, &ve):
		out = model.ProblemDetails{Status: http.StatusBadRequest, Detail: err.Error()}
	case errors.As(err, &se):
		out = model.ProblemDetails{Status: http.StatusBadRequest, Detail: se.Error()}
	default:
		reqID := requestID(r)
		a.log.ErrorContext(r.Context(), "request failed", "err", err, "method", r.Method, "path", r.URL.Path, "requestId", reqID)
		out = model.ProblemDetails{Status: http.StatusInternalServerError,
			Detail: "the VNFM hit an internal error; the server log has the cause under requestId " + reqID + " — retry later or report it"}
	}
	out.Title = http.StatusText(out.Status)
	writeProblemDetails(w, out)
}

func writeProblemDetails(w http.ResponseWriter, pd model.ProblemDetails) {
	if pd.Title == "" {
		pd.Title = http.StatusText(pd.Status)
	}
	b, _ := json.Marshal(pd)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(pd.Status)
	_, _ = w.Write(b)
}

func statusOf(k reqerr.Kind) int {
	switch k {
	case reqerr.Invalid:
		return http.StatusBadRequest
	case reqerr.NotFound, reqerr.NotSupported:
		return http.StatusNotFound
	case reqerr.Conflict:
		return http.StatusConflict
	case reqerr.Precondition:
		return http.StatusPreconditionFailed
	case reqerr.Unprocessable:
		return http.StatusUnprocessableEntity
	case reqerr.NotAcceptable:
		return http.StatusNotAcceptable
	}
	return http.StatusInternalServerError
}

// logger returns the request-scoped logger.
func (a *API) logger(r *http.Request) *slog.Logger {
	return a.log.With("requestId", requestID(r))
}
