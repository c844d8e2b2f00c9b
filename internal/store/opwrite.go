package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Journal write kinds (JournalWrite.Kind).
const (
	// JournalBeginKind: the step or node starts (again): RUNNING, attempt+1 on a repeat.
	JournalBeginKind = "begin"
	// JournalEndKind: the step or node ended (Entry.State, Error, Output).
	JournalEndKind = "end"
	// JournalNoteKind: a new message for a running step or node.
	JournalNoteKind = "note"
)

// JournalWrite is one journal change of an OpWrite.
type JournalWrite struct {
	Kind  string // JournalBeginKind, JournalEndKind, JournalNoteKind
	Entry JournalEntry
}

// OpWrite is what an engine writes for one operation at one checkpoint: its
// journal changes in order, maybe a new working copy, maybe the end of its
// lease. It is applied whole or not at all, fenced by the lease owner.
type OpWrite struct {
	OpOccID string
	Owner   string
	Journal []JournalWrite
	// Work, when non-nil, replaces the op's sealed working copy.
	Work []byte
	// Finish, when non-nil, ends the lease (FinishOp) after the rest.
	Finish *Finish
	// Start moves an op still STARTING — created leased to its writer
	// (NewOp.LeaseOwner) — to PROCESSING with the rest of the write, with
	// its notification, as a claim would; an op that is already past
	// STARTING is written as usual. A cancel requested while it was
	// STARTING keeps it there: the write changes nothing and gets
	// ErrCancelPending.
	Start bool
}

// ErrCancelPending answers an OpWrite.Start whose op was asked to cancel
// while STARTING: nothing was written; the writer ends it ROLLED_BACK.
var ErrCancelPending = errors.New("store: a cancel was requested before the operation started")

// OpWriteResult is the outcome of one OpWrite.
type OpWriteResult struct {
	Op  *OpOcc // the op after a Finish
	Err error  // ErrLeaseLost when the owner no longer holds the lease
}

// WriteOps applies several operations' writes in one transaction: one
// commit (one WAL flush) for all of them — the engine's group commit. A
// write whose lease is lost changes nothing and gets ErrLeaseLost; the others
// still commit. When the transaction fails for another reason (a statement
// error, a deadlock), every write is retried in a transaction of its own, so
// one write's error is never another's.
func (s *Store) WriteOps(ctx context.Context, ws []OpWrite) []OpWriteResult {
	res, err := s.writeOps(ctx, ws)
	if err == nil || len(ws) == 1 {
		if err != nil {
			return []OpWriteResult{{Err: err}}
		}
		return res
	}
	out := make([]OpWriteResult, len(ws))
	for i := range ws {
		r, err := s.writeOps(ctx, ws[i:i+1])
		if err != nil {
			out[i].Err = err
		} else {
			out[i] = r[0]
		}
	}
	return out
}

func (s *Store) writeOps(ctx context.Context, ws []OpWrite) ([]OpWriteResult, error) {
	type finishArgs struct{ perr, rc, ci, cec []byte }
	fargs := make([]finishArgs, len(ws))
	nFinish := 0
	for i, w := range ws {
		if f := w.Finish; f != nil {
			nFinish++
			var a finishArgs
			var err error
			if a.perr, err = jsonOrNull(f.Error); err != nil {
				return nil, err
			}
			if a.rc, err = jsonOrNull(f.ResourceChanges); err != nil {
				return nil, err
			}
			if a.ci, err = jsonOrNull(f.ChangedInfo); err != nil {
				return nil, err
			}
			if a.cec, err = jsonOrNull(f.ChangedExtConnectivity); err != nil {
				return nil, err
			}
			fargs[i] = a
		}
	}
	anyFinish := nFinish > 0
	fence := newFence(ws)
	starts := newStarts(ws)
	out := make([]OpWriteResult, len(ws))
	err := inPipelinedTx(ctx, s.pool, func(tx *pgxpool.Conn) error {
		// Round trip 1, the fence: every op row of the group whose lease its
		// writer holds, locked until the commit (by the update that sets its
		// new working copy, when there is one), so that no lease changes
		// hands before the writes below commit and they need no fence of
		// their own. Before it, the starts (OpWrite.Start) of ops still
		// STARTING, which lock their rows too.
		var b pgx.Batch
		b.Queue("begin")
		b.Queue(genericPlans)
		held := map[opOwner]string{} // → operation_state
		started := starts.queue(&b)
		b.Queue(fence.sql, fence.args...).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var (
					k     opOwner
					state string
				)
				if err := rows.Scan(&k.op, &k.owner, &state); err != nil {
					return err
				}
				held[k] = state
			}
			return rows.Err()
		})
		var targets []target
		if anyFinish || len(starts.ids) > 0 {
			queueTargets(&b, &targets)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		// Round trip 2: the journal and the finishes, a few multi-row
		// statements for the whole group.
		var jb journalBatch
		ended := map[string]bool{} // the lease ended earlier in the group
		for i, w := range ws {
			state, ok := held[opOwner{w.OpOccID, w.Owner}]
			if ended[w.OpOccID] || !ok {
				out[i].Err = ErrLeaseLost
				continue
			}
			if w.Start && state == model.StateStarting { // not started: a cancel is pending
				out[i].Err = ErrCancelPending
				continue
			}
			for _, j := range w.Journal {
				jb.add(j)
			}
			if w.Finish != nil {
				ended[w.OpOccID] = true
			}
		}
		b = pgx.Batch{}
		jb.queue(&b)
		// The notifications of the starts, before any finish's.
		var sb outboxBatch
		for _, st := range *started {
			if err := sb.add(targets, opEventOf(st.op, st.in)); err != nil {
				return err
			}
		}
		if len(sb.nids) > 0 {
			sb.queue(&b)
			queueWakeUp(&b)
		}
		// The finishes, one statement for the instances and one for the op
		// rows, whatever their number.
		var fb finishBatch
		fb.grow(nFinish)
		for i, w := range ws {
			if w.Finish != nil && out[i].Err == nil {
				if err := fb.add(w, fargs[i].perr, fargs[i].rc, fargs[i].ci, fargs[i].cec); err != nil {
					return err
				}
			}
		}
		finished := map[string]*OpOcc{}
		fb.queue(&b, finished)
		if !anyFinish {
			b.Queue("commit")
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, &b).Close(); err != nil {
				return err
			}
		}
		if !anyFinish {
			return nil
		}
		// The notifications of the ends, committed with them, in one statement.
		var ob outboxBatch
		for i, w := range ws {
			if w.Finish == nil || out[i].Err != nil {
				continue
			}
			op := finished[w.OpOccID]
			if op == nil {
				return errors.New("store: a fenced op row lost its lease") // cannot happen: it is locked
			}
			out[i].Op = op
			var (
				ev  lccn.Event
				err error
			)
			if in := w.Finish.Instance; in != nil {
				ev = opEventOf(op, lccn.InstanceOf(in))
			} else if ev, err = opEvent(ctx, tx, op); err != nil { // the instance as stored
				return err
			}
			if err := ob.add(targets, ev); err != nil {
				return err
			}
		}
		var nb pgx.Batch
		ob.queue(&nb)
		if nb.Len() > 0 {
			queueWakeUp(&nb)
		}
		nb.Queue("commit")
		return tx.SendBatch(ctx, &nb).Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type opOwner struct{ op, owner string }

// finishBatch is the finishes of a group as two multi-row statements: the
// instances they replace, then the op rows they end (fenced by the owner as
// well, although the fence has locked them).
type finishBatch struct {
	inst [15][]*string // instanceUpdateArgs $1..$15 (text; the jsonb and uuid ones cast)
	docs [][]byte      // $16
	rev  string        // $17
	n    int

	ids, owners, states []string
	perr, rc, ci, cec   []*string
	keep                []bool
	// strs holds the text values the columns point to, so that each does
	// not need an allocation of its own.
	strs []string
}

// grow makes room for n finishes, n of them with an instance at most.
func (fb *finishBatch) grow(n int) {
	for k := range fb.inst {
		fb.inst[k] = make([]*string, 0, n)
	}
	fb.docs = make([][]byte, 0, n)
	fb.ids, fb.owners, fb.states = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	fb.perr, fb.rc, fb.ci, fb.cec = make([]*string, 0, n), make([]*string, 0, n), make([]*string, 0, n), make([]*string, 0, n)
	fb.keep = make([]bool, 0, n)
	fb.strs = make([]string, 0, n*(len(fb.inst)+4))
}

// text is a pointer to a copy of s, kept in fb.strs. (A pointer to an
// element that a later append moved still reads s: strings do not change.)
func (fb *finishBatch) text(s string) *string {
	fb.strs = append(fb.strs, s)
	return &fb.strs[len(fb.strs)-1]
}

// textOrNull is text(string(b)), or nil for a nil b.
func (fb *finishBatch) textOrNull(b []byte) *string {
	if b == nil {
		return nil
	}
	return fb.text(string(b))
}

func (fb *finishBatch) add(w OpWrite, perr, rc, ci, cec []byte) error {
	f := w.Finish
	if in := f.Instance; in != nil {
		args, err := instanceUpdateArgs(in, &f.Docs)
		if err != nil {
			return err
		}
		for k := range fb.inst {
			var v *string
			switch a := args[k].(type) {
			case string:
				v = fb.text(a)
			case *string:
				v = a
			case []byte:
				v = fb.textOrNull(a)
			default:
				return fmt.Errorf("store: instance update argument %d is a %T", k+1, a)
			}
			fb.inst[k] = append(fb.inst[k], v)
		}
		fb.docs, fb.rev = append(fb.docs, args[15].([]byte)), args[16].(string)
		fb.n++
	}
	fb.ids, fb.owners, fb.states = append(fb.ids, w.OpOccID), append(fb.owners, w.Owner), append(fb.states, f.State)
	fb.perr, fb.rc, fb.ci, fb.cec = append(fb.perr, fb.textOrNull(perr)), append(fb.rc, fb.textOrNull(rc)), append(fb.ci, fb.textOrNull(ci)), append(fb.cec, fb.textOrNull(cec))
	fb.keep = append(fb.keep, f.KeepWork)
	return nil
}

// queue queues the statements; the ended op rows go to done by id.
func (fb *finishBatch) queue(b *pgx.Batch, done map[string]*OpOcc) {
	if fb.n > 0 {
		args := make([]any, 0, 17)
		for _, c := range fb.inst {
			args = append(args, c)
		}
		want := fb.n
		b.Queue(`UPDATE vnf_instances i SET vnf_instance_name=u.name, vnf_instance_description=u.descr, vnfd_id=u.vnfd,
			vnf_pkg_id=u.pkg::uuid, vnf_provider=u.prov, vnf_product_name=u.prod, vnf_software_version=u.swv, vnfd_version=u.vnfdv,
			instantiation_state=u.st, vnf_configurable_properties=u.vcp::jsonb, vim_connection_info=u.vci::jsonb,
			instantiated_vnf_info=u.info::jsonb, metadata=u.md::jsonb, extensions=u.ext::jsonb, version=i.version+1,
			updated_at=now(), rendered_doc=u.doc, rendered_version=i.version+1, rendered_rev=$17
			FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
				$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bytea[])
				AS u(iid, name, descr, vnfd, pkg, prov, prod, swv, vnfdv, st, vcp, vci, info, md, ext, doc)
			WHERE i.id = u.iid AND i.id = ANY($1::uuid[])`, append(args, fb.docs, fb.rev)...).Exec(func(tag pgconn.CommandTag) error {
			if int(tag.RowsAffected()) != want {
				return fmt.Errorf("store: %d of %d VNF instances: %w", tag.RowsAffected(), want, ErrNotFound)
			}
			return nil
		})
	}
	if len(fb.ids) == 0 {
		return
	}
	b.Queue(`UPDATE vnf_lcm_op_occs o SET operation_state=u.fstate, state_entered_time=clock_timestamp(),
		error=u.ferr::jsonb, resource_changes=u.frc::jsonb, changed_info=u.fci::jsonb,
		changed_ext_connectivity=u.fcec::jsonb, is_cancel_pending=false, lease_owner=NULL, lease_until=NULL,
		work = CASE WHEN u.fkeep THEN o.work ELSE NULL END
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[])
			AS u(fid, fowner, fstate, ferr, frc, fci, fcec, fkeep)
		WHERE o.id = u.fid AND o.lease_owner = u.fowner AND o.id = ANY($1::uuid[])
		RETURNING `+opCols, fb.ids, fb.owners, fb.states, fb.perr, fb.rc, fb.ci, fb.cec, fb.keep).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			op, err := scanOp(rows)
			if err != nil {
				return err
			}
			done[op.ID] = op
		}
		return rows.Err()
	})
}

// outboxBatch is the outbox rows of several events, in order, as one INSERT.
type outboxBatch struct {
	nids, subs, bodies []string
}

func (ob *outboxBatch) add(targets []target, ev lccn.Event) error {
	nid := uuid.NewString() // one notification id for every copy
	ids, body, err := outboxOf(targets, ev, nid)
	if err != nil || len(ids) == 0 {
		return err
	}
	b := string(body)
	for _, id := range ids {
		ob.nids, ob.subs, ob.bodies = append(ob.nids, nid), append(ob.subs, id), append(ob.bodies, b)
	}
	return nil
}

func (ob *outboxBatch) queue(b *pgx.Batch) {
	if len(ob.nids) == 0 {
		return
	}
	b.Queue(`INSERT INTO notification_outbox (notification_id, subscription_id, body)
		SELECT n, s, b FROM unnest($1::uuid[], $2::uuid[], $3::text[]) WITH ORDINALITY AS u(n, s, b, k) ORDER BY k`,
		ob.nids, ob.subs, ob.bodies)
}

// genericPlans makes the group's statements run their prepared statements'
// generic plans, planned once per session, for the transaction. Left to
// choose (plan_cache_mode auto), PostgreSQL planned each of them again at
// every call — the arrays' sizes make a custom plan look cheaper — which
// cost about as much CPU as running them (pg_stat_statements with
// track_planning: 200–650 µs per call for the finishes, the start and the
// fence under the closed loop). A generic plan is made from the tables as
// they are when the session first runs the statement: on an op table of a
// few rows it would scan it sequentially, and go on doing so as the table
// grows, until new statistics invalidate it. With sequential scans off, every
// plan finds the rows by key (= ANY of the ids, ON CONFLICT), at any size.
const genericPlans = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// fenceQuery is the group's fence statement and its arguments.
type fenceQuery struct {
	sql  string
	args []any
}

// newFence builds one statement that locks the op rows of the group whose
// leases their writers hold, setting the new working copies on the way, and
// returns their (id, owner). Each (op, owner) appears once; its working copy
// is the last one written before the op's finish. The rows are found by
// their ids (an index scan, whatever the planner thinks of the arrays' sizes)
// and kept when "id/owner" is one of the pairs.
func newFence(ws []OpWrite) fenceQuery {
	var (
		ids, pairs []string
		works      []*string // text, as the column (migration 0020): pgx would send a [][]byte as bytea[]
		at         = map[opOwner]int{}
		finished   = map[string]bool{}
		anyWork    bool
	)
	for _, w := range ws {
		k := opOwner{w.OpOccID, w.Owner}
		i, ok := at[k]
		if !ok {
			i = len(ids)
			at[k] = i
			ids, pairs, works = append(ids, w.OpOccID), append(pairs, w.OpOccID+"/"+w.Owner), append(works, nil)
		}
		if w.Work != nil && !finished[w.OpOccID] {
			s := string(w.Work)
			works[i], anyWork = &s, true
		}
		if w.Finish != nil {
			finished[w.OpOccID] = true
		}
	}
	if !anyWork {
		return fenceQuery{`SELECT id::text, lease_owner, operation_state FROM vnf_lcm_op_occs
			WHERE id = ANY($1::uuid[]) AND id::text || '/' || lease_owner = ANY($2::text[])
			FOR NO KEY UPDATE`, []any{ids, pairs}}
	}
	return fenceQuery{`WITH u AS (UPDATE vnf_lcm_op_occs SET work = ($3::text[])[array_position($2::text[], id::text || '/' || lease_owner)]
			WHERE id = ANY($1::uuid[]) AND id::text || '/' || lease_owner = ANY($2::text[])
			  AND ($3::text[])[array_position($2::text[], id::text || '/' || lease_owner)] IS NOT NULL
			RETURNING id, lease_owner, operation_state),
		l AS (SELECT id, lease_owner, operation_state FROM vnf_lcm_op_occs
			WHERE id = ANY($1::uuid[]) AND id::text || '/' || lease_owner = ANY($2::text[])
			  AND ($3::text[])[array_position($2::text[], id::text || '/' || lease_owner)] IS NULL
			FOR NO KEY UPDATE)
		SELECT id::text, lease_owner, operation_state FROM u UNION ALL SELECT id::text, lease_owner, operation_state FROM l`, []any{ids, pairs, works}}
}

// startQuery is a group's starts (OpWrite.Start): one statement that moves
// the ops still STARTING, whose leases their writers hold and with no
// cancel pending, to PROCESSING, and returns them with their instances'
// names for the notifications — what a claim does to a STARTING op.
type startQuery struct{ ids, pairs []string }

func newStarts(ws []OpWrite) startQuery {
	var q startQuery
	seen := map[opOwner]bool{}
	for _, w := range ws {
		if k := (opOwner{w.OpOccID, w.Owner}); w.Start && !seen[k] {
			seen[k] = true
			q.ids, q.pairs = append(q.ids, w.OpOccID), append(q.pairs, w.OpOccID+"/"+w.Owner)
		}
	}
	return q
}

// startedOp is an op the group started, with its instance as stored.
type startedOp struct {
	op *OpOcc
	in lccn.Instance
}

// startOpCols are opCols of the op row o.
var startOpCols = "o." + strings.Join(strings.Split(strings.Join(strings.Fields(opCols), " "), ", "), ", o.")

// queue queues the statement (none without starts); the started ops go to
// the slice returned, in seq order, once the batch is sent.
func (q startQuery) queue(b *pgx.Batch) *[]startedOp {
	started := new([]startedOp)
	if len(q.ids) == 0 {
		return started
	}
	b.Queue(`UPDATE vnf_lcm_op_occs o SET operation_state = 'PROCESSING', state_entered_time = now()
		FROM vnf_instances i
		WHERE o.id = ANY($1::uuid[]) AND o.id::text || '/' || o.lease_owner = ANY($2::text[])
		  AND o.operation_state = 'STARTING' AND NOT o.is_cancel_pending AND i.id = o.vnf_instance_id
		RETURNING i.vnf_instance_name, i.vnfd_id, i.vnf_provider, i.vnf_product_name, i.vnf_software_version,
			i.vnfd_version, `+startOpCols, q.ids, q.pairs).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var (
				s    startedOp
				name *string
			)
			op, err := scanOp(leadRow{rows, []any{&name, &s.in.VnfdID, &s.in.Provider, &s.in.ProductName,
				&s.in.SoftwareVersion, &s.in.VnfdVersion}})
			if err != nil {
				return err
			}
			s.op, s.in.ID, s.in.Name = op, op.VnfInstanceID, deref(name)
			*started = append(*started, s)
		}
		slices.SortFunc(*started, func(a, b startedOp) int { return cmp.Compare(a.op.Seq, b.op.Seq) })
		return rows.Err()
	})
	return started
}

// leadRow scans leading extra columns before a row's usual ones.
type leadRow struct {
	pgx.Row
	lead []any
}

func (r leadRow) Scan(dest ...any) error { return r.Row.Scan(append(r.lead, dest...)...) }

type journalKey struct{ op, phase, step, node string }

// journalBatch turns the journal writes of a group into a few multi-row
// statements, one per kind of change. A row may change more than once in a
// group (a node's start, then its end), which one statement cannot do: a
// start followed by the end of the same row is folded into one change (a
// "restart"), and whatever still repeats goes into a second round of
// statements, in order. (INSERT … ON CONFLICT finds each row by the primary
// key; a MERGE or an UPDATE … FROM joining the arrays may read the whole
// journal.)
type journalBatch struct {
	rows   map[journalKey][]*journalRow
	order  []journalKey // first seen, for a stable statement order
	rounds int
}

type journalRow struct {
	kind string // JournalBeginKind, JournalEndKind, JournalNoteKind, journalRestart
	e    JournalEntry
}

// journalRestart is a start and an end of one row folded into one change.
const journalRestart = "restart"

func (jb *journalBatch) add(j JournalWrite) {
	e := j.Entry
	k := journalKey{e.OpOccID, e.Phase, e.Step, e.Node}
	if jb.rows == nil {
		jb.rows = map[journalKey][]*journalRow{}
	}
	rs, seen := jb.rows[k]
	if !seen {
		jb.order = append(jb.order, k)
	}
	if n := len(rs); n > 0 && j.Kind == JournalEndKind && rs[n-1].kind == JournalBeginKind {
		// The start's message, unless the end has its own (as the two
		// statements would leave it).
		if e.Message == "" {
			e.Message = rs[n-1].e.Message
		}
		rs[n-1] = &journalRow{kind: journalRestart, e: e}
		return
	}
	kind := j.Kind
	if kind != JournalBeginKind && kind != JournalNoteKind {
		kind = JournalEndKind
	}
	jb.rows[k] = append(rs, &journalRow{kind: kind, e: e})
	jb.rounds = max(jb.rounds, len(jb.rows[k]))
}

// queue queues the statements: per round (the n-th change of every row), one per kind.
func (jb *journalBatch) queue(b *pgx.Batch) {
	for r := range jb.rounds {
		// The round's rows by kind, in journalKinds order, each kind's
		// columns made as long as it needs.
		var n [len(journalKinds)]int
		for _, k := range jb.order {
			if rs := jb.rows[k]; r < len(rs) {
				n[kindIndex(rs[r].kind)]++
			}
		}
		var cols [len(journalKinds)]*journalCols
		for i, c := range n {
			if c > 0 {
				cols[i] = newJournalCols(c)
			}
		}
		for _, k := range jb.order {
			if rs := jb.rows[k]; r < len(rs) {
				cols[kindIndex(rs[r].kind)].add(rs[r])
			}
		}
		if c := cols[0]; c != nil {
			b.Queue(journalBegins, c.op, c.phase, c.idx, c.step, c.node, c.msg)
		}
		if c := cols[1]; c != nil {
			b.Queue(journalEnds, c.op, c.phase, c.idx, c.step, c.node, c.msg, c.state, c.err, c.out)
		}
		if c := cols[2]; c != nil {
			b.Queue(journalRestarts, c.op, c.phase, c.idx, c.step, c.node, c.msg, c.state, c.err, c.out)
		}
		if c := cols[3]; c != nil {
			b.Queue(journalNotes, c.op, c.phase, c.step, c.node, c.msg)
		}
	}
}

// journalKinds are the kinds of journal rows, in the order of their statements.
var journalKinds = [...]string{JournalBeginKind, JournalEndKind, journalRestart, JournalNoteKind}

func kindIndex(kind string) int {
	for i, k := range journalKinds {
		if k == kind {
			return i
		}
	}
	panic("store: journal row kind " + kind) // add maps every kind to one of them
}

const (
	// journalBegins: steps or nodes start (again): RUNNING, attempt+1 on a repeat.
	journalBegins = `INSERT INTO op_journal (op_occ_id, phase, step_index, step, node, state, message, start_time)
		SELECT op, phase, idx, step, node, 'RUNNING', msg, clock_timestamp()
		FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[]) AS j(op, phase, idx, step, node, msg)
		ON CONFLICT (op_occ_id, phase, step, node) DO UPDATE SET state = 'RUNNING', attempt = op_journal.attempt + 1,
			message = EXCLUDED.message, error = NULL, start_time = EXCLUDED.start_time, end_time = NULL`
	// journalEnds: steps or nodes end (state, error, output).
	journalEnds = `INSERT INTO op_journal (op_occ_id, phase, step_index, step, node, state, message, error, output, start_time, end_time)
		SELECT op, phase, idx, step, node, state, msg, err, out::jsonb, clock_timestamp(), clock_timestamp()
		FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
			AS j(op, phase, idx, step, node, msg, state, err, out)
		ON CONFLICT (op_occ_id, phase, step, node) DO UPDATE SET state = EXCLUDED.state,
			message = COALESCE(EXCLUDED.message, op_journal.message), error = EXCLUDED.error,
			output = COALESCE(EXCLUDED.output, op_journal.output), end_time = EXCLUDED.end_time`
	// journalRestarts: a begin and an end at once.
	journalRestarts = `INSERT INTO op_journal (op_occ_id, phase, step_index, step, node, state, message, error, output, start_time, end_time)
		SELECT op, phase, idx, step, node, state, msg, err, out::jsonb, clock_timestamp(), clock_timestamp()
		FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
			AS j(op, phase, idx, step, node, msg, state, err, out)
		ON CONFLICT (op_occ_id, phase, step, node) DO UPDATE SET state = EXCLUDED.state, attempt = op_journal.attempt + 1,
			message = EXCLUDED.message, error = EXCLUDED.error, output = COALESCE(EXCLUDED.output, op_journal.output),
			start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time`
	// journalNotes: new messages of steps or nodes (none for a row that does not exist).
	journalNotes = `UPDATE op_journal j SET message = n.msg
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS n(op, phase, step, node, msg)
		WHERE j.op_occ_id = n.op AND j.phase = n.phase AND j.step = n.step AND j.node = n.node`
)

// journalCols are the statement's columns, as arrays.
type journalCols struct {
	op, phase, step, node, state []string
	idx                          []int32
	msg, err, out                []*string // NULL when empty
}

func newJournalCols(n int) *journalCols {
	return &journalCols{op: make([]string, 0, n), phase: make([]string, 0, n), step: make([]string, 0, n),
		node: make([]string, 0, n), state: make([]string, 0, n), idx: make([]int32, 0, n),
		msg: make([]*string, 0, n), err: make([]*string, 0, n), out: make([]*string, 0, n)}
}

// add appends r's columns; the message and the error point into r, which
// does not change once queued.
func (c *journalCols) add(r *journalRow) {
	e := &r.e
	c.op, c.phase, c.step, c.node = append(c.op, e.OpOccID), append(c.phase, e.Phase), append(c.step, e.Step), append(c.node, e.Node)
	c.state, c.idx = append(c.state, e.State), append(c.idx, int32(e.StepIndex))
	c.msg, c.err = append(c.msg, nonEmpty(&e.Message)), append(c.err, nonEmpty(&e.Error))
	var out *string // text: pgx would send a [][]byte as bytea[]
	if len(e.Output) > 0 {
		s := string(e.Output)
		out = &s
	}
	c.out = append(c.out, out)
}

// nonEmpty is p, or nil (NULL) when *p is empty.
func nonEmpty(p *string) *string {
	if *p == "" {
		return nil
	}
	return p
}
