// Package metrics owns the gateway's Prometheus collectors, in a registry
// of their own (never the global one), and serves them in the Prometheus
// text format.
//
// Every label takes values from a bounded set: servers from the
// configuration, tools from the catalog (the caller passes "unknown" for a
// name it does not know), and the fixed sets of methods, effects,
// decisions, outcomes, confirmation results, failure kinds, reasons and
// sign-in events below (anything else is counted as "other"). docs/metrics.md lists every
// metric.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric's name.
const Namespace = "preflight"

// defaultBuckets are the latency histogram's buckets, in seconds: from a
// millisecond (a call through the gateway to a fast upstream) to five
// minutes (the upstream's default call timeout).
var defaultBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// DefaultBuckets returns the latency histogram's default buckets.
func DefaultBuckets() []float64 { return append([]float64(nil), defaultBuckets...) }

// Options configure [New]. A nil *Options means defaults.
type Options struct {
	// Buckets are the latency histogram's upper bounds, in seconds. Nil
	// means DefaultBuckets().
	Buckets []float64
	// NoRuntime leaves out the Go runtime and process collectors.
	NoRuntime bool
}

// Metrics are the gateway's collectors. Its methods are safe for
// concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	calls         *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	confirmations *prometheus.CounterVec
	redactions    *prometheus.CounterVec
	retries       *prometheus.CounterVec
	giveUps       *prometheus.CounterVec
	dropped       *prometheus.CounterVec
	flows         *prometheus.CounterVec
	signIns       *prometheus.CounterVec
}

// New returns the gateway's collectors, registered in a new registry.
func New(opts *Options) *Metrics {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.Buckets) == 0 {
		o.Buckets = DefaultBuckets()
	}
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "calls_total",
		Help: "Calls (tools/call, prompts/get, resources/read) that ended, by upstream server, method, tool, effect, decision and outcome."},
		[]string{"server", "method", "tool", "effect", "decision", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "call_duration_seconds",
		Help: "Time from a call's arrival to its answer, by upstream server, method, effect and outcome.", Buckets: o.Buckets},
		[]string{"server", "method", "effect", "outcome"})
	m.confirmations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "confirmations_total",
		Help: "Confirmations of calls, by upstream server and result: asked, approved, declined, cancelled, timeout."},
		[]string{"server", "result", "by"})
	m.redactions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "redactions_total",
		Help: "Values redacted from results, by upstream server and kind."},
		[]string{"server", "kind"})
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "retries_total",
		Help: "Calls forwarded again after a transient upstream failure, by upstream server and kind of failure."},
		[]string{"server", "failure"})
	m.giveUps = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "retries_refused_total",
		Help: "Transient upstream failures that ended a call without a further retry, by upstream server and reason."},
		[]string{"server", "reason"})
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "notifications_dropped_total",
		Help: "Progress and log notifications of calls dropped because the client read them slower than the upstream sent them, by upstream server."},
		[]string{"server"})
	m.flows = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "flows_total",
		Help: "Tool calls whose arguments carry a value the client read by another call, by destination upstream server and action: confirm, deny, allow (a rule allowed it), dry-run."},
		[]string{"server", "action"})
	m.signIns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "upstream_signin_events_total",
		Help: "Sign-in events of upstreams the gateway signs in to with OAuth, by upstream server and event: connected, refreshed, refresh_failed, refused, not_connected."},
		[]string{"server", "event"})
	m.reg.MustRegister(m.calls, m.latency, m.confirmations, m.redactions, m.retries, m.giveUps, m.dropped, m.flows, m.signIns)
	if !o.NoRuntime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the metrics in the Prometheus text (or OpenMetrics)
// format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4})
}

// Gatherer returns the registry, to gather in tests or to serve elsewhere.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Call is what [Metrics.Call] records of one call.
type Call struct {
	Server, Method, Tool, Effect, Decision, Outcome string
	// Seconds is the call's latency.
	Seconds float64
}

// Bounded label values; anything else is "other".
var (
	methods   = set("tools/call", "tools/resolve", "prompts/get", "resources/read", "completion/complete", "resources/subscribe", "resources/unsubscribe", "answer")
	effects   = set("read", "write", "delete", "external", "unknown", "none")
	decisions = set("allow", "confirm", "deny", "none")
	outcomes  = set("ok", "tool_error", "input_required", "declined", "cancelled", "timeout", "denied", "quarantined", "undisclosed", "not_connected", "unknown", "error")
	results   = set("asked", "approved", "declined", "cancelled", "timeout")
	confirmBy = set("client", "page", "")
	failures  = set("down", "connection_lost", "exited", "timeout", "http_5xx")
	reasons   = set("not_idempotent", "not_resolved", "attempts", "budget", "deadline")
	signIns   = set("connected", "refreshed", "refresh_failed", "refused", "not_connected")
)

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func bound(allowed map[string]bool, v string) string {
	if allowed[v] {
		return v
	}
	return "other"
}

// Call records one call that ended. Server and Tool must come from the
// configuration and the catalog.
func (m *Metrics) Call(c Call) {
	if m == nil {
		return
	}
	method, effect, outcome := bound(methods, c.Method), bound(effects, c.Effect), bound(outcomes, c.Outcome)
	m.calls.WithLabelValues(c.Server, method, c.Tool, effect, bound(decisions, c.Decision), outcome).Inc()
	m.latency.WithLabelValues(c.Server, method, effect, outcome).Observe(c.Seconds)
}

// Confirmation records a confirmation event of a call of server: result is
// asked, approved, declined, cancelled or timeout; by is "client" or
// "page" for an approval, "" otherwise.
func (m *Metrics) Confirmation(server, result, by string) {
	if m == nil {
		return
	}
	m.confirmations.WithLabelValues(server, bound(results, result), bound(confirmBy, by)).Inc()
}

// Redacted records n values of kind removed from a result of server. Kind
// must come from the redaction rules' fixed set of kinds.
func (m *Metrics) Redacted(server, kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.redactions.WithLabelValues(server, kind).Add(float64(n))
}

// Flow records a call to server that carries a value read elsewhere, and
// what the gateway did: confirm, deny, allow or dry-run.
func (m *Metrics) Flow(server, action string) {
	if m == nil {
		return
	}
	m.flows.WithLabelValues(server, action).Inc()
}

// SignIn records a sign-in event of server (package signin's events):
// connected, refreshed, refresh_failed, refused or not_connected. It has
// no principal label, so that the series stay as few as the servers.
func (m *Metrics) SignIn(server, event string) {
	if m == nil {
		return
	}
	m.signIns.WithLabelValues(server, bound(signIns, event)).Inc()
}

// NotificationsDropped records n notifications of a call of server dropped
// for a client that read them too slowly.
func (m *Metrics) NotificationsDropped(server string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.dropped.WithLabelValues(server).Add(float64(n))
}

// Retried implements pipeline.RetryObserver.
func (m *Metrics) Retried(server, kind string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(server, bound(failures, kind)).Inc()
}

// GaveUp implements pipeline.RetryObserver.
func (m *Metrics) GaveUp(server, reason string) {
	if m == nil {
		return
	}
	m.giveUps.WithLabelValues(server, bound(reasons, reason)).Inc()
}

// Upstream is the health of one upstream at a scrape.
type Upstream struct {
	Name     string
	Up       bool
	Restarts int
	Tools    int
}

// Upstreams registers upstream health gauges read from f at each scrape:
// preflight_upstream_up, preflight_upstream_restarts_total and
// preflight_upstream_tools, by server. Call it once.
func (m *Metrics) Upstreams(f func() []Upstream) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&health{f: f,
		up: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "upstream", "up"),
			"Whether the upstream is connected (1) or not (0).", []string{"server"}, nil),
		restarts: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "upstream", "restarts_total"),
			"Times the upstream was connected again after its connection ended.", []string{"server"}, nil),
		tools: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "upstream", "tools"),
			"Tools the upstream lists.", []string{"server"}, nil),
	})
}

type health struct {
	f                   func() []Upstream
	up, restarts, tools *prometheus.Desc
}

func (h *health) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.up
	ch <- h.restarts
	ch <- h.tools
}

func (h *health) Collect(ch chan<- prometheus.Metric) {
	for _, u := range h.f() {
		up := 0.0
		if u.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(h.up, prometheus.GaugeValue, up, u.Name)
		ch <- prometheus.MustNewConstMetric(h.restarts, prometheus.CounterValue, float64(u.Restarts), u.Name)
		ch <- prometheus.MustNewConstMetric(h.tools, prometheus.GaugeValue, float64(u.Tools), u.Name)
	}
}
