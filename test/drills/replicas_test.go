package drills

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/test/harness"
)

// leaseHolder returns the lease owner of an op and the PID it names
// (owners are "<hostname>-<pid>/<random>").
func leaseHolder(ctx context.Context, conn *pgx.Conn, opID string) (owner string, pid int, state string, err error) {
	var o *string
	if err := conn.QueryRow(ctx, `SELECT lease_owner, operation_state FROM vnf_lcm_op_occs WHERE id = $1`, opID).Scan(&o, &state); err != nil {
		return "", 0, "", err
	}
	if o == nil {
		return "", 0, state, nil
	}
	name, _, _ := strings.Cut(*o, "/")
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return *o, 0, state, errors.New("lease owner without a pid: " + *o)
	}
	pid, err = strconv.Atoi(name[i+1:])
	return *o, pid, state, err
}

// TestTwoReplicasKillTheLeaseHolder runs two VNFM processes on one database,
// kills -9 the one whose engine holds the running operation's lease (found
// from lease_owner), and checks that the other one claims the operation
// within the lease time (plus its poll interval) and completes it, redoing
// only the node that was in flight.
func TestTwoReplicasKillTheLeaseHolder(t *testing.T) {
	t.Parallel()
	const (
		lease  = 3 * time.Second
		poll   = 200 * time.Millisecond
		nodeMs = 1200 // each of the 3 VNFCs takes this long
		slack  = 2 * time.Second
	)
	db := pgtest.NewDB(t)
	seedPackage(t, db)
	key := newKey()
	env := []string{"VNFM_LEASE=" + lease.String(), "VNFM_POLL=" + poll.String()}
	a, b := startProc(t, db, key, env...), startProc(t, db, key, env...)

	inst := send(t, "POST", a.Base+"/vnflcm/v1/vnf_instances", []byte(`{"vnfdId":"`+lcmtest.VnfdID+`"}`))
	if inst.Status != 201 {
		t.Fatalf("create: %d %s", inst.Status, inst.Body)
	}
	instID := inst.JSON(t)["id"].(string)
	r := send(t, "POST", a.Base+"/vnflcm/v1/vnf_instances/"+instID+"/instantiate",
		[]byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"v","vimType":"`+lcmtest.VimType+`"}],"additionalParams":{"fake":{"delayMs":`+strconv.Itoa(nodeMs)+`}}}`))
	if r.Status != 202 {
		t.Fatalf("instantiate: %d %s", r.Status, r.Body)
	}
	opID := r.Location()

	ctx := context.Background()
	conn := connect(t, db)
	// Wait until the first VNFC is done: the operation is well under way.
	var owner string
	var pid int
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		var state string
		owner, pid, state, err = leaseHolder(ctx, conn, opID)
		if err != nil {
			t.Fatal(err)
		}
		var done int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM op_journal WHERE op_occ_id = $1 AND node <> '' AND state = 'COMPLETED'`, opID).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if state == "PROCESSING" && pid != 0 && done >= 1 {
			break
		}
		if state == "COMPLETED" || time.Now().After(deadline) {
			t.Fatalf("operation %s is %s with %d nodes done; cannot kill it mid-way", opID, state, done)
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim, survivor := a, b
	switch pid {
	case a.Pid():
	case b.Pid():
		victim, survivor = b, a
	default:
		t.Fatalf("lease owner %q names pid %d, neither replica (%d, %d)", owner, pid, a.Pid(), b.Pid())
	}
	if err := victim.Kill9(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed pid %d, which held %s", pid, owner)
	// The dead replica's last lease (nobody renews it any more).
	var deadUntil time.Time
	if err := conn.QueryRow(ctx, `SELECT lease_until FROM vnf_lcm_op_occs WHERE id = $1`, opID).Scan(&deadUntil); err != nil {
		t.Fatal(err)
	}

	// The survivor claims the operation once the lease has expired.
	var claimedAfter time.Duration
	var claimedAt time.Time // database clock: the new lease_until minus the lease
	for {
		newOwner, newPID, state, err := leaseHolder(ctx, conn, opID)
		if err != nil {
			t.Fatal(err)
		}
		if newOwner != owner && newOwner != "" {
			if newPID != survivor.Pid() {
				t.Fatalf("op claimed by %q, not by the surviving replica (pid %d)", newOwner, survivor.Pid())
			}
			claimedAfter = time.Since(killed)
			var until time.Time
			if err := conn.QueryRow(ctx, `SELECT lease_until FROM vnf_lcm_op_occs WHERE id = $1`, opID).Scan(&until); err != nil {
				t.Fatal(err)
			}
			claimedAt = until.Add(-lease)
			break
		}
		if state != "PROCESSING" {
			t.Fatalf("op is %s without being claimed again", state)
		}
		if time.Since(killed) > lease+poll+slack {
			t.Fatalf("the surviving replica did not claim the op within lease %v + poll %v (+%v slack)", lease, poll, slack)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if claimedAfter > lease+poll+slack {
		t.Fatalf("claimed %v after the kill; the bound is lease %v + poll %v (+%v slack)", claimedAfter, lease, poll, slack)
	}
	// Not before the dead replica's lease ran out, and promptly after it
	// (both on the database clock; a heartbeat of the survivor read here
	// instead of its claim would only make claimedAt later).
	if claimedAt.Before(deadUntil) {
		t.Fatalf("claimed at %v, while the dead replica's lease ran until %v", claimedAt, deadUntil)
	}
	if late := claimedAt.Sub(deadUntil); late > poll+lease/3+slack {
		t.Fatalf("claimed %v after the dead replica's lease expired; want within the poll interval %v (+%v slack)", late, poll, slack)
	}
	// Then it finishes: at most the remaining nodes are left to do.
	doc := harness.WaitOp(t, survivor.Base, opID, 3*time.Duration(nodeMs)*time.Millisecond+slack+10*time.Second, "COMPLETED", "FAILED_TEMP")
	finished := time.Since(killed)
	if doc["operationState"] != "COMPLETED" {
		t.Fatalf("resumed op ended %v: %v", doc["operationState"], doc["error"])
	}
	if max := lease + poll + 3*time.Duration(nodeMs)*time.Millisecond + slack; finished > max {
		t.Fatalf("completed %v after the kill, want at most %v (lease + poll + the whole infra step + slack)", finished, max)
	}
	t.Logf("claimed by the survivor %v after the kill and %v after the lease expired (lease %v), completed after %v",
		claimedAfter.Round(time.Millisecond), claimedAt.Sub(deadUntil).Round(time.Millisecond), lease, finished.Round(time.Millisecond))

	var attempts int
	if err := conn.QueryRow(ctx, `SELECT attempts FROM vnf_lcm_op_occs WHERE id = $1`, opID).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Fatalf("claimed %d times, want 2 (the killed replica, then the survivor)", attempts)
	}
	// Nodes finished before the kill were not redone; every node is done once.
	rows, err := conn.Query(ctx, `SELECT node, attempt, state FROM op_journal WHERE op_occ_id = $1 AND step = 'infra.instantiate' AND node <> ''`, opID)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]int{}
	for rows.Next() {
		var node, state string
		var attempt int
		if err := rows.Scan(&node, &attempt, &state); err != nil {
			t.Fatal(err)
		}
		if state != "COMPLETED" {
			t.Errorf("node %s left %s", node, state)
		}
		nodes[node] = attempt
	}
	if len(nodes) != 3 || nodes["master-0"] != 1 {
		t.Fatalf("journal nodes after the resume: %v (master-0, done before the kill, must have run once)", nodes)
	}
	gr := send(t, "GET", survivor.Base+"/vnflcm/v1/vnf_instances/"+instID, nil)
	if gr.Status != 200 {
		t.Fatalf("GET instance: %d %s", gr.Status, gr.Body)
	}
	got := gr.JSON(t)
	info, _ := got["instantiatedVnfInfo"].(map[string]any)
	vnfcs, _ := info["vnfcResourceInfo"].([]any)
	if got["instantiationState"] != "INSTANTIATED" || len(vnfcs) != 3 {
		t.Fatalf("instance after the drill: %v with %d VNFCs", got["instantiationState"], len(vnfcs))
	}
}
