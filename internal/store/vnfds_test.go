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

// sealedInstance stores an instance of the sample package with secrets —
// a VIM password "vim-pass-1", a metadata token "tok-2" — sealed by box.
func sealedInstance(t *testing.T, st *store.Store) (id string, box *secrets.Box) {
	t.Helper()
	key, _ := secrets.ParseKey(secrets.NewKey())
	box, _ = secrets.NewBox(key)
	id = uuid.NewString()
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
	if _, err := st.CreateInstance(context.Background(), &sealed); err != nil {
		t.Fatal(err)
	}
	return id, box
}

// An instance read with an Opener is the stored instance opened: the same as
// encoding it, opening the document and decoding it again.
func TestOpenInstanceAndPackage(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	id, box := sealedInstance(t, st)

	got, err := st.OpenInstanceAndPackage(ctx, id, box.OpenJSON)
	if err != nil || got.Package == nil || got.Package.Vnfd == nil {
		t.Fatalf("read: %+v, %v", got, err)
	}
	stored, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&stored.VnfInstance)
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

// Reads for operations that arrive while one runs share the next round
// trip, and each caller gets what it would have read alone: its instance
// opened with its own Opener (two reads of one instance are two copies),
// the package, the last instantiation when asked, the subscriptions (an op
// created from the read is notified), and not found for no instance.
func TestConcurrentOpenForOpShareARoundTrip(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	if err := st.PutPackage(ctx, lcmtest.SamplePackage()); err != nil {
		t.Fatal(err)
	}
	subscribeAll(t, st)
	sealedID, box := sealedInstance(t, st)
	instantiated := newInstance(t, st, "done")
	n, _ := newOpFrom(t, st, instantiated)
	n.DriverParams = []byte(`{"d":{"a":1}}`)
	if _, err := st.CreateOpOcc(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_lcm_op_occs SET operation_state='COMPLETED' WHERE id=$1`, n.ID); err != nil {
		t.Fatal(err)
	}
	type read struct {
		id            string
		open          store.Opener
		instantiation bool
	}
	reads := []read{{sealedID, box.OpenJSON, true}, {sealedID, nil, false}, {instantiated, nil, true}, {instantiated, nil, false},
		{uuid.NewString(), nil, true}}
	type answer struct {
		r   *store.InstancePackage
		err error
	}
	var want []answer
	for _, r := range reads {
		got, err := st.OpenForOp(ctx, r.id, r.open, r.instantiation)
		want = append(want, answer{got, err})
	}

	g := newGate()
	store.SetReadHook(st, func(n int) { _ = g.hook(n) })
	lead := make(chan answer, 1)
	go func() {
		r, err := st.OpenForOp(ctx, instantiated, nil, false)
		lead <- answer{r, err}
	}()
	<-g.entered
	answers := make([]chan answer, len(reads))
	for i, r := range reads {
		answers[i] = make(chan answer, 1)
		go func() {
			got, err := st.OpenForOp(ctx, r.id, r.open, r.instantiation)
			answers[i] <- answer{got, err}
		}()
	}
	waitFor(t, func() int { return store.QueuedReads(st) }, len(reads))
	close(g.release)
	if a := <-lead; a.err != nil {
		t.Fatal(a.err)
	}
	var got []answer
	for _, ch := range answers {
		got = append(got, <-ch)
	}
	if b := g.batches(); len(b) != 2 || b[1] != len(reads) {
		t.Fatalf("batches %v, want [1 %d]", b, len(reads))
	}
	for i, w := range want {
		g := got[i]
		if w.err != nil || g.err != nil {
			if !errors.Is(w.err, store.ErrNotFound) || !errors.Is(g.err, store.ErrNotFound) {
				t.Fatalf("read %d: %v, alone %v; want not found both", i, g.err, w.err)
			}
			continue
		}
		if !reflect.DeepEqual(g.r.Instance, w.r.Instance) || !reflect.DeepEqual(g.r.Docs, w.r.Docs) ||
			!reflect.DeepEqual(g.r.Instantiation, w.r.Instantiation) || g.r.Package == nil ||
			g.r.Package.ID != w.r.Package.ID || g.r.Package.OperationalState != w.r.Package.OperationalState || g.r.Package.Vnfd == nil {
			t.Fatalf("read %d together:\n%+v\nalone:\n%+v", i, g.r, w.r)
		}
	}
	if p := got[0].r.VimConnectionInfo[0].AccessInfo["password"]; p != "vim-pass-1" {
		t.Fatalf("read with the opener: password %v", p)
	}
	if p := got[1].r.VimConnectionInfo[0].AccessInfo["password"]; !secrets.IsSealed(p.(string)) {
		t.Fatalf("read without an opener: password %v, want it sealed", p)
	}
	if got[2].r.Instantiation == nil || got[2].r.Instantiation.OpID != n.ID || got[3].r.Instantiation != nil {
		t.Fatalf("instantiation read %+v and, unasked, %+v", got[2].r.Instantiation, got[3].r.Instantiation)
	}
	store.SetReadHook(st, nil)
	// Created from the shared read: the subscription read with it is notified.
	term := store.NewOp{ID: uuid.NewString(), VnfInstanceID: instantiated, Operation: model.OpTerminate,
		OperationParams: []byte(`{}`), Verb: "terminated", From: got[3].r}
	if _, err := st.CreateOpOcc(ctx, term); err != nil || st.CreateFallbacks() != 0 {
		t.Fatalf("created from the shared read: %v (%d fallbacks)", err, st.CreateFallbacks())
	}
	if states := outboxStates(t, st, term.ID); len(states) != 1 || states[0] != model.StateStarting {
		t.Fatalf("notifications of the op created from the shared read: %v", states)
	}
}
