package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// listAll pages through a list (two rows a page) and returns the listed
// items' names as name(item).
func listAll[T any](t *testing.T, expr string, list func(store.Page) ([]*T, bool, error), seq func(*T) int64, name func(*T) string) []string {
	t.Helper()
	f, err := sol013.ParseFilter(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var got []string
	after := int64(0)
	for {
		rows, more, err := list(store.Page{Filter: f, After: after, Limit: 2})
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		for _, r := range rows {
			got = append(got, name(r))
			after = seq(r)
		}
		if !more {
			return got
		}
	}
}

// docOf is v's API document, as sol013.Match sees it.
func docOf(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// Filters on the ids (id, vnfInstanceId, vnfPkgId) compare the uuid
// columns when they can and the text otherwise: whatever the value (a
// uuid, another spelling of one, part of one, no uuid at all) and the
// operator, a list holds what Match says of each document.
func TestListIDFiltersMatchTheText(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	sample := lcmtest.SamplePackage()
	if err := st.PutPackage(ctx, sample); err != nil {
		t.Fatal(err)
	}
	pkg := sample.ID
	var insts []*store.Instance
	for i, name := range []string{"a", "b", "c", "d"} {
		in := &model.VnfInstance{ID: uuid.NewString(), VnfInstanceName: name, VnfdID: lcmtest.VnfdID,
			VnfProvider: "p", VnfProductName: "n", VnfSoftwareVersion: "1", VnfdVersion: "1"}
		if i == 3 {
			in.VnfPkgID = pkg
		}
		created, err := st.CreateInstance(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, created)
	}
	a, b, c := insts[0].ID, insts[1].ID, insts[2].ID

	// Operations: a COMPLETED and a STARTING one on a, a FAILED one on b,
	// a PROCESSING one on c.
	newOp := func(inst string) string {
		op, err := st.CreateOpOcc(ctx, store.NewOp{ID: uuid.NewString(), VnfInstanceID: inst, Operation: model.OpInstantiate, OperationParams: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return op.ID
	}
	claim := func(want string) {
		if op, err := st.Claim(ctx, "w", time.Minute); err != nil || op == nil || op.ID != want {
			t.Fatalf("claim: %v %+v, want %s", err, op, want)
		}
	}
	finish := func(id, state string) {
		if _, err := st.FinishOp(ctx, id, "w", store.Finish{State: state}); err != nil {
			t.Fatal(err)
		}
	}
	op1 := newOp(a)
	claim(op1)
	finish(op1, model.StateCompleted)
	op2 := newOp(b)
	claim(op2)
	finish(op2, model.StateFailed)
	op3 := newOp(c)
	claim(op3)
	op4 := newOp(a)
	opName := map[string]string{op1: "op1", op2: "op2", op3: "op3", op4: "op4"}

	instFields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"id": {Kind: sol013.KindString}, "vnfInstanceName": {Kind: sol013.KindString}, "vnfPkgId": {Kind: sol013.KindString}}}
	opFields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"id": {Kind: sol013.KindString}, "vnfInstanceId": {Kind: sol013.KindString},
		"operationState": {Kind: sol013.KindString}, "operation": {Kind: sol013.KindString}}}

	var instDocs, opDocs []map[string]any
	for _, in := range insts {
		instDocs = append(instDocs, docOf(t, in.VnfInstance))
	}
	ops, _, err := st.ListOpOccs(ctx, store.Page{Limit: 10})
	if err != nil || len(ops) != 4 {
		t.Fatalf("ops: %v %d", err, len(ops))
	}
	for _, op := range ops {
		opDocs = append(opDocs, docOf(t, op.VnfLcmOpOcc))
	}

	// Spellings of a that are not its text: upper case, no hyphens, braces,
	// a prefix, a suffix, a near miss.
	odd := []string{strings.ToUpper(a), strings.ReplaceAll(a, "-", ""), "{" + a + "}", a[:8], a[9:], a[:35] + "x", "abc", "urn:uuid:" + a}
	var exprs []string
	for _, attr := range []string{"id", "vnfInstanceId", "vnfPkgId"} {
		for _, v := range append([]string{a, b, c, pkg, op1, op4}, odd...) {
			q := "'" + v + "'"
			exprs = append(exprs, fmt.Sprintf("(eq,%s,%s)", attr, q), fmt.Sprintf("(neq,%s,%s)", attr, q),
				fmt.Sprintf("(cont,%s,%s)", attr, q), fmt.Sprintf("(ncont,%s,%s)", attr, q),
				fmt.Sprintf("(gt,%s,%s)", attr, q), fmt.Sprintf("(lte,%s,%s)", attr, q))
		}
		exprs = append(exprs,
			fmt.Sprintf("(in,%s,%s,%s,abc)", attr, a, op1), fmt.Sprintf("(in,%s,%s,%s)", attr, odd[0], odd[1]),
			fmt.Sprintf("(in,%s,%s,%s,%s)", attr, b, c, pkg), fmt.Sprintf("(nin,%s,%s,abc)", attr, a),
			fmt.Sprintf("(nin,%s,%s,%s)", attr, odd[0], odd[3]), fmt.Sprintf("(nin,%s,%s,%s,%s)", attr, a, op2, pkg),
			fmt.Sprintf("(eq,%s,%s);(neq,%s,%s)", attr, a, attr, b), fmt.Sprintf("(neq,%s,%s);(neq,%s,abc)", attr, b, attr))
	}
	exprs = append(exprs, fmt.Sprintf("(eq,vnfInstanceId,%s);(eq,operationState,STARTING)", a),
		fmt.Sprintf("(eq,vnfInstanceId,%s);(neq,id,%s)", a, op4), "(eq,operationState,FAILED)", "(eq,operationState,PROCESSING)",
		"(eq,operationState,COMPLETED)", "(in,operationState,FAILED,STARTING)", "(eq,operation,INSTANTIATE)", "(neq,operation,INSTANTIATE)",
		fmt.Sprintf("(eq,id,%s);(eq,vnfInstanceName,a)", a), fmt.Sprintf("(eq,id,%s);(eq,vnfInstanceName,b)", a))

	matched := 0
	for _, expr := range exprs {
		f, err := sol013.ParseFilter(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		// Instances (for filters on their attributes).
		if f.Validate(instFields) == nil {
			var want []string
			for _, d := range instDocs {
				if f.Match(d) {
					want = append(want, d["vnfInstanceName"].(string))
				}
			}
			got := listAll(t, expr, func(p store.Page) ([]*store.Instance, bool, error) {
				p.Fields = instFields
				return st.ListInstances(ctx, p)
			}, func(in *store.Instance) int64 { return in.Seq }, func(in *store.Instance) string { return in.VnfInstanceName })
			if !slices.Equal(got, want) {
				t.Errorf("instances %s: listed %v, Match says %v", expr, got, want)
			}
			matched += len(want)
		}
		if f.Validate(opFields) == nil {
			var want []string
			for _, d := range opDocs {
				if f.Match(d) {
					want = append(want, opName[d["id"].(string)])
				}
			}
			got := listAll(t, expr, func(p store.Page) ([]*store.OpOcc, bool, error) {
				p.Fields = opFields
				return st.ListOpOccs(ctx, p)
			}, func(op *store.OpOcc) int64 { return op.Seq }, func(op *store.OpOcc) string { return opName[op.ID] })
			if !slices.Equal(got, want) {
				t.Errorf("op occurrences %s: listed %v, Match says %v", expr, got, want)
			}
			matched += len(want)
		}
	}
	if matched == 0 {
		t.Fatal("no filter matched anything: the test lists nothing")
	}
	// The cases the uuid comparison decides, spelled out.
	for expr, want := range map[string][]string{
		"(eq,id," + a + ")":                  {"a"},
		"(eq,id," + strings.ToUpper(a) + ")": nil,
		"(eq,id," + a[:8] + ")":              nil,
		"(neq,id,abc)":                       {"a", "b", "c", "d"},
		"(in,id," + a + "," + c + ",abc)":    {"a", "c"},
		"(nin,id," + a + ",abc)":             {"b", "c", "d"},
		"(cont,id," + a[:8] + ")":            {"a"},
		"(eq,vnfPkgId," + pkg + ")":          {"d"},
		"(neq,vnfPkgId," + pkg + ")":         {"a", "b", "c"},
	} {
		got := listAll(t, expr, func(p store.Page) ([]*store.Instance, bool, error) {
			p.Fields = instFields
			return st.ListInstances(ctx, p)
		}, func(in *store.Instance) int64 { return in.Seq }, func(in *store.Instance) string { return in.VnfInstanceName })
		if !slices.Equal(got, want) {
			t.Errorf("instances %s: listed %v, want %v", expr, got, want)
		}
	}
	for expr, want := range map[string][]string{
		"(eq,vnfInstanceId," + a + ")":           {"op1", "op4"},
		"(eq,vnfInstanceId," + a[:35] + ")":      nil,
		"(in,vnfInstanceId," + b + "," + c + ")": {"op2", "op3"},
		"(neq,vnfInstanceId," + a + ")":          {"op2", "op3"},
		"(eq,id," + op2 + ")":                    {"op2"},
		"(eq,operationState,FAILED)":             {"op2"},
	} {
		got := listAll(t, expr, func(p store.Page) ([]*store.OpOcc, bool, error) {
			p.Fields = opFields
			return st.ListOpOccs(ctx, p)
		}, func(op *store.OpOcc) int64 { return op.Seq }, func(op *store.OpOcc) string { return opName[op.ID] })
		if !slices.Equal(got, want) {
			t.Errorf("op occurrences %s: listed %v, want %v", expr, got, want)
		}
	}
}
