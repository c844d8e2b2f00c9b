// Command vnfm-demo drives a running mini-VNFM (make run) through the whole
// lifecycle of a Kubernetes cluster over the public API, with a live
// progress display: create → instantiate → show the cluster → scale out →
// scale in → heal a worker → heal a master → the sample CNF on the cluster's
// Kubernetes VIM (cnf.go: instantiate, scale out, heal a pod, the cluster's
// terminate refused, terminate, delete) → terminate → delete. It exits
// non-zero on the first failure, leaving the failed op occurrence on screen.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/simcloud"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

func main() {
	endpoint := flag.String("endpoint", envOr("VNFM_ENDPOINT_URL", "http://127.0.0.1:9890"), "the VNFM's base URL")
	sample := flag.String("package", "kubeadm-ha", "sample package to build ("+strings.Join(samples.Names, ", ")+"); list: what each builds")
	password := flag.String("node-password", "demo-Passw0rd", "password of the cluster nodes' login")
	timeout := flag.Duration("timeout", 15*time.Minute, "bound of each operation")
	simUser := flag.String("cloud-user", "admin", "user of the default VIM (make run's simulator: admin)")
	simPassword := flag.String("cloud-password", "secret", "password of that user (make run's simulator: secret)")
	cnf := flag.Bool("cnf", true, "deploy the sample CNF on the cluster before terminating it (-cnf=false: the cluster alone)")
	printReq := flag.Bool("print-request", false, "print the complete instantiate request for the sample on the default VIM and exit")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "vnfm-demo: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if _, ok := samples.Plans[*sample]; !ok {
		w, code := os.Stderr, 2
		if *sample == "list" {
			w, code = os.Stdout, 0
		} else {
			fmt.Fprintf(w, "no sample package %q; make demo PACKAGE=<name> with one of:\n", *sample)
		}
		listSamples(w)
		os.Exit(code)
	}
	d := &demo{base: strings.TrimRight(*endpoint, "/"), timeout: *timeout, out: os.Stdout, tty: isTTY(),
		simUser: *simUser, simPassword: *simPassword, cnf: *cnf}
	if *printReq {
		body, err := d.instantiateRequest(*sample, *password)
		if err != nil {
			fmt.Fprintf(os.Stderr, "vnfm-demo: %v\n", err)
			os.Exit(1)
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(body)
		return
	}
	if err := d.run(*sample, *password); err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
}

// listSamples prints the PACKAGE values and what each builds.
func listSamples(w io.Writer) {
	for _, n := range samples.Names {
		fmt.Fprintf(w, "  %-16s %s\n", n, samples.Plans[n].Description)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func isTTY() bool {
	fi, err := os.Stdout.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type demo struct {
	base    string
	timeout time.Duration
	out     io.Writer
	tty     bool
	results []result
	steps   int  // the last step's number
	cnf     bool // the CNF part (cnf.go) runs

	simUser, simPassword string
	vim                  *vimClient     // the default VIM, once logged in (cloud.go)
	lastOp               map[string]any // the last op occurrence operate followed
}

type result struct {
	name, state string
	took        time.Duration
}

// call sends a request and decodes a JSON answer; a ProblemDetails becomes the error.
func (d *demo) call(method, path string, body any, out any) (http.Header, error) {
	code, h, b, err := d.request(method, path, body)
	if err != nil {
		return nil, err
	}
	if code >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, code, problemDetail(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return h, nil
}

// request sends a request and returns the answer as it is.
func (d *demo) request(method, path string, body any) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w (is `make run` running?)", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b, err
}

// problemDetail is a ProblemDetails' detail.
func problemDetail(b []byte) string {
	var pd struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(b, &pd)
	return pd.Detail
}

func (d *demo) printf(format string, a ...any) { fmt.Fprintf(d.out, format, a...) }

// next numbers the demo's steps.
func (d *demo) next() int { d.steps++; return d.steps }

// step starts a numbered step.
func (d *demo) step(title string) { d.printf("\n%d. %s\n", d.next(), title) }

func (d *demo) run(sample, password string) error {
	start := time.Now()
	vnfdID, err := d.sampleVnfd(sample)
	if err != nil {
		return err
	}
	plan := samples.Plans[sample]
	instBody, err := d.instantiateRequest(sample, password)
	if err != nil {
		return err
	}
	d.printf("%d. onboarded package: %s (vnfdId %s): %s\n", d.next(), sample, vnfdID, plan.Description)

	var inst map[string]any
	h, err := d.call("POST", "/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": vnfdID, "vnfInstanceName": "demo-" + time.Now().Format("150405")}, &inst)
	if err != nil {
		return err
	}
	id := inst["id"].(string)
	d.printf("%d. created VNF instance %s (%s)\n", d.next(), id, h.Get("Location"))

	steps := []struct {
		name, task string
		body       func() (map[string]any, error)
	}{
		{"instantiate", "instantiate", func() (map[string]any, error) { return instBody, nil }},
		{"scale out 2", "scale", func() (map[string]any, error) {
			return map[string]any{"type": "SCALE_OUT", "aspectId": plan.ScaleAspect, "numberOfSteps": 2}, nil
		}},
		{"scale in 1", "scale", func() (map[string]any, error) {
			return map[string]any{"type": "SCALE_IN", "aspectId": plan.ScaleAspect, "numberOfSteps": 1}, nil
		}},
		{"heal a worker", "heal", func() (map[string]any, error) { return d.healBody(id, "workerNode") }},
		{"heal a master", "heal", func() (map[string]any, error) {
			if !slices.Contains(plan.HealVDUs, "masterNode") {
				return nil, nil
			}
			return d.healBody(id, "masterNode")
		}},
		{"cnf", "", nil},
		{"terminate", "terminate", func() (map[string]any, error) {
			return map[string]any{"terminationType": "GRACEFUL", "gracefulTerminationTimeout": 10}, nil
		}},
	}
	for _, s := range steps {
		if s.name == "cnf" {
			if !d.cnf {
				d.step("the CNF on the cluster")
				d.printf("   skipped (-cnf=false)\n")
				continue
			}
			if err := d.runCNF(id, plan); err != nil {
				return err
			}
			continue
		}
		title := s.name
		if s.name == "terminate" && d.cnf {
			title = "terminate the cluster (VNF-A), now that nothing runs on its VIM"
		}
		d.step(title)
		body, err := s.body()
		if err != nil {
			return err
		}
		if body == nil {
			d.printf("   skipped: %s\n", plan.NoMasterHeal)
			continue
		}
		if err := d.operate(s.name, id, s.task, body); err != nil {
			return err
		}
		if s.task == "instantiate" {
			if err := d.showCluster(id); err != nil {
				return err
			}
			if plan.Generated {
				if err := d.showGenerated(id, d.lastOp); err != nil {
					return err
				}
			}
			if plan.Kuryr {
				if err := d.showKuryr(id); err != nil {
					return err
				}
			}
		}
		if s.task == "terminate" && plan.Kuryr {
			if err := d.showKuryrGone(id); err != nil {
				return err
			}
		}
	}
	if _, err := d.call("DELETE", "/vnflcm/v1/vnf_instances/"+id, nil, nil); err != nil {
		return err
	}
	d.step("deleted VNF instance " + id)
	d.printf("\n%-24s %-12s %10s\n", "operation", "result", "duration")
	for _, r := range d.results {
		d.printf("%-24s %-12s %10s\n", r.name, r.state, r.took.Round(100*time.Millisecond))
	}
	d.printf("%-24s %-12s %10s\n", "total", "", time.Since(start).Round(time.Second))
	return nil
}

// instantiateRequest is the sample's complete request on the default VIM:
// its network net0, and for kubespray its Ansible server, found through
// Keystone, Neutron and Nova as an operator would.
func (d *demo) instantiateRequest(sample, password string) (map[string]any, error) {
	cloud, err := d.cloudInfo(d.simUser, d.simPassword, samples.Plans[sample].NeedsAnsible)
	if err != nil {
		return nil, err
	}
	cloud.NodePassword = password
	cloud.VimName = "demo-" + sample + "-" + time.Now().Format("150405")
	return samples.InstantiateRequest(sample, cloud)
}

// healBody picks the first VNFC of a VDU.
func (d *demo) healBody(id, vdu string) (map[string]any, error) {
	var inst map[string]any
	if _, err := d.call("GET", "/vnflcm/v1/vnf_instances/"+id, nil, &inst); err != nil {
		return nil, err
	}
	info, _ := inst["instantiatedVnfInfo"].(map[string]any)
	list, _ := info["vnfcResourceInfo"].([]any)
	for _, x := range list {
		v := x.(map[string]any)
		if v["vduId"] == vdu {
			d.printf("   healing VNFC %s\n", v["id"])
			return map[string]any{"vnfcInstanceId": []any{v["id"]}, "cause": "demo"}, nil
		}
	}
	return nil, fmt.Errorf("no VNFC of VDU %s to heal", vdu)
}

// operate posts a task and follows its op occurrence until it ends.
func (d *demo) operate(name, id, task string, body map[string]any) error {
	start := time.Now()
	h, err := d.call("POST", "/vnflcm/v1/vnf_instances/"+id+"/"+task, body, nil)
	if err != nil {
		return err
	}
	loc := h.Get("Location")
	opPath := loc[strings.Index(loc, "/vnflcm/"):]
	last := ""
	seen := map[string]bool{}
	deadline := time.Now().Add(d.timeout)
	for {
		var op map[string]any
		if _, err := d.call("GET", opPath, nil, &op); err != nil {
			return err
		}
		view := render(op, time.Since(start))
		switch {
		case d.tty && view != last:
			if last != "" {
				d.printf("\033[%dA\033[J", strings.Count(last, "\n"))
			}
			d.printf("%s", view)
		case !d.tty:
			// A log, not a screen: print each step or node line once per change.
			for _, l := range strings.Split(strings.TrimRight(view, "\n"), "\n")[1:] {
				if !seen[l] {
					seen[l] = true
					d.printf("%s  (%s)\n", l, time.Since(start).Round(100*time.Millisecond))
				}
			}
		}
		last = view
		d.lastOp = op
		state, _ := op["operationState"].(string)
		if !d.tty && (state == "COMPLETED" || state == "FAILED_TEMP" || state == "FAILED" || state == "ROLLED_BACK") {
			d.printf("   %s %s in %s\n", op["operation"], state, time.Since(start).Round(100*time.Millisecond))
		}
		switch state {
		case "COMPLETED":
			d.results = append(d.results, result{name, state, time.Since(start)})
			return nil
		case "FAILED_TEMP", "FAILED", "ROLLED_BACK":
			d.results = append(d.results, result{name, state, time.Since(start)})
			pd, _ := op["error"].(map[string]any)
			return fmt.Errorf("%s ended %s (op occurrence %s): %v", name, state, op["id"], pd["detail"])
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not finish within %s (op occurrence %s)", name, d.timeout, op["id"])
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// render shows an op occurrence's progress: steps and per-node status.
func render(op map[string]any, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "   %s %s  %s\n", op["operation"], op["operationState"], elapsed.Round(100*time.Millisecond))
	prog, _ := op["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, x := range steps {
		s := x.(map[string]any)
		line := fmt.Sprintf("     %-32s %-10s", s["name"], s["state"])
		if total, _ := s["nodesTotal"].(float64); total > 0 {
			done, _ := s["nodesDone"].(float64)
			line += fmt.Sprintf(" nodes %d/%d", int(done), int(total))
		}
		b.WriteString(line + "\n")
		nodes, _ := s["nodes"].([]any)
		sort.SliceStable(nodes, func(i, j int) bool {
			return fmt.Sprint(nodes[i].(map[string]any)["name"]) < fmt.Sprint(nodes[j].(map[string]any)["name"])
		})
		for _, y := range nodes {
			n := y.(map[string]any)
			if n["state"] == "RUNNING" || n["state"] == "FAILED" {
				fmt.Fprintf(&b, "       %-30s %-10s %s\n", n["name"], n["state"], n["message"])
			}
		}
	}
	if e, _ := prog["lastError"].(string); e != "" {
		fmt.Fprintf(&b, "     last error: %s\n", e)
	}
	return b.String()
}

// showCluster prints the Kubernetes VIM the driver registered.
func (d *demo) showCluster(id string) error {
	vimID, _, err := d.clusterVim(id)
	if err != nil {
		return err
	}
	var vim struct {
		Vim map[string]any `json:"vim"`
	}
	if _, err := d.call("GET", "/v1.0/vims/"+vimID, nil, &vim); err != nil {
		return err
	}
	d.printf("   Kubernetes VIM %s: %s (%s)\n", vim.Vim["name"], vim.Vim["auth_url"], vim.Vim["status"])
	return nil
}

// cloudInfo finds, on the default VIM, the network net0 (the one whose
// servers the VNFM reaches), Keystone as the servers reach it (the internal
// identity endpoint, for software in the cluster such as Kuryr's
// controller) and, when asked, the Ansible server (ansible-server, whose
// Nova metadata carries its login), through Keystone, Neutron and Nova as an
// operator would.
func (d *demo) cloudInfo(user, password string, ansible bool) (samples.Cloud, error) {
	var c samples.Cloud
	vc, err := d.vimLogin(user, password)
	if err != nil {
		return c, err
	}
	if in := vc.internal["identity"]; in != "" && in != vc.endpoint["identity"] {
		c.ClusterAuthURL = in
	}
	get := vc.get
	endpoint := vc.endpoint
	var nets struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := get(endpoint["network"]+"/v2.0/networks?name=net0", &nets); err != nil || len(nets.Networks) == 0 {
		return c, fmt.Errorf("the default VIM has no network net0 (%v)", err)
	}
	c.NetworkID = nets.Networks[0].ID
	if !ansible {
		return c, nil
	}
	var srvs struct {
		Servers []struct {
			Status    string                      `json:"status"`
			Metadata  map[string]string           `json:"metadata"`
			Addresses map[string][]map[string]any `json:"addresses"`
		} `json:"servers"`
	}
	if err := get(endpoint["compute"]+"/servers/detail?name="+simcloud.AnsibleServerName, &srvs); err != nil {
		return c, fmt.Errorf("looking for the Ansible server: %w", err)
	}
	for _, sv := range srvs.Servers {
		if sv.Status != "ACTIVE" || sv.Metadata[simcloud.MetaRole] != "ansible-server" {
			continue
		}
		var addrs []string
		for _, list := range sv.Addresses {
			for _, a := range list {
				if s, ok := a["addr"].(string); ok {
					addrs = append(addrs, s)
				}
			}
		}
		c.Ansible = simcloud.AnsibleFromMetadata(addrs, sv.Metadata)
		return c, nil
	}
	return c, fmt.Errorf("the default VIM has no ACTIVE server %s: `make run` brings one when its hosts are real (as root); its log says why it is missing", simcloud.AnsibleServerName)
}
