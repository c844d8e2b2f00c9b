package lccn

import (
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// maskedChanges returns what a result notification shows of rc with every
// secret masked, as GET /vnf_lcm_op_occs/{id} shows it: the free-form parts
// (a VNFC's metadata, the affected virtual links and storages) are maps a
// driver fills, so a secret key anywhere in them is masked. They go through
// JSON first, so that maps and slices of any Go type inside are reached.
func maskedChanges(rc *model.ResourceChanges) (vnfcs []model.AffectedVnfc, links, storages []map[string]any) {
	if len(rc.AffectedVnfcs) > 0 {
		vnfcs = make([]model.AffectedVnfc, len(rc.AffectedVnfcs))
		for i, c := range rc.AffectedVnfcs {
			if c.Metadata != nil {
				c.Metadata = maskedMap(c.Metadata)
			}
			vnfcs[i] = c
		}
	}
	return vnfcs, maskedMaps(rc.AffectedVirtualLinks), maskedMaps(rc.AffectedVirtualStorages)
}

func maskedMaps(ms []map[string]any) []map[string]any {
	if len(ms) == 0 {
		return nil
	}
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		out[i] = maskedMap(m)
	}
	return out
}

// maskedMap is m as JSON would decode it (secrets.Generic), secrets
// masked. A value JSON cannot encode (never in what a driver reports) is
// masked whole.
func maskedMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	doc, err := secrets.Generic(m)
	if err != nil {
		return map[string]any{"masked": secrets.Mask}
	}
	out, _ := secrets.MaskDoc(doc).(map[string]any)
	return out
}
