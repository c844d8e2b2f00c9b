package kubernetes

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A request whose connection is reset before any response is sent again on
// a new connection, its body included, at most resendAttempts times; a
// response (even an error status) or a body that cannot be read again is
// not resent.
func TestResendOnBrokenConnection(t *testing.T) {
	cases := []struct {
		name       string
		resets     int32 // the server resets this many requests first
		method     string
		body       func() io.Reader
		wantSeen   int32
		wantStatus int // 0: an error
	}{
		{"a DELETE reset once", 1, http.MethodDelete, nil, 2, http.StatusOK},
		{"a POST reset twice, its body sent again", 2, http.MethodPost, func() io.Reader { return strings.NewReader(`{"kind":"Pod"}`) }, 3, http.StatusOK},
		{"reset every time: bounded", 99, http.MethodPatch, func() io.Reader { return strings.NewReader(`{"spec":{}}`) }, resendAttempts, 0},
		{"a body that cannot be read again", 1, http.MethodPost, func() io.Reader { return io.MultiReader(strings.NewReader("{}")) }, 1, 0},
		{"an error status is an answer", 0, http.MethodDelete, nil, 1, http.StatusInternalServerError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := seen.Add(1)
				b, _ := io.ReadAll(r.Body)
				if tc.body != nil && string(b) == "" {
					t.Errorf("request %d came without its body", n)
				}
				if n <= tc.resets {
					c, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					_ = c.(*net.TCPConn).SetLinger(0) // close with a reset
					_ = c.Close()
					return
				}
				if tc.wantStatus == http.StatusInternalServerError {
					w.WriteHeader(http.StatusInternalServerError)
				}
			}))
			defer srv.Close()
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, err := http.NewRequest(tc.method, srv.URL+"/api/v1/namespaces/default/pods/p", body)
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := resendOnBrokenConnection{tr}.RoundTrip(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			switch {
			case tc.wantStatus == 0 && err == nil:
				t.Fatalf("status %d, want an error", resp.StatusCode)
			case tc.wantStatus != 0 && err != nil:
				t.Fatalf("error %v, want status %d", err, tc.wantStatus)
			case tc.wantStatus != 0 && resp.StatusCode != tc.wantStatus:
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := seen.Load(); got != tc.wantSeen {
				t.Fatalf("the server saw %d requests, want %d", got, tc.wantSeen)
			}
		})
	}
}
