package samples

import (
	"strings"
	"testing"
)

// Every sample make run onboards has a demo plan and a complete request.
func TestEverySampleHasARequest(t *testing.T) {
	c := Cloud{NetworkID: "net-1", NodePassword: "pw", VimName: "v", Ansible: &AnsibleServer{Address: "10.0.0.5", User: "ansible",
		Password: "apw", KubesprayRoot: "/opt/kubespray", Inventories: "/home/ansible/inventories"}}
	for _, name := range Names {
		plan, ok := Plans[name]
		if !ok || plan.Description == "" || plan.Flavour == "" || plan.ScaleAspect == "" {
			t.Errorf("sample %s has no complete plan: %+v", name, plan)
			continue
		}
		req, err := InstantiateRequest(name, c)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if req["flavourId"] != plan.Flavour {
			t.Errorf("%s: flavour %v", name, req["flavourId"])
		}
		ap := req["additionalParams"].(map[string]any)
		if ap["node_password"] != "pw" {
			t.Errorf("%s: node_password %v", name, ap["node_password"])
		}
	}
	if _, err := InstantiateRequest("nope", c); err == nil || !strings.Contains(err.Error(), "kubespray") {
		t.Errorf("unknown sample: %v", err)
	}
	c.Ansible = nil
	if _, err := InstantiateRequest("kubespray", c); err == nil {
		t.Error("kubespray without an Ansible server")
	}
}
