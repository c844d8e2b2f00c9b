package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mini-vnfm/mini-vnfm/internal/lcmtest"
)

// reads compares the rate of GET /vnf_instances/{id} with N clients to what
// pgbench -S gets from the same PostgreSQL with N clients.
func (b *bench) reads() error {
	ids := b.instanceIDs
	if len(ids) == 0 {
		var err error
		if ids, err = b.createInstances(b.o.instances, b.o.instances); err != nil {
			return err
		}
		b.instanceIDs = ids
	}
	// Instantiate half of them so that documents have the usual size mix.
	for i, id := range ids {
		if i%2 == 0 {
			if code, _, body, err := b.call(b.ctx, "POST", "/vnflcm/v1/vnf_instances/"+id+"/instantiate", instantiateBody); err != nil || code != http.StatusAccepted {
				return fmt.Errorf("instantiate for reads: %d %s %v", code, body, err)
			}
		}
	}
	if err := b.waitIdle(time.Minute); err != nil {
		return err
	}

	pgbench, why := findPgbench(b.pgVersion)
	n := b.o.clients
	reqs, wants, addr, err := leanRequests(b.base, "/vnflcm/v1/vnf_instances/", ids)
	if err != nil {
		return err
	}
	// The lean client reads exactly what a full HTTP client does.
	lc := newLeanClient(addr, time.Minute)
	var docMin, docMax int
	for i, id := range ids {
		code, _, want, err := b.call(b.ctx, "GET", "/vnflcm/v1/vnf_instances/"+id, "")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET instance: %d %s", code, want)
		}
		if err != nil {
			return err
		}
		got, err := lc.get(reqs[i], wants[i])
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("lean client: GET %s read %d bytes that differ from net/http's %d", id, len(got), len(want))
		}
		if i == 0 || len(got) < docMin {
			docMin = len(got)
		}
		docMax = max(docMax, len(got))
	}
	lc.Close()
	get := func(d time.Duration, record bool) (float64, []float64, error) {
		ctx, cancel := context.WithTimeout(b.ctx, d)
		defer cancel()
		lats := make([][]float64, n)
		counts := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for c := range n {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(c), 7))
				lc := newLeanClient(addr, time.Minute)
				defer lc.Close()
				for ctx.Err() == nil {
					i := r.IntN(len(ids))
					s := time.Now()
					_, err := lc.get(reqs[i], wants[i])
					if err != nil {
						errs[c] = err
						return
					}
					counts[c]++
					if record {
						lats[c] = append(lats[c], ms(time.Since(s)))
					}
				}
			})
		}
		wg.Wait()
		el := time.Since(t0)
		total := 0
		var all []float64
		for c := range n {
			total += counts[c]
			all = append(all, lats[c]...)
		}
		return float64(total) / el.Seconds(), all, errors.Join(errs...)
	}
	if _, _, err := get(time.Second, false); err != nil { // warm-up: connections, caches
		return err
	}
	b.pgssStart()
	m0, a0, allocsOK := b.vnfmAllocs()
	meter := startCPU(b.vnfmPID, b.pgPID)
	waitProfile := b.profile("reads-cpu", b.o.readFor-time.Second)
	stopSelf := b.profileSelf("reads-clients-cpu")
	rate, lats, err := get(b.o.readFor, true)
	stopSelf()
	cpu := meter.stop()
	if b.pgss {
		time.Sleep(statsSettle) // the table counters are published
	}
	b.pgssWrite("reads", int64(len(lats)), "requests") // one latency per request
	waitProfile()
	if err != nil {
		return err
	}
	note := cpu.String() + fmt.Sprintf("; per GET: VNFM %.0f µs, PostgreSQL %.0f µs, clients %.0f µs; documents of %d–%d bytes",
		perOp(cpu.VNFM, rate, cpu.Wall), perOp(cpu.PG, rate, cpu.Wall), perOp(cpu.Bench, rate, cpu.Wall), docMin, docMax)
	b.saveAllocs("reads-allocs")
	if m1, a1, ok := b.vnfmAllocs(); ok && allocsOK {
		gets := float64(len(lats)) // one latency per request
		note += fmt.Sprintf("; VNFM heap allocations per GET: %.1f (%.0f bytes)", float64(m1-m0)/gets, float64(a1-a0)/gets)
	}
	b.res.add(Figure{ID: "reads.get_instance.rate", Group: "reads", Unit: "req/s",
		Title: fmt.Sprintf("GET /vnf_instances/{id}, %d clients", n), Value: ptr(rate), Note: note})
	b.res.add(Figure{ID: "reads.get_instance.latency", Group: "reads", Unit: "ms",
		Title: fmt.Sprintf("GET /vnf_instances/{id} latency, %d clients", n), Dist: distOf(lats)})

	if pgbench == "" {
		b.res.add(Figure{ID: "reads.vs_pgbench", Group: "reads", Title: "GET rate ÷ pgbench -S rate", Status: StatusSkipped,
			Goals: []Goal{{Op: ">=", Limit: 0.5}}, Note: why})
		return nil
	}
	tps, pcpu, err := b.pgbench(pgbench, n, b.o.readFor)
	if err != nil {
		return err
	}
	b.res.add(Figure{ID: "reads.pgbench_select.rate", Group: "reads", Unit: "tx/s",
		Title: fmt.Sprintf("pgbench -S, %d clients (same PostgreSQL)", n), Value: ptr(tps),
		Note: pcpu.String() + fmt.Sprintf("; per transaction: PostgreSQL %.0f µs, pgbench %.0f µs",
			perOp(pcpu.PG, tps, pcpu.Wall), perOp(pcpu.Bench, tps, pcpu.Wall))})
	b.res.add(Figure{ID: "reads.vs_pgbench", Group: "reads", Title: "GET rate ÷ pgbench -S rate", Unit: "",
		Value: ptr(rate / tps), Goals: []Goal{{Op: ">=", Limit: 0.5}},
		Note: fmt.Sprintf("%.0f req/s ÷ %.0f tx/s; the HTTP clients, the VNFM and PostgreSQL share %d cores, as pgbench and PostgreSQL do", rate, tps, runtime.NumCPU())})
	return nil
}

// waitIdle waits until no operation is running.
func (b *bench) waitIdle(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var busy int
		if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM vnf_lcm_op_occs WHERE stage = 'run'`).Scan(&busy); err != nil {
			return err
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d operations still running after %v", busy, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// findPgbench looks next to the server's binaries (PG_BINDIR, Debian's
// /usr/lib/postgresql/<major>/bin: package postgresql-client-<major>, which
// the postgresql package pulls in), then on PATH; as root on Debian it
// installs postgresql-client-<major> when missing.
func findPgbench(serverVersion string) (path, why string) {
	major, _, _ := strings.Cut(serverVersion, ".")
	major = strings.Fields(major + " ")[0]
	find := func() string {
		var cands []string
		if d := os.Getenv("PG_BINDIR"); d != "" {
			cands = append(cands, filepath.Join(d, "pgbench"))
		}
		cands = append(cands, filepath.Join("/usr/lib/postgresql", major, "bin", "pgbench"))
		for _, c := range cands {
			if st, err := os.Stat(c); err == nil && st.Mode()&0o111 != 0 {
				return c
			}
		}
		if p, err := exec.LookPath("pgbench"); err == nil {
			return p
		}
		return ""
	}
	if p := find(); p != "" {
		return p, ""
	}
	pkg := "postgresql-client-" + major
	if _, err := exec.LookPath("apt-get"); err == nil && os.Geteuid() == 0 {
		logf("pgbench not found: installing %s (apt-get)", pkg)
		cmd := exec.Command("apt-get", "install", "-y", "-qq", "--no-install-recommends", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Sprintf("pgbench not found and `apt-get install %s` failed: %v: %s", pkg, err, lastLines(string(out), 3))
		}
		if p := find(); p != "" {
			return p, ""
		}
	}
	return "", fmt.Sprintf("pgbench not found (looked in PG_BINDIR, /usr/lib/postgresql/%s/bin and PATH); install %s", major, pkg)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

var tpsRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench initialises a pgbench database next to the VNFM's and runs the
// built-in select-only script (-S: one primary-key SELECT per transaction).
func (b *bench) pgbench(bin string, clients int, d time.Duration) (float64, cpuUse, error) {
	if err := b.exec(b.ctx, "DROP DATABASE IF EXISTS pgbench"); err != nil {
		return 0, cpuUse{}, err
	}
	if err := b.exec(b.ctx, "CREATE DATABASE pgbench"); err != nil {
		return 0, cpuUse{}, err
	}
	u, _ := url.Parse(b.dbURL)
	pw, _ := u.User.Password()
	host := u.Hostname()
	if d := b.pg.SocketDir(); d != "" {
		host = d // the VNFM's transport (b.localURL)
	}
	env := append(os.Environ(), "PGHOST="+host, "PGPORT="+u.Port(), "PGUSER="+u.User.Username(), "PGPASSWORD="+pw,
		"PGDATABASE=pgbench", "PGSSLMODE=disable")
	var clientCPU time.Duration // pgbench's own, of the last run
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(b.ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState != nil {
			clientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil {
			return "", fmt.Errorf("pgbench %s: %v: %s", strings.Join(args, " "), err, lastLines(string(out), 5))
		}
		return string(out), nil
	}
	if _, err := run("-i", "-q", "-s", "10"); err != nil {
		return 0, cpuUse{}, err
	}
	threads := strconv.Itoa(min(clients, runtime.NumCPU()))
	if _, err := run("-n", "-S", "-c", strconv.Itoa(clients), "-j", threads, "-T", "1"); err != nil { // warm-up
		return 0, cpuUse{}, err
	}
	meter := startCPU(b.vnfmPID, b.pgPID)
	out, err := run("-n", "-S", "-c", strconv.Itoa(clients), "-j", threads, "-T", strconv.Itoa(int(d.Seconds())))
	cpu := meter.stop()
	cpu.Bench = clientCPU // the clients are pgbench's threads
	if err != nil {
		return 0, cpu, err
	}
	m := tpsRe.FindStringSubmatch(out)
	if m == nil {
		return 0, cpu, fmt.Errorf("pgbench output without a tps line: %s", lastLines(out, 5))
	}
	tps, _ := strconv.ParseFloat(m[1], 64)
	_ = b.exec(context.Background(), "DROP DATABASE IF EXISTS pgbench")
	return tps, cpu, nil
}

// bulkLoad writes rows NOT_INSTANTIATED instances into vnf_instances with
// COPY, as a bulk load is done: the secondary indexes are dropped first and
// built again after (faster than a million index insertions), with ids in
// time order (UUIDv7, as the primary key index likes them), then ANALYZE.
// A tenth of the rows each have vnfProvider ACME and metadata.tier gold
// (not the same tenth), the rest Globex and silver.
func bulkLoad(ctx context.Context, pool *pgxpool.Pool, rows int) (int64, error) {
	var defs []string
	err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(indexdef), '{}') FROM pg_indexes i
		WHERE tablename = 'vnf_instances' AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`).Scan(&defs)
	if err != nil {
		return 0, err
	}
	for _, d := range defs {
		name := strings.Fields(strings.SplitN(d, " ON ", 2)[0])
		if _, err := pool.Exec(ctx, "DROP INDEX "+pgx.Identifier{name[len(name)-1]}.Sanitize()); err != nil {
			return 0, err
		}
	}
	pkg := uuid.MustParse(lcmtest.PackageID)
	row := make([]any, 10)
	src := pgx.CopyFromFunc(func() func() ([]any, error) {
		i := 0
		return func() ([]any, error) {
			if i >= rows {
				return nil, nil
			}
			i++
			provider, tier := "Globex", "silver"
			if i%10 == 0 {
				tier = "gold"
			}
			if i%10 == 5 {
				provider = "ACME"
			}
			id, err := uuid.NewV7()
			if err != nil {
				return nil, err
			}
			row[0], row[1], row[2], row[3] = id, fmt.Sprintf("bulk-%07d", i), lcmtest.VnfdID, pkg
			row[4], row[5], row[6], row[7], row[8] = provider, "Sample K8s", "1.0", "1.0", "NOT_INSTANTIATED"
			// Encoded JSON: pgx passes []byte to jsonb as it is.
			row[9] = []byte(`{"tier":"` + tier + `","owner":"team-` + strconv.Itoa(i%17) + `"}`)
			return row, nil
		}
	}())
	n, err := pool.CopyFrom(ctx, pgx.Identifier{"vnf_instances"},
		[]string{"id", "vnf_instance_name", "vnfd_id", "vnf_pkg_id", "vnf_provider", "vnf_product_name",
			"vnf_software_version", "vnfd_version", "instantiation_state", "metadata"}, src)
	if err != nil {
		return 0, fmt.Errorf("COPY: %w", err)
	}
	for _, d := range defs {
		if _, err := pool.Exec(ctx, d); err != nil {
			return 0, fmt.Errorf("%s: %w", d, err)
		}
	}
	_, err = pool.Exec(ctx, "ANALYZE vnf_instances")
	return n, err
}

// list bulk-loads instances with COPY and pages through a filtered list.
func (b *bench) list() error {
	t0 := time.Now()
	rows := b.o.rows
	n, err := bulkLoad(b.ctx, b.pool, rows)
	if err != nil {
		return err
	}
	logf("bulk-loaded %d instances in %v", n, time.Since(t0).Round(time.Millisecond))

	_ = resetPeakRSS(b.vnfmPID)
	rssBefore := procStatus(b.vnfmPID, "VmRSS")
	anonBefore, fileBefore := procStatus(b.vnfmPID, "RssAnon"), procStatus(b.vnfmPID, "RssFile")
	type listing struct {
		id, title, filter string
		want              int
	}
	var figs []listing
	figs = append(figs,
		listing{"list.filter_indexed", "page of GET /vnf_instances?filter=(eq,vnfProvider,ACME)", "(eq,vnfProvider,ACME)", (rows + 5) / 10},
		listing{"list.filter_document", "page of GET /vnf_instances?filter=(eq,metadata/tier,gold)", "(eq,metadata/tier,gold)", rows / 10})
	for _, l := range figs {
		lats, items, pages, err := b.pageAll("/vnflcm/v1/vnf_instances?filter=" + url.QueryEscape(l.filter))
		if err != nil {
			return fmt.Errorf("%s: %w", l.filter, err)
		}
		f := Figure{ID: l.id, Group: "list", Unit: "ms", Title: l.title, Dist: distOf(lats),
			Note: fmt.Sprintf("%d items in %d pages of %d instances", items, pages, rows)}
		if l.id == "list.filter_document" {
			f.Goals = []Goal{{What: "p99", Op: "<=", Limit: 50}}
		}
		if items != l.want {
			f.Status = StatusError
			f.Note = fmt.Sprintf("listed %d items, want %d", items, l.want)
		}
		b.res.add(f)
	}
	b.res.add(Figure{ID: "list.server_rss", Group: "list", Unit: "MiB", Title: fmt.Sprintf("VNFM RSS while listing %d instances (peak)", rows),
		Value: ptr(float64(procStatus(b.vnfmPID, "VmHWM")) / 1024), Goals: []Goal{{Op: "<=", Limit: 64}},
		Note: fmt.Sprintf("RSS %.1f MiB before the listing (%.1f MiB anonymous: the Go heap and runtime; %.1f MiB file-backed: the binary's pages mapped), %.1f MiB after",
			float64(rssBefore)/1024, float64(anonBefore)/1024, float64(fileBefore)/1024, float64(procStatus(b.vnfmPID, "VmRSS"))/1024)})
	return nil
}

var linkRe = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// pageAll follows Link rel="next" from path and times every page.
func (b *bench) pageAll(path string) (lats []float64, items, pages int, err error) {
	next := b.base + path
	for next != "" {
		s := time.Now()
		req, _ := http.NewRequestWithContext(b.ctx, "GET", next, nil)
		res, err := b.client.Do(req)
		if err != nil {
			return nil, 0, 0, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, 0, 0, err
		}
		if res.StatusCode != http.StatusOK {
			return nil, 0, 0, fmt.Errorf("GET %s: %d %s", next, res.StatusCode, body)
		}
		lats = append(lats, ms(time.Since(s)))
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, 0, 0, err
		}
		items += len(page)
		pages++
		next = ""
		if m := linkRe.FindStringSubmatch(res.Header.Get("Link")); m != nil {
			next = m[1]
			if !strings.HasPrefix(next, b.base) { // follow the path on the bound address
				u, err := url.Parse(next)
				if err != nil {
					return nil, 0, 0, err
				}
				next = b.base + u.RequestURI()
			}
		}
	}
	return lats, items, pages, nil
}

// perOp is the CPU time used per operation in µs, at rate operations per
// second over wall.
func perOp(cpu time.Duration, rate float64, wall time.Duration) float64 {
	if rate <= 0 || wall <= 0 {
		return 0
	}
	return cpu.Seconds() / (rate * wall.Seconds()) * 1e6
}
