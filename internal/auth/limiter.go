package auth

import (
	"math"
	"sync"
	"time"
)

// failureLimiter bounds failed authentications per client address with a
// token bucket: perMinute failures refill per minute, up to a burst of as
// many. Successful requests cost nothing.
type failureLimiter struct {
	mu        sync.Mutex
	perMinute float64
	buckets   map[string]*bucket
	now       func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

const maxTrackedAddrs = 10_000

func newFailureLimiter(perMinute int) *failureLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &failureLimiter{perMinute: float64(perMinute), buckets: map[string]*bucket{}, now: time.Now}
}

func (l *failureLimiter) refill(b *bucket, now time.Time) {
	b.tokens = math.Min(l.perMinute, b.tokens+now.Sub(b.at).Minutes()*l.perMinute)
	b.at = now
}

// blocked reports whether addr has no failures left, and when the next one
// is allowed.
func (l *failureLimiter) blocked(addr string) (bool, time.Duration) {
	if l == nil {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[addr]
	if !ok {
		return false, 0
	}
	l.refill(b, l.now())
	if b.tokens >= 1 {
		return false, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perMinute * float64(time.Minute))
	return true, wait
}

// fail records a failed authentication from addr.
func (l *failureLimiter) fail(addr string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[addr]
	if !ok {
		if len(l.buckets) >= maxTrackedAddrs {
			l.prune(now)
		}
		b = &bucket{tokens: l.perMinute, at: now}
		l.buckets[addr] = b
	}
	l.refill(b, now)
	b.tokens = math.Max(0, b.tokens-1)
}

// prune forgets addresses whose bucket is full again; if that is not
// enough (a flood from many addresses), it forgets everything.
func (l *failureLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.perMinute {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxTrackedAddrs {
		clear(l.buckets)
	}
}
