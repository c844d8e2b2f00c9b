package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mini-vnfm/mini-vnfm/internal/lccn"
	"github.com/mini-vnfm/mini-vnfm/internal/model"
)

// ChannelOutbox wakes notifiers when notifications are queued.
const ChannelOutbox = "vnfm_outbox"

// Subscription is a stored LCCN subscription.
type Subscription struct {
	ID             string
	Seq            int64
	CallbackURI    string
	Filter         *lccn.Filter
	Authentication []byte // sealed SubscriptionAuthentication
	CreatedAt      time.Time
}

const subCols = `id, seq, callback_uri, filter, authentication, created_at`

func scanSub(row pgx.Row) (*Subscription, error) {
	var s Subscription
	var f []byte
	err := row.Scan(&s.ID, &s.Seq, &s.CallbackURI, &f, &s.Authentication, &s.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(f) > 0 {
		if err := json.Unmarshal(f, &s.Filter); err != nil {
			return nil, fmt.Errorf("store: subscription %s filter: %w", s.ID, err)
		}
	}
	return &s, nil
}

// ErrDuplicateSubscription comes with the existing subscription (303 See Other).
var ErrDuplicateSubscription = errors.New("a subscription with this callbackUri and filter exists")

// CreateSubscription stores a subscription; a duplicate (same callbackUri and
// canonical filter) returns the existing one with ErrDuplicateSubscription.
func (s *Store) CreateSubscription(ctx context.Context, sub *Subscription) (*Subscription, error) {
	f, err := jsonOrNull(sub.Filter)
	if err != nil {
		return nil, err
	}
	created, err := scanSub(s.pool.QueryRow(ctx, `INSERT INTO subscriptions (id, callback_uri, filter, filter_canon, authentication)
		VALUES ($1,$2,$3,$4,$5) ON CONFLICT (callback_uri, filter_canon) DO NOTHING RETURNING `+subCols,
		sub.ID, sub.CallbackURI, f, sub.Filter.Canonical(), sub.Authentication))
	if errors.Is(err, ErrNotFound) {
		existing, gerr := scanSub(s.pool.QueryRow(ctx, `SELECT `+subCols+` FROM subscriptions WHERE callback_uri=$1 AND filter_canon=$2`,
			sub.CallbackURI, sub.Filter.Canonical()))
		if gerr != nil {
			return nil, gerr
		}
		return existing, ErrDuplicateSubscription
	}
	return created, err
}

// GetSubscription reads one subscription.
func (s *Store) GetSubscription(ctx context.Context, id string) (*Subscription, error) {
	return scanSub(s.pool.QueryRow(ctx, `SELECT `+subCols+` FROM subscriptions WHERE id=$1`, id))
}

// ListSubscriptions returns one page of subscriptions.
func (s *Store) ListSubscriptions(ctx context.Context, p Page) ([]*Subscription, bool, error) {
	return listPage(ctx, s, "subscriptions_doc", subCols, map[string]string{"id": "id::text", "callbackUri": "callback_uri"}, nil, p, scanSub)
}

// DeleteSubscription deletes a subscription and its undelivered notifications.
func (s *Store) DeleteSubscription(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM subscriptions WHERE id=$1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// enqueue fans an event out to every matching subscription inside tx: the
// notification is committed together with the state change it reports.
func enqueue(ctx context.Context, tx pgx.Tx, ev lccn.Event) error {
	rows, err := tx.Query(ctx, selectTargets)
	if err != nil {
		return err
	}
	targets, err := scanTargets(rows)
	if err != nil {
		return err
	}
	var b pgx.Batch
	if err := queueOutbox(&b, targets, ev); err != nil {
		return err
	}
	return sendOutbox(ctx, tx, &b)
}

// selectTargets reads every subscription's filter (scanTargets).
const selectTargets = `SELECT id, filter FROM subscriptions`

// target is a subscription as the fan-out needs it.
type target struct {
	id string
	f  *lccn.Filter
}

func scanTargets(rows pgx.Rows) ([]target, error) {
	defer rows.Close()
	var targets []target
	for rows.Next() {
		var t target
		var raw []byte
		if err := rows.Scan(&t.id, &raw); err != nil {
			return nil, err
		}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &t.f); err != nil {
				return nil, fmt.Errorf("store: subscription %s filter: %w", t.id, err)
			}
		}
		targets = append(targets, t)
	}
	return targets, rows.Err()
}

// queueOutbox queues the outbox rows of ev for every target whose filter
// matches it, in one statement; nothing when none matches. The caller wakes
// the notifiers (pg_notify on ChannelOutbox) once per transaction.
func queueOutbox(b *pgx.Batch, targets []target, ev lccn.Event) error {
	ids, payload, err := outboxOf(targets, ev)
	if err != nil || len(ids) == 0 {
		return err
	}
	// One notification id for every copy; rows in target order.
	b.Queue(`INSERT INTO notification_outbox (notification_id, subscription_id, event)
		SELECT $1, s, $3 FROM unnest($2::uuid[]) WITH ORDINALITY AS u(s, n) ORDER BY n`, uuid.NewString(), ids, payload)
	return nil
}

// outboxOf returns the subscriptions whose filters match ev, in target
// order, and the event as the outbox stores it (nil ids: none matches).
func outboxOf(targets []target, ev lccn.Event) (ids []string, payload []byte, err error) {
	for _, t := range targets {
		if t.f.Match(ev) {
			ids = append(ids, t.id)
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if ev.Op != nil {
		// Only a RESULT's details come from the snapshot (lccn.Payload); a
		// START needs none. Every notifier decodes what is stored here.
		// Notifications never carry request bodies.
		if lccn.Status(ev.OperationState) == "RESULT" {
			ev.Op = &model.VnfLcmOpOcc{ResourceChanges: ev.Op.ResourceChanges, ChangedInfo: ev.Op.ChangedInfo,
				ChangedExtConnectivity: ev.Op.ChangedExtConnectivity, Error: ev.Op.Error}
		} else {
			ev.Op = nil
		}
	}
	payload, err = json.Marshal(ev)
	return ids, payload, err
}

// opEventOf is the event of an op occurrence's new state, about instance in.
func opEventOf(op *OpOcc, in lccn.Instance) lccn.Event {
	if in.ID == "" {
		in.ID = op.VnfInstanceID
	}
	return lccn.Event{Type: lccn.TypeOpOcc, OpOccID: op.ID, Operation: op.Operation, OperationState: op.OperationState,
		IsAutomaticInvocation: op.IsAutomaticInvocation, Op: &op.VnfLcmOpOcc, Instance: in}
}

// queueTargets queues the read of every subscription (for queueOutbox) into *dst.
func queueTargets(b *pgx.Batch, dst *[]target) {
	b.Queue(selectTargets).Query(func(rows pgx.Rows) error {
		var err error
		*dst, err = scanTargets(rows)
		return err
	})
}

// sendOutbox sends the outbox rows queued in nb with the notifiers' wake-up.
func sendOutbox(ctx context.Context, tx pgx.Tx, nb *pgx.Batch) error {
	if nb.Len() == 0 {
		return nil
	}
	nb.Queue(`SELECT pg_notify($1, '')`, ChannelOutbox)
	return tx.SendBatch(ctx, nb).Close()
}

// opEvent builds the event of an op occurrence's new state (instance read in tx).
func opEvent(ctx context.Context, tx pgx.Tx, op *OpOcc) (lccn.Event, error) {
	ev := opEventOf(op, lccn.Instance{})
	in, err := scanInstance(tx.QueryRow(ctx, `SELECT `+instanceCols+` FROM vnf_instances WHERE id=$1`, op.VnfInstanceID))
	if errors.Is(err, ErrNotFound) {
		ev.Instance = lccn.Instance{ID: op.VnfInstanceID}
		return ev, nil
	}
	if err != nil {
		return ev, err
	}
	ev.Instance = lccn.InstanceOf(&in.VnfInstance)
	return ev, nil
}

func notifyOp(ctx context.Context, tx pgx.Tx, op *OpOcc) error {
	ev, err := opEvent(ctx, tx, op)
	if err != nil {
		return err
	}
	return enqueue(ctx, tx, ev)
}

func notifyInstance(ctx context.Context, tx pgx.Tx, typ string, in *model.VnfInstance) error {
	return enqueue(ctx, tx, lccn.Event{Type: typ, Instance: lccn.InstanceOf(in)})
}

// Delivery is one queued notification.
type Delivery struct {
	ID             int64
	NotificationID string
	SubscriptionID string
	Event          lccn.Event
	Attempts       int
	CreatedAt      time.Time
}

// ClaimSubscription leases a subscription whose oldest undelivered
// notification is due, and returns up to max of its pending notifications in
// order. Holding the subscription, not single rows, keeps deliveries ordered.
//
// Like EndDelivery, the lease's commit does not wait for the WAL flush: a
// lease a database crash forgets is simply free again.
func (s *Store) ClaimSubscription(ctx context.Context, owner string, lease time.Duration, max int) (*Subscription, []Delivery, error) {
	var sub *Subscription
	var out []Delivery
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		sub, out = nil, nil
		var b pgx.Batch
		b.Queue(`SET LOCAL synchronous_commit = off`)
		b.Queue(`UPDATE subscriptions s SET delivery_owner=$1, delivery_until=now()+$2::interval
		WHERE s.id = (SELECT h.subscription_id FROM (
				SELECT DISTINCT ON (subscription_id) subscription_id, next_attempt_at
				FROM notification_outbox WHERE delivered_at IS NULL AND failed_at IS NULL ORDER BY subscription_id, id) h
			JOIN subscriptions s2 ON s2.id = h.subscription_id
			WHERE h.next_attempt_at <= now() AND (s2.delivery_until IS NULL OR s2.delivery_until < now())
			ORDER BY h.next_attempt_at LIMIT 1 FOR UPDATE OF s2 SKIP LOCKED)
		RETURNING `+subCols, owner, lease.String()).QueryRow(func(row pgx.Row) error {
			var err error
			sub, err = scanSub(row)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			return err
		})
		b.Queue(`SELECT id, notification_id, subscription_id, event, attempts, created_at
		FROM notification_outbox WHERE subscription_id = (SELECT id FROM subscriptions WHERE delivery_owner=$1)
			AND delivered_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT $2`, owner, max).Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				var d Delivery
				var ev []byte
				if err := rows.Scan(&d.ID, &d.NotificationID, &d.SubscriptionID, &ev, &d.Attempts, &d.CreatedAt); err != nil {
					return err
				}
				if err := json.Unmarshal(ev, &d.Event); err != nil {
					return err
				}
				out = append(out, d)
			}
			return rows.Err()
		})
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil || sub == nil {
		return nil, nil, err
	}
	return sub, out, nil
}

// DeliveryFailure is the failed attempt that ended a delivery round.
type DeliveryFailure struct {
	ID    int64
	Cause string
	// Next is when to try again; GiveUp sets the notification aside
	// (failed_at) instead, so later ones can flow.
	Next   time.Duration
	GiveUp bool
}

// EndDelivery records a delivery round of a leased subscription in one
// transaction and releases the lease: the notifications delivered, in order,
// and the failure that stopped the round (nil: none). A failed notification is
// retried after failure.Next and blocks the subscription until then, to keep
// the order. Fenced by the lease: ErrLeaseLost, and nothing recorded, when
// another notifier holds the subscription now.
//
// The commit does not wait for the WAL flush (synchronous_commit off): a
// database crash may forget the last fraction of a second of these records,
// and the notifications they cover are then sent again — with their
// notification ids, as after any crash between a send and its record. A
// crash of the VNFM loses nothing: the commit is done when this returns.
func (s *Store) EndDelivery(ctx context.Context, subID, owner string, delivered []int64, failure *DeliveryFailure) error {
	return inTx(ctx, s.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		b.Queue(`SET LOCAL synchronous_commit = off`)
		fence := func(want int) func(pgconn.CommandTag) error {
			return func(tag pgconn.CommandTag) error {
				if tag.RowsAffected() != int64(want) {
					return ErrLeaseLost
				}
				return nil
			}
		}
		if len(delivered) > 0 {
			b.Queue(`UPDATE notification_outbox o SET delivered_at=now(), attempts=o.attempts+1, last_error=NULL
				FROM subscriptions s WHERE o.id = ANY($3) AND s.id=$1 AND s.delivery_owner=$2 AND o.subscription_id=s.id`,
				subID, owner, delivered).Exec(fence(len(delivered)))
		}
		if f := failure; f != nil {
			b.Queue(`UPDATE notification_outbox o SET attempts=o.attempts+1, last_error=$4,
				next_attempt_at=now()+$5::interval, failed_at=CASE WHEN $6 THEN now() END
				FROM subscriptions s WHERE o.id=$3 AND s.id=$1 AND s.delivery_owner=$2 AND o.subscription_id=s.id`,
				subID, owner, f.ID, f.Cause, f.Next.String(), f.GiveUp).Exec(fence(1))
		}
		b.Queue(`UPDATE subscriptions SET delivery_owner=NULL, delivery_until=NULL WHERE id=$1 AND delivery_owner=$2`, subID, owner)
		return tx.SendBatch(ctx, &b).Close()
	})
}

// PruneDelivered deletes delivered notifications older than age.
func (s *Store) PruneDelivered(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notification_outbox WHERE delivered_at < now() - $1::interval`, age.String())
	return tag.RowsAffected(), err
}
