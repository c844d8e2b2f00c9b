package main

import (
	"testing"
	"time"
)

func TestStepSplit(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(secs(s)) }
	const step = 2 * time.Second
	cases := []struct {
		name          string
		end           float64
		runs          []kubeadmRun
		world, before float64
		after, chain  float64
	}{
		{name: "serial masters, workers inside the chain count nothing",
			end: 40,
			runs: []kubeadmRun{
				{Role: "main-master", Start: at(1), Seconds: 10},   // beyond t: 3..11
				{Role: "control-plane", Start: at(12), Seconds: 8}, // 14..20
				{Role: "control-plane", Start: at(21), Seconds: 5}, // 23..26
				{Role: "worker", Start: at(12), Seconds: 9},        // ends 21, before the chain's end
			},
			world: 8 + 6 + 3, before: 1, after: 14, chain: 25},
		{name: "workers outlasting the chain count from its end, once for all",
			end: 30,
			runs: []kubeadmRun{
				{Role: "main-master", Start: at(0), Seconds: 4}, // 2..4
				{Role: "worker", Start: at(5), Seconds: 20},     // 7..25, after the chain's end (4)
				{Role: "worker", Start: at(6), Seconds: 15},     // 8..21, inside the other
			},
			world: 2 + 18, before: 0, after: 5, chain: 4},
		{name: "runs shorter than t leave nothing to the test world",
			end:   10,
			runs:  []kubeadmRun{{Role: "main-master", Start: at(3), Seconds: 1.5}},
			world: 0, before: 3, after: 5.5, chain: 1.5},
		{name: "no kubeadm ran (already installed)", end: 4, world: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := stepSplit{Start: t0, End: at(c.end), Runs: c.runs}
			s.split(step)
			check := func(what string, got time.Duration, want float64) {
				t.Helper()
				if d := got - secs(want); d > time.Millisecond || d < -time.Millisecond {
					t.Errorf("%s = %v, want %vs", what, got, want)
				}
			}
			check("test world", s.TestWorld, c.world)
			check("before the first run", s.BeforeFirst, c.before)
			check("after the last run", s.AfterLast, c.after)
			check("master chain", s.MasterChain, c.chain)
			check("VNFM", s.VNFM(), c.end-c.world)
		})
	}
}
