package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// The decoded VNFD is cached per package row version: reads after a change
// of the row — a VNFD replaced, a state change — see the change, through
// both PackageByVnfdID and InstanceAndPackage.
func TestPackageVnfdCacheFollowsChanges(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	pkg := lcmtest.SamplePackage()
	if err := st.PutPackage(ctx, pkg); err != nil {
		t.Fatal(err)
	}
	in, err := st.CreateInstance(ctx, &model.VnfInstance{ID: uuid.NewString(), VnfdID: lcmtest.VnfdID, VnfPkgID: pkg.ID,
		VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	both := func(want string) *model.Vnfd {
		t.Helper()
		a, err := st.PackageByVnfdID(ctx, lcmtest.VnfdID)
		if err != nil {
			t.Fatal(err)
		}
		gotIn, b, err := st.InstanceAndPackage(ctx, in.ID)
		if err != nil || b == nil {
			t.Fatalf("InstanceAndPackage: %v, package %v", err, b)
		}
		if gotIn.ID != in.ID || gotIn.VnfdID != lcmtest.VnfdID {
			t.Fatalf("instance %+v", gotIn)
		}
		for _, p := range []*model.Package{a, b} {
			if p.ID != pkg.ID || p.OperationalState != want || p.Vnfd == nil || p.Vnfd.ID != lcmtest.VnfdID {
				t.Fatalf("package %+v, want %s with its VNFD", p, want)
			}
		}
		if a.Vnfd != b.Vnfd {
			t.Fatalf("the same row version decoded twice: %p, %p", a.Vnfd, b.Vnfd)
		}
		return a.Vnfd
	}
	first := both(model.Enabled)
	if again := both(model.Enabled); again != first {
		t.Fatalf("an unchanged package was decoded again")
	}

	// Disabled after being cached: the state is read, not cached.
	if _, err := st.UpdatePackage(ctx, pkg.ID, store.PackageUpdate{OperationalState: model.Disabled}); err != nil {
		t.Fatal(err)
	}
	both(model.Disabled)
	if _, err := st.UpdatePackage(ctx, pkg.ID, store.PackageUpdate{OperationalState: model.Enabled}); err != nil {
		t.Fatal(err)
	}

	// The VNFD replaced under the same package id: the new one is served.
	changed := lcmtest.SamplePackage()
	changed.Vnfd.Flavours["other"] = &model.Flavour{ID: "other"}
	if err := st.PutPackage(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if v := both(model.Enabled); v.Flavours["other"] == nil || first.Flavours["other"] != nil {
		t.Fatalf("flavours after the VNFD changed: %v (cached copy modified: %v)", v.Flavours, first.Flavours["other"] != nil)
	}

	// Gone: not found, and an instance whose VNFD no package carries has none.
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_packages SET vnfd_id=NULL WHERE id=$1`, pkg.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PackageByVnfdID(ctx, lcmtest.VnfdID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PackageByVnfdID of a VNFD no package carries: %v", err)
	}
	if _, p, err := st.InstanceAndPackage(ctx, in.ID); err != nil || p != nil {
		t.Fatalf("InstanceAndPackage: package %v, %v", p, err)
	}
	if _, _, err := st.InstanceAndPackage(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("InstanceAndPackage of no instance: %v", err)
	}
}

// An instance read with an Opener is the stored instance opened: the same as
// encoding it, opening the document and decoding it again.
func TestOpenInstanceAndPackage(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	key, _ := secrets.ParseKey(secrets.NewKey())
	box, _ := secrets.NewBox(key)
	id := uuid.NewString()
	plain := &model.VnfInstance{ID: id, VnfdID: lcmtest.VnfdID, VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1",
		VimConnectionInfo: []model.VimConnectionInfo{{ID: "v", VimType: "x", AccessInfo: map[string]any{"username": "u", "password": "vim-pass-1"}}},
		Metadata:          map[string]any{"tier": "gold", "nested": map[string]any{"api_token": "tok-2", "list": []any{map[string]any{"secret": 3.5}}}}}
	b, _ := json.Marshal(plain)
	sealedJSON, err := box.SealJSON(b, store.InstancePlace(id))
	if err != nil {
		t.Fatal(err)
	}
	var sealed model.VnfInstance
	if err := json.Unmarshal(sealedJSON, &sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateInstance(ctx, &sealed); err != nil {
		t.Fatal(err)
	}

	got, err := st.OpenInstanceAndPackage(ctx, id, box.OpenJSON)
	if err != nil || got.Package == nil || got.Package.Vnfd == nil {
		t.Fatalf("read: %+v, %v", got, err)
	}
	stored, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(&stored.VnfInstance)
	opened, err := box.OpenJSON(b, store.InstancePlace(id))
	if err != nil {
		t.Fatal(err)
	}
	var want model.VnfInstance
	if err := json.Unmarshal(opened, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.VnfInstance, want) {
		t.Fatalf("opened while read:\n%+v\nopened after:\n%+v", got.VnfInstance, want)
	}
	if got.VimConnectionInfo[0].AccessInfo["password"] != "vim-pass-1" || got.Version != stored.Version {
		t.Fatalf("not opened: %+v", got.Instance)
	}
	var values []string
	for _, d := range got.Docs {
		values = append(values, secrets.ValuesJSON(d)...)
	}
	slices.Sort(values)
	if !slices.Equal(values, []string{"tok-2", "vim-pass-1"}) {
		t.Fatalf("secret values of the attributes: %v", values)
	}

	// Without an Opener, as stored; with the wrong key, an error.
	if r, err := st.OpenInstanceAndPackage(ctx, id, nil); err != nil || !secrets.IsSealed(fmt.Sprint(r.VimConnectionInfo[0].AccessInfo["password"])) {
		t.Fatalf("as stored: %+v, %v", r, err)
	}
	other, _ := secrets.ParseKey(secrets.NewKey())
	otherBox, _ := secrets.NewBox(other)
	if _, err := st.OpenInstanceAndPackage(ctx, id, otherBox.OpenJSON); err == nil {
		t.Fatal("opened with another key")
	}
}
