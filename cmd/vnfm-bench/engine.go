package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
)

const (
	instantiateBody = `{"flavourId":"simple","vimConnectionInfo":[{"id":"vim-bench","vimType":"` + lcmtest.VimType + `"}]}`
	terminateBody   = `{"terminationType":"FORCEFUL"}`
)

// receiver is the NFVO side: a loopback HTTP server that records when each
// op occurrence's final notification arrives.
type receiver struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	ops   map[string]*opWait
	count atomic.Int64
}

type opWait struct {
	done  chan struct{}
	at    time.Time
	state string
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{ops: map[string]*opWait{}, url: "http://" + ln.Addr().String() + "/notify"}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) wait(opID string) *opWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.ops[opID]
	if w == nil {
		w = &opWait{done: make(chan struct{})}
		r.ops[opID] = w
	}
	return w
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet { // the callback test of a new subscription
		w.WriteHeader(http.StatusNoContent)
		return
	}
	at := time.Now()
	var n struct {
		Type    string `json:"notificationType"`
		OpID    string `json:"vnfLcmOpOccId"`
		OpState string `json:"operationState"`
	}
	b, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(b, &n); err == nil && n.OpID != "" && (n.OpState == "COMPLETED" || n.OpState == "FAILED_TEMP") {
		ow := r.wait(n.OpID)
		r.mu.Lock()
		if ow.at.IsZero() {
			ow.at, ow.state = at, n.OpState
			close(ow.done)
			r.count.Add(1)
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) close() { _ = r.srv.Close() }

// call sends one API request.
func (b *bench) call(ctx context.Context, method, path, body string) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, rb, err
}

func (b *bench) createInstances(n int, par int) ([]string, error) {
	ids := make([]string, n)
	errs := make([]error, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			code, _, body, err := b.call(b.ctx, "POST", "/vnflcm/v1/vnf_instances",
				fmt.Sprintf(`{"vnfdId":%q,"vnfInstanceName":"bench-engine-%d"}`, lcmtest.VnfdID, i))
			if err == nil && code != http.StatusCreated {
				err = fmt.Errorf("create instance: %d %s", code, body)
			}
			if err != nil {
				errs[i] = err
				return
			}
			var doc struct{ ID string }
			errs[i] = json.Unmarshal(body, &doc)
			ids[i] = doc.ID
		})
	}
	wg.Wait()
	return ids, errors.Join(errs...)
}

// opSample is one LCM operation as the client saw it.
type opSample struct {
	id                    string
	sent, accepted, notif time.Time
	committed             time.Time // state_entered_time of COMPLETED (database clock, same machine)
}

// taskPost is the whole POST of a task on one instance, for the lean
// client.
func taskPost(host, inst, task, body string) []byte {
	return fmt.Appendf(nil, "POST /vnflcm/v1/vnf_instances/%s/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n%s",
		inst, task, host, len(body), body)
}

// runOp posts a task (req, from taskPost) and waits for its COMPLETED
// notification.
func (b *bench) runOp(ctx context.Context, rcv *receiver, c *leanClient, task string, req []byte) (opSample, error) {
	s := opSample{sent: time.Now()}
	res, err := c.exchange(req)
	s.accepted = time.Now()
	if err != nil {
		return s, err
	}
	if res.status != http.StatusAccepted {
		return s, fmt.Errorf("%s: %d %s", task, res.status, res.body)
	}
	s.id = res.location[strings.LastIndex(res.location, "/")+1:]
	if s.id == "" {
		return s, fmt.Errorf("%s: 202 without the op occurrence's Location", task)
	}
	w := rcv.wait(s.id)
	select {
	case <-w.done:
	case <-time.After(2 * time.Minute):
		return s, fmt.Errorf("%s %s: no COMPLETED notification within 2 min", task, s.id)
	case <-ctx.Done():
		return s, ctx.Err()
	}
	if w.state != "COMPLETED" {
		return s, fmt.Errorf("%s %s ended %s", task, s.id, w.state)
	}
	s.notif = w.at
	return s, nil
}

// fillCommitted reads when each op's COMPLETED state was written.
func (b *bench) fillCommitted(samples []opSample) error {
	ids := make([]string, len(samples))
	for i, s := range samples {
		ids[i] = s.id
	}
	rows, err := b.pool.Query(b.ctx, `SELECT id::text, state_entered_time FROM vnf_lcm_op_occs WHERE id = ANY($1::uuid[]) AND operation_state = 'COMPLETED'`, ids)
	if err != nil {
		return err
	}
	at := map[string]time.Time{}
	for rows.Next() {
		var id string
		var t time.Time
		if err := rows.Scan(&id, &t); err != nil {
			return err
		}
		at[id] = t
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range samples {
		t, ok := at[samples[i].id]
		if !ok {
			return fmt.Errorf("op %s is not COMPLETED in the database", samples[i].id)
		}
		samples[i].committed = t
	}
	return nil
}

// spanOf is one burst's wall time: its first send to its last notification.
func spanOf(ss []opSample) time.Duration {
	if len(ss) == 0 {
		return 0
	}
	first, last := ss[0].sent, ss[0].notif
	for _, s := range ss[1:] {
		if s.sent.Before(first) {
			first = s.sent
		}
		if s.notif.After(last) {
			last = s.notif
		}
	}
	return last.Sub(first)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// engine measures POST → COMPLETED latency of bursts of parallel
// instantiations and the closed-loop operation rate.
func (b *bench) engine() error {
	rcv, err := newReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	sub := fmt.Sprintf(`{"callbackUri":%q,"filter":{"notificationTypes":["VnfLcmOperationOccurrenceNotification"],"operationStates":["COMPLETED","FAILED_TEMP"]}}`, rcv.url)
	if code, _, body, err := b.call(b.ctx, "POST", "/vnflcm/v1/subscriptions", sub); err != nil || code != http.StatusCreated {
		return fmt.Errorf("subscribe: %d %s %v", code, body, err)
	}
	ids, err := b.createInstances(b.o.instances, b.o.instances)
	if err != nil {
		return err
	}
	b.instanceIDs = ids
	// One keep-alive connection per instance, and each instance's two
	// requests built once.
	host, err := leanAddr(b.base)
	if err != nil {
		return err
	}
	conns := make([]*leanClient, len(ids))
	posts := make([]map[string][]byte, len(ids))
	for i, id := range ids {
		conns[i] = newLeanClient(host, time.Minute)
		defer conns[i].Close()
		posts[i] = map[string][]byte{"instantiate": taskPost(host, id, "instantiate", instantiateBody),
			"terminate": taskPost(host, id, "terminate", terminateBody)}
	}

	// Bursts: every instance instantiated at the same moment, then all terminated.
	burst := func(task string) ([]opSample, error) {
		samples := make([]opSample, len(ids))
		errs := make([]error, len(ids))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				<-start
				samples[i], errs[i] = b.runOp(b.ctx, rcv, conns[i], task, posts[i][task])
			})
		}
		time.Sleep(20 * time.Millisecond) // let every goroutine reach the start line
		close(start)
		wg.Wait()
		return samples, errors.Join(errs...)
	}
	var inst, term []opSample
	var burstMeter *cpuMeter
	var burstWall time.Duration
	waitBurstProfile := func() {}
	for r := -1; r < b.o.rounds; r++ { // round -1 warms up connections and caches
		if r == 0 {
			burstMeter = startCPU(b.vnfmPID, b.pgPID)
			waitBurstProfile = b.profile("engine-burst-cpu", time.Duration(b.o.rounds)*150*time.Millisecond)
		}
		s, err := burst("instantiate")
		if err != nil {
			return err
		}
		t, err := burst("terminate")
		if err != nil {
			return err
		}
		if r >= 0 {
			inst, term = append(inst, s...), append(term, t...)
			burstWall += spanOf(s)
		}
	}
	var burstCPU cpuUse
	if burstMeter != nil { // nil with -rounds 0: the warm-up round only
		burstCPU = burstMeter.stop()
	}
	waitBurstProfile()
	if err := b.fillCommitted(inst); err != nil {
		return err
	}
	if len(inst) >= len(ids) {
		if err := b.writeTimeline(inst[len(inst)-len(ids):]); err != nil {
			logf("burst timeline: %v", err)
		}
	}
	wait, runs, err := b.breakdown(inst)
	if err != nil {
		return err
	}
	if err := b.fillCommitted(term); err != nil {
		return err
	}
	lat := func(ss []opSample, f func(opSample) time.Duration) []float64 {
		out := make([]float64, len(ss))
		for i, s := range ss {
			out[i] = ms(f(s))
		}
		return out
	}
	n := b.o.instances
	b.res.add(Figure{ID: "engine.instantiate.committed", Group: "engine", Unit: "ms",
		Title: fmt.Sprintf("instantiate POST → COMPLETED written, %d in parallel", n),
		Dist:  distOf(lat(inst, func(s opSample) time.Duration { return s.committed.Sub(s.sent) })),
		Goals: []Goal{{What: "p50", Op: "<=", Limit: 20}, {What: "p99", Op: "<=", Limit: 100}},
		Note:  "sent → the COMPLETED row's state_entered_time (read afterwards: no polling)"})
	b.res.add(Figure{ID: "engine.instantiate.notified", Group: "engine", Unit: "ms",
		Title: fmt.Sprintf("instantiate POST → COMPLETED notification, %d in parallel", n),
		Dist:  distOf(lat(inst, func(s opSample) time.Duration { return s.notif.Sub(s.sent) })),
		Goals: []Goal{{What: "p50", Op: "<=", Limit: 20}, {What: "p99", Op: "<=", Limit: 100}},
		Note:  "sent → arrival of the COMPLETED notification at a loopback subscriber (outbox delivery included)"})
	b.res.add(Figure{ID: "engine.instantiate.accepted", Group: "engine", Unit: "ms",
		Title: "instantiate POST → 202 Accepted",
		Dist:  distOf(lat(inst, func(s opSample) time.Duration { return s.accepted.Sub(s.sent) }))})
	b.res.add(Figure{ID: "engine.instantiate.queued", Group: "engine", Unit: "ms",
		Title: fmt.Sprintf("  of which waiting for a worker (≤ %d at once; op created → first step)", b.o.workers), Dist: distOf(wait),
		Note: "from the op occurrence's start_time to its first journal entry"})
	b.res.add(Figure{ID: "engine.instantiate.run", Group: "engine", Unit: "ms",
		Title: "  of which running (first step → COMPLETED written)", Dist: distOf(runs),
		Note: "3 journaled steps (2 management hooks, infra with 3 nodes), zero-latency drivers"})
	if nOps := float64(len(inst) + len(term)); nOps > 0 {
		perOp := (ms(burstCPU.VNFM) + ms(burstCPU.PG) + ms(burstCPU.Bench)) / nOps
		b.res.add(Figure{ID: "engine.burst.cpu_per_op", Group: "engine", Unit: "ms",
			Title: "  CPU per operation in the bursts (VNFM + PostgreSQL + bench clients)",
			Value: ptr(perOp),
			Note: fmt.Sprintf("%s; per operation: VNFM %.2f, PostgreSQL %.2f, bench clients %.2f ms; an instantiate burst's first send → last notification: %.1f ms on average; "+
				"the median operation cannot finish before %.1f ms, the CPU of half a burst on %d cores, whatever the order",
				burstCPU, ms(burstCPU.VNFM)/nOps, ms(burstCPU.PG)/nOps, ms(burstCPU.Bench)/nOps, ms(burstWall)/float64(b.o.rounds),
				medianFloor(perOp, n, runtime.NumCPU()), runtime.NumCPU())})
	}
	b.res.add(Figure{ID: "engine.terminate.notified", Group: "engine", Unit: "ms",
		Title: fmt.Sprintf("terminate POST → COMPLETED notification, %d in parallel", n),
		Dist:  distOf(lat(term, func(s opSample) time.Duration { return s.notif.Sub(s.sent) }))})

	// Closed loop: every instance instantiated and terminated over and over,
	// the next request sent as soon as the previous one's notification arrives.
	var done atomic.Int64
	var loopLat []float64
	var mu sync.Mutex
	errs := make([]error, len(ids))
	time.Sleep(statsSettle) // the bursts' statistics are published
	db0, dbErr := b.readDB()
	b.pgssStart()
	m0, a0, allocsOK := b.vnfmAllocs()
	meter := startCPU(b.vnfmPID, b.pgPID)
	waitProfile := b.profile("engine-cpu", b.o.sustain-time.Second)
	t0 := time.Now()
	deadline := t0.Add(b.o.sustain)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			var local []float64
			for k := 0; time.Now().Before(deadline); k++ {
				task := "instantiate"
				if k%2 == 1 {
					task = "terminate"
				}
				s, err := b.runOp(b.ctx, rcv, conns[i], task, posts[i][task])
				if err != nil {
					errs[i] = err
					return
				}
				done.Add(1)
				local = append(local, ms(s.notif.Sub(s.sent)))
				if k%2 == 0 && !time.Now().Before(deadline) {
					// leave the instance terminated, like the bursts do
					if _, err := b.runOp(b.ctx, rcv, conns[i], "terminate", posts[i]["terminate"]); err != nil {
						errs[i] = err
						return
					}
					done.Add(1)
				}
			}
			mu.Lock()
			loopLat = append(loopLat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	cpu := meter.stop()
	waitProfile()
	m1, a1, allocsOK1 := b.vnfmAllocs()
	b.saveAllocs("engine-allocs")
	time.Sleep(statsSettle)
	db1, err := b.readDB()
	dbErr = errors.Join(dbErr, err)
	b.pgssWrite("engine", done.Load(), "operations")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rate := float64(done.Load()) / elapsed.Seconds()
	note := fmt.Sprintf("%d operations (instantiate, terminate) in %.1f s, each sent when the previous one's notification arrived; %s; per operation: VNFM %.2f ms, PostgreSQL %.2f ms CPU",
		done.Load(), elapsed.Seconds(), cpu, ms(cpu.VNFM)/float64(done.Load()), ms(cpu.PG)/float64(done.Load()))
	if allocsOK && allocsOK1 {
		note += fmt.Sprintf("; VNFM heap allocations per operation: %.0f (%.1f kB)", float64(m1-m0)/float64(done.Load()), float64(a1-a0)/float64(done.Load())/1000)
	}
	b.res.add(Figure{ID: "engine.ops_per_second", Group: "engine", Unit: "ops/s",
		Title: fmt.Sprintf("completed LCM operations per second, %d instances in a closed loop", n),
		Value: ptr(rate), Goals: []Goal{{Op: ">=", Limit: 500}},
		Note: note})
	b.res.add(Figure{ID: "engine.closed_loop.notified", Group: "engine", Unit: "ms",
		Title: "POST → COMPLETED notification under the closed loop", Dist: distOf(loopLat)})
	b.res.add(Figure{ID: "engine.cpu_per_op", Group: "engine", Unit: "ms",
		Title: "CPU per operation (VNFM + PostgreSQL)", Value: ptr((ms(cpu.VNFM) + ms(cpu.PG)) / float64(done.Load())),
		Goals: []Goal{{Op: "<=", Limit: 2}}, Note: cpu.String()})
	if dbErr != nil {
		return fmt.Errorf("reading PostgreSQL's statistics: %w", dbErr)
	}
	d, ops := db1.sub(db0), float64(done.Load())
	b.res.add(Figure{ID: "engine.commits_per_op", Group: "engine", Unit: "commits",
		Title: "committed transactions per operation (closed loop)", Value: ptr(float64(d.commits) / ops),
		Note: fmt.Sprintf("pg_stat_database.xact_commit of the VNFM's database, API, engine and notifier together; per operation also %.1f WAL flushes (pg_stat_wal.wal_sync), %.0f WAL records, %.1f KiB of WAL",
			float64(d.walSyncs)/ops, float64(d.walRecords)/ops, float64(d.walBytes)/ops/1024)})
	return nil
}

// breakdown splits each op's time into waiting for a worker (created →
// first journal entry) and running (first journal entry → COMPLETED).
func (b *bench) breakdown(samples []opSample) (wait, runs []float64, err error) {
	ids := make([]string, len(samples))
	for i, s := range samples {
		ids[i] = s.id
	}
	rows, err := b.pool.Query(b.ctx, `SELECT o.id::text, o.start_time, min(j.start_time), o.state_entered_time
		FROM vnf_lcm_op_occs o JOIN op_journal j ON j.op_occ_id = o.id
		WHERE o.id::text = ANY($1) GROUP BY o.id`, ids)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var created, first, done time.Time
		if err := rows.Scan(&id, &created, &first, &done); err != nil {
			return nil, nil, err
		}
		wait = append(wait, ms(first.Sub(created)))
		runs = append(runs, ms(done.Sub(first)))
	}
	return wait, runs, rows.Err()
}

// writeTimeline writes, for each op of one instantiate burst, when it was
// sent, accepted, created, each journal entry began and ended, and when its
// COMPLETED row was written and notified, in ms from the burst's first send —
// the picture of how the operations move through the group commit together.
func (b *bench) writeTimeline(burst []opSample) error {
	if len(burst) == 0 {
		return nil
	}
	t0 := burst[0].sent
	ids := make([]string, len(burst))
	for i, s := range burst {
		ids[i] = s.id
		if s.sent.Before(t0) {
			t0 = s.sent
		}
	}
	rows, err := b.pool.Query(b.ctx, `SELECT o.id::text, o.start_time, j.step, j.node, j.start_time, j.end_time
		FROM vnf_lcm_op_occs o JOIN op_journal j ON j.op_occ_id = o.id
		WHERE o.id = ANY($1::uuid[]) AND j.phase = 'run' ORDER BY o.id, j.start_time, j.step, j.node`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	off := func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return fmt.Sprintf("%.2f", ms(t.Sub(t0)))
	}
	created := map[string]time.Time{}
	entries := map[string][]string{}
	for rows.Next() {
		var id, step, node string
		var c time.Time
		var st, en *time.Time
		if err := rows.Scan(&id, &c, &step, &node, &st, &en); err != nil {
			return err
		}
		created[id] = c
		name := step
		if node != "" {
			name += "/" + node
		}
		entries[id] = append(entries[id], fmt.Sprintf("  %-34s %8s %8s", name, off(st), off(en)))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	order := append([]opSample(nil), burst...)
	sort.Slice(order, func(i, j int) bool { return order[i].committed.Before(order[j].committed) })
	var w strings.Builder
	fmt.Fprintf(&w, "One instantiate burst of %d operations, ms from its first send (in the order they completed).\n", len(burst))
	fmt.Fprintf(&w, "Journal entries: begin and end (node entries are written done; the engine's and the database's clocks are the same machine's).\n")
	for _, s := range order {
		c := created[s.id]
		fmt.Fprintf(&w, "\nop %s  sent %.2f  202 %.2f  created %s  COMPLETED written %.2f  notified %.2f\n",
			s.id, ms(s.sent.Sub(t0)), ms(s.accepted.Sub(t0)), off(&c), ms(s.committed.Sub(t0)), ms(s.notif.Sub(t0)))
		w.WriteString(strings.Join(entries[s.id], "\n"))
		w.WriteString("\n")
	}
	return os.WriteFile(b.prefix+"-burst-timeline.txt", []byte(w.String()), 0o644)
}

// medianFloor is the earliest the median of n operations sent at once can
// finish, in ms, when each costs perOp ms of CPU and cores run them: the
// first half of them must have had their CPU, even in the best order.
func medianFloor(perOp float64, n, cores int) float64 {
	if cores < 1 {
		cores = 1
	}
	return perOp * float64((n+1)/2) / float64(cores)
}
