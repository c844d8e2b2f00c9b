package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lcm"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// killAtEnv makes a re-executed server SIGKILL itself at its k-th engine
// checkpoint (a journal write: step or node begin/end, completion).
const killAtEnv = "VNFM_E2E_KILL_AT"

type killAt struct {
	k    int64
	seen atomic.Int64
}

func (k *killAt) StepFinished(string, string, string, time.Duration) {}

func (k *killAt) Checkpoint(string, string) {
	if k.seen.Add(1) == k.k {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // like kill -9: no cleanup at all
	}
}

func killAtFromEnv() lcm.Observer {
	n, err := strconv.ParseInt(os.Getenv(killAtEnv), 10, 64)
	if err != nil || n <= 0 {
		return nil
	}
	return &killAt{k: n}
}

// drill runs one LCM task on a VNFM that dies at checkpoint k, restarts a
// clean VNFM, and drives the operation to COMPLETED (retrying a FAILED_TEMP
// once). It reports whether the process died, i.e. whether checkpoint k
// exists for this task.
func (e *osEnv) drill(k int, inst, task string, body any) bool {
	e.t.Helper()
	e.vnfm.Stop(20 * time.Second)
	e.vnfm = harness.Start(e.t, roleOpenStack, e.db, e.key, killAtEnv+"="+strconv.Itoa(k), "VNFM_LEASE=2s")
	opID := e.postTask(inst, task, body)
	died := e.vnfm.WaitExitOr(func() bool {
		s := opDocAt(e.t, e.db, opID)
		return s == "COMPLETED" || s == "FAILED_TEMP"
	}, 60*time.Second)
	if died {
		e.vnfm = harness.Start(e.t, roleOpenStack, e.db, e.key, "VNFM_LEASE=2s")
	}
	deadline := time.Now().Add(90 * time.Second)
	for retried := false; ; {
		switch s := opDocAt(e.t, e.db, opID); s {
		case "COMPLETED":
			return died
		case "FAILED_TEMP":
			if retried {
				e.t.Fatalf("%s (kill at checkpoint %d) failed again after retry: %v", task, k, e.get("/vnflcm/v1/vnf_lcm_op_occs/" + opID)["error"])
			}
			e.post("/vnflcm/v1/vnf_lcm_op_occs/"+opID+"/retry", nil, http.StatusAccepted)
			retried = true
		case "ROLLED_BACK", "FAILED":
			e.t.Fatalf("%s (kill at checkpoint %d) ended %s", task, k, s)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s (kill at checkpoint %d) did not finish", task, k)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postTask sends the task and returns its op occurrence's id. The run of an
// operation accepted here starts before the 202 is written, so its first
// checkpoint can kill the VNFM before the answer leaves: the operation exists
// then (a checkpoint is an engine write, after the creation's commit), and
// the id is the one op occurrence of the instance that is new, as an NFVO
// would find it in the list.
func (e *osEnv) postTask(inst, task string, body any) string {
	e.t.Helper()
	before := opsOf(e.t, e.db, inst)
	b, _ := json.Marshal(body)
	path := "/vnflcm/v1/vnf_instances/" + inst + "/" + task
	req, _ := http.NewRequest("POST", e.vnfm.Base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusAccepted {
			e.t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
		}
		loc := res.Header.Get("Location")
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	select {
	case <-e.vnfm.Exited():
	case <-time.After(10 * time.Second):
		e.t.Fatalf("POST %s: %v, and the VNFM is still running", path, err)
	}
	var added []string
	for _, id := range opsOf(e.t, e.db, inst) {
		if !slices.Contains(before, id) {
			added = append(added, id)
		}
	}
	if len(added) != 1 {
		e.t.Fatalf("POST %s: %v as the VNFM died; %d new op occurrences, want 1", path, err, len(added))
	}
	e.t.Logf("POST %s: the VNFM died before answering (%v); the operation %s was created", path, err, added[0])
	return added[0]
}

// opsOf lists the ids of the instance's op occurrences.
func opsOf(t *testing.T, db, inst string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT id::text FROM vnf_lcm_op_occs WHERE vnf_instance_id = $1`, inst)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// check asserts what must hold after every drill: one stack per instantiated
// instance, one server per VNFC, VNFCs as the scale level says.
func (e *osEnv) check(label string, inst string, workers int) {
	e.t.Helper()
	if n := e.liveStacks(); n != 1 {
		e.t.Fatalf("%s: %d stacks, want 1 (orphaned or missing stack)%s", label, n, e.describeStacks())
	}
	_, vs := e.vnfcs(inst)
	servers := e.servers()
	if len(vs) != 1+workers || len(servers) != len(vs) {
		e.t.Fatalf("%s: %d VNFCs and %d servers, want %d of each", label, len(vs), len(servers), 1+workers)
	}
	for _, v := range vs {
		if _, ok := servers[v.Server]; !ok {
			e.t.Fatalf("%s: VNFC %s points at server %s, which does not exist", label, v.ID, v.Server)
		}
	}
}

// TestCrashAtEveryCheckpoint kills the VNFM at each checkpoint of
// instantiate, scale out, scale in and heal in turn; after a restart every
// operation completes by itself or on retry, and the cloud matches the
// instance: no orphaned or duplicate stack, server or VNFC.
func TestCrashAtEveryCheckpoint(t *testing.T) {
	e := newOSEnv(t)
	inst := e.createInstance()
	workers := 2
	tasks := []struct {
		name, task string
		body       func() any
		delta      int
	}{
		{"instantiate", "instantiate", func() any { return e.instantiateBody() }, 0},
		{"scale out", "scale", func() any { return map[string]any{"type": "SCALE_OUT", "aspectId": "worker_instance"} }, +1},
		{"scale in", "scale", func() any { return map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance"} }, -1},
		{"heal", "heal", func() any { return map[string]any{} }, 0},
	}
	for _, tc := range tasks {
		for k := 1; ; k++ {
			if tc.task == "instantiate" && k > 1 {
				// Instantiate again from scratch: terminate what the last round built.
				e.lcm(inst, "terminate", map[string]any{"terminationType": "FORCEFUL"}, "COMPLETED")
			}
			died := e.drill(k, inst, tc.task, tc.body())
			workers += tc.delta
			e.check(tc.name+" killed at checkpoint "+strconv.Itoa(k), inst, workers)
			if !died {
				t.Logf("%s: drilled %d checkpoints", tc.name, k-1)
				break
			}
			if tc.delta != 0 { // undo the scale so the next round starts from the same state
				opposite := map[string]any{"type": "SCALE_IN", "aspectId": "worker_instance"}
				if tc.delta < 0 {
					opposite["type"] = "SCALE_OUT"
				}
				e.lcm(inst, "scale", opposite, "COMPLETED")
				workers -= tc.delta
			}
			if k > 40 {
				t.Fatalf("%s: more than 40 checkpoints?", tc.name)
			}
		}
	}
}
