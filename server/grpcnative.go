package server

// The gRPC binding on a listener of its own: grpc-go's own HTTP/2
// transport, cheaper per call than its ServeHTTP behind net/http
// (grpc.go), for the operators who choose gRPC for speed.
// The calls run on the same engine as on Caddy's port: the same admission
// (version, then authentication from the metadata and the connection's TLS
// state, before the message is read), the same dispatch (invoke), limits
// and observer, with the same A2AService methods (grpcService).
//
// What grpc-go does not bound, a call here bounds itself: grpc-go reads a
// unary method's message before any handler runs, and neither that read
// nor a write to a client that stops reading has a deadline. So every
// A2AService method is registered as a stream handler, which authenticates
// the caller first, then runs the method on a goroutine of its own whose
// reads and writes it times: read_body_timeout for the message,
// write_timeout for each answer or event (see grpcStream.supervise).

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/a2a/pbconv"
	"github.com/caddy-a2a/caddy-a2a/confval"
)

// Defaults for the zero values of GRPCServerOptions.
const (
	// DefaultKeepaliveTime: a connection with nothing received for this
	// long is pinged, so that idle streams outlive the idle timeouts of
	// NATs and load balancers (rarely under a minute), and a client that
	// vanished is found.
	DefaultKeepaliveTime = 30 * time.Second
	// DefaultKeepaliveTimeout: a ping not answered within this closes
	// the connection, and ends its calls.
	DefaultKeepaliveTimeout = 20 * time.Second
	// DefaultKeepaliveMinTime: clients may ping this often (gRPC's
	// keepalive design, A8, asks clients for no less than 10s); a client
	// that pings more often is sent GOAWAY.
	DefaultKeepaliveMinTime = 10 * time.Second
	// DefaultMaxConcurrentStreams bounds the calls open at once on one
	// connection, as Go's HTTP/2 server (Caddy's) does.
	DefaultMaxConcurrentStreams = 250
)

// grpcMaxHeaderListBytes bounds the header list (the metadata, as HTTP/2
// counts it) of a call on the listener, as Caddy's HTTP servers bound a
// request's headers by default (max_header_size): grpc-go's own bound is
// 16 MiB. A call over it is reset before it begins.
const grpcMaxHeaderListBytes = 16 << 10

// healthWatchInterval is how often a health Watch asks the agent again.
const healthWatchInterval = time.Second

// GRPCServerOptions are what a GRPCServer keeps for its life: grpc-go fixes
// them when it makes the server. Zero values take the defaults. Its JSON
// is the adapter's, in the grpc block.
type GRPCServerOptions struct {
	// MaxRequestBytes caps a request message (default
	// DefaultMaxRequestBytes); a larger one is RESOURCE_EXHAUSTED. The
	// adapter gives its max_request_body.
	MaxRequestBytes int64 `json:"-"`

	// KeepaliveTime: a connection on which nothing arrived for this long
	// is pinged, so that idle streams outlive the idle timeouts of NATs and
	// load balancers, and a client that vanished is found. Default: 30s.
	KeepaliveTime confval.Duration `json:"keepalive_time,omitempty"`

	// KeepaliveTimeout: a ping not answered within this closes its
	// connection and ends its calls. Default: 20s.
	KeepaliveTimeout confval.Duration `json:"keepalive_timeout,omitempty"`

	// KeepaliveMinTime is how often clients may ping, with or without a
	// call open; a client that pings more often is sent GOAWAY
	// (too_many_pings). Default: 10s.
	KeepaliveMinTime confval.Duration `json:"keepalive_min_time,omitempty"`

	// MaxConcurrentStreams bounds the calls open at once on one
	// connection. Default: 250.
	MaxConcurrentStreams int `json:"max_concurrent_streams,omitempty"`
}

// Validate says which option cannot be used, by its JSON name.
func (o *GRPCServerOptions) Validate() error {
	switch {
	case o.KeepaliveTime < 0:
		return fmt.Errorf("keepalive_time: %s is negative", time.Duration(o.KeepaliveTime))
	case o.KeepaliveTimeout < 0:
		return fmt.Errorf("keepalive_timeout: %s is negative", time.Duration(o.KeepaliveTimeout))
	case o.KeepaliveMinTime < 0:
		return fmt.Errorf("keepalive_min_time: %s is negative", time.Duration(o.KeepaliveMinTime))
	case o.MaxConcurrentStreams < 0 || int64(o.MaxConcurrentStreams) > math.MaxUint32:
		return fmt.Errorf("max_concurrent_streams: %d is not a count of streams", o.MaxConcurrentStreams)
	}
	return nil
}

// Settings are the JSON names of the options o sets.
func (o *GRPCServerOptions) Settings() []string {
	var set []string
	for _, s := range [...]struct {
		name string
		set  bool
	}{
		{"keepalive_time", o.KeepaliveTime != 0}, {"keepalive_timeout", o.KeepaliveTimeout != 0},
		{"keepalive_min_time", o.KeepaliveMinTime != 0}, {"max_concurrent_streams", o.MaxConcurrentStreams != 0},
	} {
		if s.set {
			set = append(set, s.name)
		}
	}
	return set
}

// GRPCAgent is what a Handler brings to a GRPCServer besides itself.
type GRPCAgent struct {
	// Ready says why the agent cannot take calls now, nil when it can; the
	// health service answers NOT_SERVING while it says why. Nil: always
	// ready.
	Ready func(context.Context) error
	// TLS, when set, serves the connections over TLS (HTTP/2 by ALPN) with
	// this configuration, its GetConfigForClient asked when set; nil:
	// cleartext, HTTP/2 with prior knowledge, as gRPC clients speak it
	// without TLS. A client certificate is read by the mutual TLS scheme
	// of the agent's authenticator, so the configuration requests one
	// (tls.RequestClientCert) when that scheme should see it.
	TLS *tls.Config
	// Reflection serves gRPC server reflection (v1 and v1alpha).
	Reflection bool
}

// GRPCServer serves the gRPC binding on listeners of its own, with
// grpc.health.v1.Health beside it and, when the agent asks, server
// reflection. Handlers attach and detach while it serves (a config reload
// attaches the new config's handler before the old one's detaches): new
// calls, health checks, TLS handshakes and reflection go to the handler
// attached last of those still attached, and a call runs on the handler
// it started on.
type GRPCServer struct {
	srv *grpc.Server
	// mu orders Attach and detaching; current is read without it.
	mu       sync.Mutex
	attached []*grpcAgent
	current  atomic.Pointer[grpcAgent]
	// stopping is closed when Stop begins: health watches end.
	stopping chan struct{}
	stopOnce sync.Once
}

// grpcAgent is one attached handler.
type grpcAgent struct {
	h          *Handler
	svc        *grpcService
	ready      func(context.Context) error
	creds      credentials.TransportCredentials
	reflection bool
}

// NewGRPCServer makes a GRPCServer; it serves once Serve is called.
func NewGRPCServer(o GRPCServerOptions) *GRPCServer {
	s := &GRPCServer{stopping: make(chan struct{})}
	s.srv = grpc.NewServer(
		grpc.Creds(agentCredentials{s}),
		grpc.MaxRecvMsgSize(int(cmp.Or(o.MaxRequestBytes, DefaultMaxRequestBytes))),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    cmp.Or(time.Duration(o.KeepaliveTime), DefaultKeepaliveTime),
			Timeout: cmp.Or(time.Duration(o.KeepaliveTimeout), DefaultKeepaliveTimeout),
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: cmp.Or(time.Duration(o.KeepaliveMinTime), DefaultKeepaliveMinTime), PermitWithoutStream: true,
		}),
		grpc.MaxConcurrentStreams(uint32(cmp.Or(o.MaxConcurrentStreams, DefaultMaxConcurrentStreams))),
		grpc.MaxHeaderListSize(grpcMaxHeaderListBytes),
		// Another method, of this service or another, is refused as
		// JSON-RPC refuses one: after the caller is admitted, observed.
		grpc.UnknownServiceHandler(s.method(a2a.MethodUnknown, nil)),
	)
	s.srv.RegisterService(s.a2aService(), nil)
	healthpb.RegisterHealthServer(s.srv, grpcHealth{s})
	reflectors := reflection.ServerOptions{Services: s.srv}
	s.srv.RegisterService(s.reflection(&reflectionv1.ServerReflection_ServiceDesc), reflection.NewServerV1(reflectors))
	s.srv.RegisterService(s.reflection(&reflectionv1alpha.ServerReflection_ServiceDesc), reflection.NewServer(reflectors))
	return s
}

// Attach makes h serve the calls that start from now on, until detach
// (which may be called more than once) or another handler attaches.
func (s *GRPCServer) Attach(h *Handler, a GRPCAgent) (detach func(), err error) {
	svc, err := newGRPCService(h)
	if err != nil {
		return nil, err
	}
	agent := &grpcAgent{h: h, svc: svc, ready: a.Ready, creds: insecure.NewCredentials(), reflection: a.Reflection}
	if a.TLS != nil {
		agent.creds = credentials.NewTLS(a.TLS)
	}
	s.mu.Lock()
	s.attached = append(s.attached, agent)
	s.current.Store(agent)
	s.mu.Unlock()
	return sync.OnceFunc(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.attached = slices.DeleteFunc(s.attached, func(b *grpcAgent) bool { return b == agent })
		var last *grpcAgent
		if n := len(s.attached); n > 0 {
			last = s.attached[n-1]
		}
		s.current.Store(last)
	}), nil
}

// Serve accepts connections on ln until Stop; it returns nil then.
func (s *GRPCServer) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Stop stops the server: its listeners close at once, every connection is
// told to go away (GOAWAY) and health watches end; calls under way may
// finish until ctx ends, when the connections still open are closed.
func (s *GRPCServer) Stop(ctx context.Context) {
	s.stopOnce.Do(func() { close(s.stopping) })
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.srv.Stop()
		<-stopped
	}
}

// a2aService is the A2AService as the server registers it: each method a
// stream handler (method), unary ones too, their wire form unchanged.
func (s *GRPCServer) a2aService() *grpc.ServiceDesc {
	sd := a2apb.A2AService_ServiceDesc
	sd.HandlerType, sd.Methods, sd.Streams = nil, nil, nil
	for _, md := range a2apb.A2AService_ServiceDesc.Methods {
		sd.Streams = append(sd.Streams, grpc.StreamDesc{StreamName: md.MethodName,
			Handler: s.method(a2a.LookupMethod(a2a.V10, md.MethodName), func(svc *grpcService, ctx context.Context, ss grpc.ServerStream) error {
				answer, err := md.Handler(svc, ctx, ss.RecvMsg, nil)
				if err != nil {
					return err
				}
				return ss.SendMsg(answer)
			})})
	}
	for _, st := range a2apb.A2AService_ServiceDesc.Streams {
		handler := st.Handler
		st.Handler = s.method(a2a.LookupMethod(a2a.V10, st.StreamName), func(svc *grpcService, _ context.Context, ss grpc.ServerStream) error {
			return handler(svc, ss)
		})
		sd.Streams = append(sd.Streams, st)
	}
	return &sd
}

// method is the stream handler of A2A method m, run by serve on the agent
// attached now; serve is nil for a method the service does not have.
func (s *GRPCServer) method(m a2a.Method, serve func(*grpcService, context.Context, grpc.ServerStream) error) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		a := s.current.Load()
		if a == nil {
			return status.Error(codes.Unavailable, "no agent is loaded on this listener")
		}
		return a.serve(m, ss, serve)
	}
}

// serve runs one call of method m: the caller admitted before its message
// is read, then the method on a runner of its own (runWarm), supervised. The
// observer is told as the method ends (endCall), also when the call was
// ended for a stalled read or write.
func (a *grpcAgent) serve(m a2a.Method, ss grpc.ServerStream, serve func(*grpcService, context.Context, grpc.ServerStream) error) error {
	h := a.h
	r := grpcRequest(ss.Context())
	c := h.newCall(r.Context())
	c.begin(a2a.BindingGRPC, a2a.V10, nil, "")
	var challenges http.Header
	e := h.admitGRPC(r, c, func() http.Header {
		challenges = make(http.Header)
		return challenges
	})
	if e == nil && serve == nil {
		e = a2a.MethodNotFound(a2a.V10, r.URL.Path)
		c.Code = e.Code
	}
	if e != nil {
		if len(challenges) > 0 {
			ss.SetTrailer(metadata.MD{"www-authenticate": challenges.Values("WWW-Authenticate")})
		}
		h.endCall(c)
		return pbconv.Status(e).Err()
	}
	r = h.startMethod(r, c, m)
	w := &grpcStream{ServerStream: ss, h: h, timer: time.NewTimer(h.readBody)}
	w.ctx = context.WithValue(r.Context(), grpcCallKey{}, &grpcCall{r: r, c: c})
	done := make(chan error, 1)
	runWarm(func() {
		err := serve(a.svc, w.ctx, w)
		if code := w.stalled.Load(); code != 0 {
			c.Code = int(code)
		}
		h.endCall(c)
		done <- err
	})
	return w.supervise(done)
}

// grpcRequest is the request the engine reads of a call on the native
// listener: the call's metadata as its headers (gRPC metadata are HTTP/2
// headers), its authority as Host, the peer's address, the connection's
// TLS state (for the mutual TLS scheme), under the call's context.
func grpcRequest(ctx context.Context) *http.Request {
	method, _ := grpc.Method(ctx)
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, method, http.NoBody) // a path always parses
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	md, _ := metadata.FromIncomingContext(ctx)
	for k, v := range md {
		switch {
		case k == ":authority" && len(v) > 0:
			r.Host = v[0]
		case !strings.HasPrefix(k, ":"):
			r.Header[textproto.CanonicalMIMEHeaderKey(k)] = v
		}
	}
	if p, ok := peer.FromContext(ctx); ok {
		r.RemoteAddr = p.Addr.String()
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			r.TLS = &info.State
		}
	}
	return r
}

// grpcStream is the stream of one call as its method sees it: its context
// carries the call (grpcCall), and each read and write is timed.
type grpcStream struct {
	grpc.ServerStream
	ctx context.Context
	h   *Handler
	// timer runs while a read or a write (io) is under way.
	timer *time.Timer
	io    atomic.Int32
	// stalled is the code the call ended with when supervise ended it.
	stalled atomic.Int32
}

// The read or write a grpcStream's timer bounds.
const (
	ioNone int32 = iota
	ioRead
	ioWrite
)

func (w *grpcStream) Context() context.Context { return w.ctx }

func (w *grpcStream) RecvMsg(m any) error {
	w.timed(ioRead, w.h.readBody)
	defer w.untimed()
	return w.ServerStream.RecvMsg(m)
}

func (w *grpcStream) SendMsg(m any) error {
	w.timed(ioWrite, w.h.writeTimeout)
	defer w.untimed()
	return w.ServerStream.SendMsg(m)
}

func (w *grpcStream) timed(io int32, d time.Duration) {
	w.io.Store(io)
	w.timer.Reset(d)
}

func (w *grpcStream) untimed() {
	w.timer.Stop()
	w.io.Store(ioNone)
}

// supervise waits for the method's end (done), or for a read or write
// that outlasts its timeout: it then ends the call, which makes grpc-go
// end the stream and the blocked read or write with it.
func (w *grpcStream) supervise(done <-chan error) error {
	for {
		select {
		case err := <-done:
			w.timer.Stop()
			return err
		case <-w.timer.C:
			switch w.io.Load() {
			case ioRead:
				e := a2a.InvalidRequest(fmt.Sprintf("the request message did not arrive within %s", w.h.readBody))
				w.stalled.Store(int32(e.Code))
				return pbconv.Status(e).Err()
			case ioWrite:
				w.stalled.Store(int32(CodeDeadlineExceeded))
				return status.Errorf(codes.DeadlineExceeded, "the client did not read the answer within %s", w.h.writeTimeout)
			}
		}
	}
}

// agentCredentials handshake each connection as the agent attached now
// asks: TLS, or none. (grpc-go fixes a server's credentials when it makes
// it; the agent's may change with a reload.)
type agentCredentials struct{ s *GRPCServer }

func (c agentCredentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	a := c.s.current.Load()
	if a == nil {
		return nil, nil, fmt.Errorf("no agent is loaded on this listener")
	}
	return a.creds.ServerHandshake(conn)
}

func (agentCredentials) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, fmt.Errorf("server credentials cannot dial")
}

func (c agentCredentials) Info() credentials.ProtocolInfo {
	if a := c.s.current.Load(); a != nil {
		return a.creds.Info()
	}
	return insecure.NewCredentials().Info()
}

func (c agentCredentials) Clone() credentials.TransportCredentials { return c }

func (agentCredentials) OverrideServerName(string) error { return nil }

// reflection is the reflection service sd, answering UNIMPLEMENTED, as a
// server without it does, unless the agent attached now turns it on.
func (s *GRPCServer) reflection(sd *grpc.ServiceDesc) *grpc.ServiceDesc {
	gated := *sd
	gated.Streams = slices.Clone(sd.Streams)
	for i := range gated.Streams {
		handler := gated.Streams[i].Handler
		gated.Streams[i].Handler = func(srv any, ss grpc.ServerStream) error {
			if a := s.current.Load(); a == nil || !a.reflection {
				return status.Error(codes.Unimplemented, "server reflection is not enabled on this agent")
			}
			return handler(srv, ss)
		}
	}
	return &gated
}

// grpcHealth is grpc.health.v1.Health for the whole server ("") and the
// A2AService: SERVING while the agent attached now is ready, NOT_SERVING
// otherwise (draining, stopping, its store or keys not ready, none
// attached). It asks the agent on every check.
type grpcHealth struct{ s *GRPCServer }

// status is the health of service, and whether the server knows it.
func (g grpcHealth) status(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	if service != "" && service != a2apb.A2AService_ServiceDesc.ServiceName {
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
	}
	a := g.s.current.Load()
	if a == nil || (a.ready != nil && a.ready(ctx) != nil) {
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	return healthpb.HealthCheckResponse_SERVING, true
}

func (g grpcHealth) Check(ctx context.Context, in *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, known := g.status(ctx, in.Service)
	if !known {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", in.Service)
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (g grpcHealth) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st, _ := g.status(ctx, "")
	return &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"": {Status: st}, a2apb.A2AService_ServiceDesc.ServiceName: {Status: st},
	}}, nil
}

// Watch sends the status now, then each change, asking again every
// healthWatchInterval, until the client leaves or the server stops.
func (g grpcHealth) Watch(in *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	tick := time.NewTicker(healthWatchInterval)
	defer tick.Stop()
	sent := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		st, _ := g.status(ctx, in.Service)
		select {
		case <-g.s.stopping:
			st = healthpb.HealthCheckResponse_NOT_SERVING
		default:
		}
		if st != sent {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			sent = st
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-g.s.stopping:
			if sent == healthpb.HealthCheckResponse_NOT_SERVING {
				return status.Error(codes.Unavailable, "the server is stopping")
			}
		case <-tick.C:
		}
	}
}

// warmRunners are goroutines that ran a method of the native listener, or
// a skill an HTTP/2 call awaits, and wait for the next: a new goroutine
// starts with a small stack, which a method's calls (an upstream call's
// above all) deepen several times over, each time copying it (a tenth of
// a call's CPU in a profile); a kept one has the stack a method needs. At most
// maxWarmRunners wait: more calls at once run on new goroutines.
var warmRunners = make(chan chan func(), maxWarmRunners)

const maxWarmRunners = 128

// runWarm runs f on a waiting runner, or on a new goroutine that waits
// for more work once f returns.
func runWarm(f func()) {
	select {
	case work := <-warmRunners:
		work <- f
	default:
		go warmRunner(f)
	}
}

func warmRunner(f func()) {
	work := make(chan func())
	for {
		f()
		select {
		case warmRunners <- work:
			f = <-work
		default:
			return
		}
	}
}

// Interface guards
var (
	_ healthpb.HealthServer            = grpcHealth{}
	_ credentials.TransportCredentials = agentCredentials{}
	_ grpc.ServerStream                = (*grpcStream)(nil)
)
