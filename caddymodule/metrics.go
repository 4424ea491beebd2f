package caddymodule

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// The module's metrics, on the registry Caddy's metrics endpoints serve
// (the admin API's /metrics and the metrics handler). They are made once
// per process and registered with each config's registry as it loads, so
// counts go on across reloads. Every label value is bounded: see
// docs/observability.md.
var metrics struct {
	once sync.Once
	// requests: binding (server.Call's: JSONRPC, HTTP+JSON, GRPC, MCP),
	// method and version (server.Call's labels: for MCP, its method's name
	// and no version), code
	// ("ok", the JSON-RPC error code, or "canceled" / "deadline_exceeded"
	// when the request's context ended first).
	requests *prometheus.CounterVec
	// tasks: skill, state; taskDuration (of a run): skill.
	tasks        *prometheus.CounterVec
	taskDuration *prometheus.HistogramVec
	// upstreamRequests: skill, status (the HTTP status, or "error");
	// upstreamDuration: skill.
	upstreamRequests *prometheus.CounterVec
	upstreamDuration *prometheus.HistogramVec
	// authFailures: scheme, reason.
	authFailures *prometheus.CounterVec
	// pushDeliveries: outcome.
	pushDeliveries *prometheus.CounterVec
	// stores reports the stored tasks and open streams of every store.
	stores storesCollector
}

const metricsNamespace, metricsSubsystem = "caddy", "a2a"

func initMetrics() {
	metrics.once.Do(func() {
		opts := func(name, help string) prometheus.Opts {
			return prometheus.Opts{Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help}
		}
		histogram := func(name, help string, buckets []float64) prometheus.HistogramOpts {
			return prometheus.HistogramOpts{Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: name, Help: help,
				Buckets: buckets}
		}
		metrics.requests = prometheus.NewCounterVec(prometheus.CounterOpts(opts("requests_total",
			"A2A requests answered, by binding (the MCP endpoint's too), method, protocol version and code (ok, the JSON-RPC error code, or canceled or deadline_exceeded when the request's context ended first).")),
			[]string{"binding", "method", "version", "code"})
		metrics.tasks = prometheus.NewCounterVec(prometheus.CounterOpts(opts("tasks_total",
			"Tasks reaching a terminal or interrupted state, as a run of their skill left them or by CancelTask, by skill and state.")),
			[]string{"skill", "state"})
		metrics.taskDuration = prometheus.NewHistogramVec(histogram("task_duration_seconds",
			"How long a run of a skill took, from the start of the task to its outcome.",
			[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}),
			[]string{"skill"})
		metrics.upstreamRequests = prometheus.NewCounterVec(prometheus.CounterOpts(opts("upstream_requests_total",
			"Upstream HTTP requests (each attempt), by skill and status (the HTTP status, or error when none came).")),
			[]string{"skill", "status"})
		metrics.upstreamDuration = prometheus.NewHistogramVec(histogram("upstream_request_duration_seconds",
			"Time from sending an upstream request to its response headers, by skill.",
			[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}),
			[]string{"skill"})
		metrics.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts(opts("auth_failures_total",
			"Requests refused by authentication or authorization, by scheme (empty when none was presented) and reason.")),
			[]string{"scheme", "reason"})
		metrics.pushDeliveries = prometheus.NewCounterVec(prometheus.CounterOpts(opts("push_deliveries_total",
			"Push notification deliveries, by outcome.")),
			[]string{"outcome"})
		metrics.stores = storesCollector{
			stored: prometheus.NewDesc(prometheus.BuildFQName(metricsNamespace, metricsSubsystem, "stored_tasks"),
				"Tasks in the task stores (with Redis: the replicas' shared count).", nil, nil),
			streams: prometheus.NewDesc(prometheus.BuildFQName(metricsNamespace, metricsSubsystem, "open_streams"),
				"SSE streams open on this instance (SendStreamingMessage and SubscribeToTask).", nil, nil),
		}
	})
}

// registerMetrics makes the metrics and registers them with a config's
// registry. A registry that has them already (several a2a handlers in one
// config) is no error.
func registerMetrics(reg *prometheus.Registry) error {
	initMetrics()
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{metrics.requests, metrics.tasks, metrics.taskDuration,
		metrics.upstreamRequests, metrics.upstreamDuration, metrics.authFailures, metrics.pushDeliveries,
		metrics.stores} {
		if err := reg.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// storesCollector reads the task stores kept across reloads when scraped,
// so the request path pays nothing for these gauges.
type storesCollector struct {
	stored, streams *prometheus.Desc
}

func (c storesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stored
	ch <- c.streams
}

// storeCountTimeout bounds asking a shared store for its count during a
// scrape.
const storeCountTimeout = time.Second

func (c storesCollector) Collect(ch chan<- prometheus.Metric) {
	var stored, streams int
	storedKnown := true
	stores.Range(func(_, v any) bool {
		s := v.(*store)
		streams += s.manager.OpenStreams()
		ctx, cancel := context.WithTimeout(context.Background(), storeCountTimeout)
		n, err := s.manager.Stored(ctx)
		cancel()
		stored += n
		storedKnown = storedKnown && err == nil
		return true
	})
	ch <- prometheus.MustNewConstMetric(c.streams, prometheus.GaugeValue, float64(streams))
	if storedKnown {
		// A store that cannot say (Redis unreachable) leaves the gauge out
		// rather than report a count that is wrong.
		ch <- prometheus.MustNewConstMetric(c.stored, prometheus.GaugeValue, float64(stored))
	}
}

// Label values made once, so that counting allocates nothing.
var (
	stateLabels [a2a.TaskStateAuthRequired + 1]string
	// statusLabels are the HTTP statuses 100 to 599.
	statusLabels [500]string
	codeLabels   = map[int]string{}
)

func init() {
	for s := range stateLabels {
		stateLabels[s] = a2a.TaskState(s).String()
	}
	for i := range statusLabels {
		statusLabels[i] = strconv.Itoa(100 + i)
	}
	for _, code := range []int{a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound,
		a2a.CodeInvalidParams, a2a.CodeInternalError, a2a.CodeTaskNotFound, a2a.CodeTaskNotCancelable,
		a2a.CodePushNotificationNotSupported, a2a.CodeUnsupportedOperation, a2a.CodeContentTypeNotSupported,
		a2a.CodeInvalidAgentResponse, a2a.CodeExtendedAgentCardNotConfigured, a2a.CodeExtensionSupportRequired,
		a2a.CodeVersionNotSupported, a2a.CodeUnauthenticated, a2a.CodeUnauthorized,
		mcp.CodeResourceExhausted, mcp.CodeUnavailable} {
		codeLabels[code] = strconv.Itoa(code)
	}
	codeLabels[0] = "ok"
	codeLabels[server.CodeCanceled] = "canceled"
	codeLabels[server.CodeDeadlineExceeded] = "deadline_exceeded"
}

func stateLabel(s a2a.TaskState) string {
	if int(s) < len(stateLabels) {
		return stateLabels[s]
	}
	return "unknown"
}

// statusLabel is an HTTP status, "other" outside 100-599.
func statusLabel(status int) string {
	if status >= 100 && status < 600 {
		return statusLabels[status-100]
	}
	return "other"
}

// codeLabel is "ok", a protocol error code, or "other".
func codeLabel(code int) string {
	if l, ok := codeLabels[code]; ok {
		return l
	}
	return "other"
}

// What the observer counts.
func countRequest(c *server.Call) {
	metrics.requests.WithLabelValues(c.Binding, c.MethodLabel(), c.VersionLabel(), codeLabel(c.Code)).Inc()
}

func countTaskEnded(skill string, state a2a.TaskState) {
	metrics.tasks.WithLabelValues(skill, stateLabel(state)).Inc()
}

func countTaskRun(skill string, d time.Duration) {
	metrics.taskDuration.WithLabelValues(skill).Observe(d.Seconds())
}

func countAuthFailure(f *authn.Failure) {
	metrics.authFailures.WithLabelValues(f.Scheme, f.Cause).Inc()
}

// countPushDelivery counts a push notification attempt or drop by its
// outcome (push.Outcomes; anything else counts as "other", so that the
// labels stay bounded).
func countPushDelivery(outcome push.Outcome) {
	if slices.Contains(push.Outcomes, outcome) {
		metrics.pushDeliveries.WithLabelValues(string(outcome)).Inc()
		return
	}
	metrics.pushDeliveries.WithLabelValues("other").Inc()
}
