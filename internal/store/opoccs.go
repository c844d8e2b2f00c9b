package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// OpOcc is a stored LCM operation occurrence with its queue state.
type OpOcc struct {
	model.VnfLcmOpOcc
	Seq        int64
	LeaseOwner string
	Attempts   int
	// Work is the sealed working copy of the instance between steps (nil before the first step).
	Work []byte
	// DriverParams are the management drivers' parameters of the operation
	// ({driver: parameters}, sealed JSON), parsed when it was accepted.
	DriverParams []byte
}

const opCols = `id, seq, vnf_instance_id, operation, operation_state, state_entered_time, start_time,
	grant_id, is_automatic_invocation, operation_params, is_cancel_pending, cancel_mode, error,
	resource_changes, changed_info, changed_ext_connectivity, lease_owner, attempts, work, driver_params`

func scanOp(row pgx.Row) (*OpOcc, error) {
	var (
		op                        OpOcc
		grant, cancel, owner      *string
		params, perr, rc, ci, cec []byte
	)
	err := row.Scan(&op.ID, &op.Seq, &op.VnfInstanceID, &op.Operation, &op.OperationState, &op.StateEnteredTime,
		&op.StartTime, &grant, &op.IsAutomaticInvocation, &params, &op.IsCancelPending, &cancel, &perr, &rc, &ci,
		&cec, &owner, &op.Attempts, &op.Work, &op.DriverParams)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	op.GrantID, op.CancelMode, op.LeaseOwner = deref(grant), deref(cancel), deref(owner)
	op.OperationParams = json.RawMessage(params)
	op.StateEnteredTime, op.StartTime = op.StateEnteredTime.UTC(), op.StartTime.UTC()
	for _, f := range []struct {
		raw []byte
		dst any
	}{{perr, &op.Error}, {rc, &op.ResourceChanges}, {ci, &op.ChangedInfo}, {cec, &op.ChangedExtConnectivity}} {
		if len(f.raw) > 0 {
			if err := json.Unmarshal(f.raw, f.dst); err != nil {
				return nil, fmt.Errorf("store: op occ %s: %w", op.ID, err)
			}
		}
	}
	return &op, nil
}

// InstantiationParams returns the management drivers' parameters of the
// instance's last completed instantiation (sealed JSON at
// OpPlace(opID, "driver_params"); nil: none) and that operation's id.
func (s *Store) InstantiationParams(ctx context.Context, instID string) (sealed []byte, opID string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT driver_params, id::text FROM vnf_lcm_op_occs
		WHERE vnf_instance_id=$1 AND operation='INSTANTIATE' AND operation_state='COMPLETED'
		ORDER BY seq DESC LIMIT 1`, instID).Scan(&sealed, &opID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	return sealed, opID, err
}

// GetOpOcc reads one operation occurrence.
func (s *Store) GetOpOcc(ctx context.Context, id string) (*OpOcc, error) {
	return scanOp(s.pool.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs WHERE id=$1`, id))
}

func activeOp(ctx context.Context, q pgx.Tx, instID string) (*OpOcc, error) {
	op, err := scanOp(q.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs
		WHERE vnf_instance_id=$1 AND operation_state IN ('STARTING','PROCESSING','FAILED_TEMP','ROLLING_BACK')`, instID))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return op, err
}

// NewOp describes an operation occurrence to create.
type NewOp struct {
	ID              string
	VnfInstanceID   string
	Operation       string
	OperationParams []byte // sealed JSON
	// RequireState is the instantiation state the instance must be in ("" = any).
	RequireState string
	// IfVersion, when non-zero, must equal the instance's current ETag.
	IfVersion int64
	// Verb names the task in conflict messages ("instantiated", "scaled", ...).
	Verb string
	// DriverParams are the management drivers' parameters (sealed JSON; nil: none).
	DriverParams []byte
}

// CreateOpOcc atomically checks the instance and creates the op occurrence in
// STARTING, waking the engines on commit. The instance row lock serialises
// concurrent requests; the partial unique index is the last line of defence.
func (s *Store) CreateOpOcc(ctx context.Context, n NewOp) (*OpOcc, error) {
	var created *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		in, err := scanInstance(tx.QueryRow(ctx, `SELECT `+instanceCols+` FROM vnf_instances WHERE id=$1 FOR UPDATE`, n.VnfInstanceID))
		if err != nil {
			return err
		}
		if n.IfVersion != 0 && in.Version != n.IfVersion {
			return &PreconditionError{Current: in.Version}
		}
		if op, err := activeOp(ctx, tx, n.VnfInstanceID); err != nil {
			return err
		} else if op != nil {
			return &ConflictError{BlockingOp: op, State: op.OperationState, Reason: blockingReason(n.VnfInstanceID, op, n.Verb)}
		}
		if n.RequireState != "" && in.InstantiationState != n.RequireState {
			return &ConflictError{State: in.InstantiationState, Reason: stateReason(n, in.InstantiationState)}
		}
		created, err = scanOp(tx.QueryRow(ctx, `INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state, operation_params, driver_params)
			VALUES ($1,$2,$3,'STARTING',$4,$5) RETURNING `+opCols, n.ID, n.VnfInstanceID, n.Operation, n.OperationParams, n.DriverParams))
		if err != nil {
			return err
		}
		if err := notifyOp(ctx, tx, created); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ChannelOps, n.ID)
		return err
	})
	if err != nil && isUniqueViolation(err) {
		return nil, &ConflictError{Reason: fmt.Sprintf("VNF instance %s cannot be %s: another LCM operation was accepted for it at the same moment; list its operations with GET /vnflcm/v1/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,%s)", n.VnfInstanceID, n.Verb, n.VnfInstanceID)}
	}
	return created, err
}

func stateReason(n NewOp, state string) string {
	if state == model.Instantiated {
		return fmt.Sprintf("VNF instance %s is already INSTANTIATED and cannot be %s; terminate it first", n.VnfInstanceID, n.Verb)
	}
	return fmt.Sprintf("VNF instance %s is NOT_INSTANTIATED and cannot be %s; instantiate it first (POST /vnflcm/v1/vnf_instances/%s/instantiate)", n.VnfInstanceID, n.Verb, n.VnfInstanceID)
}

// transitionOp moves an op from one of the `from` states to `to` for the
// error-handling tasks; it answers ErrNotFound or a ConflictError naming the
// current state when the op cannot move.
func (s *Store) transitionOp(ctx context.Context, id string, from []string, set string, args []any, what string) (*OpOcc, error) {
	q := `UPDATE vnf_lcm_op_occs SET ` + set + `, state_entered_time=now()
		WHERE id=$1 AND operation_state = ANY($2) RETURNING ` + opCols
	var op *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		op, err = scanOp(tx.QueryRow(ctx, q, append([]any{id, from}, args...)...))
		if errors.Is(err, ErrNotFound) {
			cur, gerr := scanOp(tx.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs WHERE id=$1`, id))
			if gerr != nil {
				return gerr
			}
			return &ConflictError{State: cur.OperationState, Reason: fmt.Sprintf(
				"LCM operation occurrence %s is %s; %s", id, cur.OperationState, what)}
		}
		if err != nil {
			return err
		}
		if err := notifyOp(ctx, tx, op); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ChannelOps, id)
		return err
	})
	return op, err
}

// RetryOp puts a FAILED_TEMP op back into PROCESSING with no lease, so an engine resumes it.
func (s *Store) RetryOp(ctx context.Context, id string) (*OpOcc, error) {
	return s.transitionOp(ctx, id, []string{model.StateFailedTemp},
		`operation_state='PROCESSING', lease_owner=NULL, lease_until=NULL, is_cancel_pending=false, cancel_mode=NULL`, nil,
		"only an operation in FAILED_TEMP can be retried")
}

// RollbackOp moves a FAILED_TEMP op to ROLLING_BACK with no lease.
func (s *Store) RollbackOp(ctx context.Context, id string) (*OpOcc, error) {
	return s.transitionOp(ctx, id, []string{model.StateFailedTemp},
		`operation_state='ROLLING_BACK', lease_owner=NULL, lease_until=NULL, is_cancel_pending=false, cancel_mode=NULL`, nil,
		"only an operation in FAILED_TEMP can be rolled back")
}

// FailOp marks a FAILED_TEMP op as finally FAILED.
func (s *Store) FailOp(ctx context.Context, id string) (*OpOcc, error) {
	return s.transitionOp(ctx, id, []string{model.StateFailedTemp},
		`operation_state='FAILED', lease_owner=NULL, lease_until=NULL, work=NULL`, nil,
		"only an operation in FAILED_TEMP can be marked as failed")
}

// CancelOp requests cancellation. An op still STARTING that no engine has
// claimed is rolled back at once (nothing ran); otherwise the owning engine is
// told through the cancel flag, its heartbeat and a notification.
func (s *Store) CancelOp(ctx context.Context, id, mode string) (*OpOcc, error) {
	var op *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		op, err = scanOp(tx.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET operation_state='ROLLED_BACK',
			state_entered_time=now(), cancel_mode=$2, is_cancel_pending=false
			WHERE id=$1 AND operation_state='STARTING' AND lease_owner IS NULL RETURNING `+opCols, id, mode))
		if err == nil {
			return notifyOp(ctx, tx, op)
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		op, err = scanOp(tx.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET is_cancel_pending=true, cancel_mode=$2
			WHERE id=$1 AND operation_state IN ('STARTING','PROCESSING','ROLLING_BACK') RETURNING `+opCols, id, mode))
		if errors.Is(err, ErrNotFound) {
			cur, gerr := scanOp(tx.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs WHERE id=$1`, id))
			if gerr != nil {
				return gerr
			}
			return &ConflictError{State: cur.OperationState, Reason: fmt.Sprintf(
				"LCM operation occurrence %s is %s; only an operation in STARTING, PROCESSING or ROLLING_BACK can be cancelled", id, cur.OperationState)}
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ChannelCancel, id)
		return err
	})
	return op, err
}

// Claim takes the oldest runnable op: a new one (STARTING → PROCESSING) or one
// whose engine stopped renewing its lease. owner must be unique per claim.
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*OpOcc, error) {
	var op *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var id, prev string
		err := tx.QueryRow(ctx, `SELECT id, operation_state FROM vnf_lcm_op_occs
			WHERE operation_state IN ('STARTING','PROCESSING','ROLLING_BACK')
			  AND (lease_until IS NULL OR lease_until < now())
			ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT 1`).Scan(&id, &prev)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		op, err = scanOp(tx.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET
				operation_state = CASE WHEN operation_state='STARTING' THEN 'PROCESSING' ELSE operation_state END,
				state_entered_time = CASE WHEN operation_state='STARTING' THEN now() ELSE state_entered_time END,
				lease_owner=$2, lease_until=now()+$3::interval, attempts=attempts+1
			WHERE id=$1 RETURNING `+opCols, id, owner, lease.String()))
		if err != nil || prev != model.StateStarting {
			return err
		}
		return notifyOp(ctx, tx, op)
	})
	return op, err
}

// Heartbeat renews the lease and reports a pending cancel.
func (s *Store) Heartbeat(ctx context.Context, id, owner string, lease time.Duration) (cancelPending bool, mode string, err error) {
	var m *string
	err = s.pool.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET lease_until=now()+$3::interval
		WHERE id=$1 AND lease_owner=$2 AND operation_state IN ('PROCESSING','ROLLING_BACK')
		RETURNING is_cancel_pending, cancel_mode`, id, owner, lease.String()).Scan(&cancelPending, &m)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", ErrLeaseLost
	}
	return cancelPending, deref(m), err
}

// Finish describes how an engine ends its work on an op.
type Finish struct {
	State                  string
	Error                  *model.ProblemDetails
	ResourceChanges        *model.ResourceChanges
	ChangedInfo            map[string]any
	ChangedExtConnectivity []model.ExtVirtualLinkInfo
	// Instance, when set, replaces the stored instance in the same transaction.
	Instance *model.VnfInstance
	// KeepWork keeps the working copy (FAILED_TEMP: retry resumes from it).
	KeepWork bool
}

// FinishOp ends the engine's lease with a final or FAILED_TEMP state, fenced by owner.
func (s *Store) FinishOp(ctx context.Context, id, owner string, f Finish) (*OpOcc, error) {
	perr, err := jsonOrNull(f.Error)
	if err != nil {
		return nil, err
	}
	rc, err := jsonOrNull(f.ResourceChanges)
	if err != nil {
		return nil, err
	}
	ci, err := jsonOrNull(f.ChangedInfo)
	if err != nil {
		return nil, err
	}
	cec, err := jsonOrNull(f.ChangedExtConnectivity)
	if err != nil {
		return nil, err
	}
	var op *OpOcc
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		op, err = scanOp(tx.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET operation_state=$3, state_entered_time=now(),
			error=$4, resource_changes=$5, changed_info=$6, changed_ext_connectivity=$7,
			is_cancel_pending=false, lease_owner=NULL, lease_until=NULL,
			work = CASE WHEN $8 THEN work ELSE NULL END
			WHERE id=$1 AND lease_owner=$2 RETURNING `+opCols, id, owner, f.State, perr, rc, ci, cec, f.KeepWork))
		if errors.Is(err, ErrNotFound) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if f.Instance != nil {
			if err := writeInstance(ctx, tx, f.Instance); err != nil {
				return err
			}
		}
		return notifyOp(ctx, tx, op)
	})
	return op, err
}

// lockOwned locks the op row inside tx, fenced by the lease owner, so journal
// writes of an engine that lost its lease never land.
func (s *Store) lockOwned(ctx context.Context, tx pgx.Tx, id, owner string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM vnf_lcm_op_occs WHERE id=$1 AND lease_owner=$2 FOR NO KEY UPDATE`, id, owner).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLeaseLost
	}
	return err
}
