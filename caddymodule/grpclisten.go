package caddymodule

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddytls"
	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// GRPCTLSConfig serves the gRPC binding's own listener over TLS.
type GRPCTLSConfig struct {
	// CertFile and KeyFile are a PEM certificate chain and its private
	// key, read at each config load. Both, or neither: the certificates
	// Caddy manages for its sites then serve, chosen by the name the
	// client asks for (SNI).
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
}

// validate checks the listener's settings; a setting of the listener is
// refused without listen, where it would do nothing.
func (g *GRPCConfig) validate() error {
	if g.Listen == "" {
		set := g.Settings()
		if g.Reflection {
			set = append(set, "reflection")
		}
		if g.TLS != nil {
			set = append([]string{"tls"}, set...)
		}
		if len(set) > 0 {
			return fmt.Errorf("%s applies to the binding's own listener: set listen", set[0])
		}
		return nil
	}
	if _, err := listenPort(g.Listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if g.TLS != nil && (g.TLS.CertFile == "") != (g.TLS.KeyFile == "") {
		return errors.New("tls: give both a certificate file and its key file, or neither (Caddy's certificates)")
	}
	return g.GRPCServerOptions.Validate()
}

// listenPort is the port of a listen address, host:port.
func listenPort(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > math.MaxUint16 {
		return "", fmt.Errorf("%q: the port must be a number from 1 to 65535", addr)
	}
	return port, nil
}

// grpcServerOptions are what the gRPC listener's server is made with.
func (h *Handler) grpcServerOptions() server.GRPCServerOptions {
	opts := h.GRPC.GRPCServerOptions
	opts.MaxRequestBytes = h.MaxRequestBody
	return opts
}

// grpcListeners hold the gRPC binding's own listeners, keyed by address.
// Caddy provisions a new config before it cleans up the old one, so a
// reload that keeps the address finds the old config's listener here and
// attaches to it, rather than failing to bind an address in use: its
// connections stay open, and new calls go to the new config's agent. The
// last handler to let go of a listener stops it.
var grpcListeners = caddy.NewUsagePool()

// grpcListener is one listener, and the gRPC server on it.
type grpcListener struct {
	addr string
	srv  *server.GRPCServer
	// options are what srv was made with, which a reload cannot change.
	options server.GRPCServerOptions
	served  chan struct{} // closed when Serve returns
	log     *zap.Logger

	mu sync.Mutex
	// configs are the config of each handler attached, so that two agents
	// of one config cannot share the address.
	configs map[*Handler]any
	// stopTimeout bounds the graceful stop: the drain timeout of the
	// handler attached last.
	stopTimeout time.Duration
}

// listenGRPC serves h's gRPC binding on its own listener, when listen asks
// for one: the listener of its address, or a new one. Cleanup releases it.
func (h *Handler) listenGRPC(ctx caddy.Context) error {
	g := h.GRPC
	if g == nil || g.Listen == "" {
		return nil
	}
	tlsConfig, err := h.grpcTLS(ctx)
	if err != nil {
		return fmt.Errorf("grpc: tls: %w", err)
	}
	opts := h.grpcServerOptions()
	val, loaded, err := grpcListeners.LoadOrNew(g.Listen, func() (caddy.Destructor, error) {
		ln, err := net.Listen("tcp", g.Listen)
		if err != nil {
			return nil, err
		}
		l := &grpcListener{addr: g.Listen, srv: server.NewGRPCServer(opts), options: opts, served: make(chan struct{}),
			log: h.logger.Named("grpc"), configs: make(map[*Handler]any)}
		go l.serve(ln)
		return l, nil
	})
	if err != nil {
		return fmt.Errorf("grpc: listen %s: %w", g.Listen, err)
	}
	h.grpcListen = g.Listen
	l := val.(*grpcListener)
	if loaded && l.options != opts {
		h.logger.Warn("the gRPC listener kept across the reload keeps its max_request_body, keepalive and stream settings; new ones apply once no loaded config uses this address",
			zap.String("listen", g.Listen))
	}
	probe := agentProbe{url: redactedURL(h.URL), manager: h.manager, auth: h.auth}
	agent := server.GRPCAgent{TLS: tlsConfig, Reflection: g.Reflection, Ready: func(ctx context.Context) error {
		if caddy.Exiting() {
			return errors.New("stopping: the process exits")
		}
		return probe.notReady(ctx)
	}}
	h.detachGRPC, err = l.attach(h, configOf(ctx), agent)
	if err != nil {
		return fmt.Errorf("grpc: listen %s: %w", g.Listen, err)
	}
	return nil
}

// configOf names the config ctx belongs to: Caddy makes one metrics
// registry per config.
func configOf(ctx caddy.Context) any { return ctx.GetMetricsRegistry() }

// serve serves ln until the server stops.
func (l *grpcListener) serve(ln net.Listener) {
	defer close(l.served)
	l.log.Info("serving the gRPC binding", zap.String("listen", l.addr))
	if err := l.srv.Serve(ln); err != nil {
		l.log.Error("the gRPC listener failed", zap.String("listen", l.addr), zap.Error(err))
	}
}

// attach makes h, of config, the agent that takes the listener's new
// calls, unless another agent of the same config has it.
func (l *grpcListener) attach(h *Handler, config any, agent server.GRPCAgent) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, c := range l.configs {
		if c == config {
			return nil, fmt.Errorf("the agent %s listens there already: give each agent its own address", redactedURL(other.URL))
		}
	}
	detach, err := l.srv.Attach(h.srv, agent)
	if err != nil {
		return nil, err
	}
	l.configs[h] = config
	l.stopTimeout = h.drainTimeout()
	return func() {
		detach()
		l.mu.Lock()
		delete(l.configs, h)
		l.mu.Unlock()
	}, nil
}

// Destruct stops the listener once no loaded config uses it: no new
// connection, calls under way get the drain timeout to finish.
func (l *grpcListener) Destruct() error {
	l.mu.Lock()
	timeout := l.stopTimeout
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	l.srv.Stop(ctx)
	<-l.served
	return nil
}

// releaseGRPC detaches h from its gRPC listener and lets go of it.
func (h *Handler) releaseGRPC() error {
	if h.detachGRPC != nil {
		h.detachGRPC()
		h.detachGRPC = nil
	}
	if h.grpcListen == "" {
		return nil
	}
	addr := h.grpcListen
	h.grpcListen = ""
	if _, err := grpcListeners.Delete(addr); err != nil {
		return fmt.Errorf("releasing the gRPC listener %s: %w", addr, err)
	}
	return nil
}

// grpcTLS is the TLS configuration of h's gRPC listener: nil without tls.
// A client certificate is requested, not verified, when a mutual_tls
// scheme is declared: the scheme checks it against its trusted CAs.
func (h *Handler) grpcTLS(ctx caddy.Context) (*tls.Config, error) {
	t := h.GRPC.TLS
	if t == nil {
		return nil, nil
	}
	clientCerts := false
	if h.Security != nil {
		for _, s := range h.Security.Schemes {
			clientCerts = clientCerts || (s != nil && s.Type == authn.TypeMutualTLS)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if clientCerts {
			cfg.ClientAuth = tls.RequestClientCert
		}
		return cfg, nil
	}
	policy := &caddytls.ConnectionPolicy{ALPN: []string{"h2"}}
	if clientCerts {
		policy.ClientAuthentication = &caddytls.ClientAuthentication{Mode: "request"}
	}
	policies := caddytls.ConnectionPolicies{policy}
	if err := policies.Provision(ctx); err != nil {
		return nil, fmt.Errorf("Caddy's certificates: %w", err)
	}
	return policies.TLSConfig(ctx), nil
}
