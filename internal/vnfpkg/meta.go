package vnfpkg

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

const metaPath = "TOSCA-Metadata/TOSCA.meta"

// maxMetaSize bounds TOSCA.meta and the manifest.
const maxMetaSize = 1 << 20

// Meta is TOSCA-Metadata/TOSCA.meta.
type Meta struct {
	FileVersion      string // TOSCA-Meta-File-Version
	CSARVersion      string // CSAR-Version
	CreatedBy        string // Created-By
	EntryDefinitions string // Entry-Definitions, cleaned
	EntryManifest    string // ETSI-Entry-Manifest, cleaned
	EntryChangeLog   string // ETSI-Entry-Change-Log
	EntryLicenses    string // ETSI-Entry-Licenses
	EntryCertificate string // ETSI-Entry-Certificate
	// Keys holds every key of the first block as written.
	Keys map[string]string
	// Artifacts are the artifact blocks (Name/Source, Content-Type,
	// Algorithm, Hash).
	Artifacts []ArtifactEntry
}

// Manifest is the SOL004 manifest (.mf).
type Manifest struct {
	Path     string
	Metadata map[string]string
	Entries  []ArtifactEntry
}

// ArtifactEntry is one artifact block of TOSCA.meta or the manifest.
type ArtifactEntry struct {
	Source      string `json:"source"`         // as written
	Path        string `json:"path,omitempty"` // cleaned package path, "" when External
	ContentType string `json:"contentType,omitempty"`
	Algorithm   string `json:"algorithm,omitempty"` // SHA-256, SHA-384 or SHA-512
	Hash        string `json:"hash,omitempty"`      // lowercase hex
	Line        int    `json:"-"`                   // line of Name/Source
	HashLine    int    `json:"-"`                   // line of Hash
}

// External reports whether the artifact is referenced by URI rather than
// shipped in the package.
func (a ArtifactEntry) External() bool { return a.Path == "" }

// normAlgorithm maps the spellings seen in packages (SHA-256, SHA256,
// sha-256, SHA_256, sha256) to SHA-256/SHA-384/SHA-512, or "".
func normAlgorithm(s string) string {
	k := strings.ToUpper(strings.NewReplacer("-", "", "_", "", " ", "").Replace(s))
	switch k {
	case "SHA256", "SHA2256":
		return "SHA-256"
	case "SHA384", "SHA2384":
		return "SHA-384"
	case "SHA512", "SHA2512":
		return "SHA-512"
	}
	return ""
}

func newHash(alg string) hash.Hash {
	switch alg {
	case "SHA-384":
		return sha512.New384()
	case "SHA-512":
		return sha512.New()
	}
	return sha256.New()
}

func hashTool(alg string) string {
	return "sha" + strings.TrimPrefix(alg, "SHA-") + "sum"
}

func hexLen(alg string) int {
	switch alg {
	case "SHA-384":
		return 96
	case "SHA-512":
		return 128
	}
	return 64
}

// imageExts are the software image extensions whose hash Tacker does not
// require (images may be listed without Algorithm/Hash).
var imageExts = []string{".img", ".qcow2", ".raw", ".iso", ".vhd", ".vhdx", ".vmdk", ".vdi", ".ploop", ".aki", ".ari", ".ami"}

func isImage(p string) bool {
	return slices.Contains(imageExts, strings.ToLower(path.Ext(p)))
}

// metaLine is one logical "Key: value" line.
type metaLine struct {
	key, val string
	line     int
}

// splitBlocks cuts a TOSCA.meta-style text into blocks of "Key: value"
// lines separated by blank lines. Lines starting with a space or a tab
// continue the previous value; lines starting with # are comments.
func splitBlocks(file string, data []byte) ([][]metaLine, error) {
	if !utf8.Valid(data) {
		return nil, errorf(file, "the file is not UTF-8 text")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	var blocks [][]metaLine
	var cur []metaLine
	for i, raw := range strings.Split(string(data), "\n") {
		ln := i + 1
		line := strings.TrimRight(raw, "\r")
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				blocks = append(blocks, cur)
				cur = nil
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(cur) == 0 {
				return nil, errAt(file, ln, "a line starting with a space continues the previous value, but there is none; remove the indentation")
			}
			cur[len(cur)-1].val += strings.TrimSpace(line)
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil, errAt(file, ln, "expected a `Key: value` line, got %q", truncate(line, 80))
		}
		cur = append(cur, metaLine{key: key, val: strings.TrimSpace(val), line: ln})
	}
	if len(cur) > 0 {
		blocks = append(blocks, cur)
	}
	return blocks, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// cleanRef turns a path written in TOSCA.meta (relative to the package
// root) into a package path, or returns a reason it cannot be one.
func cleanRef(ref string) (string, string) {
	if strings.Contains(ref, "\\") {
		return "", `uses "\" as separator; use "/"`
	}
	if strings.HasPrefix(ref, "/") {
		return "", "is absolute; paths are relative to the package root"
	}
	c := path.Clean(ref)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", "points outside the package"
	}
	return c, ""
}

// isURI reports whether an artifact reference is a URI (external artifact).
func isURI(ref string) bool {
	scheme, rest, ok := strings.Cut(ref, "://")
	if !ok || scheme == "" || rest == "" {
		return false
	}
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// parseArtifact reads the Algorithm/Hash (and Content-Type) of a block
// whose Name/Source line is src.
func parseArtifact(file string, blk []metaLine, src metaLine) (ArtifactEntry, error) {
	a := ArtifactEntry{Source: src.val, Line: src.line}
	if src.val == "" {
		return a, errAt(file, src.line, "%s: has no value; write the artifact's path relative to the package root", src.key)
	}
	if !isURI(src.val) {
		p, why := cleanRef(src.val)
		if why != "" {
			return a, errAt(file, src.line, "%s: %q %s", src.key, src.val, why)
		}
		a.Path = p
	}
	var alg, hash *metaLine
	for i := range blk {
		l := &blk[i]
		switch strings.ToLower(l.key) {
		case "content-type":
			a.ContentType = l.val
		case "algorithm":
			alg = l
		case "hash":
			hash = l
		}
	}
	switch {
	case alg == nil && hash == nil:
		if a.External() || isImage(a.Path) {
			return a, nil
		}
		return a, errAt(file, src.line, "artifact %q has no Algorithm and Hash; add `Algorithm: SHA-256` and `Hash: <output of sha256sum %s>`", src.val, a.Path)
	case alg == nil:
		return a, errAt(file, hash.line, "artifact %q has a Hash but no Algorithm line; add `Algorithm: SHA-256` (or SHA-384, SHA-512)", src.val)
	case hash == nil:
		return a, errAt(file, alg.line, "artifact %q has an Algorithm but no Hash line; add `Hash: <hex digest>`", src.val)
	}
	a.Algorithm = normAlgorithm(alg.val)
	if a.Algorithm == "" {
		return a, errAt(file, alg.line, "unsupported hash algorithm %q; use SHA-256, SHA-384 or SHA-512", alg.val)
	}
	a.Hash = strings.ToLower(hash.val)
	a.HashLine = hash.line
	if _, err := hex.DecodeString(a.Hash); err != nil || len(a.Hash) != hexLen(a.Algorithm) {
		return a, errAt(file, hash.line, "Hash %q is not a %s digest (%d hexadecimal digits expected)", truncate(hash.val, 140), a.Algorithm, hexLen(a.Algorithm))
	}
	return a, nil
}

// parseMeta parses TOSCA-Metadata/TOSCA.meta.
func parseMeta(data []byte) (*Meta, error) {
	blocks, err := splitBlocks(metaPath, data)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, errorf(metaPath, "the file is empty; it needs at least `TOSCA-Meta-File-Version: 1.0`, `CSAR-Version: 1.1`, `Created-By: <you>` and `Entry-Definitions: Definitions/<top VNFD>.yaml`")
	}
	m := &Meta{Keys: map[string]string{}}
	first := map[string]metaLine{}
	for _, l := range blocks[0] {
		k := strings.ToLower(l.key)
		if prev, dup := first[k]; dup {
			return nil, errAt(metaPath, l.line, "%s appears twice in the metadata block (also line %d); keep one", l.key, prev.line)
		}
		if k == "name" || k == "source" {
			return nil, errAt(metaPath, l.line, "the first block must be the metadata block (TOSCA-Meta-File-Version, CSAR-Version, Created-By, Entry-Definitions); move the artifact blocks after it, separated by a blank line")
		}
		first[k] = l
		m.Keys[l.key] = l.val
	}
	get := func(k string) (string, int) { l := first[strings.ToLower(k)]; return l.val, l.line }
	m.FileVersion, _ = get("TOSCA-Meta-File-Version")
	m.CSARVersion, _ = get("CSAR-Version")
	m.CreatedBy, _ = get("Created-By")
	m.EntryChangeLog, _ = get("ETSI-Entry-Change-Log")
	m.EntryLicenses, _ = get("ETSI-Entry-Licenses")
	m.EntryCertificate, _ = get("ETSI-Entry-Certificate")
	entry, line := get("Entry-Definitions")
	if entry == "" {
		return nil, errAt(metaPath, line, "Entry-Definitions is missing or empty; add `Entry-Definitions: Definitions/<top VNFD>.yaml` to the first block")
	}
	p, why := cleanRef(entry)
	if why != "" {
		return nil, errAt(metaPath, line, "Entry-Definitions %q %s", entry, why)
	}
	m.EntryDefinitions = p
	if mf, line := get("ETSI-Entry-Manifest"); mf != "" {
		p, why := cleanRef(mf)
		if why != "" {
			return nil, errAt(metaPath, line, "ETSI-Entry-Manifest %q %s", mf, why)
		}
		m.EntryManifest = p
	}
	seen := map[string]int{}
	for _, blk := range blocks[1:] {
		var src *metaLine
		for i := range blk {
			switch strings.ToLower(blk[i].key) {
			case "name", "source":
				if src != nil {
					return nil, errAt(metaPath, blk[i].line, "the block already names its artifact (line %d); one Name: or Source: per block, blocks separated by a blank line", src.line)
				}
				src = &blk[i]
			}
		}
		if src == nil {
			return nil, errAt(metaPath, blk[0].line, "this block has no `Name:` (or `Source:`) line naming the artifact; separate blocks with exactly one blank line")
		}
		a, err := parseArtifact(metaPath, blk, *src)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[a.Source]; dup {
			return nil, errAt(metaPath, a.Line, "artifact %q is listed twice (also line %d)", a.Source, prev)
		}
		seen[a.Source] = a.Line
		m.Artifacts = append(m.Artifacts, a)
	}
	return m, nil
}

// parseManifest parses a SOL004 manifest: a metadata: section, then
// Source/Algorithm/Hash blocks; non_mano_artifact_sets and a CMS signature
// are skipped.
func parseManifest(file string, data []byte) (*Manifest, error) {
	if !utf8.Valid(data) {
		return nil, errorf(file, "the manifest is not UTF-8 text")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	mf := &Manifest{Path: file, Metadata: map[string]string{}}
	var text []byte
	section := ""
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimRight(raw, "\r")
		indented := line != "" && (line[0] == ' ' || line[0] == '\t')
		switch {
		case section == "cms":
			if strings.HasPrefix(strings.TrimSpace(line), "-----END") {
				section = ""
			}
			text = append(text, '\n')
			continue
		case strings.HasPrefix(line, "-----BEGIN"):
			section = "cms"
			text = append(text, '\n')
			continue
		case (section == "metadata" || section == "skip") && indented:
			if section == "metadata" {
				k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
				if !ok {
					return nil, errAt(file, i+1, "expected `key: value` in the metadata section, got %q", truncate(strings.TrimSpace(line), 80))
				}
				mf.Metadata[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
			text = append(text, '\n')
			continue
		case strings.TrimSpace(line) == "metadata:":
			section = "metadata"
			text = append(text, '\n')
			continue
		case !indented && isSectionHeader(line):
			// Another section (non_mano_artifact_sets:, ...): skipped.
			section = "skip"
			text = append(text, '\n')
			continue
		}
		if !indented {
			section = ""
		}
		text = append(text, line...)
		text = append(text, '\n')
	}
	blocks, err := splitBlocks(file, text)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for _, blk := range blocks {
		var src *metaLine
		for i := range blk {
			if strings.EqualFold(blk[i].key, "Source") {
				if src != nil {
					return nil, errAt(file, blk[i].line, "the block already has a Source (line %d); separate entries with a blank line", src.line)
				}
				src = &blk[i]
			}
		}
		if src == nil {
			return nil, errAt(file, blk[0].line, "this block has no `Source:` line; manifest entries are `Source:`, `Algorithm:` and `Hash:` lines separated by a blank line")
		}
		a, err := parseArtifact(file, blk, *src)
		if err != nil {
			return nil, err
		}
		if a.Algorithm == "" && !a.External() {
			return nil, errAt(file, a.Line, "manifest entry %q has no Algorithm and Hash; add `Algorithm: SHA-256` and `Hash: <output of sha256sum %s>`", a.Source, a.Path)
		}
		if prev, dup := seen[a.Source]; dup {
			return nil, errAt(file, a.Line, "%q is listed twice (also line %d)", a.Source, prev)
		}
		seen[a.Source] = a.Line
		mf.Entries = append(mf.Entries, a)
	}
	return mf, nil
}

// readMetadata finds the entry definitions (TOSCA.meta or the single root
// YAML) and the manifest.
func (p *Package) readMetadata() error {
	if p.Has(metaPath) {
		data, err := p.readFile(metaPath, maxMetaSize)
		if err != nil {
			return err
		}
		m, err := parseMeta(data)
		if err != nil {
			return err
		}
		p.meta = m
		if m.FileVersion == "" || m.CSARVersion == "" || m.CreatedBy == "" {
			p.warnf("%s: SOL004 asks for TOSCA-Meta-File-Version, CSAR-Version and Created-By in the first block", metaPath)
		}
		if !p.Has(m.EntryDefinitions) {
			return errAt(metaPath, 0, "Entry-Definitions names %q, which is not in the package; fix the path (relative to the package root, e.g. Definitions/top.vnfd.yaml)", m.EntryDefinitions)
		}
		p.entry = m.EntryDefinitions
		if m.EntryManifest != "" {
			if !p.Has(m.EntryManifest) {
				return errorf(metaPath, "ETSI-Entry-Manifest names %q, which is not in the package; add the manifest or remove the line", m.EntryManifest)
			}
			return p.readManifest(m.EntryManifest)
		}
		return nil
	}
	var roots []string
	for _, n := range p.names {
		if !strings.Contains(n, "/") && isYAMLName(n) {
			roots = append(roots, n)
		}
	}
	switch len(roots) {
	case 1:
		p.entry = roots[0]
	case 0:
		for _, n := range p.names {
			if strings.HasSuffix(n, "/"+metaPath) {
				return errorf(n, "TOSCA-Metadata must be at the root of the package, found it under %q: zip the content of the package directory, not the directory itself (cd %s && zip -r ../pkg.zip .)",
					strings.TrimSuffix(n, "/"+metaPath), strings.TrimSuffix(n, "/"+metaPath))
			}
		}
		return &Error{Msg: "the package has neither TOSCA-Metadata/TOSCA.meta nor a VNFD YAML file at its root; add TOSCA-Metadata/TOSCA.meta with `Entry-Definitions: <path of the top VNFD>`"}
	default:
		return &Error{Msg: fmt.Sprintf("the package has no TOSCA-Metadata/TOSCA.meta and %d YAML files at its root (%s), so the entry VNFD is ambiguous; keep one root YAML or add TOSCA.meta with Entry-Definitions",
			len(roots), quoteList(roots))}
	}
	mf := strings.TrimSuffix(p.entry, path.Ext(p.entry)) + ".mf"
	if p.Has(mf) {
		return p.readManifest(mf)
	}
	return nil
}

func (p *Package) readManifest(name string) error {
	data, err := p.readFile(name, maxMetaSize)
	if err != nil {
		return err
	}
	mf, err := parseManifest(name, data)
	if err != nil {
		return err
	}
	p.manifest = mf
	return nil
}

func isYAMLName(n string) bool {
	ext := strings.ToLower(path.Ext(n))
	return ext == ".yaml" || ext == ".yml"
}

func (p *Package) warnf(format string, args ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, args...))
}

// Meta returns TOSCA.meta, nil when the package has none.
func (p *Package) Meta() *Meta { return p.meta }

// Manifest returns the manifest, nil when the package has none.
func (p *Package) Manifest() *Manifest { return p.manifest }

// EntryDefinitions is the path of the top VNFD.
func (p *Package) EntryDefinitions() string { return p.entry }

// Warnings are problems that do not stop onboarding.
func (p *Package) Warnings() []string { return slices.Clone(p.warnings) }

// isSectionHeader matches a manifest section line such as
// "non_mano_artifact_sets:" (lower-case key, no value).
func isSectionHeader(line string) bool {
	k, ok := strings.CutSuffix(strings.TrimSpace(line), ":")
	if !ok || k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
