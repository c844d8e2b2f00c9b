// Package store is the only package that speaks SQL. It keeps VNF instances,
// LCM operation occurrences (which double as the engine's lease queue), the
// operation journal and the package rows the LCM needs, on PostgreSQL via pgx.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mini-vnfm/mini-vnfm/migrations"
)

// Notification channels.
const (
	// ChannelOps wakes engines when an op occurrence becomes runnable.
	ChannelOps = "vnfm_ops"
	// ChannelCancel tells the engine running an op that a cancel was requested.
	ChannelCancel = "vnfm_cancel"
)

// Store wraps a pgx pool.
type Store struct {
	pool  *pgxpool.Pool
	log   *slog.Logger
	vnfds vnfdCache
	// prepare: the URL leaves pgx's default mode (prepared statements), so
	// GET's read may prepare its own (queryDocBatch).
	prepare bool
	// docs coalesces GET's reads of instance documents (docreads.go).
	docs docReads
	// creates coalesces CreateOpOcc's one-statement creations (createbatch.go).
	creates opCreates
	// reads coalesces OpenForOp's reads (openbatch.go).
	reads opReads
	// createFallbacks counts CreateOpOcc calls given a read (NewOp.From)
	// that took the transaction reading under the lock (for tests).
	createFallbacks atomic.Int64
	// opCounts keeps Stats' counts of finished op rows (stats.go).
	opCounts opCountCache
}

// Open connects to url. Sessions run in UTC so rendered timestamps are stable.
func Open(ctx context.Context, url string, log *slog.Logger) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: bad database URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	// pgx's default (4 on 2 cores) starves the engine: two LISTEN connections,
	// workers, the notifier and the API share the pool. The URL's
	// pool_max_conns still wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 20
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "vnfm"
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerLists(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Store{pool: pool, log: log, prepare: cfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement,
		docs: docReads{k: docReadsInFlight, max: docReadBatch}, creates: newOpCreates(),
		reads: opReads{coalescer: coalescer[pendingRead]{max: maxReadBatch,
			abort: func(r *pendingRead) { r.row, r.err = nil, errBatchPanicked }}}}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the pool for LISTEN connections and health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// newMigrate builds a migrator over the embedded files. golang-migrate's pgx5
// driver takes a Postgres advisory lock, so replicas may migrate at once.
func newMigrate(url string) (*migrate.Migrate, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, err
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, toPgx5URL(url))
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return m, nil
}

func toPgx5URL(url string) string {
	// pgxpool's pool_* parameters mean nothing to the migration driver, which
	// rejects them: drop them.
	if i := strings.IndexByte(url, '?'); i >= 0 {
		var keep []string
		for _, kv := range strings.Split(url[i+1:], "&") {
			if !strings.HasPrefix(kv, "pool_") {
				keep = append(keep, kv)
			}
		}
		url = url[:i]
		if len(keep) > 0 {
			url += "?" + strings.Join(keep, "&")
		}
	}
	for _, p := range []string{"postgres://", "postgresql://"} {
		if len(url) >= len(p) && url[:len(p)] == p {
			return "pgx5://" + url[len(p):]
		}
	}
	return url
}

// MigrateUp applies all pending migrations.
func MigrateUp(ctx context.Context, url string) error {
	m, err := newMigrate(url)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// MigrateDown reverts the last n migrations (all when n <= 0).
func MigrateDown(ctx context.Context, url string, n int) error {
	m, err := newMigrate(url)
	if err != nil {
		return err
	}
	defer m.Close()
	if n > 0 {
		err = m.Steps(-n)
	} else {
		err = m.Down()
	}
	if err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate down: %w", err)
	}
	return nil
}

// MigrationVersion reports the applied version, whether it is dirty, and the
// newest version embedded in this binary.
func MigrationVersion(ctx context.Context, url string) (current uint, dirty bool, latest uint, err error) {
	m, err := newMigrate(url)
	if err != nil {
		return 0, false, 0, err
	}
	defer m.Close()
	current, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		current, err = 0, nil
	}
	if err != nil {
		return 0, false, 0, err
	}
	latest, err = LatestMigration()
	return current, dirty, latest, err
}

// LatestMigration is the newest migration version embedded in the binary.
func LatestMigration() (uint, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0, err
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0, err
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return v, nil
		}
		v = next
	}
}

// SchemaVersion reads the applied migration version through the pool (cheap, for /readyz).
func (s *Store) SchemaVersion(ctx context.Context) (uint, bool, error) {
	var v int64
	var dirty bool
	err := s.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&v, &dirty)
	if err != nil {
		return 0, false, err
	}
	return uint(v), dirty, nil
}

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// ErrLeaseLost means another engine took the operation over: stop working on it.
var ErrLeaseLost = errors.New("lease lost: another engine owns this operation")

// ConflictError explains why a state-changing request cannot proceed (HTTP 409).
type ConflictError struct {
	// BlockingOp is set when another operation occurrence blocks the request.
	BlockingOp *OpOcc
	// State is the current state that makes the request impossible.
	State  string
	Reason string
}

func (e *ConflictError) Error() string { return e.Reason }

// PreconditionError is an If-Match mismatch (HTTP 412).
type PreconditionError struct{ Current int64 }

func (e *PreconditionError) Error() string {
	return fmt.Sprintf("the VNF instance has changed (current ETag \"%d\")", e.Current)
}

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}

func inTx(ctx context.Context, pool *pgxpool.Pool, f func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, pool, f)
}

// inPipelinedTx runs f on a connection of its own for a transaction whose
// BEGIN and COMMIT f sends in its first and last batches, so that they cost
// no round trip of their own (the group commit's: two of its five). When f
// fails with the transaction open, it is rolled back here; a connection that
// cannot be rolled back is closed by the pool on release.
func inPipelinedTx(ctx context.Context, pool *pgxpool.Pool, f func(*pgxpool.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = f(conn)
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.Exec(rctx, "rollback")
	}
	if err == nil && conn.Conn().PgConn().TxStatus() != 'I' {
		return errors.New("store: a pipelined transaction was left open") // f forgot its commit
	}
	return err
}
