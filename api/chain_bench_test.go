package api

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/metrics"
)

// benchWriter is a ResponseWriter that keeps nothing between requests.
type benchWriter struct {
	h      http.Header
	status int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.status = code }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkLCMPostChain measures what the middleware of an LCM POST costs
// (everything but the lcm.Service call): the instantiate request the
// engine bench sends, through the server's chains, logged at info as the
// server does.
func BenchmarkLCMPostChain(b *testing.B) {
	a, err := newAPI(context.Background(), Config{EndpointURL: "http://127.0.0.1:9890", Metrics: metrics.New(nil, nil),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	h := chi.NewRouter()
	h.Use(a.outerChain()...)
	h.Group(func(r chi.Router) {
		r.Use(a.lcmChain()...)
		r.Post("/vnflcm/v1/vnf_instances/{id}/instantiate", func(w http.ResponseWriter, r *http.Request) {
			if len(bodyOf(r)) == 0 || chi.URLParam(r, "id") == "" {
				panic("no body or id")
			}
			w.Header().Set("Location", a.base+"/vnflcm/v1/vnf_lcm_op_occs/1f0e6a4c-3d2b-4f5e-8a9b-0c1d2e3f4a5b")
			w.WriteHeader(http.StatusAccepted)
		})
	})
	body := []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"vim-bench","vimType":"ETSINFV.OPENSTACK_KEYSTONE.V_3"}]}`)
	url := "http://127.0.0.1:9890/vnflcm/v1/vnf_instances/0b5e3a6c-8d2f-4e1a-9c3b-7f6d5e4a3b2c/instantiate"
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Version", "1.3.0")
		req.Host = "127.0.0.1:9890"
		w := &benchWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.status != http.StatusAccepted {
			b.Fatalf("status %d", w.status)
		}
	}
}
