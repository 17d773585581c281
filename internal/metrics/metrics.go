package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigilhq/vigil/store"
)

// StateCounter counts rows by state, for the watches gauge.
type StateCounter interface {
	CountByState(ctx context.Context) (map[store.State]int, error)
}

// pluginCallBuckets are vigil_plugin_call_seconds' buckets, in seconds:
// from a timer's tens of microseconds up to the longest observe call a
// registry allows (a kind's timeout is at most 2 minutes; with an exec
// grant and no timeout, the grant's longest command, at most 2 minutes,
// plus the default observe timeout), so a timeout lands in a bucket of
// its own instead of +Inf.
func pluginCallBuckets() []float64 {
	return []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1, 2.5, 5, 10, 30, 60, 120, 180}
}

// lagBuckets are vigil_probe_lag_seconds' buckets, in seconds: on time is
// under a millisecond, the goal is under 100 ms, and a backlog shows in
// seconds to minutes.
func lagBuckets() []float64 {
	return []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
}

// Metrics holds the registry and the instruments.
type Metrics struct {
	reg         *prometheus.Registry
	views       *prometheus.Registry // the in-memory instruments the API's overview reads
	pluginCalls *prometheus.HistogramVec
	faults      *prometheus.CounterVec
	probes      *prometheus.CounterVec
	lag         *prometheus.HistogramVec
	ready       prometheus.Gauge
	deliveries  *prometheus.CounterVec
	pushes      *prometheus.CounterVec
	fetches     *prometheus.CounterVec
	notHeld     prometheus.Counter
	observed    *prometheus.CounterVec
	routed      *prometheus.CounterVec
	refusals    *prometheus.CounterVec
	hooks       *prometheus.CounterVec
}

// Disk is a store that measures its data directory's free space
// (store.Store); the metrics then carry it.
type Disk interface {
	DiskSpace() (store.DiskSpace, bool)
}

// New builds the registry. states, when set, backs vigil_watches; when it
// is also a Disk, it backs the vigil_store_*_bytes gauges and
// vigil_store_read_only.
func New(states StateCounter) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		pluginCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_plugin_call_seconds",
			Help:    "Latency of plugin calls (observe is the probe latency), by kind, export and outcome.",
			Buckets: pluginCallBuckets(),
		}, []string{"kind", "export", "outcome"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_plugin_faults_total",
			Help: "Plugin calls that produced no usable answer, by kind, export and reason (timeout, trap, memory, output_too_large, bad_output, raised).",
		}, []string{"kind", "export", "reason"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_probes_total",
			Help: "Probes of due watches, by kind and result (pending, settled, changed, expired, unwatchable, fault, error).",
		}, []string{"kind", "result"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_probe_lag_seconds",
			Help:    "How late each probe started after its due time, by kind.",
			Buckets: lagBuckets(),
		}, []string{"kind"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_ready_queue_depth",
			Help: "Due watches waiting in the ready queue for a probe worker.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_deliveries_total",
			Help: "Messages delivered, by receipt (delivered: in the mailbox; rejected: the recipient was not running) and channel (mailbox).",
		}, []string{"receipt", "channel"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_webhook_pushes_total",
			Help: "Webhook pushes entering each state: pending (written with its message), sending (an attempt started), retrying, delivered, failed, unknown (a request went out and no answer came; never re-sent).",
		}, []string{"state"}),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_fetches_total",
			Help: "Fetches plugins asked for, by kind and outcome (ok or the failure reason).",
		}, []string{"kind", "outcome"}),
		notHeld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_fetch_not_held_total",
			Help: "Origin results the fetch issuer did not hold because its cache was full of fresh ones (none is dropped to make room): the next read of each goes to the origin.",
		}),
		observed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_observed_records_total",
			Help: "Records of observed items, by outcome (recorded, duplicate, once_conflict, not_a_reporter, rate_limited, invalid_field, unknown_scope).",
		}, []string{"outcome"}),
		routed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_observed_routed_total",
			Help: "Observed items routed, by action (created, appended, skipped, dropped).",
		}, []string{"action"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_api_refusals_total",
			Help: "API requests authorization refused, by route (GET /api/v1/watches/:id) and code (unauthorized, forbidden, not_a_reporter, and not_found for an id the principal may not see).",
		}, []string{"route", "code"}),
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_hook_events_total",
			Help: "Inbound hook requests and events, by source and outcome (accepted, unverified, replayed, invalid, busy; then woken, fault, no_keys).",
		}, []string{"source", "outcome"}),
	}
	m.reg.MustRegister(m.pluginCalls, m.faults, m.probes, m.lag, m.ready, m.deliveries, m.pushes, m.fetches, m.notHeld, m.observed, m.routed, m.refusals, m.hooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.views = prometheus.NewRegistry()
	m.views.MustRegister(m.pluginCalls, m.faults, m.probes, m.lag, m.ready, m.pushes)
	if states != nil {
		m.reg.MustRegister(&watchCollector{states: states, desc: prometheus.NewDesc(
			"vigil_watches", "Watches in the store, by state.", []string{"state"}, nil)})
	}
	if d, ok := states.(Disk); ok {
		m.reg.MustRegister(newDiskCollector(d))
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// PluginCall implements plugin.Metrics.
func (m *Metrics) PluginCall(kind, export, outcome string, d time.Duration) {
	m.pluginCalls.WithLabelValues(kind, export, outcome).Observe(d.Seconds())
	if outcome != "ok" {
		m.faults.WithLabelValues(kind, export, outcome).Inc()
	}
}

// Fetch implements plugin.Metrics.
func (m *Metrics) Fetch(kind, outcome string) { m.fetches.WithLabelValues(kind, outcome).Inc() }

// FetchNotHeld implements fetch.Metrics.
func (m *Metrics) FetchNotHeld() { m.notHeld.Inc() }

// Record implements observe.Metrics.
func (m *Metrics) Record(outcome string) { m.observed.WithLabelValues(outcome).Inc() }

// Route implements observe.Metrics.
func (m *Metrics) Route(action string) { m.routed.WithLabelValues(action).Inc() }

// Refused implements httpapi.Refusals.
func (m *Metrics) Refused(route, code string) { m.refusals.WithLabelValues(route, code).Inc() }

// Hook counts an inbound hook's request or event by source (a configured
// one's name, or "unknown") and outcome (hooks.Receiver).
func (m *Metrics) Hook(source, outcome string) { m.hooks.WithLabelValues(source, outcome).Inc() }

// Probe implements scheduler.Metrics.
func (m *Metrics) Probe(kind, result string) { m.probes.WithLabelValues(kind, result).Inc() }

// Lag implements scheduler.Metrics.
func (m *Metrics) Lag(kind string, d time.Duration) {
	m.lag.WithLabelValues(kind).Observe(max(d, 0).Seconds())
}

// Ready implements scheduler.Metrics.
func (m *Metrics) Ready(depth int) { m.ready.Set(float64(depth)) }

// Delivery implements delivery.Metrics.
func (m *Metrics) Delivery(receipt store.Receipt, channel string) {
	m.deliveries.WithLabelValues(string(receipt), channel).Inc()
}

// Push implements delivery.Metrics.
func (m *Metrics) Push(state store.PushState) { m.pushes.WithLabelValues(string(state)).Inc() }

// watchCollector counts watches by state when scraped: a gauge kept up to
// date by every transition would be one more write per transition.
type watchCollector struct {
	states StateCounter
	desc   *prometheus.Desc
}

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.states.CountByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, s := range store.States() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}

// diskCollector reads the store's disk when scraped: the store measures
// it at most once a second (a tenth of one while writes are refused),
// so a scrape costs no statfs of its own most of the time.
type diskCollector struct {
	disk                          Disk
	free, reserve, needed, refuse *prometheus.Desc
}

func newDiskCollector(d Disk) *diskCollector {
	return &diskCollector{disk: d,
		free:    prometheus.NewDesc("vigil_store_free_bytes", "Free space of the store's data directory's filesystem.", nil, nil),
		reserve: prometheus.NewDesc("vigil_store_reserve_bytes", "What the store may still write on its own with no further write taken (its logs flushed to tables, its compactions, new files' first pages).", nil, nil),
		needed:  prometheus.NewDesc("vigil_store_needed_bytes", "The free space under which writes from clients are refused (507 insufficient_storage): the reserve and a 1 MiB margin.", nil, nil),
		refuse:  prometheus.NewDesc("vigil_store_read_only", "1 while writes from clients are refused for want of space (reads go on; writes resume without a restart once space is freed), else 0.", nil, nil),
	}
}

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.free
	ch <- c.reserve
	ch <- c.needed
	ch <- c.refuse
}

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	sp, ok := c.disk.DiskSpace()
	if !ok {
		return // not measured here (the store logged why)
	}
	ro := 0.0
	if sp.Full {
		ro = 1
	}
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(sp.Free))
	ch <- prometheus.MustNewConstMetric(c.reserve, prometheus.GaugeValue, float64(sp.Reserve))
	ch <- prometheus.MustNewConstMetric(c.needed, prometheus.GaugeValue, float64(sp.Need))
	ch <- prometheus.MustNewConstMetric(c.refuse, prometheus.GaugeValue, ro)
}
