package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mini-vnfm/mini-vnfm/internal/remote"
	"github.com/mini-vnfm/mini-vnfm/internal/store"
	"github.com/mini-vnfm/mini-vnfm/internal/testhosts"
)

const (
	sshUser     = "bench"
	sshPassword = "bench-ssh-pass"
	sshCommand  = "hostname"
)

// fanoutSpec is what the parent hands the fan-out process on stdin.
type fanoutSpec struct {
	Netns    string       `json:"netns"` // namespace the connections are made from
	DBURL    string       `json:"dbURL"` // host key pins live in the bench database, as in the VNFM
	Hosts    []fanoutHost `json:"hosts"`
	Parallel int          `json:"parallel"` // ForEach limit; 0 = remote.DefaultParallel
}

type fanoutHost struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
}

// fanoutResult is what the fan-out process reports on stdout.
type fanoutResult struct {
	WallMs     float64   `json:"wallMs"`
	PerHostMs  []float64 `json:"perHostMs"`
	Errors     []string  `json:"errors"`
	RSSStartKB int64     `json:"rssStartKB"` // before the fan-out (runtime, pool, libraries)
	RSSPeakKB  int64     `json:"rssPeakKB"`  // VmHWM at the end
	HeapPeakKB int64     `json:"heapPeakKB"` // highest sampled Go heap in use
	Goroutines int       `json:"goroutinesPeak"`
}

// sshFanout starts the test hosts (root only) and runs the fan-out twice in
// a separate process: first contact (keys pinned) and again (keys checked).
func (b *bench) sshFanout() error {
	if os.Geteuid() != 0 {
		b.res.add(Figure{ID: "ssh.fanout.wall", Group: "ssh", Title: "SSH fan-out", Status: StatusSkipped,
			Note: "needs root: the test hosts are network namespaces with their own sshd (internal/testhosts)"})
		return nil
	}
	if err := testhosts.CheckTools(); err != nil {
		b.res.add(Figure{ID: "ssh.fanout.wall", Group: "ssh", Title: "SSH fan-out", Status: StatusSkipped, Note: err.Error()})
		return nil
	}
	stateDir, err := os.MkdirTemp("", "vnfm-bench-hosts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	n, err := testhosts.NewNetwork(b.ctx, testhosts.Options{Prefix: "vbench", Subnet: "10.77.210.0/24", StateDir: stateDir})
	if err != nil {
		return err
	}
	defer func() {
		if err := n.Close(); err != nil {
			logf("removing the test hosts: %v", err)
		}
	}()
	t0 := time.Now()
	const batch = 20 // hosts booted at once: a 2-core machine boots 100 sshd at once too slowly for testhosts' 20 s readiness bound
	var specs []fanoutHost
	for start := 0; start < b.o.hosts; start += batch {
		var hs []testhosts.HostSpec
		for i := start; i < min(start+batch, b.o.hosts); i++ {
			hs = append(hs, testhosts.HostSpec{Name: fmt.Sprintf("n%03d", i+1), NoPeers: true,
				Users: []testhosts.User{{Name: sshUser, Password: sshPassword, Sudo: testhosts.SudoNoPasswd}}})
		}
		hosts, err := n.AddHosts(b.ctx, hs...)
		if err != nil {
			return err
		}
		for _, h := range hosts {
			specs = append(specs, fanoutHost{Name: h.Name, IP: h.IP.String()})
		}
	}
	logf("%d test hosts up in %v", len(specs), time.Since(t0).Round(time.Millisecond))
	spec := fanoutSpec{Netns: testhosts.NetnsPath(n.CtlNamespace()), DBURL: b.dbURL, Hosts: specs}
	for _, round := range []struct{ id, title string }{
		{"ssh.fanout.first", "first contact: host keys pinned"},
		{"ssh.fanout.pinned", "again: keys checked against the pins"},
	} {
		r, err := b.runFanout(spec)
		if err != nil {
			return err
		}
		if len(r.Errors) > 0 {
			return fmt.Errorf("fan-out: %d of %d hosts failed: %s", len(r.Errors), len(specs), strings.Join(r.Errors[:min(3, len(r.Errors))], "; "))
		}
		sum := 0.0
		for _, v := range r.PerHostMs {
			sum += v
		}
		label := fmt.Sprintf("%d hosts, `%s`, ForEach cap %d", len(specs), sshCommand, remote.DefaultParallel)
		b.res.add(Figure{ID: round.id + ".wall", Group: "ssh", Unit: "s", Title: "SSH fan-out wall time, " + label + " (" + round.title + ")",
			Value: ptr(r.WallMs / 1000)})
		b.res.add(Figure{ID: round.id + ".parallelism", Group: "ssh", Title: "  Σ per-host time ÷ wall time (effective parallelism)",
			Value: ptr(sum / r.WallMs), Note: fmt.Sprintf("at most %d: the cap", remote.DefaultParallel)})
		b.res.add(Figure{ID: round.id + ".per_host", Group: "ssh", Unit: "ms", Title: "  per host: dial + authenticate + run + close", Dist: distOf(r.PerHostMs)})
		b.res.add(Figure{ID: round.id + ".memory", Group: "ssh", Unit: "MiB", Title: "  VNFM-side peak RSS of the fan-out process",
			Value: ptr(float64(r.RSSPeakKB) / 1024),
			Note: fmt.Sprintf("%.1f MiB before the fan-out, Go heap peak %.1f MiB, %d goroutines at most",
				float64(r.RSSStartKB)/1024, float64(r.HeapPeakKB)/1024, r.Goroutines)})
	}
	return nil
}

func (b *bench) runFanout(spec fanoutSpec) (*fanoutResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	in, _ := json.Marshal(spec)
	cmd := exec.CommandContext(b.ctx, exe)
	cmd.Env = append(os.Environ(), sshEnv+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("fan-out process: %v: %s", err, lastLines(errb.String(), 5))
	}
	var r fanoutResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("fan-out process output: %v: %s", err, out.String())
	}
	return &r, nil
}

// sshWorker is the fan-out process: the SSH side of a VNFM and nothing else,
// so that its memory is what the fan-out costs.
func sshWorker() int {
	var spec fanoutSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	st, err := store.Open(ctx, spec.DBURL, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pins := st.HostKeyPins()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return testhosts.DialInNetns(ctx, spec.Netns, network, addr)
	}
	res := fanoutResult{RSSStartKB: procStatus(os.Getpid(), "VmRSS"), PerHostMs: make([]float64, len(spec.Hosts))}
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() {
		var ms runtime.MemStats
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			res.HeapPeakKB = max(res.HeapPeakKB, int64(ms.HeapInuse/1024))
			res.Goroutines = max(res.Goroutines, runtime.NumGoroutine())
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	})
	t0 := time.Now()
	errs := remote.ForEach(ctx, spec.Hosts, spec.Parallel, func(ctx context.Context, h fanoutHost) error {
		s := time.Now()
		c, err := remote.Dial(ctx, remote.Target{Host: h.IP, User: sshUser, Password: sshPassword, Dialer: dial,
			Pins: pins, PinKey: remote.PinKey{ServerID: "bench-" + h.Name}, MaxWait: 30 * time.Second})
		if err != nil {
			return err
		}
		defer c.Close()
		r, err := c.Run(ctx, sshCommand, remote.RunOpts{Timeout: 30 * time.Second})
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(r.Stdout); got != h.Name {
			return fmt.Errorf("hostname printed %q", got)
		}
		for i := range spec.Hosts {
			if spec.Hosts[i].Name == h.Name {
				res.PerHostMs[i] = ms(time.Since(s))
			}
		}
		return nil
	})
	res.WallMs = ms(time.Since(t0))
	close(stopSampling)
	sampled.Wait()
	for i, err := range errs {
		if err != nil {
			res.Errors = append(res.Errors, spec.Hosts[i].Name+": "+err.Error())
		}
	}
	res.RSSPeakKB = procStatus(os.Getpid(), "VmHWM")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.RSSPeakKB = max(res.RSSPeakKB, ru.Maxrss)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}
