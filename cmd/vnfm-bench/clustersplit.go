package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cluster phase's figures judge the VNFM: in the test world an install
// step is not t but what the real kubeadm, API servers and etcd of the
// simulator's hosts take on this machine's cores, and that is not the
// VNFM's. The install script reports when kubeadm init/join started and how
// long it ran (VNFM_RESULT kubeadm_started, kubeadm_seconds); the kubeadm
// driver keeps both in each node's checkpoint output. Of each kubeadm run,
// the part beyond t is the test world's. The master runs (init, then the
// control-plane joins) are the critical path; worker runs count only where
// they outlast it (after the last master run ended). The union of those
// parts within the step is the test world's time; the rest of the step's
// wall time is the VNFM's: its SSH round trips, load balancer and VIP,
// waits for nodes and etcd, the install script's own work, registering the
// VIM.

// kubeadmRun is one kubeadm init or join of a step, from its node's
// checkpoint.
type kubeadmRun struct {
	Node    string
	Role    string // main-master, control-plane, worker
	Start   time.Time
	Seconds float64
}

func (r kubeadmRun) end() time.Time { return r.Start.Add(secs(r.Seconds)) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// stepSplit is a step's wall time, split into the test world's and the
// VNFM's.
type stepSplit struct {
	Start, End   time.Time
	Runs         []kubeadmRun
	TestWorld    time.Duration // the parts of kubeadm runs beyond t on the critical path
	BeforeFirst  time.Duration // step start → first kubeadm run (connect, prepare, load balancer, script)
	AfterLast    time.Duration // last kubeadm run's end → step end (waits, etcd frontend, VIM)
	MasterChain  time.Duration // first master run's start → last master run's end
	KubeadmTotal time.Duration // Σ kubeadm run time
}

func (s stepSplit) Wall() time.Duration { return s.End.Sub(s.Start) }

// VNFM is the step's wall time without the test world's part.
func (s stepSplit) VNFM() time.Duration { return s.Wall() - s.TestWorld }

// splitStep reads the step's node checkpoints and splits its wall time.
func splitStep(ctx context.Context, dbURL, opID, step string, t time.Duration) (*stepSplit, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var s stepSplit
	err = conn.QueryRow(ctx, `SELECT start_time, end_time FROM op_journal
		WHERE op_occ_id=$1 AND step=$2 AND node='' AND phase='run' AND end_time IS NOT NULL`, opID, step).Scan(&s.Start, &s.End)
	if err != nil {
		return nil, fmt.Errorf("journal of %s, step %s: %w", opID, step, err)
	}
	rows, err := conn.Query(ctx, `SELECT node, coalesce(output, 'null'::jsonb) FROM op_journal
		WHERE op_occ_id=$1 AND step=$2 AND node<>'' AND phase='run' AND state='COMPLETED'`, opID, step)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var node string
		var raw []byte
		if err := rows.Scan(&node, &raw); err != nil {
			return nil, err
		}
		var out struct {
			Role    string  `json:"role"`
			Started float64 `json:"kubeadmStarted"`
			Seconds float64 `json:"kubeadmSeconds"`
		}
		if json.Unmarshal(raw, &out) != nil || out.Started == 0 {
			continue // no kubeadm ran (already installed), or not a kubeadm node
		}
		sec := int64(out.Started)
		s.Runs = append(s.Runs, kubeadmRun{Node: node, Role: out.Role,
			Start: time.Unix(sec, int64((out.Started-float64(sec))*1e9)), Seconds: out.Seconds})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.split(t)
	return &s, nil
}

// split computes the test world's part and the VNFM's edges.
func (s *stepSplit) split(t time.Duration) {
	slices.SortFunc(s.Runs, func(a, b kubeadmRun) int { return a.Start.Compare(b.Start) })
	var masterEnd, masterStart, lastEnd time.Time
	for _, r := range s.Runs {
		s.KubeadmTotal += secs(r.Seconds)
		if r.end().After(lastEnd) {
			lastEnd = r.end()
		}
		if r.Role == "worker" {
			continue
		}
		if masterStart.IsZero() || r.Start.Before(masterStart) {
			masterStart = r.Start
		}
		if r.end().After(masterEnd) {
			masterEnd = r.end()
		}
	}
	var iv [][2]time.Time
	for _, r := range s.Runs {
		from, to := r.Start.Add(t), r.end()
		if r.Role == "worker" && from.Before(masterEnd) {
			from = masterEnd
		}
		if from.Before(s.Start) {
			from = s.Start
		}
		if to.After(s.End) {
			to = s.End
		}
		if to.After(from) {
			iv = append(iv, [2]time.Time{from, to})
		}
	}
	s.TestWorld = unionLength(iv)
	if len(s.Runs) > 0 {
		s.BeforeFirst = s.Runs[0].Start.Sub(s.Start)
		s.AfterLast = s.End.Sub(lastEnd)
	}
	if !masterStart.IsZero() {
		s.MasterChain = masterEnd.Sub(masterStart)
	}
}

// unionLength is the length of the union of intervals.
func unionLength(iv [][2]time.Time) time.Duration {
	slices.SortFunc(iv, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, x := range iv {
		switch {
		case i == 0:
			cur = x
		case x[0].After(cur[1]):
			total += cur[1].Sub(cur[0])
			cur = x
		case x[1].After(cur[1]):
			cur[1] = x[1]
		}
	}
	if len(iv) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total
}

// note describes the split for a figure's note.
func (s *stepSplit) note(t time.Duration) string {
	var roles []string
	count := map[string]int{}
	took := map[string][]string{}
	for _, r := range s.Runs {
		if count[r.Role] == 0 {
			roles = append(roles, r.Role)
		}
		count[r.Role]++
		took[r.Role] = append(took[r.Role], fmt.Sprintf("%.1f", r.Seconds))
	}
	var runs []string
	for _, role := range roles {
		runs = append(runs, fmt.Sprintf("%d %s (%s s)", count[role], role, strings.Join(took[role], ", ")))
	}
	return fmt.Sprintf("wall %.2f s = test world %.2f s (kubeadm beyond t = %v on the critical path; kubeadm runs: %s) + VNFM %.2f s "+
		"(of it %.2f s before the first kubeadm run, %.2f s after the last; master chain init → last control-plane join %.2f s)",
		s.Wall().Seconds(), s.TestWorld.Seconds(), t, orDash(strings.Join(runs, "; ")), s.VNFM().Seconds(),
		s.BeforeFirst.Seconds(), s.AfterLast.Seconds(), s.MasterChain.Seconds())
}

func orDash(s string) string {
	if s == "" {
		return "none reported"
	}
	return s
}
