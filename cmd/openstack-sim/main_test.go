package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

// syncBuf is a bytes.Buffer safe for the server goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `serve` in-process and returns the base URL from its banner.
func startServe(t *testing.T, args ...string) (string, *syncBuf) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logw := &syncBuf{}, &syncBuf{}
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, append([]string{"--listen", "127.0.0.1:0", "--latency", "5ms"}, args...), out, logw)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, logw)
		}
	})
	re := regexp.MustCompile(`openstack-sim listening on (http://127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1], out
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v\n%s", err, logw)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no banner:\n%s\n%s", out, logw)
	return "", nil
}

func runClient(t *testing.T, f func([]string) error, args ...string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	old := stdout
	stdout = &b
	defer func() { stdout = old }()
	err := f(args)
	return b.String(), err
}

func TestServeAndClients(t *testing.T) {
	base, out := startServe(t)
	for _, want := range []string{"auth_url: '" + base + "/v3'", "project_name: 'admin'", `"auth_url": "` + base + `/v3"`, "test hosts   off"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if got, err := runClient(t, faults, "set", "--url", base, `{"max_servers": 2, "fail_resources": [{"name": "VDU1", "times": 1}]}`); err != nil ||
		!strings.Contains(got, `"max_servers": 2`) || !strings.Contains(got, `"name": "VDU1"`) {
		t.Errorf("faults set: %q %v", got, err)
	}
	if got, err := runClient(t, faults, "--url", base); err != nil || !strings.Contains(got, `"max_servers": 2`) {
		t.Errorf("faults show: %q %v", got, err)
	}
	if _, err := runClient(t, faults, "clear", "--url", base); err != nil {
		t.Error(err)
	}
	if got, _ := runClient(t, faults, "show", "--url", base); strings.Contains(got, "max_servers") {
		t.Errorf("faults after clear: %s", got)
	}
	if got, err := runClient(t, hosts, "list", "--url", base); err != nil || !strings.HasPrefix(got, "NAME") {
		t.Errorf("hosts list: %q %v", got, err)
	}
	if _, err := runClient(t, hosts, "exec", "--url", base, "nope", "true"); err == nil {
		t.Error("exec on a missing server succeeded")
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	err := serve(context.Background(), []string{"--listen", "0.0.0.0:5000"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("err = %v", err)
	}
}

func TestServeWithHosts(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv(testhosts.RequiredEnv) != "1" {
		t.Skip("skipping: --hosts needs root")
	}
	base, out := startServe(t, "--hosts", "--prefix", "osscli", "--quiet")
	if !strings.Contains(out.String(), "ip netns exec osscli-ctl") {
		t.Errorf("banner:\n%s", out)
	}
	if _, err := os.Stat("/run/netns/osscli-ctl"); err != nil {
		t.Errorf("ctl namespace: %v", err)
	}
	if got, err := runClient(t, hosts, "list", "--url", base); err != nil || !strings.HasPrefix(got, "NAME") {
		t.Errorf("hosts list: %q %v", got, err)
	}
}
