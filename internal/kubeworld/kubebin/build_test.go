package kubebin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestCacheRoot(t *testing.T) {
	d := t.TempDir()
	t.Setenv(CacheEnv, d)
	if r, err := CacheRoot(); err != nil || r != d {
		t.Fatalf("CacheRoot with %s=%s: %q %v", CacheEnv, d, r, err)
	}
	t.Setenv(CacheEnv, "")
	r, err := CacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && r != "/var/cache/mini-vnfm" {
		t.Errorf("root's cache %q, want /var/cache/mini-vnfm (visible to the test hosts)", r)
	}
	if !strings.Contains(filepath.Join(r, cacheKey), KubernetesVersion) || !strings.Contains(cacheKey, KwokVersion) {
		t.Errorf("cache key %q does not name both versions", cacheKey)
	}
}

// fakeComplete fills a cache directory as a finished build leaves it.
func fakeComplete(t *testing.T, b Binaries) {
	t.Helper()
	for _, n := range append([]string{Kwok}, kubernetesCommands...) {
		if err := os.MkdirAll(b.BinDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b.Path(n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(b.KwokStages(), []byte("kind: Stage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCachedNeedsEveryBinary(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	if _, err := Cached(); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("empty cache: %v, want ErrNotBuilt", err)
	}
	b := Binaries{Dir: filepath.Join(root, cacheKey)}
	fakeComplete(t, b)
	if got, err := Cached(); err != nil || got.Dir != b.Dir {
		t.Fatalf("complete cache: %v %v", got, err)
	}
	if err := os.Remove(b.Path(Kubeadm)); err != nil {
		t.Fatal(err)
	}
	if _, err := Cached(); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("cache without kubeadm: %v, want ErrNotBuilt", err)
	}
}

// A second builder waits for the one holding the lock and takes its result
// instead of building again (it would fail here: there is no source).
func TestEnsureWaitsForTheBuilderHoldingTheLock(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	f, err := os.OpenFile(filepath.Join(root, "."+cacheKey+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var progress syncBuffer
	type res struct {
		b   Binaries
		err error
	}
	done := make(chan res, 1)
	go func() {
		b, err := Ensure(context.Background(), BuildOptions{Progress: &progress, SourceDir: t.TempDir()})
		done <- res{b, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(progress.String(), "another process is building") {
		if time.Now().After(deadline) {
			t.Fatalf("Ensure did not wait for the lock; progress %q", progress.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("Ensure returned while the lock was held: %v %v", r.b, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	b := Binaries{Dir: filepath.Join(root, cacheKey)}
	fakeComplete(t, b)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	select {
	case r := <-done:
		if r.err != nil || r.b.Dir != b.Dir {
			t.Fatalf("after the other build: %v %v", r.b, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure still waits after the lock was released")
	}
}

func TestEnsureWithoutSourceSaysHowToBuild(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	_, err := Ensure(context.Background(), BuildOptions{Progress: &bytes.Buffer{}, SourceDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make kube") {
		t.Fatalf("Ensure without a checkout: %v", err)
	}
}

func TestFindSourceDir(t *testing.T) {
	wd, _ := os.Getwd()
	d, err := FindSourceDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
		t.Fatalf("source dir %s: %v", d, err)
	}
	if _, err := FindSourceDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), CacheEnv) {
		t.Fatalf("outside a checkout: %v", err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
