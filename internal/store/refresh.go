package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// settledCond holds for an INSTANTIATED instance that no LCM operation is
// working on and whose latest operation did not fail: the only instances
// whose records a background refresh may rewrite (Tacker's sync_db skips
// the others too: their records are what an operator resolves by hand).
const settledCond = `i.instantiation_state = 'INSTANTIATED'
	AND NOT EXISTS (SELECT 1 FROM vnf_lcm_op_occs o WHERE o.vnf_instance_id = i.id AND o.stage IN ` + activeStages + `)
	AND COALESCE((SELECT o.operation_state FROM vnf_lcm_op_occs o WHERE o.vnf_instance_id = i.id
		ORDER BY o.seq DESC LIMIT 1), '') <> 'FAILED'`

// SettledInstances returns up to limit INSTANTIATED instances after seq
// (keyset order) that no operation is working on and whose latest
// operation did not fail, for a background refresh of their records.
func (s *Store) SettledInstances(ctx context.Context, afterSeq int64, limit int) ([]*Instance, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+instanceCols+` FROM vnf_instances i
		WHERE i.seq > $1 AND `+settledCond+` ORDER BY i.seq LIMIT $2`, afterSeq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Instance
	for rows.Next() {
		in, err := scanInstance(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// RefreshInstance replaces a settled instance's stored document by in (as
// read at version, then refreshed from its VIM) unless it changed in the
// meantime: another version, an operation accepted for it, or its latest
// operation failed. The instance row lock serialises it against
// CreateOpOcc, so an operation never starts from a document a refresh
// then overwrites, nor a refresh from one an operation is changing.
// Reports whether it wrote. No operation occurrence and no notification
// are made: the records follow the VIM, the VNF's lifecycle did not move.
func (s *Store) RefreshInstance(ctx context.Context, in *model.VnfInstance, version int64) (bool, error) {
	wrote := false
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock first, then check in a statement of its own: its snapshot,
		// taken with the lock held, sees every operation accepted before.
		var cur int64
		err := tx.QueryRow(ctx, `SELECT version FROM vnf_instances WHERE id = $1 FOR UPDATE`, in.ID).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil || cur != version {
			return err
		}
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT `+settledCond+` FROM vnf_instances i WHERE i.id = $1`, in.ID).Scan(&ok); err != nil || !ok {
			return err
		}
		if err := writeInstance(ctx, tx, in); err != nil {
			return fmt.Errorf("refreshing VNF instance %s: %w", in.ID, err)
		}
		wrote = true
		return nil
	})
	return wrote, err
}
