package lcm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
)

// pkgFiles is the instance's VNF package as drivers read it
// (driverapi.Package). It opens the stored CSAR on first use — most steps
// never read package files — and keeps it once opened; a failed open (a
// cancelled context) is tried again by the next call.
type pkgFiles struct {
	st    *store.Store
	pkgID string
	mu    sync.Mutex
	pkg   *vnfpkg.Package
}

func (p *pkgFiles) open(ctx context.Context) (*vnfpkg.Package, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pkg != nil {
		return p.pkg, nil
	}
	if p.pkgID == "" {
		return nil, errors.New("the VNF instance has no VNF package")
	}
	content, err := p.st.PackageContent(ctx, p.pkgID)
	if err != nil {
		return nil, fmt.Errorf("content of VNF package %s: %w", p.pkgID, err)
	}
	pkg, err := vnfpkg.Open(bytes.NewReader(content), int64(len(content)), vnfpkg.Options{})
	if err != nil {
		return nil, err
	}
	p.pkg = pkg
	return pkg, nil
}

// ReadFile implements driverapi.Package.
func (p *pkgFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	pkg, err := p.open(ctx)
	if err != nil {
		return nil, err
	}
	return pkg.ReadFile(path)
}

// Files implements driverapi.Package.
func (p *pkgFiles) Files(ctx context.Context) ([]string, error) {
	pkg, err := p.open(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range pkg.Files() {
		out = append(out, f.Path)
	}
	return out, nil
}
