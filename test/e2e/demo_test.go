package e2e

import (
	"context"
	"encoding/json"
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
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/samples"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// roleDefault is this test binary re-executed to serve exactly like
// `vnfm serve`: built-in drivers, and the embedded cloud when configured.
var roleDefault = harness.Role("default", func() int {
	return harness.Serve("e2e-default", func(context.Context, *config.Config) (server.Options, func(), error) {
		return server.Options{}, nil, nil
	})
})

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

	off := harness.Start(t, roleDefault, pgtest.NewDB(t), secrets.NewKey(), "VNFM_SIMULATOR=off")
	if v := vimsOf(t, off.Base); len(v) != 0 {
		t.Fatalf("VNFM_SIMULATOR=off registered VIMs: %v", v)
	}
	off.Stop(20 * time.Second)

	removeHostsAtEnd(t, "e2enewc")
	srv := harness.Start(t, roleDefault, pgtest.NewDB(t), secrets.NewKey(), "VNFM_SIMULATOR=on",
		"VNFM_SIMULATOR_LISTEN=127.0.0.1:0", "VNFM_SIMULATOR_HOSTS=on", "VNFM_SIMULATOR_PREFIX=e2enewc", "VNFM_DATA_DIR="+t.TempDir(),
		k8sstandin.BinaryEnv+"="+standin)
	waitSamplesOnboarded(t, srv.Base) // the VIM is registered first
	v := vimsOf(t, srv.Base)
	if len(v) != 1 || v[0]["name"] != server.SimVimName || v[0]["is_default"] != true || v[0]["status"] != "ACTIVE" {
		t.Fatalf("the embedded cloud's VIM: %v", v)
	}
	cmdCtx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cmdCtx, demo, "-endpoint", srv.Base).CombinedOutput() // the default: the HA sample
	if err != nil {
		logs := srv.Logs()
		t.Fatalf("make demo failed: %v\n%s\nserver log tail:\n%s", err, out, tail(logs, 4000))
	}
	for _, want := range []string{"INSTANTIATE COMPLETED", "Kubernetes VIM", "SCALE COMPLETED", "heal a master", "HEAL COMPLETED", "TERMINATE COMPLETED", "deleted VNF instance"} {
		if want == "heal a master" && strings.Contains(string(out), "skipped:") {
			t.Errorf("the default demo is not the HA cluster:\n%s", out)
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// It continued onto the CNF (issue 16).
	checkDemoCNF(t, srv.Base, string(out), false)

	// Every sample make run onboards has a complete request on the
	// embedded cloud (kubespray's names the cloud's Ansible server), and a
	// bad name lists them.
	for _, sample := range samples.Names {
		out, err := exec.CommandContext(cmdCtx, demo, "-endpoint", srv.Base, "-package", sample, "-print-request").Output()
		var body map[string]any
		if err != nil || json.Unmarshal(out, &body) != nil {
			t.Fatalf("make demo PACKAGE=%s DEMOFLAGS=-print-request: %v\n%s", sample, err, out)
		}
		if body["flavourId"] != samples.Plans[sample].Flavour {
			t.Errorf("%s: request %s", sample, out)
		}
		if sample == "kubespray" && !strings.Contains(string(out), `"ip_address": "10.77.0.5"`) {
			t.Errorf("the kubespray request does not name the embedded Ansible server:\n%s", out)
		}
	}
	bad := exec.CommandContext(cmdCtx, demo, "-endpoint", srv.Base, "-package", "kubeadm-nope")
	out, err = bad.CombinedOutput()
	if bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "kubespray") || !strings.Contains(string(out), "kubeadm-ha-lb") {
		t.Errorf("a bad package name: %v\n%s", err, out)
	}
}

// TestNewcomerKill9DuringHAInstantiate kills `make run` (the VNFM process,
// and with it the embedded cloud) with SIGKILL while the HA cluster is being
// built, and starts it again on the same data directory: the embedded cloud
// comes back with its servers, their addresses, host keys and disks, the
// engine resumes the operation, and it completes; the cluster then scales
// and terminates like any other.
func TestNewcomerKill9DuringHAInstantiate(t *testing.T) {
	if os.Geteuid() != 0 && os.Getenv("TESTHOSTS_REQUIRED") != "1" {
		t.Skip("the embedded cloud's real hosts need root (network namespaces); CI runs as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	standin, err := k8sstandin.Binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(t.TempDir(), "vnfm-demo")
	if out, err := exec.Command("go", "build", "-o", demo, "github.com/mini-vnfm/mini-vnfm/cmd/vnfm-demo").CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	db, key, data := pgtest.NewDB(t), secrets.NewKey(), t.TempDir()
	env := []string{"VNFM_SIMULATOR=on", "VNFM_SIMULATOR_LISTEN=127.0.0.1:0", "VNFM_SIMULATOR_HOSTS=on",
		"VNFM_SIMULATOR_PREFIX=e2ekill", "VNFM_DATA_DIR=" + data, "VNFM_LEASE=5s", k8sstandin.BinaryEnv + "=" + standin}
	removeHostsAtEnd(t, "e2ekill")
	a := harness.Start(t, roleDefault, db, key, env...)
	body, err := exec.CommandContext(ctx, demo, "-endpoint", a.Base, "-package", "kubeadm-ha", "-print-request").Output()
	if err != nil {
		t.Fatalf("instantiate request: %v", err)
	}
	var pkgs []map[string]any
	_, _, b := call(t, "GET", a.Base+"/vnfpkgm/v1/vnf_packages?all_fields", "")
	_ = json.Unmarshal(b, &pkgs)
	vnfd := ""
	for _, p := range pkgs {
		if udd, _ := p["userDefinedData"].(map[string]any); udd["sample"] == "kubeadm-ha" {
			vnfd, _ = p["vnfdId"].(string)
		}
	}
	code, _, b := call(t, "POST", a.Base+"/vnflcm/v1/vnf_instances", `{"vnfdId":"`+vnfd+`"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var inst map[string]any
	_ = json.Unmarshal(b, &inst)
	id := inst["id"].(string)
	code, h, b := call(t, "POST", a.Base+"/vnflcm/v1/vnf_instances/"+id+"/instantiate", string(body))
	if code != 202 {
		t.Fatalf("instantiate: %d %s", code, b)
	}
	loc := h.Get("Location")
	opID := loc[strings.LastIndex(loc, "/")+1:]
	// Kill when the first master is initialised and the others are joining.
	deadline := time.Now().Add(5 * time.Minute)
	for !stepNodesDone(opDoc(t, a.Base, opID), "mgmt.instantiate_end", 2) {
		if d := opDoc(t, a.Base, opID); d["operationState"] != "PROCESSING" && d["operationState"] != "STARTING" || time.Now().After(deadline) {
			t.Fatalf("instantiate did not get to the masters' joins: %v %v", d["operationState"], d["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := a.Kill9(); err != nil {
		t.Fatal(err)
	}

	b2 := harness.Start(t, roleDefault, db, key, env...)
	var d map[string]any
	for deadline = time.Now().Add(6 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		d = opDoc(t, b2.Base, opID)
		if s := d["operationState"]; s == "COMPLETED" || s == "FAILED_TEMP" || s == "FAILED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("op stuck in %v after the restart: %v", d["operationState"], d["progress"])
		}
	}
	if d["operationState"] != "COMPLETED" {
		logs := b2.Logs()
		t.Fatalf("resumed instantiate ended %v: %v\n%s", d["operationState"], d["error"], tail(logs, 4000))
	}
	// The cluster is usable: its VIM is registered, it scales out; after a
	// graceful restart too (the instance's servers are still there): a
	// worker is healed over SSH with the pinned host keys, then the
	// instance terminates.
	code, _, b = call(t, "GET", b2.Base+"/vnflcm/v1/vnf_instances/"+id, "")
	if code != 200 || !strings.Contains(string(b), "KUBERNETES") {
		t.Fatalf("instance after the resumed instantiate: %d %s", code, b)
	}
	lcmOp(t, b2, id, "scale", `{"type":"SCALE_OUT","aspectId":"worker_instance","numberOfSteps":1}`)
	b2.Stop(20 * time.Second)
	b3 := harness.Start(t, roleDefault, db, key, env...)
	_, _, b = call(t, "GET", b3.Base+"/vnflcm/v1/vnf_instances/"+id, "")
	var after map[string]any
	_ = json.Unmarshal(b, &after)
	worker := ""
	for _, x := range after["instantiatedVnfInfo"].(map[string]any)["vnfcResourceInfo"].([]any) {
		if v := x.(map[string]any); v["vduId"] == "workerNode" {
			worker, _ = v["id"].(string)
		}
	}
	if worker == "" {
		t.Fatalf("no worker VNFC after the graceful restart: %s", b)
	}
	lcmOp(t, b3, id, "heal", `{"vnfcInstanceId":["`+worker+`"]}`)
	lcmOp(t, b3, id, "terminate", `{"terminationType":"FORCEFUL"}`)
}

// removeHostsAtEnd removes the embedded cloud's hosts (namespaces
// prefix-*) at the test's end: the cloud keeps them for the next start
// (make run's persistence). Call it before starting the server, so that it
// runs after the server has stopped.
func removeHostsAtEnd(t *testing.T, prefix string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := testhosts.Cleanup(ctx, prefix); err != nil {
			t.Errorf("removing the embedded cloud's hosts %s-*: %v", prefix, err)
		}
	})
}

// lcmOp posts a task and waits for its op occurrence to complete.
func lcmOp(t *testing.T, srv *harness.Process, id, task, body string) {
	t.Helper()
	base := srv.Base
	code, h, b := call(t, "POST", base+"/vnflcm/v1/vnf_instances/"+id+"/"+task, body)
	if code != 202 {
		t.Fatalf("%s: %d %s", task, code, b)
	}
	loc := h.Get("Location")
	oid := loc[strings.LastIndex(loc, "/")+1:]
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		d := opDoc(t, base, oid)
		if s := d["operationState"]; s == "COMPLETED" {
			return
		} else if s == "FAILED_TEMP" || s == "FAILED" || time.Now().After(deadline) {
			var logs []string
			for _, l := range strings.Split(srv.Logs(), "\n") {
				if !strings.Contains(l, "msg=http ") {
					logs = append(logs, l)
				}
			}
			t.Fatalf("%s after the restart: %v %v\nserver log tail (no access lines):\n%s", task, s, d["error"], tail(strings.Join(logs, "\n"), 8000))
		}
	}
}

// stepNodesDone reports whether a step has at least n completed nodes.
func stepNodesDone(d map[string]any, step string, n int) bool {
	prog, _ := d["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, s := range steps {
		m := s.(map[string]any)
		if m["name"] == step {
			done, _ := m["nodesDone"].(float64)
			return int(done) >= n
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestRealHeatMakeRunDemo is make run with VNFM_SIMULATOR_HEAT=real and
// make demo: the HA sample's whole lifecycle (instantiate, scale out 2,
// scale in 1, heal a worker, heal a master, terminate) with the VNFM
// talking to real Keystone 22 and Heat 19.0.0, whose Nova, Neutron and
// Glance are the embedded simulator's, servers real SSH hosts.
func TestRealHeatMakeRunDemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the embedded cloud's real hosts need root (network namespaces); run as root (CI does)")
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
	removeHostsAtEnd(t, "e2erealh")
	srv := harness.Start(t, roleDefault, pgtest.NewDB(t), secrets.NewKey(), "VNFM_SIMULATOR=on", "VNFM_SIMULATOR_HEAT=real",
		"VNFM_SIMULATOR_LISTEN=127.0.0.1:0", "VNFM_SIMULATOR_HOSTS=on", "VNFM_SIMULATOR_PREFIX=e2erealh", "VNFM_DATA_DIR="+t.TempDir(),
		k8sstandin.BinaryEnv+"="+standin)
	v := vimsOf(t, srv.Base)
	if len(v) != 1 || v[0]["status"] != "ACTIVE" {
		t.Fatalf("the embedded cloud's VIM: %v", v)
	}
	cmdCtx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(cmdCtx, demo, "-endpoint", srv.Base).CombinedOutput()
	if err != nil {
		logs := srv.Logs()
		t.Fatalf("make demo failed: %v\n%s\nserver log tail:\n%s", err, out, tail(logs, 4000))
	}
	t.Logf("make demo on real Keystone + Heat: %s", time.Since(began).Round(time.Second))
	for _, want := range []string{"INSTANTIATE COMPLETED", "SCALE COMPLETED", "heal a master", "HEAL COMPLETED", "TERMINATE COMPLETED", "deleted VNF instance"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	checkDemoCNF(t, srv.Base, string(out), false)
	logs := srv.Logs()
	if !strings.Contains(logs, "real Keystone") && !strings.Contains(logs, "VNFM_SIMULATOR_HEAT=real") {
		t.Errorf("the server did not start real Keystone and Heat:\n%s", tail(logs, 2000))
	}
}
