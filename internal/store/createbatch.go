package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// Creations given a read (CreateOpOcc's one statement) are coalesced: while
// one creation statement runs, the creations that arrive queue, and when it
// ends they go together, one statement and one commit for all of them. An
// idle server creates as before (no timer, no wait); under load — POSTs come
// in bursts, as notifications do — PostgreSQL builds a statement's executor
// state, commits and flushes the WAL once per batch instead of once per
// operation, and the VNFM makes one round trip.
//
// The batch's statement answers each creation as the single statement
// would: created, or not inserted (the instance is not the version read, an
// operation is active on it), which sends that creation to the transaction
// that reads under the lock. It never waits for a lock: an instance locked
// by another transaction is skipped (SKIP LOCKED) and its creation goes the
// single way, which waits as before — so a batch, which locks several
// instances, cannot deadlock with the group commit's finishes, which lock
// theirs in their own order. A batch holds one creation per instance (a
// second waits for the next batch). Should the batch's statement fail, each
// creation runs the single statement itself: the batch wrote nothing.
type opCreates struct {
	coalescer[pendingCreate]
	// hook, for tests, runs in a batch's leader before its statement with
	// the batch's size; an error it returns is taken for the statement's.
	hook func(n int) error
	// failed counts batches whose statement failed (for tests).
	failed atomic.Int64
}

// maxCreateBatch bounds the creations of one statement.
const maxCreateBatch = 64

func newOpCreates() opCreates {
	return opCreates{coalescer: coalescer[pendingCreate]{max: maxCreateBatch,
		key:   func(p *pendingCreate) string { return p.n.VnfInstanceID },
		abort: func(p *pendingCreate) { p.op, p.err = nil, errBatchPanicked }}}
}

// pendingCreate is one caller's creation and, once its batch ran, its answer.
type pendingCreate struct {
	n    NewOp
	subs []string // subscriptions its STARTING notification goes to
	nid  string   // that notification's id
	body []byte   // and its body
	op   *OpOcc
	err  error
	// alone: the batch failed, the creation runs the single statement.
	alone bool
}

// createCoalesced is createOpAsRead, coalesced with concurrent creations
// (opCreates): (nil, nil) when the op was not inserted.
func (s *Store) createCoalesced(ctx context.Context, n NewOp) (*OpOcc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := pendingCreate{n: n}
	in := n.From.Instance
	ev := opEventOf(&OpOcc{VnfLcmOpOcc: model.VnfLcmOpOcc{ID: n.ID, VnfInstanceID: n.VnfInstanceID, Operation: n.Operation,
		OperationState: model.StateStarting}}, lccn.InstanceOf(&in.VnfInstance))
	p.nid = uuid.NewString() // one notification id for every copy
	var err error
	if p.subs, p.body, err = outboxOf(n.From.targets, ev, p.nid); err != nil {
		return nil, err
	}
	r := s.creates.join(p, s.runCreates)
	if r.alone {
		return s.createOpAsRead(ctx, n, r.subs, r.nid, r.body)
	}
	return r.op, r.err
}

// runCreates runs a batch's statement and answers its creations.
func (s *Store) runCreates(batch []*member[pendingCreate]) {
	if h := s.creates.hook; h != nil {
		if err := h(len(batch)); err != nil {
			for _, m := range batch {
				m.v.alone = true
			}
			return
		}
	}
	if len(batch) == 1 {
		p := &batch[0].v
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		defer cancel()
		p.op, p.err = s.createOpAsRead(ctx, p.n, p.subs, p.nid, p.body)
		return
	}
	err := s.createBatch(batch)
	if err != nil {
		s.creates.failed.Add(1)
		s.log.Warn("a batch of operation creations failed; each is created alone", "creations", len(batch), "err", err)
		for _, m := range batch {
			m.v.alone = true
		}
	}
}

// batchTimeout bounds a batch's round trip (creations, reads), which runs
// for all its callers and on none's context.
const batchTimeout = 30 * time.Second

// createBatch creates the ops of batch in one statement; a creation not
// inserted keeps a nil op.
func (s *Store) createBatch(batch []*member[pendingCreate]) error {
	k := len(batch)
	var (
		ids, iids, ops, params  = make([]string, k), make([]string, k), make([]string, k), make([]string, k)
		dparams, owners, leases = make([]*string, k), make([]*string, k), make([]*string, k)
		versions                = make([]int64, k)
		attempts                = make([]int32, k)
		oOps, oNids, oSubs      []string
		oBodies                 []string
		byID                    = make(map[string]*pendingCreate, k)
	)
	for i, m := range batch {
		p := &m.v
		n := p.n
		ids[i], iids[i], ops[i], params[i] = n.ID, n.VnfInstanceID, n.Operation, string(n.OperationParams)
		if n.DriverParams != nil {
			d := string(n.DriverParams)
			dparams[i] = &d
		}
		versions[i] = n.From.Instance.Version
		var a int
		owners[i], leases[i], a = n.leaseArgs()
		attempts[i] = int32(a)
		for _, sub := range p.subs {
			oOps, oNids, oSubs, oBodies = append(oOps, n.ID), append(oNids, p.nid), append(oSubs, sub), append(oBodies, string(p.body))
		}
		byID[n.ID] = p
	}
	args := []any{ids, iids, ops, params, dparams, versions, owners, leases, attempts}
	query := createOpsAlone
	if len(oOps) == 0 {
		args = append(args, ChannelOps)
	} else {
		query = createOps
		args = append(args, oOps, oNids, oSubs, oBodies, ChannelOps, ChannelOutbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	// On the statement's generic plan (queryGeneric): left to choose,
	// PostgreSQL planned it again at every call (70 µs under the engine
	// bench's closed loop).
	var decodeErr error
	err := s.queryGeneric(ctx, query, args, func(rows pgx.Rows) error {
		for rows.Next() {
			op, err := scanOp(extraRow{rows, []any{nil, nil}})
			if err == nil {
				if p := byID[op.ID]; p != nil {
					op.created = p.n.From.Instance
					p.op = op
					continue
				}
				err = errors.New("store: a batch of creations returned an op it did not create")
			}
			decodeErr = err
			return nil
		}
		return rows.Err()
	})
	if decodeErr != nil {
		// The statement ran and commits: the ops exist, so nobody creates
		// them again; every caller hears of it.
		for _, m := range batch {
			m.v.op, m.v.err = nil, decodeErr
		}
		return nil
	}
	if err != nil {
		for _, m := range batch {
			m.v.op = nil
		}
		return err
	}
	return nil
}

// createOpsLocked is createOpLocked for a batch: the instances are locked
// in id order, skipping those another transaction holds, and an op is
// inserted for each that is still the version read with no active
// operation. Each instance appears once in a batch.
const createOpsLocked = `WITH r AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int8[],
			$7::text[], $8::text[], $9::int4[]) AS r(id, iid, operation, params, dparams, version, owner, lease, attempts)),
	i AS (SELECT v.id, v.version FROM vnf_instances v WHERE v.id = ANY($2::uuid[]) ORDER BY v.id FOR UPDATE SKIP LOCKED),
	o AS (INSERT INTO vnf_lcm_op_occs (id, vnf_instance_id, operation, operation_state, operation_params, driver_params,
			lease_owner, lease_until, attempts)
		SELECT r.id, r.iid, r.operation, 'STARTING', r.params::jsonb, r.dparams::jsonb, r.owner, now() + r.lease::interval, r.attempts
		FROM r JOIN i ON i.id = r.iid AND i.version = r.version
		WHERE NOT EXISTS (SELECT 1 FROM vnf_lcm_op_occs a WHERE a.vnf_instance_id = r.iid AND a.stage IN ` + activeStages + `)
		RETURNING ` + opCols + `)`

// createOps is createOpsLocked with the STARTING notifications' outbox rows
// ($10–$13: op, notification id, subscription, body; rows of ops not
// inserted, or of subscriptions deleted since read, are skipped) and the
// wake-ups ($14 the engines', unless leased; $15 the notifiers').
const createOps = createOpsLocked + `,
	n AS (INSERT INTO notification_outbox (notification_id, subscription_id, body)
		SELECT u.nid, s.id, u.body FROM unnest($10::uuid[], $11::uuid[], $12::uuid[], $13::text[]) WITH ORDINALITY AS u(op, nid, sid, body, k)
		JOIN o ON o.id = u.op JOIN subscriptions s ON s.id = u.sid ORDER BY u.k)
	SELECT ` + opCols + `, CASE WHEN lease_owner IS NULL THEN pg_notify($14, id::text) END,
		CASE WHEN id = ANY($10::uuid[]) THEN pg_notify($15, '') END FROM o`

// createOpsAlone is createOps when no subscription wants any of the
// batch's STARTING notifications ($10: the engines' channel).
const createOpsAlone = createOpsLocked + `
	SELECT ` + opCols + `, CASE WHEN lease_owner IS NULL THEN pg_notify($10, id::text) END, NULL FROM o`
