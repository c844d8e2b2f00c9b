package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/samples"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// TestSeedsDemos runs `make demo PACKAGE=kubeadm-kuryr` and
// `make demo PACKAGE=kubeadm-tosca` against `make run` (the VNFM with its
// embedded cloud on real hosts), as a new user would: the Kuryr cluster's
// stack has a router and a load balancer, the demo shows Kuryr's pod network
// and kuryr-controller's credential, and after terminate the credential
// revoked and nothing Kuryr made left in the VIM; the TOSCA
// cluster is built from the template the VNFM generates from the seed's
// VNFD. Both scale, heal and terminate, and carry the sample CNF before
// they do; the CNF on the Kuryr cluster has a Service of type LoadBalancer
// whose Octavia load balancer has the CNF's pods, at their Neutron ports,
// as members. An unknown user-data class is 422,
// listing the classes the VNFM runs.
func TestSeedsDemos(t *testing.T) {
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
	removeHostsAtEnd(t, "e2eseed")
	srv := harness.Start(t, roleDefault, pgtest.NewDB(t), secrets.NewKey(), "VNFM_SIMULATOR=on",
		"VNFM_SIMULATOR_LISTEN=127.0.0.1:0", "VNFM_SIMULATOR_HOSTS=on", "VNFM_SIMULATOR_PREFIX=e2eseed", "VNFM_DATA_DIR="+t.TempDir(),
		k8sstandin.BinaryEnv+"="+standin)

	// Requests that cannot succeed: 422 before anything is made, naming
	// what is wrong (an unknown user-data class, listing the supported
	// ones; a TOSCA VDU without an image or a flavor).
	pkgs := waitSamplesOnboarded(t, srv.Base)
	for _, tc := range []struct {
		sample string
		check  func(req string) bool // the demo's request
		break_ func(ap map[string]any)
		want   []string
	}{
		{"kubeadm-kuryr", func(req string) bool {
			return strings.Contains(req, `"lcm-operation-user-data-class": "BaseUserData"`) && strings.Contains(req, `"cni": "kuryr"`) &&
				strings.Contains(req, `"auth_url": "http://10.77.0.1:`)
		}, func(ap map[string]any) { ap["lcm-operation-user-data-class"] = "MyOwnUserData" }, []string{"MyOwnUserData", "BaseUserData"}},
		{"kubeadm-tosca", func(req string) bool { return strings.Contains(req, `"image": "`+samples.DefaultImage+`"`) },
			func(ap map[string]any) { delete(ap, "nfv") }, []string{"masterNode", "workerNode", "image", "flavor"}},
	} {
		body, err := exec.CommandContext(ctx, demo, "-endpoint", srv.Base, "-package", tc.sample, "-print-request").Output()
		if err != nil || !tc.check(string(body)) {
			t.Fatalf("the %s request: %v %s", tc.sample, err, body)
		}
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		tc.break_(req["additionalParams"].(map[string]any))
		vnfd := ""
		for _, p := range pkgs {
			if udd, _ := p["userDefinedData"].(map[string]any); udd["sample"] == tc.sample {
				vnfd, _ = p["vnfdId"].(string)
			}
		}
		code, _, b := call(t, "POST", srv.Base+"/vnflcm/v1/vnf_instances", `{"vnfdId":"`+vnfd+`"}`)
		if code != 201 {
			t.Fatalf("create %s: %d %s", tc.sample, code, b)
		}
		var inst map[string]any
		_ = json.Unmarshal(b, &inst)
		bad, _ := json.Marshal(req)
		code, _, b = call(t, "POST", srv.Base+"/vnflcm/v1/vnf_instances/"+inst["id"].(string)+"/instantiate", string(bad))
		if code != 422 {
			t.Fatalf("%s, a request that cannot succeed: %d %s", tc.sample, code, b)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: the 422 does not name %q: %s", tc.sample, w, b)
			}
		}
		if code, _, b := call(t, "GET", srv.Base+"/vnflcm/v1/vnf_lcm_op_occs", ""); code != 200 || strings.Contains(string(b), inst["id"].(string)) {
			t.Fatalf("the refused request made an op occurrence: %d %s", code, b)
		}
		if code, _, _ := call(t, "DELETE", srv.Base+"/vnflcm/v1/vnf_instances/"+inst["id"].(string), ""); code != 204 {
			t.Fatalf("delete: %d", code)
		}
	}

	for _, tc := range []struct {
		sample string
		want   []string
	}{
		{"kubeadm-kuryr", []string{"INSTANTIATE COMPLETED", "Kubernetes VIM", "Kuryr-Kubernetes pod network", "router router",
			"load balancer api_lb", "subnet pod_subnet", "10.244.0.0/16", "kuryr-controller logs in with application credential kuryr-",
			"network and load-balancer only", "Neutron port 10.244.",
			"SCALE COMPLETED", "HEAL COMPLETED", "TERMINATE COMPLETED", "is revoked", "nothing Kuryr made is left in the VIM", "deleted VNF instance"}},
		{"kubeadm-tosca", []string{"INSTANTIATE COMPLETED", "Kubernetes VIM", "Heat template generated from the VNFD", "sha256 ",
			"OS::Heat::AutoScalingGroup", "OS::Neutron::Net", "SCALE COMPLETED", "HEAL COMPLETED", "TERMINATE COMPLETED", "deleted VNF instance"}},
	} {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(cctx, demo, "-endpoint", srv.Base, "-package", tc.sample).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("make demo PACKAGE=%s failed: %v\n%s\nserver log tail:\n%s", tc.sample, err, out, srv.LogTail(4000))
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("make demo PACKAGE=%s: the output lacks %q:\n%s", tc.sample, w, out)
			}
		}
		// The CNF on the cluster; on the Kuryr one with its Service's
		// Octavia load balancer.
		checkDemoCNF(t, srv.Base, string(out), tc.sample == "kubeadm-kuryr")
		t.Logf("make demo PACKAGE=%s: %s", tc.sample, time.Since(start).Round(time.Second))
		if p := os.Getenv("SEEDS_DEMO_OUT"); p != "" {
			_ = os.WriteFile(p+"."+tc.sample, out, 0o600)
		}
	}
}
