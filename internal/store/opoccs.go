package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
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

	created *Instance // CreatedFrom
}

// CreatedFrom is the instance as the transaction that created the op
// occurrence read it, locked (CreateOpOcc; nil otherwise): its identity,
// names, state and version — its jsonb attributes are not decoded. Until the
// operation itself writes it, the instance stays as it was then: it has one
// unfinished operation at most, only an operation's end changes it while
// one is unfinished (RefreshInstance writes settled instances only), and a
// re-seal under another key changes how it is stored, not what it holds.
func (o *OpOcc) CreatedFrom() *Instance { return o.created }

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

// GetOpOcc reads one operation occurrence.
func (s *Store) GetOpOcc(ctx context.Context, id string) (*OpOcc, error) {
	return scanOp(s.pool.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs WHERE id=$1`, id))
}

// activeStages are the stages (migration 0015: a column generated from the
// state, which the indexes name instead of it) of an unfinished operation
// (one per instance at most): STARTING, PROCESSING, ROLLING_BACK ('run')
// and FAILED_TEMP ('held').
const activeStages = `('run','held')`

func activeOp(ctx context.Context, q pgx.Tx, instID string) (*OpOcc, error) {
	op, err := scanOp(q.QueryRow(ctx, `SELECT `+opCols+` FROM vnf_lcm_op_occs
		WHERE vnf_instance_id=$1 AND stage IN `+activeStages, instID))
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
	// From, when set, is the instance as OpenForOp read it, with the
	// subscriptions: the op is then created in one statement as long as
	// the instance is still that version (see CreateOpOcc).
	From *InstancePackage
	// LeaseOwner, when set, creates the op leased to the run of this
	// process that will execute it, for Lease, as a claim would (attempts
	// 1) — but still STARTING: that run's first write moves it to
	// PROCESSING (OpWrite.Start). No engine is woken for it. Should the
	// process die first, the lease expires and any engine claims it.
	LeaseOwner string
	Lease      time.Duration
}

// OpenForOp is OpenInstanceAndPackage for a request that may create an
// operation: it reads every subscription in the same round trip, so that
// CreateOpOcc given this read (NewOp.From) makes the operation's creation
// one more. A subscription created before the request arrived is read.
// With instantiation, the read also returns what the instance's last
// completed instantiation left (InstancePackage.Instantiation), which an
// operation after it starts from.
func (s *Store) OpenForOp(ctx context.Context, id string, open Opener, instantiation bool) (*InstancePackage, error) {
	return s.openForOp(ctx, id, open, instantiation)
}

// leaseArgs are the lease columns of a new op: owner, interval, attempts.
func (n NewOp) leaseArgs() (owner, lease *string, attempts int) {
	if n.LeaseOwner == "" {
		return nil, nil, 0
	}
	l := n.Lease.String()
	return &n.LeaseOwner, &l, 1
}

// CreateOpOcc atomically checks the instance and creates the op occurrence in
// STARTING, waking the engines on commit (unless leased: NewOp.LeaseOwner).
// The instance row lock serialises concurrent requests; the partial unique
// index is the last line of defence.
//
// Given the instance as read before (NewOp.From, with the subscriptions),
// the op is created in one statement, one round trip: the instance row is
// locked and must still be the version read, no operation may be active on
// it, and the STARTING notification is built from what was read — as the
// path below would build it, since nothing changed. When that statement
// inserts nothing (the instance changed, an operation is active, the
// request does not fit the instance as read), the path below — a
// transaction that reads under the lock — answers precisely.
func (s *Store) CreateOpOcc(ctx context.Context, n NewOp) (*OpOcc, error) {
	if f := n.From; f != nil && f.withTargets && f.ID == n.VnfInstanceID &&
		(n.IfVersion == 0 || n.IfVersion == f.Version) && (n.RequireState == "" || n.RequireState == f.InstantiationState) {
		op, err := s.createCoalesced(ctx, n)
		if op != nil || (err != nil && !isUniqueViolation(err)) {
			return op, err
		}
		// A unique violation: an operation accepted at the same moment,
		// which the path below names.
	}
	if n.From != nil {
		s.createFallbacks.Add(1)
	}
	return s.createOpOcc(ctx, n)
}

// createOpAsRead is CreateOpOcc's one statement (nil, nil: not inserted),
// with the outbox rows of the STARTING notification nid (its body, to the
// subscriptions subs).
func (s *Store) createOpAsRead(ctx context.Context, n NewOp, subs []string, nid string, body []byte) (*OpOcc, error) {
	in := n.From.Instance
	owner, lease, attempts := n.leaseArgs()
	args := []any{n.ID, n.VnfInstanceID, n.Operation, n.OperationParams, n.DriverParams, in.Version, owner, lease, attempts}
	query := createOpAsRead
	if len(subs) == 0 {
		query, args = createOpAsReadAlone, append(args, ChannelOps)
	} else {
		args = append(args, nid, subs, string(body), ChannelOps, ChannelOutbox)
	}
	op, err := scanOp(extraRow{s.pool.QueryRow(ctx, query, args...), []any{nil, nil}})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	op.created = in
	return op, nil
}

// createOpAsRead inserts the op if the instance is still the version read
// ($6) and has no active operation, with its STARTING notification's
// outbox rows (a subscription deleted since it was read is skipped) and the
// wake-ups. The instance's lock is taken first; a concurrent creation that
// committed while this statement waited for it is not seen by its
// snapshot, and the unique index refuses the second op.
const createOpAsRead = createOpLocked + `,
	n AS (INSERT INTO notification_outbox (notification_id, subscription_id, body)
		SELECT $10::uuid, s.id, $12::text FROM o, unnest($11::uuid[]) WITH ORDINALITY AS u(sid, k) JOIN subscriptions s ON s.id = u.sid
		ORDER BY u.k)
	SELECT ` + opCols + `, CASE WHEN $7::text IS NULL THEN pg_notify($13, $1::uuid::text) END,
		CASE WHEN cardinality($11::uuid[]) > 0 THEN pg_notify($14, '') END FROM o`

// createOpAsReadAlone is createOpAsRead when no subscription wants the
// STARTING notification: no outbox rows to write, so no statement part that
// writes them — its executor state (the outbox insert, its indexes, the join
// with the subscriptions) cost about a fifth of the statement's CPU even when
// it wrote nothing. $10 is the ops' wake-up channel.
const createOpAsReadAlone = createOpLocked + `
	SELECT ` + opCols + `, CASE WHEN $7::text IS NULL THEN pg_notify($10, $1::uuid::text) END, NULL FROM o`

// createOpLocked is the lock of the instance and the op's insert of
// createOpAsRead and createOpAsReadAlone.
const createOpLocked = `WITH i AS (SELECT id FROM vnf_instances WHERE id = $2::uuid AND version = $6 FOR UPDATE),
	o AS (INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state, operation_params, driver_params,
			lease_owner, lease_until, attempts)
		SELECT $1::uuid, i.id, $3::text, 'STARTING', $4::jsonb, $5::jsonb, $7::text, now() + $8::interval, $9::int FROM i
		WHERE NOT EXISTS (SELECT 1 FROM vnf_lcm_op_occs a WHERE a.vnf_instance_id = $2::uuid AND a.stage IN ` + activeStages + `)
		RETURNING ` + opCols + `)`

// createOpOcc is CreateOpOcc's transaction that reads under the lock.
func (s *Store) createOpOcc(ctx context.Context, n NewOp) (*OpOcc, error) {
	var created *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Round trips, not statements, are what a request waits for: the
		// checks in one, the insert in one, its notifications in one.
		var (
			in      *Instance
			active  *OpOcc
			targets []target
			b       pgx.Batch
		)
		b.Queue(`SELECT `+instanceCols+` FROM vnf_instances WHERE id=$1 FOR UPDATE`, n.VnfInstanceID).QueryRow(func(row pgx.Row) error {
			var err error
			in, err = scanInstanceHead(row)
			return err
		})
		b.Queue(`SELECT `+opCols+` FROM vnf_lcm_op_occs WHERE vnf_instance_id=$1 AND stage IN `+activeStages,
			n.VnfInstanceID).QueryRow(func(row pgx.Row) error {
			var err error
			if active, err = scanOp(row); errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		})
		queueTargets(&b, &targets)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		if n.IfVersion != 0 && in.Version != n.IfVersion {
			return &PreconditionError{Current: in.Version}
		}
		if active != nil {
			return &ConflictError{BlockingOp: active, State: active.OperationState, Reason: blockingReason(n.VnfInstanceID, active, n.Verb)}
		}
		if n.RequireState != "" && in.InstantiationState != n.RequireState {
			return &ConflictError{State: in.InstantiationState, Reason: stateReason(n, in.InstantiationState)}
		}
		var err error
		owner, lease, attempts := n.leaseArgs()
		created, err = scanOp(tx.QueryRow(ctx, `INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state, operation_params, driver_params,
				lease_owner, lease_until, attempts)
			VALUES ($1,$2,$3,'STARTING',$4,$5,$6,now()+$7::interval,$8) RETURNING `+opCols,
			n.ID, n.VnfInstanceID, n.Operation, n.OperationParams, n.DriverParams, owner, lease, attempts))
		if err != nil {
			return err
		}
		created.created = in
		// The instance is locked: as read above, it is what the event reports.
		var nb pgx.Batch
		if err := queueOutbox(&nb, targets, opEventOf(created, lccn.InstanceOf(&in.VnfInstance))); err != nil {
			return err
		}
		if nb.Len() > 0 {
			queueWakeUp(&nb)
		}
		if owner == nil {
			nb.Queue(`SELECT pg_notify($1, $2)`, ChannelOps, n.ID)
		}
		if nb.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, &nb).Close()
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

// CancelOp requests cancellation. An op still STARTING that no engine holds
// (never claimed, or leased to a process that died before running it) is
// rolled back at once (nothing ran); otherwise the owning engine is told
// through the cancel flag, its heartbeat and a notification — a run that
// holds a STARTING op ends it ROLLED_BACK before its first step (the flag
// keeps its first write from moving it to PROCESSING: OpWrite.Start).
func (s *Store) CancelOp(ctx context.Context, id, mode string) (*OpOcc, error) {
	var op *OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		op, err = scanOp(tx.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET operation_state='ROLLED_BACK',
			state_entered_time=now(), cancel_mode=$2, is_cancel_pending=false, lease_owner=NULL, lease_until=NULL
			WHERE id=$1 AND operation_state='STARTING' AND (lease_owner IS NULL OR lease_until < now()) RETURNING `+opCols, id, mode))
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
	ops, err := s.claim(ctx, owner, false, lease, 1)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	return ops[0], nil
}

// ClaimN takes up to n runnable ops, oldest first, in one transaction (see
// Claim). Each gets a lease owner of its own: prefix + "/" + 8 random hex
// digits.
func (s *Store) ClaimN(ctx context.Context, prefix string, lease time.Duration, n int) ([]*OpOcc, error) {
	return s.claim(ctx, prefix, true, lease, n)
}

func (s *Store) claim(ctx context.Context, owner string, suffix bool, lease time.Duration, n int) ([]*OpOcc, error) {
	var ops []*OpOcc
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		ops = ops[:0]
		// The claim and the subscriptions in one round trip.
		var (
			b       pgx.Batch
			targets []target
		)
		fresh := map[string]bool{}
		// A STARTING op that a cancel reached (its accepting process died
		// before its first write) has run nothing: it ends ROLLED_BACK here,
		// as CancelOp ends one no engine holds, and is not returned.
		b.Queue(`UPDATE vnf_lcm_op_occs SET
				operation_state = CASE WHEN operation_state='STARTING' AND is_cancel_pending THEN 'ROLLED_BACK'
					WHEN operation_state='STARTING' THEN 'PROCESSING' ELSE operation_state END,
				state_entered_time = CASE WHEN operation_state='STARTING' THEN now() ELSE state_entered_time END,
				lease_owner = CASE WHEN operation_state='STARTING' AND is_cancel_pending THEN NULL
					WHEN $4 THEN $1 || '/' || substr(md5(random()::text), 1, 8) ELSE $1 END,
				lease_until = CASE WHEN operation_state='STARTING' AND is_cancel_pending THEN NULL ELSE now()+$2::interval END,
				attempts = CASE WHEN operation_state='STARTING' AND is_cancel_pending THEN attempts ELSE attempts+1 END,
				is_cancel_pending = is_cancel_pending AND operation_state <> 'STARTING'
			FROM (SELECT id AS claimed, operation_state AS prev FROM vnf_lcm_op_occs
				WHERE stage = 'run'
				  AND (lease_until IS NULL OR lease_until < now())
				ORDER BY seq FOR UPDATE SKIP LOCKED LIMIT $3) c
			WHERE id = c.claimed RETURNING c.prev, `+opCols, owner, lease.String(), n, suffix).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var prev string
				op, err := scanOp(leadRow{rows, []any{&prev}})
				if err != nil {
					return err
				}
				ops = append(ops, op)
				fresh[op.ID] = prev == model.StateStarting
			}
			return rows.Err()
		})
		queueTargets(&b, &targets)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		// Oldest first, and their notifications in that order.
		slices.SortFunc(ops, func(a, b *OpOcc) int { return cmp.Compare(a.Seq, b.Seq) })
		var started []*OpOcc
		runnable := ops[:0:0]
		for _, op := range ops {
			if fresh[op.ID] {
				started = append(started, op)
			}
			if op.OperationState != model.StateRolledBack {
				runnable = append(runnable, op)
			}
		}
		ops = runnable
		return notifyOps(ctx, tx, started, targets)
	})
	return ops, err
}

// notifyOps queues the notifications of several ops' new states in tx, in
// order, to targets (the subscriptions), reading the instances once, and
// only when a subscription may want one of them.
func notifyOps(ctx context.Context, tx pgx.Tx, ops []*OpOcc, targets []target) error {
	wanted := false
	for _, op := range ops {
		ev := opEventOf(op, lccn.Instance{})
		for _, t := range targets {
			wanted = wanted || t.f.MatchOp(ev)
		}
	}
	if !wanted {
		return nil
	}
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = op.VnfInstanceID
	}
	insts := map[string]lccn.Instance{}
	var b pgx.Batch
	b.Queue(`SELECT `+instanceCols+` FROM vnf_instances WHERE id = ANY($1::uuid[])`, ids).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			in, err := scanInstanceHead(rows)
			if err != nil {
				return err
			}
			insts[in.ID] = lccn.InstanceOf(&in.VnfInstance)
		}
		return rows.Err()
	})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}
	var nb pgx.Batch
	for _, op := range ops {
		if err := queueOutbox(&nb, targets, opEventOf(op, insts[op.VnfInstanceID])); err != nil {
			return err
		}
	}
	return sendOutbox(ctx, tx, &nb)
}

// Heartbeat renews the lease and reports a pending cancel.
func (s *Store) Heartbeat(ctx context.Context, id, owner string, lease time.Duration) (cancelPending bool, mode string, err error) {
	var m *string
	err = s.pool.QueryRow(ctx, `UPDATE vnf_lcm_op_occs SET lease_until=now()+$3::interval
		WHERE id=$1 AND lease_owner=$2 AND operation_state IN ('STARTING','PROCESSING','ROLLING_BACK')
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
	// Docs, with Instance, are its jsonb attributes as its sealer encoded
	// them (InstanceDocs), so that they are not encoded again.
	Docs InstanceDocs
	// KeepWork keeps the working copy (FAILED_TEMP: retry resumes from it).
	KeepWork bool
}

// FinishOp ends the engine's lease with a final or FAILED_TEMP state, fenced by owner.
func (s *Store) FinishOp(ctx context.Context, id, owner string, f Finish) (*OpOcc, error) {
	r := s.WriteOps(ctx, []OpWrite{{OpOccID: id, Owner: owner, Finish: &f}})[0]
	return r.Op, r.Err
}
