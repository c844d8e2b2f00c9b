package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/secrets"
)

// TaskSealChangedInfo seals the plain-text secrets that builds before
// 35ea10f left in MODIFY_INFO ops' changedInfo (migration 0016).
const TaskSealChangedInfo = "seal-changed-info"

// PendingTasks names the tasks migrations queued for the server (table
// pending_tasks), oldest first.
func (s *Store) PendingTasks(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT name FROM pending_tasks ORDER BY created_at, name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TaskDone removes a task that was done; a task another process removed
// first is no error.
func (s *Store) TaskDone(ctx context.Context, name string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM pending_tasks WHERE name=$1`, name)
	return err
}

// SealChangedInfo hands the changedInfo of every MODIFY_INFO op to fn at
// its place (OpPlace(id, "changed_info")) and writes back what fn changed;
// it returns how many rows changed.
func (s *Store) SealChangedInfo(ctx context.Context, fn ResealFunc) (int, error) {
	if fn == nil {
		return 0, errors.New("store: SealChangedInfo needs a function")
	}
	return s.resealRows(ctx,
		`SELECT id::text, changed_info::text FROM vnf_lcm_op_occs WHERE operation = 'MODIFY_INFO' AND changed_info IS NOT NULL`,
		`UPDATE vnf_lcm_op_occs SET changed_info=$2::jsonb WHERE id=$1::uuid`,
		func(k []string) secrets.Place { return OpPlace(k[0], "changed_info") }, fn)
}
