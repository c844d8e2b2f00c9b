package store

import "sync"

// A coalescer runs calls in batches, one batch at a time: a call that finds
// no batch running leads one at once (an idle server waits for nothing); a
// call that finds one running queues, and when that batch ends, the oldest
// queued calls make the next, led by the first of them. A batch is taken
// from the queue before its leader runs it, so it answers only calls made
// before it started: what it reads or writes is never older than a call.
// No goroutine runs between batches, and there is no timer.
//
// GET's document reads keep a queue of their own (docreads.go): a GET
// leaves when its client goes away, where a call here is answered like a
// statement sent (creations must learn whether they were written), and
// their reads are pooled, which the GET path's allocations show.
type coalescer[T any] struct {
	mu    sync.Mutex
	busy  bool         // a batch is running
	queue []*member[T] // waiting for the next batch, oldest first
	max   int          // calls per batch at most
	// key, when set, keeps calls with the same key out of one batch (a
	// later one waits for a later batch).
	key func(*T) string
	// abort answers a call of a batch whose run panicked (with an error).
	abort func(*T)
}

// member is one call in a coalescer.
type member[T any] struct {
	v     T
	batch []*member[T] // set on the leader of a batch: the batch, itself first
	wake  chan struct{}
}

// join makes v a call of c: when it leads a batch it runs run on the batch;
// either way it returns once its batch ran (its answer is in the result).
// A queued call waits for the batch ahead of it and its own, not for its
// caller's context: like a statement sent, it is answered.
func (c *coalescer[T]) join(v T, run func(batch []*member[T])) *T {
	m := &member[T]{v: v, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.busy {
		c.queue = append(c.queue, m)
		c.mu.Unlock()
		<-m.wake
	} else {
		c.busy = true
		m.batch = []*member[T]{m}
		c.mu.Unlock()
	}
	if m.batch != nil {
		c.lead(m.batch, run)
	}
	return &m.v
}

// lead runs batch and hands the turn on. Should run panic, the batch's
// calls are answered (abort) and the turn handed on all the same — later
// calls are not left waiting — before the panic goes on in the leader.
func (c *coalescer[T]) lead(batch []*member[T], run func(batch []*member[T])) {
	ran := false
	defer func() {
		if !ran {
			for _, o := range batch {
				c.abort(&o.v)
			}
		}
		next := c.handOn()
		for _, o := range batch[1:] {
			o.wake <- struct{}{}
		}
		if next != nil {
			next.wake <- struct{}{}
		}
	}()
	run(batch)
	ran = true
}

// handOn ends a batch: the oldest queued calls make the next one, whose
// leader is returned; nil when none waits.
func (c *coalescer[T]) handOn() *member[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.busy = false
		return nil
	}
	batch := make([]*member[T], 0, min(len(c.queue), c.max))
	var seen map[string]bool
	if c.key != nil {
		seen = make(map[string]bool, cap(batch))
	}
	rest := c.queue[:0]
	for _, m := range c.queue {
		if len(batch) == c.max || seen != nil && seen[c.key(&m.v)] {
			rest = append(rest, m)
			continue
		}
		if seen != nil {
			seen[c.key(&m.v)] = true
		}
		batch = append(batch, m)
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	batch[0].batch = batch
	return batch[0]
}

// queued is the number of calls waiting for a batch.
func (c *coalescer[T]) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}
