package remote_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/remote/remotetest"
)

func TestUpload(t *testing.T) {
	big := make([]byte, 2<<20+123)
	_, _ = rand.Read(big)
	for _, transport := range []struct {
		name   string
		noSFTP bool
	}{{"sftp", false}, {"cat fallback", true}} {
		t.Run(transport.name, func(t *testing.T) {
			s := startServer(t, remotetest.Options{NoSFTP: transport.noSFTP})
			c := dial(t, targetFor(t, s))
			ctx := context.Background()
			if err := os.Mkdir(filepath.Join(s.Dir, "sub dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name string
				path string
				data []byte
				mode fs.FileMode
			}{
				{"script", "install.sh", []byte("#!/bin/sh\necho installed\n"), 0o755},
				{"secret", "admin.conf", []byte("token: abc\n"), 0o600},
				{"replace existing with other mode", "install.sh", []byte("#!/bin/sh\necho v2\n"), 0o700},
				{"empty", "empty", nil, 0o644},
				{"big", "big.bin", big, 0o640},
				{"odd name", "sub dir/it's $(x).txt", []byte("odd"), 0o644},
				{"setgid", "sg", []byte("x"), 0o755 | fs.ModeSetgid},
			} {
				t.Run(tc.name, func(t *testing.T) {
					p := filepath.Join(s.Dir, tc.path)
					if err := c.Upload(ctx, p, tc.data, tc.mode); err != nil {
						t.Fatal(err)
					}
					got, err := os.ReadFile(p)
					if err != nil || !bytes.Equal(got, tc.data) {
						t.Fatalf("content: %d bytes, %v; want %d bytes", len(got), err, len(tc.data))
					}
					st, _ := os.Stat(p)
					if want := tc.mode & (fs.ModePerm | fs.ModeSetgid); st.Mode()&(fs.ModePerm|fs.ModeSetgid) != want {
						t.Errorf("mode = %v, want %v", st.Mode(), want)
					}
				})
			}
			// No temporary files are left behind.
			var left []string
			_ = filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, _ error) error {
				if strings.Contains(d.Name(), ".tmp-") {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("temporary files left: %q", left)
			}
			usedCat := false
			for _, cmd := range s.Commands() {
				usedCat = usedCat || strings.Contains(cmd, "mktemp")
			}
			if usedCat != transport.noSFTP {
				t.Errorf("cat fallback used: %v, want %v", usedCat, transport.noSFTP)
			}
			// The script runs.
			if res, err := c.Run(ctx, remote.Command(filepath.Join(s.Dir, "install.sh")), remote.RunOpts{}); err != nil || res.Stdout != "v2\n" {
				t.Errorf("uploaded script: %q, %v", res.Stdout, err)
			}
			// A missing directory is an error, and leaves nothing.
			err := c.Upload(ctx, filepath.Join(s.Dir, "no/such/dir/f"), []byte("x"), 0o644)
			if err == nil || !strings.Contains(err.Error(), "no/such/dir/f") {
				t.Errorf("upload into a missing directory: %v", err)
			}
			// A cancelled context uploads nothing.
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			err = c.Upload(cctx, filepath.Join(s.Dir, "cancelled"), []byte("x"), 0o644)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled upload: %v", err)
			}
			if _, err := os.Stat(filepath.Join(s.Dir, "cancelled")); err == nil {
				t.Error("cancelled upload wrote the file")
			}
		})
	}
}
