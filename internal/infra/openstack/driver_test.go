package openstack

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/ossim"
	"github.com/mini-vnfm/mini-vnfm/internal/osworld"
)

const (
	netID    = "5a1c8a0e-7d0b-4f43-9a51-0c8f3f2a0001"
	vipNetID = "5a1c8a0e-7d0b-4f43-9a51-0c8f3f2a0002"
)

// harness runs the driver against an in-process simulator the way the
// engine does: each step works on a copy of the persisted working state,
// which is replaced only when the step succeeds.
type harness struct {
	t   *testing.T
	sim *ossim.Sim
	srv *httptest.Server
	d   *Driver
	vim model.VimConnectionInfo
	// inst is the VNF instance as stored.
	inst *model.VnfInstance
}

func tickingClock() func() time.Time {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Second) }
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, ossim.Options{})
}

// newHarnessWith starts a simulator with opts plus the test networks.
func newHarnessWith(t *testing.T, opts ossim.Options) *harness {
	t.Helper()
	if opts.Latency == 0 {
		opts.Latency = 5 * time.Millisecond
	}
	if opts.Now == nil {
		opts.Now = tickingClock()
	}
	opts.Networks = []ossim.NetworkSpec{
		{Name: "net0", ID: netID, CIDR: "10.77.0.0/24", Shared: true},
		{Name: "vipnet", ID: vipNetID, CIDR: "10.77.9.0/24", Shared: true},
		{Name: "public", CIDR: "10.77.100.0/24", External: true, Shared: true},
	}
	// Behind real Keystone and Heat (TestRealHeatDriver), the simulator
	// serves a project of its own and only Nova, Neutron and Glance.
	auth, user, password, project := "", "admin", "secret", "admin"
	var tn osworld.Tenant
	if heatWorld != nil {
		tn = heatWorld.Tenant(t)
		opts = heatWorld.SimOptions(tn, opts)
		auth, user, password, project = heatWorld.AuthURL, tn.User, tn.Password, tn.Project
	}
	sim, err := ossim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		if err := sim.Close(); err != nil {
			t.Errorf("sim close: %v", err)
		}
	})
	// Real Heat answers a stack GET in a few hundred milliseconds of CPU:
	// poll it as a production VNFM would, not as fast as the simulator.
	timeout, pollMin, pollMax := 30*time.Second, 5*time.Millisecond, 50*time.Millisecond
	if heatWorld != nil {
		heatWorld.Serve(tn.ProjectID, sim)
		timeout, pollMin, pollMax = 10*time.Minute, 500*time.Millisecond, 2*time.Second
	} else {
		auth = srv.URL + "/v3"
	}
	h := &harness{t: t, sim: sim, srv: srv,
		d: New(Options{PollMin: pollMin, PollMax: pollMax, StackTimeout: timeout,
			Logger: slog.New(slog.DiscardHandler)}),
		vim: model.VimConnectionInfo{ID: "vim-1", VimID: "0d0e4a36-2a4c-4d7a-bf8b-2b7c0a3a0c01", VimType: VimType,
			InterfaceInfo: map[string]any{"endpoint": auth},
			AccessInfo: map[string]any{"username": user, "password": password, "userDomain": "Default",
				"project": project, "projectDomain": "Default", "region": "RegionOne"}},
		inst: &model.VnfInstance{ID: uuid.NewString(), VnfdID: "vnfd-1", InstantiationState: model.NotInstantiated}}
	return h
}

// run is one LCM operation in progress.
type run struct {
	h        *harness
	work     *driverapi.Op // as persisted after the last completed step
	journals map[string]*journal
}

func clone[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// start prepares an operation like lcm.prepare.
func (h *harness) start(operation string, req any) *run {
	t := h.t
	in := clone(t, h.inst)
	op := &driverapi.Op{ID: uuid.NewString(), Operation: operation, Instance: in, Vnfd: testVnfd(),
		Package: dirPackage{"testdata"}, Previous: map[string]json.RawMessage{}, Scratch: map[string]json.RawMessage{},
		ResourceChanges: &model.ResourceChanges{}, CancelRequested: func() bool { return false }}
	switch r := req.(type) {
	case *model.InstantiateVnfRequest:
		op.Request.Instantiate = r
		in.VimConnectionInfo = []model.VimConnectionInfo{h.vim}
		fl := op.Vnfd.Flavours[r.FlavourID]
		lvl := r.InstantiationLevelID
		if lvl == "" {
			lvl = fl.DefaultInstantiationLevel
		}
		in.InstantiatedVnfInfo = &model.InstantiatedVnfInfo{FlavourID: fl.ID, VnfState: "STARTED", AdditionalParams: r.AdditionalParams,
			ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: fl.InstantiationLevels[lvl].ScaleLevels["worker_instance"]}}}
	case *model.ScaleVnfRequest:
		op.Request.Scale = r
		info := in.InstantiatedVnfInfo
		op.Previous["scaleStatus"], _ = json.Marshal(info.ScaleStatus)
		delta := r.Steps()
		if r.Type == model.ScaleIn {
			delta = -delta
		}
		info.ScaleStatus[0].ScaleLevel += delta
	case *model.HealVnfRequest:
		op.Request.Heal = r
	case *model.TerminateVnfRequest:
		op.Request.Terminate = r
	case *model.ChangeExtVnfConnectivityRequest:
		op.Request.ChangeExtConn = r
	}
	if in.InstantiatedVnfInfo != nil {
		op.Flavour = op.Vnfd.Flavours[in.InstantiatedVnfInfo.FlavourID]
	}
	op.Vim = &in.VimConnectionInfo[0]
	return &run{h: h, work: op, journals: map[string]*journal{}}
}

// attempt runs one step on a copy of the working state; the state is
// kept only when the step succeeds.
func (r *run) attempt(ctx context.Context, step string, f func(context.Context, *driverapi.Op) error) (*driverapi.Op, error) {
	t := r.h.t
	w := r.work
	op := *w
	op.Instance = clone(t, w.Instance)
	op.Scratch = clone(t, w.Scratch)
	op.Previous = clone(t, w.Previous)
	op.ResourceChanges = clone(t, w.ResourceChanges)
	if op.Instance.InstantiatedVnfInfo != nil {
		op.Flavour = op.Vnfd.Flavours[op.Instance.InstantiatedVnfInfo.FlavourID]
	}
	op.Vim = &op.Instance.VimConnectionInfo[0]
	j := r.journals[step]
	if j == nil {
		j = &journal{}
		r.journals[step] = j
	}
	op.Progress = j.progress(step)
	err := f(ctx, &op)
	if err == nil {
		r.work = &op
	}
	return &op, err
}

func (r *run) step(step string, f func(context.Context, *driverapi.Op) error) *driverapi.Op {
	r.h.t.Helper()
	op, err := r.attempt(context.Background(), step, f)
	if err != nil {
		r.h.t.Fatalf("%s: %v", step, err)
	}
	return op
}

// finish stores the instance like the engine's finalize.
func (r *run) finish() *driverapi.Op {
	in := r.work.Instance
	switch r.work.Operation {
	case model.OpInstantiate:
		in.InstantiationState = model.Instantiated
	case model.OpTerminate:
		in.InstantiationState, in.InstantiatedVnfInfo = model.NotInstantiated, nil
	}
	r.h.inst = clone(r.h.t, in)
	return r.work
}

// rollback runs an undo after a failed step (the working state is the one
// before the step).
func (r *run) rollback(step string, f func(context.Context, *driverapi.Op) error) *driverapi.Op {
	r.h.t.Helper()
	op := r.step("rollback:"+step, f)
	r.h.inst = clone(r.h.t, op.Instance)
	if r.work.Operation == model.OpInstantiate {
		r.h.inst.InstantiationState, r.h.inst.InstantiatedVnfInfo = model.NotInstantiated, nil
	}
	return op
}

func instantiateRequest() *model.InstantiateVnfRequest {
	return &model.InstantiateVnfRequest{FlavourID: "simple",
		ExtVirtualLinks: []model.ExtVirtualLinkData{
			{ID: "ext-net0", ResourceID: netID, ExtCps: []model.VnfExtCpData{{CpdID: "masterNode_CP1"}, {CpdID: "workerNode_CP1"}}},
			{ID: "ext-vip", ResourceID: vipNetID, ExtCps: []model.VnfExtCpData{{CpdID: "vip_CP", CpConfig: []map[string]any{{
				"cpProtocolData": []any{map[string]any{"layerProtocol": "IP_OVER_ETHERNET",
					"ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "fixedAddresses": []any{"10.77.9.80"}}}}}}}}}}},
		},
		AdditionalParams: map[string]any{"node_password": "pw-9", "lcm-operation-user-data": "./UserData/x.py",
			"lcm-operation-user-data-class": "KubernetesClusterUserData"}}
}

func (h *harness) instantiate() *driverapi.Op {
	h.t.Helper()
	r := h.start(model.OpInstantiate, instantiateRequest())
	r.step("infra.instantiate", h.d.Instantiate)
	return r.finish()
}

func (h *harness) scale(typ string, steps int, ap map[string]any) (*driverapi.Op, []string) {
	h.t.Helper()
	r := h.start(model.OpScale, &model.ScaleVnfRequest{Type: typ, AspectID: "worker_instance", NumberOfSteps: &steps, AdditionalParams: ap})
	// The engine asks for the victims before the first step.
	victims, err := h.d.ScaleInVictims(context.Background(), r.work)
	if err != nil {
		h.t.Fatal(err)
	}
	r.work.Victims = victims
	r.step("infra.scale", h.d.Scale)
	return r.finish(), victims
}

func (h *harness) clients() *clients {
	h.t.Helper()
	a, err := accessOf(&h.vim)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.d.clientsFor(context.Background(), a)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// stacksNamed lists the live stacks with that name.
func (h *harness) stacksNamed(name string) []stacks.ListedStack {
	h.t.Helper()
	pages, err := stacks.List(h.clients().heat, stacks.ListOpts{Name: name}).AllPages(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	all, err := stacks.ExtractStacks(pages)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []stacks.ListedStack
	for _, s := range all {
		if s.Name == name && s.Status != "DELETE_COMPLETE" {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) simServers() map[string]ossim.ServerInfo {
	out := map[string]ossim.ServerInfo{}
	for _, s := range h.sim.Servers() {
		out[s.ID] = s
	}
	return out
}

func workers(info *model.InstantiatedVnfInfo) []model.VnfcResourceInfo {
	var out []model.VnfcResourceInfo
	for _, v := range info.VnfcResourceInfo {
		if v.VduID == "workerNode" {
			out = append(out, v)
		}
	}
	return out
}

func addrOf(t *testing.T, v model.VnfcResourceInfo) string {
	t.Helper()
	if len(v.VnfcCpInfo) != 1 {
		t.Fatalf("VNFC %s has CPs %+v", v.ID, v.VnfcCpInfo)
	}
	ipoe, _ := v.VnfcCpInfo[0].CpProtocolInfo[0]["ipOverEthernet"].(map[string]any)
	addrs, _ := ipoe["ipAddresses"].([]any)
	if len(addrs) != 1 {
		t.Fatalf("VNFC %s addresses %v", v.ID, ipoe)
	}
	a, _ := addrs[0].(map[string]any)["addresses"].([]any)
	s, _ := a[0].(string)
	return s
}

func changes(op *driverapi.Op) map[string]string {
	out := map[string]string{}
	for _, a := range op.ResourceChanges.AffectedVnfcs {
		out[a.ID] = a.ChangeType
	}
	return out
}

func TestInstantiateFillsVnfInfo(t *testing.T) {
	h := newHarness(t)
	op := h.instantiate()
	info := clone(t, op.Instance.InstantiatedVnfInfo)

	sts := h.stacksNamed(StackName(h.inst.ID))
	if len(sts) != 1 || sts[0].Status != "CREATE_COMPLETE" {
		t.Fatalf("stacks %+v", sts)
	}
	var ref stackRef
	if err := json.Unmarshal(op.Scratch[ScratchStack], &ref); err != nil || ref.ID != sts[0].ID {
		t.Errorf("scratch stack %s, want id %s", op.Scratch[ScratchStack], sts[0].ID)
	}
	// Parameters as built natively.
	st, err := stacks.Get(context.Background(), h.clients().heat, ref.Name, ref.ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if st.Parameters["worker_instance_desired_capacity"] != "2" {
		t.Errorf("worker_instance_desired_capacity = %q", st.Parameters["worker_instance_desired_capacity"])
	}
	nfv := nfvFromStack(st.Parameters)
	if jsonOf(t, nfv["CP"]) != `{"masterNode_CP1":{"network":"`+netID+`"},"vip_CP":{"fixed_ips":[{"ip_address":"10.77.9.80"}],"network":"`+vipNetID+`"},"workerNode_CP1":{"network":"`+netID+`"}}` {
		t.Errorf("nfv.CP %s", jsonOf(t, nfv["CP"]))
	}
	if _, ok := st.Parameters["lcm-operation-user-data"]; ok {
		t.Error("lcm-operation-user-data passed to Heat")
	}

	servers := h.simServers()
	if len(info.VnfcResourceInfo) != 3 || len(servers) != 3 {
		t.Fatalf("%d VNFCs, %d servers", len(info.VnfcResourceInfo), len(servers))
	}
	vdus := map[string]int{}
	for _, v := range info.VnfcResourceInfo {
		vdus[v.VduID]++
		sv, ok := servers[v.ComputeResource.ResourceID]
		if !ok {
			t.Errorf("VNFC %s: server %s is not in the VIM", v.ID, v.ComputeResource.ResourceID)
			continue
		}
		if v.ComputeResource.VimConnectionID != "vim-1" || v.ComputeResource.VimLevelResourceType != "OS::Nova::Server" {
			t.Errorf("VNFC %s compute resource %+v", v.ID, v.ComputeResource)
		}
		member, _ := v.Metadata[MetaGroupMember].(string)
		if v.ID != v.VduID+"-"+member || member == "" {
			t.Errorf("VNFC id %s (member %q)", v.ID, member)
		}
		if addr := addrOf(t, v); !slices.Contains(sv.Addresses, addr) || !strings.HasPrefix(addr, "10.77.0.") {
			t.Errorf("VNFC %s address %s, server has %v", v.ID, addr, sv.Addresses)
		}
		cp := v.VnfcCpInfo[0]
		if cp.CpdID != v.VduID+"_CP1" || cp.VnfExtCpID != cp.ID {
			t.Errorf("VNFC %s cp %+v", v.ID, cp)
		}
		fps, want := slices.Sorted(slices.Values(strList(v.Metadata[MetaFingerprints]))), slices.Sorted(slices.Values(sv.HostKeyFingerprints))
		if len(fps) == 0 || !slices.Equal(fps, want) {
			t.Errorf("VNFC %s fingerprints %v, console has %v", v.ID, fps, sv.HostKeyFingerprints)
		}
		if v.Metadata[MetaServerName] != sv.Name || v.Metadata[MetaCreationTime] == "" || v.Metadata[MetaStackID] == "" || v.Metadata[MetaStackID] == ref.ID {
			t.Errorf("VNFC %s metadata %v", v.ID, v.Metadata)
		}
	}
	if vdus["masterNode"] != 1 || vdus["workerNode"] != 2 {
		t.Errorf("VDUs %v", vdus)
	}
	// The stack_id is the member stack holding the server.
	tr, err := h.d.listTree(context.Background(), h.clients(), ref)
	if err != nil {
		t.Fatal(err)
	}
	for id, p := range placeServers(tr) {
		i := slices.IndexFunc(info.VnfcResourceInfo, func(v model.VnfcResourceInfo) bool { return v.ID == id })
		if i < 0 || info.VnfcResourceInfo[i].Metadata[MetaStackID] != p.server.stack.ID || p.member == nil || p.member.PhysicalID != p.server.stack.ID {
			t.Errorf("server %s of the stack is not VNFC %s with its member stack", p.server.PhysicalID, id)
		}
	}
	// External CPs: one per VNFC port plus the VIP port.
	if len(info.ExtCpInfo) != 4 {
		t.Errorf("extCpInfo %+v", info.ExtCpInfo)
	}
	var vip *model.ExtCpInfo
	for i := range info.ExtCpInfo {
		if info.ExtCpInfo[i].CpdID == "vip_CP" {
			vip = &info.ExtCpInfo[i]
		}
	}
	if vip == nil || vip.AssociatedVnfcCpID != "" || !strings.Contains(jsonOf(t, vip.CpProtocolInfo), `"10.77.9.80"`) {
		t.Errorf("vip ext CP %+v", vip)
	}
	if len(info.ExtVirtualLinkInfo) != 2 || len(info.ExtVirtualLinkInfo[0].ExtLinkPorts) != 3 || len(info.ExtVirtualLinkInfo[1].ExtLinkPorts) != 1 {
		t.Errorf("extVirtualLinkInfo %s", jsonOf(t, info.ExtVirtualLinkInfo))
	}
	for _, l := range info.ExtVirtualLinkInfo {
		for _, p := range l.ExtLinkPorts {
			if !slices.ContainsFunc(info.ExtCpInfo, func(e model.ExtCpInfo) bool { return e.ID == p.CpInstanceID && e.ExtLinkPortID == p.ID }) {
				t.Errorf("link port %+v has no ext CP", p)
			}
		}
	}
	ch := changes(op)
	if len(ch) != 3 {
		t.Errorf("changes %v", ch)
	}
	for _, a := range op.ResourceChanges.AffectedVnfcs {
		if a.ChangeType != "ADDED" || a.ComputeResource.VimConnectionID != "vim-1" || len(a.AffectedVnfcCpIDs) != 1 {
			t.Errorf("affected %+v", a)
		}
	}

	// Instantiate again (a retry of a completed step): no second stack,
	// the same VNFCs, no new changes.
	r := h.start(model.OpInstantiate, instantiateRequest())
	r.work.Instance.InstantiatedVnfInfo = clone(t, info)
	again := r.step("infra.instantiate", h.d.Instantiate)
	if n := len(h.stacksNamed(StackName(h.inst.ID))); n != 1 {
		t.Errorf("%d stacks after a retry", n)
	}
	if !slices.Equal(vnfcIDs(again.Instance.InstantiatedVnfInfo.VnfcResourceInfo), vnfcIDs(info.VnfcResourceInfo)) || len(again.ResourceChanges.AffectedVnfcs) != 0 {
		t.Errorf("retry changed VNFCs: %v, changes %v", vnfcIDs(again.Instance.InstantiatedVnfInfo.VnfcResourceInfo), changes(again))
	}
}

func TestScaleOutAndIn(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	before := workers(h.inst.InstantiatedVnfInfo)

	op, victims := h.scale(model.ScaleOut, 3, nil)
	if victims != nil {
		t.Errorf("scale out victims %v", victims)
	}
	ws := workers(op.Instance.InstantiatedVnfInfo)
	if len(ws) != 5 || len(h.simServers()) != 6 {
		t.Fatalf("%d workers, %d servers after scale out", len(ws), len(h.simServers()))
	}
	ch := changes(op)
	for _, w := range ws {
		old := slices.ContainsFunc(before, func(b model.VnfcResourceInfo) bool { return b.ID == w.ID })
		if old != (ch[w.ID] == "") || (!old && ch[w.ID] != "ADDED") {
			t.Errorf("worker %s (existed %v) change %q", w.ID, old, ch[w.ID])
		}
	}
	if len(ch) != 3 || op.Instance.InstantiatedVnfInfo.ScaleStatus[0].ScaleLevel != 3 {
		t.Errorf("changes %v, scaleStatus %v", ch, op.Instance.InstantiatedVnfInfo.ScaleStatus)
	}

	ordered := func() []model.VnfcResourceInfo {
		ws := workers(h.inst.InstantiatedVnfInfo)
		slices.SortFunc(ws, compareAge)
		return ws
	}
	check := func(name string, ap map[string]any, want string) {
		t.Helper()
		op, victims := h.scale(model.ScaleIn, 1, ap)
		if !slices.Equal(victims, []string{want}) {
			t.Errorf("%s: scale_start victims %v, want %s", name, victims, want)
		}
		ids := vnfcIDs(workers(op.Instance.InstantiatedVnfInfo))
		if slices.Contains(ids, want) {
			t.Errorf("%s: victim %s still there (%v)", name, want, ids)
		}
		if ch := changes(op); len(ch) != 1 || ch[want] != "REMOVED" {
			t.Errorf("%s: changes %v", name, ch)
		}
		for _, a := range op.ResourceChanges.AffectedVnfcs {
			if a.ComputeResource.VimConnectionID == "" || a.ComputeResource.ResourceID == "" {
				t.Errorf("%s: affected %+v", name, a)
			}
			if _, ok := h.simServers()[a.ComputeResource.ResourceID]; ok {
				t.Errorf("%s: removed server %s still exists", name, a.ComputeResource.ResourceID)
			}
		}
	}
	ws = ordered()
	check("oldest first", nil, ws[0].ID)
	ws = ordered()
	check("is_reverse", map[string]any{"is_reverse": "True"}, ws[len(ws)-1].ID)
	ws = ordered()
	check("explicit", map[string]any{"vnfcInstanceIds": []any{ws[1].ID}}, ws[1].ID)
	if n := len(workers(h.inst.InstantiatedVnfInfo)); n != 2 || len(h.simServers()) != 3 {
		t.Errorf("%d workers, %d servers at the end", n, len(h.simServers()))
	}
}

func TestHealOneVnfcKeepsAddress(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	target := workers(h.inst.InstantiatedVnfInfo)[1]
	others := h.inst.InstantiatedVnfInfo.VnfcResourceInfo
	r := h.start(model.OpHeal, &model.HealVnfRequest{VnfcInstanceID: []string{target.ID}, Cause: "node broken"})
	op := r.step("infra.heal", h.d.Heal)
	r.finish()
	var healed model.VnfcResourceInfo
	for _, v := range op.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ID == target.ID {
			healed = v
		}
	}
	if healed.ID == "" {
		t.Fatalf("VNFC %s gone after heal", target.ID)
	}
	if healed.ComputeResource.ResourceID == target.ComputeResource.ResourceID {
		t.Error("server id unchanged")
	}
	if _, ok := h.simServers()[target.ComputeResource.ResourceID]; ok {
		t.Error("old server still exists")
	}
	if addrOf(t, healed) != addrOf(t, target) {
		t.Errorf("address %s, was %s", addrOf(t, healed), addrOf(t, target))
	}
	if slices.Equal(strList(healed.Metadata[MetaFingerprints]), strList(target.Metadata[MetaFingerprints])) {
		t.Error("host keys unchanged after heal")
	}
	if ch := changes(op); len(ch) != 1 || ch[target.ID] != "MODIFIED" {
		t.Errorf("changes %v", ch)
	}
	for _, v := range others {
		if v.ID != target.ID && !slices.ContainsFunc(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo, func(n model.VnfcResourceInfo) bool {
			return n.ID == v.ID && n.ComputeResource.ResourceID == v.ComputeResource.ResourceID
		}) {
			t.Errorf("VNFC %s changed", v.ID)
		}
	}
	// Unknown VNFC: refused before anything happens.
	r = h.start(model.OpHeal, &model.HealVnfRequest{VnfcInstanceID: []string{"nope"}})
	if _, err := r.attempt(context.Background(), "infra.heal", h.d.Heal); err == nil || !strings.Contains(err.Error(), "not a VNFC") {
		t.Errorf("heal of an unknown VNFC: %v", err)
	}
}

func TestHealEntireRecreatesStack(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	h.scale(model.ScaleOut, 1, nil)
	old := clone(t, h.inst.InstantiatedVnfInfo)
	oldStack := h.stacksNamed(StackName(h.inst.ID))[0].ID
	r := h.start(model.OpHeal, &model.HealVnfRequest{})
	op := r.step("infra.heal", h.d.Heal)
	r.finish()
	sts := h.stacksNamed(StackName(h.inst.ID))
	if len(sts) != 1 || sts[0].ID == oldStack {
		t.Fatalf("stacks after entire heal %+v (old %s)", sts, oldStack)
	}
	info := op.Instance.InstantiatedVnfInfo
	if len(info.VnfcResourceInfo) != 4 || len(workers(info)) != 3 || info.ScaleStatus[0].ScaleLevel != 1 {
		t.Fatalf("after heal: %d VNFCs, %d workers, %v", len(info.VnfcResourceInfo), len(workers(info)), info.ScaleStatus)
	}
	if len(h.simServers()) != 4 {
		t.Errorf("%d servers", len(h.simServers()))
	}
	ch := changes(op)
	for _, v := range old.VnfcResourceInfo {
		if ch[v.ID] != "REMOVED" {
			t.Errorf("old VNFC %s: %q", v.ID, ch[v.ID])
		}
	}
	for _, v := range info.VnfcResourceInfo {
		if ch[v.ID] != "ADDED" {
			t.Errorf("new VNFC %s: %q", v.ID, ch[v.ID])
		}
	}
	// The external connectivity survived (nfv of the old stack).
	st, err := stacks.Get(context.Background(), h.clients().heat, sts[0].Name, sts[0].ID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if cp := jsonOf(t, nfvFromStack(st.Parameters)["CP"]); !strings.Contains(cp, `"fixed_ips":[{"ip_address":"10.77.9.80"}]`) || !strings.Contains(cp, netID) {
		t.Errorf("nfv.CP after heal %s", cp)
	}
	if st.Parameters["worker_instance_desired_capacity"] != "3" {
		t.Errorf("capacity %s", st.Parameters["worker_instance_desired_capacity"])
	}
}

func TestTerminate(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	n := len(h.inst.InstantiatedVnfInfo.VnfcResourceInfo)
	timeout := 1
	r := h.start(model.OpTerminate, &model.TerminateVnfRequest{TerminationType: "GRACEFUL", GracefulTerminationTimeout: &timeout})
	t0 := time.Now()
	op := r.step("infra.terminate", h.d.Terminate)
	if time.Since(t0) < time.Second {
		t.Errorf("GRACEFUL did not wait (%s)", time.Since(t0))
	}
	if len(h.stacksNamed(StackName(h.inst.ID))) != 0 || len(h.simServers()) != 0 {
		t.Errorf("stack or servers left: %v", h.simServers())
	}
	ch := changes(op)
	if len(ch) != n {
		t.Errorf("changes %v", ch)
	}
	for _, c := range ch {
		if c != "REMOVED" {
			t.Errorf("changes %v", ch)
		}
	}
	if len(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo) != 0 {
		t.Error("VNFCs left in the instance")
	}
	// A re-run (crash after the delete) succeeds without waiting again.
	t0 = time.Now()
	r.step("infra.terminate", h.d.Terminate)
	if time.Since(t0) > 900*time.Millisecond {
		t.Errorf("re-run waited the graceful timeout again (%s)", time.Since(t0))
	}
	r.finish()

	// The graceful wait stops with the context.
	h2 := newHarness(t)
	h2.instantiate()
	timeout = 60
	r = h2.start(model.OpTerminate, &model.TerminateVnfRequest{TerminationType: "GRACEFUL", GracefulTerminationTimeout: &timeout})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.attempt(ctx, "infra.terminate", h2.d.Terminate); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("terminate with a cancelled context: %v", err)
	}
}

func TestFailedInstantiateAndRollback(t *testing.T) {
	h := newHarness(t)
	h.sim.SetFaults(ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "workerNode", Type: "OS::Nova::Server", Message: "No valid host was found. There are not enough hosts available."}}})
	r := h.start(model.OpInstantiate, instantiateRequest())
	_, err := r.attempt(context.Background(), "infra.instantiate", h.d.Instantiate)
	var se *StackError
	if !errors.As(err, &se) {
		t.Fatalf("instantiate: %v", err)
	}
	if se.Status != "CREATE_FAILED" || !strings.Contains(err.Error(), "No valid host was found") ||
		!strings.Contains(err.Error(), "worker_instance/") || !strings.Contains(err.Error(), "/workerNode (OS::Nova::Server)") {
		t.Errorf("error does not name the reason and the failed resource: %v", err)
	}
	if len(h.stacksNamed(StackName(h.inst.ID))) != 1 || len(h.simServers()) == 0 {
		t.Fatalf("the failed stack is expected to stay until rollback")
	}
	h.sim.SetFaults(ossim.Faults{})
	op := r.rollback("infra.instantiate", h.d.RollbackInstantiate)
	if len(h.stacksNamed(StackName(h.inst.ID))) != 0 || len(h.simServers()) != 0 {
		t.Errorf("rollback left the stack or servers %v", h.simServers())
	}
	if len(op.ResourceChanges.AffectedVnfcs) != 0 {
		t.Errorf("changes after rollback %v", changes(op))
	}
	// Rolling back again (already gone) is fine.
	r.step("rollback:infra.instantiate", h.d.RollbackInstantiate)
}

func TestRetryAfterFailedInstantiateRecreates(t *testing.T) {
	// Six failures: Heat retries a server that went to ERROR five times.
	h := newHarness(t)
	h.sim.SetFaults(ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "masterNode", Type: "OS::Nova::Server", Times: 6}}})
	r := h.start(model.OpInstantiate, instantiateRequest())
	if _, err := r.attempt(context.Background(), "infra.instantiate", h.d.Instantiate); err == nil {
		t.Fatal("instantiate succeeded despite the fault")
	}
	failed := h.stacksNamed(StackName(h.inst.ID))[0].ID
	op := r.step("infra.instantiate", h.d.Instantiate) // retry: the fault is used up
	sts := h.stacksNamed(StackName(h.inst.ID))
	if len(sts) != 1 || sts[0].ID == failed || sts[0].Status != "CREATE_COMPLETE" {
		t.Errorf("stacks after retry %+v (failed one %s)", sts, failed)
	}
	if len(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo) != 3 || len(h.simServers()) != 3 {
		t.Errorf("%d VNFCs, %d servers", len(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo), len(h.simServers()))
	}
}

func TestFailedScaleOutRollback(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	before := clone(t, h.inst.InstantiatedVnfInfo)
	// Every new worker fails, through Heat's five retries of a server
	// that went to ERROR.
	h.sim.SetFaults(ossim.Faults{FailResources: []ossim.ResourceFault{{Name: "workerNode", Type: "OS::Nova::Server"}}})
	steps := 2
	r := h.start(model.OpScale, &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance", NumberOfSteps: &steps})
	if _, err := r.attempt(context.Background(), "infra.scale", h.d.Scale); err == nil || !strings.Contains(err.Error(), "UPDATE_FAILED") {
		t.Fatalf("scale out: %v", err)
	}
	if len(h.simServers()) < 4 {
		t.Logf("servers after the failed scale-out: %d", len(h.simServers()))
	}
	op := r.rollback("infra.scale", h.d.RollbackScale)
	info := op.Instance.InstantiatedVnfInfo
	if info.ScaleStatus[0].ScaleLevel != 0 {
		t.Errorf("scale status %v", info.ScaleStatus)
	}
	if !slices.Equal(vnfcIDs(info.VnfcResourceInfo), vnfcIDs(before.VnfcResourceInfo)) {
		t.Errorf("VNFCs %v, before %v", vnfcIDs(info.VnfcResourceInfo), vnfcIDs(before.VnfcResourceInfo))
	}
	for _, v := range before.VnfcResourceInfo {
		if _, ok := h.simServers()[v.ComputeResource.ResourceID]; !ok {
			t.Errorf("original server of %s gone", v.ID)
		}
	}
	if len(h.simServers()) != 3 {
		t.Errorf("%d servers after rollback", len(h.simServers()))
	}
	if len(op.ResourceChanges.AffectedVnfcs) != 0 {
		t.Errorf("changes %v", changes(op))
	}
	// The stack is usable again.
	h.sim.SetFaults(ossim.Faults{})
	op, _ = h.scale(model.ScaleOut, 1, nil)
	if len(workers(op.Instance.InstantiatedVnfInfo)) != 3 {
		t.Errorf("scale out after the rollback: %d workers", len(workers(op.Instance.InstantiatedVnfInfo)))
	}
}

// The step is interrupted (crash) after the create was sent; the re-run
// waits on that stack instead of creating a second one.
func TestResumeAfterCrashNoDuplicate(t *testing.T) {
	for _, lostCheckpoint := range []bool{false, true} {
		name := "checkpoint kept"
		if lostCheckpoint {
			name = "crash before the checkpoint"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.sim.SetFaults(ossim.Faults{SlowStacks: []ossim.StackDelay{{Stack: "vnflcm_*", Delay: ossim.Duration(700 * time.Millisecond), Actions: []string{"CREATE"}}},
				SlowServers: []ossim.ServerDelay{{Delay: ossim.Duration(2 * time.Second)}}}) // the same, seen by a real Heat
			r := h.start(model.OpInstantiate, instantiateRequest())
			j := &journal{failDone: lostCheckpoint}
			r.journals["infra.instantiate"] = j
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for len(h.stacksNamed(StackName(h.inst.ID))) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				cancel() // the process dies while Heat works
			}()
			_, err := r.attempt(ctx, "infra.instantiate", h.d.Instantiate)
			if err == nil {
				t.Fatal("the interrupted attempt succeeded")
			}
			first := h.stacksNamed(StackName(h.inst.ID))
			if len(first) != 1 || !strings.HasSuffix(first[0].Status, "IN_PROGRESS") {
				t.Fatalf("stacks after the crash %+v", first)
			}
			j.failDone = false
			op := r.step("infra.instantiate", h.d.Instantiate)
			sts := h.stacksNamed(StackName(h.inst.ID))
			if len(sts) != 1 || sts[0].ID != first[0].ID {
				t.Fatalf("stacks after resume %+v, first %s", sts, first[0].ID)
			}
			if len(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo) != 3 || len(h.simServers()) != 3 {
				t.Errorf("%d VNFCs, %d servers", len(op.Instance.InstantiatedVnfInfo.VnfcResourceInfo), len(h.simServers()))
			}
		})
	}
}

// Tokens are reused between operations and renewed when Keystone revokes them.
func TestReauthentication(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	c1 := h.clients()
	h.sim.RevokeTokens()
	op, _ := h.scale(model.ScaleOut, 1, nil)
	if len(workers(op.Instance.InstantiatedVnfInfo)) != 3 {
		t.Errorf("scale after token revocation: %d workers", len(workers(op.Instance.InstantiatedVnfInfo)))
	}
	if c2 := h.clients(); c1 != c2 {
		t.Error("clients were not reused")
	}
	// Wrong credentials: a clear error, nothing cached.
	bad := clone(t, h.vim)
	bad.AccessInfo["password"] = "wrong"
	a, _ := accessOf(&bad)
	if _, err := h.d.clientsFor(context.Background(), a); err == nil || !strings.Contains(err.Error(), "rejected the credentials") {
		t.Errorf("bad password: %v", err)
	}
}

func TestChangeExtConn(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	before := clone(t, h.inst.InstantiatedVnfInfo)
	r := h.start(model.OpChangeExtConn, &model.ChangeExtVnfConnectivityRequest{ExtVirtualLinks: []model.ExtVirtualLinkData{
		{ID: "ext-workers", ResourceID: vipNetID, ExtCps: []model.VnfExtCpData{{CpdID: "workerNode_CP1"}}}}})
	op := r.step("infra.change_ext_conn", h.d.ChangeExtConn)
	info := op.Instance.InstantiatedVnfInfo
	for _, w := range workers(info) {
		if a := addrOf(t, w); !strings.HasPrefix(a, "10.77.9.") {
			t.Errorf("worker %s address %s, want one on the new network", w.ID, a)
		}
	}
	for _, v := range info.VnfcResourceInfo {
		if v.VduID == "masterNode" && !strings.HasPrefix(addrOf(t, v), "10.77.0.") {
			t.Errorf("master moved: %s", addrOf(t, v))
		}
	}
	if len(op.ChangedExtConnectivity) != 1 || op.ChangedExtConnectivity[0].ID != "ext-workers" || len(op.ChangedExtConnectivity[0].ExtLinkPorts) != 2 {
		t.Errorf("changedExtConnectivity %s", jsonOf(t, op.ChangedExtConnectivity))
	}
	ch := changes(op)
	for _, w := range workers(before) {
		if ch[w.ID] != "MODIFIED" {
			t.Errorf("worker %s change %q", w.ID, ch[w.ID])
		}
	}
	if len(ch) != 2 {
		t.Errorf("changes %v", ch)
	}
}

// A step that finished in the VIM but crashed before the engine persisted
// its result runs again from the old working copy: nothing is done twice,
// and the result is the same.
func TestRerunAfterLostResult(t *testing.T) {
	h := newHarness(t)
	h.instantiate()
	h.scale(model.ScaleOut, 2, nil)

	// Heal one VNFC.
	target := workers(h.inst.InstantiatedVnfInfo)[0]
	r := h.start(model.OpHeal, &model.HealVnfRequest{VnfcInstanceID: []string{target.ID}})
	saved := r.work
	first := r.step("infra.heal", h.d.Heal)
	healedServer := ""
	for _, v := range first.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ID == target.ID {
			healedServer = v.ComputeResource.ResourceID
		}
	}
	r.work = saved // the result was lost
	second := r.step("infra.heal", h.d.Heal)
	for _, v := range second.Instance.InstantiatedVnfInfo.VnfcResourceInfo {
		if v.ID == target.ID && v.ComputeResource.ResourceID != healedServer {
			t.Errorf("healed twice: server %s, first heal made %s", v.ComputeResource.ResourceID, healedServer)
		}
	}
	if ch := changes(second); len(ch) != 1 || ch[target.ID] != "MODIFIED" {
		t.Errorf("re-run changes %v", ch)
	}
	r.finish()

	// Scale in.
	one := 1
	r = h.start(model.OpScale, &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &one})
	saved = r.work
	first = r.step("infra.scale", h.d.Scale)
	r.work = saved
	second = r.step("infra.scale", h.d.Scale)
	if a, b := vnfcIDs(first.Instance.InstantiatedVnfInfo.VnfcResourceInfo), vnfcIDs(second.Instance.InstantiatedVnfInfo.VnfcResourceInfo); !slices.Equal(a, b) || len(workers(second.Instance.InstantiatedVnfInfo)) != 3 {
		t.Errorf("scale-in re-run: %v, first run %v", b, a)
	}
	if c1, c2 := changes(first), changes(second); len(c2) != 1 || jsonOf(t, c1) != jsonOf(t, c2) {
		t.Errorf("scale-in re-run changes %v, first run %v", c2, c1)
	}
}

func TestStackTimeout(t *testing.T) {
	h := newHarness(t)
	h.d = New(Options{PollMin: 5 * time.Millisecond, PollMax: 20 * time.Millisecond, StackTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	h.sim.SetFaults(ossim.Faults{SlowStacks: []ossim.StackDelay{{Delay: ossim.Duration(3 * time.Second)}}})
	r := h.start(model.OpInstantiate, instantiateRequest())
	t0 := time.Now()
	_, err := r.attempt(context.Background(), "infra.instantiate", h.d.Instantiate)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms (last status CREATE_IN_PROGRESS)") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the wait took %s", d)
	}
}

// TestMarkUnhealthyWaitsForStackLock: Heat refuses mark-unhealthy with 409
// ActionInProgress while the stack holding the resource runs an action (real
// Heat did so for a failed scale-out's group stack); the driver waits it out.
func TestMarkUnhealthyWaitsForStackLock(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.sim.SetFaults(ossim.Faults{SlowStacks: []ossim.StackDelay{{Stack: "locked", Delay: ossim.Duration(300 * time.Millisecond)}}})
	c := h.clients()
	tmpl := "heat_template_version: 2018-08-31\nresources:\n  v: {type: OS::Heat::Value, properties: {value: x}}\n"
	ref, err := createStack(ctx, c, rawCreate{"stack_name": "locked", "template": tmpl})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.d.markUnhealthy(ctx, c, ref, "v", "test"); err != nil {
		t.Fatalf("mark unhealthy while the stack is created: %v", err)
	}
	r, err := stackresources.Get(ctx, c.heat, ref.Name, ref.ID, "v").Extract()
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "CHECK_FAILED" || r.StatusReason != "test" {
		t.Errorf("resource after mark: %s %q", r.Status, r.StatusReason)
	}
}
