package store

import (
	"context"
	"time"
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

// Stats reads the metrics snapshot in two cheap aggregate queries.
func (s *Store) Stats(ctx context.Context) (*Stats, error) {
	st := &Stats{}
	rows, err := s.pool.Query(ctx, `SELECT operation, operation_state, count(*) FROM vnf_lcm_op_occs GROUP BY 1, 2`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c OpCount
		if err := rows.Scan(&c.Operation, &c.State, &c.Count); err != nil {
			rows.Close()
			return nil, err
		}
		st.Ops = append(st.Ops, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
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
