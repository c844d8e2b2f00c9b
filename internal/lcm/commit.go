package lcm

import (
	"context"
	"log/slog"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// committer is the engine's group commit. Every journal write of every
// running operation goes through one queue; the committer takes whatever is
// waiting when the database is free and writes it in one transaction (one
// WAL flush). A write is committed before its caller returns, exactly as
// with a transaction of its own, so "journaled" keeps its meaning; only the
// commits are shared. One committer keeps the writes of an operation in the
// order they were made (an asynchronous node start before its end).
type committer struct {
	st   *store.Store
	log  *slog.Logger
	q    chan *pendingWrite
	done chan struct{}
	// after runs after a write committed (the engine's checkpoint observer).
	after func(opID, what string)
}

type pendingWrite struct {
	w    store.OpWrite
	what string                   // checkpoint name
	res  chan store.OpWriteResult // nil: asynchronous, nobody waits
}

// maxGroup bounds one transaction's writes.
const maxGroup = 128

func newCommitter(st *store.Store, log *slog.Logger, after func(opID, what string)) *committer {
	return &committer{st: st, log: log, q: make(chan *pendingWrite, maxGroup), done: make(chan struct{}), after: after}
}

// run commits until stop is closed and the queue is empty.
func (c *committer) run(stop <-chan struct{}) {
	defer close(c.done)
	group := make([]*pendingWrite, 0, maxGroup)
	ws := make([]store.OpWrite, 0, maxGroup)
	for {
		var first *pendingWrite
		select {
		case first = <-c.q:
		case <-stop:
			select {
			case first = <-c.q:
			default:
				return
			}
		}
		group, ws = append(group[:0], first), append(ws[:0], first.w)
	drain:
		for len(group) < maxGroup {
			select {
			case p := <-c.q:
				group, ws = append(group, p), append(ws, p.w)
			default:
				break drain
			}
		}
		// The group's own deadline: one caller giving up must not fail the others.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := c.st.WriteOps(ctx, ws)
		cancel()
		for i, p := range group {
			if res[i].Err == nil && p.what != "" && c.after != nil {
				c.after(p.w.OpOccID, p.what)
			}
			if p.res != nil {
				p.res <- res[i]
			} else if res[i].Err != nil {
				c.log.Warn("journal write failed", "opOccId", p.w.OpOccID, "checkpoint", p.what, "err", res[i].Err)
			}
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
