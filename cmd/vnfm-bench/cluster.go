package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/k8sstandin"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
	"github.com/mini-vnfm/mini-vnfm/samples"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// The cluster build figures (docs/benchmarks.md).
const (
	clusterMasters  = 3
	clusterWorkers  = 10
	clusterScaleOut = 10
	clusterDB       = "vnfm_cluster"
	benchVnfdID     = "b0a7c1a5-0000-4000-8000-0000000b3e9c" // the bench variant of kubeadm-ha
)

// cluster builds M=3 masters and W=10 workers with the kubeadm driver through
// the engine, on simulator hosts whose stand-in install step takes t, then
// scales out by 10 workers.
func (b *bench) cluster() error {
	skip := func(note string) error {
		for _, id := range []string{"cluster.build_vs_critical_path", "cluster.build_vs_one_at_a_time", "cluster.scale_out_10"} {
			b.res.add(Figure{ID: id, Group: "cluster", Title: "cluster build (" + id + ")", Status: StatusSkipped, Note: note})
		}
		return nil
	}
	if os.Geteuid() != 0 {
		return skip("needs root: the simulator's servers are network namespaces with their own sshd (internal/testhosts)")
	}
	if err := testhosts.CheckTools(); err != nil {
		return skip(err.Error())
	}
	standin, err := k8sstandin.Binary(b.ctx)
	if err != nil {
		return err
	}
	csar, err := benchHAPackage()
	if err != nil {
		return fmt.Errorf("bench package: %w", err)
	}
	// A database of its own: the engine's VNFM (in-test drivers) must not
	// pick up these operations.
	if err := b.exec(b.ctx, "CREATE DATABASE "+clusterDB); err != nil {
		return err
	}
	dbURL := b.pg.URL(clusterDB)
	if err := store.MigrateUp(b.ctx, dbURL); err != nil {
		return err
	}
	base, stop, err := b.startFullVNFM(dbURL, standin, b.o.stepT)
	if err != nil {
		return err
	}
	defer stop()
	c := &apiClient{ctx: b.ctx, base: base, http: &http.Client{Timeout: time.Minute}}
	vnfdID, err := c.onboard(csar)
	if err != nil {
		return err
	}
	netID, err := c.cloudNetwork()
	if err != nil {
		return err
	}
	var inst struct{ ID string }
	if err := c.json("POST", "/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": vnfdID, "vnfInstanceName": "bench-cluster"}, http.StatusCreated, &inst); err != nil {
		return err
	}
	t := b.o.stepT
	body := benchInstantiateBody(netID)
	logf("instantiating %d masters and %d workers (install step t = %v)", clusterMasters, clusterWorkers, t)
	opID, opWall, err := c.operate(inst.ID, "instantiate", body)
	if err != nil {
		return err
	}
	build, err := splitStep(b.ctx, dbURL, opID, "mgmt.instantiate_end", t)
	if err != nil {
		return err
	}
	logf("instantiate: %v in all, mgmt.instantiate_end %v: %s", opWall.Round(time.Millisecond), build.Wall().Round(time.Millisecond), build.note(t))
	crit := time.Duration(clusterMasters)*t + t
	status := "" // from the goal
	if t <= 0 {
		status = StatusInfo // -step-t 0: the build's own overhead, no ratio
	}
	serial := time.Duration(clusterMasters+clusterWorkers) * t
	b.res.add(Figure{ID: "cluster.build_vs_critical_path", Group: "cluster",
		Title: fmt.Sprintf("cluster build wall (VNFM's part) ÷ (M·t + t), M=%d masters, W=%d workers, t = %v", clusterMasters, clusterWorkers, t),
		Value: ratio(build.VNFM(), crit), Goals: []Goal{{Op: "<=", Limit: 1.15}}, Status: status,
		Note: fmt.Sprintf("mgmt.instantiate_end: %s; the whole instantiate (POST → COMPLETED, servers created and booted, stand-in installed) took %.2f s",
			build.note(t), opWall.Seconds())})
	b.res.add(Figure{ID: "cluster.build_wall_vs_critical_path", Group: "cluster",
		Title: "  cluster build wall with the test world's time ÷ (M·t + t)",
		Value: ratio(build.Wall(), crit), Note: fmt.Sprintf("mgmt.instantiate_end %.2f s, of it the test world's %.2f s", build.Wall().Seconds(), build.TestWorld.Seconds())})
	b.res.add(Figure{ID: "cluster.build_test_world", Group: "cluster", Unit: "s",
		Title: "  test world's time on the critical path (kubeadm runs beyond t)", Value: ptr(build.TestWorld.Seconds()),
		Note: fmt.Sprintf("Σ kubeadm run time %.2f s over %d runs", build.KubeadmTotal.Seconds(), len(build.Runs))})
	b.res.add(Figure{ID: "cluster.build_vs_one_at_a_time", Group: "cluster",
		Title: "  cluster build wall (VNFM's part) ÷ (M+W)·t (a one-node-at-a-time build like Tacker's)",
		Value: ratio(build.VNFM(), serial), Note: fmt.Sprintf("(M+W)·t = %.0f s", serial.Seconds())})

	logf("scaling out by %d workers", clusterScaleOut)
	opID, opWall, err = c.operate(inst.ID, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": clusterScaleOut})
	if err != nil {
		return err
	}
	scale, err := splitStep(b.ctx, dbURL, opID, "mgmt.scale_end", t)
	if err != nil {
		return err
	}
	logf("scale out: %v in all, mgmt.scale_end %v: %s", opWall.Round(time.Millisecond), scale.Wall().Round(time.Millisecond), scale.note(t))
	b.res.add(Figure{ID: "cluster.scale_out_10", Group: "cluster",
		Title: fmt.Sprintf("scale-out of %d workers (mgmt.scale_end, VNFM's part) ÷ t", clusterScaleOut),
		Value: ratio(scale.VNFM(), t),
		Note: fmt.Sprintf("mgmt.scale_end: %s; the whole scale (POST → COMPLETED) took %.2f s; one at a time would be %d",
			scale.note(t), opWall.Seconds(), clusterScaleOut)})
	return nil
}

// ratio is a ÷ b, nil when b is 0 (-step-t 0: the build's own overhead, in the notes).
func ratio(a, b time.Duration) *float64 {
	if b <= 0 {
		return nil
	}
	return ptr(a.Seconds() / b.Seconds())
}

// benchHAPackage is samples/kubeadm-ha with room for W=10 workers plus a
// 10-worker scale-out (instantiation_level_2 = 10 workers, up to 20) and a
// vnfdId of its own; the sample itself is unchanged.
func benchHAPackage() ([]byte, error) {
	tree, err := samples.Tree("kubeadm-ha")
	if err != nil {
		return nil, err
	}
	const sampleID = "6f2b8c1a-3d4e-4f5a-8b6c-7d8e9f0a1b22"
	edits := map[string][][2]string{
		"Definitions/kubeadm_ha_df_ha.yaml": {
			{"min_number_of_instances: 2\n          max_number_of_instances: 5", "min_number_of_instances: 2\n          max_number_of_instances: 20"},
			{"max_scale_level: 3", "max_scale_level: 18"},
			{"                  scale_level: 3", "                  scale_level: 8"},
			{"            instantiation_level_2:\n              number_of_instances: 5", "            instantiation_level_2:\n              number_of_instances: 10"},
		},
		"BaseHOT/ha/kubeadm_ha_top.hot.yaml": {{"min_size: 2\n      max_size: 5", "min_size: 2\n      max_size: 20"}},
	}
	out := fstest.MapFS{}
	err = fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		s := strings.ReplaceAll(string(data), sampleID, benchVnfdID)
		for _, e := range edits[p] {
			if !strings.Contains(s, e[0]) {
				return fmt.Errorf("%s: %q not found (the sample changed: update benchHAPackage)", p, e[0])
			}
			s = strings.Replace(s, e[0], e[1], 1)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		out[p] = &fstest.MapFile{Data: []byte(s), Mode: mode}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return vnfpkg.BuildCSAR(out)
}

// benchInstantiateBody is cmd/vnfm-demo's body for the HA flavour at
// instantiation_level_2 (3 masters, 10 workers).
func benchInstantiateBody(netID string) map[string]any {
	const password = "bench-node-pass"
	node := func(vdu string) map[string]any {
		return map[string]any{"vdu_id": vdu, "ssh_cp_name": vdu + "_CP1", "username": "ubuntu", "password": password}
	}
	master, worker := node("masterNode"), node("workerNode")
	master["cluster_cp_name"] = "vip_CP"
	worker["aspect_id"] = "worker_instance"
	cps := []any{map[string]any{"cpdId": "masterNode_CP1"}, map[string]any{"cpdId": "workerNode_CP1"}, map[string]any{"cpdId": "vip_CP"}}
	return map[string]any{"flavourId": "ha", "instantiationLevelId": "instantiation_level_2",
		"extVirtualLinks": []any{map[string]any{"id": "ext-net0", "resourceId": netID, "extCps": cps}},
		"additionalParams": map[string]any{
			"node_username": "ubuntu", "node_password": password,
			"k8s_cluster_installation_param": map[string]any{"vim_name": "bench-cluster", "master_node": master, "worker_node": worker}}}
}

// startFullVNFM runs this binary as `vnfm serve` would run: built-in drivers,
// the embedded simulator with real hosts, the stand-in installed into them
// with the fixed install-step time.
func (b *bench) startFullVNFM(dbURL, standin string, t time.Duration) (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	logPath := b.prefix + "-vnfm-cluster.log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	defer logFile.Close()
	p, err := harness.Launch(harness.Spec{Role: roleFull, Exe: exe, StartWait: 120 * time.Second, Stderr: logFile,
		Env: []string{"DATABASE_URL=" + dbURL, "VNFM_SECRET_KEY=" + secrets.NewKey(),
			// A data directory of its own: the embedded cloud persists its
			// servers there and boots them again at the next start (with
			// the default ./.vnfm every run restarted the clusters of all
			// runs before it, their control planes included).
			"VNFM_DATA_DIR=" + filepath.Join(b.dbDir, "vnfm-cluster"),
			"VNFM_LISTEN=127.0.0.1:0", "VNFM_AUTH=off", "VNFM_SIMULATOR=on", "VNFM_SIMULATOR_LISTEN=127.0.0.1:0",
			"VNFM_SIMULATOR_HOSTS=on", k8sstandin.BinaryEnv + "=" + standin, k8sstandin.StepDelayEnv + "=" + t.String()}})
	if err != nil {
		return "", nil, fmt.Errorf("%w; see %s", err, logPath)
	}
	logf("VNFM with the simulator pid %d serving %s (log %s)", p.Pid(), p.Base, logPath)
	// A graceful stop lets the simulator remove its hosts.
	return p.Base, func() { p.Stop(90 * time.Second) }, nil
}

// roleFull is the VNFM of the cluster phase (re-executed vnfm-bench):
// built-in drivers and the embedded simulator.
var roleFull = harness.Role("bench-full", func() int {
	return harness.Serve("bench", func(context.Context, *config.Config) (server.Options, func(), error) {
		return server.Options{}, nil, nil
	})
})

// apiClient is what the cluster phase asks the VNFM, as an operator would.
type apiClient struct {
	ctx  context.Context
	base string
	http *http.Client
}

func (c *apiClient) do(method, url, ctype string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(c.ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

func (c *apiClient) json(method, path string, in any, want int, out any) error {
	var body []byte
	ctype := ""
	if in != nil {
		body, _ = json.Marshal(in)
		ctype = "application/json"
	}
	res, b, err := c.do(method, c.base+path, ctype, body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, lastLines(string(b), 5))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// onboard uploads a CSAR and waits for ONBOARDED; it returns the vnfdId.
func (c *apiClient) onboard(csar []byte) (string, error) {
	var p struct{ ID string }
	if err := c.json("POST", "/vnfpkgm/v1/vnf_packages", map[string]any{"userDefinedData": map[string]any{"bench": "cluster"}}, http.StatusCreated, &p); err != nil {
		return "", err
	}
	res, b, err := c.do("PUT", c.base+"/vnfpkgm/v1/vnf_packages/"+p.ID+"/package_content", "application/zip", csar)
	if err != nil {
		return "", err
	}
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("upload: %s: %s", res.Status, lastLines(string(b), 5))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var pkg struct {
			OnboardingState string
			VnfdID          string
		}
		if err := c.json("GET", "/vnfpkgm/v1/vnf_packages/"+p.ID, nil, http.StatusOK, &pkg); err != nil {
			return "", err
		}
		if pkg.OnboardingState == "ONBOARDED" {
			return pkg.VnfdID, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("package %s still %s after a minute", p.ID, pkg.OnboardingState)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// operate posts an LCM task and waits for COMPLETED: the op's id and the
// time from the POST to COMPLETED seen by polling (every 50 ms).
func (c *apiClient) operate(id, task string, body map[string]any) (string, time.Duration, error) {
	in, _ := json.Marshal(body)
	t0 := time.Now()
	res, b, err := c.do("POST", c.base+"/vnflcm/v1/vnf_instances/"+id+"/"+task, "application/json", in)
	if err != nil {
		return "", 0, err
	}
	if res.StatusCode != http.StatusAccepted {
		return "", 0, fmt.Errorf("%s: %s: %s", task, res.Status, lastLines(string(b), 5))
	}
	loc := res.Header.Get("Location")
	opID := loc[strings.LastIndex(loc, "/")+1:]
	deadline := t0.Add(15 * time.Minute)
	for {
		var op struct {
			OperationState string
			Error          any
		}
		if err := c.json("GET", "/vnflcm/v1/vnf_lcm_op_occs/"+opID, nil, http.StatusOK, &op); err != nil {
			return "", 0, err
		}
		switch op.OperationState {
		case "COMPLETED":
			return opID, time.Since(t0), nil
		case "FAILED_TEMP", "FAILED", "ROLLED_BACK":
			e, _ := json.Marshal(op.Error)
			return "", 0, fmt.Errorf("%s %s: %s", task, op.OperationState, e)
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("%s still %s after 15 minutes (a machine this loaded measures nothing useful)", task, op.OperationState)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cloudNetwork finds the default VIM's network net0 through Keystone and
// Neutron (cmd/vnfm-demo does the same): the simulator's admin / secret.
func (c *apiClient) cloudNetwork() (string, error) {
	var vims struct {
		Vims []map[string]any `json:"vims"`
	}
	if err := c.json("GET", "/v1.0/vims", nil, http.StatusOK, &vims); err != nil {
		return "", err
	}
	authURL := ""
	for _, v := range vims.Vims {
		if v["is_default"] == true {
			authURL, _ = v["auth_url"].(string)
		}
	}
	if authURL == "" {
		return "", fmt.Errorf("no default VIM registered by the simulator")
	}
	body := `{"auth":{"identity":{"methods":["password"],"password":{"user":{"domain":{"name":"Default"},"name":"admin","password":"secret"}}},"scope":{"project":{"domain":{"name":"Default"},"name":"admin"}}}}`
	res, b, err := c.do("POST", strings.TrimRight(authURL, "/")+"/auth/tokens", "application/json", []byte(body))
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("Keystone: %s", res.Status)
	}
	var tok struct {
		Token struct {
			Catalog []struct {
				Type      string `json:"type"`
				Endpoints []struct {
					Interface, URL string
				} `json:"endpoints"`
			} `json:"catalog"`
		} `json:"token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil {
		return "", err
	}
	neutron := ""
	for _, cat := range tok.Token.Catalog {
		for _, e := range cat.Endpoints {
			if cat.Type == "network" && e.Interface == "public" {
				neutron = strings.TrimRight(e.URL, "/")
			}
		}
	}
	req, _ := http.NewRequestWithContext(c.ctx, "GET", neutron+"/v2.0/networks?name=net0", nil)
	req.Header.Set("X-Auth-Token", res.Header.Get("X-Subject-Token"))
	nres, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer nres.Body.Close()
	var nets struct {
		Networks []struct{ ID string } `json:"networks"`
	}
	if err := json.NewDecoder(nres.Body).Decode(&nets); err != nil || len(nets.Networks) == 0 {
		return "", fmt.Errorf("the simulator has no network net0 (%v)", err)
	}
	return nets.Networks[0].ID, nil
}
