package k8sstandin

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kubeadm init --config: the file stands for the flags (what the install
// script writes for etcd's extra SANs), and other flags next to it are
// refused as kubeadm does.
func TestInitConfigFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "kubeadm-init.yaml")
	cfg := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: "10.0.0.11"
  bindPort: 6443
nodeRegistration:
  name: "master-a"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
controlPlaneEndpoint: "10.0.0.80:16443"
networking:
  podSubnet: "10.244.0.0/16"
  serviceSubnet: "10.96.0.0/12"
etcd:
  local:
    serverCertSANs:
    - "10.0.0.80"
    - "etcd.example"
apiServer:
  certSANs: ["api.example"]
`
	if err := os.WriteFile(f, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := parseFlags([]string{"--config", f, "--upload-certs"}, spec([]string{"config", "node-name", "pod-network-cidr"}, []string{"upload-certs"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := applyInitConfig(p, f); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{"apiserver-advertise-address": "10.0.0.11", "apiserver-bind-port": "6443", "node-name": "master-a",
		"control-plane-endpoint": "10.0.0.80:16443", "pod-network-cidr": "10.244.0.0/16", "service-cidr": "10.96.0.0/12"} {
		if got := p.get(flag); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	if got := p.all("etcd-server-cert-sans"); !slices.Equal(got, []string{"10.0.0.80", "etcd.example"}) {
		t.Errorf("etcd SANs %v", got)
	}
	if got := p.all("apiserver-cert-extra-sans"); !slices.Equal(got, []string{"api.example"}) {
		t.Errorf("API server SANs %v", got)
	}
	ips, dns := sansOf([]string{"10.0.0.80", "etcd.example", ""})
	if len(ips) != 1 || ips[0].String() != "10.0.0.80" || !slices.Equal(dns, []string{"etcd.example"}) {
		t.Errorf("sansOf: %v %v", ips, dns)
	}

	mixed, _ := parseFlags([]string{"--config", f, "--node-name", "x"}, spec([]string{"config", "node-name"}, nil, nil))
	if err := applyInitConfig(mixed, f); err == nil || !strings.Contains(err.Error(), "can not mix '--config' with arguments [node-name]") {
		t.Errorf("mixed flags: %v", err)
	}
	for name, body := range map[string]string{
		"version": "apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n",
		"kind":    "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n",
		"yaml":    "apiVersion: [\n",
	} {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		_ = os.WriteFile(bad, []byte(body), 0o600)
		p, _ := parseFlags([]string{"--config", bad}, spec([]string{"config"}, nil, nil))
		if err := applyInitConfig(p, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
