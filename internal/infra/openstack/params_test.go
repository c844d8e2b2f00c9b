package openstack

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// roundTrip gives v the shape it has after a JSON round trip (as the
// engine persists requests and instances).
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	var out T
	if err := json.Unmarshal([]byte(jsonOf(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnalyzeGroups(t *testing.T) {
	top, files := readTemplate(t)
	l, err := analyze(top, files, testFlavour())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.groups) != 2 {
		t.Fatalf("groups %v", l.groups)
	}
	w := l.groups["worker_instance"]
	if !reflect.DeepEqual(w.VDUs, []string{"workerNode"}) || w.CapacityParam != "worker_instance_desired_capacity" || w.CapacityNfv {
		t.Errorf("worker group %+v", w)
	}
	m := l.groups["master_instance"]
	if !reflect.DeepEqual(m.VDUs, []string{"masterNode"}) || m.CapacityParam != "" {
		t.Errorf("master group %+v", m)
	}
	if err := l.canScale(testFlavour(), "worker_instance"); err != nil {
		t.Errorf("canScale: %v", err)
	}
	if err := l.canScale(testFlavour(), "master_instance"); err == nil || !strings.Contains(err.Error(), "master_instance_desired_capacity") {
		t.Errorf("canScale(master_instance) = %v, want an error naming the parameter to declare", err)
	}
}

func TestParametersTackerStyle(t *testing.T) {
	top, files := readTemplate(t)
	fl := testFlavour()
	l, err := analyze(top, files, fl)
	if err != nil {
		t.Fatal(err)
	}
	req := roundTrip(t, model.InstantiateVnfRequest{FlavourID: "simple",
		ExtVirtualLinks: []model.ExtVirtualLinkData{
			{ID: "ext1", ResourceID: "net-a", ExtCps: []model.VnfExtCpData{
				{CpdID: "masterNode_CP1", CpConfig: []map[string]any{{"cpProtocolData": []any{map[string]any{
					"layerProtocol": "IP_OVER_ETHERNET",
					"ipOverEthernet": map[string]any{"macAddress": "fa:16:3e:00:00:01",
						"ipAddresses": []any{map[string]any{"type": "IPV4", "fixedAddresses": []any{"10.0.0.10"}, "subnetId": "sub-a"}}}}}}}},
				{CpdID: "workerNode_CP1"},
			}},
			{ID: "ext2", ResourceID: "net-b", ExtCps: []model.VnfExtCpData{
				{CpdID: "vip_CP", CpConfig: []map[string]any{{"cpProtocolData": []any{map[string]any{
					"layerProtocol":  "IP_OVER_ETHERNET",
					"ipOverEthernet": map[string]any{"ipAddresses": []any{map[string]any{"type": "IPV4", "subnetId": "sub-b"}}}}}}}},
			}},
		},
		AdditionalParams: map[string]any{
			"node_password":                    "s3cret",
			"lcm-operation-user-data":          "./UserData/k8s_cluster_user_data.py",
			"lcm-operation-user-data-class":    "KubernetesClusterUserData",
			"k8s_cluster_installation_param":   map[string]any{"script_path": "Scripts/install.sh"},
			"worker_instance_desired_capacity": 9, // the scale level wins
			"nfv":                              map[string]any{"VDU": map[string]any{"workerNode": map[string]any{"flavor": "m1.large"}}},
		}})
	for _, tc := range []struct {
		level, workers int
	}{{0, 2}, {2, 4}} {
		p := l.parameters(paramInput{Flavour: fl, Levels: map[string]int{"worker_instance": tc.level},
			ExtVirtualLinks: req.ExtVirtualLinks, AdditionalParams: req.AdditionalParams})
		p = roundTrip(t, p)
		want := map[string]any{
			"node_password":                    "s3cret",
			"worker_instance_desired_capacity": float64(tc.workers),
			"nfv": map[string]any{
				"VDU": map[string]any{
					"masterNode": map[string]any{"flavor": "m1.medium", "computeFlavourId": "m1.medium", "image": "ubuntu-22.04", "vcImageId": "ubuntu-22.04", "desired_capacity": float64(1)},
					"workerNode": map[string]any{"flavor": "m1.large", "computeFlavourId": "m1.small", "image": "ubuntu-22.04", "vcImageId": "ubuntu-22.04", "desired_capacity": float64(tc.workers)},
				},
				"CP": map[string]any{
					"masterNode_CP1": map[string]any{"network": "net-a", "mac_address": "fa:16:3e:00:00:01",
						"fixed_ips": []any{map[string]any{"ip_address": "10.0.0.10", "subnet": "sub-a"}}},
					"workerNode_CP1": map[string]any{"network": "net-a"},
					"vip_CP":         map[string]any{"network": "net-b", "fixed_ips": []any{map[string]any{"subnet": "sub-b"}}},
				},
			},
		}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("level %d:\n got %s\nwant %s", tc.level, jsonOf(t, p), jsonOf(t, want))
		}
		// A stack update sets only what changes with the scale level.
		u := roundTrip(t, l.updateParameters(paramInput{Flavour: fl, Levels: map[string]int{"worker_instance": tc.level}}))
		if !reflect.DeepEqual(u, map[string]any{"worker_instance_desired_capacity": float64(tc.workers)}) {
			t.Errorf("update parameters at level %d: %v", tc.level, u)
		}
	}
}

// A Tacker v2 style template: desired_capacity and flavour/image ids from
// nfv, no <aspect>_desired_capacity parameter; a CP on an externally
// managed VL; an <aspect>_desired_capacity parameter used by no group.
func TestParametersNfvCapacityAndManagedVL(t *testing.T) {
	top := []byte(`
heat_template_version: 2018-08-31
parameters:
  nfv: {type: json}
  VDU1_aspect_desired_capacity: {type: number}
resources:
  VDU1_aspect:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 3
      desired_capacity: { get_param: [ nfv, VDU, VDU1, desired_capacity ] }
      resource:
        type: VDU1.yaml
        properties:
          flavor: { get_param: [ nfv, VDU, VDU1, computeFlavourId ] }
          net: { get_param: [ nfv, CP, VDU1_CP2, network ] }
`)
	fl := &model.Flavour{ID: "default",
		VDUs: map[string]*model.VDU{"VDU1": {ID: "VDU1", InitialInstances: 1, Flavor: "m1.tiny",
			CPs: []model.VduCP{{ID: "VDU1_CP1"}, {ID: "VDU1_CP2", VirtualLink: "internalVL1"}}}},
		ScalingAspects: map[string]*model.ScalingAspect{"VDU1_aspect": {MaxScaleLevel: 2, StepDeltas: []string{"d"},
			VduDeltas: map[string]map[string]int{"VDU1": {"d": 1}}}}}
	l, err := analyze(top, nil, fl)
	if err != nil {
		t.Fatal(err)
	}
	g := l.groups["VDU1_aspect"]
	if g == nil || !g.CapacityNfv || !reflect.DeepEqual(g.VDUs, []string{"VDU1"}) {
		t.Fatalf("group %+v", g)
	}
	in := paramInput{Flavour: fl, Levels: map[string]int{"VDU1_aspect": 2},
		ExtManagedVirtualLinks: []model.ExtManagedVirtualLinkData{{ID: "m1", VnfVirtualLinkDescID: "internalVL1", ResourceID: "net-int"}}}
	p := roundTrip(t, l.parameters(in))
	if got := jsonOf(t, p["nfv"]); got != `{"CP":{"VDU1_CP2":{"network":"net-int"}},"VDU":{"VDU1":{"computeFlavourId":"m1.tiny","desired_capacity":3,"flavor":"m1.tiny"}}}` {
		t.Errorf("nfv %s", got)
	}
	if p["VDU1_aspect_desired_capacity"] != float64(3) {
		t.Errorf("VDU1_aspect_desired_capacity = %v", p["VDU1_aspect_desired_capacity"])
	}
	// The update keeps the running stack's CP entries and sets capacities.
	in.ExtManagedVirtualLinks = nil
	in.NfvBase = map[string]any{"CP": map[string]any{"VDU1_CP2": map[string]any{"network": "net-int"}}}
	in.Levels["VDU1_aspect"] = 1
	u := roundTrip(t, l.updateParameters(in))
	if got := jsonOf(t, u); got != `{"VDU1_aspect_desired_capacity":2,"nfv":{"CP":{"VDU1_CP2":{"network":"net-int"}},"VDU":{"VDU1":{"computeFlavourId":"m1.tiny","desired_capacity":2,"flavor":"m1.tiny"}}}}` {
		t.Errorf("update %s", got)
	}
	if err := l.canScale(fl, "VDU1_aspect"); err != nil {
		t.Error(err)
	}
}

func TestNfvFromStack(t *testing.T) {
	if m := nfvFromStack(map[string]string{"nfv": `{"CP":{"a":{"network":"n"}}}`}); jsonOf(t, m) != `{"CP":{"a":{"network":"n"}}}` {
		t.Errorf("got %v", m)
	}
	if m := nfvFromStack(map[string]string{"nfv": "******"}); m != nil {
		t.Errorf("hidden parameter decoded: %v", m)
	}
}

func TestVnfcID(t *testing.T) {
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"VDU1"}, "VDU1"},
		{[]string{"VDU1_group", "VDU1"}, "VDU1-VDU1_group"},
		{[]string{"worker_instance", "ab3xq6rfl2vc", "workerNode"}, "workerNode-ab3xq6rfl2vc"},
		{[]string{"g", "m", "inner", "srv"}, "srv-m-inner"},
	} {
		if got := vnfcID(tc.path); got != tc.want {
			t.Errorf("vnfcID(%v) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestConsoleHostKeys(t *testing.T) {
	console := strings.Join([]string{
		"[    3.4] cloud-init[401]: ci-info: no authorized SSH keys fingerprints found for user ubuntu.",
		"<14>Mar  1 12:00:01 cloud-init: #############################################################",
		"<14>Mar  1 12:00:01 cloud-init: -----BEGIN SSH HOST KEY FINGERPRINTS-----",
		"<14>Mar  1 12:00:01 cloud-init: 256 SHA256:AAAAfirst root@worker (ECDSA)",
		"<14>Mar  1 12:00:01 cloud-init: 256 SHA256:BBBBsecond root@worker (ED25519)",
		"<14>Mar  1 12:00:01 cloud-init: -----END SSH HOST KEY FINGERPRINTS-----",
		"-----BEGIN SSH HOST KEY KEYS-----",
		"ecdsa-sha2-nistp256 AAAAE2Vj root@worker",
		"ssh-ed25519 AAAAC3Nz root@worker",
		"-----END SSH HOST KEY KEYS-----",
		"worker login: ",
	}, "\n")
	fps, keys := consoleHostKeys(console)
	if !reflect.DeepEqual(fps, []string{"SHA256:AAAAfirst", "SHA256:BBBBsecond"}) {
		t.Errorf("fingerprints %v", fps)
	}
	if !reflect.DeepEqual(keys, []string{"ecdsa-sha2-nistp256 AAAAE2Vj root@worker", "ssh-ed25519 AAAAC3Nz root@worker"}) {
		t.Errorf("keys %v", keys)
	}
	if fps, keys := consoleHostKeys("booting...\nlogin: "); fps != nil || keys != nil {
		t.Errorf("empty console gave %v %v", fps, keys)
	}
}

func TestAccessOf(t *testing.T) {
	// As the VIM registry resolves a registered VIM (internal/lcm/vims.go).
	a, err := accessOf(&model.VimConnectionInfo{ID: "vim1", VimType: VimType,
		InterfaceInfo: map[string]any{"endpoint": "https://ks:5000/v3", "ssl_ca_cert": "PEM", "skipCertificateVerification": true},
		AccessInfo: map[string]any{"username": "admin", "password": "pw", "userDomain": "Default", "project": "demo",
			"projectDomain": "Default", "region": "RegionTwo"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint != "https://ks:5000/v3" || a.Username != "admin" || a.Password != "pw" || a.ProjectName != "demo" ||
		a.Region != "RegionTwo" || a.CACert != "PEM" || !a.Insecure || a.UserDomainName != "Default" || a.ProjectDomainName != "Default" {
		t.Errorf("access %+v", a)
	}
	o := a.AuthOptions(a.Endpoint)
	if o.Username != "admin" || o.DomainName != "Default" || o.Scope.ProjectName != "demo" || o.Scope.DomainName != "Default" {
		t.Errorf("auth options %+v scope %+v", o, o.Scope)
	}
	// Inline, Tacker style, with ids.
	a, err = accessOf(&model.VimConnectionInfo{ID: "vim2", VimType: "openstack",
		InterfaceInfo: map[string]any{},
		AccessInfo: map[string]any{"auth_url": "http://ks/v3", "user_id": "u1", "password": "pw", "project_id": "p1",
			"cert_verify": "True"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Endpoint != "http://ks/v3" || a.UserID != "u1" || a.ProjectID != "p1" || a.Insecure || a.UserDomainName != "" {
		t.Errorf("access %+v", a)
	}
	if o := a.AuthOptions(a.Endpoint); o.UserID != "u1" || o.Scope.ProjectID != "p1" {
		t.Errorf("auth options %+v", o)
	}
	for _, bad := range []*model.VimConnectionInfo{
		nil,
		{ID: "x", AccessInfo: map[string]any{"username": "a", "password": "b", "project": "c"}},
		{ID: "x", InterfaceInfo: map[string]any{"endpoint": "http://ks/v3"}, AccessInfo: map[string]any{"username": "a", "project": "c"}},
		{ID: "x", InterfaceInfo: map[string]any{"endpoint": "http://ks/v3"}, AccessInfo: map[string]any{"username": "a", "password": "b"}},
	} {
		if _, err := accessOf(bad); err == nil {
			t.Errorf("accessOf(%+v) accepted", bad)
		}
	}
	// Different credentials, different cache keys; same, same.
	k1, _ := accessOf(&model.VimConnectionInfo{ID: "a", InterfaceInfo: map[string]any{"endpoint": "http://ks/v3"}, AccessInfo: map[string]any{"username": "a", "password": "b", "project": "c"}})
	k2, _ := accessOf(&model.VimConnectionInfo{ID: "b", InterfaceInfo: map[string]any{"endpoint": "http://ks/v3"}, AccessInfo: map[string]any{"username": "a", "password": "b2", "project": "c"}})
	k3, _ := accessOf(&model.VimConnectionInfo{ID: "c", InterfaceInfo: map[string]any{"endpoint": "http://ks/v3"}, AccessInfo: map[string]any{"username": "a", "password": "b", "project": "c"}})
	if k1.key() == k2.key() || k1.key() != k3.key() {
		t.Error("cache keys do not follow the credentials")
	}
}

// victimsOp is a SCALE_IN of worker_instance from level 2 (4 workers) to
// level 2-steps, prepared like the engine does.
func victimsOp(t *testing.T, steps int, ap map[string]any) *driverapi.Op {
	t.Helper()
	fl := testFlavour()
	w := func(id, member, created string) model.VnfcResourceInfo {
		return model.VnfcResourceInfo{ID: id, VduID: "workerNode", ComputeResource: model.ResourceHandle{ResourceID: "srv-" + id},
			Metadata: map[string]any{MetaCreationTime: created, MetaGroupMember: member, MetaStackID: "stack-" + member, MetaScaleGroup: "worker_instance"}}
	}
	in := &model.VnfInstance{ID: "inst-1", InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple",
		ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 2 - steps}},
		VnfcResourceInfo: []model.VnfcResourceInfo{
			{ID: "masterNode-m1", VduID: "masterNode", Metadata: map[string]any{MetaCreationTime: "2026-03-01T11:00:00Z"}},
			// Listed out of order; "b" and "a" were created in the same second.
			w("workerNode-d", "d", "2026-03-01T12:00:09Z"),
			w("workerNode-b", "b", "2026-03-01T12:00:01Z"),
			w("workerNode-c", "c", "2026-03-01T12:00:05Z"),
			w("workerNode-a", "a", "2026-03-01T12:00:01Z"),
		}}}
	in = roundTrip(t, in)
	return &driverapi.Op{Operation: model.OpScale, Instance: in, Flavour: fl,
		Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &steps, AdditionalParams: ap}},
		Scratch: map[string]json.RawMessage{}, Previous: map[string]json.RawMessage{}}
}

func TestScaleInVictims(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps int
		ap    map[string]any
		want  []string
		err   string
	}{
		{"oldest first, ties by member name", 1, nil, []string{"workerNode-a"}, ""},
		{"oldest first, two steps", 2, nil, []string{"workerNode-a", "workerNode-b"}, ""},
		{"is_reverse string True", 1, map[string]any{"is_reverse": "True"}, []string{"workerNode-d"}, ""},
		{"is_reverse bool, two steps", 2, map[string]any{"is_reverse": true}, []string{"workerNode-d", "workerNode-c"}, ""},
		{"is_reverse false", 1, map[string]any{"is_reverse": "False"}, []string{"workerNode-a"}, ""},
		{"explicit list wins", 1, map[string]any{"vnfcInstanceIds": []any{"workerNode-c"}, "is_reverse": true}, []string{"workerNode-c"}, ""},
		{"explicit list, two", 2, map[string]any{"vnfcInstanceIds": []any{"workerNode-d", "workerNode-a"}}, []string{"workerNode-d", "workerNode-a"}, ""},
		{"explicit unknown id", 1, map[string]any{"vnfcInstanceIds": []any{"nope"}}, nil, "not a VNFC"},
		{"explicit wrong VDU", 1, map[string]any{"vnfcInstanceIds": []any{"masterNode-m1"}}, nil, "which aspect worker_instance does not scale"},
		{"explicit too few", 2, map[string]any{"vnfcInstanceIds": []any{"workerNode-d"}}, nil, "names 1 VNFC(s) of VDU workerNode, but this scale-in removes 2"},
		{"bad is_reverse", 1, map[string]any{"is_reverse": "maybe"}, nil, "is_reverse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := victimsOp(t, tc.steps, roundTrip(t, tc.ap))
			d := New(Options{})
			got, err := d.ScaleInVictims(context.Background(), op)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				a := &driverapi.Accept{Request: op.Request, Flavour: op.Flavour, Instance: roundTrip(t, op.Instance), Package: dirPackage{"testdata"}}
				for i := range a.Instance.InstantiatedVnfInfo.ScaleStatus {
					a.Instance.InstantiatedVnfInfo.ScaleStatus[i].ScaleLevel += tc.steps
				}
				if err := d.CheckRequest(context.Background(), a); err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CheckRequest: %v, want %q before the operation exists", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("victims %v, want %v", got, tc.want)
			}
			// The same instance gives the same answer (the engine asks
			// again when a crash came before its first checkpoint).
			again, err := d.ScaleInVictims(context.Background(), victimsOp(t, tc.steps, roundTrip(t, tc.ap)))
			if err != nil || !reflect.DeepEqual(again, tc.want) {
				t.Fatalf("second call %v %v", again, err)
			}
			// The accept-time check sees the same problems before the level changes.
			a := &driverapi.Accept{Request: op.Request, Flavour: op.Flavour, Instance: roundTrip(t, op.Instance), Package: dirPackage{"testdata"}}
			for i := range a.Instance.InstantiatedVnfInfo.ScaleStatus {
				a.Instance.InstantiatedVnfInfo.ScaleStatus[i].ScaleLevel += tc.steps
			}
			if err := d.CheckRequest(context.Background(), a); err != nil {
				t.Fatalf("CheckRequest: %v", err)
			}
		})
	}
	// Scale-out has no victims.
	op := victimsOp(t, 1, nil)
	op.Request.Scale.Type = model.ScaleOut
	if v, err := New(Options{}).ScaleInVictims(context.Background(), op); v != nil || err != nil {
		t.Errorf("scale out: %v %v", v, err)
	}
}

func TestRecordChangesNet(t *testing.T) {
	h := func(id string) model.ResourceHandle {
		return model.ResourceHandle{VimConnectionID: "vim1", ResourceID: id, VimLevelResourceType: typeServer}
	}
	v := func(id, srv string) model.VnfcResourceInfo {
		return model.VnfcResourceInfo{ID: id, VduID: "w", ComputeResource: h(srv)}
	}
	rc := &model.ResourceChanges{}
	base := &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{v("a", "1"), v("b", "2")}}
	out := &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{v("a", "1"), v("b", "2"), v("c", "3"), v("d", "4")}}
	recordChanges(rc, base, out, nil) // scale out: c, d ADDED
	healed := &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{v("a", "1"), v("b", "9"), v("c", "3"), v("d", "4")}}
	recordChanges(rc, out, healed, nil) // b replaced: MODIFIED
	back := &model.InstantiatedVnfInfo{VnfcResourceInfo: []model.VnfcResourceInfo{v("b", "9"), v("c", "3")}}
	recordChanges(rc, healed, back, nil) // a REMOVED, d added then removed: nothing
	got := map[string]string{}
	for _, a := range rc.AffectedVnfcs {
		got[a.ID] = a.ChangeType
		if a.ComputeResource.VimConnectionID != "vim1" {
			t.Errorf("%s has no vimConnectionId", a.ID)
		}
	}
	if !reflect.DeepEqual(got, map[string]string{"a": "REMOVED", "b": "MODIFIED", "c": "ADDED"}) {
		t.Errorf("changes %v", got)
	}
	// Virtual links carry both descriptor id spellings.
	rc = &model.ResourceChanges{}
	recordChanges(rc, &model.InstantiatedVnfInfo{}, &model.InstantiatedVnfInfo{VirtualLinkResourceInfo: []model.VirtualLinkResourceInfo{
		{ID: "vl", VnfVirtualLinkDescID: "internalVL1", NetworkResource: model.ResourceHandle{VimConnectionID: "vim1", ResourceID: "n"}}}}, nil)
	if len(rc.AffectedVirtualLinks) != 1 || rc.AffectedVirtualLinks[0]["vnfVirtualLinkDescId"] != "internalVL1" ||
		rc.AffectedVirtualLinks[0]["virtualLinkDescId"] != "internalVL1" || rc.AffectedVirtualLinks[0]["changeType"] != "ADDED" {
		t.Errorf("virtual links %v", rc.AffectedVirtualLinks)
	}
}
