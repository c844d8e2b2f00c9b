package lcm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
		wake: make(chan struct{}, 1), running: map[string]*run{}}
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
	var wg, runs sync.WaitGroup
	wg.Go(func() { e.listen(ctx) })
	if e.cfg.Refresh > 0 {
		wg.Go(func() { e.refreshLoop(ctx, e.cfg.Refresh) })
	}
	e.dispatch(ctx, &runs)
	runs.Wait()
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

// dispatch claims ready operations while there are free slots and runs each
// in a goroutine of its own, until ctx ends.
func (e *Engine) dispatch(ctx context.Context, runs *sync.WaitGroup) {
	var running atomic.Int64
	freed := make(chan struct{}, 1)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		free := int64(e.cfg.Workers) - running.Load()
		if free > 0 {
			n := int(min(free, claimBatch))
			ops, err := e.svc.st.ClaimN(ctx, e.cfg.Name, e.cfg.Lease, n)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				e.log.Error("claim failed", "err", err)
			}
			for _, op := range ops {
				running.Add(1)
				runs.Go(func() {
					defer func() {
						running.Add(-1)
						select {
						case freed <- struct{}{}:
						default:
						}
					}()
					e.execute(ctx, op, op.LeaseOwner)
				})
			}
			if err == nil && len(ops) == n {
				continue // the queue may hold more
			}
		}
		// Full, or the queue is empty: wait for a free slot or for work.
		var slot <-chan struct{}
		if free <= 0 {
			slot = freed
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
func (e *Engine) execute(parent context.Context, op *store.OpOcc, owner string) {
	// Shutdown of this process must not look like a user cancel: the op keeps
	// its lease until it expires and another engine resumes it.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	r := &run{e: e, op: op, owner: owner, cancel: cancel,
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
