package vnfpkg

import (
	"bytes"
	"errors"
	"os"
	"path"
	"slices"
	"testing"
)

// isError fails unless err is nil or an *Error.
func isError(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error of type %T: %v", err, err)
	}
	if e.Msg == "" {
		t.Fatalf("empty error message: %#v", e)
	}
	return true
}

func FuzzParseMeta(f *testing.F) {
	f.Add([]byte(baseTree()[metaPath]))
	f.Add([]byte("TOSCA-Meta-File-Version: 1.0\r\nEntry-Definitions: a.yaml\r\n\r\nName: a.yaml\r\nAlgorithm: sha256\r\nHash: " + sha256hex("x") + "\r\n"))
	f.Add([]byte("Entry-Definitions: a.yaml\n  continued\n\nSource: https://x/y.qcow2\n\nName: i.img\nContent-Type: image\n"))
	f.Add([]byte("metadata:\n  vnf_provider_id: P\n\nSource: a.yaml\nAlgorithm: SHA-512\nHash: 00\n\nnon_mano_artifact_sets:\n  x:\n    Source: y\n-----BEGIN CMS-----\nabc\n-----END CMS-----\n"))
	f.Add([]byte("\ufeff# comment\nEntry-Definitions: ../x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMeta(data)
		if !isError(t, err) {
			if m.EntryDefinitions == "" {
				t.Fatal("accepted without Entry-Definitions")
			}
			if _, why := cleanRef(m.EntryDefinitions); why != "" {
				t.Fatalf("accepted Entry-Definitions %q: %s", m.EntryDefinitions, why)
			}
			for _, a := range m.Artifacts {
				if a.Algorithm != "" && len(a.Hash) != hexLen(a.Algorithm) {
					t.Fatalf("accepted hash %q for %s", a.Hash, a.Algorithm)
				}
				if !a.External() && (a.Path == ".." || len(a.Path) > 2 && a.Path[:3] == "../") {
					t.Fatalf("accepted path %q", a.Path)
				}
			}
		}
		mf, err := parseManifest("x.mf", data)
		if !isError(t, err) {
			for _, a := range mf.Entries {
				if !a.External() && a.Algorithm == "" {
					t.Fatalf("manifest entry %q without hash", a.Source)
				}
			}
		}
	})
}

// fuzzTree is the test package with the flavour file replaced by the input,
// plus the samples' types files so their flavour files resolve.
func fuzzTree(f *testing.F) tree {
	tr := baseTree()
	for _, s := range []string{"kubeadm-single/Definitions/kubeadm_single_types.yaml", "kubeadm-ha/Definitions/kubeadm_ha_types.yaml", "kubespray/Definitions/kubespray_types.yaml"} {
		b, err := os.ReadFile("../../samples/" + s)
		if err != nil {
			f.Fatal(err)
		}
		tr["Definitions/"+path.Base(s)] = string(b)
	}
	return tr
}

func FuzzVnfd(f *testing.F) {
	tr := fuzzTree(f)
	f.Add([]byte(tr[fDF]))
	for _, s := range []string{"kubeadm-single/Definitions/kubeadm_single_df_simple.yaml", "kubeadm-ha/Definitions/kubeadm_ha_df_ha.yaml", "kubespray/Definitions/kubespray_df_simple.yaml"} {
		b, err := os.ReadFile("../../samples/" + s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(billionLaughs()))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("topology_template:\n  policies:\n    p: {type: tosca.policies.nfv.ScalingAspects}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := tr.clone()
		c[fDF] = string(data)
		b := zipTree(t, c) // TOSCA.meta without artifact blocks: nothing to verify
		p, err := open(bytes.NewReader(b), int64(len(b)), Options{})
		if isError(t, err) {
			return
		}
		v := p.Summary()
		if v.ID == "" || len(v.Flavours) == 0 {
			t.Fatalf("accepted a VNFD without id or flavours: %+v", v)
		}
		for _, fl := range v.Flavours {
			for h, d := range fl.Interfaces {
				if !slices.Contains(DefaultKnownDrivers, d) {
					t.Fatalf("hook %s bound to unknown driver %q", h, d)
				}
			}
			for id, vdu := range fl.VDUs {
				if vdu.InitialInstances < vdu.MinInstances || vdu.InitialInstances > vdu.MaxInstances {
					t.Fatalf("VDU %s accepted with %d instances outside %d..%d", id, vdu.InitialInstances, vdu.MinInstances, vdu.MaxInstances)
				}
			}
		}
	})
}

func FuzzOpen(f *testing.F) {
	f.Add(baseTree().csar(f))
	for _, n := range []string{"kubeadm-single", "kubeadm-ha", "kubespray"} {
		b, err := BuildCSAR(os.DirFS("../../samples/" + n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := open(bytes.NewReader(data), int64(len(data)), Options{MaxTotalSize: 8 << 20, MaxFileSize: 4 << 20})
		if isError(t, err) {
			return
		}
		for _, fl := range p.Files() {
			if msg := checkName(fl.Path); msg != "" {
				t.Fatalf("accepted %q: %s", fl.Path, msg)
			}
		}
	})
}
