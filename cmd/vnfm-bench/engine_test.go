package main

import "testing"

func TestMedianFloor(t *testing.T) {
	for _, c := range []struct {
		perOp     float64
		n, cores  int
		wantFloor float64
	}{
		{1.7, 50, 2, 21.25}, // 25 operations' CPU on 2 cores
		{1.0, 51, 2, 13},    // the median of 51 is the 26th
		{2.0, 1, 4, 0.5},
		{1.0, 10, 0, 5}, // no core count: one
	} {
		if got := medianFloor(c.perOp, c.n, c.cores); got != c.wantFloor {
			t.Errorf("medianFloor(%v, %d, %d) = %v, want %v", c.perOp, c.n, c.cores, got, c.wantFloor)
		}
	}
}
