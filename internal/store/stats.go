package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// OpCount is the number of op occurrences of one operation in one state.
type OpCount struct {
	Operation, State string
	Count            int64
}

// Stats is a snapshot for metrics.
type Stats struct {
	Ops []OpCount
	// QueueDepth counts runnable ops no engine holds.
	QueueDepth int64
	// OldestLeaseAge is the age of the oldest running claim (since its state was entered).
	OldestLeaseAge time.Duration
	// ExpiredLeases counts claims whose engine stopped heartbeating.
	ExpiredLeases int64
	// Notifications waiting for delivery, those being retried, and those given up.
	NotificationsPending, NotificationsRetrying, NotificationsFailed int64
}

// foldAfter is how old (by start_time, the creating transaction's start) a
// row must be before Stats folds it into its cached counts: a row created
// by a transaction that started earlier and has not committed yet would
// never be counted, and no transaction creating an op row lasts that long.
const foldAfter = time.Minute

// opCountCache holds the counts of op rows that will not change again:
// rows in a final state (COMPLETED, FAILED, ROLLED_BACK) never change
// operation or state and are never deleted. Every row with seq ≤ upTo is
// counted in folded, except those in pending, which were unfinished when
// they were folded and are looked at again (by id) until they finish. So
// a scrape reads only the rows created since the last fold, the unfinished
// ones and pending, not all of them (436 ms at 1 M rows before).
type opCountCache struct {
	mu      sync.Mutex
	upTo    int64
	folded  map[[2]string]int64
	pending []string
}

// Stats reads the metrics snapshot.
func (s *Store) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{}
	counts, err := s.opCountsNow(ctx)
	if err != nil {
		return nil, err
	}
	for k, n := range counts {
		st.Ops = append(st.Ops, OpCount{Operation: k[0], State: k[1], Count: n})
	}
	slices.SortFunc(st.Ops, func(a, b OpCount) int {
		return cmp.Or(cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.State, b.State))
	})
	var age float64
	err = s.pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE lease_owner IS NULL OR lease_until < now()),
		count(*) FILTER (WHERE lease_owner IS NOT NULL AND lease_until < now()),
		COALESCE(EXTRACT(EPOCH FROM now() - min(state_entered_time) FILTER (WHERE lease_owner IS NOT NULL)), 0)
		FROM vnf_lcm_op_occs WHERE stage = 'run'`).Scan(&st.QueueDepth, &st.ExpiredLeases, &age)
	st.OldestLeaseAge = time.Duration(age * float64(time.Second))
	if err != nil {
		return nil, err
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE failed_at IS NULL),
		count(*) FILTER (WHERE failed_at IS NULL AND attempts > 0), count(*) FILTER (WHERE failed_at IS NOT NULL)
		FROM notification_outbox WHERE delivered_at IS NULL`).Scan(&st.NotificationsPending, &st.NotificationsRetrying, &st.NotificationsFailed)
	return st, err
}

// opCountsNow counts op rows by operation and state, exactly as a GROUP BY
// over all of them would in one snapshot, reading only what the cache does
// not hold (opCountCache), and folds what became final into the cache.
func (s *Store) opCountsNow(ctx context.Context) (map[[2]string]int64, error) {
	c := &s.opCounts
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := map[[2]string]int64{}
	var (
		foldTo   int64
		newFinal = map[[2]string]int64{} // final rows of seq ≤ foldTo (> upTo) or pending
		stillOn  []string                // rows of seq ≤ foldTo (or pending) not final yet
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The newest row old enough to fold, looking back from the newest.
		err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT seq FROM vnf_lcm_op_occs
			WHERE seq > $1 AND start_time < now() - $2::interval ORDER BY seq DESC LIMIT 1), $1)`,
			c.upTo, foldAfter.String()).Scan(&foldTo)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id::text, operation, operation_state, stage NOT IN ('run', 'held'), seq <= $2
			FROM vnf_lcm_op_occs WHERE seq > $1 OR id = ANY($3::uuid[])`, c.upTo, foldTo, c.pending)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id, op, state string
				final, fold   bool
			)
			if err := rows.Scan(&id, &op, &state, &final, &fold); err != nil {
				return err
			}
			k := [2]string{op, state}
			counts[k]++
			switch {
			case fold && final:
				newFinal[k]++
			case fold:
				stillOn = append(stillOn, id)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	for k, n := range c.folded { // the rows folded before: none was read above
		counts[k] += n
	}
	if c.folded == nil {
		c.folded = map[[2]string]int64{}
	}
	for k, n := range newFinal {
		c.folded[k] += n
	}
	c.upTo, c.pending = foldTo, stillOn
	return counts, nil
}
