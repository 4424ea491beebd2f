package caddymodule

import (
	"net/http"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// Caddy's access log writes every request header and the whole URI, and it
// clones the request before any handler runs, so no handler can take a
// credential out of it. It redacts Authorization, Proxy-Authorization and
// cookies by itself; an API key in another header or in a query parameter
// is written in clear unless the site's log format filters it. The handler
// works out at provision which of the credentials it reads those are and,
// when its server keeps an access log, says so, with the log directive that
// keeps them out.

// accessLogAdvice is what an access log would hold of the credentials the
// security schemes read: nil when nothing.
type accessLogAdvice struct {
	headers []string // canonical header names, as the log writes them
	queries []string // query parameters
}

// newAccessLogAdvice lists the API keys of c that Caddy's access log would
// write in clear.
func newAccessLogAdvice(c *SecurityConfig) *accessLogAdvice {
	if c == nil {
		return nil
	}
	a := new(accessLogAdvice)
	for _, s := range c.Schemes {
		if s == nil || s.Type != "apiKey" {
			continue
		}
		switch s.In {
		case "header":
			name := http.CanonicalHeaderKey(s.Name)
			switch name {
			case "Authorization", "Proxy-Authorization", "Cookie":
			default:
				a.headers = append(a.headers, name)
			}
		case "query":
			a.queries = append(a.queries, s.Name)
		}
	}
	if len(a.headers) == 0 && len(a.queries) == 0 {
		return nil
	}
	slices.Sort(a.headers)
	slices.Sort(a.queries)
	a.headers, a.queries = slices.Compact(a.headers), slices.Compact(a.queries)
	return a
}

// warn tells when srv, the server the handler is provisioned in, keeps an
// access log.
func (a *accessLogAdvice) warn(srv *caddyhttp.Server, log *zap.Logger) {
	if a == nil || srv == nil || srv.Logs == nil {
		return
	}
	log.Warn("this site's access log writes API keys in clear unless its log format filters them: add the filter to the site's log directive",
		zap.Strings("headers", a.headers), zap.Strings("query_parameters", a.queries),
		zap.String("log_directive", a.directive()))
}

// directive is the Caddyfile log block whose filter keeps the keys out.
func (a *accessLogAdvice) directive() string {
	var b strings.Builder
	b.WriteString("log {\n\tformat filter {\n")
	for _, h := range a.headers {
		b.WriteString("\t\trequest>headers>" + h + " delete\n")
	}
	if len(a.queries) > 0 {
		b.WriteString("\t\trequest>uri query {\n")
		for _, q := range a.queries {
			b.WriteString("\t\t\tdelete " + q + "\n")
		}
		b.WriteString("\t\t}\n")
	}
	b.WriteString("\t}\n}")
	return b.String()
}
