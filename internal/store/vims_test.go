package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func newVim(name, typ string, def bool) *store.Vim {
	return &store.Vim{ID: uuid.NewString(), Name: name, Type: typ, AuthURL: "http://127.0.0.1:5000/v3", IsDefault: def,
		Status: "ACTIVE", VimProject: map[string]any{"name": "nfv"}, Extra: map[string]any{},
		Auth: store.VimAuth{AuthURL: "http://127.0.0.1:5000/v3", VimProject: map[string]any{"name": "nfv"},
			AuthCred: map[string]any{"username": "u", "password": "enc:v2:k:x"}, KeyID: "k"}}
}

func TestVimCRUD(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	a, err := st.CreateVim(ctx, newVim("vimA", store.VimOpenStack, true))
	if err != nil {
		t.Fatal(err)
	}
	if a.Auth.AuthCred["password"] != "enc:v2:k:x" || a.Auth.KeyID != "k" || !a.IsDefault || a.CreatedAt.IsZero() {
		t.Fatalf("created %+v", a)
	}
	b, err := st.CreateVim(ctx, newVim("vimB", store.VimKubernetes, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    *store.Vim
		want string
	}{
		{"duplicate name", newVim("vimA", store.VimOpenStack, false), `a VIM named "vimA" already exists`},
		{"second default", newVim("vimC", store.VimOpenStack, true), `VIM "vimA" (` + a.ID + `) is already the default`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.CreateVim(ctx, tc.v)
			var ce *store.ConflictError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.want) {
				t.Fatalf("err %v, want conflict %q", err, tc.want)
			}
		})
	}
	if all, _ := st.ListVims(ctx, store.VimFilter{}); len(all) != 2 {
		t.Fatalf("a failed create left rows: %d VIMs", len(all))
	}

	for _, tc := range []struct {
		name string
		f    store.VimFilter
		want []string
	}{
		{"all", store.VimFilter{}, []string{"vimA", "vimB"}},
		{"by id", store.VimFilter{IDs: []string{b.ID}}, []string{"vimB"}},
		{"by name", store.VimFilter{Names: []string{"vimA"}}, []string{"vimA"}},
		{"by names", store.VimFilter{Names: []string{"vimA", "vimB"}}, []string{"vimA", "vimB"}},
		{"by type", store.VimFilter{Types: []string{store.VimKubernetes}}, []string{"vimB"}},
		{"id and name disagree", store.VimFilter{IDs: []string{a.ID}, Names: []string{"vimB"}}, nil},
		{"malformed id", store.VimFilter{IDs: []string{"not-a-uuid"}}, nil},
	} {
		t.Run("list "+tc.name, func(t *testing.T) {
			got, err := st.ListVims(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, v := range got {
				names = append(names, v.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", names, tc.want)
			}
		})
	}

	if v, err := st.GetVimByName(ctx, "vimB"); err != nil || v.ID != b.ID {
		t.Fatalf("by name: %v %v", v, err)
	}
	if _, err := st.GetVim(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get malformed id: %v", err)
	}
	if d, err := st.DefaultVim(ctx); err != nil || d.ID != a.ID {
		t.Fatalf("default: %v %v", d, err)
	}

	// Moving the default: setting B while A is default conflicts; unset A first.
	if _, err := st.UpdateVim(ctx, b.ID, func(v *store.Vim) error { v.IsDefault = true; return nil }); err == nil {
		t.Fatal("second default accepted")
	}
	if _, err := st.UpdateVim(ctx, a.ID, func(v *store.Vim) error { v.IsDefault = false; return nil }); err != nil {
		t.Fatal(err)
	}
	up, err := st.UpdateVim(ctx, b.ID, func(v *store.Vim) error {
		v.IsDefault, v.Description = true, "now default"
		v.Auth.AuthCred = map[string]any{"bearer_token": "enc:v2:k2:y"}
		v.Auth.KeyID = "k2"
		return nil
	})
	if err != nil || !up.IsDefault || up.Description != "now default" || up.Auth.KeyID != "k2" || !up.UpdatedAt.After(b.UpdatedAt) {
		t.Fatalf("update: %+v %v", up, err)
	}
	if _, err := st.UpdateVim(ctx, a.ID, func(v *store.Vim) error { v.Name = "vimB"; return nil }); err == nil || !strings.Contains(err.Error(), `"vimB" already exists`) {
		t.Fatalf("rename onto an existing name: %v", err)
	}
	stop := errors.New("stop")
	if _, err := st.UpdateVim(ctx, a.ID, func(*store.Vim) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("change error: %v", err)
	}
	if _, err := st.UpdateVim(ctx, uuid.NewString(), func(*store.Vim) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	if d, err := st.DefaultVim(ctx); err != nil || d.ID != b.ID {
		t.Fatalf("default after move: %v %v", d, err)
	}

	if err := st.DeleteVim(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteVim(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	var n int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM vim_auths WHERE vim_id = $1`, a.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("vim_auths rows left: %d %v", n, err)
	}
}

func TestDeleteVimInUse(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	v, err := st.CreateVim(ctx, newVim("used", store.VimOpenStack, false))
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreateVim(ctx, newVim("unused", store.VimOpenStack, false))
	if err != nil {
		t.Fatal(err)
	}
	inst1 := newInstance(t, st, "i1")
	inst2 := newInstance(t, st, "i2")
	for _, id := range []string{inst1, inst2} {
		if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET vim_connection_info = $2 WHERE id = $1`, id,
			[]model.VimConnectionInfo{{ID: "c", VimID: v.ID, VimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3"}}); err != nil {
			t.Fatal(err)
		}
	}
	insts, ops, err := st.VimUsers(ctx, v.ID)
	if err != nil || len(insts) != 2 || len(ops) != 0 {
		t.Fatalf("users %v %v %v", insts, ops, err)
	}
	err = st.DeleteVim(ctx, v.ID)
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, inst1) || !strings.Contains(ce.Reason, inst2) || !strings.Contains(ce.Reason, `VIM "used"`) {
		t.Fatalf("delete in use: %v", err)
	}
	// The owner's reference alone does not block (a driver removing its cluster's VIM).
	if err := st.DeleteVim(ctx, v.ID, inst1); err == nil || !strings.Contains(err.Error(), inst2) || strings.Contains(err.Error(), inst1) {
		t.Fatalf("delete except one: %v", err)
	}
	if err := st.DeleteVim(ctx, other.ID); err != nil {
		t.Fatalf("unused VIM: %v", err)
	}
	// An unfinished operation whose request names the VIM blocks too.
	inst3 := newInstance(t, st, "i3")
	op, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: inst3, Operation: model.OpInstantiate,
		OperationParams: []byte(`{"flavourId":"simple","vimConnectionInfo":[{"id":"c","vimId":"` + v.ID + `"}]}`), Verb: "instantiated"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteVim(ctx, v.ID, inst1, inst2); err == nil || !strings.Contains(err.Error(), "unfinished LCM operation(s) "+op.ID) {
		t.Fatalf("delete with an unfinished op: %v", err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_lcm_op_occs SET operation_state = 'FAILED' WHERE id = $1`, op.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteVim(ctx, v.ID, inst1, inst2); err != nil {
		t.Fatalf("delete except both: %v", err)
	}
}
