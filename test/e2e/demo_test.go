package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
)

// defaultServerEnv makes the re-executed test binary serve exactly like
// `vnfm serve`: built-in drivers, and the embedded cloud when configured.
const defaultServerEnv = "VNFM_E2E_DEFAULT_SERVER"

func init() {
	if os.Getenv(defaultServerEnv) == "1" {
		os.Exit(serveDefault())
	}
}

func serveDefault() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	if err := server.Run(ctx, cfg, server.Options{Version: "e2e-default", Ready: func(addr string) { fmt.Printf("READY %s\n", addr) }}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func vimsOf(t *testing.T, base string) []map[string]any {
	t.Helper()
	res, err := http.Get(base + "/v1.0/vims")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Vims []map[string]any `json:"vims"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc.Vims
}

// TestNewcomerRunAndDemo is `make run` + `make demo` as a newcomer does it:
// the VNFM brings its own cloud (simulator with real hosts and the Kubernetes
// stand-in), registers it, onboards the samples, and the demo program drives
// a cluster's whole lifecycle through the public API. With the simulator off
// nothing is started or registered.
func TestNewcomerRunAndDemo(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("TESTHOSTS_REQUIRED") != "1" {
		t.Skip("the embedded cloud's real hosts need root (network namespaces); CI runs as root")
	}
	ctx := context.Background()
	standin, err := k8sstandin.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(t.TempDir(), "vnfm-demo")
	if out, err := exec.Command("go", "build", "-o", demo, "github.com/mini-vnfm/mini-vnfm/cmd/vnfm-demo").CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}

	off := start(t, pgtest.NewDB(t), secrets.NewKey(), defaultServerEnv+"=1", "VNFM_SIMULATOR=off")
	if v := vimsOf(t, off.base); len(v) != 0 {
		t.Fatalf("VNFM_SIMULATOR=off registered VIMs: %v", v)
	}
	off.stop(t)

	srv := start(t, pgtest.NewDB(t), secrets.NewKey(), defaultServerEnv+"=1", "VNFM_SIMULATOR=on",
		"VNFM_SIMULATOR_LISTEN=127.0.0.1:0", "VNFM_SIMULATOR_HOSTS=on", k8sstandin.BinaryEnv+"="+standin)
	v := vimsOf(t, srv.base)
	if len(v) != 1 || v[0]["name"] != server.SimVimName || v[0]["is_default"] != true || v[0]["status"] != "ACTIVE" {
		t.Fatalf("the embedded cloud's VIM: %v", v)
	}
	cmdCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cmdCtx, demo, "-endpoint", srv.base).CombinedOutput() // the default: the HA sample
	if err != nil {
		srv.mu.Lock()
		logs := srv.logs.String()
		srv.mu.Unlock()
		t.Fatalf("make demo failed: %v\n%s\nserver log tail:\n%s", err, out, tail(logs, 4000))
	}
	for _, want := range []string{"INSTANTIATE COMPLETED", "Kubernetes VIM", "SCALE COMPLETED", "heal a master", "HEAL COMPLETED", "TERMINATE COMPLETED", "deleted VNF instance"} {
		if want == "heal a master" && strings.Contains(string(out), "skipped: the cluster has a single master") {
			t.Errorf("the default demo is not the HA cluster:\n%s", out)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
