package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Metadata keys of vnfcResourceInfo[].metadata.
const (
	MetaStackID      = "stack_id"               // the stack holding the server (an AutoScalingGroup member's stack)
	MetaHeatResource = "heatResource"           // resource path from the top stack: <group>/<member>/<server>
	MetaCreationTime = "creationTime"           // creation time of the group member (or of the server resource)
	MetaServerName   = "serverName"             // Nova server name
	MetaScaleGroup   = "scaleGroup"             // the AutoScalingGroup resource (Tacker: the aspect id)
	MetaGroupMember  = "groupMember"            // the member resource name in the group
	MetaFingerprints = "sshHostKeyFingerprints" // SHA256:… fingerprints from the console log
	MetaHostKeys     = "sshHostKeys"            // host public keys from the console log
	MetaFloatingIP   = "floatingIpAddress"      // vnfcCpInfo[].metadata, extCpInfo[].metadata: the port's floating IP
)

// vnfcID is the stable id of a resource placed at path in the stack tree:
// the resource name, then the names of the resources between the top-level
// one and it (for an AutoScalingGroup member: the member's name), else the
// top-level resource's name. "workerNode-ab3xq6rfl2vc" is the workerNode
// server of member ab3xq6rfl2vc of the worker group: the id survives a heal
// of the VNFC (Heat replaces the server inside the member) and is unique
// in the VNF.
func vnfcID(path []string) string {
	switch len(path) {
	case 0:
		return ""
	case 1:
		return path[0]
	case 2:
		return path[1] + "-" + path[0]
	}
	return path[len(path)-1] + "-" + strings.Join(path[1:len(path)-1], "-")
}

// discovered is the VIM-side state of a VNF.
type discovered struct {
	tree     *tree
	vnfcs    []model.VnfcResourceInfo
	vls      []model.VirtualLinkResourceInfo
	storages []model.VirtualStorageResourceInfo
	extCps   []model.ExtCpInfo
	// linkPorts are the ports of external CPs.
	linkPorts []extPort
	// placed are the servers by VNFC id.
	placed map[string]*placed
}

// placed is a server resource placed in the VNF: its VNFC id and, for a
// group member, the member resource (in the group's stack).
type placed struct {
	id     string
	server *hres
	group  string
	member *hres
}

// placeServers finds the servers of the tree with their VNFC ids.
func placeServers(t *tree) map[string]*placed {
	topByName := map[string]*hres{}
	for _, h := range t.byStack[t.top.ID] {
		topByName[h.Name] = h
	}
	out := map[string]*placed{}
	for _, h := range t.all {
		if h.Type != typeServer || h.PhysicalID == "" {
			continue
		}
		p := &placed{id: vnfcID(h.path), server: h}
		if _, dup := out[p.id]; dup { // cannot happen with Heat's naming; keep ids unique anyway
			p.id += "-" + h.PhysicalID[:min(8, len(h.PhysicalID))]
		}
		if g := topByName[h.path[0]]; len(h.path) >= 3 && g != nil && (g.Type == typeASG || g.Type == typeResourceGrp) {
			p.group = g.Name
			for _, m := range t.byStack[g.PhysicalID] {
				if m.Name == h.path[1] {
					p.member = m
				}
			}
		}
		out[p.id] = p
	}
	return out
}

// discoverInput is what discovery needs from the operation.
type discoverInput struct {
	vim     string // vimConnectionId for resource handles
	flavour *model.Flavour
	prev    []model.VnfcResourceInfo   // the VNFCs the instance knows
	extVLs  []model.ExtVirtualLinkInfo // the external VLs (their networks make CPs external)
}

// extPort is the port of an external CP instance.
type extPort struct {
	cpd, network string
	port         model.ExtLinkPortInfo
}

type portInfo struct {
	res  *hres
	port *ports.Port
	fip  string
}

// discover reads the stack's resources and the servers and ports they made.
// prev are the VNFCs as the instance knows them (host keys of unchanged
// servers are taken from there instead of reading console logs again).
func (d *Driver) discover(ctx context.Context, c *clients, s stackRef, in discoverInput) (*discovered, error) {
	t, err := d.listTree(ctx, c, s)
	if err != nil {
		return nil, err
	}
	out := &discovered{tree: t, placed: placeServers(t)}
	// Neutron ports and floating IPs made by the stack.
	var portRes, fipRes []*hres
	for _, h := range t.all {
		if h.PhysicalID == "" {
			continue
		}
		switch h.Type {
		case typePort:
			portRes = append(portRes, h)
		case typeFloatingIP:
			fipRes = append(fipRes, h)
		}
	}
	var srvPl []*placed
	for _, id := range slices.Sorted(maps.Keys(out.placed)) {
		srvPl = append(srvPl, out.placed[id])
	}
	portsByID := map[string]*portInfo{}
	var mu sync.Mutex
	err = parallel(ctx, len(portRes), 8, func(i int) error {
		p, err := ports.Get(ctx, c.neutron, portRes[i].PhysicalID).Extract()
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("Neutron: port %s (%s): %w", portRes[i].PhysicalID, strings.Join(portRes[i].path, "/"), err)
		}
		mu.Lock()
		portsByID[p.ID] = &portInfo{res: portRes[i], port: p}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = parallel(ctx, len(fipRes), 8, func(i int) error {
		f, err := floatingips.Get(ctx, c.neutron, fipRes[i].PhysicalID).Extract()
		if err != nil {
			return nil // floating IPs are informational
		}
		mu.Lock()
		if pi := portsByID[f.PortID]; pi != nil {
			pi.fip = f.FloatingIP
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Nova servers (and console logs for servers not seen before).
	prevByID := map[string]model.VnfcResourceInfo{}
	for _, v := range in.prev {
		prevByID[v.ID] = v
	}
	type srv struct {
		server *servers.Server
		fps    []string
		keys   []string
	}
	srvs := make([]srv, len(srvPl))
	err = parallel(ctx, len(srvPl), 8, func(i int) error {
		h := srvPl[i].server
		sv, err := servers.Get(ctx, c.nova, h.PhysicalID).Extract()
		if isNotFound(err) {
			// Deleted behind Heat's back: still a VNFC of the stack (a heal
			// replaces it).
			srvs[i].server = &servers.Server{ID: h.PhysicalID, Status: "NOT_FOUND"}
			return nil
		}
		if err != nil {
			return fmt.Errorf("Nova: server %s (%s): %w", h.PhysicalID, strings.Join(h.path, "/"), err)
		}
		srvs[i].server = sv
		if p, ok := prevByID[srvPl[i].id]; ok && p.ComputeResource.ResourceID == sv.ID {
			if fps := strList(p.Metadata[MetaFingerprints]); len(fps) > 0 {
				srvs[i].fps, srvs[i].keys = fps, strList(p.Metadata[MetaHostKeys])
				return nil
			}
		}
		if out, err := servers.ShowConsoleOutput(ctx, c.nova, sv.ID, servers.ShowConsoleOutputOpts{}).Extract(); err == nil {
			srvs[i].fps, srvs[i].keys = consoleHostKeys(out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vim, fl := in.vim, in.flavour
	extNets := map[string]bool{}
	for _, l := range in.extVLs {
		extNets[l.ResourceHandle.ResourceID] = true
	}
	isExternal := func(cpd, network string) bool {
		if extNets[network] {
			return true
		}
		if fl != nil {
			if _, ok := fl.ExtCPs[cpd]; ok {
				return true
			}
			if _, ok := fl.VipCPs[cpd]; ok {
				return true
			}
		}
		return false
	}
	// Volumes and networks.
	volumesByStack := map[string][]string{}
	for _, h := range t.all {
		if h.PhysicalID == "" {
			continue
		}
		switch h.Type {
		case typeVolume:
			id := vnfcID(h.path)
			out.storages = append(out.storages, model.VirtualStorageResourceInfo{ID: id, VirtualStorageDescID: h.Name,
				StorageResource: model.ResourceHandle{VimConnectionID: vim, ResourceID: h.PhysicalID, VimLevelResourceType: typeVolume}})
			volumesByStack[h.stack.ID] = append(volumesByStack[h.stack.ID], id)
		case typeNet:
			out.vls = append(out.vls, model.VirtualLinkResourceInfo{ID: vnfcID(h.path), VnfVirtualLinkDescID: h.Name,
				NetworkResource: model.ResourceHandle{VimConnectionID: vim, ResourceID: h.PhysicalID, VimLevelResourceType: typeNet}})
		}
	}
	usedPorts := map[string]bool{}
	serversInStack := map[string]int{}
	for _, p := range srvPl {
		serversInStack[p.server.stack.ID]++
	}
	for i, p := range srvPl {
		sv, h, id := srvs[i].server, p.server, p.id
		v := model.VnfcResourceInfo{ID: id, VduID: vduOf(h, fl),
			ComputeResource:    model.ResourceHandle{VimConnectionID: vim, ResourceID: sv.ID, VimLevelResourceType: typeServer},
			StorageResourceIDs: volumesByStack[h.stack.ID],
			Metadata: map[string]any{MetaStackID: h.stack.ID, MetaHeatResource: strings.Join(h.path, "/"),
				MetaServerName: sv.Name, MetaCreationTime: heatTime(h.CreationTime)}}
		if p.group != "" {
			v.Metadata[MetaScaleGroup], v.Metadata[MetaGroupMember] = p.group, h.path[1]
			if p.member != nil {
				v.Metadata[MetaCreationTime] = heatTime(p.member.CreationTime)
			}
		}
		if len(srvs[i].fps) > 0 {
			v.Metadata[MetaFingerprints] = srvs[i].fps
		}
		if len(srvs[i].keys) > 0 {
			v.Metadata[MetaHostKeys] = srvs[i].keys
		}
		// The server's ports: Heat port resources of its stack attached to
		// it (or all of them when the stack has this one server).
		var mine []*portInfo
		for _, pr := range t.byStack[h.stack.ID] {
			pi := portsByID[pr.PhysicalID]
			if pr.Type != typePort || pi == nil {
				continue
			}
			if pi.port.DeviceID == sv.ID || (pi.port.DeviceID == "" && serversInStack[h.stack.ID] == 1) {
				mine = append(mine, pi)
			}
		}
		slices.SortFunc(mine, func(a, b *portInfo) int { return strings.Compare(a.res.Name, b.res.Name) })
		for _, pi := range mine {
			usedPorts[pi.port.ID] = true
			cpID := id + "-" + pi.res.Name
			cp := model.VnfcCpInfo{ID: cpID, CpdID: pi.res.Name, CpProtocolInfo: cpProtocolInfo(pi.port),
				Metadata: map[string]any{"portId": pi.port.ID, "networkId": pi.port.NetworkID}}
			if pi.fip != "" {
				cp.Metadata[MetaFloatingIP] = pi.fip
			}
			if isExternal(pi.res.Name, pi.port.NetworkID) {
				cp.VnfExtCpID = cpID
				out.addExtCp(vim, cpID, cpID, pi)
			}
			v.VnfcCpInfo = append(v.VnfcCpInfo, cp)
		}
		out.vnfcs = append(out.vnfcs, v)
	}
	// External CPs not on a server (e.g. a VIP port).
	for _, pr := range portRes {
		pi := portsByID[pr.PhysicalID]
		if pi == nil || usedPorts[pi.port.ID] || !isExternal(pr.Name, pi.port.NetworkID) {
			continue
		}
		out.addExtCp(vim, vnfcID(pr.path), "", pi)
	}
	slices.SortFunc(out.vnfcs, func(a, b model.VnfcResourceInfo) int {
		if a.VduID != b.VduID {
			return strings.Compare(a.VduID, b.VduID)
		}
		return compareAge(a, b)
	})
	slices.SortFunc(out.extCps, func(a, b model.ExtCpInfo) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(out.vls, func(a, b model.VirtualLinkResourceInfo) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(out.storages, func(a, b model.VirtualStorageResourceInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (out *discovered) addExtCp(vim, id, vnfcCp string, pi *portInfo) {
	e := model.ExtCpInfo{ID: id, CpdID: pi.res.Name, CpProtocolInfo: cpProtocolInfo(pi.port), AssociatedVnfcCpID: vnfcCp,
		ExtLinkPortID: pi.port.ID}
	if pi.fip != "" {
		e.Metadata = map[string]any{MetaFloatingIP: pi.fip}
	}
	out.extCps = append(out.extCps, e)
	out.linkPorts = append(out.linkPorts, extPort{cpd: pi.res.Name, network: pi.port.NetworkID, port: model.ExtLinkPortInfo{ID: pi.port.ID,
		ResourceHandle: model.ResourceHandle{VimConnectionID: vim, ResourceID: pi.port.ID, VimLevelResourceType: typePort},
		CpInstanceID:   id}})
}

// vduOf maps a server resource to its VDU: Tacker's convention names the
// OS::Nova::Server resource after the VDU; else the group's aspect, when
// it scales one VDU; else the resource name.
func vduOf(h *hres, fl *model.Flavour) string {
	if fl == nil || fl.VDUs[h.Name] != nil {
		return h.Name
	}
	if len(h.path) >= 3 {
		if a := fl.ScalingAspects[h.path[0]]; a != nil && len(a.VduDeltas) == 1 {
			for v := range a.VduDeltas {
				return v
			}
		}
	}
	return h.Name
}

// cpProtocolInfo renders a port's addresses as SOL003 CpProtocolInfo.
func cpProtocolInfo(p *ports.Port) []map[string]any {
	var addrs []any
	for _, ip := range p.FixedIPs {
		typ := "IPV4"
		if a, err := netip.ParseAddr(ip.IPAddress); err == nil && a.Is6() && !a.Is4In6() {
			typ = "IPV6"
		}
		e := map[string]any{"type": typ, "addresses": []any{ip.IPAddress}}
		if ip.SubnetID != "" {
			e["subnetId"] = ip.SubnetID
		}
		addrs = append(addrs, e)
	}
	ipoe := map[string]any{"ipAddresses": addrs}
	if p.MACAddress != "" {
		ipoe["macAddress"] = p.MACAddress
	}
	return []map[string]any{{"layerProtocol": "IP_OVER_ETHERNET", "ipOverEthernet": ipoe}}
}

func heatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// strList reads a []string stored in metadata (a []any after a JSON round trip).
func strList(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// consoleHostKeys extracts the SSH host key fingerprints and public keys
// cloud-init prints to the console (between the "-----BEGIN SSH HOST KEY
// FINGERPRINTS-----" / "-----BEGIN SSH HOST KEY KEYS-----" markers and
// their END lines).
func consoleHostKeys(console string) (fingerprints, keys []string) {
	state := 0
	for _, l := range strings.Split(console, "\n") {
		switch {
		case strings.Contains(l, "-----BEGIN SSH HOST KEY FINGERPRINTS-----"):
			state = 1
		case strings.Contains(l, "-----BEGIN SSH HOST KEY KEYS-----"):
			state = 2
		case strings.Contains(l, "-----END SSH HOST KEY"):
			state = 0
		case state == 1:
			for _, f := range strings.Fields(l) {
				if strings.HasPrefix(f, "SHA256:") || strings.HasPrefix(f, "MD5:") {
					fingerprints = append(fingerprints, f)
				}
			}
		case state == 2:
			if k := strings.TrimSpace(l); k != "" && (strings.HasPrefix(k, "ssh-") || strings.HasPrefix(k, "ecdsa-")) {
				keys = append(keys, k)
			}
		}
	}
	return fingerprints, keys
}

// parallel runs f(0..n-1) with at most limit at a time; the first error wins.
func parallel(ctx context.Context, n, limit int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return context.Cause(ctx)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}
