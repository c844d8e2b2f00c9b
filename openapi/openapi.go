// Package openapi holds the OpenAPI 3.0 description of the SOL003 VNF Lifecycle
// Management API served by mini-VNFM (/vnflcm/v1) and a request validator built
// on it.
package openapi

import (
	"context"
	_ "embed"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed vnflcm.yaml
var spec []byte

// Spec returns the raw YAML document, as served at /vnflcm/v1/openapi.yaml.
// The returned slice is a copy, so callers may keep or modify it.
func Spec() []byte {
	return append([]byte(nil), spec...)
}

var (
	loadOnce sync.Once
	loadDoc  *openapi3.T
	loadErr  error
)

// Load parses and validates the embedded document. It does the work once and
// returns the same *openapi3.T to every caller afterwards: treat it as
// read-only. ctx only matters for the first call.
func Load(ctx context.Context) (*openapi3.T, error) {
	loadOnce.Do(func() {
		loadDoc, loadErr = parse(ctx, spec)
	})
	return loadDoc, loadErr
}

func parse(ctx context.Context, data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse vnflcm.yaml: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapi: vnflcm.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
}
