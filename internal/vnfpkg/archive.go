package vnfpkg

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Options bound what Open accepts. Zero fields take the defaults.
type Options struct {
	// MaxArchiveSize bounds the ZIP file itself (default 256 MiB).
	MaxArchiveSize int64
	// MaxTotalSize bounds the sum of the uncompressed file sizes, counted
	// from the bytes actually read (default 256 MiB).
	MaxTotalSize int64
	// MaxFileSize bounds one file uncompressed (default 64 MiB).
	MaxFileSize int64
	// MaxFiles bounds the number of archive entries, directories included
	// (default 10 000).
	MaxFiles int
	// MaxYAMLSize bounds one YAML file: VNFD, types, Heat template
	// (default 4 MiB).
	MaxYAMLSize int64
	// MaxYAMLNodes bounds the nodes of one YAML document with every alias
	// expanded (default 200 000): aliases cannot blow a small file up.
	MaxYAMLNodes int
	// MaxYAMLDepth bounds the nesting of one YAML document, aliases expanded
	// (default 64).
	MaxYAMLDepth int
	// MaxYAMLFiles bounds the VNFD files (entry + imports) (default 64).
	MaxYAMLFiles int
	// KnownDrivers are the management drivers interfaces.Vnflcm may bind to
	// (default DefaultKnownDrivers).
	KnownDrivers []string
}

// DefaultKnownDrivers are the built-in management drivers.
var DefaultKnownDrivers = []string{"kubeadm", "kubespray"}

// Defaults.
const (
	DefaultMaxArchiveSize = 256 << 20
	DefaultMaxTotalSize   = 256 << 20
	DefaultMaxFileSize    = 64 << 20
	DefaultMaxFiles       = 10000
	DefaultMaxYAMLSize    = 4 << 20
	DefaultMaxYAMLNodes   = 200000
	DefaultMaxYAMLDepth   = 64
	DefaultMaxYAMLFiles   = 64
)

func (o Options) withDefaults() Options {
	if o.MaxArchiveSize <= 0 {
		o.MaxArchiveSize = DefaultMaxArchiveSize
	}
	if o.MaxTotalSize <= 0 {
		o.MaxTotalSize = DefaultMaxTotalSize
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxYAMLSize <= 0 {
		o.MaxYAMLSize = DefaultMaxYAMLSize
	}
	if o.MaxYAMLNodes <= 0 {
		o.MaxYAMLNodes = DefaultMaxYAMLNodes
	}
	if o.MaxYAMLDepth <= 0 {
		o.MaxYAMLDepth = DefaultMaxYAMLDepth
	}
	if o.MaxYAMLFiles <= 0 {
		o.MaxYAMLFiles = DefaultMaxYAMLFiles
	}
	if o.KnownDrivers == nil {
		o.KnownDrivers = DefaultKnownDrivers
	}
	return o
}

// File is one regular file of the package.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// Package is an opened, validated CSAR. It keeps reading from the
// io.ReaderAt given to Open, which must stay valid and unchanged. Its methods
// are safe for concurrent use when the io.ReaderAt is.
type Package struct {
	opts     Options
	zr       *zip.Reader
	files    map[string]*zip.File // regular files by path
	dirs     map[string]bool      // directories, explicit or implied
	names    []string             // regular files, sorted
	sizes    map[string]int64     // actual uncompressed sizes
	meta     *Meta
	manifest *Manifest
	entry    string

	vnfdFiles []string
	summary   *model.Vnfd
	warnings  []string
}

// Open reads a CSAR (a ZIP file) without extracting it: it checks the
// archive's entries and sizes, TOSCA-Metadata/TOSCA.meta (or the single root
// YAML), every hash TOSCA.meta and the manifest list, reads the VNFD with its
// imports, binds the Vnflcm hooks to management drivers and the flavours to
// their Heat templates. Every failure is an *Error that says what to fix.
func Open(r io.ReaderAt, size int64, o Options) (p *Package, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, &Error{Msg: fmt.Sprintf("internal error while reading the package (%v); please report it with the package", v)}
		}
	}()
	return open(r, size, o)
}

func open(r io.ReaderAt, size int64, o Options) (*Package, error) {
	o = o.withDefaults()
	if size <= 0 {
		return nil, &Error{Msg: "the package is empty: upload a CSAR, a ZIP file with TOSCA-Metadata/TOSCA.meta"}
	}
	if size > o.MaxArchiveSize {
		return nil, &Error{Msg: fmt.Sprintf("the package is %s, more than the %s this VNFM accepts: leave software images out of the CSAR and reference them by sw_image_data.name (an image already in the VIM)",
			sizeString(size), sizeString(o.MaxArchiveSize))}
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &Error{Msg: fmt.Sprintf("the package is not a valid ZIP archive (%v): a VNF package must be a CSAR, a ZIP file with TOSCA-Metadata/TOSCA.meta at its root", err)}
	}
	p := &Package{opts: o, zr: zr, files: map[string]*zip.File{}, dirs: map[string]bool{".": true}, sizes: map[string]int64{}}
	if err := p.index(); err != nil {
		return nil, err
	}
	if err := p.readMetadata(); err != nil {
		return nil, err
	}
	if err := p.verify(); err != nil {
		return nil, err
	}
	if err := p.readVnfd(); err != nil {
		return nil, err
	}
	return p, nil
}

// index validates every entry's name, type and declared size.
func (p *Package) index() error {
	o := p.opts
	if len(p.zr.File) > o.MaxFiles {
		return &Error{Msg: fmt.Sprintf("the package has %d entries, more than the %d this VNFM accepts", len(p.zr.File), o.MaxFiles)}
	}
	var declared uint64
	seen := map[string]bool{}
	for _, f := range p.zr.File {
		name := f.Name
		if msg := checkName(name); msg != "" {
			return &Error{File: printable(name), Msg: "unsafe entry name: " + msg}
		}
		mode := f.Mode()
		if mode&fs.ModeSymlink != 0 {
			return &Error{File: name, Msg: "the package contains a symbolic link; store the file itself (zip without -y / --symlinks)"}
		}
		if mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0 {
			return &Error{File: name, Msg: "the package contains a special file (device, pipe or socket); only regular files and directories are allowed"}
		}
		if f.Flags&0x1 != 0 {
			return &Error{File: name, Msg: "the entry is encrypted; VNF packages must not be password-protected"}
		}
		isDir := strings.HasSuffix(name, "/") || mode.IsDir()
		clean := strings.TrimSuffix(name, "/")
		if seen[clean] {
			return &Error{File: clean, Msg: "the archive holds this name twice; re-create the package so each file appears once"}
		}
		seen[clean] = true
		if isDir {
			p.dirs[clean] = true
			continue
		}
		if f.UncompressedSize64 > uint64(o.MaxFileSize) {
			return &Error{File: name, Msg: fmt.Sprintf("the file is %s uncompressed, more than the %s per file this VNFM accepts",
				sizeString(int64(min(f.UncompressedSize64, 1<<62))), sizeString(o.MaxFileSize))}
		}
		declared += f.UncompressedSize64
		if declared > uint64(o.MaxTotalSize) {
			return &Error{Msg: fmt.Sprintf("the package holds more than %s uncompressed, the limit of this VNFM", sizeString(o.MaxTotalSize))}
		}
		p.files[name] = f
		p.names = append(p.names, name)
	}
	// Every parent of a file is a directory, never a file.
	for _, name := range p.names {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, isFile := p.files[d]; isFile {
				return &Error{File: d, Msg: fmt.Sprintf("the archive holds %q both as a file and as the directory of %q", d, name)}
			}
			p.dirs[d] = true
		}
	}
	for d := range p.dirs {
		if _, isFile := p.files[d]; isFile {
			return &Error{File: d, Msg: "the archive holds this name both as a file and as a directory"}
		}
	}
	slices.Sort(p.names)
	return nil
}

// checkName returns why name is unsafe, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "an entry has an empty name"
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	case strings.ContainsRune(name, '\\'):
		return `the name contains a backslash ("\"); the archive was probably made on Windows: re-create it with "/" as separator`
	case strings.HasPrefix(name, "/"):
		return "absolute path; entries must be relative to the package root"
	case len(name) >= 2 && name[1] == ':':
		return "absolute (drive-letter) path; entries must be relative to the package root"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "the name contains control characters"
	}
	clean := strings.TrimSuffix(name, "/")
	for _, elem := range strings.Split(clean, "/") {
		if elem == ".." {
			return `the name contains ".." (path traversal); entries must stay inside the package`
		}
	}
	if !fs.ValidPath(clean) || clean == "." {
		return `the name is not a clean relative path (no "." or empty elements, no trailing "/" on files)`
	}
	return ""
}

// printable makes an unsafe name safe to show.
func printable(name string) string {
	if utf8.ValidString(name) && !strings.ContainsFunc(name, unicode.IsControl) {
		return name
	}
	q := fmt.Sprintf("%q", name)
	return q[1 : len(q)-1]
}

// digestCheck is one expected hash of a file.
type digestCheck struct {
	alg      string // normalized: SHA-256, SHA-384, SHA-512
	want     string // lowercase hex
	file     string // where the hash is declared
	line     int
	listedAs string // Name/Source value as written
	h        hash.Hash
}

// verify reads every file once, bounding the bytes actually decompressed,
// and checks the hashes TOSCA.meta and the manifest declare.
func (p *Package) verify() error {
	checks := map[string][]*digestCheck{}
	addChecks := func(src string, entries []ArtifactEntry) error {
		for _, a := range entries {
			if a.External() {
				continue
			}
			if _, ok := p.files[a.Path]; !ok {
				what := "no such file"
				if p.dirs[a.Path] {
					what = "a directory, not a file"
				}
				return errAt(src, a.Line, "lists %q but the package has %s: fix the Name/Source line or add the file", a.Source, what)
			}
			if a.Algorithm == "" {
				continue
			}
			checks[a.Path] = append(checks[a.Path], &digestCheck{alg: a.Algorithm, want: a.Hash, file: src, line: a.HashLine, listedAs: a.Source})
		}
		return nil
	}
	if p.meta != nil {
		if err := addChecks(metaPath, p.meta.Artifacts); err != nil {
			return err
		}
	}
	if p.manifest != nil {
		if err := addChecks(p.manifest.Path, p.manifest.Entries); err != nil {
			return err
		}
	}
	var total int64
	for _, name := range p.names {
		f := p.files[name]
		limit := min(p.opts.MaxFileSize, p.opts.MaxTotalSize-total)
		var w io.Writer = io.Discard
		cs := checks[name]
		if len(cs) > 0 {
			ws := make([]io.Writer, len(cs))
			for i, c := range cs {
				c.h = newHash(c.alg)
				ws[i] = c.h
			}
			w = io.MultiWriter(ws...)
		}
		n, err := readBounded(f, w, limit)
		if errors.Is(err, errTooBig) {
			if limit == p.opts.MaxFileSize {
				return &Error{File: name, Msg: fmt.Sprintf("the file decompresses to more than %s, the per-file limit of this VNFM (its header claims %s: a ZIP bomb or a corrupt archive)",
					sizeString(limit), sizeString(int64(min(f.UncompressedSize64, 1<<62))))}
			}
			return &Error{File: name, Msg: fmt.Sprintf("the package decompresses to more than %s, the limit of this VNFM (a ZIP bomb or a corrupt archive)", sizeString(p.opts.MaxTotalSize))}
		}
		if err != nil {
			return err
		}
		total += n
		p.sizes[name] = n
		for _, c := range cs {
			got := fmt.Sprintf("%x", c.h.Sum(nil))
			if got != c.want {
				return errAt(c.file, c.line, "hash mismatch for %s: the %s of the file is %s but %s says %s; update the Hash (e.g. %s %s) or re-create the package",
					name, c.alg, got, path.Base(c.file), c.want, hashTool(c.alg), name)
			}
		}
	}
	return nil
}

// readBounded copies f's content to w, failing once more than limit bytes
// come out (whatever the header claims). It returns the bytes read.
func readBounded(f *zip.File, w io.Writer, limit int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			return 0, &Error{File: f.Name, Msg: fmt.Sprintf("the entry uses compression method %d, which this VNFM cannot read; use deflate or store", f.Method)}
		}
		return 0, &Error{File: f.Name, Msg: fmt.Sprintf("cannot read the entry (%v); the archive is corrupt", err)}
	}
	defer rc.Close()
	n, err := io.Copy(w, io.LimitReader(rc, limit+1))
	if err != nil {
		switch {
		case errors.Is(err, zip.ErrChecksum):
			return n, &Error{File: f.Name, Msg: "the entry is corrupt (CRC-32 mismatch); re-create the package"}
		case errors.Is(err, zip.ErrFormat):
			return n, &Error{File: f.Name, Msg: "the entry's data does not match its header (size or format); the archive is corrupt or crafted"}
		}
		return n, &Error{File: f.Name, Msg: fmt.Sprintf("cannot read the entry (%v); the archive is corrupt", err)}
	}
	if n > limit {
		return n, errTooBig
	}
	return n, nil
}

// errTooBig: an entry decompressed to more than the limit given to readBounded.
var errTooBig = errors.New("vnfpkg: entry too large")

func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readFile returns a regular file's content, at most max bytes.
func (p *Package) readFile(name string, max int64) ([]byte, error) {
	f, ok := p.files[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	var b bytes.Buffer
	if _, err := readBounded(f, &b, max); err != nil {
		if errors.Is(err, errTooBig) {
			return nil, &Error{File: name, Msg: fmt.Sprintf("the file is larger than %s, the limit for this kind of file", sizeString(max))}
		}
		return nil, err
	}
	return b.Bytes(), nil
}

// FS returns the package content as a read-only file system. Reads are
// bounded by the sizes checked at Open.
func (p *Package) FS() fs.FS { return pkgFS{p} }

type pkgFS struct{ p *Package }

func (f pkgFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if zf, ok := f.p.files[name]; ok {
		rc, err := zf.Open()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &boundedFile{rc: rc, info: zf.FileInfo(), left: f.p.sizes[name]}, nil
	}
	if f.p.dirs[name] {
		return f.p.zr.Open(name)
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f pkgFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	if _, ok := f.p.files[name]; !ok {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return f.p.readFile(name, f.p.sizes[name])
}

type boundedFile struct {
	rc   io.ReadCloser
	info fs.FileInfo
	left int64
}

func (b *boundedFile) Stat() (fs.FileInfo, error) { return b.info, nil }
func (b *boundedFile) Close() error               { return b.rc.Close() }
func (b *boundedFile) Read(buf []byte) (int, error) {
	if b.left <= 0 {
		// Anything beyond the size read at Open is an error, EOF is fine.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, errors.New("vnfpkg: file grew since the package was opened")
		}
		return 0, io.EOF
	}
	if int64(len(buf)) > b.left {
		buf = buf[:b.left]
	}
	n, err := b.rc.Read(buf)
	b.left -= int64(n)
	return n, err
}

// Files lists the package's regular files, sorted by path.
func (p *Package) Files() []File {
	out := make([]File, len(p.names))
	for i, n := range p.names {
		out[i] = File{Path: n, Size: p.sizes[n]}
	}
	return out
}

// Has reports whether the package has a regular file at path.
func (p *Package) Has(name string) bool { _, ok := p.files[name]; return ok }

// ReadFile returns a file of the package.
func (p *Package) ReadFile(name string) ([]byte, error) { return pkgFS{p}.ReadFile(name) }
