package kubespray

import (
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/doctable"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
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
	known := map[string][]string{"": topKeys, "master_node": masterKeys, "worker_node": nodeKeys, "proxy": kube.ProxyKeys,
		"ansible": ansibleKeys, "external_lb_param": lbKeys}
	var accepted []string
	for obj, keys := range known {
		for _, k := range keys {
			if obj != "" {
				k = obj + "." + k
			}
			accepted = append(accepted, k)
		}
	}
	undocumented, unknown := doctable.Diff(documented, accepted)
	for _, k := range undocumented {
		t.Errorf("the driver accepts %s.%s, docs/drivers.md does not document it", ParamKey, k)
	}
	for _, k := range unknown {
		t.Errorf("docs/drivers.md documents %s.%s, the driver does not accept it", ParamKey, k)
	}
}
