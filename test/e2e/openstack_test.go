package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/infra/openstack"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// roleOpenStack is this test binary re-executed as a VNFM with the
// built-in infra resolver (the OpenStack driver) and management drivers;
// VNFM_E2E_KILL_AT makes it die at a checkpoint (crash_test.go).
var roleOpenStack = harness.Role("openstack", func() int {
	return harness.Serve("e2e-openstack", func(context.Context, *config.Config) (server.Options, func(), error) {
		d := openstack.New(driverOptions(time.Minute))
		return server.Options{Infra: server.NewInfraResolver(d, nil, nil), Observer: killAtFromEnv()}, nil, nil
	})
})

const simNetID = "8d3e6a52-4c1f-4c55-9d0e-6e1b2f3a4b01"

// realHeatEnv tells a re-executed VNFM that its cloud is real Heat: it
// polls stacks at a production pace (a stack GET costs real Heat a few
// hundred milliseconds of CPU) and waits longer.
const realHeatEnv = "VNFM_E2E_REAL_HEAT"

func driverOptions(timeout time.Duration) openstack.Options {
	o := openstack.Options{PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond, StackTimeout: timeout}
	if os.Getenv(realHeatEnv) == "1" {
		o = openstack.Options{PollMin: 500 * time.Millisecond, PollMax: 2 * time.Second, StackTimeout: 10 * time.Minute}
	}
	// VIM connections a request supplies (vimbinding_test.go) go to this test's loopback servers.
	o.Outbound = outboundtest.Policy(0)
	return o
}

// vnfmEnv is the environment a VNFM process of this env gets.
func (e *osEnv) vnfmEnv(env ...string) []string {
	if e.world != nil {
		env = append(env, realHeatEnv+"=1")
	}
	return env
}

// osEnv is a VNFM process with the OpenStack driver, a simulator, a
// registered VIM and an onboarded sample package.
type osEnv struct {
	t      *testing.T
	sim    *ossim.Sim
	simURL string
	// world, when set, is the real Keystone + Heat in front of the
	// simulator; tenant is this test's project there.
	world  *osworld.World
	tenant osworld.Tenant
	db     string
	key    string
	vnfm   *harness.Process
	vimID  string
	vnfdID string
}

func newOSEnv(t *testing.T) *osEnv { return newOSEnvWith(t, false) }

// newOSEnvWith starts the environment; realHeat puts the simulator behind
// real Keystone and Heat (internal/osworld).
func newOSEnvWith(t *testing.T, realHeat bool) *osEnv {
	t.Helper()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var tick atomic.Int64
	e := &osEnv{t: t}
	opts := ossim.Options{Latency: 20 * time.Millisecond,
		Now: func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Second) },
		Networks: []ossim.NetworkSpec{{Name: "net0", ID: simNetID, CIDR: "10.77.0.0/24", Shared: true},
			{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true}}}
	e.cloud(&opts, realHeat)
	sim, err := ossim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.serve(sim)
	e.db, e.key = pgtest.NewDB(t), secrets.NewKey()
	e.vnfm = harness.Start(t, roleOpenStack, e.db, e.key, e.vnfmEnv()...)
	e.registerVim()
	e.onboard()
	return e
}

func (e *osEnv) do(method, path, contentType string, body []byte) (int, http.Header, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.vnfm.Base+path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	if res.StatusCode >= 300 {
		doc = map[string]any{"_raw": string(b)}
	}
	return res.StatusCode, res.Header, doc
}

func (e *osEnv) post(path string, body any, want int) (http.Header, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	code, h, doc := e.do("POST", path, "application/json", b)
	if code != want {
		e.t.Fatalf("POST %s: %d %v", path, code, doc)
	}
	return h, doc
}

func (e *osEnv) get(path string) map[string]any {
	e.t.Helper()
	code, _, doc := e.do("GET", path, "", nil)
	if code != 200 {
		e.t.Fatalf("GET %s: %d %v", path, code, doc)
	}
	return doc
}

// registerVim registers the simulator as the default VIM the way the
// Tacker CLI does (openstack vim register).
func (e *osEnv) registerVim() {
	auth, user, password, project := e.simURL+"/v3", "admin", "secret", "admin"
	if e.world != nil {
		auth, user, password, project = e.world.AuthURL, e.tenant.User, e.tenant.Password, e.tenant.Project
	}
	_, doc := e.post("/v1.0/vims.json", map[string]any{"vim": map[string]any{
		"name": "sim", "type": "openstack", "auth_url": auth, "is_default": true,
		"vim_project": map[string]any{"name": project, "project_domain_name": "Default"},
		"auth_cred":   map[string]any{"username": user, "password": password, "user_domain_name": "Default", "cert_verify": "False"},
	}}, http.StatusCreated)
	vim, _ := doc["vim"].(map[string]any)
	e.vimID, _ = vim["id"].(string)
	if e.vimID == "" || vim["status"] != "ACTIVE" {
		e.t.Fatalf("vim %v", doc)
	}
}

// samplePackage is samples/kubeadm-single without its management driver
// (the Vnflcm interfaces and the driver artifact removed from the DF).
func samplePackage(t *testing.T) []byte {
	t.Helper()
	dir := filepath.Join(vnfpkgtest.SamplesDir(), "kubeadm-single")
	m := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = &fstest.MapFile{Data: b, Mode: 0o644}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stripped := false
	for name, f := range m {
		if !strings.HasPrefix(name, "Definitions/") || !strings.Contains(string(f.Data), "interfaces:") {
			continue
		}
		var out []string
		skipping := false
		for _, l := range strings.Split(string(f.Data), "\n") {
			trimmed := strings.TrimSpace(l)
			indent := len(l) - len(strings.TrimLeft(l, " "))
			switch {
			case (trimmed == "interfaces:" || trimmed == "artifacts:") && indent == 6:
				skipping, stripped = true, true
				continue
			case skipping && trimmed != "" && indent <= 6:
				skipping = false
			}
			if !skipping {
				out = append(out, l)
			}
		}
		f.Data = []byte(strings.Join(out, "\n"))
	}
	if !stripped {
		t.Fatal("the sample's DF has no interfaces to strip; update samplePackage")
	}
	// The user-data file instantiateBody names, as a Tacker package carries
	// it (its Python is never run: the class selects the Go equivalent).
	m["UserData/k8s.py"] = &fstest.MapFile{Data: []byte("class KubernetesClusterUserData:\n    pass\n"), Mode: 0o644}
	b, err := vnfpkg.BuildCSAR(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *osEnv) onboard() { e.vnfdID = e.onboardCSAR(samplePackage(e.t)) }

// onboardCSAR uploads a VNF package and waits until it is ONBOARDED; it
// returns the package's vnfdId.
func (e *osEnv) onboardCSAR(csar []byte) string {
	e.t.Helper()
	_, doc := e.post("/vnfpkgm/v1/vnf_packages", map[string]any{}, http.StatusCreated)
	id, _ := doc["id"].(string)
	if code, _, res := e.do("PUT", "/vnfpkgm/v1/vnf_packages/"+id+"/package_content", "application/zip", csar); code != http.StatusAccepted {
		e.t.Fatalf("upload: %d %v", code, res)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := e.get("/vnfpkgm/v1/vnf_packages/" + id)
		if p["onboardingState"] == "ONBOARDED" {
			vnfdID, _ := p["vnfdId"].(string)
			return vnfdID
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("package %s not onboarded: %v", id, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lcm posts an LCM task and waits until its op occurrence ends.
func (e *osEnv) lcm(inst, task string, body any, want string) map[string]any {
	e.t.Helper()
	h, _ := e.post("/vnflcm/v1/vnf_instances/"+inst+"/"+task, body, http.StatusAccepted)
	return e.waitOp(harness.OpID(h.Get("Location")), want)
}

// patience is how long an operation may take: real Heat is slower than
// the simulator's (and shares two cores with the rest of the tests).
func (e *osEnv) patience(d time.Duration) time.Duration {
	if e.world != nil {
		return 4 * d
	}
	return d
}

func (e *osEnv) waitOp(opID, want string) map[string]any {
	e.t.Helper()
	return harness.Wait{Within: e.patience(90 * time.Second), Poll: 50 * time.Millisecond}.Op(e.t, e.vnfm.Base, opID, want)
}

func (e *osEnv) createInstance() string {
	e.t.Helper()
	_, doc := e.post("/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": e.vnfdID, "vnfInstanceName": "k8s"}, http.StatusCreated)
	return doc["id"].(string)
}

func (e *osEnv) instantiateBody() map[string]any {
	return map[string]any{"flavourId": "simple",
		"vimConnectionInfo": []any{map[string]any{"id": "vim-sim", "vimId": e.vimID, "vimType": "openstack"}},
		"extVirtualLinks": []any{map[string]any{"id": "ext-net0", "resourceId": simNetID, "extCps": []any{
			map[string]any{"cpdId": "masterNode_CP1"}, map[string]any{"cpdId": "workerNode_CP1"}}}},
		"additionalParams": map[string]any{"node_password": "n0de-pw", "lcm-operation-user-data": "./UserData/k8s.py",
			"lcm-operation-user-data-class": "KubernetesClusterUserData"}}
}

type vnfc struct {
	ID, VduID, Server, Addr, Created, Member string
}

func (e *osEnv) vnfcs(inst string) (map[string]any, []vnfc) {
	e.t.Helper()
	doc := e.get("/vnflcm/v1/vnf_instances/" + inst)
	info, _ := doc["instantiatedVnfInfo"].(map[string]any)
	var out []vnfc
	list, _ := info["vnfcResourceInfo"].([]any)
	for _, x := range list {
		v := x.(map[string]any)
		cr := v["computeResource"].(map[string]any)
		md, _ := v["metadata"].(map[string]any)
		c := vnfc{ID: v["id"].(string), VduID: v["vduId"].(string), Server: cr["resourceId"].(string)}
		c.Created, _ = md["creationTime"].(string)
		c.Member, _ = md["groupMember"].(string)
		if cr["vimConnectionId"] != "vim-sim" {
			e.t.Errorf("VNFC %s computeResource %v", c.ID, cr)
		}
		cps, _ := v["vnfcCpInfo"].([]any)
		if len(cps) == 1 {
			pi := cps[0].(map[string]any)["cpProtocolInfo"].([]any)[0].(map[string]any)
			ips := pi["ipOverEthernet"].(map[string]any)["ipAddresses"].([]any)[0].(map[string]any)["addresses"].([]any)
			c.Addr, _ = ips[0].(string)
		}
		out = append(out, c)
	}
	return info, out
}

func workersOf(vs []vnfc) []vnfc {
	var out []vnfc
	for _, v := range vs {
		if v.VduID == "workerNode" {
			out = append(out, v)
		}
	}
	// Heat's removal order: oldest member first (creation time, name).
	slices.SortFunc(out, func(a, b vnfc) int {
		if c := strings.Compare(a.Created, b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Member, b.Member)
	})
	return out
}

func affected(op map[string]any) map[string]string {
	out := map[string]string{}
	rc, _ := op["resourceChanges"].(map[string]any)
	list, _ := rc["affectedVnfcs"].([]any)
	for _, x := range list {
		a := x.(map[string]any)
		out[a["id"].(string)] = a["changeType"].(string)
	}
	return out
}

// opDocAt reads an op occurrence's state from the database (the VNFM may be down).
func opDocAt(t *testing.T, db, opID string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var state string
	if err := conn.QueryRow(context.Background(), `SELECT operation_state FROM vnf_lcm_op_occs WHERE id=$1`, opID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}

// cloud prepares the simulator's options: behind real Keystone and Heat
// (a project of this test's in the test binary's world) or on its own.
func (e *osEnv) cloud(opts *ossim.Options, realHeat bool) {
	e.t.Helper()
	if realHeat {
		e.world = osworld.Shared(e.t, pgtest.Cluster())
		e.tenant = e.world.Tenant(e.t)
		*opts = e.world.SimOptions(e.tenant, *opts)
	}
}

// serve starts the simulator's listener (and its route in the world).
func (e *osEnv) serve(sim *ossim.Sim) {
	srv := httptest.NewServer(sim)
	e.t.Cleanup(func() { srv.Close(); _ = sim.Close() })
	e.sim, e.simURL = sim, srv.URL
	if e.world != nil {
		e.world.Serve(e.tenant.ProjectID, sim)
	}
}

// liveStacks counts the top-level stacks not deleted: in real Heat, or
// in the simulator's.
func (e *osEnv) liveStacks() int {
	e.t.Helper()
	if e.world != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sts, err := e.world.Stacks(ctx, e.tenant)
		if err != nil {
			e.t.Fatal(err)
		}
		return len(sts)
	}
	res, err := http.Get(e.simURL + "/_sim")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		e.t.Fatal(err)
	}
	return doc.Counts["stacks"]
}

// describeStacks names real Heat's live stacks, for a failure's message
// ("" with the simulator alone, which only counts them).
func (e *osEnv) describeStacks() string {
	e.t.Helper()
	if e.world == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sts, err := e.world.Stacks(ctx, e.tenant)
	if err != nil {
		return fmt.Sprintf(" (listing them: %v)", err)
	}
	var b strings.Builder
	for _, st := range sts {
		fmt.Fprintf(&b, "; %s %s %s %q", st.Name, st.ID, st.Status, st.Reason)
	}
	return b.String()
}

func (e *osEnv) servers() map[string]ossim.ServerInfo {
	out := map[string]ossim.ServerInfo{}
	for _, s := range e.sim.Servers() {
		out[s.ID] = s
	}
	return out
}

func TestOpenStackLifecycleOverHTTP(t *testing.T) { testOpenStackLifecycle(t, false) }

// TestRealHeatOpenStackLifecycle: the same over real Keystone and Heat.
func TestRealHeatOpenStackLifecycle(t *testing.T) { testOpenStackLifecycle(t, true) }

func testOpenStackLifecycle(t *testing.T, realHeat bool) {
	e := newOSEnvWith(t, realHeat)
	inst := e.createInstance()

	op := e.lcm(inst, "instantiate", e.instantiateBody(), "COMPLETED")
	info, vs := e.vnfcs(inst)
	servers := e.servers()
	if len(vs) != 3 || len(servers) != 3 || len(workersOf(vs)) != 2 {
		t.Fatalf("after instantiate: %d VNFCs, %d servers", len(vs), len(servers))
	}
	for _, v := range vs {
		sv, ok := servers[v.Server]
		if !ok || !slices.Contains(sv.Addresses, v.Addr) {
			t.Errorf("VNFC %+v does not match a server (%v)", v, sv)
		}
	}
	if ch := affected(op); len(ch) != 3 {
		t.Errorf("instantiate changes %v", ch)
	}
	if ss, _ := info["scaleStatus"].([]any); len(ss) != 1 || ss[0].(map[string]any)["scaleLevel"] != float64(0) {
		t.Errorf("scaleStatus %v", info["scaleStatus"])
	}

	// Scale out 3 steps: five workers.
	op = e.lcm(inst, "scale", map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance", "numberOfSteps": 3}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	if ws := workersOf(vs); len(ws) != 5 || len(e.servers()) != 6 || len(affected(op)) != 3 {
		t.Fatalf("after scale out: %d workers, %d servers, changes %v", len(ws), len(e.servers()), affected(op))
	}
	// Scale in: oldest first, newest first (is_reverse), explicit.
	for _, tc := range []struct {
		name string
		ap   map[string]any
		pick func([]vnfc) string
	}{
		{"oldest", nil, func(ws []vnfc) string { return ws[0].ID }},
		{"reverse", map[string]any{"is_reverse": "True"}, func(ws []vnfc) string { return ws[len(ws)-1].ID }},
		{"explicit", nil, func(ws []vnfc) string { return ws[1].ID }},
	} {
		_, vs = e.vnfcs(inst)
		ws := workersOf(vs)
		want := tc.pick(ws)
		ap := tc.ap
		if tc.name == "explicit" {
			ap = map[string]any{"vnfcInstanceIds": []string{want}}
		}
		body := map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance"}
		if ap != nil {
			body["additionalParams"] = ap
		}
		op = e.lcm(inst, "scale", body, "COMPLETED")
		if ch := affected(op); len(ch) != 1 || ch[want] != "REMOVED" {
			t.Errorf("scale in (%s): changes %v, want %s removed", tc.name, ch, want)
		}
		_, after := e.vnfcs(inst)
		if slices.ContainsFunc(after, func(v vnfc) bool { return v.ID == want }) || len(workersOf(after)) != len(ws)-1 {
			t.Errorf("scale in (%s): %s still there or wrong count", tc.name, want)
		}
	}
	if len(e.servers()) != 3 {
		t.Errorf("%d servers after scaling back", len(e.servers()))
	}

	// Heal one VNFC: same id and address, new server.
	_, vs = e.vnfcs(inst)
	target := workersOf(vs)[0]
	op = e.lcm(inst, "heal", map[string]any{"vnfcInstanceId": []string{target.ID}, "cause": "e2e"}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	i := slices.IndexFunc(vs, func(v vnfc) bool { return v.ID == target.ID })
	if i < 0 || vs[i].Server == target.Server || vs[i].Addr != target.Addr {
		t.Errorf("healed VNFC %+v, was %+v", vs, target)
	}
	if ch := affected(op); len(ch) != 1 || ch[target.ID] != "MODIFIED" {
		t.Errorf("heal changes %v", ch)
	}

	// Heal the entire VNF: new VNFCs, same shape.
	before := vs
	e.lcm(inst, "heal", map[string]any{}, "COMPLETED")
	_, vs = e.vnfcs(inst)
	if len(vs) != 3 || len(e.servers()) != 3 {
		t.Errorf("after entire heal: %d VNFCs, %d servers", len(vs), len(e.servers()))
	}
	for _, v := range vs {
		if slices.ContainsFunc(before, func(b vnfc) bool { return b.Server == v.Server }) {
			t.Errorf("server %s survived the entire heal", v.Server)
		}
	}

	// Terminate: the stack and its servers are gone.
	op = e.lcm(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
	if len(e.servers()) != 0 {
		t.Errorf("servers left after terminate: %v", e.servers())
	}
	if ch := affected(op); len(ch) != 3 {
		t.Errorf("terminate changes %v", ch)
	}
	if d := e.get("/vnflcm/v1/vnf_instances/" + inst); d["instantiationState"] != "NOT_INSTANTIATED" {
		t.Errorf("instance %v", d["instantiationState"])
	}
}

// A failed instantiate rolls back over HTTP; a VNFM killed while Heat
// creates the stack resumes in another process without a second stack.
func TestOpenStackRollbackAndKill9(t *testing.T) { testOpenStackRollbackAndKill9(t, false) }

// TestRealHeatOpenStackRollbackAndKill9: the same over real Keystone and Heat.
func TestRealHeatOpenStackRollbackAndKill9(t *testing.T) { testOpenStackRollbackAndKill9(t, true) }

func testOpenStackRollbackAndKill9(t *testing.T, realHeat bool) {
	e := newOSEnvWith(t, realHeat)

	e.sim.SetFaults(ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "workerNode", Type: "OS::Nova::Server",
		Message: "No valid host was found."}}})
	inst := e.createInstance()
	op := e.lcm(inst, "instantiate", e.instantiateBody(), "FAILED_TEMP")
	pd, _ := op["error"].(map[string]any)
	if detail, _ := pd["detail"].(string); !strings.Contains(detail, "CREATE_FAILED") || !strings.Contains(detail, "No valid host was found") || !strings.Contains(detail, "workerNode (OS::Nova::Server)") {
		t.Errorf("error detail %q", detail)
	}
	e.sim.SetFaults(ossim.Faults{})
	e.post("/vnflcm/v1/vnf_lcm_op_occs/"+op["id"].(string)+"/rollback", nil, http.StatusAccepted)
	e.waitOp(op["id"].(string), "ROLLED_BACK")
	if len(e.servers()) != 0 {
		t.Errorf("servers left after rollback: %d", len(e.servers()))
	}

	// kill -9 while the stack is being created.
	e.sim.SetFaults(ossim.Faults{SlowStacks: []ossim.StackDelay{{Stack: "vnflcm_*", Delay: ossim.Duration(2 * time.Second), Actions: []string{"CREATE"}}},
		SlowServers: []ossim.ServerDelay{{Delay: ossim.Duration(3 * time.Second)}}}) // what a real Heat sees
	h, _ := e.post("/vnflcm/v1/vnf_instances/"+inst+"/instantiate", e.instantiateBody(), http.StatusAccepted)
	loc := h.Get("Location")
	opID := loc[strings.LastIndex(loc, "/")+1:]
	deadline := time.Now().Add(e.patience(30 * time.Second))
	for e.liveStacks() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no stack was created")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.vnfm.Kill9(); err != nil {
		t.Fatal(err)
	}
	if d := opDocAt(t, e.db, opID); d != "PROCESSING" && d != "STARTING" {
		t.Fatalf("the op was %s when the VNFM was killed", d)
	}
	e.vnfm = harness.Start(t, roleOpenStack, e.db, e.key, e.vnfmEnv()...)
	e.waitOp(opID, "COMPLETED")
	if n := e.liveStacks(); n != 1 {
		t.Errorf("%d top-level stacks after the resume%s", n, e.describeStacks())
	}
	conn, err := pgx.Connect(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var attempts int
	if err := conn.QueryRow(context.Background(), `SELECT attempt FROM op_journal WHERE op_occ_id=$1 AND step='infra.instantiate' AND node=''`, opID).Scan(&attempts); err != nil || attempts != 2 {
		t.Errorf("infra.instantiate ran %d times (%v), want 2 (killed, resumed)", attempts, err)
	}
	if _, vs := e.vnfcs(inst); len(vs) != 3 || len(e.servers()) != 3 {
		t.Errorf("after resume: %d VNFCs, %d servers", len(vs), len(e.servers()))
	}
}
