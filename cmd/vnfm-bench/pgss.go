package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// With -profile the bench's PostgreSQL preloads pg_stat_statements; each
// profiled phase then also writes <time>-<phase>-pgss.txt: the statements
// it ran, heaviest first, per operation, with each call's planning time
// (track_planning: a statement planned again at every call shows it here).
// Statement counts per operation do not depend on the machine's load, so
// they judge a change even on a shared machine; the times do not.

// pgssSettings are the server settings -profile adds.
var pgssSettings = map[string]string{
	"shared_preload_libraries":          "pg_stat_statements",
	"pg_stat_statements.track":          "all",
	"pg_stat_statements.track_planning": "on",
	"pg_stat_statements.max":            "1000",
	"pg_stat_statements.track_utility":  "on",
	"pg_stat_statements.save":           "off",
}

// pgssTop is how many statements a -pgss.txt lists.
const pgssTop = 40

// pgssStart creates the extension (once) and zeroes its counters.
func (b *bench) pgssStart() {
	if !b.o.profile || b.pool == nil {
		return
	}
	if !b.pgss {
		if err := b.exec(b.ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			logf("pg_stat_statements unavailable (%v): no statement statistics", err)
			return
		}
		b.pgss = true
	}
	if err := b.exec(b.ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		logf("pg_stat_statements_reset: %v", err)
	}
	// Table counters cannot be reset alone (pg_stat_reset would reset the
	// commit counts too): take the difference.
	b.tabs0, _ = b.tableCounters()
}

// tableCounters are a table's row changes (pg_stat_user_tables).
type tableCounters struct{ ins, upd, hot, del, idx, seq int64 }

func (b *bench) tableCounters() (map[string]tableCounters, error) {
	rows, err := b.pool.Query(b.ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
		COALESCE(idx_scan, 0), seq_scan FROM pg_stat_user_tables`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]tableCounters{}
	for rows.Next() {
		var name string
		var c tableCounters
		if err := rows.Scan(&name, &c.ins, &c.upd, &c.hot, &c.del, &c.idx, &c.seq); err != nil {
			return nil, err
		}
		out[name] = c
	}
	return out, rows.Err()
}

// pgssWrite writes the statements run since pgssStart, divided by ops (the
// operations or requests of the phase, named by unit).
func (b *bench) pgssWrite(phase string, ops int64, unit string) {
	if !b.pgss || ops <= 0 {
		return
	}
	rows, err := b.pool.Query(b.ctx, `SELECT s.calls, s.total_exec_time, s.total_plan_time, s.rows,
			regexp_replace(s.query, '\s+', ' ', 'g')
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'
		  AND s.query NOT LIKE '%pg_stat_wal%'
		ORDER BY s.total_exec_time DESC`)
	if err != nil {
		logf("pg_stat_statements: %v", err)
		return
	}
	type stmt struct {
		calls, rows int64
		exec, plan  float64
		query       string
	}
	var all []stmt
	for rows.Next() {
		var s stmt
		if err := rows.Scan(&s.calls, &s.exec, &s.plan, &s.rows, &s.query); err != nil {
			rows.Close()
			logf("pg_stat_statements: %v", err)
			return
		}
		all = append(all, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		logf("pg_stat_statements: %v", err)
		return
	}
	n := float64(ops)
	var calls, txCtl int64
	var exec float64
	for _, s := range all {
		calls += s.calls
		exec += s.exec + s.plan
		if q := strings.ToLower(s.query); q == "begin" || q == "commit" || q == "rollback" {
			txCtl += s.calls
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "pg_stat_statements, %s: %d %s\n", phase, ops, unit)
	fmt.Fprintf(&sb, "per %s: %.1f statements (%.1f without BEGIN/COMMIT), %.3f ms executing and planning\n\n",
		strings.TrimSuffix(unit, "s"), float64(calls)/n, float64(calls-txCtl)/n, exec/n)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls/op\tms/op\tµs/call\tplan µs/call\trows/call\t  statement")
	for i, s := range all {
		if i == pgssTop {
			break
		}
		// Its head and its tail: column lists are long, the WHERE says which statement it is.
		q := s.query
		if r := []rune(q); len(r) > 300 {
			q = string(r[:150]) + " … " + string(r[len(r)-150:])
		}
		fmt.Fprintf(tw, "%.2f\t%.3f\t%.0f\t%.0f\t%.1f\t  %s\n", float64(s.calls)/n, (s.exec+s.plan)/n,
			1000*(s.exec+s.plan)/float64(s.calls), 1000*s.plan/float64(s.calls), float64(s.rows)/float64(s.calls), q)
	}
	if len(all) > pgssTop {
		fmt.Fprintf(tw, "\t\t\t\t\t  (%d statements more)\n", len(all)-pgssTop)
	}
	_ = tw.Flush()
	// Row changes per table: an update that is not HOT writes an entry in
	// every index of the table (the published counters lag up to a second:
	// the phases wait for them).
	if tabs1, err := b.tableCounters(); err == nil && b.tabs0 != nil {
		fmt.Fprintf(&sb, "\nrow changes per %s (pg_stat_user_tables):\n", strings.TrimSuffix(unit, "s"))
		tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "inserts\tupdates\tof them HOT\tdeletes\tindex scans\tseq scans\t  table")
		for _, name := range slices.Sorted(maps.Keys(tabs1)) {
			a, z := b.tabs0[name], tabs1[name]
			d := tableCounters{z.ins - a.ins, z.upd - a.upd, z.hot - a.hot, z.del - a.del, z.idx - a.idx, z.seq - a.seq}
			if d == (tableCounters{}) {
				continue
			}
			fmt.Fprintf(tw, "%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t  %s\n", float64(d.ins)/n, float64(d.upd)/n,
				float64(d.hot)/n, float64(d.del)/n, float64(d.idx)/n, float64(d.seq)/n, name)
		}
		_ = tw.Flush()
	}
	path := b.prefix + "-" + phase + "-pgss.txt"
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		logf("pg_stat_statements: %v", err)
		return
	}
	logf("statements of PostgreSQL (%s): %s (%.1f per %s)", phase, path, float64(calls)/n, strings.TrimSuffix(unit, "s"))
}
