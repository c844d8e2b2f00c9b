package drills

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

const concurrent = 200

// burst sends n requests at the same moment and counts the answers by status;
// every non-2xx answer must be a ProblemDetails.
func burst(t *testing.T, n int, req func(i int) (path string, body []byte)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		path, body := req(i)
		wg.Go(func() {
			<-start
			r, err := harness.TrySend("POST", path, body)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Status >= 300 {
				if why := problemError(r); why != "" {
					t.Errorf("%s: %d is not a ProblemDetails: %s", path, r.Status, why)
				}
			}
			mu.Lock()
			codes[r.Status]++
			mu.Unlock()
		})
	}
	time.Sleep(50 * time.Millisecond) // every goroutine at the start line
	close(start)
	wg.Wait()
	return codes
}

// TestConcurrentLCMRequestsOneAccepted sends 200 LCM requests on one
// instance at once: exactly one is accepted (202), all others get 409, and
// the database holds one unfinished operation for the instance. First 200
// instantiations of a NOT_INSTANTIATED instance, then 200 mixed tasks
// (scale out, heal, terminate) on an INSTANTIATED one.
func TestConcurrentLCMRequestsOneAccepted(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := newKey()
	conn := connect(t, db)
	unfinished := func(inst string) int {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM vnf_lcm_op_occs WHERE vnf_instance_id = $1
			AND operation_state IN ('STARTING','PROCESSING','FAILED_TEMP','ROLLING_BACK')`, inst).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	create := func(v *vnfm) string {
		r := send(t, "POST", v.base+"/vnflcm/v1/vnf_instances", []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`))
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["id"].(string)
	}
	inst := `{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"` + lcmtest.VimType + `"}]}`

	// An instantiated instance, made by a VNFM with an engine...
	v := startInProcess(t, db, key, inProcess{engine: true})
	ready := create(v)
	op := send(t, "POST", v.base+"/vnflcm/v1/vnf_instances/"+ready+"/instantiate", []byte(inst))
	if op.Status != 202 {
		t.Fatalf("instantiate: %d %s", op.Status, op.Body)
	}
	harness.WaitOp(t, v.base, op.Location(), 30*time.Second, "COMPLETED")
	v.stop()
	// ...then a VNFM without one: accepted operations stay STARTING, so no
	// request of the burst can find the instance free again.
	v = startInProcess(t, db, key, inProcess{engine: false})

	t.Run("200 instantiations", func(t *testing.T) {
		id := create(v)
		codes := burst(t, concurrent, func(int) (string, []byte) {
			return v.base + "/vnflcm/v1/vnf_instances/" + id + "/instantiate", []byte(inst)
		})
		if codes[http.StatusAccepted] != 1 || codes[http.StatusConflict] != concurrent-1 {
			t.Fatalf("answers by status: %v; want one 202 and %d × 409", codes, concurrent-1)
		}
		if n := unfinished(id); n != 1 {
			t.Fatalf("%d unfinished operations on the instance, want 1", n)
		}
	})
	t.Run("200 mixed tasks", func(t *testing.T) {
		tasks := []struct{ task, body string }{
			{"scale", `{"type":"SCALE_OUT","aspectId":"worker_aspect"}`},
			{"heal", `{}`},
			{"terminate", `{"terminationType":"FORCEFUL"}`},
			{"scale", `{"type":"SCALE_OUT","aspectId":"worker_aspect","numberOfSteps":2}`},
		}
		codes := burst(t, concurrent, func(i int) (string, []byte) {
			tk := tasks[i%len(tasks)]
			return v.base + "/vnflcm/v1/vnf_instances/" + ready + "/" + tk.task, []byte(tk.body)
		})
		if codes[http.StatusAccepted] != 1 || codes[http.StatusConflict] != concurrent-1 {
			t.Fatalf("answers by status: %v; want one 202 and %d × 409", codes, concurrent-1)
		}
		if n := unfinished(ready); n != 1 {
			t.Fatalf("%d unfinished operations on the instance, want 1", n)
		}
	})
	if t.Failed() {
		return
	}
	var ops int
	_ = conn.QueryRow(t.Context(), `SELECT count(*) FROM vnf_lcm_op_occs`).Scan(&ops)
	if ops != 3 {
		t.Fatalf("%d op occurrences in the database, want 3 (setup + one per burst)", ops)
	}
}
