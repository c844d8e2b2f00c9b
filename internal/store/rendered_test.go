package store_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// The rendered document GET serves is, at every moment, what rendering the
// instance as it reads back gives: after create, after the engine's update,
// after an update that did not render (a key rotation), and after a build
// with other rules rendered it. Secrets are masked in it, never sealed or
// plain.
func TestRenderedInstanceDocFollowsEveryChange(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	b := box(t, secrets.NewKey())
	id := uuid.NewString()
	at := store.InstancePlace(id)
	seal := func(v any, p secrets.Place) any {
		out, err := b.SealDoc(v, p)
		if err != nil {
			t.Fatal(err)
		}
		return anyOf(t, out)
	}
	md := seal(map[string]any{"api_token": "tok-md", "tier": "gold", "n": 1.5, "big": 12345678901234}, at.Key("metadata")).(map[string]any)
	if _, err := st.CreateInstance(ctx, &model.VnfInstance{ID: id, VnfInstanceName: "r", VnfdID: lcmtest.VnfdID, VnfProvider: "p",
		VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1", Metadata: md,
		VnfConfigurableProperties: map[string]any{}}); err != nil {
		t.Fatal(err)
	}

	// check: GetInstanceDoc serves what rendering the stored row gives, and
	// that document is the one stored for this version by this build.
	check := func(step string, wantVersion int64, want ...string) {
		t.Helper()
		d, err := st.GetInstanceDoc(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		in, err := st.GetInstance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := store.RenderInstance(&in.VnfInstance)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.Doc, fresh) {
			t.Fatalf("%s: served\n%s\nrendering the row gives\n%s", step, d.Doc, fresh)
		}
		if d.Version != wantVersion || in.Version != wantVersion || d.InstantiationState != in.InstantiationState || !d.UpdatedAt.Equal(in.UpdatedAt) {
			t.Fatalf("%s: doc version %d state %s updated %v; row %d %s %v; want version %d", step, d.Version, d.InstantiationState, d.UpdatedAt,
				in.Version, in.InstantiationState, in.UpdatedAt, wantVersion)
		}
		for _, bad := range []string{"enc:v", "tok-md", "pw-vim"} {
			if strings.Contains(string(d.Doc), bad) {
				t.Fatalf("%s: served document holds %q: %s", step, bad, d.Doc)
			}
		}
		for _, w := range append(want, `"api_token":"******"`) {
			if !strings.Contains(string(d.Doc), w) {
				t.Fatalf("%s: served document lacks %s: %s", step, w, d.Doc)
			}
		}
		var stored []byte
		var ver int64
		var rev string
		if err := st.Pool().QueryRow(ctx, `SELECT rendered_doc, rendered_version, rendered_rev FROM vnf_instances WHERE id=$1`, id).Scan(&stored, &ver, &rev); err != nil {
			t.Fatalf("%s: no rendered document kept: %v", step, err)
		}
		if !bytes.Equal(stored, fresh) || ver != wantVersion || rev != store.RenderRev() {
			t.Fatalf("%s: kept version %d rev %s: %s", step, ver, rev, stored)
		}
	}
	check("created", 1, `"tier":"gold"`, `"n":1.5`, `"big":12345678901234`)

	// The engine's update renders the document in its transaction.
	op, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: id, Operation: model.OpInstantiate, OperationParams: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	owner := uuid.NewString()
	if c, err := st.Claim(ctx, owner, time.Minute); err != nil || c == nil || c.ID != op.ID {
		t.Fatalf("claim: %v %v", c, err)
	}
	in, err := st.GetInstance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	in.InstantiationState = model.Instantiated
	in.InstantiatedVnfInfo = &model.InstantiatedVnfInfo{FlavourID: "simple", VnfState: "STARTED"}
	in.VimConnectionInfo = []model.VimConnectionInfo{{ID: "vim", VimType: "openstack",
		AccessInfo: seal(map[string]any{"username": "u", "password": "pw-vim"}, at.Key("vimConnectionInfo").Elem().Key("accessInfo")).(map[string]any)}}
	if _, err := st.FinishOp(ctx, op.ID, owner, store.Finish{State: model.StateCompleted, Instance: &in.VnfInstance}); err != nil {
		t.Fatal(err)
	}
	var ver int64
	if err := st.Pool().QueryRow(ctx, `SELECT rendered_version FROM vnf_instances WHERE id=$1`, id).Scan(&ver); err != nil || ver != 2 {
		t.Fatalf("the engine's update did not render the document: version %d %v", ver, err)
	}
	check("instantiated", 2, `"vnfState":"STARTED"`, `"password":"******"`, `"instantiationState":"INSTANTIATED"`)

	// An update that does not render (as a key rotation's) drops the document.
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET metadata = metadata || '{"tier":"bronze"}' WHERE id=$1`, id); err != nil {
		t.Fatal(err)
	}
	var gone bool
	if err := st.Pool().QueryRow(ctx, `SELECT rendered_doc IS NULL FROM vnf_instances WHERE id=$1`, id).Scan(&gone); err != nil || !gone {
		t.Fatalf("an update without rendering kept the rendered document (%v)", err)
	}
	check("updated without rendering", 2, `"tier":"bronze"`)

	// A document another build rendered (other masking rules) is not served.
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET rendered_doc='{"metadata":{"api_token":"tok-md"}}', rendered_rev='another build' WHERE id=$1`, id); err != nil {
		t.Fatal(err)
	}
	check("rendered by another build", 2, `"tier":"bronze"`)

	if _, err := st.GetInstanceDoc(ctx, uuid.NewString()); err != store.ErrNotFound {
		t.Fatalf("unknown instance: %v", err)
	}
}

// GET's read decodes the row itself over the protocol (a prepared statement,
// binary columns); it reads what pgx's query path reads, which serves a
// database URL that asks for no prepared statements.
func TestInstanceDocReadPaths(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDB(t)
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	plain, err := store.Open(ctx, urlWith(url, "default_query_exec_mode=exec"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	id := newInstance(t, st, "paths")
	if _, err := st.Pool().Exec(ctx, `UPDATE vnf_instances SET updated_at = '2031-02-03 04:05:06.789012+00' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var want *store.InstanceDoc
	for i, tc := range []struct {
		name string
		st   *store.Store
		id   string
	}{
		{"prepared, rendering the changed row", st, id},
		{"prepared", st, id},
		{"prepared, upper-case id", st, strings.ToUpper(id)},
		{"pgx query path", plain, id},
		{"pgx query path, upper-case id", plain, strings.ToUpper(id)},
	} {
		d, err := tc.st.GetInstanceDoc(ctx, tc.id)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if i == 0 {
			want = d
			if d.ID != id || d.InstantiationState != model.NotInstantiated || d.Version != 1 ||
				!d.UpdatedAt.Equal(time.Date(2031, 2, 3, 4, 5, 6, 789012000, time.UTC)) || !strings.Contains(string(d.Doc), `"id":"`+id+`"`) {
				t.Fatalf("%s: read %s %s version %d updated %v: %s", tc.name, d.ID, d.InstantiationState, d.Version, d.UpdatedAt, d.Doc)
			}
			continue
		}
		if d.ID != want.ID || d.InstantiationState != want.InstantiationState || d.Version != want.Version ||
			!d.UpdatedAt.Equal(want.UpdatedAt) || !bytes.Equal(d.Doc, want.Doc) {
			t.Errorf("%s: read %s %s %d %v %s, want %s %s %d %v %s", tc.name, d.ID, d.InstantiationState, d.Version, d.UpdatedAt, d.Doc,
				want.ID, want.InstantiationState, want.Version, want.UpdatedAt, want.Doc)
		}
	}
	for _, s := range []*store.Store{st, plain} {
		for _, missing := range []string{uuid.NewString(), "not-a-uuid", ""} {
			if _, err := s.GetInstanceDoc(ctx, missing); err != store.ErrNotFound {
				t.Errorf("GetInstanceDoc(%q): %v, want ErrNotFound", missing, err)
			}
		}
	}
}

// A session that lost GET's prepared statement, or whose statement a schema
// change made stale, still reads, and prepares it again.
func TestInstanceDocStatementRecovers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDB(t)
	st, err := store.Open(ctx, urlWith(url, "pool_max_conns=1"), nil) // one session: the statements below reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	id, id2 := newInstance(t, st, "recovers"), newInstance(t, st, "recovers too")
	check := func(step string, d *store.InstanceDoc, err error, id string) {
		t.Helper()
		if err != nil || d.ID != id || d.InstantiationState != model.NotInstantiated || !strings.Contains(string(d.Doc), `"id":"`+id+`"`) {
			t.Fatalf("%s: %+v, %v", step, d, err)
		}
	}
	read := func(step string) {
		t.Helper()
		for range 2 {
			d, err := st.GetInstanceDoc(ctx, id)
			check(step, d, err, id)
			// and a batch of reads (getDocsStmt)
			got := readBatched(t, st, id, []string{id2, id})
			check(step+", batched", got[0].d, got[0].err, id2)
			check(step+", batched", got[1].d, got[1].err, id)
		}
	}
	read("prepared")
	if _, err := st.Pool().Exec(ctx, `DEALLOCATE vnfm_get_instance_doc; DEALLOCATE vnfm_get_instance_docs`); err != nil {
		t.Fatal(err)
	}
	read("after the statement was deallocated")
	if _, err := st.Pool().Exec(ctx, `ALTER TABLE vnf_instances ALTER COLUMN rendered_doc TYPE text USING convert_from(rendered_doc, 'UTF8')`); err != nil {
		t.Fatal(err)
	}
	read("after its result type changed")
}
