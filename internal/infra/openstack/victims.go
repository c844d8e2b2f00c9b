package openstack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/vim"
)

// Scratch keys the driver keeps in driverapi.Op.Scratch.
const (
	// ScratchStack holds the stack {stackName, stackId}.
	ScratchStack = "openstack.stack"
	// ScratchPreScale holds the VNFC ids before a scale, for its rollback.
	ScratchPreScale = "openstack.preScaleVnfcs"
)

// Additional parameters of a SCALE_IN request.
const (
	// ParamIsReverse (true / "True") removes the newest VNFCs first.
	ParamIsReverse = "is_reverse"
	// ParamVnfcInstanceIDs lists the VNFC ids to remove; it wins over the order.
	ParamVnfcInstanceIDs = "vnfcInstanceIds"
)

// ScaleInVictims implements driverapi.InfraDriver: the ids of the VNFCs a
// SCALE_IN removes, in removal order. The default order is Heat's: oldest
// group member first (creation time, then member name);
// additionalParams.is_reverse (true or "True") takes the newest first; an
// explicit additionalParams.vnfcInstanceIds list wins and must name exactly
// as many VNFCs of the aspect's VDUs as the scale removes. The engine asks
// once, before the first step, and keeps the answer in op.Victims: a
// management driver's scale_start, the infra step and any re-run after a
// crash all see the same victims.
func (d *Driver) ScaleInVictims(_ context.Context, op *driverapi.Op) ([]string, error) {
	req := op.Request.Scale
	if req == nil || req.Type != model.ScaleIn {
		return nil, nil
	}
	return chooseVictims(op.Instance, op.Flavour, req)
}

// chooseVictims picks the victims of req from the instance, whose
// scaleStatus is at the target level.
func chooseVictims(in *model.VnfInstance, fl *model.Flavour, req *model.ScaleVnfRequest) ([]string, error) {
	info := in.InstantiatedVnfInfo
	if info == nil || fl == nil {
		return nil, fmt.Errorf("VNF instance %s is not instantiated", in.ID)
	}
	aspect := fl.ScalingAspects[req.AspectID]
	if aspect == nil {
		return nil, fmt.Errorf("flavour %s has no scaling aspect %q", fl.ID, req.AspectID)
	}
	levels := levelsOf(info) // prepare() already set the target level
	vdus := slices.Sorted(maps.Keys(aspect.VduDeltas))
	need := map[string]int{}
	byVdu := map[string][]model.VnfcResourceInfo{}
	for _, v := range info.VnfcResourceInfo {
		byVdu[v.VduID] = append(byVdu[v.VduID], v)
	}
	total := 0
	for _, vdu := range vdus {
		if n := len(byVdu[vdu]) - fl.Instances(vdu, levels); n > 0 {
			need[vdu] = n
			total += n
		}
	}
	var chosen []model.VnfcResourceInfo
	if explicit, given, err := explicitVictims(req.AdditionalParams); err != nil {
		return nil, err
	} else if given {
		known := map[string]model.VnfcResourceInfo{}
		for _, v := range info.VnfcResourceInfo {
			known[v.ID] = v
		}
		count := map[string]int{}
		picked := map[string]bool{}
		for _, id := range explicit {
			v, ok := known[id]
			if !ok {
				return nil, fmt.Errorf("additionalParams.%s names %q, which is not a VNFC of this VNF instance", ParamVnfcInstanceIDs, id)
			}
			if !slices.Contains(vdus, v.VduID) {
				return nil, fmt.Errorf("additionalParams.%s names %s of VDU %s, which aspect %s does not scale (it scales %s)",
					ParamVnfcInstanceIDs, id, v.VduID, req.AspectID, strings.Join(vdus, ", "))
			}
			for _, w := range info.VnfcResourceInfo { // with the other VNFCs of its group member
				if (w.ID == id || sameMember(v, w)) && !picked[w.ID] {
					picked[w.ID] = true
					count[w.VduID]++
					chosen = append(chosen, w)
				}
			}
		}
		for _, vdu := range vdus {
			if count[vdu] != need[vdu] {
				return nil, fmt.Errorf("additionalParams.%s names %d VNFC(s) of VDU %s, but this scale-in removes %d", ParamVnfcInstanceIDs, count[vdu], vdu, need[vdu])
			}
		}
	} else {
		reverse := false
		if v, ok := req.AdditionalParams[ParamIsReverse]; ok {
			b, err := vim.Bool(v)
			if err != nil {
				return nil, fmt.Errorf("additionalParams.%s must be true or false, not %v", ParamIsReverse, v)
			}
			reverse = b
		}
		for _, vdu := range vdus {
			c := slices.Clone(byVdu[vdu])
			slices.SortStableFunc(c, compareAge)
			if reverse {
				slices.Reverse(c)
			}
			chosen = append(chosen, c[:need[vdu]]...)
		}
	}
	// A group member may hold several VNFCs: they go together.
	var ids []string
	added := map[string]bool{}
	for _, v := range chosen {
		for _, w := range info.VnfcResourceInfo {
			if w.ID == v.ID || (sameMember(v, w)) {
				if !added[w.ID] {
					added[w.ID] = true
					ids = append(ids, w.ID)
				}
			}
		}
	}
	return ids, nil
}

func sameMember(a, b model.VnfcResourceInfo) bool {
	sa, _ := a.Metadata[MetaStackID].(string)
	sb, _ := b.Metadata[MetaStackID].(string)
	ga, _ := a.Metadata[MetaGroupMember].(string)
	return sa != "" && sa == sb && ga != ""
}

func explicitVictims(ap map[string]any) ([]string, bool, error) {
	v, ok := ap[ParamVnfcInstanceIDs]
	if !ok || v == nil {
		return nil, false, nil
	}
	switch t := v.(type) {
	case string:
		var out []string
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, true, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, true, fmt.Errorf("additionalParams.%s must be a list of VNFC ids (strings)", ParamVnfcInstanceIDs)
			}
			out = append(out, s)
		}
		return out, true, nil
	case []string:
		return t, true, nil
	}
	return nil, true, fmt.Errorf("additionalParams.%s must be a list of VNFC ids", ParamVnfcInstanceIDs)
}

// compareAge orders VNFCs like Heat orders group members for removal:
// creation time, then member (resource) name, then id.
func compareAge(a, b model.VnfcResourceInfo) int {
	ta, tb := metaTime(a), metaTime(b)
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	if c := strings.Compare(memberName(a), memberName(b)); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

func metaTime(v model.VnfcResourceInfo) time.Time {
	s, _ := v.Metadata[MetaCreationTime].(string)
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

func memberName(v model.VnfcResourceInfo) string {
	if s, _ := v.Metadata[MetaGroupMember].(string); s != "" {
		return s
	}
	return v.ID
}
