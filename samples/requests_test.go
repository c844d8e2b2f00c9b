package samples

import (
	"encoding/json"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/doctable"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kubeadm"
	"github.com/mini-vnfm/mini-vnfm/mgmtdrivers/kubespray"
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

// The complete requests in docs/drivers.md are what InstantiateRequest
// builds (so what make demo sends), and the drivers accept them.
func TestDocsRequests(t *testing.T) {
	sec, err := doctable.Section("../docs/drivers.md", "Complete requests")
	if err != nil {
		t.Fatal(err)
	}
	blocks := doctable.JSONBlocks(sec)
	if len(blocks) != len(Names) {
		t.Fatalf("%d example requests in docs/drivers.md, %d samples (%v): one each, in this order", len(blocks), len(Names), Names)
	}
	for i, name := range Names {
		var doc map[string]any
		if err := json.Unmarshal([]byte(blocks[i]), &doc); err != nil {
			t.Fatalf("docs/drivers.md request %d (%s): %v", i+1, name, err)
		}
		want, err := InstantiateRequest(name, DocCloud)
		if err != nil {
			t.Fatal(err)
		}
		wb, _ := json.Marshal(want)
		var w map[string]any
		_ = json.Unmarshal(wb, &w)
		if !reflect.DeepEqual(doc, w) {
			got, _ := json.MarshalIndent(doc, "", " ")
			exp, _ := json.MarshalIndent(w, "", " ")
			t.Errorf("docs/drivers.md request for %s differs from what make demo sends:\ndocs: %s\ndemo: %s", name, got, exp)
		}
		ap := doc["additionalParams"].(map[string]any)
		if Plans[name].NeedsAnsible {
			_, err = kubespray.ParseParams(ap)
		} else {
			_, err = kubeadm.ParseParams(ap)
		}
		if err != nil {
			t.Errorf("the driver refuses the documented %s request: %v", name, err)
		}
	}
}

// The README's table of `make demo PACKAGE=` values lists every sample.
func TestReadmeDemoTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names {
		if !strings.Contains(string(b), "| `"+name+"`") {
			t.Errorf("README's make demo table lacks %s", name)
		}
	}
}

// The sample CNF's requests name files its package has: the plain one and
// the one with the Service of type LoadBalancer (Kuryr clusters).
func TestCNFRequestFilesExist(t *testing.T) {
	tree, err := Tree(CNF)
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range []bool{false, true} {
		req := CNFRequest("vim-1", lb)
		files := req["additionalParams"].(map[string]any)["lcm-kubernetes-def-files"].([]any)
		if want := map[bool]int{false: 1, true: 2}[lb]; len(files) != want {
			t.Errorf("loadBalancer %v: files %v, want %d", lb, files, want)
		}
		for _, f := range files {
			b, err := fs.ReadFile(tree, f.(string))
			if err != nil {
				t.Errorf("loadBalancer %v: %v", lb, err)
			}
			if lb && f == CNFLoadBalancerFile && !strings.Contains(string(b), "type: LoadBalancer") {
				t.Errorf("%s has no Service of type LoadBalancer:\n%s", f, b)
			}
		}
		vci := req["vimConnectionInfo"].([]any)[0].(map[string]any)
		if vci["vimId"] != "vim-1" || vci["vimType"] != "kubernetes" {
			t.Errorf("vimConnectionInfo %v", vci)
		}
	}
}
