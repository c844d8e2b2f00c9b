package remote_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
)

func TestForEach(t *testing.T) {
	hosts := []string{"m1", "w1", "w2", "w3", "w4", "w5", "w6", "w7"}
	for _, tc := range []struct {
		name       string
		limit      int
		wantPeak   int32
		failOn     string
		panicOn    string
		cancelAt   int32 // cancel the context when this many calls started
		wantCalled int32
	}{
		{name: "limit 3", limit: 3, wantPeak: 3, wantCalled: 8},
		{name: "default limit", limit: 0, wantPeak: 8, wantCalled: 8},
		{name: "one failure does not stop the others", limit: 2, wantPeak: 2, failOn: "w3", wantCalled: 8},
		{name: "panic becomes an error", limit: 4, wantPeak: 4, panicOn: "w1", wantCalled: 8},
		{name: "cancel stops unstarted items", limit: 2, wantPeak: 2, cancelAt: 2, wantCalled: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var running, peak, called atomic.Int32
			errs := remote.ForEach(ctx, hosts, tc.limit, func(ctx context.Context, h string) error {
				n := called.Add(1)
				if n == tc.cancelAt {
					cancel()
				}
				r := running.Add(1)
				for {
					p := peak.Load()
					if r <= p || peak.CompareAndSwap(p, r) {
						break
					}
				}
				defer running.Add(-1)
				time.Sleep(30 * time.Millisecond)
				if h == tc.panicOn {
					panic("boom")
				}
				if h == tc.failOn {
					return fmt.Errorf("join failed")
				}
				return nil
			})
			if len(errs) != len(hosts) {
				t.Fatalf("%d results for %d hosts", len(errs), len(hosts))
			}
			if peak.Load() != tc.wantPeak || called.Load() != tc.wantCalled {
				t.Errorf("peak %d, called %d; want %d, %d", peak.Load(), called.Load(), tc.wantPeak, tc.wantCalled)
			}
			for i, err := range errs {
				h := hosts[i]
				switch {
				case h == tc.failOn:
					if err == nil || err.Error() != "join failed" {
						t.Errorf("%s: %v", h, err)
					}
				case h == tc.panicOn:
					if err == nil || !strings.Contains(err.Error(), "panic: boom") {
						t.Errorf("%s: %v", h, err)
					}
				case tc.cancelAt > 0 && int32(i) >= tc.cancelAt:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s (not started): %v", h, err)
					}
				default:
					if err != nil {
						t.Errorf("%s: %v", h, err)
					}
				}
			}
			joined := remote.JoinErrors(hosts, errs, func(h string) string { return h })
			if (joined == nil) != (tc.failOn == "" && tc.panicOn == "" && tc.cancelAt == 0) {
				t.Errorf("JoinErrors = %v", joined)
			}
			if tc.failOn != "" && !strings.Contains(joined.Error(), tc.failOn+": join failed") {
				t.Errorf("JoinErrors does not name the host: %v", joined)
			}
		})
	}
}
