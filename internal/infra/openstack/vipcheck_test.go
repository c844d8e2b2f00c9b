package openstack

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// mapPackage serves files from memory.
type mapPackage map[string]string

func (p mapPackage) ReadFile(_ context.Context, path string) ([]byte, error) {
	b, ok := p[path]
	if !ok {
		return nil, os.ErrNotExist
	}
	return []byte(b), nil
}

func (p mapPackage) Files(context.Context) ([]string, error) {
	var out []string
	for k := range p {
		out = append(out, k)
	}
	return out, nil
}

// hotCheck asks CheckVIP about the masters' (or LBs') ports with templates
// top and nested (files keyed as the top template names them).
func hotCheck(t *testing.T, top string, nested map[string]string, port, vip string) error {
	t.Helper()
	pkg := mapPackage{"BaseHOT/ha/top.hot.yaml": top}
	hot := &model.HOT{Top: "BaseHOT/ha/top.hot.yaml", Files: map[string]string{}}
	for k, v := range nested {
		pkg["BaseHOT/ha/nested/"+k] = v
		hot.Files[k] = "BaseHOT/ha/nested/" + k
	}
	fl := &model.Flavour{ID: "ha", HOT: hot}
	return New(Options{}).CheckVIP(context.Background(), driverapi.VIPCheck{Package: pkg, Flavour: fl, PortCpd: port, VipCpd: "vip_CP", VIP: vip})
}

const haTop = `heat_template_version: 2018-08-31
resources:
  vip_CP:
    type: OS::Neutron::Port
    properties:
      network: net0
  master_instance:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 3
      resource:
        type: masterNode.yaml
        properties:
          vip_port_ip: { get_attr: [ vip_CP, fixed_ips, 0, ip_address ] }
          other: foo
`

const haNested = `heat_template_version: 2018-08-31
parameters:
  vip_port_ip: {type: string}
  other: {type: string}
resources:
  masterNode_CP1:
    type: OS::Neutron::Port
    properties:
      network: net0
      allowed_address_pairs:
        - ip_address: { get_param: PARAM }
`

const lbTop = haTop + `  lb_instance:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def:
        type: lbNode.yaml
        properties:
          vip_port_ip: { get_attr: [ vip_CP, fixed_ips, 0, ip_address ] }
`

const lbNested = `heat_template_version: 2018-08-31
parameters:
  vip_port_ip: {type: string}
resources:
  lbNode_CP1:
    type: OS::Neutron::Port
    properties:
      network: net0
      allowed_address_pairs:
        - ip_address: { get_param: vip_port_ip }
`

// The masters' port must allow the VIP: traced from the nested template's
// parameter to the group that sets it to the VIP port's address.
func TestCheckVIP(t *testing.T) {
	ok := map[string]string{"masterNode.yaml": strings.Replace(haNested, "PARAM", "vip_port_ip", 1)}
	if err := hotCheck(t, haTop, ok, "masterNode_CP1", "10.0.0.80"); err != nil {
		t.Errorf("the sample's layout: %v", err)
	}
	wrongParam := map[string]string{"masterNode.yaml": strings.Replace(haNested, "PARAM", "other", 1)}
	noPairs := map[string]string{"masterNode.yaml": strings.Replace(haNested, "      allowed_address_pairs:\n        - ip_address: { get_param: PARAM }\n", "", 1)}
	for name, files := range map[string]map[string]string{"parameter set to something else": wrongParam, "no pairs": noPairs} {
		err := hotCheck(t, haTop, files, "masterNode_CP1", "10.0.0.80")
		if err == nil || !strings.Contains(err.Error(), "port masterNode_CP1 in masterNode.yaml does not allow the VIP") || !strings.Contains(err.Error(), "get_attr: [vip_CP, fixed_ips, 0, ip_address]") {
			t.Errorf("%s: %v", name, err)
		}
	}
	literal := map[string]string{"masterNode.yaml": strings.Replace(haNested, "{ get_param: PARAM }", "10.0.0.0/24", 1)}
	if err := hotCheck(t, haTop, literal, "masterNode_CP1", "10.0.0.80"); err != nil {
		t.Errorf("a CIDR holding the VIP: %v", err)
	}
	if err := hotCheck(t, haTop, literal, "masterNode_CP1", "10.9.0.80"); err == nil {
		t.Error("a CIDR not holding the VIP was accepted")
	}
	noVipPort := strings.Replace(haTop, "vip_CP:\n    type: OS::Neutron::Port", "vip_CP:\n    type: OS::Heat::None", 1)
	if err := hotCheck(t, noVipPort, ok, "masterNode_CP1", ""); err == nil || !strings.Contains(err.Error(), "the VIP's connection point vip_CP is not an OS::Neutron::Port") {
		t.Errorf("VIP not a port: %v", err)
	}
	// Dedicated load balancers: their port allows the VIP, a template
	// without the pairs is refused.
	lbFiles := map[string]string{"masterNode.yaml": ok["masterNode.yaml"], "lbNode.yaml": lbNested}
	if err := hotCheck(t, lbTop, lbFiles, "lbNode_CP1", ""); err != nil {
		t.Errorf("LB ports: %v", err)
	}
	lbFiles["lbNode.yaml"] = strings.Replace(lbNested, "      allowed_address_pairs:\n        - ip_address: { get_param: vip_port_ip }\n", "", 1)
	if err := hotCheck(t, lbTop, lbFiles, "lbNode_CP1", ""); err == nil || !strings.Contains(err.Error(), "port lbNode_CP1 in lbNode.yaml does not allow the VIP") {
		t.Errorf("LB ports without pairs: %v", err)
	}
	// Ports not in the templates (made elsewhere) are not checked.
	if err := hotCheck(t, haTop, ok, "other_CP", "10.0.0.80"); err != nil {
		t.Errorf("a port not in the templates: %v", err)
	}
}

// The sample package's HOT passes the check.
func TestSampleHOTAllowsVIP(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile("../../../samples/kubeadm-ha/" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := hotCheck(t, read("BaseHOT/ha/kubeadm_ha_top.hot.yaml"), map[string]string{
		"masterNode.yaml": read("BaseHOT/ha/nested/masterNode.yaml"), "workerNode.yaml": read("BaseHOT/ha/nested/workerNode.yaml")},
		"masterNode_CP1", "10.77.61.80"); err != nil {
		t.Error(err)
	}
}

// ComputeResources publishes what discovery put in the VNFCs' metadata.
func TestComputeResources(t *testing.T) {
	info := &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{{ID: "workerNode-a", VduID: "workerNode",
		ComputeResource: model.ResourceHandle{ResourceID: "srv-1", VimLevelResourceType: "OS::Nova::Server"},
		Metadata: map[string]any{MetaScaleGroup: "worker_instance", MetaServerName: "vnf-worker-a", MetaCreationTime: "2026-03-01T12:00:01Z",
			MetaFingerprints: []any{"SHA256:abc"}},
		VnfcCpInfo: []model.VnfcCpInfo{{CpdID: "workerNode_CP1", Metadata: map[string]any{MetaFloatingIP: "172.24.4.9"},
			CpProtocolInfo: []map[string]any{{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": map[string]any{
				"ipAddresses": []any{map[string]any{"type": "IPV4", "addresses": []any{"10.0.0.9"}}}}}}}}}}}
	rs := New(Options{}).ComputeResources(info)
	if len(rs) != 1 {
		t.Fatalf("%d resources", len(rs))
	}
	r := rs[0]
	cp := r.CP("workerNode_CP1")
	if r.VnfcID != "workerNode-a" || r.ResourceID != "srv-1" || r.ResourceType != "OS::Nova::Server" || r.Group != "worker_instance" ||
		r.Name != "vnf-worker-a" || r.Created.IsZero() || len(r.HostKeyFingerprints) != 1 || cp == nil || cp.Address() != "10.0.0.9" || cp.FloatingAddress != "172.24.4.9" {
		t.Errorf("resource %+v", r)
	}
}

// CheckRequest refuses what cannot work before anything changes: a flavour
// without a template, an aspect the template cannot scale, victims named
// for a scale-out.
func TestCheckRequest(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	fl := testFlavour()
	in := &model.VnfInstance{ID: "i", InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple",
		ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 0}}}}
	one := 1
	if err := d.CheckRequest(ctx, &driverapi.Accept{Flavour: fl, Instance: in, Package: dirPackage{"testdata"},
		Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance", NumberOfSteps: &one}}}); err != nil {
		t.Errorf("scale out: %v", err)
	}
	if err := d.CheckRequest(ctx, &driverapi.Accept{Flavour: fl, Instance: in, Package: dirPackage{"testdata"},
		Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance", NumberOfSteps: &one,
			AdditionalParams: map[string]any{"vnfcInstanceIds": []any{"x"}}}}}); err == nil || !strings.Contains(err.Error(), "a SCALE_OUT takes none") {
		t.Errorf("victims for a scale out: %v", err)
	}
	noCap := testFlavour()
	noCap.ScalingAspects["master_instance"] = &model.ScalingAspect{VduDeltas: map[string]map[string]int{"masterNode": {"d": 1}}}
	if err := d.CheckRequest(ctx, &driverapi.Accept{Flavour: noCap, Instance: in, Package: dirPackage{"testdata"},
		Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "master_instance", NumberOfSteps: &one}}}); err == nil || !strings.Contains(err.Error(), "cannot scale aspect master_instance") {
		t.Errorf("an aspect the template cannot scale: %v", err)
	}
	noHOT := testFlavour()
	noHOT.HOT = nil
	if err := d.CheckRequest(ctx, &driverapi.Accept{Flavour: noHOT, Instance: &model.VnfInstance{ID: "i"}, Package: dirPackage{"testdata"},
		Request: driverapi.Request{Instantiate: &model.InstantiateVnfRequest{FlavourID: "simple"}}}); err == nil || !strings.Contains(err.Error(), "has no Heat template") {
		t.Errorf("no template: %v", err)
	}
}
