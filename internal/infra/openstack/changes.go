package openstack

import (
	"slices"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Change types of resourceChanges.
const (
	changeAdded    = "ADDED"
	changeRemoved  = "REMOVED"
	changeModified = "MODIFIED"
)

// netChange combines a change recorded earlier in the same operation with a
// new one for the same resource: added then removed is no change at all
// (e.g. a rolled-back scale-out), added then modified stays added, modified
// then removed is removed, removed then added is modified.
func netChange(prev, next string) string {
	switch {
	case prev == changeAdded && next == changeRemoved:
		return ""
	case prev == changeAdded && next == changeModified:
		return changeAdded
	case prev == changeRemoved && next == changeAdded:
		return changeModified
	}
	return next
}

func recordVnfc(rc *model.ResourceChanges, a model.AffectedVnfc) {
	i := slices.IndexFunc(rc.AffectedVnfcs, func(e model.AffectedVnfc) bool { return e.ID == a.ID })
	if i < 0 {
		rc.AffectedVnfcs = append(rc.AffectedVnfcs, a)
		return
	}
	a.ChangeType = netChange(rc.AffectedVnfcs[i].ChangeType, a.ChangeType)
	if a.ChangeType == "" {
		rc.AffectedVnfcs = slices.Delete(rc.AffectedVnfcs, i, i+1)
		return
	}
	rc.AffectedVnfcs[i] = a
}

func recordMap(list *[]map[string]any, a map[string]any) {
	i := slices.IndexFunc(*list, func(e map[string]any) bool { return e["id"] == a["id"] })
	if i < 0 {
		*list = append(*list, a)
		return
	}
	prev, _ := (*list)[i]["changeType"].(string)
	next, _ := a["changeType"].(string)
	ct := netChange(prev, next)
	if ct == "" {
		*list = slices.Delete(*list, i, i+1)
		return
	}
	a["changeType"] = ct
	(*list)[i] = a
}

func cpIDs(v model.VnfcResourceInfo) []string {
	var out []string
	for _, c := range v.VnfcCpInfo {
		out = append(out, c.ID)
	}
	return out
}

func portsOf(v model.VnfcResourceInfo) []string {
	var out []string
	for _, c := range v.VnfcCpInfo {
		p, _ := c.Metadata["portId"].(string)
		out = append(out, c.CpdID+"="+p)
	}
	slices.Sort(out)
	return out
}

// recordChanges records in rc what changed between two views of the
// instance. Healed VNFCs count as MODIFIED even when their resource ids
// did not change.
func recordChanges(rc *model.ResourceChanges, old, cur *model.InstantiatedVnfInfo, healed map[string]bool) {
	oldV := map[string]model.VnfcResourceInfo{}
	for _, v := range old.VnfcResourceInfo {
		oldV[v.ID] = v
	}
	curV := map[string]bool{}
	for _, v := range cur.VnfcResourceInfo {
		curV[v.ID] = true
		o, existed := oldV[v.ID]
		a := model.AffectedVnfc{ID: v.ID, VduID: v.VduID, ComputeResource: v.ComputeResource}
		switch {
		case !existed:
			a.ChangeType, a.AffectedVnfcCpIDs, a.AddedStorageResourceIDs = changeAdded, cpIDs(v), v.StorageResourceIDs
		case healed[v.ID] || o.ComputeResource.ResourceID != v.ComputeResource.ResourceID || !slices.Equal(portsOf(o), portsOf(v)):
			a.ChangeType, a.AffectedVnfcCpIDs = changeModified, cpIDs(v)
		default:
			continue
		}
		recordVnfc(rc, a)
	}
	for _, o := range old.VnfcResourceInfo {
		if !curV[o.ID] {
			recordVnfc(rc, model.AffectedVnfc{ID: o.ID, VduID: o.VduID, ChangeType: changeRemoved,
				ComputeResource: o.ComputeResource, AffectedVnfcCpIDs: cpIDs(o), RemovedStorageResourceIDs: o.StorageResourceIDs})
		}
	}
	vl := func(v model.VirtualLinkResourceInfo, ct string) map[string]any {
		return map[string]any{"id": v.ID, "vnfVirtualLinkDescId": v.VnfVirtualLinkDescID, "virtualLinkDescId": v.VnfVirtualLinkDescID,
			"changeType": ct, "networkResource": v.NetworkResource}
	}
	oldL := map[string]model.VirtualLinkResourceInfo{}
	for _, v := range old.VirtualLinkResourceInfo {
		oldL[v.ID] = v
	}
	curL := map[string]bool{}
	for _, v := range cur.VirtualLinkResourceInfo {
		curL[v.ID] = true
		if o, ok := oldL[v.ID]; !ok {
			recordMap(&rc.AffectedVirtualLinks, vl(v, changeAdded))
		} else if o.NetworkResource.ResourceID != v.NetworkResource.ResourceID {
			recordMap(&rc.AffectedVirtualLinks, vl(v, changeModified))
		}
	}
	for _, o := range old.VirtualLinkResourceInfo {
		if !curL[o.ID] {
			recordMap(&rc.AffectedVirtualLinks, vl(o, changeRemoved))
		}
	}
	st := func(v model.VirtualStorageResourceInfo, ct string) map[string]any {
		return map[string]any{"id": v.ID, "virtualStorageDescId": v.VirtualStorageDescID, "changeType": ct, "storageResource": v.StorageResource}
	}
	oldS := map[string]model.VirtualStorageResourceInfo{}
	for _, v := range old.VirtualStorageResourceInfo {
		oldS[v.ID] = v
	}
	curS := map[string]bool{}
	for _, v := range cur.VirtualStorageResourceInfo {
		curS[v.ID] = true
		if o, ok := oldS[v.ID]; !ok {
			recordMap(&rc.AffectedVirtualStorages, st(v, changeAdded))
		} else if o.StorageResource.ResourceID != v.StorageResource.ResourceID {
			recordMap(&rc.AffectedVirtualStorages, st(v, changeModified))
		}
	}
	for _, o := range old.VirtualStorageResourceInfo {
		if !curS[o.ID] {
			recordMap(&rc.AffectedVirtualStorages, st(o, changeRemoved))
		}
	}
}
