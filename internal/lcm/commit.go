package lcm

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// committer is the engine's group commit. Every journal write of every
// running operation goes through one queue; a lane takes whatever is
// waiting when it is free and writes it in one transaction (one WAL flush).
// A write is committed before its caller returns, exactly as with a
// transaction of its own, so "journaled" keeps its meaning; only the
// commits are shared.
//
// There are commitLanes lanes, each with its own connection, so that one
// group's statements run while another group is encoded, sent or flushed: with
// one lane, a burst of operations waited on a single connection that kept
// only one core busy. The writes of one operation stay in the order they were
// made (an asynchronous node start before its end): while a lane holds an
// uncommitted write of an operation, every later write of that operation goes
// to the same lane, after it.
type committer struct {
	// writeOps commits a group: store.WriteOps.
	writeOps func(context.Context, []store.OpWrite) []store.OpWriteResult
	log      *slog.Logger
	q        chan *pendingWrite
	done     chan struct{}
	// after runs after a write committed (the engine's checkpoint observer).
	after func(opID, what string)

	drawing sync.Mutex // held by the lane drawing from q
	mu      sync.Mutex
	owner   map[string]*lane // op id → the lane holding its uncommitted writes
	held    map[string]int   // op id → how many of them
	behind  map[string]int   // op id → how many of them wait in its lane's handed list
	lanes   []*lane
}

// lane is one group-commit connection's queue of handed-over writes: writes
// another lane drew from the shared queue whose operation this lane holds.
type lane struct {
	handed []*pendingWrite
}

type pendingWrite struct {
	w    store.OpWrite
	what string                   // checkpoint name
	res  chan store.OpWriteResult // nil: asynchronous, nobody waits
}

// maxGroup bounds one transaction's writes.
const maxGroup = 128

// commitLanes is how many groups may be in flight at once. Two measured
// best on the 2-core bench machine (docs/benchmarks.md): more lanes make
// smaller groups, and a group's fixed cost (its transaction, the fence) is
// then shared by fewer operations.
const commitLanes = 2

func newCommitter(st *store.Store, log *slog.Logger, after func(opID, what string)) *committer {
	c := &committer{writeOps: st.WriteOps, log: log, q: make(chan *pendingWrite, maxGroup), done: make(chan struct{}), after: after,
		owner: map[string]*lane{}, held: map[string]int{}, behind: map[string]int{}}
	for range commitLanes {
		c.lanes = append(c.lanes, &lane{})
	}
	return c
}

// run commits until stop is closed and every queue is empty.
func (c *committer) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for _, l := range c.lanes {
		wg.Go(func() { c.lane(l, stop) })
	}
	wg.Wait()
	close(c.done)
}

// lane commits groups: the writes handed over to it first, then whatever
// waits in the shared queue.
func (c *committer) lane(l *lane, stop <-chan struct{}) {
	group := make([]*pendingWrite, 0, maxGroup)
	ws := make([]store.OpWrite, 0, maxGroup)
	for {
		c.mu.Lock()
		group = append(group[:0], l.handed...)
		for _, p := range l.handed {
			if c.behind[p.w.OpOccID]--; c.behind[p.w.OpOccID] == 0 {
				delete(c.behind, p.w.OpOccID)
			}
		}
		clear(l.handed)
		l.handed = l.handed[:0]
		c.mu.Unlock()
		if !c.draw(l, &group, stop) {
			return
		}
		if len(group) == 0 { // everything drawn was handed over
			continue
		}
		ws = ws[:0]
		for _, p := range group {
			ws = append(ws, p.w)
		}
		// The group's own deadline: one caller giving up must not fail the others.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := c.writeOps(ctx, ws)
		cancel()
		if c.after != nil {
			for i, p := range group {
				if res[i].Err == nil && p.what != "" {
					c.after(p.w.OpOccID, p.what)
				}
			}
		}
		// Released after the observer saw the group (an operation's
		// checkpoints reach it in order) and before any caller hears back.
		c.release(group)
		for i, p := range group {
			if p.res != nil {
				p.res <- res[i]
			} else if res[i].Err != nil {
				c.log.Warn("journal write failed", "opOccId", p.w.OpOccID, "checkpoint", p.what, "err", res[i].Err)
			}
		}
	}
}

// draw adds to l's group what waits in the shared queue, waiting for the
// first write when the group is empty; false: stop is closed and nothing is
// left. One lane draws at a time, so that the writes of an operation are
// classified (take) in the order they were queued. A lane that already has
// writes (handed over to it) does not wait for the drawing lane.
func (c *committer) draw(l *lane, group *[]*pendingWrite, stop <-chan struct{}) bool {
	if len(*group) > 0 {
		if !c.drawing.TryLock() {
			return true
		}
	} else {
		c.drawing.Lock()
		var first *pendingWrite
		select {
		case first = <-c.q:
		case <-stop:
			select {
			case first = <-c.q:
			default:
				c.drawing.Unlock()
				return false
			}
		}
		c.mu.Lock()
		*group = c.take(l, *group, first)
		c.mu.Unlock()
	}
	defer c.drawing.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(*group) < maxGroup {
		select {
		case p := <-c.q:
			*group = c.take(l, *group, p)
		default:
			return true
		}
	}
	return true
}

// take adds p to l's group, or hands it over to the lane that holds an
// uncommitted write of its operation, behind that lane's current group
// (which commits it after that one). Once a write of an operation waits in a
// lane's handed list, the operation's later writes wait there too, even those
// the lane draws itself while it still forms its group. c.mu is held.
func (c *committer) take(l *lane, group []*pendingWrite, p *pendingWrite) []*pendingWrite {
	id := p.w.OpOccID
	c.held[id]++
	if o := c.owner[id]; o != nil && (o != l || c.behind[id] > 0) {
		o.handed = append(o.handed, p)
		c.behind[id]++
		return group
	}
	c.owner[id] = l
	return append(group, p)
}

// release ends the hold of a committed group's writes on their operations.
func (c *committer) release(group []*pendingWrite) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range group {
		id := p.w.OpOccID
		if c.held[id]--; c.held[id] == 0 {
			delete(c.held, id)
			delete(c.owner, id)
		}
	}
}

// write commits w with the writes of other operations waiting at the same
// moment and returns when it is durable; what names the checkpoint for the
// observer ("" = none).
func (c *committer) write(ctx context.Context, w store.OpWrite, what string) store.OpWriteResult {
	p := &pendingWrite{w: w, what: what, res: make(chan store.OpWriteResult, 1)}
	select {
	case c.q <- p:
	case <-ctx.Done():
		return store.OpWriteResult{Err: context.Cause(ctx)}
	}
	select {
	case r := <-p.res:
		return r
	case <-ctx.Done():
		// It may still commit; like a cancelled statement, the caller cannot know.
		return store.OpWriteResult{Err: context.Cause(ctx)}
	}
}

// writeAsync queues w without waiting: for writes whose loss in a crash
// costs nothing but a progress message (a node's start, a note). It lands
// with or before the operation's next write, which is ordered after it.
func (c *committer) writeAsync(w store.OpWrite, what string) {
	c.q <- &pendingWrite{w: w, what: what}
}
