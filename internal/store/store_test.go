package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(ctx context.Context, url string) error { return store.MigrateUp(ctx, url) }))
}

func open(t *testing.T) *store.Store {
	t.Helper()
	return openAt(t, pgtest.NewDB(t))
}

// openAt opens another store (a process of its own) on the database at url.
func openAt(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func newInstance(t *testing.T, st *store.Store, name string) string {
	t.Helper()
	in, err := st.CreateInstance(context.Background(), &model.VnfInstance{ID: uuid.NewString(), VnfInstanceName: name,
		VnfdID: lcmtest.VnfdID, VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return in.ID
}

// Several replicas migrating a fresh database at once must all succeed:
// golang-migrate serialises them with an advisory lock.
func TestConcurrentMigrationsAndDownUp(t *testing.T) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := "mig_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)") })
	u := strings.Replace(pgtest.Cluster(), "/postgres?", "/"+name+"?", 1)
	if !strings.Contains(u, "/"+name) {
		t.Fatalf("cannot derive a database URL from %s", pgtest.Cluster())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Go(func() { errs <- store.MigrateUp(ctx, u) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate up: %v", err)
		}
	}
	cur, dirty, latest, err := store.MigrationVersion(ctx, u)
	if err != nil || dirty || cur != latest || latest == 0 {
		t.Fatalf("version %d dirty %v latest %d err %v", cur, dirty, latest, err)
	}
	if err := store.MigrateDown(ctx, u, 0); err != nil {
		t.Fatal(err)
	}
	if cur, _, _, _ := store.MigrationVersion(ctx, u); cur != 0 {
		t.Fatalf("after down: version %d", cur)
	}
	if err := store.MigrateUp(ctx, u); err != nil {
		t.Fatalf("up after down: %v", err)
	}
}

func TestClaimNeverHandsOutAnOpTwice(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	const n = 40
	for i := 0; i < n; i++ {
		id := newInstance(t, st, "i")
		if _, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: id, Operation: model.OpInstantiate,
			OperationParams: []byte(`{}`), Verb: "instantiated"}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for {
				op, err := st.Claim(ctx, uuid.NewString(), time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if op == nil {
					return
				}
				if op.OperationState != model.StateProcessing {
					t.Errorf("claimed op is %s", op.OperationState)
				}
				mu.Lock()
				seen[op.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d distinct ops, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("op %s claimed %d times", id, c)
		}
	}
}

func TestExpiredLeaseIsReclaimed(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	id := newInstance(t, st, "i")
	op, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: id, Operation: model.OpInstantiate, OperationParams: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := st.Claim(ctx, "a", time.Second); c == nil || c.ID != op.ID || c.Attempts != 1 {
		t.Fatalf("first claim: %+v", c)
	}
	if c, _ := st.Claim(ctx, "b", time.Second); c != nil {
		t.Fatal("claimed while leased")
	}
	if _, _, err := st.Heartbeat(ctx, op.ID, "a", time.Second); err != nil {
		t.Fatalf("heartbeat of the owner: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	c, err := st.Claim(ctx, "b", time.Second)
	if err != nil || c == nil || c.Attempts != 2 || c.LeaseOwner != "b" {
		t.Fatalf("reclaim: %v %+v", err, c)
	}
	if _, _, err := st.Heartbeat(ctx, op.ID, "a", time.Second); err != store.ErrLeaseLost {
		t.Fatalf("old owner heartbeat: %v", err)
	}
}

func TestListPagingAndFilterUsesColumns(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		newInstance(t, st, []string{"a", "b", "c", "d", "e"}[i])
	}
	f, err := sol013.ParseFilter("(in,vnfInstanceName,b,d,e)")
	if err != nil {
		t.Fatal(err)
	}
	fields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{"vnfInstanceName": {Kind: sol013.KindString}}}
	var names []string
	after := int64(0)
	for page := 0; page < 5; page++ {
		rows, more, err := st.ListInstances(ctx, store.Page{Filter: f, Fields: fields, After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			names = append(names, r.VnfInstanceName)
			after = r.Seq
		}
		if !more {
			break
		}
	}
	if strings.Join(names, ",") != "b,d,e" {
		t.Fatalf("filtered pages: %v", names)
	}
}

func TestMigrationsAcceptPoolParameters(t *testing.T) {
	u := pgtest.NewDB(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	u += sep + "pool_max_conns=7"
	if err := store.MigrateUp(context.Background(), u); err != nil {
		t.Fatalf("migrate with pool_max_conns: %v", err)
	}
	st, err := store.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.Pool().Config().MaxConns; got != 7 {
		t.Fatalf("MaxConns %d, want the URL's 7", got)
	}
}

// Filters inside metadata go through the metadata column and its GIN index
// as well as the view's document: the listed pages are what Match says of
// each instance's document, for hostile keys and values too, page after page.
func TestListFilterOnMetadataColumn(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	metas := []map[string]any{
		{"tier": "gold"}, {"tier": []any{"silver", "gold"}}, {"tier": nil, "x": "gold"}, {"tier": "GOLD"}, {"tier": map[string]any{"tier": "gold"}},
		{`a"b`: "x)y'", `$.*`: "gold"}, {"tier": 1}, {"tier": "1"}, {"tier": true}, {"tier": "true"}, {}, nil,
		{"tier": "gold", "n": nil}, {"tier": "gö'ld \\ \"q\""}, {"tier": []any{[]any{"gold"}}},
	}
	var docs []map[string]any
	for i, md := range metas {
		in, err := st.CreateInstance(ctx, &model.VnfInstance{ID: uuid.NewString(), VnfInstanceName: fmt.Sprint("m", i), VnfdID: lcmtest.VnfdID,
			VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1", Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(in.VnfInstance)
		var d map[string]any
		_ = json.Unmarshal(b, &d)
		docs = append(docs, d)
	}
	fields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"vnfInstanceName": {Kind: sol013.KindString}, "metadata": {Kind: sol013.KindAny}}}
	for _, expr := range []string{
		"(eq,metadata/tier,gold)", "(in,metadata/tier,gold,GOLD)", "(eq,metadata/tier,1)", "(eq,metadata/tier,true)",
		"(eq,metadata/tier/tier,gold)", `(eq,metadata/a"b,'x)y''')`, "(eq,metadata/$.*,gold)", "(neq,metadata/tier,gold)",
		"(nin,metadata/tier,gold,1)", `(eq,metadata/tier,'gö''ld \ "q"')`, "(eq,metadata/x,gold)", "(eq,metadata,gold)",
		"(in,metadata/tier,gold);(eq,vnfInstanceName,m1)",
	} {
		f, err := sol013.ParseFilter(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var want, got []string
		for _, d := range docs {
			if f.Match(d) {
				want = append(want, d["vnfInstanceName"].(string))
			}
		}
		after := int64(0)
		for {
			rows, more, err := st.ListInstances(ctx, store.Page{Filter: f, Fields: fields, After: after, Limit: 2})
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			for _, r := range rows {
				got = append(got, r.VnfInstanceName)
				after = r.Seq
			}
			if !more {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: listed %v, Match says %v", expr, got, want)
		}
	}
	// Omitted attributes are not read; the others are.
	rows, _, err := st.ListInstances(ctx, store.Page{Limit: 1, Omit: []string{"vimConnectionInfo", "metadata", "vnfConfigurableProperties"}})
	if err != nil || len(rows) != 1 || rows[0].Metadata != nil || rows[0].VnfInstanceName != "m0" {
		t.Fatalf("page without metadata: %v %+v", err, rows)
	}
	if rows, _, err := st.ListInstances(ctx, store.Page{Limit: 1, Omit: []string{"extensions"}}); err != nil || rows[0].Metadata["tier"] != "gold" {
		t.Fatalf("page with metadata: %v %+v", err, rows)
	}
}
