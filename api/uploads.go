package api

import "sync"

// uploadLimiter bounds the package uploads in progress, in all and per
// client address: each holds a connection, a spool file and a database
// transaction, so a few clients must not take them all.
type uploadLimiter struct {
	mu             sync.Mutex
	total          int
	max, perClient int
	byClient       map[string]int
}

func newUploadLimiter(max, perClient int) *uploadLimiter {
	return &uploadLimiter{max: max, perClient: perClient, byClient: map[string]int{}}
}

// acquire takes a slot for client; ok is false when none is free.
func (l *uploadLimiter) acquire(client string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max || l.byClient[client] >= l.perClient {
		return nil, false
	}
	l.total++
	l.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.byClient[client]--; l.byClient[client] <= 0 {
				delete(l.byClient, client)
			}
		})
	}, true
}
