package caddymodule

import (
	"context"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/mcp"
)

// observer is the server's Observer in Caddy: Prometheus metrics on
// Caddy's registry, OpenTelemetry spans under the one Caddy's tracing
// handler started (when it runs), and the request's A2A fields as Caddy
// variables and access log fields.
//
// Without Caddy's tracing, a traceparent the caller sent still reaches
// the upstream: the upstream calls then continue the caller's trace.
type observer struct{}

// The name of the module's spans' instrumentation scope.
const tracerName = "github.com/caddy-a2a/caddy-a2a"

// propagator writes the trace context into upstream requests, and reads
// the caller's when Caddy's tracing did not: W3C Trace Context and
// Baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// The request's A2A fields are Caddy variables ({http.vars.a2a.method}),
// and the access log writes them as one object, "a2a": {"method": …}.
const (
	varMethod  = "a2a.method"
	varVersion = "a2a.version"
	varSkill   = "a2a.skill"
	varTask    = "a2a.task_id"
	varCaller  = "a2a.caller"
)

// logFields is the a2a object of the access log: what the request's
// variables say when the log is written.
type logFields map[string]any

func (v logFields) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, f := range [...]struct{ name, field string }{
		{varMethod, "method"}, {varVersion, "version"}, {varSkill, "skill"}, {varTask, "task_id"}, {varCaller, "caller"},
	} {
		if s, ok := v[f.name].(string); ok {
			enc.AddString(f.field, s)
		}
	}
	return nil
}

// labelValues are the A2A methods' and versions' labels as values of
// Caddy variables, made once, so that setting them allocates nothing.
var labelValues = func() map[string]any {
	values := map[string]any{server.UnknownMethod: server.UnknownMethod}
	for m := a2a.MethodUnknown + 1; m.Name(a2a.V10) != ""; m++ {
		values[m.Name(a2a.V10)] = m.Name(a2a.V10)
	}
	for _, v := range a2a.Versions {
		values[v.String()] = v.String()
	}
	return values
}()

// labelValue is a label as a Caddy variable's value: made once for A2A's,
// made now for another binding's.
func labelValue(label string) any {
	if v, ok := labelValues[label]; ok {
		return v
	}
	return label
}

// methodSpan marks, in a request's context, the span StartMethod began.
type methodSpan struct{}

func (observer) StartMethod(r *http.Request, c server.Call) context.Context {
	ctx := r.Context()
	method, version := c.MethodLabel(), c.VersionLabel()
	if vars, ok := ctx.Value(caddyhttp.VarsCtxKey).(map[string]any); ok {
		vars[varMethod] = labelValue(method)
		if version != "" { // a call of another protocol speaks no A2A version
			vars[varVersion] = labelValue(version)
		}
		if extra, ok := ctx.Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields); ok {
			extra.Set(zap.Object("a2a", logFields(vars)))
		}
	}

	parent := trace.SpanFromContext(ctx)
	switch {
	case !parent.SpanContext().IsValid():
		// No tracing in Caddy: carry the caller's trace context, if any,
		// to the upstream unchanged.
		if r.Header.Get("Traceparent") == "" {
			return ctx
		}
		return propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	case !parent.IsRecording():
		return ctx // sampled out: the upstream gets the context, no spans are made
	}
	attrs := []attribute.KeyValue{attribute.String("rpc.method", method), attribute.String("a2a.protocol_binding", c.Binding)}
	if version != "" {
		attrs = append(attrs, attribute.String("a2a.protocol_version", version))
	}
	if system := rpcSystem(c.Binding); system != "" {
		attrs = append(attrs, attribute.String("rpc.system", system))
	}
	ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "A2A "+method,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, methodSpan{}, span)
}

func (observer) EndRequest(ctx context.Context, c server.Call) {
	code := c.Code
	countRequest(&c)
	if span, ok := ctx.Value(methodSpan{}).(trace.Span); ok {
		if code < 0 {
			span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", code))
		}
		if code != 0 { // an error answer, or the request's context ended first
			span.SetStatus(codes.Error, codeLabel(code))
		}
		span.End()
	}
}

func (observer) Detach(request, run context.Context) context.Context {
	span := trace.SpanFromContext(request)
	if !span.SpanContext().IsValid() {
		return run
	}
	return trace.ContextWithSpan(run, span)
}

func (observer) TaskEnded(skill string, state a2a.TaskState) { countTaskEnded(skill, state) }

func (observer) TaskRun(skill string, d time.Duration) { countTaskRun(skill, d) }

func (observer) AuthFailure(f *authn.Failure) { countAuthFailure(f) }

func (observer) Annotate(ctx context.Context, skill, taskID string) {
	span, _ := ctx.Value(methodSpan{}).(trace.Span)
	if skill != "" {
		caddyhttp.SetVar(ctx, varSkill, skill)
		if span != nil {
			span.SetAttributes(attribute.String("a2a.skill", skill))
		}
	}
	if taskID != "" {
		caddyhttp.SetVar(ctx, varTask, taskID)
		if span != nil {
			span.SetAttributes(attribute.String("a2a.task_id", taskID))
		}
	}
}

// upstreamTransport counts, times and traces the upstream requests of one
// skill: mapping sends every attempt of the skill's calls through it.
type upstreamTransport struct {
	skill    string
	next     http.RoundTripper
	duration prometheus.Observer // the skill's, resolved once
}

// wrapUpstream is mapping.Options.WrapTransport.
func wrapUpstream(skill string, next http.RoundTripper) http.RoundTripper {
	return &upstreamTransport{skill: skill, next: next, duration: metrics.upstreamDuration.WithLabelValues(skill)}
}

func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var span trace.Span
	if parent := trace.SpanFromContext(req.Context()); parent.SpanContext().IsValid() {
		ctx := req.Context()
		if parent.IsRecording() {
			ctx, span = parent.TracerProvider().Tracer(tracerName).Start(ctx, "upstream "+req.Method,
				trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(attribute.String("a2a.skill", t.skill),
					attribute.String("http.request.method", req.Method),
					attribute.String("server.address", req.URL.Host)))
		}
		// A RoundTripper must not change the request it is given.
		req = req.Clone(ctx)
		propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	t.duration.Observe(time.Since(start).Seconds())
	status := "error"
	if err == nil {
		status = statusLabel(resp.StatusCode)
	}
	metrics.upstreamRequests.WithLabelValues(t.skill, status).Inc()
	if span != nil {
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, "no response")
		default:
			span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
			if resp.StatusCode >= 500 {
				span.SetStatus(codes.Error, status)
			}
		}
		span.End()
	}
	return resp, err
}

// Interface guard
var _ server.Observer = observer{}

// rpcSystem is the span's rpc.system for a binding: grpc and jsonrpc (MCP
// is JSON-RPC too), as
// OpenTelemetry's semantic conventions name them; none for HTTP+JSON,
// which is no RPC system the conventions know (its spans say their
// binding in a2a.protocol_binding, as every span does).
func rpcSystem(binding string) string {
	switch binding {
	case a2a.BindingGRPC:
		return "grpc"
	case a2a.BindingJSONRPC, mcp.Binding:
		return "jsonrpc"
	}
	return ""
}
