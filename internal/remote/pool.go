package remote

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// DefaultParallel caps ForEach when no limit is given.
const DefaultParallel = 16

// ForEach calls fn for every item, at most limit at a time (limit <= 0:
// DefaultParallel), and waits for all of them. It returns one error per item,
// in item order (nil for success). A failing item does not stop the others;
// to stop early, cancel ctx: items not yet started then get ctx's error
// without fn being called. A panic in fn becomes that item's error.
func ForEach[T any](ctx context.Context, items []T, limit int, fn func(ctx context.Context, item T) error) []error {
	if limit <= 0 {
		limit = DefaultParallel
	}
	errs := make([]error, len(items))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, item := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for j := i; j < len(items); j++ {
				errs[j] = context.Cause(ctx)
			}
			wg.Wait()
			return errs
		}
		if err := context.Cause(ctx); err != nil {
			<-sem
			for j := i; j < len(items); j++ {
				errs[j] = err
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("remote: panic: %v\n%s", p, debug.Stack())
				}
			}()
			errs[i] = fn(ctx, item)
		}()
	}
	wg.Wait()
	return errs
}

// JoinErrors combines ForEach's per-item errors into one error naming each
// failed item (nil when all succeeded).
func JoinErrors[T any](items []T, errs []error, name func(T) string) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("%s: %w", name(items[i]), err))
		}
	}
	return errors.Join(out...)
}
