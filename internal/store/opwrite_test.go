package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func newOps(t *testing.T, st *store.Store, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		op, err := st.CreateOpOcc(context.Background(), store.NewOp{ID: uuid.NewString(), VnfInstanceID: newInstance(t, st, "i"),
			Operation: model.OpInstantiate, OperationParams: []byte(`{}`), Verb: "instantiated"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = op.ID
	}
	return ids
}

// ClaimN takes the oldest ready ops in one transaction, each with a lease
// owner of its own, and queues their PROCESSING notifications in that order.
func TestClaimNTakesSeveralOldestFirst(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	if _, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/n",
		Filter: &lccn.Filter{}}); err != nil {
		t.Fatal(err)
	}
	ids := newOps(t, st, 5)
	ops, err := st.ClaimN(ctx, "engine-1", time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("claimed %d ops, want 3", len(ops))
	}
	owners := map[string]bool{}
	for i, op := range ops {
		if op.ID != ids[i] || op.OperationState != model.StateProcessing || op.Attempts != 1 {
			t.Fatalf("claim %d: %s %s attempt %d, want %s PROCESSING attempt 1", i, op.ID, op.OperationState, op.Attempts, ids[i])
		}
		if !strings.HasPrefix(op.LeaseOwner, "engine-1/") || owners[op.LeaseOwner] {
			t.Fatalf("lease owner %q: want engine-1/<unique>", op.LeaseOwner)
		}
		owners[op.LeaseOwner] = true
	}
	rest, err := st.ClaimN(ctx, "engine-2", time.Minute, 10)
	if err != nil || len(rest) != 2 || rest[0].ID != ids[3] || rest[1].ID != ids[4] {
		t.Fatalf("second claim: %v %d ops", err, len(rest))
	}
	_, ds, err := st.ClaimSubscription(ctx, "n", time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	var processing []string
	for _, d := range ds {
		if n := notificationOf(t, d); n["operationState"] == model.StateProcessing {
			processing = append(processing, n["vnfLcmOpOccId"].(string))
		}
	}
	if strings.Join(processing, ",") != strings.Join(ids, ",") {
		t.Fatalf("PROCESSING notifications in order %v, want %v", processing, ids)
	}
}

// A group of writes commits together; a write whose lease is lost changes
// nothing and only it fails; a write that makes its statement fail is
// retried alone, so the others still land.
func TestWriteOpsGroup(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	newOps(t, st, 3)
	ops, err := st.ClaimN(ctx, "e", time.Minute, 3)
	if err != nil || len(ops) != 3 {
		t.Fatalf("claim: %v %d", err, len(ops))
	}
	begin := func(op *store.OpOcc, owner, step string) store.OpWrite {
		return store.OpWrite{OpOccID: op.ID, Owner: owner, Journal: []store.JournalWrite{{Kind: store.JournalBeginKind,
			Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: step}}}}
	}
	end := func(op *store.OpOcc, step string) store.OpWrite {
		return store.OpWrite{OpOccID: op.ID, Owner: op.LeaseOwner, Work: []byte(`{"instance":null}`),
			Journal: []store.JournalWrite{{Kind: store.JournalEndKind,
				Entry: store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: step, State: model.StepCompleted}}}}
	}
	res := st.WriteOps(ctx, []store.OpWrite{
		begin(ops[0], ops[0].LeaseOwner, "a"), begin(ops[1], "someone-else", "a"), begin(ops[2], ops[2].LeaseOwner, "a"),
		end(ops[0], "a"),
	})
	if res[0].Err != nil || res[2].Err != nil || res[3].Err != nil || !errors.Is(res[1].Err, store.ErrLeaseLost) {
		t.Fatalf("results: %v %v %v %v", res[0].Err, res[1].Err, res[2].Err, res[3].Err)
	}
	j, err := st.Journal(ctx, []string{ops[0].ID, ops[1].ID, ops[2].ID})
	if err != nil {
		t.Fatal(err)
	}
	if e := j[ops[0].ID]; len(e) != 1 || e[0].State != model.StepCompleted || e[0].Attempt != 1 {
		t.Fatalf("op 0 journal: %+v (begin then end in one group, in order)", e)
	}
	if len(j[ops[1].ID]) != 0 {
		t.Fatalf("a fenced-out write landed: %+v", j[ops[1].ID])
	}
	if e := j[ops[2].ID]; len(e) != 1 || e[0].State != "RUNNING" {
		t.Fatalf("op 2 journal: %+v", e)
	}
	// A write with a working copy is fenced as well: nothing of it lands.
	stale := end(ops[1], "a")
	stale.Owner, stale.Work = "someone-else", []byte(`{"stale":true}`)
	if r := st.WriteOps(ctx, []store.OpWrite{stale})[0]; !errors.Is(r.Err, store.ErrLeaseLost) {
		t.Fatalf("stale owner's write with work: %v", r.Err)
	}
	if got, _ := st.GetOpOcc(ctx, ops[1].ID); len(got.Work) != 0 {
		t.Fatalf("a fenced-out working copy landed: %s", got.Work)
	}
	if j, _ := st.Journal(ctx, []string{ops[1].ID}); len(j[ops[1].ID]) != 0 {
		t.Fatalf("a fenced-out journal end landed: %+v", j[ops[1].ID])
	}
	// A bad write (a phase the schema refuses) fails alone.
	bad := begin(ops[1], ops[1].LeaseOwner, "b")
	bad.Journal[0].Entry.Phase = "sideways"
	res = st.WriteOps(ctx, []store.OpWrite{begin(ops[0], ops[0].LeaseOwner, "b"), bad, begin(ops[2], ops[2].LeaseOwner, "b")})
	if res[0].Err != nil || res[1].Err == nil || res[2].Err != nil {
		t.Fatalf("results: %v %v %v", res[0].Err, res[1].Err, res[2].Err)
	}
	j, _ = st.Journal(ctx, []string{ops[0].ID, ops[2].ID})
	if len(j[ops[0].ID]) != 2 || len(j[ops[2].ID]) != 2 {
		t.Fatalf("the good writes of a failed group did not land alone: %d %d entries", len(j[ops[0].ID]), len(j[ops[2].ID]))
	}
	// A finish ends the lease; later writes of the old owner are fenced out.
	res = st.WriteOps(ctx, []store.OpWrite{{OpOccID: ops[0].ID, Owner: ops[0].LeaseOwner, Finish: &store.Finish{State: model.StateFailedTemp, KeepWork: true}},
		begin(ops[0], ops[0].LeaseOwner, "c")})
	if res[0].Err != nil || res[0].Op == nil || res[0].Op.OperationState != model.StateFailedTemp || !errors.Is(res[1].Err, store.ErrLeaseLost) {
		t.Fatalf("finish then write: %+v %v", res[0], res[1].Err)
	}
	got, err := st.GetOpOcc(ctx, ops[0].ID)
	if err != nil || len(got.Work) == 0 {
		t.Fatalf("FAILED_TEMP keeps the work written before it: %v %q", err, got.Work)
	}
}

// A group's journal writes are merged into few statements (a node's start
// and end folded into one change, repeated changes of a row in rounds): the
// journal they leave is the one that writing them one by one leaves, for
// every sequence of kinds the engine makes (rows that start in the same
// commit may list in another order).
func TestWriteOpsJournalGroupEqualsOneByOne(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	newOps(t, st, 2)
	ops, err := st.ClaimN(ctx, "e", time.Minute, 2)
	if err != nil || len(ops) != 2 {
		t.Fatalf("claim: %v %d", err, len(ops))
	}
	type jw struct {
		kind, step, node, state, msg, err, out string
	}
	// Several rounds of writes: each inner slice is one group.
	script := [][]jw{
		{{kind: "begin", step: "a"}},
		{{kind: "note", step: "a", msg: "working"}, {kind: "begin", step: "a", node: "n1", msg: "n1 starts"},
			{kind: "end", step: "a", node: "n1", state: model.StepCompleted, out: `{"token":1}`},
			{kind: "begin", step: "a", node: "n2", msg: "n2 starts"}, {kind: "note", step: "a", node: "n2", msg: "n2 half"},
			{kind: "end", step: "a", node: "n2", state: model.StepFailed, err: "boom"}},
		// the node again: start, note, end, then a note on the ended row
		{{kind: "begin", step: "a", node: "n2"}, {kind: "end", step: "a", node: "n2", state: model.StepCompleted},
			{kind: "note", step: "a", node: "n2", msg: "after"}, {kind: "end", step: "a", state: model.StepCompleted},
			{kind: "begin", step: "b"}, {kind: "note", step: "b", msg: "b runs"}},
		// a retried node whose end brings no output keeps its old one; a
		// note on a row that does not exist does nothing
		{{kind: "begin", step: "a", node: "n1", msg: "again"}, {kind: "end", step: "a", node: "n1", state: model.StepCompleted},
			{kind: "note", step: "c", msg: "nobody"}, {kind: "end", step: "b", state: model.StepFailed, err: "b failed", msg: "b ended"},
			{kind: "begin", step: "b"}, {kind: "end", step: "b", state: model.StepCompleted}, {kind: "begin", step: "b"}},
	}
	write := func(op *store.OpOcc, group []jw) store.OpWrite {
		w := store.OpWrite{OpOccID: op.ID, Owner: op.LeaseOwner}
		for _, x := range group {
			e := store.JournalEntry{OpOccID: op.ID, Phase: store.PhaseRun, Step: x.step, Node: x.node, State: x.state,
				Message: x.msg, Error: x.err}
			if x.out != "" {
				e.Output = []byte(x.out)
			}
			w.Journal = append(w.Journal, store.JournalWrite{Kind: x.kind, Entry: e})
		}
		return w
	}
	for i, group := range script {
		// ops[0]: the group at once, split over several OpWrites of the op;
		// ops[1]: one journal write per transaction.
		half := len(group) / 2
		res := st.WriteOps(ctx, []store.OpWrite{write(ops[0], group[:half]), write(ops[0], group[half:])})
		if res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("group %d: %v %v", i, res[0].Err, res[1].Err)
		}
		for _, x := range group {
			if r := st.WriteOps(ctx, []store.OpWrite{write(ops[1], []jw{x})})[0]; r.Err != nil {
				t.Fatalf("group %d one by one: %v", i, r.Err)
			}
		}
		j, err := st.Journal(ctx, []string{ops[0].ID, ops[1].ID})
		if err != nil {
			t.Fatal(err)
		}
		// Rows that start in one commit may list in another order (their start
		// times follow the statements): compare them by step and node.
		a, b := j[ops[0].ID], j[ops[1].ID]
		for _, es := range [][]store.JournalEntry{a, b} {
			slices.SortFunc(es, func(x, y store.JournalEntry) int {
				return cmp.Or(cmp.Compare(x.Step, y.Step), cmp.Compare(x.Node, y.Node))
			})
		}
		if len(a) != len(b) {
			t.Fatalf("after group %d: %d entries at once, %d one by one", i, len(a), len(b))
		}
		for k := range a {
			x, y := a[k], b[k]
			if (x.StartTime == nil) != (y.StartTime == nil) || (x.EndTime == nil) != (y.EndTime == nil) {
				t.Errorf("after group %d, %s/%s: times differ: %v %v / %v %v", i, x.Step, x.Node, x.StartTime, x.EndTime, y.StartTime, y.EndTime)
			}
			x.OpOccID, x.StartTime, x.EndTime, y.OpOccID, y.StartTime, y.EndTime = "", nil, nil, "", nil, nil
			if fmt.Sprint(x) != fmt.Sprint(y) {
				t.Errorf("after group %d:\n at once    %+v\n one by one %+v", i, x, y)
			}
		}
	}
	j, _ := st.Journal(ctx, []string{ops[0].ID})
	want := map[string]string{"a/": "COMPLETED 1 working", "a/n1": `COMPLETED 2 again {"token": 1}`, "a/n2": "COMPLETED 2 after",
		"b/": "RUNNING 3 "}
	for _, e := range j[ops[0].ID] {
		if got := fmt.Sprintf("%s %d %s %s", e.State, e.Attempt, e.Message, e.Output); strings.TrimSpace(got) != strings.TrimSpace(want[e.Step+"/"+e.Node]) {
			t.Errorf("%s/%s: %q, want %q", e.Step, e.Node, got, want[e.Step+"/"+e.Node])
		}
	}
}

// Several finishes in one group: their instances and op rows are written by
// one statement each, every op gets its own ended row, and their
// notifications are queued in the group's order; a finish of an op whose
// lease is lost writes nothing of it, its instance included.
func TestWriteOpsGroupFinishes(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	all, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/n",
		Filter: &lccn.Filter{NotificationTypes: []string{lccn.TypeOpOcc}, OperationStates: []string{model.StateCompleted, model.StateFailedTemp}}})
	if err != nil {
		t.Fatal(err)
	}
	// The event is of the instance as the finish leaves it.
	named, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/c",
		Filter: &lccn.Filter{NotificationTypes: []string{lccn.TypeOpOcc}, OperationStates: []string{model.StateCompleted},
			VnfInstanceSubscriptionFilter: &lccn.InstanceFilter{VnfInstanceNames: []string{"c"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// A finish without an instance reports the stored one's (opEvent).
	stored, err := st.CreateSubscription(ctx, &store.Subscription{ID: uuid.NewString(), CallbackURI: "http://127.0.0.1:1/i",
		Filter: &lccn.Filter{NotificationTypes: []string{lccn.TypeOpOcc}, OperationStates: []string{model.StateFailedTemp},
			VnfInstanceSubscriptionFilter: &lccn.InstanceFilter{VnfInstanceNames: []string{"i"}}}})
	if err != nil {
		t.Fatal(err)
	}
	newOps(t, st, 4)
	ops, err := st.ClaimN(ctx, "e", time.Minute, 4)
	if err != nil || len(ops) != 4 {
		t.Fatalf("claim: %v %d", err, len(ops))
	}
	finish := func(op *store.OpOcc, owner, state, name string) store.OpWrite {
		in, err := st.GetInstance(ctx, op.VnfInstanceID)
		if err != nil {
			t.Fatal(err)
		}
		v := in.VnfInstance
		v.VnfInstanceName, v.InstantiationState = name, model.Instantiated
		v.Metadata = map[string]any{"by": name}
		f := &store.Finish{State: state, Instance: &v, ChangedInfo: map[string]any{"vnfInstanceName": name}}
		if state == model.StateFailedTemp {
			f.Instance, f.KeepWork = nil, true
			f.Error = &model.ProblemDetails{Status: 500, Title: "t", Detail: "failed " + name}
		}
		return store.OpWrite{OpOccID: op.ID, Owner: owner, Finish: f, Work: []byte(`{"w":"` + name + `"}`)}
	}
	res := st.WriteOps(ctx, []store.OpWrite{
		finish(ops[2], ops[2].LeaseOwner, model.StateCompleted, "c"),
		finish(ops[0], ops[0].LeaseOwner, model.StateCompleted, "a"),
		finish(ops[1], "someone-else", model.StateCompleted, "b"),
		finish(ops[3], ops[3].LeaseOwner, model.StateFailedTemp, "d"),
	})
	for i, want := range []struct {
		op    *store.OpOcc
		state string
	}{{ops[2], model.StateCompleted}, {ops[0], model.StateCompleted}, {ops[1], ""}, {ops[3], model.StateFailedTemp}} {
		r := res[i]
		if want.state == "" {
			if !errors.Is(r.Err, store.ErrLeaseLost) || r.Op != nil {
				t.Fatalf("write %d: %+v, want ErrLeaseLost", i, r)
			}
			continue
		}
		if r.Err != nil || r.Op == nil || r.Op.ID != want.op.ID || r.Op.OperationState != want.state || r.Op.LeaseOwner != "" {
			t.Fatalf("write %d: %+v %v, want %s %s", i, r.Op, r.Err, want.op.ID, want.state)
		}
	}
	if got := res[3].Op; got.Error == nil || got.Error.Detail != "failed d" || string(got.Work) != `{"w":"d"}` { // the bytes written (text, migration 0020)
		t.Fatalf("FAILED_TEMP op: error %+v work %s", got.Error, got.Work)
	}
	if got := res[0].Op; got.ChangedInfo["vnfInstanceName"] != "c" || len(got.Work) != 0 {
		t.Fatalf("COMPLETED op: changedInfo %v work %s", got.ChangedInfo, got.Work)
	}
	for i, want := range map[int]string{0: "a", 1: "", 2: "c", 3: ""} {
		in, err := st.GetInstance(ctx, ops[i].VnfInstanceID)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			if in.Version != 1 || in.InstantiationState != model.NotInstantiated || in.VnfInstanceName != "i" {
				t.Errorf("instance of op %d changed: version %d %s %q", i, in.Version, in.InstantiationState, in.VnfInstanceName)
			}
			continue
		}
		if in.Version != 2 || in.InstantiationState != model.Instantiated || in.VnfInstanceName != want || in.Metadata["by"] != want {
			t.Errorf("instance of op %d: version %d %s %q %v", i, in.Version, in.InstantiationState, in.VnfInstanceName, in.Metadata)
		}
		doc, err := st.GetInstanceDoc(ctx, ops[i].VnfInstanceID)
		if err != nil || !strings.Contains(string(doc.Doc), `"vnfInstanceName":"`+want+`"`) {
			t.Errorf("instance of op %d: rendered document %s %v", i, doc.Doc, err)
		}
	}
	if got, _ := st.GetOpOcc(ctx, ops[1].ID); got.OperationState != model.StateProcessing || len(got.Work) != 0 {
		t.Fatalf("the fenced-out op: %s work %s", got.OperationState, got.Work)
	}
	queued := map[string][]store.Delivery{}
	for range 3 {
		sub, ds, err := st.ClaimSubscription(ctx, "n", time.Minute, 100)
		if err != nil || sub == nil {
			t.Fatalf("claim: %v %v", sub, err)
		}
		queued[sub.ID] = ds
	}
	var order []string
	ds := queued[all.ID]
	for _, d := range ds {
		n := notificationOf(t, d)
		order = append(order, n["vnfLcmOpOccId"].(string)+" "+n["operationState"].(string))
	}
	if want := []string{ops[2].ID + " COMPLETED", ops[0].ID + " COMPLETED", ops[3].ID + " FAILED_TEMP"}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("notifications %v, want %v", order, want)
	}
	if ds[0].NotificationID == ds[1].NotificationID {
		t.Fatalf("notifications of ops 2 and 0 share an id: %+v", ds[:2])
	}
	if c := queued[named.ID]; len(c) != 1 || notificationOf(t, c[0])["vnfLcmOpOccId"] != ops[2].ID {
		t.Fatalf("notifications for instances named c: %+v", c)
	}
	if c := queued[stored.ID]; len(c) != 1 || notificationOf(t, c[0])["vnfLcmOpOccId"] != ops[3].ID {
		t.Fatalf("FAILED_TEMP notifications for instances named i: %+v", c)
	}
}
