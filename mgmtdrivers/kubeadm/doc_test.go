package kubeadm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/doctable"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kube/kuryr"
)

// docs/drivers.md documents every parameter the driver accepts, and only
// those.
func TestDocsListEveryParameter(t *testing.T) {
	sec, err := doctable.Section("../../docs/drivers.md", "kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for title, body := range doctable.Subsections(sec) {
		if !strings.HasPrefix(title, "Per-operation") {
			documented = append(documented, doctable.FirstColumn(body)...)
		}
	}
	accepted := slices.Clone(topKeys)
	for _, k := range append(slices.Clone(kube.NodeKeys), masterOnly...) {
		accepted = append(accepted, "master_node."+k)
	}
	for _, k := range kube.NodeKeys {
		accepted = append(accepted, "worker_node."+k, "lb_node."+k)
	}
	// Documented so that Tacker users learn why it is refused.
	accepted = append(accepted, "master_node.cluster_fip_name")
	for _, k := range kube.ProxyKeys {
		accepted = append(accepted, "proxy."+k)
	}
	for _, k := range haKeys {
		accepted = append(accepted, "ha."+k)
	}
	for _, k := range kuryr.ParamNames() {
		accepted = append(accepted, "kuryr."+k)
	}
	undocumented, unknown := doctable.Diff(documented, accepted)
	for _, k := range undocumented {
		t.Errorf("the driver accepts %s.%s, docs/drivers.md does not document it", ParamKey, k)
	}
	for _, k := range unknown {
		t.Errorf("docs/drivers.md documents %s.%s, the driver does not accept it", ParamKey, k)
	}
}

// The documented per-operation overrides do override.
func TestDocsOverridesWork(t *testing.T) {
	sec, err := doctable.Section("../../docs/drivers.md", "kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	keys := doctable.FirstColumn(doctable.Subsections(sec)["Per-operation overrides (scale, heal, terminate)"])
	if len(keys) == 0 {
		t.Fatal("no per-operation overrides documented")
	}
	for _, k := range keys {
		login := kube.Login{Username: "u", Password: "p"}
		p := &Params{Master: NodeParams{NodeParams: kube.NodeParams{Login: login}}, Worker: NodeParams{NodeParams: kube.NodeParams{Login: login}},
			DrainTimeout: DefaultDrainTimeout, DrainPolicy: DrainFail, WorkerParallelism: DefaultWorkerParallelism}
		v := any("changed")
		switch k {
		case "drain_timeout":
			v = "7m"
		case "drain_policy":
			v = DrainForce
		case "worker_parallelism":
			v = 3
		case "force":
			v = true
		case "master_node_ssh_private_key", "worker_node_ssh_private_key", "master_node_ssh_private_key_passphrase", "worker_node_ssh_private_key_passphrase":
			continue // needs a real key: covered by params_test
		}
		if err := p.Overrides(map[string]any{k: v}); err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		got := map[string]bool{
			"master_node_username": p.Master.Username == "changed", "master_node_password": p.Master.Password == "changed",
			"worker_node_username": p.Worker.Username == "changed", "worker_node_password": p.Worker.Password == "changed",
			"drain_timeout": p.DrainTimeout == 7*time.Minute, "drain_policy": p.DrainPolicy == DrainForce,
			"worker_parallelism": p.WorkerParallelism == 3, "force": p.Force,
		}
		if changed, known := got[k]; !known || !changed {
			t.Errorf("documented override %s does not change the parameters", k)
		}
	}
}
