package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
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
}

// OpWriteResult is the outcome of one OpWrite.
type OpWriteResult struct {
	Op  *OpOcc // the op after a Finish
	Err error  // ErrLeaseLost when the owner no longer holds the lease
}

// fenced makes a statement do nothing unless $1's lease is held by $2; the
// group's first statement for the op has locked its row already.
const fenced = `EXISTS (SELECT 1 FROM vnf_lcm_op_occs WHERE id=$1 AND lease_owner=$2)`

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
	anyFinish := false
	for i, w := range ws {
		if f := w.Finish; f != nil {
			anyFinish = true
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
	out := make([]OpWriteResult, len(ws))
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// One round trip for every write of the group.
		var b pgx.Batch
		for i, w := range ws {
			// The fence: the op's row locked while its owner holds the lease
			// (by the new working copy's update when there is one: the lock
			// comes with it), so it cannot change hands until the commit.
			if w.Work != nil {
				b.Queue(`UPDATE vnf_lcm_op_occs SET work=$3 WHERE id=$1 AND lease_owner=$2`, w.OpOccID, w.Owner, w.Work).
					Exec(func(tag pgconn.CommandTag) error {
						if tag.RowsAffected() == 0 {
							out[i].Err = ErrLeaseLost
						}
						return nil
					})
			} else {
				b.Queue(`SELECT 1 FROM vnf_lcm_op_occs WHERE id=$1 AND lease_owner=$2 FOR NO KEY UPDATE`, w.OpOccID, w.Owner).
					QueryRow(func(row pgx.Row) error {
						var one int
						err := row.Scan(&one)
						if errors.Is(err, pgx.ErrNoRows) {
							out[i].Err = ErrLeaseLost
							return nil
						}
						return err
					})
			}
			for _, j := range w.Journal {
				queueJournal(&b, w.Owner, j)
			}
			f := w.Finish
			if f == nil {
				continue
			}
			if f.Instance != nil {
				q, args, err := instanceUpdate(f.Instance)
				if err != nil {
					return err
				}
				b.Queue(q+` AND EXISTS (SELECT 1 FROM vnf_lcm_op_occs WHERE id=$18 AND lease_owner=$19)`,
					append(args, w.OpOccID, w.Owner)...).Exec(func(tag pgconn.CommandTag) error {
					if tag.RowsAffected() == 0 && out[i].Err == nil {
						return fmt.Errorf("store: VNF instance %s: %w", f.Instance.ID, ErrNotFound)
					}
					return nil
				})
			}
			a := fargs[i]
			b.Queue(`UPDATE vnf_lcm_op_occs SET operation_state=$3, state_entered_time=clock_timestamp(),
				error=$4, resource_changes=$5, changed_info=$6, changed_ext_connectivity=$7,
				is_cancel_pending=false, lease_owner=NULL, lease_until=NULL,
				work = CASE WHEN $8 THEN work ELSE NULL END
				WHERE id=$1 AND lease_owner=$2 RETURNING `+opCols, w.OpOccID, w.Owner, f.State, a.perr, a.rc, a.ci, a.cec, f.KeepWork).
				QueryRow(func(row pgx.Row) error {
					op, err := scanOp(row)
					if errors.Is(err, ErrNotFound) {
						return nil // the fence said so already
					}
					out[i].Op = op
					return err
				})
		}
		var targets []target
		if anyFinish {
			queueTargets(&b, &targets)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		if !anyFinish {
			return nil
		}
		// The notifications of the ends, committed with them.
		var nb pgx.Batch
		for i := range ws {
			op := out[i].Op
			if op == nil || out[i].Err != nil {
				continue
			}
			var (
				ev  lccn.Event
				err error
			)
			if in := ws[i].Finish.Instance; in != nil {
				ev = opEventOf(op, lccn.InstanceOf(in))
			} else if ev, err = opEvent(ctx, tx, op); err != nil { // the instance as stored
				return err
			}
			if err := queueOutbox(&nb, targets, ev); err != nil {
				return err
			}
		}
		return sendOutbox(ctx, tx, &nb)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// queueJournal queues one fenced journal change (see JournalBegin, JournalEnd, JournalNote).
func queueJournal(b *pgx.Batch, owner string, j JournalWrite) {
	e := j.Entry
	switch j.Kind {
	case JournalBeginKind:
		b.Queue(`INSERT INTO op_journal (op_occ_id, phase, step_index, step, node, state, message, start_time)
			SELECT $1,$3,$4,$5,$6,'RUNNING',$7,clock_timestamp() WHERE `+fenced+`
			ON CONFLICT (op_occ_id, phase, step, node) DO UPDATE SET state='RUNNING', attempt=op_journal.attempt+1,
				message=EXCLUDED.message, error=NULL, start_time=EXCLUDED.start_time, end_time=NULL`,
			e.OpOccID, owner, e.Phase, e.StepIndex, e.Step, e.Node, nullable(e.Message))
	case JournalNoteKind:
		b.Queue(`UPDATE op_journal SET message=$6 WHERE op_occ_id=$1 AND phase=$3 AND step=$4 AND node=$5 AND `+fenced,
			e.OpOccID, owner, e.Phase, e.Step, e.Node, nullable(e.Message))
	default:
		b.Queue(`INSERT INTO op_journal (op_occ_id, phase, step_index, step, node, state, message, error, output, start_time, end_time)
			SELECT $1,$3,$4,$5,$6,$7,$8,$9,$10,clock_timestamp(),clock_timestamp() WHERE `+fenced+`
			ON CONFLICT (op_occ_id, phase, step, node) DO UPDATE SET state=EXCLUDED.state,
				message=COALESCE(EXCLUDED.message, op_journal.message), error=EXCLUDED.error,
				output=COALESCE(EXCLUDED.output, op_journal.output), end_time=EXCLUDED.end_time`,
			e.OpOccID, owner, e.Phase, e.StepIndex, e.Step, e.Node, e.State, nullable(e.Message), nullable(e.Error), e.Output)
	}
}
