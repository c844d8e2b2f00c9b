package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Results is what one run writes to bench/results/<time>.json.
type Results struct {
	Started  time.Time      `json:"started"`
	Took     string         `json:"took"`
	Version  string         `json:"version"` // git describe of the checkout
	Machine  Machine        `json:"machine"`
	Settings map[string]any `json:"settings"`
	Figures  []Figure       `json:"figures"`
}

// Machine identifies where the figures come from.
type Machine struct {
	Hostname   string  `json:"hostname"`
	NumCPU     int     `json:"nproc"`
	Model      string  `json:"cpuModel"`
	MemoryGiB  float64 `json:"memoryGiB"`
	Kernel     string  `json:"kernel"`
	Go         string  `json:"go"`
	PostgreSQL string  `json:"postgresql,omitempty"`
	LoadAvg    string  `json:"loadAvgAtStart"` // other work on the machine skews the figures
}

func (m Machine) String() string {
	return fmt.Sprintf("%d × %s, %.1f GiB, Linux %s, %s, load %s", m.NumCPU, m.Model, m.MemoryGiB, m.Kernel, m.Go, m.LoadAvg)
}

// Status of a figure.
const (
	StatusOK      = "ok"      // every goal met
	StatusMissed  = "MISSED"  // a goal missed
	StatusInfo    = "info"    // no goal
	StatusTODO    = "TODO"    // slot for a figure that needs code not written yet
	StatusSkipped = "skipped" // could not be measured here (reason in Note)
	StatusError   = "ERROR"
)

// Figure is one measured ratio, rate or distribution.
type Figure struct {
	ID    string   `json:"id"` // stable key, e.g. engine.instantiate.notified
	Group string   `json:"group"`
	Title string   `json:"title"`
	Unit  string   `json:"unit,omitempty"`
	Value *float64 `json:"value,omitempty"`
	Dist  *Dist    `json:"distribution,omitempty"`
	Goals []Goal   `json:"goals,omitempty"`
	// Status is derived from Goals unless set (TODO, skipped, error).
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Goal is a limit on the value (What "") or on a percentile ("p50", "p99").
type Goal struct {
	What   string  `json:"what,omitempty"`
	Op     string  `json:"op"` // "<=" or ">="
	Limit  float64 `json:"limit"`
	Actual float64 `json:"actual"`
	Met    bool    `json:"met"`
}

func (g Goal) String() string {
	w := g.What
	if w != "" {
		w += " "
	}
	op := map[string]string{"<=": "≤", ">=": "≥"}[g.Op]
	return fmt.Sprintf("%s%s %s", w, op, num(g.Limit))
}

// Dist summarises samples (in Figure.Unit).
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// distOf summarises samples; percentiles are nearest-rank.
func distOf(samples []float64) *Dist {
	if len(samples) == 0 {
		return &Dist{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return &Dist{N: len(s), Min: s[0], P50: rank(50), P95: rank(95), P99: rank(99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

func (d *Dist) pick(what string) float64 {
	switch what {
	case "p50":
		return d.P50
	case "p95":
		return d.P95
	case "p99":
		return d.P99
	case "max":
		return d.Max
	}
	return d.Mean
}

func ptr(v float64) *float64 { return &v }

// add records a figure, evaluating its goals.
func (r *Results) add(f Figure) {
	if f.Status == "" {
		f.Status = StatusInfo
		for i := range f.Goals {
			g := &f.Goals[i]
			switch {
			case g.What != "" && f.Dist != nil:
				g.Actual = f.Dist.pick(g.What)
			case f.Value != nil:
				g.Actual = *f.Value
			}
			g.Met = (g.Op == "<=" && g.Actual <= g.Limit) || (g.Op == ">=" && g.Actual >= g.Limit)
			if g.Met && f.Status != StatusMissed {
				f.Status = StatusOK
			}
			if !g.Met {
				f.Status = StatusMissed
			}
		}
	}
	r.Figures = append(r.Figures, f)
	logf("%s: %s %s", f.ID, f.result(), f.Status)
}

func (f Figure) result() string {
	switch {
	case f.Dist != nil:
		d := f.Dist
		return fmt.Sprintf("p50 %s  p95 %s  p99 %s  max %s %s (n=%d)", num(d.P50), num(d.P95), num(d.P99), num(d.Max), f.Unit, d.N)
	case f.Value != nil:
		return strings.TrimSpace(num(*f.Value) + " " + f.Unit)
	}
	return "—"
}

// num prints a figure with three significant digits (whole numbers above 1000).
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func printTable(w io.Writer, r *Results) {
	fmt.Fprintf(w, "\nmini-VNFM benchmarks — %s\nmachine: %s\nPostgreSQL %s; checkout %s\n\n", r.Started.Format(time.RFC3339), r.Machine, r.Machine.PostgreSQL, r.Version)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tRESULT\tGOAL\tSTATUS")
	group := ""
	for _, f := range r.Figures {
		if f.Group != group {
			if group != "" {
				fmt.Fprintln(tw, "\t\t\t")
			}
			group = f.Group
		}
		var goals []string
		for _, g := range f.Goals {
			goals = append(goals, g.String())
		}
		goal := strings.Join(goals, ", ")
		if goal == "" {
			goal = "—"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Title, f.result(), goal, f.Status)
	}
	_ = tw.Flush()
	var notes []string
	for _, f := range r.Figures {
		if f.Note != "" && f.Status != StatusInfo && f.Status != StatusOK {
			notes = append(notes, fmt.Sprintf("  %s [%s]: %s", f.Title, f.Status, f.Note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n%s\n", strings.Join(notes, "\n"))
	}
}

func machineInfo() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), Go: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if kb := meminfo("MemTotal"); kb > 0 {
		m.MemoryGiB = math.Round(float64(kb)/(1<<20)*10) / 10
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

func meminfo(key string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
