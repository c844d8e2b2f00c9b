package store

// SetDocReads sets the coalescing of s's document reads for a test: k
// batches in flight at most (0: the default) and a hook each batch's leader
// runs before its statement ("query") and after it ("read"). Set it while
// no read runs.
func SetDocReads(s *Store, k int, hook func(stage string, n int)) {
	if k == 0 {
		k = docReadsInFlight
	}
	s.docs.mu.Lock()
	s.docs.k, s.docs.hook = k, hook
	s.docs.mu.Unlock()
}

// QueuedDocReads is the number of reads waiting for a batch (reads that
// left while queued included, until a batch passes them).
func QueuedDocReads(s *Store) int {
	s.docs.mu.Lock()
	defer s.docs.mu.Unlock()
	return len(s.docs.queue)
}

// CreateFallbacks is how often CreateOpOcc, given a read, took the
// transaction that reads under the lock.
func (s *Store) CreateFallbacks() int64 { return s.createFallbacks.Load() }

// SetCreateHook sets a hook each batch of creations' leader runs before its
// statement, with the batch's size; an error it returns is taken for the
// statement's. Set it while no creation runs.
func SetCreateHook(s *Store, hook func(n int) error) {
	s.creates.mu.Lock()
	s.creates.hook = hook
	s.creates.mu.Unlock()
}

// QueuedCreates is the number of creations waiting for a batch.
func QueuedCreates(s *Store) int { return s.creates.queued() }

// FailedCreateBatches is how many batches of creations failed (each of
// their creations then ran alone).
func FailedCreateBatches(s *Store) int64 { return s.creates.failed.Load() }

// SetReadHook sets a hook each batch of OpenForOp's reads' leader runs
// before its round trip, with the batch's size. Set it while no read runs.
func SetReadHook(s *Store, hook func(n int)) {
	s.reads.mu.Lock()
	s.reads.hook = hook
	s.reads.mu.Unlock()
}

// QueuedReads is the number of OpenForOp's reads waiting for a batch.
func QueuedReads(s *Store) int { return s.reads.queued() }
