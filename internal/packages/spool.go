package packages

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// A spool holds a CSAR on disk while it is stored and parsed: an upload
// never sits whole in memory, and the CSAR reader gets the io.ReaderAt it
// needs. The file is unlinked as soon as it is created, so nothing is left
// behind when the process dies; closing it frees the space.
type spool struct {
	f    *os.File
	size int64
	sum  string // SHA-256, hex
}

// ErrTooLarge is content beyond Config.MaxBytes.
var ErrTooLarge = errors.New("the package is too large")

// newSpool copies r to an anonymous file in dir, hashing it, and fails
// with ErrTooLarge past max bytes. Errors of r are wrapped (%w): callers
// tell a body that timed out or was too large from one that was broken.
func newSpool(dir string, r io.Reader, max int64) (*spool, error) {
	f, err := os.CreateTemp(dir, "vnfm-csar-*")
	if err != nil {
		return nil, fmt.Errorf("packages: spool file: %w", err)
	}
	_ = os.Remove(f.Name()) // anonymous from now on
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &spool{f: f, size: n, sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// reader reads the spool from its start.
func (s *spool) reader() io.Reader { return io.NewSectionReader(s.f, 0, s.size) }

// ReadAt implements io.ReaderAt for the CSAR reader.
func (s *spool) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, off) }

// Close frees the spool. A nil spool closes without error.
func (s *spool) Close() error {
	if s == nil {
		return nil
	}
	return s.f.Close()
}
