package sol013

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// testColumns are the plain columns of the test table (see createDocs).
var testColumns = SQLColumns{
	"id":                            "id",
	"vnfInstanceName":               "name",
	"instantiationState":            "state",
	"size":                          "size",
	"enabled":                       "enabled",
	"instantiatedVnfInfo/flavourId": "flavour",
	"createdAt":                     "created",
}

func TestSQLText(t *testing.T) {
	root := testRoot(t)
	tests := []struct {
		filter string
		where  string
		args   []any
	}{
		{"(eq,instantiationState,INSTANTIATED)", `(state) = $3::text`, []any{"INSTANTIATED"}},
		{"(neq,instantiationState,X)", `NOT COALESCE((state) = $3::text, false)`, []any{"X"}},
		{"(in,size,1,2)", `(size) IN ($3::text::bigint, $4::text::bigint)`, []any{"1", "2"}},
		{"(gt,vnfInstanceName,m)", `(name) > $3::text COLLATE "C"`, []any{"m"}},
		{"(ncont,vnfInstanceName,a,b)", `NOT COALESCE((strpos((name), $3::text) > 0 OR strpos((name), $4::text) > 0), false)`, []any{"a", "b"}},
		{"(in,size,1e1,-0,-9223372036854775808)", `(size) IN ($3::text::bigint, $4::text::bigint, $5::text::bigint)`, []any{"10", "0", "-9223372036854775808"}},
		{"(gte,size,1.5)", `(size) >= $3::text::numeric`, []any{"1.5"}},
		{"(lt,size,9223372036854775808)", `(size) < $3::text::numeric`, []any{"9223372036854775808"}},
		{"(in,size,1,2.5)", `(size) IN ($3::text::numeric, $4::text::numeric)`, []any{"1", "2.5"}},
		{"(eq,enabled,true)", `(enabled) = $3::text::boolean`, []any{"true"}},
		{"(eq,metadata/a\"b,1)",
			`jsonb_path_exists(doc, $3::text::jsonpath, $4::text::jsonb)`,
			[]any{`$."metadata"."a\"b" ? (@ == $s0 || @ == $n0)`, `{"n0":1,"s0":"1"}`}},
		{"(in,tags,true,x)",
			`jsonb_path_exists(doc, $3::text::jsonpath, $4::text::jsonb)`,
			[]any{`$."tags" ? (@ == $s0 || @ == $b0 || @ == $s1)`, `{"b0":true,"s0":"true","s1":"x"}`}},
		{"(lte,tags,2024-01-15T10:00:00.5+01:00)",
			`jsonb_path_exists(doc, $3::text::jsonpath, $4::text::jsonb)`,
			[]any{`$."tags" ? (@ <= $s0)`, `{"s0":"2024-01-15T10:00:00.5+01:00"}`}},
		{"(gt,updatedAt,2024-01-15T10:00:00.5+01:00)",
			`EXISTS (SELECT 1 FROM jsonb_path_query(doc, $3::text::jsonpath) AS sol013(sol013_v) WHERE CASE WHEN jsonb_typeof(sol013_v) = 'string' AND (sol013_v #>> '{}') ~ $4::text THEN (sol013_v #>> '{}')::timestamptz END > $5::text::timestamptz)`,
			[]any{`$."updatedAt"[*][*]`, instantPattern, "2024-01-15T09:00:00.500000Z"}},
		{"(in,createdAt,2024-01-15T10:00:00Z,2024-01-15T10:00:00.1234567+00:00)",
			`(created) IN ($3::text::timestamptz, $4::text::timestamptz)`,
			[]any{"2024-01-15T10:00:00.000000Z", "2024-01-15T10:00:00.123457Z"}},
		{"(cont,metadata/owner,x)",
			`EXISTS (SELECT 1 FROM jsonb_path_query(doc, $3::text::jsonpath) AS sol013(sol013_v) WHERE jsonb_typeof(sol013_v) = 'string' AND (strpos(sol013_v #>> '{}', $4::text) > 0))`,
			[]any{`$."metadata"."owner"[*][*]`, "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			f, err := ParseFilter(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			where, args, err := f.SQL("doc", testColumns, root, 2)
			if err != nil {
				t.Fatal(err)
			}
			if where != tt.where {
				t.Errorf("where\n got %s\nwant %s", where, tt.where)
			}
			if fmt.Sprint(args) != fmt.Sprint(tt.args) {
				t.Errorf("args\n got %q\nwant %q", args, tt.args)
			}
		})
	}
}

func TestSQLValuesNeverInText(t *testing.T) {
	evil := `x'); DROP TABLE t; --`
	f := &Filter{Terms: []Term{
		{Op: OpEq, Path: []string{"vnfInstanceName"}, Values: []string{evil}},
		{Op: OpCont, Path: []string{"metadata", `k" || true || "`}, Values: []string{evil}},
		{Op: OpIn, Path: []string{"metadata", "k"}, Values: []string{evil, `$"\`}},
	}}
	where, args, err := f.SQL("doc", testColumns, testRoot(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"DROP", "'x", "|| true", `$"`} {
		if strings.Contains(where, bad) {
			t.Errorf("SQL text contains %q: %s", bad, where)
		}
	}
	if len(args) != 5 || !strings.Contains(args[1].(string), `"k\" || true || \""`) {
		t.Errorf("unexpected args %q", args)
	}
}

func TestSQLErrors(t *testing.T) {
	root := testRoot(t)
	f, _ := ParseFilter("(gt,enabled,true)")
	if _, _, err := f.SQL("doc", nil, root, 0); !errors.As(err, new(*ValidationError)) {
		t.Errorf("invalid filter: got %v, want *ValidationError", err)
	}
	f, _ = ParseFilter("(eq,vimConnectionInfo/vimType,x)")
	if _, _, err := f.SQL("doc", SQLColumns{"vimConnectionInfo/vimType": "vt"}, root, 0); err == nil || errors.As(err, new(*ValidationError)) {
		t.Errorf("mapping inside an array: got %v, want a plain error", err)
	}
	f, _ = ParseFilter("(eq,metadata/x,1)")
	if _, _, err := f.SQL("doc", SQLColumns{"metadata/x": "mx"}, root, 0); err == nil {
		t.Error("mapping of a free-form attribute accepted")
	}
	var nf *Filter
	if where, args, err := nf.SQL("doc", nil, root, 0); where != "TRUE" || args != nil || err != nil {
		t.Errorf("nil filter: %q %v %v", where, args, err)
	}
}

// sqlDocs are stored in PostgreSQL and matched in memory. They conform to
// the schema for the mapped attributes (the SQLColumns contract) and
// deliberately violate it elsewhere.
var sqlDocs = []string{
	`{"id":"d01","vnfInstanceName":"alpha","instantiationState":"INSTANTIATED","size":10,"ratio":0.5,"enabled":true,"createdAt":"2024-01-15T10:00:00Z","tags":["a","b"],"scores":[1,2,3],
	  "vimConnectionInfo":[{"id":"v1","vimType":"OPENSTACK","accessInfo":{"region":"RegionOne"}}],
	  "instantiatedVnfInfo":{"flavourId":"simple","vnfState":"STARTED","scaleStatus":[{"aspectId":"worker","scaleLevel":2}],"vnfcResourceInfo":[{"id":"c1","vduId":"VDU1","computeResource":{"resourceId":"r1"}}]},
	  "metadata":{"owner":"alice","tier":"gold"},"_links":{"self":{"href":"/a/d01"}}}`,
	`{"id":"d02","vnfInstanceName":"beta","instantiationState":"NOT_INSTANTIATED","size":3,"enabled":false,"createdAt":"2024-02-01T00:00:00Z","tags":[],"metadata":{}}`,
	`{"id":"d03","vnfInstanceName":"O'Brien, Jr. (test); x","instantiationState":"INSTANTIATED","size":-5,"ratio":1.50,"createdAt":"2023-12-31T23:59:59.999Z","metadata":{"owner":"a,b","quote":"it's","paren":"x)y"}}`,
	`{"id":"d04","vnfInstanceName":"日本語のVNF","size":0,"ratio":-0,"enabled":true,"metadata":{"ünï":"ça","emoji":"🚀 launch"}}`,
	`{"id":"d05","vnfInstanceName":null,"instantiationState":"INSTANTIATED","size":null,"enabled":null,"metadata":{"owner":null}}`,
	`{"id":"d06"}`,
	`{"id":"d07","vnfInstanceName":"Alpha","size":1000,"ratio":"high","vnfdVersion":2,"tags":[1,"1","a",true,null,["b",["c"]]],"metadata":{"owner":"bob","n":10,"flag":true}}`,
	`{"id":"d08","vnfInstanceName":"alpha2","size":9,"ratio":12345678901234567890,"tags":"a","metadata":{"owner":"bob","n":"10","flag":"true"}}`,
	`{"id":"d09","vnfInstanceName":"","size":1,"vimConnectionInfo":[{"id":"v1","vimType":"OPENSTACK"},{"id":"v2","vimType":"KUBERNETES","accessInfo":{"region":"RegionTwo","ns":"default"}}],"metadata":{"owner":""}}`,
	`{"id":"d10","vnfInstanceName":"gamma","size":42,"vimConnectionInfo":[],
	  "instantiatedVnfInfo":{"flavourId":"complex","vnfState":"STOPPED","scaleStatus":[{"aspectId":"worker","scaleLevel":0},{"aspectId":"db","scaleLevel":5}],"vnfcResourceInfo":[{"id":"c1","vduId":"VDU1"},{"id":"c2","vduId":"VDU2","computeResource":{"resourceId":"r2"}}]}}`,
	`{"id":"d11","vnfInstanceName":"delta \"quoted\"","size":7,"ratio":0.1000000000000000000001,"metadata":{"a\"b":"dq-key","back\\slash":"bs-key","sp ace":"space-key","dot.key":"dot","$dollar":"dollar","@key":"at"}}`,
	`{"id":"d12","vnfInstanceName":"epsilon","size":100,"createdAt":"2024-01-15T10:00:00+01:00","metadata":{"matrix":[[1,2],[3]],"deep":[[["x"]]],"objs":[{"k":"v1"},{"k":"v2"}],"nested":{"level":{"leaf":"L"}}}}`,
	`{"id":"d13","vnfInstanceName":"zeta","size":5,"vimConnectionInfo":{"id":"notarray","vimType":"OPENSTACK"}}`,
	`{"id":"d14","vnfInstanceName":"eta","size":15,"scores":[1.5,"2",null,{"x":1}],"metadata":{"list":["x","y"],"num":3.14}}`,
	`{"id":"d15","vnfInstanceName":"theta","instantiationState":"INSTANTIATED","size":2,"enabled":true,"instantiatedVnfInfo":{"flavourId":"simple","vnfState":"STARTED"},"extensions":{"x":{"y":"z"}}}`,
	`{"id":"d16","vnfInstanceName":"iota","size":-1,"ratio":1e2,"tags":["UPPER","lower","MiXeD"]}`,
	`{"id":"d17","vnfInstanceName":"kappa","size":11,"createdAt":"2024-03-01","tags":["a,b","c)d","e'f"]}`,
	`{"id":"d18","vnfInstanceName":"lambda","size":12,"metadata":{"owner":"ALICE","tier":"silver"},"enabled":false}`,
	`{"id":"d19","vnfInstanceName":"mu","size":13,"metadata":{"owner":"alice smith"}}`,
	`{"id":"d20","vnfInstanceName":"nu","size":14,"instantiatedVnfInfo":{"flavourId":"simple","vnfcResourceInfo":[{"id":"c9","vduId":"VDU1","computeResource":{"resourceId":"r9"}}]}}`,
	`{"id":"d21","vnfInstanceName":"xi","size":8,"vimConnectionInfo":[{"id":"v3","vimType":"openstack"},{"id":"v4"}]}`,
	`{"id":"d22","vnfInstanceName":"omicron","size":9223372036854775807,"ratio":-1.5e-10}`,
	`{"id":"d23","vnfInstanceName":"pi","size":6,"metadata":{"owner":["alice","bob"],"n":[1,20]}}`,
	`{"id":"d24","vnfInstanceName":"rho\\back","size":4,"metadata":{"owner":{"name":"alice"}}}`,
	`{"id":"d25","vnfInstanceName":"sigma","size":16,"createdAt":"2025-06-30T12:00:00Z","metadata":{"tier":"gold","line\nbreak":"nl-key","tab":"a\tb"}}`,
	`{"id":"d26","vnfInstanceName":"tau","size":17,"instantiatedVnfInfo":{"vnfState":"STARTED"}}`,
	`{"id":"d27","vnfInstanceName":"upsilon","size":18,"instantiatedVnfInfo":{"flavourId":null}}`,
	`{"id":"d28","vnfInstanceName":"phi","size":19,"enabled":true,"tags":["a"],"metadata":{"owner":"alice","tier":"gold","n":10.0}}`,
	`{"id":"d29","vnfInstanceName":"chi","size":20,"metadata":{"n":-10,"owner":"carol"}}`,
	`{"id":"d30","vnfInstanceName":"psi","size":21,"metadata":{"n":1e1,"owner":"Ça"}}`,
	`{"id":"d31","vnfInstanceName":"omega","size":22,"vimConnectionInfo":[{"vimType":["OPENSTACK","K8S"]}]}`,
	`{"id":"d32","vnfInstanceName":"six digits","createdAt":"2024-01-15T10:00:00.000000Z","updatedAt":["2024-01-15T10:00:00.100000Z","not a time"]}`,
	`{"id":"d33","vnfInstanceName":"go rendering","createdAt":"2024-01-15T09:00:00Z","updatedAt":["2024-01-15T10:00:00.1Z"]}`,
	`{"id":"d34","vnfInstanceName":"other offset","createdAt":"2024-01-15T05:00:00.5-05:00","updatedAt":"2024-05-01T00:00:00+02:00"}`,
	`{"id":"d35","vnfInstanceName":"not a time","createdAt":"yesterday","updatedAt":[7, "2024-13-45"]}`,
}

// sqlFilters is the hand-written table for TestSQLMatchesPostgres. Filters
// that do not validate against the schema are only run without it.
var sqlFilters = []string{
	"(eq,id,d01)", "(neq,id,d01)", "(in,id,d01,d03,d99)", "(nin,id,d01,d03)",
	"(eq,vnfInstanceName,alpha)", "(neq,vnfInstanceName,alpha)", "(cont,vnfInstanceName,lph)", "(ncont,vnfInstanceName,a)",
	"(eq,vnfInstanceName,'O''Brien, Jr. (test); x')", "(cont,vnfInstanceName,'''')", "(cont,vnfInstanceName,'')", "(eq,vnfInstanceName,'')",
	"(gt,vnfInstanceName,alpha)", "(lte,vnfInstanceName,Alpha)", "(cont,vnfInstanceName,日本)", `(eq,vnfInstanceName,delta "quoted")`,
	`(cont,vnfInstanceName,\)`, "(gt,vnfInstanceName,10)",
	"(eq,instantiationState,INSTANTIATED)", "(neq,instantiationState,INSTANTIATED)", "(in,instantiationState,INSTANTIATED,NOT_INSTANTIATED)",
	"(eq,size,10)", "(gt,size,10)", "(gte,size,1e1)", "(lt,size,0)", "(lte,size,-1)", "(in,size,1,2,3.0,42)", "(nin,size,1,2,3)",
	"(neq,size,0)", "(gt,size,9223372036854775806)", "(gt,size,1.5)", "(in,size,1e1,-0,-5)", "(lt,size,9223372036854775808)",
	"(nin,size,-1,1.5)",
	"(eq,enabled,true)", "(neq,enabled,true)", "(in,enabled,true,false)", "(nin,enabled,false)",
	"(eq,ratio,1.5)", "(gt,ratio,0.1)", "(lt,ratio,0)", "(eq,ratio,12345678901234567890)", "(eq,ratio,high)", "(gt,ratio,a)",
	"(gte,createdAt,2024-01-15T10:00:00Z)", "(lt,createdAt,2024-02)", "(lt,createdAt,2024-01-15T10:00:00+01:00)",
	"(eq,createdAt,2024-01-15T10:00:00Z)", "(eq,createdAt,2024-01-15T10:00:00.000000Z)", "(eq,createdAt,2024-01-15T11:00:00+01:00)",
	"(neq,createdAt,2024-01-15T09:00:00Z)", "(in,createdAt,2024-01-15T09:00:00.000Z,2025-06-30T12:00:00Z)",
	"(nin,createdAt,2024-01-15T10:00:00Z)", "(gt,createdAt,2023-12-31T23:59:59.998Z)", "(lte,createdAt,2023-12-31T23:59:59.999000Z)",
	"(eq,updatedAt,2024-01-15T10:00:00.1Z)", "(eq,updatedAt,2024-01-15T10:00:00.100000Z)", "(lt,updatedAt,2024-06-01T00:00:00Z)",
	"(gte,updatedAt,2024-01-15T10:00:00.1+00:00)", "(neq,updatedAt,2024-01-15T10:00:00.1Z)",
	"(eq,tags,a)", "(neq,tags,a)", "(cont,tags,b)", "(ncont,tags,a)", "(eq,tags,true)", "(eq,tags,1)", "(eq,tags,b)", "(eq,tags,c)",
	"(eq,tags,'a,b')", "(cont,tags,')')",
	"(gt,scores,1.5)", "(eq,scores,2)", "(lt,scores,'2')",
	"(eq,vimConnectionInfo/vimType,OPENSTACK)", "(neq,vimConnectionInfo/vimType,OPENSTACK)", "(cont,vimConnectionInfo/vimType,K)",
	"(eq,vimConnectionInfo/vimType,K8S)", "(eq,vimConnectionInfo/accessInfo/region,RegionTwo)", "(nin,vimConnectionInfo/id,v1)",
	"(eq,instantiatedVnfInfo/flavourId,simple)", "(neq,instantiatedVnfInfo/flavourId,simple)", "(cont,instantiatedVnfInfo/flavourId,mpl)",
	"(gt,instantiatedVnfInfo/flavourId,complex)", "(ncont,instantiatedVnfInfo/flavourId,x)",
	"(eq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU2)", "(eq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,r1)",
	"(neq,instantiatedVnfInfo/vnfcResourceInfo/computeResource/resourceId,r1)", "(gte,instantiatedVnfInfo/scaleStatus/scaleLevel,5)",
	"(eq,instantiatedVnfInfo/scaleStatus/aspectId,db)",
	"(eq,metadata/owner,alice)", "(in,metadata/owner,alice,bob)", "(nin,metadata/owner,alice,bob)", "(cont,metadata/owner,'a,b')",
	"(eq,metadata/owner,'')", "(ncont,metadata/owner,alice)", "(cont,metadata/owner,Ç)", "(eq,metadata/owner/name,alice)",
	"(eq,metadata/n,10)", "(gt,metadata/n,5)", "(lt,metadata/n,abc)", "(eq,metadata/flag,true)", "(neq,metadata/flag,true)",
	"(eq,metadata/quote,'it''s')", "(eq,metadata/paren,'x)y')", "(eq,metadata/ünï,ça)", "(cont,metadata/emoji,🚀)",
	`(eq,metadata/a"b,dq-key)`, `(eq,metadata/back\slash,bs-key)`, "(eq,metadata/sp ace,space-key)", "(eq,metadata/dot.key,dot)",
	"(eq,metadata/$dollar,dollar)", "(eq,metadata/@key,at)", "(eq,metadata/matrix,3)", "(eq,metadata/deep,x)", "(cont,metadata/deep,x)",
	"(eq,metadata/objs/k,v2)", "(eq,metadata/nested/level/leaf,L)", "(neq,metadata/nested/level/leaf,L)", "(eq,metadata/list,y)",
	"(eq,metadata/tab,'a\tb')", "(gt,metadata/num,3.1)",
	"(eq,extensions/x/y,z)", "(eq,_links/self/href,/a/d01)", "(eq,vnfdVersion,2)",
	"(eq,instantiationState,INSTANTIATED);(gt,size,0);(neq,metadata/owner,bob)",
	"(in,vimConnectionInfo/vimType,K8S,KUBERNETES);(cont,vimConnectionInfo/accessInfo/ns,def)",
	"(nin,enabled,true);(ncont,vnfInstanceName,a);(lt,size,100)",
}

func createDocs(t *testing.T, conn *pgx.Conn) []map[string]any {
	t.Helper()
	ctx := context.Background()
	var enc string
	if err := conn.QueryRow(ctx, "SHOW server_encoding").Scan(&enc); err != nil {
		t.Fatal(err)
	}
	if enc != "UTF8" {
		t.Fatalf("server_encoding is %s; jsonpath compares strings byte-wise only in UTF8 databases", enc)
	}
	// Generated columns keep the mapped columns in step with the document:
	// the value when it has the schema's JSON type, NULL otherwise.
	_, err := conn.Exec(ctx, `
		CREATE TEMP TABLE sol013_docs (
			id text PRIMARY KEY,
			doc jsonb NOT NULL,
			name text GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc->'vnfInstanceName') = 'string' THEN doc->>'vnfInstanceName' END) STORED,
			state text GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc->'instantiationState') = 'string' THEN doc->>'instantiationState' END) STORED,
			size bigint GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc->'size') = 'number' THEN (doc->>'size')::bigint END) STORED,
			enabled boolean GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc->'enabled') = 'boolean' THEN (doc->'enabled')::boolean END) STORED,
			flavour text GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(doc->'instantiatedVnfInfo'->'flavourId') = 'string' THEN doc->'instantiatedVnfInfo'->>'flavourId' END) STORED,
			created timestamptz,
			md jsonb GENERATED ALWAYS AS (doc->'metadata') STORED,
			ext jsonb GENERATED ALWAYS AS (doc->'extensions') STORED,
			tg jsonb GENERATED ALWAYS AS (doc->'tags') STORED
		);
		CREATE INDEX ON sol013_docs USING gin (md jsonb_path_ops)`)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	for _, s := range sqlDocs {
		d := decodeDoc(t, s, true)
		if _, err := conn.Exec(ctx, "INSERT INTO sol013_docs (id, doc) VALUES ($1, $2::text::jsonb)", d["id"], s); err != nil {
			t.Fatalf("insert %s: %v", s, err)
		}
		docs = append(docs, d)
	}
	// A timestamptz column cannot be generated (the cast is not
	// immutable): fill it from the document's date-times.
	if _, err := conn.Exec(ctx, `UPDATE sol013_docs SET created = (doc->>'createdAt')::timestamptz
		WHERE jsonb_typeof(doc->'createdAt') = 'string' AND doc->>'createdAt' ~ $1`, instantPattern); err != nil {
		t.Fatal(err)
	}
	return docs
}

// testJSONColumns are the jsonb columns of the test table (createDocs).
var testJSONColumns = JSONColumns{"metadata": "md", "extensions": "ext", "tags": "tg"}

// compareSQL runs f through SQL and Match and reports any difference; then
// through SQLIndexed with the table's jsonb columns, once more with the
// planner made to use the GIN index where it can. It returns the number of
// matching documents.
func compareSQL(t *testing.T, conn *pgx.Conn, docs []map[string]any, f *Filter, cols SQLColumns, root *Field) int {
	t.Helper()
	n := compareSQLWith(t, conn, docs, f, cols, nil, root)
	compareSQLWith(t, conn, docs, f, cols, testJSONColumns, root)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	compareSQLWith(t, conn, docs, f, cols, testJSONColumns, root)
	if _, err := conn.Exec(ctx, "RESET enable_seqscan"); err != nil {
		t.Fatal(err)
	}
	return n
}

func compareSQLWith(t *testing.T, conn *pgx.Conn, docs []map[string]any, f *Filter, cols SQLColumns, jcols JSONColumns, root *Field) int {
	t.Helper()
	where, args, err := f.SQLIndexed("doc", cols, jcols, root, 1)
	if err != nil {
		t.Errorf("%s: SQL: %v", f, err)
		return 0
	}
	// $1 is taken by another condition, as in a real query.
	rows, err := conn.Query(context.Background(), "SELECT id FROM sol013_docs WHERE id <> $1 AND "+where+" ORDER BY id", append([]any{"none"}, args...)...)
	if err != nil {
		t.Errorf("%s: query failed: %v\nwhere: %s\nargs: %q", f, err, where, args)
		return 0
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Errorf("%s: %v\nwhere: %s\nargs: %q", f, err, where, args)
		return 0
	}
	var want []string
	for _, d := range docs {
		if f.Match(d) {
			want = append(want, d["id"].(string))
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s (columns %v, jsonb columns %v): SQL and Match differ\n  SQL:   %v\n  Match: %v\n  where: %s\n  args:  %q", f, cols != nil, jcols != nil, got, want, where, args)
	}
	return len(want)
}

func TestSQLMatchesPostgres(t *testing.T) {
	conn := testConn(t)
	docs := createDocs(t, conn)
	root := testRoot(t)
	validated, nonEmpty := 0, 0
	for _, s := range sqlFilters {
		t.Run(s, func(t *testing.T) {
			f, err := ParseFilter(s)
			if err != nil {
				t.Fatal(err)
			}
			// Without schema and columns: everything goes through jsonb.
			if compareSQL(t, conn, docs, f, nil, nil) > 0 {
				nonEmpty++
			}
			if f.Validate(root) != nil {
				return
			}
			validated++
			// With the schema and the plain columns.
			compareSQL(t, conn, docs, f, testColumns, root)
		})
	}
	// Guard against a table that tests nothing.
	if validated < 40 || nonEmpty < 40 {
		t.Errorf("only %d filters validated and %d matched something", validated, nonEmpty)
	}
}

// TestSQLRandomFilters compares SQL and Match on random filters built from
// the known paths and from values found in the documents.
func TestSQLRandomFilters(t *testing.T) {
	conn := testConn(t)
	docs := createDocs(t, conn)
	root := testRoot(t)

	paths := [][]string{
		{"id"}, {"vnfInstanceName"}, {"instantiationState"}, {"size"}, {"ratio"}, {"enabled"}, {"createdAt"}, {"updatedAt"},
		{"tags"}, {"scores"}, {"vnfdVersion"}, {"vimConnectionInfo", "vimType"}, {"vimConnectionInfo", "id"},
		{"vimConnectionInfo", "accessInfo", "region"}, {"instantiatedVnfInfo", "flavourId"},
		{"instantiatedVnfInfo", "vnfState"}, {"instantiatedVnfInfo", "scaleStatus", "scaleLevel"},
		{"instantiatedVnfInfo", "vnfcResourceInfo", "vduId"}, {"metadata", "owner"}, {"metadata", "n"},
		{"metadata", "flag"}, {"metadata", "matrix"}, {"metadata", "deep"}, {"metadata", "list"},
		{"metadata", "objs", "k"}, {"metadata", "missing"}, {"nope"}, {"metadata"}, {"instantiatedVnfInfo"},
	}
	values := []string{"", "'", ",", ")", "0", "-0", "1", "1.0", "-1", "1e1", "10", "2.5", "zzz", "A", "a", "true", "false",
		"null", "2024-01-15T10:00:00Z", "2024-01-15T10:00:00.100Z", "2024-01-15T11:00:00.5+01:00", "2024", "日本", `\`, `"`, "alice", "simple", "OPENSTACK", "x", "VDU1"}
	var collect func(v any)
	collect = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				collect(e)
			}
		case []any:
			for _, e := range v {
				collect(e)
			}
		case nil:
		default:
			values = append(values, fmt.Sprint(v))
		}
	}
	for _, d := range docs {
		collect(d)
	}
	ops := []Op{OpEq, OpNeq, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpCont, OpNcont}

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const n = 400
	for i := range n {
		f := &Filter{}
		for range 1 + rng.IntN(3) {
			op := ops[rng.IntN(len(ops))]
			nv := 1
			if op.multi() {
				nv += rng.IntN(3)
			}
			term := Term{Op: op, Path: paths[rng.IntN(len(paths))]}
			for range nv {
				v := values[rng.IntN(len(values))]
				if rng.IntN(8) == 0 && len(v) > 1 { // substrings exercise cont
					v = v[:len(v)/2]
				}
				term.Values = append(term.Values, v)
			}
			f.Terms = append(f.Terms, term)
		}
		// Go through the text form, as a request would.
		parsed, err := ParseFilter(f.String())
		if err != nil {
			// Halving can split a UTF-8 sequence; such input is refused.
			continue
		}
		compareSQL(t, conn, docs, parsed, nil, nil)
		if parsed.Validate(root) == nil {
			compareSQL(t, conn, docs, parsed, testColumns, root)
		}
		if t.Failed() {
			t.Fatalf("stopping after random filter %d (seed %d)", i, seed)
		}
	}
}

// TestSQLOddStrings stores documents whose metadata keys and values are
// random strings full of jsonpath, SQL and filter syntax, and checks that
// eq/cont/gt on them agree between SQL and Match. It guards the quoting of
// keys in the jsonpath and the passing of values.
func TestSQLOddStrings(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE sol013_odd (id text PRIMARY KEY, doc jsonb NOT NULL,
		md jsonb GENERATED ALWAYS AS (doc->'metadata') STORED)`); err != nil {
		t.Fatal(err)
	}
	keyRunes := []rune(`ab"\$.*[]?@!%&|=<>{}+- ` + "é日🚀\u2028\u00a0~`^#:")
	valRunes := append([]rune(",()';\t\n\r\x01\x7f"), keyRunes...)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	randStr := func(pool []rune, n int) string {
		r := make([]rune, n)
		for i := range r {
			r[i] = pool[rng.IntN(len(pool))]
		}
		return string(r)
	}

	type pair struct{ key, val string }
	var pairs []pair
	var docs []map[string]any
	for i := range 150 {
		p := pair{randStr(keyRunes, 1+rng.IntN(6)), randStr(valRunes, rng.IntN(8))}
		pairs = append(pairs, p)
		doc := map[string]any{"id": fmt.Sprintf("o%03d", i), "metadata": map[string]any{p.key: p.val}}
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO sol013_odd VALUES ($1, $2::text::jsonb)", doc["id"], string(raw)); err != nil {
			t.Fatalf("insert %s: %v", raw, err)
		}
		docs = append(docs, doc)
	}
	for _, p := range pairs {
		sub := p.val
		if r := []rune(sub); len(r) > 2 {
			sub = string(r[1 : len(r)-1])
		}
		for _, term := range []Term{
			{Op: OpEq, Path: []string{"metadata", p.key}, Values: []string{p.val}},
			{Op: OpCont, Path: []string{"metadata", p.key}, Values: []string{sub}},
			{Op: OpGt, Path: []string{"metadata", p.key}, Values: []string{sub}},
			{Op: OpNin, Path: []string{"metadata", p.key}, Values: []string{p.val, sub}},
		} {
			f, err := ParseFilter((&Filter{Terms: []Term{term}}).String())
			if err != nil {
				t.Fatalf("canonical form of %#v does not parse: %v", term, err)
			}
			var want []string
			for _, d := range docs {
				if f.Match(d) {
					want = append(want, d["id"].(string))
				}
			}
			if term.Op == OpEq && len(want) == 0 {
				t.Fatalf("%s matched nothing, but a document holds that pair", f)
			}
			// Through the document, and also through the metadata column.
			for _, jcols := range []JSONColumns{nil, {"metadata": "md"}} {
				where, args, err := f.SQLIndexed("doc", nil, jcols, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := conn.Query(ctx, "SELECT id FROM sol013_odd WHERE "+where+" ORDER BY id", args...)
				if err != nil {
					t.Fatalf("%s: %v\nargs %q", f, err, args)
				}
				got, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					t.Fatalf("%s: %v\nargs %q", f, err, args)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s (jsonb columns %v): SQL %v, Match %v\nargs %q", f, jcols, got, want, args)
				}
			}
		}
	}
}

// SQLIndexed adds the column's jsonpath test to positive eq/in terms with
// string values inside a jsonb column, and to nothing else.
func TestSQLIndexedText(t *testing.T) {
	root := testRoot(t)
	tests := []struct{ filter, where string }{
		{"(eq,metadata/tier,gold)", `(jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb) AND md @? $3::text::jsonpath)`},
		{"(in,metadata/a\"b,x,'y)')", `(jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb) AND md @? $3::text::jsonpath)`},
		{"(eq,metadata/n,10)", `jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb)`},
		{"(eq,metadata/flag,true)", `jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb)`},
		{"(neq,metadata/tier,gold)", `NOT COALESCE(jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb), false)`},
		{"(cont,metadata/tier,go)", `EXISTS (SELECT 1 FROM jsonb_path_query(doc, $1::text::jsonpath) AS sol013(sol013_v) WHERE jsonb_typeof(sol013_v) = 'string' AND (strpos(sol013_v #>> '{}', $2::text) > 0))`},
		{"(eq,instantiatedVnfInfo/vnfState,STARTED)", `jsonb_path_exists(doc, $1::text::jsonpath, $2::text::jsonb)`},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.filter)
		if err != nil {
			t.Fatal(err)
		}
		where, args, err := f.SQLIndexed("doc", testColumns, testJSONColumns, root, 0)
		if err != nil {
			t.Fatal(err)
		}
		if where != tt.where {
			t.Errorf("%s: where\n got %s\nwant %s", tt.filter, where, tt.where)
		}
		if strings.Contains(where, "@?") {
			if p := args[len(args)-1].(string); tt.filter == "(eq,metadata/tier,gold)" && p != `$."tier" ? (@ == "gold")` ||
				strings.HasPrefix(tt.filter, "(in") && p != `$."a\"b" ? (@ == "x" || @ == "y)")` {
				t.Errorf("%s: column jsonpath %s", tt.filter, p)
			}
		}
	}
}
