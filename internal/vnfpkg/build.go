package vnfpkg

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// BuildEpoch is the modification time BuildCSAR gives every entry, so the
// same tree always gives the same bytes.
var BuildEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// ContentType is the Content-Type BuildCSAR (and scripts/make-samples.sh)
// writes in TOSCA.meta for a file.
func ContentType(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return "application/x-yaml"
	case ".sh":
		return "application/x-sh"
	case ".py":
		return "text/x-python"
	case ".json":
		return "application/json"
	case ".txt", ".md":
		return "text/plain"
	}
	return "application/octet-stream"
}

// BuildCSAR zips a package source tree (as under samples/<name>/) into a
// CSAR, the way scripts/make-samples.sh does: TOSCA-Metadata/TOSCA.meta keeps
// the tree's first block (TOSCA-Meta-File-Version ... Entry-Definitions) and
// gets one artifact block with the SHA-256 of every other file; entries are
// sorted, deflated, dated BuildEpoch, mode 0644 (0755 for *.sh), without
// directory entries.
func BuildCSAR(src fs.FS) ([]byte, error) {
	var files []string
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && p != metaPath {
			files = append(files, p)
		} else if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("vnfpkg: %s is not a regular file", p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	head, err := fs.ReadFile(src, metaPath)
	if err != nil {
		return nil, fmt.Errorf("vnfpkg: the tree needs %s with its first block (Entry-Definitions ...): %w", metaPath, err)
	}
	var meta strings.Builder
	for _, l := range strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			if meta.Len() > 0 {
				break
			}
			continue
		}
		meta.WriteString(l + "\n")
	}
	content := map[string][]byte{}
	for _, f := range files {
		b, err := fs.ReadFile(src, f)
		if err != nil {
			return nil, err
		}
		content[f] = b
		fmt.Fprintf(&meta, "\nName: %s\nContent-Type: %s\nAlgorithm: SHA-256\nHash: %x\n", f, ContentType(f), sha256.Sum256(b))
	}
	content[metaPath] = []byte(meta.String())
	files = append(files, metaPath)
	slices.Sort(files)

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f, Method: zip.Deflate, Modified: BuildEpoch}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(f, ".sh") {
			mode = 0o755
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(content[f]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
