package lcm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// EngineConfig tunes the worker pool. Zero values take the defaults.
type EngineConfig struct {
	Config
	// Workers bounds the operations this process runs at once (default 64).
	// The pool adapts to the queue: each claim takes as many ready operations
	// as there are free slots (up to claimBatch) in one transaction, and an
	// operation's goroutine ends with it.
	Workers int
	// Lease is how long a claim lasts without a heartbeat (default 30s); a
	// crashed engine's operations are resumed elsewhere after at most this.
	Lease time.Duration
	// Heartbeat renews leases and polls cancel flags (default Lease/3).
	Heartbeat time.Duration
	// Poll is the fallback claim interval when no notification arrives (default 2s).
	Poll time.Duration
	// GracefulCancelTimeout bounds how long a GRACEFUL cancel waits for the
	// running step before its context is cancelled too (default 5m).
	GracefulCancelTimeout time.Duration
	// Refresh is how often the records of settled instances on VIMs whose
	// infra driver is a driverapi.Refresher (Kubernetes) are refreshed from
	// the VIM (0: never). See RefreshAll.
	Refresh time.Duration
	// Hooks for metrics and tests; may be nil.
	Observer Observer
	// Name identifies this process in lease owners (default hostname-pid).
	Name string
	// Service is the service accepting this process's requests (nil: one
	// of the engine's own). Sharing it lets an operation's first run here
	// use the instance and VNFD its acceptance read instead of reading them
	// again.
	Service *Service
}

// Observer receives engine events (metrics, test instrumentation).
type Observer interface {
	StepFinished(operation, step, state string, d time.Duration)
	// Checkpoint is called after every journal write; tests use it to crash the process.
	Checkpoint(opID, what string)
}

// Engine claims op occurrences from the database and runs them.
type Engine struct {
	cfg    EngineConfig
	svc    *Service
	log    *slog.Logger
	wake   chan struct{}
	commit *committer

	mu      sync.Mutex
	running map[string]*run // op id → run, for cancel notifications

	// The worker slots, taken by the dispatcher's claims and by the
	// operations this process accepts and runs itself (reserve).
	busy  atomic.Int64
	freed chan struct{} // a slot was freed
	runs  sync.WaitGroup
	slots sync.Mutex
	dctx  context.Context // the dispatcher's while it runs, under slots
	// claiming is closed when the dispatcher's claim in flight ends and
	// gives back the slots it reserved and did not use (nil: none in
	// flight), under slots.
	claiming chan struct{}
}

// NewEngine builds an engine; call Run to start it.
func NewEngine(cfg EngineConfig) *Engine {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.Lease / 3
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.GracefulCancelTimeout <= 0 {
		cfg.GracefulCancelTimeout = 5 * time.Minute
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	svc := cfg.Service
	if svc == nil {
		svc = NewService(cfg.Config)
	}
	e := &Engine{cfg: cfg, svc: svc, log: svc.log.With("component", "engine"),
		wake: make(chan struct{}, 1), running: map[string]*run{}, freed: make(chan struct{}, 1)}
	e.commit = newCommitter(svc.st, e.log, e.checkpoint)
	return e
}

// DefaultWorkers is the default bound of operations run at once.
const DefaultWorkers = 64

// claimBatch bounds the operations one claim takes.
const claimBatch = 16

// Run works until ctx is cancelled, then waits for running operations to stop.
// Operations interrupted by shutdown keep their journal and are resumed by the
// next engine that claims them once their lease expires.
func (e *Engine) Run(ctx context.Context) error {
	stop := make(chan struct{})
	go e.commit.run(stop)
	var wg sync.WaitGroup
	wg.Go(func() { e.listen(ctx) })
	if e.cfg.Refresh > 0 {
		wg.Go(func() { e.refreshLoop(ctx, e.cfg.Refresh) })
	}
	e.slots.Lock()
	e.dctx = ctx
	e.slots.Unlock()
	e.svc.runner.Store(e)
	e.dispatch(ctx)
	e.svc.runner.CompareAndSwap(e, nil)
	e.slots.Lock()
	e.dctx = nil // no slot is reserved any more: runs below counts them all
	e.slots.Unlock()
	e.runs.Wait()
	wg.Wait()
	close(stop) // every run has ended: nothing writes any more
	<-e.commit.done
	return nil
}

// Wake asks the dispatcher to look for work now (used after in-process enqueues).
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// reserve takes up to n free worker slots (0: none is free, or the
// engine is not running) and the context their runs take; each is given
// back by free, or by the run it was reserved for when it ends. For a claim
// (claiming non-nil), claiming is set while the claim is in flight.
func (e *Engine) reserve(n int, claiming chan struct{}) (int, context.Context) {
	e.slots.Lock()
	defer e.slots.Unlock()
	if e.dctx == nil || e.dctx.Err() != nil {
		return 0, nil
	}
	n = int(min(int64(n), int64(e.cfg.Workers)-e.busy.Load()))
	if n <= 0 {
		return 0, nil
	}
	e.busy.Add(int64(n))
	e.runs.Add(n)
	if claiming != nil {
		e.claiming = claiming
	}
	return n, e.dctx
}

// free gives back a reserved slot.
func (e *Engine) free() {
	e.busy.Add(-1)
	e.runs.Done()
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// start runs op in a reserved slot, which it frees when it ends.
func (e *Engine) start(ctx context.Context, op *store.OpOcc, owner string, h *handed) {
	go func() {
		defer e.free()
		e.execute(ctx, op, owner, h)
	}()
}

// selfRun is a worker slot reserved for an operation this process is
// accepting, to run it here without a claim: the op is created leased to
// owner (store.NewOp.LeaseOwner) and handed to a run in that slot (start),
// or the slot is freed.
type selfRun struct {
	e     *Engine
	ctx   context.Context
	owner string
}

// reserveRun reserves a slot for an operation being accepted (nil: none is
// free). A claim in flight holds the slots it may fill; the request waits
// for it to give back those it did not, rather than go to the queue and
// wake the dispatcher for another claim.
func (e *Engine) reserveRun(ctx context.Context) *selfRun {
	for range 2 {
		n, rctx := e.reserve(1, nil)
		if n > 0 {
			return &selfRun{e: e, ctx: rctx, owner: fmt.Sprintf("%s/%08x", e.cfg.Name, rand.Uint32())}
		}
		e.slots.Lock()
		c := e.claiming
		e.slots.Unlock()
		if c == nil {
			return nil
		}
		select {
		case <-c:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// dispatch claims ready operations while there are free slots and runs each
// in a goroutine of its own, until ctx ends.
func (e *Engine) dispatch(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		claiming := make(chan struct{})
		n, _ := e.reserve(claimBatch, claiming)
		if n > 0 {
			ops, err := e.svc.st.ClaimN(ctx, e.cfg.Name, e.cfg.Lease, n)
			for range n - len(ops) {
				e.free()
			}
			e.slots.Lock()
			e.claiming = nil
			e.slots.Unlock()
			close(claiming)
			if ctx.Err() != nil {
				for range ops { // the leases expire: another engine resumes them
					e.free()
				}
				return
			}
			if err != nil {
				e.log.Error("claim failed", "err", err)
			}
			for _, op := range ops {
				e.start(ctx, op, op.LeaseOwner, nil)
			}
			if err == nil && len(ops) == n {
				continue // the queue may hold more
			}
		}
		// Full, or the queue is empty: wait for a free slot or for work.
		var slot <-chan struct{}
		if n == 0 {
			slot = e.freed
		}
		timer.Reset(e.cfg.Poll)
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		case <-slot:
		case <-timer.C:
		}
	}
}

// listen turns LISTEN notifications into wake-ups and cancel signals, and
// reconnects with backoff; the poll interval covers any gap.
func (e *Engine) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := e.listenOnce(ctx, e.svc.st.Pool())
		if ctx.Err() != nil {
			return
		}
		e.log.Warn("notification listener stopped; polling until it reconnects", "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (e *Engine) listenOnce(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, ch := range []string{store.ChannelOps, store.ChannelCancel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	defer func() {
		// Never hand a LISTENing connection back to the pool.
		_ = conn.Conn().Close(context.Background())
	}()
	e.Wake() // catch up on anything enqueued while we were not listening
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case store.ChannelOps:
			e.Wake()
		case store.ChannelCancel:
			e.mu.Lock()
			r := e.running[n.Payload]
			e.mu.Unlock()
			if r != nil {
				r.checkCancel(ctx)
			}
		}
	}
}

// execute runs one claimed op under a heartbeat until it finishes, fails,
// is cancelled, or the lease is lost.
func (e *Engine) execute(parent context.Context, op *store.OpOcc, owner string, h *handed) {
	// Shutdown of this process must not look like a user cancel: the op keeps
	// its lease until it expires and another engine resumes it.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	r := &run{e: e, op: op, owner: owner, cancel: cancel, handed: h, starting: op.OperationState == model.StateStarting,
		log: e.log.With("opOccId", op.ID, "operation", op.Operation, "vnfInstanceId", op.VnfInstanceID, "attempt", op.Attempts)}
	e.mu.Lock()
	e.running[op.ID] = r
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, op.ID)
		e.mu.Unlock()
	}()

	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(e.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-parent.Done():
				// Stop working but leave the lease to expire: resume elsewhere.
				cancel(errShutdown)
				return
			case <-t.C:
				r.checkCancel(ctx)
			}
		}
	}()
	if op.IsCancelPending {
		r.cancelMode.Store(op.CancelMode)
		if op.CancelMode == model.CancelForceful {
			cancel(errForceful)
		}
	}
	r.execute(ctx)
	cancel(nil)
	<-hbDone
}

var (
	errShutdown  = errors.New("engine shutting down")
	errForceful  = errors.New("cancelled (FORCEFUL)")
	errLeaseLost = errors.New("lease lost")
)
