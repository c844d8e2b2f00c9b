package kubespray

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// vimUsers is a VIM registry whose VIMs are used by the instances listed
// per VIM name.
type vimUsers map[string][]string

func (v vimUsers) RegisterKubernetesVim(context.Context, driverapi.KubernetesVim) (string, error) {
	return "", nil
}
func (v vimUsers) RemoveKubernetesVim(context.Context, string, string) error { return nil }
func (v vimUsers) VimUsers(_ context.Context, name, _ string) ([]string, error) {
	return v[name], nil
}

// Requests after the instantiation that kubespray cannot carry out are
// refused when they are accepted, from the parameters the instantiation
// kept: scaling the control plane, healing a master, removing a cluster
// VIM another instance uses.
func TestAcceptRefusesWhatCannotSucceed(t *testing.T) {
	stored, err := ParseParams(validParams())
	if err != nil {
		t.Fatal(err)
	}
	fl := &model.Flavour{ID: "simple", ScalingAspects: map[string]*model.ScalingAspect{
		"master_instance": {MaxScaleLevel: 2, VduDeltas: map[string]map[string]int{"masterNode": {"delta_1": 1}}},
		"worker_instance": {MaxScaleLevel: 2, VduDeltas: map[string]map[string]int{"workerNode": {"delta_1": 1}}},
	}}
	in := &model.VnfInstance{ID: "9d3e1d6a-5b7e-4a55-9d0b-0c6a1f0e2a11",
		InstantiatedVnfInfo: &model.InstantiatedVnfInfo{FlavourID: "simple", VnfcResourceInfo: sampleVnfcs(),
			ScaleStatus: []model.ScaleInfo{{AspectID: "worker_instance", ScaleLevel: 2}}}}
	one, two := 1, 2
	inUse := vimUsers{"kubespray_vim": {"VNF instance 5c0e"}}
	for _, tc := range []struct {
		name string
		req  driverapi.Request
		vims vimUsers
		want string // "" accepted
	}{
		{name: "scale out the workers", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "worker_instance", NumberOfSteps: &one}}},
		{name: "scale out the masters", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleOut, AspectID: "master_instance", NumberOfSteps: &one}},
			want: "aspect master_instance scales the control-plane VDU masterNode: kubespray has no playbook"},
		{name: "scale in the masters", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "master_instance", NumberOfSteps: &one}},
			want: "kubespray has no playbook to add or remove a control-plane/etcd member"},
		{name: "scale in every worker, the VIM in use", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &two}},
			vims: inUse, want: "is in use by VNF instance 5c0e: scaling in aspect worker_instance by 2 step(s) removes 2 worker node(s) of 2"},
		{name: "scale in a worker, the VIM in use", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &one}},
			vims: inUse},
		{name: "scale in every worker, the VIM in use, force", req: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: model.ScaleIn, AspectID: "worker_instance", NumberOfSteps: &two,
			AdditionalParams: map[string]any{"force": true}}}, vims: inUse},
		{name: "heal a worker", req: driverapi.Request{Heal: &model.HealVnfRequest{VnfcInstanceID: []string{"workerNode-dddd"}}}},
		{name: "heal a master", req: driverapi.Request{Heal: &model.HealVnfRequest{VnfcInstanceID: []string{"workerNode-dddd", "masterNode-bbbb"}}},
			want: "healing control-plane VNFCs (masterNode-bbbb) is not supported"},
		{name: "terminate, the VIM unused", req: driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}},
			vims: vimUsers{"other_vim": {"VNF instance x"}}},
		{name: "terminate, the VIM in use", req: driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL"}},
			vims: vimUsers{"kubespray_vim": {"VNF instance 5c0e", "LCM operation occurrence 77a1"}},
			want: "the cluster's Kubernetes VIM kubespray_vim is in use by VNF instance 5c0e, LCM operation occurrence 77a1"},
		{name: "entire heal, the VIM in use", req: driverapi.Request{Heal: &model.HealVnfRequest{}},
			vims: vimUsers{"kubespray_vim": {"VNF instance 5c0e"}}, want: "is in use by VNF instance 5c0e"},
		{name: "terminate, the VIM in use, force", req: driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL",
			AdditionalParams: map[string]any{"force": true}}}, vims: vimUsers{"kubespray_vim": {"VNF instance 5c0e"}}},
		{name: "terminate, force not a boolean", req: driverapi.Request{Terminate: &model.TerminateVnfRequest{TerminationType: "FORCEFUL",
			AdditionalParams: map[string]any{"force": "sure"}}}, vims: vimUsers{"kubespray_vim": {"VNF instance 5c0e"}}, want: "additionalParams.force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &driverapi.Accept{Request: tc.req, Instance: in, Flavour: fl, Infra: testInfra{}}
			if tc.vims != nil {
				a.Vims = tc.vims
			}
			p, err := (&Driver{}).ParseParams(context.Background(), a, stored)
			var ce *driverapi.ConflictError
			if strings.Contains(tc.want, "in use by") && !errors.As(err, &ce) {
				t.Errorf("%v is not a ConflictError (409)", err)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && p == nil:
				t.Fatal("accepted without parameters")
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if stored.VimName != "kubespray_vim" {
		t.Errorf("the stored parameters changed: vim_name %q", stored.VimName)
	}
}
