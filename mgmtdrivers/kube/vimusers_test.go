package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mini-vnfm/mini-vnfm/internal/driverapi"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

type usersOf map[string][]string

func (u usersOf) RegisterKubernetesVim(context.Context, driverapi.KubernetesVim) (string, error) {
	return "", nil
}
func (u usersOf) RemoveKubernetesVim(context.Context, string, string) error { return nil }
func (u usersOf) VimUsers(_ context.Context, name, _ string) ([]string, error) {
	return u[name], nil
}

// A cluster whose VIM CNFs use is not removed: 409 naming them, unless
// the request says force.
func TestCheckVimUsers(t *testing.T) {
	a := &driverapi.Accept{Instance: &model.VnfInstance{ID: "cluster"}, Vims: usersOf{"vimA": {"VNF instance cnf-1", "VNF instance cnf-2"}}}
	err := CheckVimUsers(context.Background(), a, false, "vimB", "vimA")
	var ce *driverapi.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(ce.Detail, "VNF instance cnf-1, VNF instance cnf-2") || !strings.Contains(ce.Detail, "additionalParams.force") {
		t.Fatalf("in use: %v, want a ConflictError naming both CNFs and the force parameter", err)
	}
	if err := CheckVimUsers(context.Background(), a, true, "vimA"); err != nil {
		t.Errorf("force: %v", err)
	}
	if err := CheckVimUsers(context.Background(), a, false, "vimB"); err != nil {
		t.Errorf("unused VIM: %v", err)
	}
	for v, want := range map[any]bool{true: true, "true": true, false: false, nil: false} {
		ap := map[string]any{}
		if v != nil {
			ap["force"] = v
		}
		if got, err := ForceParam(ap); err != nil || got != want {
			t.Errorf("force %v: %v, %v", v, got, err)
		}
	}
	if _, err := ForceParam(map[string]any{"force": "sure"}); err == nil {
		t.Errorf("force \"sure\" accepted")
	}
}

// A scale-in that leaves the cluster no worker while CNFs use its VIM is
// refused (409 naming them) unless forced; one that leaves a worker is not.
// The workers it removes are the deltas of the steps it undoes.
func TestCheckWorkerScaleIn(t *testing.T) {
	fl := &model.Flavour{ScalingAspects: map[string]*model.ScalingAspect{
		"workers": {StepDeltas: []string{"one", "two"}, VduDeltas: map[string]map[string]int{"worker": {"one": 1, "two": 2}}},
		"storage": {VduDeltas: map[string]map[string]int{"storage": {"d": 1}}},
	}}
	workers := func(n int) []*Node {
		var out []*Node
		for i := 0; i < n; i++ {
			out = append(out, &Node{Role: Worker, VduID: "worker"})
		}
		return out
	}
	cases := []struct {
		name          string
		workers       int
		level, steps  int
		aspect, typ   string
		users         bool
		force         bool
		wantConflict  bool
		wantInDetails string
	}{
		{name: "last worker of one", workers: 1, level: 1, steps: 1, aspect: "workers", typ: model.ScaleIn, users: true, wantConflict: true, wantInDetails: "removes 1 worker node(s) of 1"},
		{name: "step two removes two", workers: 3, level: 2, steps: 1, aspect: "workers", typ: model.ScaleIn, users: true},
		{name: "both steps remove all three", workers: 3, level: 2, steps: 2, aspect: "workers", typ: model.ScaleIn, users: true, wantConflict: true, wantInDetails: "removes 3 worker node(s) of 3"},
		{name: "step two removes the two left", workers: 2, level: 2, steps: 1, aspect: "workers", typ: model.ScaleIn, users: true, wantConflict: true},
		{name: "forced", workers: 1, level: 1, steps: 1, aspect: "workers", typ: model.ScaleIn, users: true, force: true},
		{name: "unused VIM", workers: 1, level: 1, steps: 1, aspect: "workers", typ: model.ScaleIn},
		{name: "scale out", workers: 1, level: 1, steps: 1, aspect: "workers", typ: model.ScaleOut, users: true},
		{name: "another VDU's aspect", workers: 1, level: 1, steps: 1, aspect: "storage", typ: model.ScaleIn, users: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vims := usersOf{}
			if tc.users {
				vims["vimA"] = []string{"VNF instance cnf-1"}
			}
			steps := tc.steps
			a := &driverapi.Accept{Vims: vims, Flavour: fl,
				Instance: &model.VnfInstance{ID: "cluster", InstantiatedVnfInfo: &model.InstantiatedVnfInfo{
					ScaleStatus: []model.ScaleInfo{{AspectID: tc.aspect, ScaleLevel: tc.level}}}},
				Request: driverapi.Request{Scale: &model.ScaleVnfRequest{Type: tc.typ, AspectID: tc.aspect, NumberOfSteps: &steps}}}
			err := CheckWorkerScaleIn(context.Background(), a, tc.force, workers(tc.workers), "vimA")
			var ce *driverapi.ConflictError
			switch {
			case tc.wantConflict && (!errors.As(err, &ce) || !strings.Contains(ce.Detail, "VNF instance cnf-1") || !strings.Contains(ce.Detail, "additionalParams.force") || !strings.Contains(ce.Detail, tc.wantInDetails)):
				t.Errorf("got %v, want a ConflictError naming the CNF, the force parameter and %q", err, tc.wantInDetails)
			case !tc.wantConflict && err != nil:
				t.Errorf("got %v, want it accepted", err)
			}
		})
	}
}
