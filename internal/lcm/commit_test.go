package lcm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// TestCommitterKeepsEachOperationsOrder runs many operations' writes,
// asynchronous and waited for, through the committer's lanes with a slow
// group writer, and checks that every write of an operation commits after the
// ones made before it (the journal's rows depend on it: a node's start must
// not land after its end), that every write commits once, and that groups
// really were in flight at the same time.
func TestCommitterKeepsEachOperationsOrder(t *testing.T) {
	const ops, writes = 24, 40
	var (
		mu        sync.Mutex
		committed = map[string][]int{} // op → its writes' numbers in commit order
		inFlight  atomic.Int32
		maxFlight atomic.Int32
	)
	c := newCommitter(nil, slog.New(slog.NewTextHandler(io.Discard, nil)), func(opID, what string) {
		n, err := strconv.Atoi(what)
		if err != nil {
			t.Errorf("checkpoint %q", what)
		}
		mu.Lock()
		committed[opID] = append(committed[opID], n)
		mu.Unlock()
	})
	c.writeOps = func(_ context.Context, ws []store.OpWrite) []store.OpWriteResult {
		n := inFlight.Add(1)
		for m := maxFlight.Load(); n > m && !maxFlight.CompareAndSwap(m, n); m = maxFlight.Load() {
		}
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond) // the statements and the flush
		inFlight.Add(-1)
		return make([]store.OpWriteResult, len(ws))
	}
	stop := make(chan struct{})
	go c.run(stop)
	var wg sync.WaitGroup
	for i := range ops {
		op := fmt.Sprintf("op-%02d", i)
		wg.Go(func() {
			for k := range writes {
				w := store.OpWrite{OpOccID: op, Owner: "test"}
				if k%5 == 4 { // a checkpoint: waited for
					if r := c.write(context.Background(), w, strconv.Itoa(k)); r.Err != nil {
						t.Errorf("%s write %d: %v", op, k, r.Err)
					}
				} else { // node starts, notes: queued back to back
					c.writeAsync(w, strconv.Itoa(k))
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the committer did not stop")
	}
	for i := range ops {
		op := fmt.Sprintf("op-%02d", i)
		got := committed[op]
		if len(got) != writes {
			t.Fatalf("%s: %d writes committed, want %d: %v", op, len(got), writes, got)
		}
		for k, n := range got {
			if n != k {
				t.Fatalf("%s: writes committed in the order %v, want 0…%d", op, got, writes-1)
			}
		}
	}
	if m := maxFlight.Load(); m != commitLanes {
		t.Errorf("at most %d groups were in flight at once, want %d", m, commitLanes)
	}
	if len(c.owner) != 0 || len(c.held) != 0 || len(c.behind) != 0 {
		t.Errorf("holds left after the end: %v %v %v", c.owner, c.held, c.behind)
	}
}
