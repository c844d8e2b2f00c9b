package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/packages"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
)

// ParseCSAR reads a CSAR with the built-in reader (internal/vnfpkg) and
// shapes what the package API shows: SOL005 softwareImages and
// additionalArtifacts.
func ParseCSAR(_ context.Context, content io.ReaderAt, size int64) (*packages.Parsed, error) {
	p, err := vnfpkg.Open(content, size, vnfpkg.Options{})
	if err != nil {
		return nil, err
	}
	out := &packages.Parsed{Vnfd: p.Summary(), VnfdFiles: p.VnfdFiles()}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, img := range p.SoftwareImages() {
		m := toMap(img)
		m["createdAt"] = now
		m["userMetadata"] = map[string]any{}
		out.SoftwareImages = append(out.SoftwareImages, m)
	}
	for _, a := range p.Artifacts() {
		if a.Path == "" {
			continue // external artifacts are not in the package
		}
		alg, hash := a.Algorithm, a.Hash
		if hash == "" { // SOL005 requires a checksum: compute one
			b, err := p.ReadFile(a.Path)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(b)
			alg, hash = "SHA-256", hex.EncodeToString(sum[:])
		}
		art := map[string]any{"artifactPath": a.Path, "metadata": map[string]any{},
			"checksum": map[string]any{"algorithm": alg, "hash": hash}}
		out.AdditionalArtifacts = append(out.AdditionalArtifacts, art)
	}
	return out, nil
}

func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}
