package server

// The gRPC binding (spec 1.0 §10) is served by grpc-go's Server.ServeHTTP
// on the same net/http server, port and Handler as JSON-RPC: Caddy hands
// the handler HTTP/2 requests over TLS, or over cleartext with
// `protocols h1 h2 h2c`, and a request whose Content-Type is
// application/grpc goes to the gRPC server. grpc-go rather than
// connect-go: it is already in Caddy's build graph (OpenTelemetry's
// exporters), so it adds no module; the official Go SDK's gRPC transport
// is built on it; and its ServeHTTP needs nothing of the
// listener, so TLS, h2c and the connection's limits stay Caddy's. What
// ServeHTTP lacks is speed: grpcnative.go serves the same A2AService on a
// listener of its own, by grpc-go's own transport, with keepalive pings
// and the health service.

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
	"github.com/caddy-a2a/caddy-a2a/authn"
)

// grpcMethodPrefix starts the path of every A2AService method.
var grpcMethodPrefix = "/" + a2apb.A2AService_ServiceDesc.ServiceName + "/"

// isGRPC reports whether r is a gRPC call: HTTP/2 with a gRPC content type
// (application/grpc, or with a +codec or parameters; not gRPC-Web).
func isGRPC(r *http.Request) bool {
	if r.ProtoMajor != 2 {
		return false
	}
	rest, ok := strings.CutPrefix(r.Header.Get("Content-Type"), "application/grpc")
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// grpcBinding serves the A2AService by grpc-go's Server.ServeHTTP.
type grpcBinding struct {
	noLifecycle
	h      *Handler
	server *grpc.Server
}

// GRPC serves the gRPC binding beside JSON-RPC: HTTP/2 requests with a
// gRPC content type go to the A2AService.
func GRPC() NewBinding {
	return func(h *Handler) (Binding, error) {
		svc, err := newGRPCService(h)
		if err != nil {
			return nil, err
		}
		// Requests are capped like JSON-RPC bodies; answers are the agent's
		// own, bounded by the task store's limits.
		b := &grpcBinding{h: h, server: grpc.NewServer(grpc.MaxRecvMsgSize(int(h.maxBody)))}
		a2apb.RegisterA2AServiceServer(b.server, svc)
		return b, nil
	}
}

// newGRPCService makes h's A2AService, for either gRPC transport. The
// extended card's proto form is made here, once.
func newGRPCService(h *Handler) (*grpcService, error) {
	svc := &grpcService{h: h}
	if h.extendedCard != nil {
		svc.extendedCard = new(a2apb.AgentCard)
		if err := pbconv.DecodeJSON(svc.extendedCard, h.extendedCard.JSON()); err != nil {
			return nil, fmt.Errorf("server: the extended card for gRPC: %w", err)
		}
	}
	return svc, nil
}

// grpcCall is what the methods of one gRPC call know of its request,
// carried in its context.
type grpcCall struct {
	r *http.Request
	// c is the call, whose end the method records.
	c *Exchange

	// grpc-go runs the service's method in a goroutine of its own, and
	// its ServeHTTP returns as soon as the call's context ends, maybe
	// before the method does: serveGRPC waits (close) for a method that
	// entered, so that the request is observed as it ended, and one that
	// enters later finds the call over.
	mu      sync.Mutex
	over    bool
	entered bool
	methods sync.WaitGroup
	// ended is the error of the call's context when the method gave up on
	// the call because it ended (see grpcService.end).
	ended error
}

// enter is called by the method that serves the call as it starts; false:
// the call is over, and the method must not touch it.
func (c *grpcCall) enter() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.over {
		c.methods.Add(1)
		c.entered = true
	}
	return !c.over
}

// leave is called by a method that entered c once its answer is given.
func (c *grpcCall) leave() {
	if c != nil {
		c.methods.Done()
	}
}

// close ends the call, once grpc-go is done with it, after the method
// that entered it.
func (c *grpcCall) close() (entered bool) {
	c.mu.Lock()
	c.over = true
	entered = c.entered
	c.mu.Unlock()
	c.methods.Wait()
	return entered
}

type grpcCallKey struct{}

// serve serves a gRPC call, in 1.0 (the service is 1.0's). As for
// JSON-RPC, the version and the caller are settled before the request
// message is read: an unauthenticated caller costs a header lookup.
func (b *grpcBinding) Serve(w http.ResponseWriter, r *http.Request, c *Exchange) bool {
	if !isGRPC(r) {
		return false
	}
	h := b.h
	c.begin(a2a.BindingGRPC, a2a.V10, nil, "")
	m := a2a.MethodUnknown
	if name, ok := strings.CutPrefix(r.URL.Path, grpcMethodPrefix); ok {
		m = a2a.LookupMethod(a2a.V10, name)
	}
	if e := h.admitGRPC(r, c, w.Header); e != nil {
		writeGRPCStatus(w, pbconv.Status(e))
		return true
	}
	// As for JSON-RPC, a call refused before its method is served is
	// observed as MethodUnknown.
	if m != a2a.MethodUnknown {
		r = h.startMethod(r, c, m)
	}
	call := &grpcCall{r: r, c: c}
	rc := http.NewResponseController(w)
	h.setDeadline(rc.SetReadDeadline, h.readBody)
	gw := &grpcWriter{ResponseWriter: w, h: h, rc: rc}
	b.server.ServeHTTP(gw, r.WithContext(context.WithValue(r.Context(), grpcCallKey{}, call)))
	if !call.close() && call.ended == nil {
		// grpc-go ended the call without the method: the status it wrote,
		// or else the end of the request's context.
		switch st := gw.Header().Get("Grpc-Status"); st {
		case "":
			if err := r.Context().Err(); err != nil {
				call.ended = err
				c.EndedBy(err)
			}
		case strconv.Itoa(CodeCanceled), strconv.Itoa(CodeDeadlineExceeded):
			c.Code, _ = strconv.Atoi(st)
		}
	}
	if call.ended != nil {
		gw.endWith(status.FromContextError(call.ended))
	}
	return true
}

// admitGRPC settles the version and the caller of gRPC call c, on either
// transport, before its message is read: an unauthenticated caller costs a
// header lookup. A call it refuses ends with the error it returns, whose
// challenges it adds to challenges() (headers, or metadata to come).
func (h *Handler) admitGRPC(r *http.Request, c *Exchange, challenges func() http.Header) *a2a.Error {
	e := grpcVersion(r.Header.Get(a2a.VersionParameter))
	if e == nil {
		caller, f := h.authenticate(r)
		if f != nil {
			e = h.refusal(challenges(), f)
		}
		c.Caller = caller
	}
	if e != nil {
		c.Code = e.Code
	}
	return e
}

// grpcVersion checks the A2A-Version of a gRPC call. The service is 1.0's
// (0.3's gRPC service has another name and other messages), so a call
// without one is 1.0, and one that names 0.3 is refused.
func grpcVersion(s string) *a2a.Error {
	if s == "" {
		return nil
	}
	if v, e := a2a.ParseVersion(s); e == nil && v == a2a.V10 {
		return nil
	}
	e := a2a.VersionNotSupported(s)
	e.Metadata["supported"] = a2a.V10.String()
	e.Description = "A2A-Version " + strconv.Quote(s) + " is not supported by the gRPC binding, which speaks 1.0 (" +
		a2apb.A2AService_ServiceDesc.ServiceName + "); 0.3 clients can use JSON-RPC"
	return e
}

// writeGRPCStatus answers a call with st alone (a Trailers-Only response).
func writeGRPCStatus(w http.ResponseWriter, st *status.Status) {
	w.Header().Set("Content-Type", "application/grpc")
	setGRPCStatus(w.Header(), st)
	w.WriteHeader(http.StatusOK)
}

// setGRPCStatus sets the status fields of a gRPC answer: headers of a
// Trailers-Only one, or the trailers its headers declared.
func setGRPCStatus(hdr http.Header, st *status.Status) {
	hdr.Set("Grpc-Status", strconv.Itoa(int(st.Code())))
	hdr.Set("Grpc-Message", grpcPercentEncode(st.Message()))
	if p := st.Proto(); len(p.Details) > 0 {
		if b, err := proto.Marshal(p); err == nil {
			hdr.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(b))
		}
	}
}

// grpcPercentEncode encodes a grpc-message value as the gRPC HTTP/2
// protocol asks: printable ASCII except '%' as is, every other byte as %XX.
func grpcPercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c <= '~' && c != '%' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// grpcWriter bounds every write of a gRPC answer by the write timeout, as
// JSON-RPC's: a client that stops reading is dropped. The deadline is
// cleared after each write, because on HTTP/2 it would otherwise end a
// stream that is merely idle.
type grpcWriter struct {
	http.ResponseWriter
	h       *Handler
	rc      *http.ResponseController
	started bool // the answer's headers are out
}

func (w *grpcWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

// endWith gives a call whose context ended its status st, once grpc-go's
// ServeHTTP has returned: it gives up on such a call at once and writes no
// status, yet a client still there (its own copy of the deadline passed
// first) and the access log should read how the call ended.
func (w *grpcWriter) endWith(st *status.Status) {
	switch {
	case w.Header().Get("Grpc-Status") != "": // grpc-go wrote the method's status after all
	case w.started:
		setGRPCStatus(w.Header(), st) // grpc-go declared these trailers
	default:
		writeGRPCStatus(w.ResponseWriter, st)
	}
}

func (w *grpcWriter) Write(b []byte) (n int, err error) {
	w.started = true
	err = w.h.withWriteDeadline(w.rc, func() error {
		n, err = w.ResponseWriter.Write(b)
		return err
	})
	return n, err
}

func (w *grpcWriter) Flush() { _ = w.h.withWriteDeadline(w.rc, w.rc.Flush) }

func (w *grpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// grpcService is the A2AService on the Handler's engine.
type grpcService struct {
	a2apb.UnimplementedA2AServiceServer
	h            *Handler
	extendedCard *a2apb.AgentCard
}

// run decodes in as a request of method m and runs it on the engine
// (invoke), as JSON-RPC and HTTP+JSON do, under the method's context (a
// client's deadline, grpc-timeout, is there). The call it returns (nil:
// none, or one that is over) is entered: the method leaves it once it has
// answered.
func (s *grpcService) run(ctx context.Context, m a2a.Method, in proto.Message) (*grpcCall, outcome) {
	call, _ := ctx.Value(grpcCallKey{}).(*grpcCall)
	switch {
	case call == nil:
		return nil, failed(errors.New("the call did not come through the A2A handler"))
	case !call.enter():
		return nil, outcome{ended: cmp.Or(ctx.Err(), context.Canceled)}
	}
	req, e := pbconv.DecodeRequest(m, in)
	if e != nil {
		return call, failed(e)
	}
	return call, s.h.invoke(call.r.WithContext(ctx), call.c, req)
}

// end turns an outcome that is no result into the call's status: the end
// of its context (CANCELLED or DEADLINE_EXCEEDED, see endedByDeadline), or
// an error (see fail).
func (s *grpcService) end(ctx context.Context, call *grpcCall, m a2a.Method, out outcome) error {
	if out.ended != nil {
		ended := out.ended
		if endedByDeadline(ctx, ended) {
			ended = context.DeadlineExceeded
		}
		if call != nil {
			call.ended = ended
			call.c.EndedBy(ended)
		}
		return status.FromContextError(ended).Err()
	}
	return s.fail(ctx, call, m, out.err)
}

// deadlineSlack is how close to its deadline a call may be canceled and
// still count as ended by it. A gRPC client resets a call at its deadline
// with the code a cancel has, and the reset can reach the agent before the
// agent's copy of the deadline (grpc-timeout, counted from when the call's
// headers arrived) passes, by about the time those headers took to come.
const deadlineSlack = time.Second

// endedByDeadline reports whether a call whose context ctx ended with err
// was ended by its deadline: err says so, or it was canceled less than
// deadlineSlack before the deadline.
func endedByDeadline(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && errors.Is(err, context.Canceled) && time.Until(deadline) < deadlineSlack
}

// fail turns an error of the engine into the call's gRPC status: a refusal
// of authn with its challenges, a protocol error with its details, any
// other error as internal (see protocolError).
func (s *grpcService) fail(ctx context.Context, call *grpcCall, m a2a.Method, err error) error {
	var f *authn.Failure
	var e *a2a.Error
	if errors.As(err, &f) {
		hdr := make(http.Header)
		e = s.h.refusal(hdr, f)
		if c := hdr.Values("WWW-Authenticate"); len(c) > 0 {
			_ = grpc.SetHeader(ctx, metadata.MD{"www-authenticate": c})
		}
	} else {
		e = s.h.protocolError(m, err)
	}
	if call != nil {
		call.c.Code = e.Code
	}
	return pbconv.Status(e).Err()
}

// unary runs a unary method m and converts its result, an R, to its
// answer.
func unary[R any, T proto.Message](s *grpcService, ctx context.Context, m a2a.Method, in proto.Message, convert func(R) (T, error)) (T, error) {
	var none T
	call, out := s.run(ctx, m, in)
	defer call.leave()
	if out.err != nil || out.ended != nil {
		return none, s.end(ctx, call, m, out)
	}
	answer, err := convert(out.result.(R))
	if err != nil {
		return none, s.fail(ctx, call, m, err)
	}
	return answer, nil
}

// streaming runs a streaming method m and sends its events (see
// Handler.relay); the error that ends the stream, if any, is the call's
// status: CANCELLED or DEADLINE_EXCEEDED when the call's context ended.
func (s *grpcService) streaming(m a2a.Method, in proto.Message, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	ctx := stream.Context()
	call, out := s.run(ctx, m, in)
	defer call.leave()
	if out.err != nil || out.ended != nil {
		return s.end(ctx, call, m, out)
	}
	sink := &grpcSink{s: s, call: call, m: m, stream: stream}
	if err := s.h.relay(ctx, sink, out.first, out.sub); err != nil {
		return s.end(ctx, call, m, outcome{ended: err})
	}
	return sink.end
}

func (s *grpcService) SendMessage(ctx context.Context, in *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	return unary(s, ctx, a2a.MethodSendMessage, in, pbconv.SendMessageResponse)
}

func (s *grpcService) SendStreamingMessage(in *a2apb.SendMessageRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.streaming(a2a.MethodSendStreamingMessage, in, stream)
}

func (s *grpcService) GetTask(ctx context.Context, in *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	return unary(s, ctx, a2a.MethodGetTask, in, pbconv.Task)
}

func (s *grpcService) ListTasks(ctx context.Context, in *a2apb.ListTasksRequest) (*a2apb.ListTasksResponse, error) {
	return unary(s, ctx, a2a.MethodListTasks, in, pbconv.ListTasksResponse)
}

func (s *grpcService) CancelTask(ctx context.Context, in *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	return unary(s, ctx, a2a.MethodCancelTask, in, pbconv.Task)
}

func (s *grpcService) SubscribeToTask(in *a2apb.SubscribeToTaskRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return s.streaming(a2a.MethodSubscribeToTask, in, stream)
}

func (s *grpcService) CreateTaskPushNotificationConfig(ctx context.Context, in *a2apb.TaskPushNotificationConfig) (*a2apb.TaskPushNotificationConfig, error) {
	return unary(s, ctx, a2a.MethodCreatePushConfig, in, infallible(pbconv.PushConfig))
}

func (s *grpcService) GetTaskPushNotificationConfig(ctx context.Context, in *a2apb.GetTaskPushNotificationConfigRequest) (*a2apb.TaskPushNotificationConfig, error) {
	return unary(s, ctx, a2a.MethodGetPushConfig, in, infallible(pbconv.PushConfig))
}

func (s *grpcService) ListTaskPushNotificationConfigs(ctx context.Context, in *a2apb.ListTaskPushNotificationConfigsRequest) (*a2apb.ListTaskPushNotificationConfigsResponse, error) {
	return unary(s, ctx, a2a.MethodListPushConfigs, in, infallible(pbconv.PushConfigs))
}

func (s *grpcService) DeleteTaskPushNotificationConfig(ctx context.Context, in *a2apb.DeleteTaskPushNotificationConfigRequest) (*emptypb.Empty, error) {
	return unary(s, ctx, a2a.MethodDeletePushConfig, in, infallible(func(*a2a.Empty) *emptypb.Empty { return new(emptypb.Empty) }))
}

// infallible makes a conversion that cannot fail one unary takes.
func infallible[R, T any](convert func(R) T) func(R) (T, error) {
	return func(r R) (T, error) { return convert(r), nil }
}

// GetExtendedAgentCard answers the card in its proto form, made once by
// newGRPC, when the engine lets the caller have it.
func (s *grpcService) GetExtendedAgentCard(ctx context.Context, in *a2apb.GetExtendedAgentCardRequest) (*a2apb.AgentCard, error) {
	return unary(s, ctx, a2a.MethodGetExtendedAgentCard, in, infallible(func(any) *a2apb.AgentCard { return s.extendedCard }))
}

// grpcSink writes a stream's events as gRPC messages. The HTTP/2 stream
// carries gRPC's own framing, so there is nothing to flush and no
// heartbeat to send: gRPC clients keep connections alive with pings.
type grpcSink struct {
	s      *grpcService
	call   *grpcCall
	m      a2a.Method
	stream grpc.ServerStreamingServer[a2apb.StreamResponse]
	end    error // the status the stream ends with
}

func (k *grpcSink) put(ev *a2a.StreamResponse) error {
	msg, err := pbconv.StreamResponse(ev)
	if err != nil {
		k.end = k.s.fail(k.stream.Context(), k.call, k.m, fmt.Errorf("encoding a stream event: %w", err))
		return err
	}
	return k.stream.Send(msg)
}

func (k *grpcSink) event(ev *a2a.StreamResponse) error { return k.put(ev) }
func (k *grpcSink) flush() error                       { return nil }
func (k *grpcSink) heartbeat() error                   { return nil }

func (k *grpcSink) error(e *a2a.Error) error {
	k.end = k.s.fail(k.stream.Context(), k.call, k.m, e)
	return nil
}

var _ a2apb.A2AServiceServer = (*grpcService)(nil)
