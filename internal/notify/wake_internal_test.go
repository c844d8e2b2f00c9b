package notify

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

// wakeWorld is a notifier with one worker and a minute's poll, so that a
// notification left to the poll is not delivered within a test's bounds, and
// receivers that count the POSTs they get.
type wakeWorld struct {
	st     *store.Store
	n      *Notifier
	cancel context.CancelFunc
}

func newWakeWorld(t *testing.T) (*wakeWorld, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := storetest.Open(t)
	box := storetest.NewBox(t)
	n := New(Config{Store: st, Box: box, BaseURL: "http://vnfm.example", Logger: slog.New(slog.DiscardHandler),
		Workers: 1, Poll: time.Minute, Timeout: 2 * time.Second, Outbound: outboundtest.Policy(0)})
	t.Cleanup(cancel)
	return &wakeWorld{st: st, n: n, cancel: cancel}, ctx
}

// subscribe adds a subscription to every notification and counts its POSTs.
func (w *wakeWorld) subscribe(ctx context.Context, t *testing.T) *atomic.Int32 {
	t.Helper()
	var got atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			got.Add(1)
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	if _, err := NewSubscriptions(w.n, true).Create(ctx, []byte(`{"callbackUri":"`+rcv.URL+`"}`)); err != nil {
		t.Fatal(err)
	}
	return &got
}

// create makes an instance: its creation notification is queued for every
// subscription, with one wake-up.
func (w *wakeWorld) create(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := w.st.CreateInstance(ctx, &model.VnfInstance{ID: uuid.NewString(), VnfdID: "vnfd-a", VnfProvider: "p",
		VnfProductName: "sample", VnfSoftwareVersion: "1", VnfdVersion: "1"}); err != nil {
		t.Error(err)
	}
}

// run starts the notifier and waits (bounded) until its listener listens.
func (w *wakeWorld) run(ctx context.Context, t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { w.n.Run(ctx) })
	t.Cleanup(func() { w.cancel(); wg.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var listening int
		if err := w.st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN `+store.ChannelOutbox+`'`).Scan(&listening); err != nil {
			t.Fatal(err)
		}
		if listening > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the notifier's listener does not listen within 10 s")
		}
	}
}

func waitCount(t *testing.T, c *atomic.Int32, want int32, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.Load() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := c.Load(); got != want {
		t.Fatalf("%s: %d notifications delivered within 10 s, want %d (a notification left to the poll waits a minute here)", what, got, want)
	}
}

// One transaction queues a notification for two subscriptions and sends one
// wake-up: the worker that delivered to one claims again and delivers to the
// other at once, not after the poll.
func TestOneWakeUpReachesEverySubscription(t *testing.T) {
	w, ctx := newWakeWorld(t)
	a, b := w.subscribe(ctx, t), w.subscribe(ctx, t)
	w.run(ctx, t)
	w.create(ctx, t)
	waitCount(t, a, 1, "first subscription")
	waitCount(t, b, 1, "second subscription")
}

// A notification queued after a worker's record looked for more, whose
// wake-up another worker took (and, finding the subscription still leased,
// went back to sleep with), is sent by the worker that released the
// subscription at once, not after the poll. The race was seen in make bench
// as 2 s (the default poll) on a few notifications of a burst.
func TestWakeUpDuringTheRecordIsNotLost(t *testing.T) {
	w, ctx := newWakeWorld(t)
	got := w.subscribe(ctx, t)
	var once sync.Once
	w.n.afterRecord = func() {
		once.Do(func() {
			// After the record's snapshot: a second notification is
			// queued, and its wake-up goes to another worker.
			w.create(ctx, t)
			select {
			case <-w.n.wake:
			case <-time.After(10 * time.Second):
				t.Error("no wake-up within 10 s")
			}
		})
	}
	w.run(ctx, t)
	w.create(ctx, t)
	waitCount(t, got, 2, "one subscription")
}
