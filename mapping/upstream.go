package mapping

// The service every skill of a file calls: its address, and the transport
// that carries the calls.

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

// upstream is the service every skill of a file calls.
type upstream struct {
	scheme, host string
	origin       string // as origin() writes it
	// basePath and baseRawPath are the url's path without its trailing
	// slash, decoded and as written.
	basePath, baseRawPath string
	transport             http.RoundTripper
	// tokens gets the token every request carries (upstream.oauth2), or
	// is nil; transport puts it on.
	tokens *upstreamauth.Client
}

// resendable is ctx, for a request that may be sent twice, marked so
// for upstream.oauth2's transport: a 401 is then answered by sending the
// request again with another token.
func (up *upstream) resendable(ctx context.Context, may bool) context.Context {
	if up.tokens == nil || !may {
		return ctx
	}
	return upstreamauth.WithResend(ctx)
}

// origin writes a URL's origin with its port, so that http://a and
// http://a:80 are the same.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// NewUpstreamTransport is the one transport of an upstream, unless
// Options.Transport replaces it: keep-alive with a pool large enough for
// many concurrent callers, no proxy from the environment (a sidecar talks
// to its neighbour), no transparent compression (it costs CPU on both
// sides of a loopback), and no redirects, which RoundTrip does not follow,
// so credentials never travel to another host. Tools that wrap it in their
// own transport (the dry run records a live upstream's answers) call it.
func NewUpstreamTransport(maxIdlePerHost int) *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   maxIdlePerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}
