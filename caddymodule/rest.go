package caddymodule

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/server"
)

// RESTConfig serves the HTTP+JSON binding (spec 1.0 §11; in 1.0 and 0.3,
// chosen per request by A2A-Version as for JSON-RPC) beside JSON-RPC, on
// the same engine, and lists it in the card's supportedInterfaces. In the
// Caddyfile: rest <path> [<url>].
type RESTConfig struct {
	// Path is the request path below which the binding's operations are
	// served, as the handler sees it (after any handle_path): with /rest,
	// POST /rest/message:send, GET /rest/tasks/{id}, and so on. At /, the
	// operations share the root with JSON-RPC, which answers every other
	// path. Required.
	Path string `json:"path,omitempty"`

	// URL is the binding's public, absolute URL, as the card lists it.
	// Default: the scheme and host of url, with path (set it when a proxy
	// or handle_path changes the path clients use).
	URL string `json:"url,omitempty"`
}

func (c *RESTConfig) validate() error {
	if c.Path == "" {
		return fmt.Errorf("path: the request path of the binding is required")
	}
	if err := server.CheckRESTPath(c.Path); err != nil {
		return fmt.Errorf("path: %w", err)
	}
	if c.URL != "" {
		if err := checkAbsoluteURL(c.URL); err != nil {
			return fmt.Errorf("url: %w", err)
		}
	}
	return nil
}

// restFeature is the rest block: the HTTP+JSON binding.
type restFeature struct{ noSteps }

func (restFeature) setting(h *Handler) setting { return setting{"rest", setBlock(&h.REST, parseREST)} }

func (restFeature) validate(h *Handler) error {
	return checkBlock("rest", h.REST, (*RESTConfig).validate)
}

func (restFeature) configure(a *assembly) error {
	if a.h.REST != nil {
		a.server.Bindings = append(a.server.Bindings, server.HTTPJSON(a.h.REST.Path))
	}
	return nil
}

// restURL is the binding's URL for the card; "" when it is not served.
func (h *Handler) restURL() string {
	switch {
	case h.REST == nil:
		return ""
	case h.REST.URL != "":
		return h.REST.URL
	}
	return h.siteURL(h.REST.Path)
}

// parseREST reads rest <path> [<url>].
func parseREST(d *caddyfile.Dispenser, at string) (*RESTConfig, error) {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return nil, d.Errf("%s: want <path> [<url>], got %d arguments", at, len(args))
	}
	c := &RESTConfig{Path: args[0]}
	if len(args) == 2 {
		c.URL = args[1]
	}
	return c, nil
}
