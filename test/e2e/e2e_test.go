// Package e2e runs the VNFM as real processes (this test binary re-executed
// as a server with the in-test drivers) against a real PostgreSQL, and talks
// to it only over HTTP — to prove crash recovery across processes.
package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/config"
	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/server"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// roleFake is this test binary re-executed as a VNFM with the in-test drivers.
var roleFake = harness.Role("fake", func() int {
	return harness.Serve("e2e", func(context.Context, *config.Config) (server.Options, func(), error) {
		return server.Options{Infra: lcmtest.Resolver(&lcmtest.Infra{}), Mgmt: lcmtest.Registry(&lcmtest.Mgmt{})}, nil, nil
	})
})

func TestMain(m *testing.M) { harness.Main(m) }

// call makes one request (harness.Send) with a JSON body ("" for none).
func call(t *testing.T, method, url, body string) (int, http.Header, []byte) {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	r := harness.Send(t, method, url, b)
	return r.Status, r.Header, r.Body
}

func seedPackage(t *testing.T, db string) {
	t.Helper()
	st, err := store.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutPackage(context.Background(), lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
}

func createAndInstantiate(t *testing.T, base, fake string) (instID, opID string) {
	t.Helper()
	code, _, b := call(t, "POST", base+"/vnflcm/v1/vnf_instances", `{"vnfdId":"`+lcmtest.VnfdID+`"}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var in map[string]any
	_ = json.Unmarshal(b, &in)
	instID = in["id"].(string)
	code, h, b := call(t, "POST", base+"/vnflcm/v1/vnf_instances/"+instID+"/instantiate",
		`{"flavourId":"simple","instantiationLevelId":"instantiation_level_2","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}],"additionalParams":{"fake":`+fake+`}}`)
	if code != 202 {
		t.Fatalf("instantiate: %d %s", code, b)
	}
	return instID, harness.OpID(h.Get("Location"))
}

func opDoc(t *testing.T, base, opID string) map[string]any {
	t.Helper()
	r := harness.Send(t, "GET", base+"/vnflcm/v1/vnf_lcm_op_occs/"+opID, nil)
	if r.Status != 200 {
		t.Fatalf("get op: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)
}

func nodeDone(d map[string]any, node string) bool {
	prog, _ := d["progress"].(map[string]any)
	steps, _ := prog["steps"].([]any)
	for _, s := range steps {
		nodes, _ := s.(map[string]any)["nodes"].([]any)
		for _, n := range nodes {
			if nm := n.(map[string]any); nm["name"] == node && nm["state"] == "COMPLETED" {
				return true
			}
		}
	}
	return false
}

func TestKill9MidOperationAndResumeInAnotherProcess(t *testing.T) {
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := secrets.NewKey()
	a := harness.Start(t, roleFake, db, key)
	_, opID := createAndInstantiate(t, a.Base, `{"delayMs":300}`)
	deadline := time.Now().Add(20 * time.Second)
	for !nodeDone(opDoc(t, a.Base, opID), "worker-0") {
		if time.Now().After(deadline) {
			t.Fatal("worker-0 never completed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Kill9(); err != nil {
		t.Fatal(err)
	}

	b := harness.Start(t, roleFake, db, key)
	var d map[string]any
	for deadline = time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d = opDoc(t, b.Base, opID)
		if s := d["operationState"]; s == "COMPLETED" || s == "FAILED_TEMP" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("op stuck in %v after the crash", d["operationState"])
		}
	}
	if d["operationState"] != "COMPLETED" {
		t.Fatalf("resumed op ended %v: %v", d["operationState"], d["error"])
	}
	// The journal shows what ran twice: the crashed step, not the checkpointed nodes.
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT step, node, attempt, state FROM op_journal WHERE op_occ_id=$1`, opID)
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]int{}
	for rows.Next() {
		var step, node, state string
		var n int
		if err := rows.Scan(&step, &node, &n, &state); err != nil {
			t.Fatal(err)
		}
		if state != "COMPLETED" {
			t.Errorf("%s/%s left %s", step, node, state)
		}
		attempts[step+"/"+node] = n
	}
	if attempts["infra.instantiate/"] != 2 || attempts["infra.instantiate/master-0"] != 1 || attempts["infra.instantiate/worker-0"] != 1 || attempts["mgmt.instantiate_start/"] != 1 {
		t.Fatalf("journal attempts after resume: %v", attempts)
	}
	var claims int
	_ = conn.QueryRow(context.Background(), `SELECT attempts FROM vnf_lcm_op_occs WHERE id=$1`, opID).Scan(&claims)
	if claims != 2 {
		t.Fatalf("claimed %d times", claims)
	}
}

func TestTwoProcessesShareTheQueue(t *testing.T) {
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := secrets.NewKey()
	a, b := harness.Start(t, roleFake, db, key), harness.Start(t, roleFake, db, key)
	var ops []string
	for i := 0; i < 12; i++ {
		base := a.Base
		if i%2 == 1 {
			base = b.Base
		}
		_, op := createAndInstantiate(t, base, `{"delayMs":50}`)
		ops = append(ops, op)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, op := range ops {
		for {
			d := opDoc(t, a.Base, op)
			if d["operationState"] == "COMPLETED" {
				break
			}
			if d["operationState"] == "FAILED_TEMP" || time.Now().After(deadline) {
				t.Fatalf("op %s: %v %v", op, d["operationState"], d["error"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var multi int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM vnf_lcm_op_occs WHERE attempts <> 1`).Scan(&multi)
	if multi != 0 {
		t.Fatalf("%d operations were claimed more than once", multi)
	}
}
