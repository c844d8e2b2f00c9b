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
