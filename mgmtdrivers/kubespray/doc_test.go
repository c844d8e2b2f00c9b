package kubespray

import (
	"slices"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/doctable"
)

// docs/drivers.md documents every parameter the driver accepts, and only
// those.
func TestDocsListEveryParameter(t *testing.T) {
	sec, err := doctable.Section("../../docs/drivers.md", "kubespray")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, body := range doctable.Subsections(sec) {
		documented = append(documented, doctable.FirstColumn(body)...)
	}
	var accepted []string
	for obj, keys := range known {
		for _, k := range keys {
			if obj != "" {
				k = obj + "." + k
			}
			accepted = append(accepted, k)
		}
	}
	for _, k := range accepted {
		if !slices.Contains(documented, k) {
			t.Errorf("the driver accepts %s.%s, docs/drivers.md does not document it", ParamKey, k)
		}
	}
	for _, k := range documented {
		if !slices.Contains(accepted, k) {
			t.Errorf("docs/drivers.md documents %s.%s, the driver does not accept it", ParamKey, k)
		}
	}
}
