package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func init() {
	caddy.RegisterModule(Health{})
	httpcaddyfile.RegisterHandlerDirective("a2a_health", parseHealthCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("a2a_health", httpcaddyfile.Before, "metrics")
}

// Health answers liveness and readiness probes (Kubernetes', or a load
// balancer's) for the A2A agents of this Caddy process. It is a handler of
// its own, rather than a path of the a2a handler, so that the probes can
// live on a port of their own that the public Service does not expose,
// behind any matcher, and one probe covers every agent of the config.
//
// Answers are plain text, never cached: 200 "ok" or "ready", or 503 with
// one reason a line. The handler is terminal.
type Health struct {
	// Check is what the endpoint answers:
	//
	//   - "live": 200 while the process serves HTTP, also while it drains
	//     (a liveness probe that failed then would have the process killed
	//     before its tasks are stored);
	//   - "ready" (the default): 200 when every a2a handler of the loaded
	//     config can take requests, else 503 saying why: no agent is loaded
	//     (its skills are not), the process is stopping or draining, a
	//     security scheme's JWKS has never been fetched, or the Redis task
	//     store does not answer (one PING a second at most, however often
	//     probes come).
	Check string `json:"check,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (Health) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.a2a_health",
		New: func() caddy.Module { return new(Health) },
	}
}

// Validate checks Check.
func (hc *Health) Validate() error {
	switch hc.Check {
	case "", "live", "ready":
		return nil
	}
	return fmt.Errorf("check: %q is neither live nor ready", hc.Check)
}

// ServeHTTP answers the probe.
func (hc *Health) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return caddyhttp.Error(http.StatusMethodNotAllowed, nil)
	}
	status, body := http.StatusOK, "ok\n"
	if hc.Check != "live" {
		if reasons := agents.notReady(r.Context()); len(reasons) > 0 {
			status, body = http.StatusServiceUnavailable, strings.Join(reasons, "\n")+"\n"
		} else {
			body = "ready\n"
		}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(body))
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	a2a_health [<matcher>] [live|ready]
func (hc *Health) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		hc.Check = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	if d.NextBlock(0) {
		return d.Err("a2a_health takes no block")
	}
	return hc.Validate()
}

func parseHealthCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	hc := new(Health)
	err := hc.UnmarshalCaddyfile(h.Dispenser)
	return hc, err
}

// agents are the provisioned a2a handlers, as readiness asks them. A
// handler joins when its provisioning succeeds and leaves in Cleanup, so
// during a reload both the old config's and the new one's are asked.
var agents = agentSet{set: make(map[*Handler]agentProbe)}

type agentSet struct {
	mu  sync.Mutex
	set map[*Handler]agentProbe
}

// agentProbe is what readiness asks of one agent, taken when it joins, so
// that a probe never reads a handler that is being cleaned up.
type agentProbe struct {
	url     string // redacted
	manager *tasks.Manager
	auth    *authn.Authenticator // nil without security
}

func (s *agentSet) add(h *Handler) {
	s.mu.Lock()
	s.set[h] = agentProbe{url: redactedURL(h.URL), manager: h.shared.manager, auth: h.auth}
	s.mu.Unlock()
}

func (s *agentSet) remove(h *Handler) {
	s.mu.Lock()
	delete(s.set, h)
	s.mu.Unlock()
}

// probes are the agents as they are now.
func (s *agentSet) probes() []agentProbe {
	s.mu.Lock()
	defer s.mu.Unlock()
	probes := make([]agentProbe, 0, len(s.set))
	for _, p := range s.set {
		probes = append(probes, p)
	}
	return probes
}

// notReady is why the agents cannot all take requests; nil when they can.
func (s *agentSet) notReady(ctx context.Context) []string {
	if caddy.Exiting() {
		return []string{"stopping: the process exits"}
	}
	probes := s.probes()
	if len(probes) == 0 {
		return []string{"no A2A agent is loaded"}
	}
	var reasons []string
	for _, p := range probes {
		if err := p.notReady(ctx); err != nil {
			reasons = append(reasons, fmt.Sprintf("agent %s: %v", p.url, err))
		}
	}
	slices.Sort(reasons)
	return reasons
}

// notReady says why this agent cannot take requests, or nil.
func (p agentProbe) notReady(ctx context.Context) error {
	if p.manager.Draining() {
		return errors.New("draining: new tasks are refused")
	}
	if err := p.auth.KeysReady(); err != nil {
		return err
	}
	return p.manager.Ready(ctx)
}

// redactedURL is an agent's url as errors and probes show it: any password
// in it redacted.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}

// Interface guards
var (
	_ caddy.Module                = (*Health)(nil)
	_ caddy.Validator             = (*Health)(nil)
	_ caddyhttp.MiddlewareHandler = (*Health)(nil)
	_ caddyfile.Unmarshaler       = (*Health)(nil)
)
