package kubeworld

import (
	"context"
	"testing"
	"time"
)

// NewTest starts a loopback world for a test and stops it at the test's end.
// The first use on a machine builds the binaries (minutes; see [Ensure]): run
// `make kube` first to keep that out of a test's timeout.
func NewTest(t testing.TB, o Options) *World {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	w, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubeworld logs at failure:%s", w.logTails())
		}
		if err := w.Stop(); err != nil {
			t.Errorf("kubeworld: stop: %v", err)
		}
	})
	return w
}
