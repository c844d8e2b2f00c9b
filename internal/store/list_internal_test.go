package store

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/pgtest"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
)

// The id filters and the state and operation filters that migration 0014
// left without an index of their own are answered by an index condition on
// the columns that remain indexed (sequential scans off, so that the
// planner uses any index that applies): no filter that an index answered
// before reads the table in seq order now.
func TestListFiltersUseIndexes(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, pgtest.NewDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := uuid.NewString()
	str := &sol013.Field{Kind: sol013.KindString}
	instFields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{"id": str, "vnfPkgId": str}}
	opFields := &sol013.Field{Kind: sol013.KindObject, Props: map[string]*sol013.Field{
		"id": str, "vnfInstanceId": str, "operationState": str, "operation": str}}
	for _, c := range []struct {
		view   string
		cmap   sol013.SQLColumns
		fields *sol013.Field
		filter string
		want   string // in the plan
	}{
		{"vnf_instances_doc", instanceFilterCols, instFields, "(eq,id," + id + ")", "Index Cond: (id = "},
		{"vnf_instances_doc", instanceFilterCols, instFields, "(in,id," + id + "," + uuid.NewString() + ")", "Index Cond: (id = ANY "},
		{"vnf_instances_doc", instanceFilterCols, instFields, "(eq,vnfPkgId," + id + ")", "Index Cond: (vnf_pkg_id = "},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,id," + id + ")", "Index Cond: (id = "},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,vnfInstanceId," + id + ")", "Index Cond: ((vnf_instance_id = "},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,operationState,FAILED)", "Index Cond: ((stage = "},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,operationState,ROLLED_BACK)", "Index Cond: ((stage = "},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(in,operationState,FAILED,ROLLED_BACK)", "vnf_lcm_op_occs_state"},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(in,operationState,STARTING,PROCESSING)", "vnf_lcm_op_occs_runnable"},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,operationState,PROCESSING)", "vnf_lcm_op_occs_runnable"},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,operationState,FAILED_TEMP)", "vnf_lcm_op_occs_one_active"},
		{"vnf_lcm_op_occs_doc", opFilterCols, opFields, "(eq,operation,HEAL)", "Index Cond: ((operation = "},
		{"vnf_packages_doc", packageFilterCols, instFields, "(eq,id," + id + ")", "Index Cond: (id = "},
		{"subscriptions_doc", sol013.SQLColumns{"id": "id::text"}, instFields, "(eq,id," + id + ")", "Index Cond: (id = "},
	} {
		f, err := sol013.ParseFilter(c.filter)
		if err != nil {
			t.Fatal(err)
		}
		q, args, err := pageQuery(c.view, "*", c.cmap, nil, Page{Filter: f, Fields: c.fields, Limit: 10})
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		var plan []string
		err = pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+q, append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		if p := strings.Join(plan, "\n"); !strings.Contains(p, c.want) {
			t.Errorf("%s on %s: plan without %q:\n%s", c.filter, c.view, c.want, p)
		}
	}
}
