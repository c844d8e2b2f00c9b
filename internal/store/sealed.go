package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// Where sealed values live. Every sealed value is bound to its place (row
// and JSON path, secrets.Place): sealing, opening and re-sealing spell the
// places here, once.

// InstancePlace is a VNF instance's document (vim_connection_info,
// instantiated_vnf_info, metadata, extensions, … at their JSON names).
func InstancePlace(id string) secrets.Place { return secrets.At("vnf_instances/" + id) }

// OpPlace is a JSON column of an op occurrence: operation_params, driver_params, work, changed_info.
func OpPlace(opID, column string) secrets.Place {
	return secrets.At("vnf_lcm_op_occs/" + opID + "/" + column)
}

// JournalPlace is the output of one journal entry.
func JournalPlace(opID, phase, step, node string) secrets.Place {
	return secrets.At("op_journal/" + opID + "/" + phase + "/" + step + "/" + node)
}

// SubscriptionAuthPlace is a subscription's authentication.
func SubscriptionAuthPlace(id string) secrets.Place {
	return secrets.At("subscriptions/" + id + "/authentication")
}

// PackageSourcePlace is a package's upload_from_uri request.
func PackageSourcePlace(id string) secrets.Place { return secrets.At("vnf_packages/" + id + "/source") }

// instanceSealed are the instance columns that may hold sealed values, with
// their names in the instance's JSON document.
var instanceSealed = []struct{ column, json string }{
	{"vim_connection_info", "vimConnectionInfo"}, {"instantiated_vnf_info", "instantiatedVnfInfo"},
	{"metadata", "metadata"}, {"extensions", "extensions"}, {"vnf_configurable_properties", "vnfConfigurableProperties"},
}

// ResealFunc re-seals one stored JSON document at its place; changed says
// whether it returned anything new.
type ResealFunc func(doc []byte, at secrets.Place) (out []byte, changed bool, err error)

// ResealAll hands every stored document that may hold sealed values —
// instances, op occurrences (parameters, drivers' parameters, working
// state, changedInfo), journal outputs, subscription credentials, package
// sources — to fn and writes back what fn changed, row by row. It returns how many documents
// changed. VIM credentials are re-sealed by the VIM registry.
func (s *Store) ResealAll(ctx context.Context, fn ResealFunc) (int, error) {
	n := 0
	type job struct {
		what   string
		query  string
		update string
		place  func(keys []string) secrets.Place
	}
	var jobs []job
	for _, c := range instanceSealed {
		c := c
		jobs = append(jobs, job{"vnf_instances." + c.column,
			`SELECT id::text, ` + c.column + `::text FROM vnf_instances WHERE ` + c.column + ` IS NOT NULL`,
			`UPDATE vnf_instances SET ` + c.column + `=$2::jsonb WHERE id=$1::uuid`,
			func(k []string) secrets.Place { return InstancePlace(k[0]).Key(c.json) }})
	}
	for _, col := range []string{"operation_params", "driver_params", "work", "changed_info"} {
		col := col
		jobs = append(jobs, job{"vnf_lcm_op_occs." + col,
			`SELECT id::text, ` + col + `::text FROM vnf_lcm_op_occs WHERE ` + col + ` IS NOT NULL`,
			`UPDATE vnf_lcm_op_occs SET ` + col + `=$2::` + opColumnType(col) + ` WHERE id=$1::uuid`,
			func(k []string) secrets.Place { return OpPlace(k[0], col) }})
	}
	jobs = append(jobs,
		job{"subscriptions.authentication", `SELECT id::text, authentication::text FROM subscriptions WHERE authentication IS NOT NULL`,
			`UPDATE subscriptions SET authentication=$2::jsonb WHERE id=$1::uuid`,
			func(k []string) secrets.Place { return SubscriptionAuthPlace(k[0]) }},
		job{"vnf_packages.source", `SELECT id::text, source::text FROM vnf_packages WHERE source IS NOT NULL`,
			`UPDATE vnf_packages SET source=$2::jsonb WHERE id=$1::uuid`,
			func(k []string) secrets.Place { return PackageSourcePlace(k[0]) }},
	)
	for _, j := range jobs {
		changed, err := s.resealRows(ctx, j.query, j.update, j.place, fn)
		n += changed
		if err != nil {
			return n, fmt.Errorf("re-sealing %s: %w", j.what, err)
		}
	}
	changed, err := s.resealJournal(ctx, fn)
	n += changed
	if err != nil {
		return n, fmt.Errorf("re-sealing op_journal.output: %w", err)
	}
	return n, nil
}

// opColumnType is the type of an op occurrence's sealed column: the working
// copy is text (migration 0020), the others jsonb.
func opColumnType(col string) string {
	if col == "work" {
		return "text"
	}
	return "jsonb"
}

func (s *Store) resealRows(ctx context.Context, query, update string, place func([]string) secrets.Place, fn ResealFunc) (int, error) {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return 0, err
	}
	type row struct{ id, doc string }
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.doc); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range all {
		out, changed, err := fn([]byte(r.doc), place([]string{r.id}))
		if err != nil {
			return n, fmt.Errorf("row %s: %w", r.id, err)
		}
		if !changed {
			continue
		}
		if _, err := s.pool.Exec(ctx, update, r.id, string(out)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Store) resealJournal(ctx context.Context, fn ResealFunc) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT op_occ_id::text, phase, step, node, output::text FROM op_journal WHERE output IS NOT NULL`)
	if err != nil {
		return 0, err
	}
	type row struct{ op, phase, step, node, doc string }
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.op, &x.phase, &x.step, &x.node, &x.doc)
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range all {
		out, changed, err := fn([]byte(r.doc), JournalPlace(r.op, r.phase, r.step, r.node))
		if err != nil {
			return n, fmt.Errorf("%s %s %s/%s: %w", r.op, r.phase, r.step, r.node, err)
		}
		if !changed {
			continue
		}
		if _, err := s.pool.Exec(ctx, `UPDATE op_journal SET output=$5::jsonb WHERE op_occ_id=$1::uuid AND phase=$2 AND step=$3 AND node=$4`,
			r.op, r.phase, r.step, r.node, string(out)); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
