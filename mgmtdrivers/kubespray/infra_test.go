package kubespray

import (
	"context"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// resources describes the tests' VNFCs as the infra driver would (their
// metadata: scaleGroup, sshHostKeyFingerprints, a CP's floatingIpAddress).
func resources(vs []model.VnfcResourceInfo) []driverapi.ComputeResource {
	rs := driverapi.BaseComputeResources(&model.InstantiatedVnfInfo{VnfcResourceInfo: vs})
	for i, v := range vs {
		rs[i].Group, _ = v.Metadata["scaleGroup"].(string)
		fps, _ := v.Metadata["sshHostKeyFingerprints"].([]any)
		for _, fp := range fps {
			if s, ok := fp.(string); ok {
				rs[i].HostKeyFingerprints = append(rs[i].HostKeyFingerprints, s)
			}
		}
		if ss, ok := v.Metadata["sshHostKeyFingerprints"].([]string); ok {
			rs[i].HostKeyFingerprints = ss
		}
		for j, cp := range v.VnfcCpInfo {
			rs[i].CPs[j].FloatingAddress, _ = cp.Metadata["floatingIpAddress"].(string)
		}
	}
	return rs
}

// testInfra is the infra driver of the tests' VNFCs.
type testInfra struct{}

func (testInfra) ComputeResources(info *model.InstantiatedVnfInfo) []driverapi.ComputeResource {
	return resources(info.VnfcResourceInfo)
}

func (testInfra) CheckVIP(context.Context, driverapi.VIPCheck) error { return nil }
