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

// pkgFiles opens the instance's stored CSAR on first use: most steps never
// read package files, so the engine does not load it up front.
type pkgFiles struct {
	st    *store.Store
	pkgID string
	once  sync.Once
	pkg   *vnfpkg.Package
	err   error
}

func (p *pkgFiles) open() (*vnfpkg.Package, error) {
	p.once.Do(func() {
		if p.pkgID == "" {
			p.err = errors.New("the VNF instance has no VNF package")
			return
		}
		content, err := p.st.PackageContent(context.Background(), p.pkgID)
		if err != nil {
			p.err = fmt.Errorf("content of VNF package %s: %w", p.pkgID, err)
			return
		}
		p.pkg, p.err = vnfpkg.Open(bytes.NewReader(content), int64(len(content)), vnfpkg.Options{})
	})
	return p.pkg, p.err
}

func (p *pkgFiles) ReadFile(path string) ([]byte, error) {
	pkg, err := p.open()
	if err != nil {
		return nil, err
	}
	return pkg.ReadFile(path)
}

func (p *pkgFiles) HeatTemplate(flavourID string) (string, []byte, map[string]string, error) {
	pkg, err := p.open()
	if err != nil {
		return "", nil, nil, err
	}
	ht, err := pkg.HeatTemplate(flavourID)
	if err != nil {
		return "", nil, nil, err
	}
	return ht.Path, ht.Template, ht.Files, nil
}
