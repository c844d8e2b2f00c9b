package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLeanClient: the reads phase's client accepts only a 200 whose
// Content-Length body is the requested instance's JSON object, keeps the
// connection alive, and dials again when the server closes it.
func TestLeanClient(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/i/")
		switch id {
		case "ok", "close":
			if id == "close" {
				w.Header().Set("Connection", "close")
			}
			_, _ = w.Write([]byte(`{"id":"` + id + `","x":1}`))
		case "other":
			_, _ = w.Write([]byte(`{"id":"ok"}`))
		case "missing":
			http.Error(w, `{"status":404}`, http.StatusNotFound)
		case "chunked":
			_, _ = w.Write([]byte(`{"id":"chunked"`))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(`}`))
		case "notjson":
			_, _ = w.Write([]byte(`"id":"notjson"`))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ids := []string{"ok", "close", "other", "missing", "chunked", "notjson"}
	reqs, wants, addr, err := leanRequests(srv.URL, "/i/", ids)
	if err != nil {
		t.Fatal(err)
	}
	c := newLeanClient(addr, 5*time.Second)
	defer c.Close()
	for range 3 {
		body, err := c.get(reqs[0], wants[0])
		if err != nil || string(body) != `{"id":"ok","x":1}` {
			t.Fatalf("GET ok: %q, %v", body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 GETs used %d connections, want 1 (keep-alive)", n)
	}
	if _, err := c.get(reqs[1], wants[1]); err != nil {
		t.Fatalf("GET close: %v", err)
	}
	if _, err := c.get(reqs[0], wants[0]); err != nil {
		t.Fatalf("GET after Connection: close: %v", err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections after the server closed one, want 2", n)
	}
	for i, want := range map[int]string{2: `holding "id":"other"`, 3: "GET instance: 404", 4: "Transfer-Encoding chunked", 5: "not the JSON object"} {
		_, err := c.get(reqs[i], wants[i])
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GET %s: error %v, want one containing %q", ids[i], err, want)
		}
	}
}

// TestLeanPost: the engine phase's task POST goes out whole (body and
// Content-Length) and its 202's Location comes back; a refusal's status and
// ProblemDetails too, on the same connection.
func TestLeanPost(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || string(b) != `{"flavourId":"simple"}` {
			http.Error(w, `{"status":400}`, http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/terminate") {
			http.Error(w, `{"status":409,"detail":"not instantiated"}`, http.StatusConflict)
			return
		}
		w.Header().Set("Location", "http://"+r.Host+"/vnflcm/v1/vnf_lcm_op_occs/op-1")
		w.WriteHeader(http.StatusAccepted)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := newLeanClient(host, 5*time.Second)
	defer c.Close()
	res, err := c.exchange(taskPost(host, "i-1", "instantiate", `{"flavourId":"simple"}`))
	if err != nil || res.status != http.StatusAccepted || res.location != srv.URL+"/vnflcm/v1/vnf_lcm_op_occs/op-1" || len(res.body) != 0 {
		t.Fatalf("instantiate: %+v, %v", res, err)
	}
	res, err = c.exchange(taskPost(host, "i-1", "terminate", `{"flavourId":"simple"}`))
	if err != nil || res.status != http.StatusConflict || !strings.Contains(string(res.body), "not instantiated") {
		t.Fatalf("terminate: %d %q, %v", res.status, res.body, err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("2 POSTs used %d connections, want 1", n)
	}
}
