package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
			f, err := decodeFilter(t.id, raw)
			if err != nil {
				return nil, err
			}
			t.f = f
		}
		targets = append(targets, t)
	}
	return targets, rows.Err()
}

// filters caches decoded subscription filters by subscription id with the
// JSON they were decoded from: every operation's notifications read every
// subscription's filter, and a filter never changes but by a new row (or
// a hand-made update, which the JSON's comparison sees). Shared, read-only.
var filters struct {
	m sync.Map // subscription id → cachedFilter
	n atomic.Int64
}

type cachedFilter struct {
	raw string
	f   *lccn.Filter
}

// maxCachedFilters bounds the cache: past it, it starts again empty.
const maxCachedFilters = 10000

// decodeFilter is the filter of subscription id stored as raw.
func decodeFilter(id string, raw []byte) (*lccn.Filter, error) {
	if c, ok := filters.m.Load(id); ok && c.(cachedFilter).raw == string(raw) {
		return c.(cachedFilter).f, nil
	}
	var f *lccn.Filter
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("store: subscription %s filter: %w", id, err)
	}
	if filters.n.Add(1) > maxCachedFilters {
		filters.m.Clear()
		filters.n.Store(1)
	}
	filters.m.Store(id, cachedFilter{raw: string(raw), f: f})
	return f, nil
}

// queueOutbox queues the outbox rows of ev for every target whose filter
// matches it, in one statement; nothing when none matches. The caller wakes
// the notifiers (pg_notify on ChannelOutbox) once per transaction.
func queueOutbox(b *pgx.Batch, targets []target, ev lccn.Event) error {
	nid := uuid.NewString() // one notification id for every copy
	ids, body, err := outboxOf(targets, ev, nid)
	if err != nil || len(ids) == 0 {
		return err
	}
	// Rows in target order.
	b.Queue(`INSERT INTO notification_outbox (notification_id, subscription_id, body)
		SELECT $1, s, $3 FROM unnest($2::uuid[]) WITH ORDINALITY AS u(s, n) ORDER BY n`, nid, ids, string(body))
	return nil
}

// outboxOf returns the subscriptions whose filters match ev, in target
// order, and what the outbox keeps of the notification with id nid (nil
// ids: none matches): its body (lccn.Body), rendered here once for every
// copy and every attempt; notifiers send it without decoding it.
// Notifications never carry request bodies.
func outboxOf(targets []target, ev lccn.Event, nid string) (ids []string, body []byte, err error) {
	for _, t := range targets {
		if t.f.Match(ev) {
			ids = append(ids, t.id)
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	body, err = lccn.Body(ev, nid)
	return ids, body, err
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
	queueWakeUp(nb)
	return tx.SendBatch(ctx, nb).Close()
}

// queueWakeUp queues the notifiers' wake-up (delivered at the commit) after
// outbox rows queued in b.
func queueWakeUp(b *pgx.Batch) { b.Queue(`SELECT pg_notify($1, '')`, ChannelOutbox) }

// opEvent builds the event of an op occurrence's new state (instance read in
// tx, its identity and names: the jsonb attributes are not decoded).
func opEvent(ctx context.Context, tx interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, op *OpOcc) (lccn.Event, error) {
	ev := opEventOf(op, lccn.Instance{})
	in, err := scanInstanceHead(tx.QueryRow(ctx, `SELECT `+instanceCols+` FROM vnf_instances WHERE id=$1`, op.VnfInstanceID))
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
	// Body is what the notification says (lccn.Body): lccn.AppendNotification
	// makes the notification of it.
	Body []byte
	// Event is, for a notification queued by an older build (no Body), the
	// event to render.
	Event     *lccn.Event
	Attempts  int
	CreatedAt time.Time
}

// deliveryCols are a pending notification's columns for scanDelivery
// (outbox alias o); the event only for rows without a body.
const deliveryCols = `o.id, o.notification_id, o.subscription_id, o.body, CASE WHEN o.body IS NULL THEN o.event END, o.attempts, o.created_at`

// pendingRows is the lateral subquery of a subscription's next pending
// notifications, in order: $max of them, none when keep is false, never
// one of $done (recorded by the same statement, which does not see it).
func pendingRows(sub, keep, done, max string) string {
	return `LEFT JOIN LATERAL (SELECT ` + deliveryCols + ` FROM notification_outbox o
		WHERE ` + keep + ` AND o.subscription_id = ` + sub + ` AND o.delivered_at IS NULL AND o.failed_at IS NULL
			AND o.id <> ALL(` + done + `) ORDER BY o.id LIMIT ` + max + `) d ON true`
}

// deliveryRow holds one row's deliveryCols.
type deliveryRow struct {
	id          *int64
	nid, sub    *string
	body, event []byte
	attempts    *int32
	created     *time.Time
}

func (r *deliveryRow) dest() []any {
	return []any{&r.id, &r.nid, &r.sub, &r.body, &r.event, &r.attempts, &r.created}
}

// appendTo appends the row's notification to out, if it has one.
func (r *deliveryRow) appendTo(out []Delivery) ([]Delivery, error) {
	d, ok, err := r.delivery()
	if ok {
		out = append(out, d)
	}
	return out, err
}

// delivery is the row's notification; ok is false for the null row of an
// outer join (no pending notification).
func (r *deliveryRow) delivery() (d Delivery, ok bool, err error) {
	if r.id == nil {
		return Delivery{}, false, nil
	}
	d = Delivery{ID: *r.id, NotificationID: deref(r.nid), SubscriptionID: deref(r.sub), Body: r.body, CreatedAt: *r.created}
	if r.attempts != nil {
		d.Attempts = int(*r.attempts)
	}
	if r.body == nil {
		d.Event = &lccn.Event{}
		if err := json.Unmarshal(r.event, d.Event); err != nil {
			return d, false, fmt.Errorf("store: notification %d: %w", d.ID, err)
		}
	}
	return d, true, nil
}

// ClaimSubscription leases a subscription whose oldest undelivered
// notification is due, and returns up to max of its pending notifications in
// order, in one statement (one round trip, its own transaction). Holding the
// subscription, not single rows, keeps deliveries ordered. The subscription's
// Filter is shared (decoded once): read-only.
//
// Like EndDelivery, the lease's commit does not wait for the WAL flush
// (synchronous_commit off for this transaction): a lease a database crash
// forgets is simply free again.
func (s *Store) ClaimSubscription(ctx context.Context, owner string, lease time.Duration, max int) (*Subscription, []Delivery, error) {
	var sub *Subscription
	var out []Delivery
	err := s.queryGeneric(ctx, claimSubscriptionSQL, []any{owner, lease.String(), max}, func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				sc  Subscription
				f   []byte
				row deliveryRow
				err error
			)
			if err := rows.Scan(append([]any{&sc.ID, &sc.Seq, &sc.CallbackURI, &f, &sc.Authentication, &sc.CreatedAt}, row.dest()...)...); err != nil {
				return err
			}
			if sub == nil {
				if len(f) > 0 {
					if sc.Filter, err = decodeFilter(sc.ID, f); err != nil {
						return err
					}
				}
				sub = &sc
			}
			if out, err = row.appendTo(out); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	return sub, out, nil
}

// queryGeneric runs one statement with its prepared statement's generic plan
// (genericPlans), in one round trip and a transaction of its own: the
// setting and the statement are one batch, which PostgreSQL runs as one
// implicit transaction (a single Sync), so the setting ends with it. scan
// reads the statement's rows. The notifier's statements were planned again
// at every call (plan_cache_mode auto): 17–57 % of their time under the
// engine bench.
func (s *Store) queryGeneric(ctx context.Context, sql string, args []any, scan func(pgx.Rows) error) error {
	var b pgx.Batch
	b.Queue(genericPlans)
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		return scan(rows)
	})
	return s.pool.SendBatch(ctx, &b).Close()
}

// claimSubscriptionSQL is ClaimSubscription's statement.
var claimSubscriptionSQL = `WITH c AS (UPDATE subscriptions s SET delivery_owner=$1, delivery_until=now()+$2::interval
		WHERE s.id = (SELECT h.subscription_id FROM (
				SELECT DISTINCT ON (subscription_id) subscription_id, next_attempt_at
				FROM notification_outbox WHERE delivered_at IS NULL AND failed_at IS NULL ORDER BY subscription_id, id) h
			JOIN subscriptions s2 ON s2.id = h.subscription_id
			WHERE h.next_attempt_at <= now() AND (s2.delivery_until IS NULL OR s2.delivery_until < now())
			ORDER BY h.next_attempt_at LIMIT 1 FOR UPDATE OF s2 SKIP LOCKED)
		RETURNING s.id, s.seq, s.callback_uri, s.filter, s.authentication, s.created_at,
			set_config('synchronous_commit', 'off', true))
		SELECT c.id, c.seq, c.callback_uri, c.filter, c.authentication, c.created_at, d.*
		FROM c ` + pendingRows("c.id", "true", "'{}'::bigint[]", "$3") + ` ORDER BY d.id`

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
// statement (one round trip, its own transaction): the notifications
// delivered, in order, and the failure that stopped the round (nil: none).
// A failed notification is retried after failure.Next and blocks the
// subscription until then, to keep the order. Fenced by the lease:
// ErrLeaseLost, and nothing recorded, when another notifier holds the
// subscription now.
//
// With next > 0, no failure, and a due notification still pending, the same
// statement keeps the lease for another lease period and returns up to next
// of the pending notifications, in order: the next round, claimed without a
// round trip of its own. Otherwise (no notification returned) it releases
// the lease.
//
// The commit does not wait for the WAL flush (synchronous_commit off): a
// database crash may forget the last fraction of a second of these records,
// and the notifications they cover are then sent again — with their
// notification ids, as after any crash between a send and its record. A
// crash of the VNFM loses nothing: the commit is done when this returns.
func (s *Store) EndDelivery(ctx context.Context, subID, owner string, delivered []int64, failure *DeliveryFailure,
	next int, lease time.Duration) ([]Delivery, error) {
	if delivered == nil {
		delivered = []int64{}
	}
	var (
		failedID *int64
		cause    *string
		retryIn  *string
		giveUp   bool
	)
	if f := failure; f != nil {
		in := f.Next.String()
		failedID, cause, retryIn, giveUp = &f.ID, &f.Cause, &in, f.GiveUp
		next = 0
	}
	var out []Delivery
	held := false
	err := s.queryGeneric(ctx, endDeliverySQL, []any{subID, owner, delivered, failedID, cause, retryIn, giveUp, lease.String(), next}, func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				nd, nf int64
				row    deliveryRow
				err    error
			)
			if err := rows.Scan(append([]any{&nd, &nf}, row.dest()...)...); err != nil {
				return err
			}
			if !held {
				held = true
				if failure != nil && nf != 1 {
					return fmt.Errorf("store: the failed notification %d of subscription %s was not recorded", failure.ID, subID)
				}
				if nd != int64(len(delivered)) {
					return fmt.Errorf("store: recorded %d of %d delivered notifications of subscription %s", nd, len(delivered), subID)
				}
			}
			if out, err = row.appendTo(out); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if !held {
		return nil, ErrLeaseLost
	}
	return out, nil
}

// endDeliverySQL is EndDelivery's statement: m, whether to keep the lease —
// the oldest notification left pending is due (as a claim would find it); r:
// the lease, fenced by its owner, kept or released; dl, fl: the round's
// records, only when r holds; then the next round's notifications.
var endDeliverySQL = `WITH m AS MATERIALIZED (SELECT $9::int > 0 AND COALESCE((SELECT o.next_attempt_at <= now()
			FROM notification_outbox o WHERE o.subscription_id = $1 AND o.delivered_at IS NULL AND o.failed_at IS NULL
				AND o.id <> ALL($3::bigint[]) ORDER BY o.id LIMIT 1), false) AS keep),
		r AS (UPDATE subscriptions s SET delivery_owner = CASE WHEN m.keep THEN s.delivery_owner END,
				delivery_until = CASE WHEN m.keep THEN now()+$8::interval END
			FROM m WHERE s.id = $1 AND s.delivery_owner = $2
			RETURNING s.id, m.keep, set_config('synchronous_commit', 'off', true)),
		dl AS (UPDATE notification_outbox o SET delivered_at=now(), attempts=o.attempts+1, last_error=NULL
			FROM r WHERE o.subscription_id = r.id AND o.id = ANY($3::bigint[]) RETURNING o.id),
		fl AS (UPDATE notification_outbox o SET attempts=o.attempts+1, last_error=$5,
				next_attempt_at=now()+$6::interval, failed_at=CASE WHEN $7 THEN now() END
			FROM r WHERE o.subscription_id = r.id AND o.id = $4::bigint RETURNING o.id)
		SELECT (SELECT count(*) FROM dl), (SELECT count(*) FROM fl), d.*
		FROM r ` + pendingRows("r.id", "r.keep", "$3::bigint[]", "$9") + ` ORDER BY d.id`

// PruneDelivered deletes delivered notifications older than age.
func (s *Store) PruneDelivered(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notification_outbox WHERE delivered_at < now() - $1::interval`, age.String())
	return tag.RowsAffected(), err
}
