package httpd

import (
	"errors"
	"log/slog"
	"math/bits"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/webstats/webstats/engine"
)

// metrics are the Server's Prometheus metrics. No metric has a per-website
// label (SPEC §5): it would leak one site's traffic to anyone who can read
// /metrics.
type metrics struct {
	requests  *prometheus.CounterVec   // by method, route pattern and status code
	durations *prometheus.HistogramVec // by route pattern
	imports   prometheus.Histogram     // import latency
	refused   *prometheus.CounterVec   // connections refused, by reason
	reg       prometheus.Registerer
	handler   http.Handler // serves /metrics
}

func newMetrics(e *engine.Engine, reg prometheus.Registerer, log *slog.Logger) *metrics {
	var gatherer prometheus.Gatherer = prometheus.DefaultGatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg, gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gatherer = g
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webstats_http_requests_total",
			Help: "HTTP requests served, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "webstats_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
		imports: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "webstats_import_duration_seconds",
			Help:    "Time to serve an import request (read, validate, track), successful or not.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "webstats_http_connections_refused_total",
		Help: "Connections refused at accept, by reason: max_conns (-max-conns) or max_conns_per_ip (-max-conns-per-ip).",
	}, []string{"reason"})
	m.reg = reg
	m.requests = register(reg, m.requests, log)
	m.refused = register(reg, m.refused, log)
	for _, r := range []string{refusedMaxConns, refusedMaxConnsPerIP} {
		m.refused.WithLabelValues(r) // present from the start, at 0
	}
	m.durations = register(reg, m.durations, log)
	m.imports = register(reg, m.imports, log)
	if e != nil {
		register[prometheus.Collector](reg, newEngineCollector(e), log)
	}
	m.handler = promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: nil})
	return m
}

// register registers c with reg. When reg already holds an equal collector
// (a second Server on one registry), that one is used instead.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	log.Warn("metrics not registered", "err", err)
	return c
}

// connGauges registers the gauges of the open connections and of their cap
// (0: none).
func (m *metrics) connGauges(l *connLimiter, maxConns int, log *slog.Logger) {
	register[prometheus.Collector](m.reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "webstats_http_connections_open",
		Help: "Connections open on the listeners of Server.Listener.",
	}, func() float64 { return float64(l.openConns()) }), log)
	register[prometheus.Collector](m.reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "webstats_http_connections_max",
		Help: "The cap on open connections (-max-conns); 0: none.",
	}, func() float64 { return float64(max(maxConns, 0)) }), log)
}

// observe counts one request.
func (m *metrics) observe(method, route string, code int, d time.Duration) {
	m.requests.WithLabelValues(sanitizeMethod(method), route, strconv.Itoa(code)).Inc()
	m.durations.WithLabelValues(route).Observe(d.Seconds())
}

// engineCollector exports engine.Metrics at each scrape.
type engineCollector struct {
	e                                          *engine.Engine
	tracked, dropped, resident, snapDur, snaps *prometheus.Desc
	evicted, websites, state, overflow         *prometheus.Desc
	keyBytes                                   *prometheus.Desc
	realtime                                   *prometheus.Desc
	openSeg                                    *prometheus.Desc
	// cluster mode (engine.Metrics.Cluster)
	applied, pending, lag, pubs, pubTime, pubErrs, regConfl, followErrs *prometheus.Desc
	partsHeld, partsTarget                                              *prometheus.Desc
}

func newEngineCollector(e *engine.Engine) *engineCollector {
	return &engineCollector{
		e:           e,
		tracked:     prometheus.NewDesc("webstats_hits_tracked_total", "Hits counted since the engine opened.", nil, nil),
		dropped:     prometheus.NewDesc("webstats_hits_dropped_total", "Hits dropped since the engine opened, by reason.", []string{"reason"}, nil),
		resident:    prometheus.NewDesc("webstats_resident_bytes", "Bytes of resident day buckets of closed days.", nil, nil),
		snapDur:     prometheus.NewDesc("webstats_snapshot_duration_seconds", "How long the last snapshot took.", nil, nil),
		snaps:       prometheus.NewDesc("webstats_snapshots_total", "Snapshots written since the engine opened.", nil, nil),
		evicted:     prometheus.NewDesc("webstats_evicted_days_total", "Day buckets evicted from memory since the engine opened.", nil, nil),
		websites:    prometheus.NewDesc("webstats_websites", "Websites registered.", nil, nil),
		state:       prometheus.NewDesc("webstats_visitor_state_bytes", "Bytes of resident visitor state (salt periods).", nil, nil),
		keyBytes:    prometheus.NewDesc("webstats_key_bytes", "Bytes of the import idempotency keys held (counted in the memory budget).", nil, nil),
		realtime:    prometheus.NewDesc("webstats_realtime_bytes", "Bytes of the realtime visitor slots (counted in -memory-budget).", nil, nil),
		overflow:    prometheus.NewDesc("webstats_values_overflow_total", "Values counted as \"(other)\" because a day held -max-values distinct values of a dimension.", nil, nil),
		openSeg:     prometheus.NewDesc("webstats_segments_open_bytes", "Bytes of the segments rows of open days (a row per hit and per visit of today).", nil, nil),
		partsHeld:   prometheus.NewDesc("webstats_cluster_partitions_held", "Cluster mode with -partitions: partitions whose websites this node holds.", nil, nil),
		partsTarget: prometheus.NewDesc("webstats_cluster_partitions_target", "Cluster mode with -partitions: partitions this node should hold (it moves towards them).", nil, nil),
		applied:     prometheus.NewDesc("webstats_cluster_applied_sequence", "Cluster mode: sequence of the last message of the shared log this node applied.", nil, nil),
		pending:     prometheus.NewDesc("webstats_cluster_pending_messages", "Cluster mode: messages of the shared log after the last one applied, as its follower last learnt.", nil, nil),
		lag:         prometheus.NewDesc("webstats_cluster_lag_seconds", "Cluster mode: how long the last message applied waited in the shared log, when more were pending (0 when caught up).", nil, nil),
		pubs:        prometheus.NewDesc("webstats_cluster_publishes_total", "Cluster mode: messages this node published to the shared log.", nil, nil),
		pubTime:     prometheus.NewDesc("webstats_cluster_publish_seconds_total", "Cluster mode: time the publishes took to be acknowledged, in all (divided by webstats_cluster_publishes_total: the mean).", nil, nil),
		pubErrs:     prometheus.NewDesc("webstats_cluster_publish_errors_total", "Cluster mode: publishes that failed (the request was answered 503).", nil, nil),
		regConfl:    prometheus.NewDesc("webstats_cluster_registry_conflicts_total", "Cluster mode: registry changes of this node another node's came before (each was run again).", nil, nil),
		followErrs:  prometheus.NewDesc("webstats_cluster_follow_errors_total", "Cluster mode: times the follower of the shared log stopped on an error (it starts again, backing off while it makes no progress; /healthz says why).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tracked, c.dropped, c.resident, c.snapDur, c.snaps, c.evicted, c.websites, c.state, c.keyBytes, c.realtime, c.overflow, c.openSeg,
		c.applied, c.pending, c.lag, c.pubs, c.pubTime, c.pubErrs, c.regConfl, c.followErrs, c.partsHeld, c.partsTarget} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.e.Metrics()
	ch <- prometheus.MustNewConstMetric(c.tracked, prometheus.CounterValue, float64(m.Tracked))
	for _, r := range engine.DropReasons() {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(m.Dropped[r]), r.String())
	}
	ch <- prometheus.MustNewConstMetric(c.resident, prometheus.GaugeValue, float64(m.ResidentBytes))
	ch <- prometheus.MustNewConstMetric(c.snapDur, prometheus.GaugeValue, m.LastSnapshot.Seconds())
	ch <- prometheus.MustNewConstMetric(c.snaps, prometheus.CounterValue, float64(m.Snapshots))
	ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(m.Evicted))
	ch <- prometheus.MustNewConstMetric(c.websites, prometheus.GaugeValue, float64(m.Websites))
	ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(m.StateBytes))
	ch <- prometheus.MustNewConstMetric(c.keyBytes, prometheus.GaugeValue, float64(m.KeyBytes))
	ch <- prometheus.MustNewConstMetric(c.realtime, prometheus.GaugeValue, float64(m.RealtimeBytes))
	ch <- prometheus.MustNewConstMetric(c.overflow, prometheus.CounterValue, float64(m.Overflow))
	ch <- prometheus.MustNewConstMetric(c.openSeg, prometheus.GaugeValue, float64(m.OpenSegmentBytes))
	if cm := m.Cluster; cm != nil {
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(cm.Applied))
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(cm.Pending))
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, cm.Lag.Seconds())
		ch <- prometheus.MustNewConstMetric(c.pubs, prometheus.CounterValue, float64(cm.Publishes))
		ch <- prometheus.MustNewConstMetric(c.pubTime, prometheus.CounterValue, cm.PublishTime.Seconds())
		ch <- prometheus.MustNewConstMetric(c.pubErrs, prometheus.CounterValue, float64(cm.PublishErrors))
		ch <- prometheus.MustNewConstMetric(c.regConfl, prometheus.CounterValue, float64(cm.RegistryConflicts))
		ch <- prometheus.MustNewConstMetric(c.followErrs, prometheus.CounterValue, float64(cm.FollowErrors))
		if cm.Partitions > 0 {
			ch <- prometheus.MustNewConstMetric(c.partsHeld, prometheus.GaugeValue, float64(bits.OnesCount64(cm.Held)))
			ch <- prometheus.MustNewConstMetric(c.partsTarget, prometheus.GaugeValue, float64(bits.OnesCount64(cm.Target)))
		}
	}
}
