package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
	"github.com/mini-vnfm/mini-vnfm/internal/sol013"
)

// Page asks for one page of a list, ordered by creation.
type Page struct {
	Filter *sol013.Filter
	Fields *sol013.Field // attribute schema of the listed resource, for typed comparisons
	After  int64         // seq of the last row of the previous page (0 = first page)
	Limit  int
	// Omit names top-level attributes the caller will not show (the
	// selector drops them): they are not read (instances' jsonb columns).
	Omit []string
}

// Columns the filters translate to plain (indexed) SQL comparisons; every other
// attribute path is evaluated on the view's jsonb document.
var (
	instanceFilterCols = sol013.SQLColumns{
		"id":                 "id::text",
		"vnfInstanceName":    "vnf_instance_name",
		"vnfdId":             "vnfd_id",
		"vnfProvider":        "vnf_provider",
		"vnfProductName":     "vnf_product_name",
		"vnfSoftwareVersion": "vnf_software_version",
		"vnfdVersion":        "vnfd_version",
		"instantiationState": "instantiation_state",
		"vnfPkgId":           "vnf_pkg_id::text",
	}
	// The documents a client writes, kept in jsonb columns of their own with
	// a GIN index each (migration 0010): the view's doc holds them as they
	// are, null members stripped.
	instanceJSONCols = sol013.JSONColumns{
		"metadata":                  "metadata",
		"vnfConfigurableProperties": "vnf_configurable_properties",
		"extensions":                "extensions",
	}
	opFilterCols = sol013.SQLColumns{
		"id":                    "id::text",
		"vnfInstanceId":         "vnf_instance_id::text",
		"operation":             "operation",
		"operationState":        "operation_state",
		"isAutomaticInvocation": "is_automatic_invocation",
		"isCancelPending":       "is_cancel_pending",
		// Date-times compare as instants (timestamptz), not as the view's text.
		"stateEnteredTime": "state_entered_time",
		"startTime":        "start_time",
	}
)

// uuidCols are, per listing view, the attributes that hold a uuid column's
// text form (PostgreSQL's: lowercase, hyphenated) and that column. Their
// eq/neq/in/nin terms compare the uuid column itself, which its own index
// (the primary key, (vnf_instance_id, seq), ...) answers; no index on the
// column's text is kept (migration 0014). The other operators (cont,
// ordering) compare the text form, mapped in the view's SQLColumns.
var uuidCols = map[string]map[string]string{
	"vnf_instances_doc":   {"id": "id", "vnfPkgId": "vnf_pkg_id"},
	"vnf_lcm_op_occs_doc": {"id": "id", "vnfInstanceId": "vnf_instance_id"},
	"vnf_packages_doc":    {"id": "id"},
	"subscriptions_doc":   {"id": "id"},
}

func pageQuery(view, cols string, cmap sol013.SQLColumns, jmap sol013.JSONColumns, p Page) (string, []any, error) {
	where, args := "seq > $1", []any{p.After}
	if p.Filter != nil && len(p.Filter.Terms) > 0 {
		// Validated whole: the terms taken out below are valid too.
		if err := p.Filter.Validate(p.Fields); err != nil {
			return "", nil, err
		}
		rest := &sol013.Filter{}
		for _, t := range p.Filter.Terms {
			if cond, arg, ok := stageCond(view, t, len(args)+1); ok {
				// Implied by the term, which stays: only the plan changes.
				where += " AND " + cond
				args = append(args, arg)
			}
			col, ok := uuidCols[view][strings.Join(t.Path, "/")]
			if !ok {
				rest.Terms = append(rest.Terms, t)
				continue
			}
			cond, arg, ok := uuidCond(t, col, len(args)+1)
			if !ok {
				rest.Terms = append(rest.Terms, t)
				continue
			}
			where += " AND " + cond
			if arg != nil {
				args = append(args, arg)
			}
		}
		if len(rest.Terms) > 0 {
			w, a, err := rest.SQLIndexed("doc", cmap, jmap, p.Fields, len(args))
			if err != nil {
				return "", nil, err
			}
			where += " AND (" + w + ")"
			args = append(args, a...)
		}
	}
	args = append(args, p.Limit+1)
	return fmt.Sprintf(`SELECT %s FROM %s WHERE %s ORDER BY seq LIMIT $%d`, cols, view, where, len(args)), args, nil
}

// instanceDocCols are the jsonb columns of the complex attributes, which a
// page can leave out (Page.Omit).
var instanceDocCols = map[string]string{
	"vnfConfigurableProperties": "vnf_configurable_properties",
	"vimConnectionInfo":         "vim_connection_info",
	"instantiatedVnfInfo":       "instantiated_vnf_info",
	"metadata":                  "metadata",
	"extensions":                "extensions",
}

// ListInstances returns one page of instances and whether more rows follow.
func (s *Store) ListInstances(ctx context.Context, p Page) ([]*Instance, bool, error) {
	cols := instanceCols
	if len(p.Omit) > 0 {
		list := strings.Split(instanceCols, ",")
		for i, c := range list {
			for _, a := range p.Omit {
				if instanceDocCols[a] == strings.TrimSpace(c) {
					list[i] = " NULL::jsonb"
				}
			}
		}
		cols = strings.Join(list, ",")
	}
	return listPage(ctx, s, "vnf_instances_doc", cols, instanceFilterCols, instanceJSONCols, p, scanInstance)
}

// ListOpOccs returns one page of op occurrences and whether more rows follow.
func (s *Store) ListOpOccs(ctx context.Context, p Page) ([]*OpOcc, bool, error) {
	return listPage(ctx, s, "vnf_lcm_op_occs_doc", opCols, opFilterCols, nil, p, scanOp)
}

// listPage reads Limit+1 rows to learn whether another page follows.
func listPage[T any](ctx context.Context, s *Store, view, cols string, cmap sol013.SQLColumns, jmap sol013.JSONColumns, p Page, scan func(pgx.Row) (*T, error)) ([]*T, bool, error) {
	q, args, err := pageQuery(view, cols, cmap, jmap, p)
	if err != nil {
		return nil, false, err
	}
	// Planned for these values every time (an unnamed statement), never a
	// cached generic plan: how many rows a filter's values match decides
	// between reading in seq order and an index on the filter. Filters make
	// endless statement texts, which would churn the statement cache too.
	rows, err := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > p.Limit
	if more {
		out = out[:p.Limit]
	}
	return out, more, nil
}

// uuidCond is the condition of an eq, neq, in or nin term on an attribute
// that holds uuid column col as text, with the same result as comparing
// that text (sol013.Filter.SQL, Match): a value that is not a uuid in
// PostgreSQL's text form (another spelling, part of one, anything else)
// equals no row's attribute. The condition's one argument, if any (arg
// nil otherwise), is a uuid or a []string of them at placeholder $n. ok is
// false for the other operators.
func uuidCond(t sol013.Term, col string, n int) (cond string, arg any, ok bool) {
	var ids []string
	for _, v := range t.Values {
		if IsUUIDText(v) {
			ids = append(ids, v)
		}
	}
	var pos string
	switch t.Op {
	case sol013.OpEq, sol013.OpIn, sol013.OpNeq, sol013.OpNin:
		switch len(ids) {
		case 0:
			pos = "FALSE"
		case 1:
			// Not = ANY of one: that would lose the (column, seq) index's order.
			pos, arg = fmt.Sprintf("%s = $%d::uuid", col, n), ids[0]
		default:
			pos, arg = fmt.Sprintf("%s = ANY($%d::uuid[])", col, n), ids
		}
	default:
		return "", nil, false
	}
	if t.Op == sol013.OpEq || t.Op == sol013.OpIn {
		return pos, arg, true
	}
	if arg == nil {
		return "TRUE", nil, true
	}
	// A NULL column (no such attribute) matches a negated term.
	return "NOT COALESCE(" + pos + ", false)", arg, true
}

// IsUUIDText reports whether s is a uuid as PostgreSQL writes it (and
// uuid.UUID.String): 8-4-4-4-12 lowercase hexadecimal digits, nothing that
// needs JSON escaping.
func IsUUIDText(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// stageCond is, for an eq or in term on an op's operationState, the
// condition on its stage (migration 0015) that the term implies: the
// indexes on unfinished and failed operations name the stage, not the
// state (so that an operation's start can be a HOT update), and the
// planner uses them only for a query that names it too.
func stageCond(view string, t sol013.Term, n int) (cond string, arg any, ok bool) {
	if view != "vnf_lcm_op_occs_doc" || len(t.Path) != 1 || t.Path[0] != "operationState" || (t.Op != sol013.OpEq && t.Op != sol013.OpIn) {
		return "", nil, false
	}
	var stages []string
	for _, v := range t.Values {
		if st := stageOf(v); !slices.Contains(stages, st) {
			stages = append(stages, st)
		}
	}
	if len(stages) == 1 {
		return fmt.Sprintf("stage = $%d::text", n), stages[0], true
	}
	return fmt.Sprintf("stage = ANY($%d::text[])", n), stages, true
}

// stageOf is the stage of an op in state s: vnf_lcm_op_occs.stage's
// expression (migration 0015).
func stageOf(s string) string {
	switch s {
	case model.StateStarting, model.StateProcessing, model.StateRollingBack:
		return "run"
	case model.StateFailedTemp:
		return "held"
	}
	return s
}
