package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/vnfpkg/vnfpkgtest"
	"github.com/mini-vnfm/mini-vnfm/samples"
)

// opsOf lists the op occurrences of an instance (raw JSON).
func (e *osEnv) opsOf(inst string) string {
	e.t.Helper()
	res, err := http.Get(e.vnfm.Base + "/vnflcm/v1/vnf_lcm_op_occs?filter=" + url.QueryEscape("(eq,vnfInstanceId,"+inst+")"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("list op occs: %d %s", res.StatusCode, b)
	}
	return strings.TrimSpace(string(b))
}

// A request that cannot succeed is refused when it is accepted (422 naming
// the JSON path), before any operation exists and anything is created: a
// key the driver would ignore, a connection point the VNFD does not have, a
// script that is not in the package or not the VNFM's, a CIDR with host
// bits (issue 15). The drivers' parameters are read once, then: the
// request a driver accepts is the one its hooks get.
func TestRequestsThatCannotSucceedAreRefused(t *testing.T) {
	e := newOSEnv(t)
	cloud := samples.Cloud{NetworkID: simNetID, NodePassword: "n0de-pw",
		Ansible: &samples.AnsibleServer{Address: "10.77.0.250", User: "ansible", Password: "an-pw", KubesprayRoot: "/opt/kubespray", Inventories: "/home/ansible/inventories"}}
	vnfds := map[string]string{}
	vnfdOf := func(name string) string {
		if vnfds[name] == "" {
			vnfds[name] = e.onboardCSAR(vnfpkgtest.CSAR(t, name))
		}
		return vnfds[name]
	}
	const root = "additionalParams.k8s_cluster_installation_param"
	for _, tc := range []struct {
		sample, name string
		edit         func(p map[string]any)
		want         []string
	}{
		{"kubespray", "an install script kubespray would ignore", func(p map[string]any) { p["script_path"] = "Scripts/install_k8s_cluster.sh" },
			[]string{root + ".script_path: is not used by kubespray"}},
		{"kubespray", "a cluster CP kubespray would ignore", func(p map[string]any) { p["master_node"].(map[string]any)["cluster_cp_name"] = "masterNode_CP1" },
			[]string{root + ".master_node.cluster_cp_name: is not used by kubespray"}},
		{"kubespray", "a worker CP the VNFD lacks", func(p map[string]any) { p["worker_node"].(map[string]any)["nic_cp_name"] = "workerNode_CPX" },
			[]string{root + `.worker_node.nic_cp_name: "workerNode_CPX" is not a connection point of flavour simple`}},
		{"kubespray", "the load balancer's script missing", func(p map[string]any) { p["external_lb_param"].(map[string]any)["script_path"] = "Scripts/nope.sh" },
			[]string{root + ".external_lb_param.script_path: Scripts/nope.sh is not in the VNF package"}},
		{"kubeadm-ha", "a master CP the VNFD lacks", func(p map[string]any) {
			m := p["master_node"].(map[string]any)
			m["ssh_cp_name"] = "masterNode_CPX"
			delete(m, "nic_cp_name") // nic_cp_name defaults to it
		}, []string{root + `.master_node.ssh_cp_name: "masterNode_CPX" is not a connection point`}},
		{"kubeadm-ha", "a node address CP the VNFD lacks", func(p map[string]any) { p["worker_node"].(map[string]any)["nic_cp_name"] = "workerNode_CPX" },
			[]string{root + `.worker_node.nic_cp_name: "workerNode_CPX" is not a connection point`}},
		{"kubeadm-ha", "an API CP the VNFD lacks", func(p map[string]any) { p["master_node"].(map[string]any)["cluster_cp_name"] = "vip_CPX" },
			[]string{root + `.master_node.cluster_cp_name: "vip_CPX" is not a connection point`}},
		{"kubeadm-ha", "a script not in the package", func(p map[string]any) { p["script_path"] = "Scripts/nope.sh" },
			[]string{root + ".script_path: Scripts/nope.sh is not in the VNF package"}},
		{"kubeadm-ha", "a script that is not the VNFM's", func(p map[string]any) { p["script_path"] = "TOSCA-Metadata/TOSCA.meta" },
			[]string{root + ".script_path: TOSCA-Metadata/TOSCA.meta is not the mini-VNFM install script"}},
		{"kubeadm-ha", "a CIDR with host bits", func(p map[string]any) { p["master_node"].(map[string]any)["pod_cidr"] = "192.168.3.0/16" },
			[]string{root + `.master_node.pod_cidr: "192.168.3.0/16" has host bits set: give the network address 192.168.0.0/16`}},
	} {
		t.Run(tc.sample+"/"+tc.name, func(t *testing.T) {
			vnfdID := vnfdOf(tc.sample)
			_, doc := e.post("/vnflcm/v1/vnf_instances", map[string]any{"vnfdId": vnfdID}, http.StatusCreated)
			inst, _ := doc["id"].(string)
			body, err := samples.InstantiateRequest(tc.sample, cloud)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(body["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any))
			b, _ := json.Marshal(body)
			code, _, res := e.do("POST", "/vnflcm/v1/vnf_instances/"+inst+"/instantiate", "application/json", b)
			raw, _ := res["_raw"].(string)
			if code != http.StatusUnprocessableEntity {
				t.Fatalf("instantiate: %d %s, want 422", code, raw)
			}
			var pd struct{ Detail string }
			_ = json.Unmarshal([]byte(raw), &pd)
			for _, w := range tc.want {
				if !strings.Contains(pd.Detail, w) {
					t.Errorf("the problem detail %q\n does not say %q", pd.Detail, w)
				}
			}
			if ops := e.opsOf(inst); ops != "[]" {
				t.Errorf("the refused request left op occurrences: %s", ops)
			}
		})
	}
	if s := e.servers(); len(s) != 0 {
		t.Errorf("refused requests created servers: %v", s)
	}
}
