package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Request bodies have deadlines: the server's ReadHeaderTimeout covers only
// the head, and a client that sends a body slowly (or never) would hold a
// connection and a goroutine for as long as it likes. A JSON body must
// arrive within BodyTimeout; a package upload (progressReader) may take
// UploadTimeout if it keeps sending.

// bodyDeadline sets the read deadline of every request's body.
func (a *API) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			// Not supported (e.g. HTTP/2 over some wrappers): the server's own timeouts remain.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(a.cfg.BodyTimeout))
		}
		next.ServeHTTP(w, r)
	})
}

// progressReader reads an upload body, moving the read deadline on while
// bytes arrive: idle without a byte for that long, or past the total
// deadline, the read fails and the connection is closed.
type progressReader struct {
	r     io.Reader
	rc    *http.ResponseController
	idle  time.Duration
	until time.Time
}

func (a *API) uploadBody(w http.ResponseWriter, r *http.Request) *progressReader {
	return &progressReader{r: r.Body, rc: http.NewResponseController(w), idle: a.cfg.BodyTimeout,
		until: time.Now().Add(a.cfg.UploadTimeout)}
}

func (p *progressReader) Read(b []byte) (int, error) {
	d := time.Now().Add(p.idle)
	if d.After(p.until) {
		d = p.until
	}
	_ = p.rc.SetReadDeadline(d)
	return p.r.Read(b)
}

// isTimeout reports a body read that ran into its deadline.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
