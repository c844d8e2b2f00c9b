package kubeadm

import (
	"context"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// testInfra is the infra driver as the driver's tests need one: it describes
// the VNFCs the tests build (vnfcOf) from their metadata, and answers
// CheckVIP with refuse[port connection point] (nil: allowed), recording
// the questions.
type testInfra struct {
	refuse map[string]error
	asked  []driverapi.VIPCheck
}

func (f *testInfra) ComputeResources(info *model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	rs := driverapi.BaseComputeResources(info)
	for i, v := range info.VnfcResourceInfo {
		rs[i].Group, _ = v.Metadata["scaleGroup"].(string)
		rs[i].Name, _ = v.Metadata["serverName"].(string)
		if s, _ := v.Metadata["creationTime"].(string); s != "" {
			rs[i].Created, _ = time.Parse(time.RFC3339, s)
		}
		fps, _ := v.Metadata["sshHostKeyFingerprints"].([]any)
		for _, fp := range fps {
			if s, ok := fp.(string); ok {
				rs[i].HostKeyFingerprints = append(rs[i].HostKeyFingerprints, s)
			}
		}
		for j, cp := range v.VnfcCpInfo {
			rs[i].CPs[j].FloatingAddress, _ = cp.Metadata["floatingIpAddress"].(string)
		}
	}
	return rs
}

func (f *testInfra) CheckVIP(_ context.Context, c driverapi.VIPCheck) error {
	f.asked = append(f.asked, c)
	return f.refuse[c.PortCpd]
}

// classify finds the topology of an instantiatedVnfInfo as the driver does.
func classify(info *model.InstantiatedVnfInfo, fl *model.Flavour, p *Params) (*Topology, error) {
	return Classify((&testInfra{}).ComputeResources(info), info.ExtCpInfo, fl, p)
}
