package caddymodule

import (
	"net"
	"net/url"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/server"
)

// GRPCConfig is the gRPC binding, served by the same engine,
// authentication, limits and observer as JSON-RPC: on the site's port,
// HTTP/2 requests with a gRPC content type (on the paths
// /lf.a2a.v1.A2AService/<method>, which must route to this handler); or,
// with Listen, every call on a listener of the binding's own. On the site,
// gRPC needs HTTP/2: over TLS as Caddy serves it by default, or over
// cleartext with the server's `protocols h1 h2 h2c`. The card lists the
// binding. In the Caddyfile: grpc [<address>] [{ … }].
type GRPCConfig struct {
	// URL is the address the card lists for the gRPC binding: a gRPC
	// target, as gRPC clients (the official SDKs' among them) dial it.
	// Default: the host and port of url, such as agent.example.com:443;
	// with Listen, the host of url and the port of Listen, such as
	// agent.example.com:50051.
	URL string `json:"url,omitempty"`

	// Listen serves the binding on a listener of its own at this
	// host:port (":50051": every interface), by grpc-go's own HTTP/2
	// transport, cheaper per call than on the site's port (docs/bindings.md
	// has the figures), which then takes no gRPC call; with
	// grpc.health.v1.Health beside it.
	// A reload that keeps the address keeps the listener and its
	// connections, and hands new calls to the new config; the listener
	// stops once no loaded config uses it (gracefully, within
	// drain_timeout). Default: the binding is served on the site's port.
	// The settings below are the listener's.
	Listen string `json:"listen,omitempty"`

	// TLS serves the listener over TLS. Default: cleartext (HTTP/2 with
	// prior knowledge, as gRPC clients speak it without TLS). When
	// security declares a mutual_tls scheme, clients are asked for a
	// certificate, which the scheme checks. See GRPCTLSConfig.
	TLS *GRPCTLSConfig `json:"tls,omitempty"`

	// The listener's keepalive and stream settings: keepalive_time,
	// keepalive_timeout, keepalive_min_time and max_concurrent_streams,
	// documented on the engine's own type.
	server.GRPCServerOptions

	// Reflection serves gRPC server reflection (v1 and v1alpha), which
	// tools such as grpcurl use to list and call the service without its
	// proto. Like the health service, it asks for no credentials. Off by
	// default.
	Reflection bool `json:"reflection,omitempty"`
}

// grpcFeature is the grpc block: the gRPC binding, on the site's port or on
// a listener of its own (grpclisten.go).
type grpcFeature struct{ noSteps }

func (grpcFeature) setting(h *Handler) setting { return setting{"grpc", setBlock(&h.GRPC, parseGRPC)} }

func (grpcFeature) validate(h *Handler) error {
	return checkBlock("grpc", h.GRPC, (*GRPCConfig).validate)
}

// configure serves the binding on the site's port, unless it listens on
// its own.
func (grpcFeature) configure(a *assembly) error {
	if a.h.GRPC != nil && a.h.GRPC.Listen == "" {
		a.server.Bindings = append(a.server.Bindings, server.GRPC())
	}
	return nil
}

func (grpcFeature) start(a *assembly) error { return a.h.listenGRPC(a.ctx) }

func (grpcFeature) cleanup(h *Handler) error { return h.releaseGRPC() }

// grpcURL is the address the card lists for the gRPC binding ("": not
// served).
func (h *Handler) grpcURL() string {
	if h.GRPC == nil {
		return ""
	}
	if h.GRPC.URL != "" {
		return h.GRPC.URL
	}
	u, err := url.Parse(h.URL) // checked by Validate
	if err != nil {
		return ""
	}
	if h.GRPC.Listen != "" {
		port, _ := listenPort(h.GRPC.Listen) // checked by Validate
		return net.JoinHostPort(u.Hostname(), port)
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// parseGRPC reads grpc [<address>] [{ … }]: the address the card lists,
// and the settings of the binding's own listener.
func parseGRPC(d *caddyfile.Dispenser, at string) (*GRPCConfig, error) {
	args := d.RemainingArgs()
	if len(args) > 1 {
		return nil, d.Errf("%s: want at most one argument (the address the card lists), got %d", at, len(args))
	}
	g := new(GRPCConfig)
	if len(args) == 1 {
		g.URL = args[0]
	}
	return g, parseSettings(d, at, nil, []setting{
		{"listen", setString(&g.Listen)},
		{"tls", func(d *caddyfile.Dispenser, at string) error {
			g.TLS = new(GRPCTLSConfig)
			switch files := d.RemainingArgs(); len(files) {
			case 0:
			case 2:
				g.TLS.CertFile, g.TLS.KeyFile = files[0], files[1]
			default:
				return d.Errf("%s: want <cert file> <key file>, or nothing for Caddy's certificates; got %d arguments", at, len(files))
			}
			return nil
		}},
		{"keepalive_time", setDuration(&g.KeepaliveTime)},
		{"keepalive_timeout", setDuration(&g.KeepaliveTimeout)},
		{"keepalive_min_time", setDuration(&g.KeepaliveMinTime)},
		{"max_concurrent_streams", setCount(&g.MaxConcurrentStreams)},
		{"reflection", setFlag(&g.Reflection)},
	})
}
