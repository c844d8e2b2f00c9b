package kubeadm

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

// A node's connection never carries more than maxChannels commands at once
// (sshd refuses sessions beyond MaxSessions, and the reconnect that follows
// ends the commands still running); a shared session's commands take at
// most their share, so others keep room.
func TestNodeConnBoundsCommands(t *testing.T) {
	var running, most, mostShared, runningShared atomic.Int32
	peak := func(c, m *atomic.Int32) {
		n := c.Add(1)
		for {
			old := m.Load()
			if n <= old || m.CompareAndSwap(old, n) {
				return
			}
		}
	}
	x := kubectlHost(t, func(e *remotetest.Exec) int {
		peak(&running, &most)
		shared := strings.Contains(e.Cmd, "shared")
		if shared {
			peak(&runningShared, &mostShared)
		}
		time.Sleep(150 * time.Millisecond)
		if shared {
			runningShared.Add(-1)
		}
		running.Add(-1)
		return 0
	})
	s := &session{node: &Node{Name: "m1"}, x: newNodeConn(x)}
	w := s.shared(3)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			on, cmd := s, "kubectl own"
			if i%2 == 0 {
				on, cmd = w, "kubectl shared"
			}
			_, err := on.x.Run(context.Background(), cmd, remote.RunOpts{Sudo: true, Timeout: time.Minute})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most.Load() > maxChannels || most.Load() < 4 {
		t.Errorf("at most %d commands ran at once, want ≤ %d (and some at once)", most.Load(), maxChannels)
	}
	if mostShared.Load() > 3 || mostShared.Load() == 0 {
		t.Errorf("at most %d commands of the shared session ran at once, want 1..3", mostShared.Load())
	}
}
