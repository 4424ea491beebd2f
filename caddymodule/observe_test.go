package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// traceparentUpstream answers 200 and reports the traceparent of each
// request it gets.
func traceparentUpstream(t *testing.T) (string, chan string) {
	t.Helper()
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"city":"Paris","temperatureC":17,"conditions":"sunny"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// upstreamCall sends one request of skill through the observer's
// transport, in ctx, as mapping does.
func upstreamCall(t *testing.T, ctx context.Context, skill, url string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/weather/Paris", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wrapUpstream(skill, http.DefaultTransport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get("Traceparent") != "" {
		t.Error("the transport changed the request it was given")
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.Emit()
		}
	}
	return ""
}

// Under a span of Caddy's tracing handler, the method gets a span with
// its skill and task, the run continues it although its context is not
// the request's, and the upstream call gets a client span whose context
// the upstream receives.
func TestTracingSpans(t *testing.T) {
	initMetrics()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	url, got := traceparentUpstream(t)

	ctx, handler := tp.Tracer("caddy").Start(context.Background(), "handler")
	r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(ctx)
	var o observer
	methodCtx := o.StartMethod(r, sendMessageCall)
	o.Annotate(methodCtx, "weather", "task-1")
	upstreamCall(t, o.Detach(methodCtx, context.Background()), "weather", url)
	o.EndRequest(methodCtx, endedWith(sendMessageCall, a2a.CodeTaskNotFound))
	handler.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	method, upstream := spans["A2A SendMessage"], spans["upstream GET"]
	if method == nil || upstream == nil {
		t.Fatalf("spans %v; want A2A SendMessage and upstream GET", spans)
	}
	if method.Parent().SpanID() != handler.SpanContext().SpanID() || upstream.Parent().SpanID() != method.SpanContext().SpanID() {
		t.Errorf("parents: method under %s, upstream under %s; want handler %s, method %s", method.Parent().SpanID(),
			upstream.Parent().SpanID(), handler.SpanContext().SpanID(), method.SpanContext().SpanID())
	}
	for span, want := range map[sdktrace.ReadOnlySpan]map[string]string{
		method:   {"a2a.skill": "weather", "a2a.task_id": "task-1", "rpc.method": "SendMessage", "a2a.protocol_version": "1.0", "rpc.jsonrpc.error_code": "-32001"},
		upstream: {"a2a.skill": "weather", "http.response.status_code": "200"},
	} {
		for k, v := range want {
			if got := attr(span, k); got != v {
				t.Errorf("span %s: %s = %q; want %q", span.Name(), k, got, v)
			}
		}
	}
	want := "00-" + upstream.SpanContext().TraceID().String() + "-" + upstream.SpanContext().SpanID().String() + "-01"
	if tp := <-got; tp != want {
		t.Errorf("the upstream got traceparent %q; want the upstream span's, %q", tp, want)
	}
}

// sendMessageCall is a JSON-RPC SendMessage call in 1.0, as the server tells
// the observer of it.
var sendMessageCall = server.Call{Binding: a2a.BindingJSONRPC, Method: a2a.MethodSendMessage, Version: a2a.V10}

// endedWith is c ended with code.
func endedWith(c server.Call, code int) server.Call {
	c.Code = code
	return c
}

// observedSpan is the span of one request of binding for method m, under
// a span of Caddy's tracing handler, observed from start to its end with
// code.
func observedSpan(t *testing.T, binding string, m a2a.Method, code int) sdktrace.ReadOnlySpan {
	t.Helper()
	return observedCall(t, server.Call{Binding: binding, Method: m, Version: a2a.V10}, code)
}

// observedCall is observedSpan for call c, of any binding.
func observedCall(t *testing.T, c server.Call, code int) sdktrace.ReadOnlySpan {
	t.Helper()
	initMetrics()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, handler := tp.Tracer("caddy").Start(context.Background(), "handler")
	r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(ctx)
	var o observer
	o.EndRequest(o.StartMethod(r, c), endedWith(c, code))
	handler.End()
	return rec.Ended()[0] // the method's, ended before the handler's
}

// Each binding's span says its binding, and rpc.system where
// OpenTelemetry's conventions name one: none for HTTP+JSON.
func TestSpanBinding(t *testing.T) {
	for binding, system := range map[string]string{a2a.BindingJSONRPC: "jsonrpc", a2a.BindingGRPC: "grpc", a2a.BindingHTTPJSON: ""} {
		span := observedSpan(t, binding, a2a.MethodGetTask, 0)
		if got := attr(span, "rpc.system"); got != system {
			t.Errorf("%s: rpc.system %q; want %q", binding, got, system)
		}
		if got := attr(span, "a2a.protocol_binding"); got != binding {
			t.Errorf("%s: a2a.protocol_binding %q", binding, got)
		}
	}
}

// A request whose context ended before it was answered (a client gone,
// a gRPC deadline passed) is counted and traced as ended so, not as ok.
func TestRequestEndedByContext(t *testing.T) {
	for _, tc := range []struct {
		code  int
		label string
	}{{server.CodeCanceled, "canceled"}, {server.CodeDeadlineExceeded, "deadline_exceeded"}} {
		initMetrics()
		counter := metrics.requests.WithLabelValues(a2a.BindingJSONRPC, "SendStreamingMessage", "1.0", tc.label)
		before := counterValue(t, counter)
		span := observedSpan(t, a2a.BindingJSONRPC, a2a.MethodSendStreamingMessage, tc.code)
		if after := counterValue(t, counter); after != before+1 {
			t.Errorf("code %s counted from %v to %v; want one more", tc.label, before, after)
		}
		if st := span.Status(); st.Code != codes.Error || st.Description != tc.label {
			t.Errorf("span %s status %v; want an error %q", span.Name(), st, tc.label)
		}
		if got := attr(span, "rpc.jsonrpc.error_code"); got != "" {
			t.Errorf("span %s has rpc.jsonrpc.error_code %s; want none", span.Name(), got)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Without tracing in Caddy, the caller's trace context reaches the
// upstream as it came, and no span is made.
func TestTracingPassesTheCallersContext(t *testing.T) {
	initMetrics()
	url, got := traceparentUpstream(t)
	const callers = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Traceparent", callers)
	var o observer
	methodCtx := o.StartMethod(r, sendMessageCall)
	if trace.SpanFromContext(methodCtx).IsRecording() {
		t.Error("a span is recorded without Caddy's tracing")
	}
	upstreamCall(t, o.Detach(methodCtx, context.Background()), "weather", url)
	o.EndRequest(methodCtx, sendMessageCall)
	if tp := <-got; tp != callers {
		t.Errorf("the upstream got traceparent %q; want the caller's, %q", tp, callers)
	}

	// And a caller without one sends none.
	plain := httptest.NewRequest(http.MethodPost, "/", nil)
	if ctx := o.StartMethod(plain, sendMessageCall); ctx != plain.Context() {
		t.Error("a context was made for a request without a trace")
	}
	upstreamCall(t, context.Background(), "weather", url)
	if tp := <-got; tp != "" {
		t.Errorf("the upstream got traceparent %q; want none", tp)
	}
}

// The push feature's deliveries are counted by a bounded outcome.
func TestPushDeliveryMetric(t *testing.T) {
	initMetrics()
	value := func(outcome string) float64 {
		var m dto.Metric
		if err := metrics.pushDeliveries.WithLabelValues(outcome).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	delivered, other := value("delivered"), value("other")
	countPushDelivery("delivered")
	countPushDelivery("https://receiver.example/hook") // never a label value
	if value("delivered") != delivered+1 || value("other") != other+1 {
		t.Errorf("delivered %v → %v, other %v → %v; want +1 each", delivered, value("delivered"), other, value("other"))
	}
}

// memoryTransport answers every request 200 with no body.
type memoryTransport struct{}

func (memoryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// BenchmarkObserver is the observer's work for one blocking SendMessage
// without tracing, in a request context as Caddy makes it (its variables
// and extra log fields): the method, the annotation, the run, one upstream
// call and the end of the request. server's BenchmarkSendMessage/1.0-observed
// is the handler's side.
func BenchmarkObserver(b *testing.B) {
	initMetrics()
	rt := wrapUpstream("weather", memoryTransport{})
	upstream := httptest.NewRequest(http.MethodGet, "http://upstream/weather/Paris", nil)
	var o observer
	b.ReportAllocs()
	for range b.N {
		b.StopTimer() // a new request's context is Caddy's cost, not the observer's
		ctx := context.WithValue(context.Background(), caddyhttp.VarsCtxKey, map[string]any{})
		ctx = context.WithValue(ctx, caddyhttp.ExtraLogFieldsCtxKey, new(caddyhttp.ExtraLogFields))
		r := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(ctx)
		b.StartTimer()
		methodCtx := o.StartMethod(r, sendMessageCall)
		o.Annotate(methodCtx, "weather", "0b7c4f0e-8a57-4f57-9d0c-3bb2f1e7c0de")
		o.Detach(methodCtx, context.Background())
		if _, err := rt.RoundTrip(upstream); err != nil {
			b.Fatal(err)
		}
		o.TaskEnded("weather", a2a.TaskStateCompleted)
		o.TaskRun("weather", time.Millisecond)
		o.EndRequest(methodCtx, sendMessageCall)
	}
}
