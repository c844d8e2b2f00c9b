// Package metrics defines the Prometheus metrics of the VNFM: HTTP traffic,
// LCM operations by state, the op-occ queue and step durations.
package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mini-vnfm/mini-vnfm/internal/store"
)

// Metrics owns a registry and the collectors the server updates.
type Metrics struct {
	Registry     *prometheus.Registry
	HTTPRequests *prometheus.CounterVec
	HTTPDuration *prometheus.HistogramVec
	StepDuration *prometheus.HistogramVec
	// NotificationLatency is the time from queueing to delivery.
	NotificationLatency prometheus.Histogram
	// NotificationAttempts counts delivery attempts by result (delivered, failed, given_up).
	NotificationAttempts *prometheus.CounterVec
}

// StatsFunc reads the operation/queue snapshot at scrape time.
type StatsFunc func(context.Context) (*store.Stats, error)

// New registers every metric. stats may be nil (no database metrics).
func New(stats StatsFunc, log *slog.Logger) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vnfm_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vnfm_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
		StepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vnfm_lcm_step_duration_seconds", Help: "Duration of LCM operation steps by operation, step and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 12),
		}, []string{"operation", "step", "state"}),
	}
	m.NotificationLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "vnfm_notification_delivery_seconds", Help: "Time from queueing a notification to its delivery.",
		Buckets: prometheus.ExponentialBuckets(0.005, 4, 12)})
	m.NotificationAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vnfm_notification_attempts_total", Help: "Notification delivery attempts by result."}, []string{"result"})
	reg.MustRegister(m.HTTPRequests, m.HTTPDuration, m.StepDuration, m.NotificationLatency, m.NotificationAttempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if stats != nil {
		reg.MustRegister(&dbCollector{stats: stats, log: log})
	}
	return m
}

// StepFinished implements lcm.Observer.
func (m *Metrics) StepFinished(operation, step, state string, d time.Duration) {
	m.StepDuration.WithLabelValues(operation, step, state).Observe(d.Seconds())
}

// Checkpoint implements lcm.Observer (nothing to count).
func (m *Metrics) Checkpoint(string, string) {}

var (
	descOps = prometheus.NewDesc("vnfm_lcm_op_occs", "LCM operation occurrences by operation and state.",
		[]string{"operation", "state"}, nil)
	descDepth = prometheus.NewDesc("vnfm_lcm_queue_depth", "Runnable operations no engine holds a lease on.", nil, nil)
	descLease = prometheus.NewDesc("vnfm_lcm_oldest_lease_age_seconds", "Age of the oldest running operation claim.", nil, nil)
	descExp   = prometheus.NewDesc("vnfm_lcm_expired_leases", "Running operations whose engine stopped heartbeating (resumed on next claim).", nil, nil)
	descUp    = prometheus.NewDesc("vnfm_database_up", "1 when the last scrape could read the database.", nil, nil)
	descNotif = prometheus.NewDesc("vnfm_notifications", "Undelivered notifications by status (pending, retrying, failed).", []string{"status"}, nil)
)

type dbCollector struct {
	stats StatsFunc
	log   *slog.Logger
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOps, descDepth, descLease, descExp, descUp, descNotif} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.stats(ctx)
	if err != nil {
		if c.log != nil {
			c.log.Warn("metrics: cannot read operation stats", "err", err)
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	for _, o := range st.Ops {
		ch <- prometheus.MustNewConstMetric(descOps, prometheus.GaugeValue, float64(o.Count), o.Operation, o.State)
	}
	ch <- prometheus.MustNewConstMetric(descDepth, prometheus.GaugeValue, float64(st.QueueDepth))
	ch <- prometheus.MustNewConstMetric(descLease, prometheus.GaugeValue, st.OldestLeaseAge.Seconds())
	ch <- prometheus.MustNewConstMetric(descExp, prometheus.GaugeValue, float64(st.ExpiredLeases))
	ch <- prometheus.MustNewConstMetric(descNotif, prometheus.GaugeValue, float64(st.NotificationsPending), "pending")
	ch <- prometheus.MustNewConstMetric(descNotif, prometheus.GaugeValue, float64(st.NotificationsRetrying), "retrying")
	ch <- prometheus.MustNewConstMetric(descNotif, prometheus.GaugeValue, float64(st.NotificationsFailed), "failed")
}
