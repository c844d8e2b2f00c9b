package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/openapi"
)

type ctxKey int

const keyRequest ctxKey = 0

// requestInfo is what the middleware hands on about a request, in one
// context value (each value is a context and a request copied).
type requestInfo struct {
	id   string // requestID
	body []byte // readJSON
}

func infoOf(r *http.Request) *requestInfo {
	ri, _ := r.Context().Value(keyRequest).(*requestInfo)
	return ri
}

func requestID(r *http.Request) string {
	if ri := infoOf(r); ri != nil {
		return ri.id
	}
	return ""
}

// requestID tags each request for logs and 500 answers.
func (a *API) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 64 random bits (the runtime's per-thread ChaCha8: no lock, no
		// system call); an id names a request, it protects nothing.
		var b [16]byte
		binary.BigEndian.PutUint64(b[8:], rand.Uint64())
		hex.Encode(b[:], b[8:])
		id := string(b[:])
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRequest, &requestInfo{id: id})))
	})
}

// recoverer turns a panic into a logged 500 ProblemDetails; a request never kills the server.
func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.Error("panic serving request", "panic", fmt.Sprint(v), "path", r.URL.Path, "stack", string(debug.Stack()))
				a.writeProblem(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

var slashes = regexp.MustCompile(`/{2,}`)

// cleanPath folds repeated slashes: the TST010 harness requests //vnflcm/v1/...
func (a *API) cleanPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/vnflcm") {
			w.Header().Set("Version", APIVersion) // on every answer, 404s included
		}
		if strings.Contains(r.URL.Path, "//") {
			r.URL.Path = slashes.ReplaceAllString(r.URL.Path, "/")
			r.URL.RawPath = ""
		}
		if len(r.URL.Path) > 1 && strings.HasSuffix(r.URL.Path, "/") {
			r.URL.Path = strings.TrimRight(r.URL.Path, "/")
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (read deadlines).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// observe logs each request (never its body) and records metrics by route pattern.
func (a *API) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		d := time.Since(start)
		if m := a.cfg.Metrics; m != nil {
			m.HTTPRequests.WithLabelValues(route, r.Method, statusLabel(sw.status)).Inc()
			m.HTTPDuration.WithLabelValues(route, r.Method).Observe(d.Seconds())
		}
		// Successful reads are counted in the metrics and logged at debug:
		// at API rates a line per GET costs more than serving it, and
		// pollers would bury everything else in the log.
		lvl := slog.LevelDebug
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if route != "/healthz" && route != "/readyz" && route != "/metrics" && (!read || sw.status >= 400) {
			lvl = slog.LevelInfo
		}
		if a.log.Enabled(context.Background(), lvl) { // the arguments cost allocations when not
			a.log.Log(context.Background(), lvl, "http", "method", r.Method, "path", r.URL.Path, "route", route, "status", sw.status,
				"duration", d.Round(time.Microsecond).String(), "requestId", requestID(r))
		}
	})
}

// statusLabels are the status codes as metric labels, made once.
var statusLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

var versionRe = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(-impl:.+)?$`)

// version applies SOL013's Version header rules: absent means 1.3.0; a
// malformed one is 400; another major version is 406. api_versions answers
// whatever the client sends (the Tacker CLI always sends 2.0.0 there).
func (a *API) version(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimSpace(r.Header.Get("Version"))
		if v != "" && v != APIVersion && !strings.HasSuffix(r.URL.Path, "/api_versions") {
			m := versionRe.FindStringSubmatch(v)
			if m == nil {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, fmt.Sprintf("Version header %q is malformed; send %s (or omit the header)", v, APIVersion)))
				return
			}
			if m[1] != "1" {
				a.writeProblem(w, r, problemf(http.StatusNotAcceptable, fmt.Sprintf("API version %s is not supported under /vnflcm/v1; this VNFM serves %s (see GET /vnflcm/api_versions)", v, APIVersion)))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readJSON reads a bounded request body, rejects other media types (415),
// malformed JSON and sealed values with precise messages, and hands the body
// to the handler via the context.
func (a *API) readJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodDelete && r.Method != http.MethodHead {
			b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxBodyBytes))
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				a.writeProblem(w, r, problemf(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", a.cfg.MaxBodyBytes)))
				return
			}
			if isTimeout(err) {
				w.Header().Set("Connection", "close")
				a.writeProblem(w, r, problemf(http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s (VNFM_BODY_TIMEOUT); send it whole, at once", a.cfg.BodyTimeout)))
				return
			}
			if err != nil {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, "cannot read request body: "+err.Error()))
				return
			}
			body = b
		}
		hasBody := len(bytes.TrimSpace(body)) > 0
		if writeMethod(r.Method) || hasBody {
			if err := checkMedia(r, hasBody, ruleFor(r)); err != nil {
				a.writeProblem(w, r, err)
				return
			}
		}
		if hasBody {
			if !utf8.Valid(body) {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, "request body is not valid UTF-8; JSON must be UTF-8 encoded (RFC 8259 §8.1)"))
				return
			}
			if err := checkJSON(body); err != nil {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, err.Error()))
				return
			}
			if p, ok := nulInRequest(body); ok {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, fmt.Sprintf(
					"the string or member name at %s holds the character U+0000 (\\u0000), which the VNFM cannot store; remove it", p)))
				return
			}
			if p, ok := sealedInRequest(body); ok {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, fmt.Sprintf(
					"the value at %s looks like a value sealed by the VNFM (enc:v…); sealed values are never accepted from clients: send the plaintext", p)))
				return
			}
		}
		if body == nil { // GET, HEAD, DELETE: nothing to hand on
			r.Body = http.NoBody
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if ri := infoOf(r); ri != nil {
			ri.body = body
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRequest, &requestInfo{body: body})))
	})
}

// validate checks the request against the served OpenAPI spec (after readJSON).
func (a *API) validate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := bodyOf(r)
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && len(body) == 0 && r.URL.RawQuery == "" &&
			!strings.HasSuffix(r.URL.Path, "/api_versions") {
			// Nothing for the spec to check: a read without body or query
			// has only string path parameters and headers, and the Version
			// header (the one with a pattern) passed a.version already.
			next.ServeHTTP(w, r)
			return
		}
		// chi has routed the request: its pattern stands for the
		// document's route after the first request (no regexp per route).
		var pattern string
		var values []string
		if rc := chi.RouteContext(r.Context()); rc != nil && !slices.Contains(rc.URLParams.Keys, "*") {
			pattern, values = rc.RoutePattern(), rc.URLParams.Values
		}
		if err := a.validator.ValidateRouted(r.Context(), r, body, pattern, values); err != nil {
			var re *openapi.RequestError
			if errors.As(err, &re) {
				a.writeProblem(w, r, problemf(http.StatusBadRequest, re.Detail))
				return
			}
			// Routing misses are answered by our own router (404/405).
		}
		next.ServeHTTP(w, r) // the checks read their own copy of the body
	})
}

// checkJSON reports syntax errors with line and column, for people, and
// a number no handler can decode (out of float64's range: 1e999999).
func checkJSON(b []byte) error {
	if json.Valid(b) && numbersInRange(b) {
		return nil // what decodeCheck accepts, without building the value
	}
	return decodeCheck(b)
}

// decodeCheck is checkJSON by decoding the document: its errors say where.
func decodeCheck(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := position(b, se.Offset)
			return fmt.Errorf("request body is not valid JSON: %v at line %d, column %d", se, line, col)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("request body is not valid JSON: it ends too early")
		}
		return fmt.Errorf("request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return errors.New("request body has data after the JSON value; send exactly one JSON object")
	}
	return nil
}

// numbersInRange reports whether every number of a valid JSON document
// fits a float64, as decoding it into an interface value requires.
func numbersInRange(b []byte) bool {
	inString, escaped := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			// Up to 15 digits without exponent are exact; only longer
			// numbers and exponents can leave the range.
			if j-i > 15 || bytes.ContainsAny(b[i:j], "eE") {
				if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
}

func position(b []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(b)); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func bodyOf(r *http.Request) []byte {
	if ri := infoOf(r); ri != nil {
		return ri.body
	}
	return nil
}
