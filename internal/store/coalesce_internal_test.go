package store

import (
	"errors"
	"testing"
	"time"
)

// A batch whose run panics still answers its calls (abort) and hands the
// turn on: the panic goes on in its leader, the others get an error, and a
// later call runs in a batch of its own.
func TestCoalescerPanicAnswersTheBatch(t *testing.T) {
	type call struct {
		v   int
		err error
	}
	errAborted := errors.New("aborted")
	c := &coalescer[call]{max: 8, abort: func(c *call) { c.err = errAborted }}
	entered, release := make(chan struct{}), make(chan struct{})
	runs := 0 // batches run; only a leader touches it, one batch at a time
	run := func(batch []*member[call]) {
		runs++
		switch runs {
		case 1:
			close(entered)
			<-release
		case 2:
			panic("boom")
		}
		for _, m := range batch {
			m.v.v *= 10
		}
	}
	type result struct {
		c        call
		panicked any
	}
	join := func(v int) chan result {
		ch := make(chan result, 1)
		go func() {
			var r result
			defer func() {
				r.panicked = recover()
				ch <- r
			}()
			r.c = *c.join(call{v: v}, run)
		}()
		return ch
	}
	wait := func(ch chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(time.Minute):
			t.Fatal("no answer in a minute")
			return result{}
		}
	}
	first := join(1)
	<-entered
	second, third := join(2), join(3)
	for i := 0; c.queued() != 2; i++ {
		if i == 2000 {
			t.Fatalf("%d calls queued, want 2", c.queued())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if r := wait(first); r.panicked != nil || r.c.v != 10 || r.c.err != nil {
		t.Fatalf("first batch: %+v", r)
	}
	r2, r3 := wait(second), wait(third)
	var leader, other result
	switch {
	case r2.panicked != nil && r3.panicked == nil:
		leader, other = r2, r3
	case r3.panicked != nil && r2.panicked == nil:
		leader, other = r3, r2
	default:
		t.Fatalf("the panicking batch: %+v and %+v, want one leader panicking", r2, r3)
	}
	if leader.panicked != "boom" || !errors.Is(other.c.err, errAborted) {
		t.Fatalf("leader %+v, other %+v; want the panic and an aborted answer", leader, other)
	}
	if r := wait(join(4)); r.panicked != nil || r.c.v != 40 || r.c.err != nil || runs != 3 {
		t.Fatalf("a call after the panic: %+v (%d batches run)", r, runs)
	}
}
