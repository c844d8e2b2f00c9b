package vnfpkgtest

import (
	"bytes"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg"
)

func TestCSAR(t *testing.T) {
	for _, n := range Samples {
		b := CSAR(t, n)
		p, err := vnfpkg.Open(bytes.NewReader(b), int64(len(b)), vnfpkg.Options{})
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if got := p.Summary().ID; got != VnfdIDs[n] {
			t.Errorf("%s: vnfdId %s, want %s", n, got, VnfdIDs[n])
		}
	}
}
