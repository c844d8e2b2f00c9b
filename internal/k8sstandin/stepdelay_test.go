package k8sstandin

import (
	"context"
	"io"
	"testing"
	"time"
)

func TestStepDelay(t *testing.T) {
	e := &env{ctx: context.Background(), stdin: nil, stdout: io.Discard, stderr: io.Discard}
	t.Setenv(StepDelayEnv, "150ms")
	t0 := time.Now()
	stepDelay(e)
	if d := time.Since(t0); d < 150*time.Millisecond {
		t.Fatalf("stepDelay slept %v, want ≥ 150ms", d)
	}
	t.Setenv(StepDelayEnv, "nonsense")
	t0 = time.Now()
	stepDelay(e)
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Fatalf("an invalid delay slept %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.Setenv(StepDelayEnv, "1h")
	stepDelay(&env{ctx: ctx, stdout: io.Discard, stderr: io.Discard})
}
