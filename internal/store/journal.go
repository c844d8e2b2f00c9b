package store

import (
	"context"
	"time"
)

// Journal phases.
const (
	PhaseRun      = "run"
	PhaseRollback = "rollback"
)

// JournalEntry is one step (Node == "") or one node checkpoint of a step.
type JournalEntry struct {
	OpOccID   string
	Phase     string
	StepIndex int
	Step      string
	Node      string
	State     string
	Attempt   int
	Message   string
	Error     string
	Output    []byte
	StartTime *time.Time
	EndTime   *time.Time
}

// JournalBegin records that a step or node starts (again), fenced by the lease owner.
func (s *Store) JournalBegin(ctx context.Context, owner string, e JournalEntry) error {
	return s.journalWrite(ctx, owner, JournalBeginKind, e, nil)
}

// JournalNote updates the message of a running step or node.
func (s *Store) JournalNote(ctx context.Context, owner string, e JournalEntry) error {
	return s.journalWrite(ctx, owner, JournalNoteKind, e, nil)
}

// JournalEnd records the end of a step or node. When work is non-nil the op's
// working copy is replaced in the same transaction, so a resumed operation
// never sees a step as done without its effects.
func (s *Store) JournalEnd(ctx context.Context, owner string, e JournalEntry, work []byte) error {
	return s.journalWrite(ctx, owner, JournalEndKind, e, work)
}

func (s *Store) journalWrite(ctx context.Context, owner, kind string, e JournalEntry, work []byte) error {
	return s.WriteOps(ctx, []OpWrite{{OpOccID: e.OpOccID, Owner: owner, Work: work,
		Journal: []JournalWrite{{Kind: kind, Entry: e}}}})[0].Err
}

// Journal returns the journal entries of the given ops in step order, in one query.
func (s *Store) Journal(ctx context.Context, opIDs []string) (map[string][]JournalEntry, error) {
	out := make(map[string][]JournalEntry, len(opIDs))
	if len(opIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT op_occ_id, phase, step_index, step, node, state, attempt,
		COALESCE(message,''), COALESCE(error,''), output, start_time, end_time
		FROM op_journal WHERE op_occ_id = ANY($1::uuid[])
		ORDER BY op_occ_id, phase DESC, step_index, node = '' DESC, start_time NULLS LAST, node`, opIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e JournalEntry
		if err := rows.Scan(&e.OpOccID, &e.Phase, &e.StepIndex, &e.Step, &e.Node, &e.State, &e.Attempt,
			&e.Message, &e.Error, &e.Output, &e.StartTime, &e.EndTime); err != nil {
			return nil, err
		}
		out[e.OpOccID] = append(out[e.OpOccID], e)
	}
	return out, rows.Err()
}

// ClearRollbackJournal removes rollback entries so a new rollback attempt starts clean
// of stale failures (completed undo steps are kept and skipped).
func (s *Store) ClearRollbackJournal(ctx context.Context, opID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM op_journal WHERE op_occ_id=$1 AND phase='rollback' AND state <> 'COMPLETED'`, opID)
	return err
}
