package packages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/outbound/outboundtest"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

// pattern is a reader of n deterministic bytes, made up as they are read.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n-p.off {
		b = b[:p.n-p.off]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 7 % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func newService(t *testing.T, dir string, parse ParseFunc) (*Service, *store.Store) {
	t.Helper()
	return newServiceWith(t, Config{SpoolDir: dir, Parse: parse})
}

func newServiceWith(t *testing.T, c Config) (*Service, *store.Store) {
	t.Helper()
	st := storetest.Open(t)
	box := storetest.NewBox(t)
	c.Store, c.Box, c.Logger = st, box, slog.New(slog.DiscardHandler)
	s := New(c)
	t.Cleanup(s.Wait)
	return s, st
}

// TestUploadStreamsWithoutHoldingTheCSAR: a 64 MiB upload goes to the
// database and the parser without the heap ever holding it: the peak heap
// growth stays far below the package's size, and what is stored is exactly
// what was sent, in 1 MiB chunks.
func TestUploadStreamsWithoutHoldingTheCSAR(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	var parsedSize atomic.Int64
	var parsedSum atomic.Value
	parse := func(_ context.Context, r io.ReaderAt, n int64) (*Parsed, error) {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(r, 0, n)); err != nil {
			return nil, err
		}
		parsedSize.Store(n)
		parsedSum.Store(hex.EncodeToString(h.Sum(nil)))
		return nil, errors.New("not a CSAR")
	}
	s, st := newService(t, dir, parse)
	ctx := context.Background()
	p, err := s.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.New()
	_, _ = io.Copy(want, &pattern{n: size})
	wantSum := hex.EncodeToString(want.Sum(nil))

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	err = s.UploadFrom(ctx, p.ID, &pattern{n: size})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	grew := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("heap growth during the upload: %d KiB", grew>>10)
	if grew > size/4 {
		t.Fatalf("the heap grew by %d MiB during a %d MiB upload", grew>>20, size>>20)
	}
	s.Wait()
	if parsedSize.Load() != size || parsedSum.Load() != wantSum {
		t.Fatalf("the parser saw %d bytes (sha %v)", parsedSize.Load(), parsedSum.Load())
	}
	// The failed onboarding discarded the content (chunks included).
	if _, err := st.PackageContent(ctx, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("content after a failed onboarding: %v", err)
	}
	var chunks int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM vnf_package_chunks`).Scan(&chunks); err != nil || chunks != 0 {
		t.Fatalf("%d chunks left (%v)", chunks, err)
	}
	// Nothing is left in the spool directory.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("spool directory holds %d files", len(ents))
	}
}

// TestStoredContentRoundTrips: content goes in as chunks and comes out
// byte for byte; rows of the earlier single-column format still read.
func TestStoredContentRoundTrips(t *testing.T) {
	s, st := newService(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, n := range []int64{1, store.ContentChunk - 1, store.ContentChunk, 2*store.ContentChunk + 12345} {
		p, err := s.Create(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, &pattern{n: n})
		sum := sha256.Sum256(buf.Bytes())
		if _, err := st.StartOnboarding(ctx, p.ID, "test", time.Minute,
			&store.Content{R: bytes.NewReader(buf.Bytes()), Size: n, SHA256: hex.EncodeToString(sum[:])}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := st.PackageContent(ctx, p.ID)
		if err != nil || !bytes.Equal(got, buf.Bytes()) {
			t.Fatalf("%d bytes: got %d bytes back (%v)", n, len(got), err)
		}
		var chunks int
		_ = st.Pool().QueryRow(ctx, `SELECT count(*) FROM vnf_package_chunks WHERE package_id=$1`, p.ID).Scan(&chunks)
		if want := int((n + store.ContentChunk - 1) / store.ContentChunk); chunks != want {
			t.Fatalf("%d bytes in %d chunks, want %d", n, chunks, want)
		}
	}
	// A short reader is an error, not a truncated package.
	p, _ := s.Create(ctx, nil)
	if _, err := st.StartOnboarding(ctx, p.ID, "test", time.Minute, &store.Content{R: &pattern{n: 10}, Size: 20, SHA256: "x"}, nil); err == nil {
		t.Fatal("10 of 20 bytes stored")
	}
	if cur, _ := st.GetPackage(ctx, p.ID); cur.OnboardingState != store.PkgCreated {
		t.Fatalf("a failed store left the package %s", cur.OnboardingState)
	}
	// Earlier format: the whole CSAR in vnf_package_contents.content.
	old, _ := s.Create(ctx, nil)
	if _, err := st.Pool().Exec(ctx, `INSERT INTO vnf_package_contents (package_id, content, size, sha256) VALUES ($1, 'old-bytes', 9, 'x')`, old.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := st.PackageContent(ctx, old.ID); err != nil || string(got) != "old-bytes" {
		t.Fatalf("old row: %q %v", got, err)
	}
}

func TestUploadRefusedBeforeTheBodyIsRead(t *testing.T) {
	s, st := newService(t, t.TempDir(), nil)
	ctx := context.Background()
	p, _ := s.Create(ctx, nil)
	if _, err := st.StartOnboarding(ctx, p.ID, "other", time.Minute, nil, nil); err != nil {
		t.Fatal(err)
	}
	r := &pattern{n: 1 << 20}
	if err := s.UploadFrom(ctx, p.ID, r); err == nil {
		t.Fatal("upload to an UPLOADING package accepted")
	}
	if r.off != 0 {
		t.Fatalf("%d bytes of the body were read before the refusal", r.off)
	}
	big := &pattern{n: 300 << 20}
	p2, _ := s.Create(ctx, nil)
	if err := s.UploadFrom(ctx, p2.ID, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("300 MiB: %v", err)
	}
}

// TestFetchesAreLimited: upload_from_uri downloads beyond MaxFetches wait
// for a slot instead of all running at once.
func TestFetchesAreLimited(t *testing.T) {
	var cur, peak, served atomic.Int32
	release := make(chan struct{})
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		cur.Add(-1)
		served.Add(1)
		_, _ = w.Write([]byte("PK not really"))
	}))
	defer src.Close()
	defer close(release)
	parse := func(context.Context, io.ReaderAt, int64) (*Parsed, error) { return nil, errors.New("not a CSAR") }
	s, _ := newServiceWith(t, Config{SpoolDir: t.TempDir(), Parse: parse, MaxFetches: 2,
		Outbound: outboundtest.Policy(0)})
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		p, err := s.Create(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UploadFromURI(ctx, p.ID, []byte(`{"addressInformation":"`+src.URL+`/p.zip"}`)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if got := cur.Load(); got != 2 {
		t.Fatalf("%d downloads in progress, want 2", got)
	}
	for i := 0; i < 4; i++ {
		release <- struct{}{}
	}
	s.Wait()
	if peak.Load() != 2 || served.Load() != 4 {
		t.Fatalf("peak %d downloads at once, %d served", peak.Load(), served.Load())
	}
}
