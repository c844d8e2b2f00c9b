package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// docResult is one GetInstanceDoc's answer.
type docResult struct {
	d   *store.InstanceDoc
	err error
}

// heldBatch holds the first batch of st's document reads (one batch in
// flight at most) at stage ("query": before its statement; "read": after
// it) until release is called, and records every batch's size.
type heldBatch struct {
	t       *testing.T
	st      *store.Store
	held    chan struct{} // closed when the first batch reached the stage
	gate    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
	onQuery func(n int) // run at every later batch's "query"
}

func holdFirstBatch(t *testing.T, st *store.Store, stage string) *heldBatch {
	t.Helper()
	h := &heldBatch{t: t, st: st, held: make(chan struct{}), gate: make(chan struct{})}
	first := true
	store.SetDocReads(st, 1, func(s string, n int) {
		h.mu.Lock()
		if s == "query" {
			h.sizes = append(h.sizes, n)
		}
		hold := s == stage && first
		if hold {
			first = false
		}
		later := h.onQuery
		h.mu.Unlock()
		if hold {
			close(h.held)
			<-h.gate
		} else if s == "query" && later != nil {
			later(n)
		}
	})
	t.Cleanup(func() {
		h.release()
		store.SetDocReads(st, 0, nil)
	})
	return h
}

func (h *heldBatch) release() { h.once.Do(func() { close(h.gate) }) }

// waitHeld waits for the first batch to reach its stage.
func (h *heldBatch) waitHeld() {
	h.t.Helper()
	select {
	case <-h.held:
	case <-time.After(10 * time.Second):
		h.t.Fatal("the first batch never reached its stage")
	}
}

// waitQueued waits until n reads are queued behind the held batch.
func (h *heldBatch) waitQueued(n int) {
	h.t.Helper()
	for range 1000 {
		if store.QueuedDocReads(h.st) == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("%d reads queued, want %d", store.QueuedDocReads(h.st), n)
}

func (h *heldBatch) batchSizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.sizes...)
}

// startHeld opens a store with instances a and b and starts a read of a
// whose batch is held at stage.
func startHeld(t *testing.T, stage string) (st *store.Store, a, b string, h *heldBatch, first <-chan docResult) {
	t.Helper()
	st = open(t)
	a, b = newInstance(t, st, "a"), newInstance(t, st, "b")
	h = holdFirstBatch(t, st, stage)
	first = getAsync(context.Background(), st, a)
	h.waitHeld()
	return st, a, b, h, first
}

// getAsync starts GetInstanceDoc(ctx, id).
func getAsync(ctx context.Context, st *store.Store, id string) <-chan docResult {
	ch := make(chan docResult, 1)
	go func() {
		d, err := st.GetInstanceDoc(ctx, id)
		ch <- docResult{d, err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan docResult) docResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("a read never returned")
		return docResult{}
	}
}

// readBatched reads ids as one batch: a first read of lead holds the only
// batch slot until all of ids are queued behind it. It checks that they
// were read by one statement.
func readBatched(t *testing.T, st *store.Store, lead string, ids []string) []docResult {
	t.Helper()
	h := holdFirstBatch(t, st, "query")
	first := getAsync(context.Background(), st, lead)
	h.waitHeld()
	chs := make([]<-chan docResult, len(ids))
	for i, id := range ids {
		chs[i] = getAsync(context.Background(), st, id)
	}
	h.waitQueued(len(ids))
	h.release()
	if r := await(t, first); r.err != nil {
		t.Fatalf("first read: %v", r.err)
	}
	out := make([]docResult, len(ids))
	for i, ch := range chs {
		out[i] = await(t, ch)
	}
	if got := h.batchSizes(); len(got) < 2 || got[0] != 1 || got[1] != len(ids) {
		t.Fatalf("batches of %v reads, want 1 then %d", got, len(ids))
	}
	store.SetDocReads(st, 0, nil)
	return out
}

func docString(d *store.InstanceDoc) string {
	if d == nil {
		return "no document"
	}
	return fmt.Sprintf("%s %s version %d updated %v: %s", d.ID, d.InstantiationState, d.Version, d.UpdatedAt, d.Doc)
}

// urlWith is the database URL with one more query parameter.
func urlWith(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

func sameDoc(a, b *store.InstanceDoc) bool {
	return a.ID == b.ID && a.InstantiationState == b.InstantiationState && a.Version == b.Version &&
		a.UpdatedAt.Equal(b.UpdatedAt) && bytes.Equal(a.Doc, b.Doc)
}

// Reads that wait for a batch in flight are answered together by the next
// statement, each with its own row (or not found), as one read alone
// would answer them: rendered documents, one that must be rendered again,
// the same id twice, an id in upper case, an unknown id. The same over
// pgx's query path (a URL without prepared statements).
func TestDocReadsShareOneStatement(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDB(t)
	for _, mode := range []string{"prepared", "exec"} {
		t.Run(mode, func(t *testing.T) {
			u := url
			if mode == "exec" {
				u = urlWith(url, "default_query_exec_mode=exec")
			}
			st, err := store.Open(ctx, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			a, b, c := newInstance(t, st, "a-"+mode), newInstance(t, st, "b-"+mode), newInstance(t, st, "c-"+mode)
			// c's rendered document is dropped: its reader renders it again.
			if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET vnf_instance_name = 'c2-'||$2 WHERE id = $1`, c, mode); err != nil {
				t.Fatal(err)
			}
			ids := []string{a, b, c, a, strings.ToUpper(b), uuid.NewString()}
			got := readBatched(t, st, a, ids)
			for i, id := range ids {
				if i == len(ids)-1 {
					if got[i].err != store.ErrNotFound {
						t.Errorf("unknown id: %v, want ErrNotFound", got[i].err)
					}
					continue
				}
				want, err := st.GetInstanceDoc(ctx, id) // alone
				if err != nil {
					t.Fatal(err)
				}
				if got[i].err != nil || !sameDoc(got[i].d, want) {
					t.Errorf("read %d (%s) in a batch: %s, %v; alone: %s", i, id, docString(got[i].d), got[i].err, docString(want))
				}
				if !strings.Contains(string(want.Doc), `"id":"`+strings.ToLower(id)+`"`) || want.ID != strings.ToLower(id) {
					t.Errorf("read %d: %s %s", i, want.ID, want.Doc)
				}
			}
			if !strings.Contains(string(got[2].d.Doc), `"vnfInstanceName":"c2-`+mode+`"`) {
				t.Errorf("the instance changed by hand read %s", got[2].d.Doc)
			}
		})
	}
}

// A read is never answered by a statement that started before it was
// queued: a GET sent after a write was acknowledged sees the write even
// when a batch that read the row before the write is still in flight.
func TestDocReadsLinearizable(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	id := newInstance(t, st, "before")
	h := holdFirstBatch(t, st, "read") // its statement has read the row
	old := getAsync(ctx, st, id)
	h.waitHeld()
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET vnf_instance_name = 'after', version = version + 1 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	fresh := getAsync(ctx, st, id) // the write is acknowledged
	h.waitQueued(1)
	h.release()
	if r := await(t, old); r.err != nil || r.d.Version != 1 || !strings.Contains(string(r.d.Doc), `"vnfInstanceName":"before"`) {
		t.Fatalf("the read before the write: %s, %v", docString(r.d), r.err)
	}
	if r := await(t, fresh); r.err != nil || r.d.Version != 2 || !strings.Contains(string(r.d.Doc), `"vnfInstanceName":"after"`) {
		t.Fatalf("the read after the write: %s, %v, want version 2 named after", docString(r.d), r.err)
	}
	if got := h.batchSizes(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("batches %v, want two of one read", got)
	}
}

// A reader whose context ends leaves at once, whether it waits in the
// queue or in a batch whose statement has not answered; the batch's
// statement runs on for the others, even when its leader is one that
// left.
func TestDocReadsCancelOneNotOthers(t *testing.T) {
	ctx := context.Background()
	st, a, b, h, first := startHeld(t, "query")
	queuedCtx, cancelQueued := context.WithCancel(ctx)
	queued := getAsync(queuedCtx, st, b)
	h.waitQueued(1)
	cancelQueued()
	if r := await(t, queued); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a queued read whose context ended: %s, %v", docString(r.d), r.err)
	}
	// The next batch: lead (leaves), other, batched (leaves), held before
	// its statement.
	leadCtx, cancelLead := context.WithCancel(ctx)
	lead := getAsync(leadCtx, st, a)
	h.waitQueued(2) // the read that left is still in the queue
	other := getAsync(ctx, st, b)
	h.waitQueued(3)
	batchedCtx, cancelBatched := context.WithCancel(ctx)
	batched := getAsync(batchedCtx, st, a)
	h.waitQueued(4)
	second, gate2 := make(chan struct{}), make(chan struct{})
	h.mu.Lock()
	h.onQuery = func(int) { close(second); <-gate2 }
	h.mu.Unlock()
	h.release()
	if r := await(t, first); r.err != nil || r.d.ID != a {
		t.Fatalf("first: %s, %v", docString(r.d), r.err)
	}
	select {
	case <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("no second batch")
	}
	cancelLead()
	cancelBatched()
	if r := await(t, batched); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a batched read whose context ended: %s, %v", docString(r.d), r.err)
	}
	close(gate2)
	if r := await(t, other); r.err != nil || r.d.ID != b {
		t.Fatalf("the read beside two that left: %s, %v", docString(r.d), r.err)
	}
	if r := await(t, lead); r.err != nil || r.d.ID != a {
		t.Fatalf("the leader that left before its statement: %s, %v (the statement runs on; its answer is given)", docString(r.d), r.err)
	}
	if got := h.batchSizes(); len(got) != 2 || got[1] != 3 {
		t.Fatalf("batches %v, want 1 then 3", got)
	}
}

// A batch's error reaches every reader in it, and reads after it run.
func TestDocReadsErrorReachesEveryReader(t *testing.T) {
	ctx := context.Background()
	st, a, b, h, first := startHeld(t, "read") // no lock left on the table
	chs := []<-chan docResult{getAsync(ctx, st, a), getAsync(ctx, st, b), getAsync(ctx, st, uuid.NewString())}
	h.waitQueued(len(chs))
	// The next batch's table is gone for the length of its statement.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `ALTER TABLE vnf_instances RENAME TO vnf_instances_gone`); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.onQuery = func(int) {
		if err := tx.Commit(ctx); err != nil {
			t.Error(err)
		}
	}
	h.mu.Unlock()
	h.release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	for i, ch := range chs {
		if r := await(t, ch); r.err == nil || r.err == store.ErrNotFound || !strings.Contains(r.err.Error(), "vnf_instances") {
			t.Errorf("reader %d of the failed batch: %s, %v", i, docString(r.d), r.err)
		}
	}
	if _, err := st.Pool().Exec(ctx, `ALTER TABLE vnf_instances_gone RENAME TO vnf_instances`); err != nil {
		t.Fatal(err)
	}
	store.SetDocReads(st, 0, nil)
	for _, id := range []string{a, b} {
		if d, err := st.GetInstanceDoc(ctx, id); err != nil || d.ID != id {
			t.Fatalf("after the failed batch: %s, %v", docString(d), err)
		}
	}
}

// Many concurrent readers, one batch or several in flight, each get their
// own instance's document or not found; readers that give up on the way
// (a deadline of a few microseconds) get their context's error or their
// answer, and nothing is left running after.
func TestDocReadsConcurrent(t *testing.T) {
	ctx := context.Background()
	before := runtime.NumGoroutine()
	st := open(t)
	var ids []string
	want := map[string]*store.InstanceDoc{}
	for i := range 8 {
		id := newInstance(t, st, "c"+string(rune('a'+i)))
		d, err := st.GetInstanceDoc(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		ids, want[id] = append(ids, id), d
	}
	ids = append(ids, uuid.NewString())
	for _, k := range []int{1, 3} {
		store.SetDocReads(st, k, nil)
		var wg sync.WaitGroup
		errs := make(chan string, 32)
		for g := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var d store.InstanceDoc
				for i := range 200 {
					id := ids[(g+i)%len(ids)]
					rctx, cancel := ctx, context.CancelFunc(func() {})
					if g%4 == 0 {
						rctx, cancel = context.WithTimeout(ctx, time.Duration(i%50)*time.Microsecond)
					}
					err := st.ReadInstanceDoc(rctx, id, &d)
					cancel()
					if g%4 == 0 && err != nil && rctx.Err() != nil && errors.Is(err, rctx.Err()) {
						continue // gave up
					}
					if w := want[id]; w == nil && err != store.ErrNotFound || w != nil && (err != nil || !sameDoc(&d, w)) {
						errs <- fmt.Sprintf("%d in flight: %s: %s, %v", k, id, docString(&d), err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
	// Counted with the store closed: a pooled connection may keep pgconn's
	// background reader of an interrupted write waiting for input until it
	// closes (seen on a loaded machine: one goroutine in bgreader.bgRead),
	// which is pgx's and no leak. A reader that gave up mid-query leaves
	// pgconn closing that connection in a goroutine of its own (a cancel
	// request, then up to 15 s for the server): on a loaded machine that
	// outlasts a few seconds, which is not a leak either.
	st.Close()
	for range 3000 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 256<<10)
	t.Errorf("%d goroutines 30 s after the reads, %d before; all of them:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
}

// A panic in a batch's read answers its other readers with an error and
// hands the turn on: later reads are not left waiting.
func TestDocReadsPanicHandsOn(t *testing.T) {
	ctx := context.Background()
	st, a, b, h, first := startHeld(t, "query")
	panicked := make(chan any, 1)
	go func() { // leads the next batch
		defer func() { panicked <- recover() }()
		_, _ = st.GetInstanceDoc(ctx, b)
	}()
	h.waitQueued(1)
	other := getAsync(ctx, st, a)
	h.waitQueued(2)
	h.mu.Lock()
	h.onQuery = func(int) { panic("boom") }
	h.mu.Unlock()
	h.release()
	if r := await(t, first); r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case v := <-panicked:
		if v != "boom" {
			t.Fatalf("the leader recovered %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader never returned")
	}
	if r := await(t, other); r.err == nil || r.err == store.ErrNotFound {
		t.Fatalf("the reader beside the panic: %s, %v", docString(r.d), r.err)
	}
	store.SetDocReads(st, 0, nil)
	if r := await(t, getAsync(ctx, st, a)); r.err != nil || r.d.ID != a {
		t.Fatalf("a read after the panic: %s, %v", docString(r.d), r.err)
	}
}
