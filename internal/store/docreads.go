package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Reads of instance documents (GET /vnf_instances/{id}) are coalesced:
// concurrent GETs share one PostgreSQL round trip. A read that finds
// docReadsInFlight batches running waits in a queue; when a batch ends, the
// reads queued meanwhile (up to docReadBatch) become the next batch, one
// statement for all their ids (WHERE id = ANY($1)), run by one of them.
// A read that finds fewer batches running is sent at once, with whatever
// is queued: there is no timer, an idle server reads as before.
//
// Linearizable: a read is answered only by a statement that started after
// it was queued (a batch is taken from the queue before its statement is
// sent), never by one already running, whose snapshot could predate a
// write the client saw acknowledged before sending its GET.
//
// A caller whose context ends leaves at once; the statement it waits for
// runs on for the others, on a context of the batch's own that ends only
// when every reader of the batch has left. An error reaches every reader
// of its batch. No goroutine runs between batches.
type docReads struct {
	mu       sync.Mutex
	queue    []*docRead // waiting for the next batch, oldest first
	inflight int        // batches taken and not yet handed on
	k        int        // batches in flight at most
	max      int        // reads per batch at most
	// hook, for tests, runs in a batch's leader before it reads
	// ("query") and after its statement ended ("read").
	hook func(stage string, n int)
}

// docReadsInFlight and docReadBatch bound the coalescing: batches running
// at once (each holds a pool connection) and ids per statement. One batch
// at a time cost the least CPU per GET in the reads bench (16 clients; 2
// and 4 sent more statements of one id): a batch's statement is short
// beside the HTTP work of the GETs it answers, which overlaps the next
// batch's statement.
const (
	docReadsInFlight = 1
	docReadBatch     = 32
)

// A docRead's states. Queued and batched reads may leave (abandoned);
// a leading read runs its batch, an answering one is being written by its
// batch's leader and is woken when done.
const (
	readQueued int32 = iota
	readBatched
	readLeading
	readAnswering
	readAbandoned
)

// docRead is one caller's read: the id it wants, where its answer goes.
type docRead struct {
	u     uuid.UUID
	id    string
	d     *InstanceDoc
	state atomic.Int32
	// wake gets one value per use: the read's answer is in, or it leads
	// the next batch.
	wake           chan struct{}
	batch          *docBatch
	found, current bool
	err            error
}

var docReadPool = sync.Pool{New: func() any { return &docRead{wake: make(chan struct{}, 1)} }}

// docBatch is the reads one statement answers; reads[0] leads it.
type docBatch struct {
	reads  []*docRead
	ctx    context.Context
	cancel context.CancelFunc
	live   atomic.Int32 // readers that have not left
}

// leave counts a reader out; the last one cancels the statement.
func (b *docBatch) leave() {
	if b.live.Add(-1) == 0 {
		b.cancel()
	}
}

// abandon makes q leave if its answer is not being written; false means
// it must wait for its wake.
func (q *docRead) abandon() bool {
	for {
		switch st := q.state.Load(); st {
		case readQueued, readBatched:
			if q.state.CompareAndSwap(st, readAbandoned) {
				if st == readBatched {
					q.batch.leave()
				}
				return true
			}
		default:
			return false
		}
	}
}

// readDocs reads the document row of id (u parsed) into d, coalesced with
// concurrent reads (docReads): found is false without a row, current
// whether the row held a current rendered document (then in d.Doc).
func (s *Store) readDocs(ctx context.Context, id string, u uuid.UUID, d *InstanceDoc) (found, current bool, err error) {
	r := &s.docs
	q := docReadPool.Get().(*docRead)
	q.u, q.id, q.d, q.batch, q.found, q.current, q.err = u, id, d, nil, false, false, nil
	q.state.Store(readQueued)
	r.mu.Lock()
	leads := r.inflight < r.k
	if leads {
		r.inflight++
		q.state.Store(readLeading)
		r.takeLocked(q, 0)
	} else {
		r.queue = append(r.queue, q)
	}
	r.mu.Unlock()
	if !leads { // woken once: answered, or to lead the next batch
		select {
		case <-q.wake:
		case <-ctx.Done():
			if q.abandon() {
				return false, false, ctx.Err() // q is dropped, not reused: its batch may still look at it
			}
			<-q.wake
		}
	}
	if q.state.Load() == readLeading {
		s.runDocBatch(ctx, q.batch)
	}
	found, current, err = q.found, q.current, q.err
	q.id, q.d, q.batch, q.err = "", nil, nil, nil
	docReadPool.Put(q)
	return found, current, err
}

// takeLocked makes a batch led by lead (already readLeading) of it and the
// oldest queued reads from queue[from:]; queue[:from] are gone (lead, or
// reads that left). r.mu is held.
func (r *docReads) takeLocked(lead *docRead, from int) {
	b := &docBatch{reads: make([]*docRead, 1, min(1+len(r.queue)-from, r.max))}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.reads[0] = lead
	lead.batch = b
	b.live.Store(1)
	n := from
	for ; n < len(r.queue) && len(b.reads) < r.max; n++ {
		q := r.queue[n]
		q.batch = b
		b.live.Add(1) // before q can leave
		if q.state.CompareAndSwap(readQueued, readBatched) {
			b.reads = append(b.reads, q)
		} else {
			b.live.Add(-1) // it left while queued
		}
	}
	rest := copy(r.queue, r.queue[n:])
	clear(r.queue[rest:])
	r.queue = r.queue[:rest]
}

// handOn ends a batch's turn: the oldest queued read that has not left
// leads the next batch, or the batch's slot is free.
func (r *docReads) handOn() {
	r.mu.Lock()
	var next *docRead
	for i, q := range r.queue {
		if q.state.CompareAndSwap(readQueued, readLeading) {
			next = q
			r.takeLocked(q, i+1)
			break
		}
	}
	if next == nil {
		r.inflight--
		clear(r.queue) // reads that left
		r.queue = r.queue[:0]
	}
	r.mu.Unlock()
	if next != nil {
		next.wake <- struct{}{}
	}
}

// runDocBatch runs b's statement, answers b's readers and hands the turn
// on. The caller leads b (b.reads[0]) with context ctx. A panic on the way
// still answers the readers (with errBatchPanicked) and hands the turn on
// before it goes up: the next reads are not left waiting for a turn that
// never ends.
func (s *Store) runDocBatch(ctx context.Context, b *docBatch) {
	err := errBatchPanicked // unless the statement returns
	stop := context.AfterFunc(ctx, b.leave)
	defer func() {
		stop()
		b.cancel()
		if h := s.docs.hook; h != nil && err != errBatchPanicked {
			h("read", len(b.reads))
		}
		lead := b.reads[0]
		lead.err = err
		if err != nil && ctx.Err() != nil {
			lead.err = ctx.Err() // every reader left: the statement was cancelled for them
		}
		for _, q := range b.reads[1:] {
			if q.state.Load() == readAnswering || q.state.CompareAndSwap(readBatched, readAnswering) {
				q.err = err
				q.wake <- struct{}{}
			}
		}
		// The next batch's leader is woken last: the scheduler runs the
		// goroutine woken last first (runnext), so its statement goes out
		// before the readers just answered write their responses.
		s.docs.handOn()
	}()
	err = s.queryDocBatch(b)
}

// errBatchPanicked answers the calls of a coalesced batch (documents read,
// operations read or created) whose run panicked.
var errBatchPanicked = errors.New("store: the batch this request shared with others failed (a panic, logged by the request that ran it)")

// answer writes one row into the reads of b that asked for it.
func (b *docBatch) answer(id uuid.UUID, state []byte, version int64, updated time.Time, doc []byte, current bool) {
	for i, q := range b.reads {
		if q.u != id || (i > 0 && !q.state.CompareAndSwap(readBatched, readAnswering)) {
			continue
		}
		d := q.d
		if IsUUIDText(q.id) { // the form uuid.UUID.String gives: no copy
			d.ID = q.id
		} else {
			d.ID = id.String()
		}
		d.InstantiationState = instantiationState(state)
		d.Version, d.UpdatedAt = version, updated
		q.found, q.current = true, current
		if current {
			d.Doc = append(d.Doc[:0], doc...)
		}
	}
}

// getDocsSQL is getDocSQL for several ids (prepared as getDocsStmt); a
// batch of one uses getDocSQL.
const (
	getDocsSQL = `SELECT id, instantiation_state, version, updated_at,
	CASE WHEN rendered_version = version AND rendered_rev = $2 THEN rendered_doc END
	FROM vnf_instances WHERE id = ANY($1::uuid[])`
	getDocsStmt = "vnfm_get_instance_docs"
	uuidOID     = 2950
)

// queryDocBatch reads the rows of b's ids and answers each reader whose
// row came (answer). The statement is prepared once per pool connection
// and run on the protocol level, parameters and columns binary.
func (s *Store) queryDocBatch(b *docBatch) error {
	if h := s.docs.hook; h != nil {
		h("query", len(b.reads))
	}
	ctx := b.ctx
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	if !s.prepare {
		// The URL asked for another mode (e.g. no prepared statements
		// behind a pooler): pgx's general path honours it.
		return s.queryDocBatchPgx(ctx, c.Conn(), b)
	}
	name, sql := getDocStmt, getDocSQL
	var param []byte
	if len(b.reads) == 1 {
		u := b.reads[0].u
		param = u[:]
	} else {
		name, sql = getDocsStmt, getDocsSQL
		param = appendUUIDArray(make([]byte, 0, 20+20*len(b.reads)), b.reads)
	}
	if _, err := c.Conn().Prepare(ctx, name, sql); err != nil { // once per connection
		return err
	}
	params := [2][]byte{param, renderRevBytes()}
	rr := c.Conn().PgConn().ExecPrepared(ctx, name, params[:], getDocParamFormats, getDocResultFormats)
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != 5 || len(v[0]) != 16 || len(v[2]) != 8 || len(v[3]) != 8 {
			err = fmt.Errorf("store: unexpected row from %s", name)
			continue // read to the end: the connection stays usable
		}
		b.answer(uuid.UUID(v[0]), v[1], int64(binary.BigEndian.Uint64(v[2])),
			pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(v[3])))*time.Microsecond), v[4], v[4] != nil)
	}
	if _, cerr := rr.Close(); cerr != nil {
		var pgErr *pgconn.PgError
		if errors.As(cerr, &pgErr) && (pgErr.Code == "26000" || pgErr.Code == "0A000") {
			// The statement is gone from the session (26000) or a schema
			// change altered its result (0A000: "cached plan must not
			// change result type"): it is prepared again on the next read;
			// this one goes through pgx's path. No row came before the
			// error (Bind fails). (Unnamed: pgx's own cached statement may
			// be as stale.)
			if err := c.Conn().Deallocate(ctx, name); err != nil {
				return err
			}
			return s.queryDocBatchPgx(ctx, c.Conn(), b, pgx.QueryExecModeDescribeExec)
		}
		return cerr
	}
	return err
}

// appendUUIDArray appends the binary form of a one-dimensional uuid[]
// holding the reads' ids.
func appendUUIDArray(buf []byte, reads []*docRead) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULLs
	buf = binary.BigEndian.AppendUint32(buf, uuidOID)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(reads)))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for _, q := range reads {
		buf = binary.BigEndian.AppendUint32(buf, 16)
		buf = append(buf, q.u[:]...)
	}
	return buf
}

// queryDocBatchPgx is queryDocBatch through pgx's query path (options: a
// pgx.QueryExecMode).
func (s *Store) queryDocBatchPgx(ctx context.Context, c *pgx.Conn, b *docBatch, options ...any) error {
	var rows pgx.Rows
	var err error
	if len(b.reads) == 1 {
		rows, err = c.Query(ctx, getDocSQL, append(options, b.reads[0].u, RenderRev())...)
	} else {
		ids := make([]string, len(b.reads))
		for i, q := range b.reads {
			ids[i] = q.u.String()
		}
		rows, err = c.Query(ctx, getDocsSQL, append(options, ids, RenderRev())...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id      pgtype.UUID
			state   string
			version int64
			updated time.Time
			doc     pgtype.DriverBytes // valid until the next row
		)
		if err := rows.Scan(&id, &state, &version, &updated, &doc); err != nil {
			return err
		}
		b.answer(id.Bytes, []byte(state), version, updated, doc, doc != nil)
	}
	return rows.Err()
}
