package e2e

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/samples"
)

// checkDemoCNF asserts make demo's CNF part (issue 16) from the VNFM's
// records as well as from what the demo printed: the sample CNF (VNF-B) was
// instantiated on the cluster's VIM, scaled out, healed and terminated, all
// COMPLETED; the cluster's termination while the CNF ran was refused (409
// naming the CNF) without an operation; VNF-B was terminated before VNF-A;
// both instances are deleted and the cluster's VIM is gone. With kuryr, the
// CNF's Service of type LoadBalancer had an Octavia load balancer whose
// members were the CNF's pods at their Neutron ports, after each step, and
// it went with the CNF (issue 17).
func checkDemoCNF(t *testing.T, base, out string, kuryr bool) {
	t.Helper()
	find := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the demo's output has no %q:\n%s", re, out)
		}
		return m[1]
	}
	cluster := find(`(?m)^2\. created VNF instance (\S+) `)
	cnf := find(`created VNF instance (\S+) from package cnf-helloworld`)

	// The VNFM's records: every operation of both, in order.
	_, _, b := call(t, "GET", base+"/vnflcm/v1/vnf_lcm_op_occs", "")
	var ops []struct {
		Operation, OperationState, VnfInstanceID, StartTime string
	}
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatalf("op occurrences: %v %s", err, b)
	}
	var cnfOps, clusterOps []string
	var cnfTerminated, clusterTerminated time.Time
	for _, o := range ops {
		start, _ := time.Parse(time.RFC3339, o.StartTime)
		switch o.VnfInstanceID {
		case cnf:
			cnfOps = append(cnfOps, o.Operation+" "+o.OperationState)
			if o.Operation == "TERMINATE" {
				cnfTerminated = start
			}
		case cluster:
			clusterOps = append(clusterOps, o.Operation+" "+o.OperationState)
			if o.Operation == "TERMINATE" {
				clusterTerminated = start
			}
		}
	}
	slices.Sort(cnfOps)
	if want := []string{"HEAL COMPLETED", "INSTANTIATE COMPLETED", "SCALE COMPLETED", "TERMINATE COMPLETED"}; !slices.Equal(cnfOps, want) {
		t.Errorf("the CNF's operations: %v, want %v", cnfOps, want)
	}
	terminates := slices.DeleteFunc(slices.Clone(clusterOps), func(s string) bool { return !strings.HasPrefix(s, "TERMINATE") })
	if !slices.Equal(terminates, []string{"TERMINATE COMPLETED"}) {
		t.Errorf("the cluster's operations: %v, want one TERMINATE, COMPLETED (the refused one makes none)", clusterOps)
	}
	if cnfTerminated.IsZero() || !cnfTerminated.Before(clusterTerminated) {
		t.Errorf("VNF-B was terminated at %v, VNF-A at %v: VNF-B goes first", cnfTerminated, clusterTerminated)
	}
	for _, id := range []string{cnf, cluster} {
		if code, _, b := call(t, "GET", base+"/vnflcm/v1/vnf_instances/"+id, ""); code != 404 {
			t.Errorf("instance %s after the demo: %d %s, want it deleted", id, code, b)
		}
	}
	for _, v := range vimsOf(t, base) {
		if v["type"] == "kubernetes" {
			t.Errorf("a Kubernetes VIM is left after the demo: %v", v)
		}
	}

	// What it showed: the refusal naming the CNF, before VNF-B's
	// termination; the pods after each step (1, 2, 2).
	refused := strings.Index(out, "409 Conflict: ")
	if refused < 0 || !strings.Contains(out[refused:], cnf) || !strings.Contains(out[refused:], "still INSTANTIATED") {
		t.Errorf("the demo does not show the 409 naming CNF %s and the cluster still INSTANTIATED:\n%s", cnf, out)
	}
	if i := strings.Index(out, "terminate the CNF (VNF-B)"); i < refused || i > strings.Index(out, "terminate the cluster (VNF-A), now that") {
		t.Errorf("the demo's order is not 409, terminate VNF-B, terminate VNF-A:\n%s", out)
	}
	podLine := regexp.MustCompile(`(?m)^     [0-9a-f]{8} web   web-\S+ +\S+ +Running, ready`)
	tables := strings.Split(out, "the CNF's pods (vnfcResourceInfo):")[1:]
	var rows []int
	for _, tb := range tables {
		rows = append(rows, len(podLine.FindAllString(strings.SplitN(tb, "\n\n", 2)[0], -1)))
	}
	if !slices.Equal(rows, []int{1, 2, 2}) {
		t.Errorf("the CNF's pods shown after instantiate, scale out and heal: %v rows, want 1, 2, 2:\n%s", rows, out)
	}
	if !kuryr {
		if strings.Contains(out, "Octavia load balancer") {
			t.Errorf("a load balancer for the CNF's Service without Kuryr:\n%s", out)
		}
		return
	}
	// Kuryr: the load balancer after each step, its members the pods at
	// their Neutron ports (the addresses shown with the pods), gone with
	// the CNF.
	lbs := regexp.MustCompile(`Service default/web-lb \(type LoadBalancer\): kuryr-controller made Octavia load balancer (\S+)`).FindAllStringSubmatch(out, -1)
	if len(lbs) != 3 || lbs[0][1] != lbs[1][1] || lbs[1][1] != lbs[2][1] {
		t.Fatalf("the CNF Service's load balancer after instantiate, scale out and heal: %v\n%s", lbs, out)
	}
	for i, tb := range tables {
		ports := regexp.MustCompile(`(?m)^     [0-9a-f]{8} web   (web-\S+) .*Neutron port (10\.244\.\d+\.\d+)$`).FindAllStringSubmatch(tb, -1)
		if len(ports) != rows[i] {
			t.Errorf("table %d: %d pods with a Neutron port, want %d:\n%s", i+1, len(ports), rows[i], tb)
		}
		for _, p := range ports {
			if !strings.Contains(tb, p[2]+":8080  pod default/"+p[1]) {
				t.Errorf("table %d: pod %s (port %s) is not a member of the Service's load balancer:\n%s", i+1, p[1], p[2], tb)
			}
		}
	}
	if !strings.Contains(out, "kuryr-controller deleted its load balancer "+lbs[0][1]) {
		t.Errorf("the demo does not show the CNF Service's load balancer %s gone:\n%s", lbs[0][1], out)
	}
}

// waitSamplesOnboarded waits (bounded) until make run's server has
// onboarded every sample package: it serves the API while it still
// onboards them.
func waitSamplesOnboarded(t *testing.T, base string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var pkgs []map[string]any
		_, _, b := call(t, "GET", base+"/vnfpkgm/v1/vnf_packages?all_fields", "")
		if err := json.Unmarshal(b, &pkgs); err != nil {
			t.Fatalf("packages: %v %s", err, b)
		}
		var missing []string
		for _, name := range append(slices.Clone(samples.Names), samples.CNFNames...) {
			if !slices.ContainsFunc(pkgs, func(p map[string]any) bool {
				udd, _ := p["userDefinedData"].(map[string]any)
				return udd["sample"] == name && p["onboardingState"] == "ONBOARDED"
			}) {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			return pkgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples %v are not onboarded 2 min after the server started", missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
