package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	compose "github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// The agent's own part of provisioning, between the features' steps: the
// skills, the public card, the server.

// DefaultVersion is the agent version the card shows when none is configured.
const DefaultVersion = "1.0.0"

// Provider is the organization behind the agent.
type Provider struct {
	// Organization is the provider's name. Required.
	Organization string `json:"organization,omitempty"`
	// URL is an absolute URL of the provider's website. Required.
	URL string `json:"url,omitempty"`
}

// The values of card_format.
const (
	cardFormatUnion  = "union"
	cardFormatStrict = "strict"
)

// assembly begins the agent's provisioning with what the a2a block's own
// fields say; the features' steps add the rest.
func (h *Handler) assembly(ctx caddy.Context) *assembly {
	a := &assembly{ctx: ctx, h: h, agent: compose.Config{
		Skills: mapping.Options{UpstreamURL: h.Upstream, LookupEnv: os.LookupEnv, WrapTransport: wrapUpstream},
		Card:   h.cardConfig(),
		CardOptions: []cardgen.Option{cardgen.WithShape(a2a.CardShape{
			Strict10: h.CardFormat == cardFormatStrict, BareScopes: h.CardBareScopes})},
		Server: server.Config{
			MaxRequestBytes:   h.MaxRequestBody,
			HeartbeatInterval: time.Duration(h.Heartbeat),
			ReadBodyTimeout:   time.Duration(h.ReadBodyTimeout),
			WriteTimeout:      time.Duration(h.WriteTimeout),
			ClientAddress:     clientIP,
			Logger:            h.logger,
			Observer:          observer{},
		},
	}}
	if h.CardMaxAge > 0 {
		a.agent.CardOptions = append(a.agent.CardOptions, cardgen.WithMaxAge(time.Duration(h.CardMaxAge)))
	}
	a.server = &a.agent.Server
	return a
}

// build loads the skills, builds the cards and sets up the A2A server, by
// the composition root; what outlives the config is acquired once the
// skills and the cards are built, so that a configuration that cannot
// load takes no store.
func (a *assembly) build() error {
	h := a.h
	// An absolute path, so that errors name the file wherever Caddy runs.
	path, err := filepath.Abs(h.Skills)
	if err != nil {
		return fmt.Errorf("skills file %s: %w", h.Skills, err)
	}
	a.agent.SkillsFile, a.agent.Auth = path, h.auth
	a.agent.Acquire = func(srv *server.Config) error {
		a.server = srv
		return a.each(feature.acquire)()
	}
	built, err := compose.New(a.agent)
	if err != nil {
		return err
	}
	h.skills, h.srv = built.Skills, built.Handler
	if srv, ok := a.ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		// Streams that last until their client leaves (MCP's) would hold
		// the shutdown, for a reload too: they end as it begins. The calls
		// under way answer; Cleanup closes what their bindings hold.
		srv.RegisterOnShutdown(h.srv.Shutdown)
	}
	return nil
}

// cardConfig is the cards' part of the configuration, but for the skills
// and the security schemes, which the composition root adds.
func (h *Handler) cardConfig() cardgen.Config {
	cfg := cardgen.Config{
		Name:               h.Name,
		Description:        h.Description,
		Version:            h.Version,
		URL:                h.URL,
		RESTURL:            h.restURL(),
		DocumentationURL:   h.DocumentationURL,
		IconURL:            h.IconURL,
		DefaultInputModes:  h.DefaultInputModes,
		DefaultOutputModes: h.DefaultOutputModes,
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if h.Provider != nil {
		cfg.Provider = &a2a.AgentProvider{Organization: h.Provider.Organization, URL: h.Provider.URL}
	}
	cfg.PushNotifications = h.Push != nil
	cfg.GRPCURL = h.grpcURL()
	return cfg
}

// validateCard checks the provider and the URLs the card lists.
func (h *Handler) validateCard() error {
	if h.Provider != nil {
		if h.Provider.Organization == "" {
			return errors.New("provider: the organization is required")
		}
		if h.Provider.URL == "" {
			return errors.New("provider: the provider's URL is required")
		}
	}
	for _, u := range [...]struct{ field, value string }{
		{"url", h.URL},
		{"upstream", h.Upstream},
		{"provider", h.providerURL()},
		{"documentation_url", h.DocumentationURL},
		{"icon_url", h.IconURL},
	} {
		if u.value == "" {
			continue
		}
		if err := checkAbsoluteURL(u.value); err != nil {
			return fmt.Errorf("%s: %w", u.field, err)
		}
	}
	return nil
}

func (h *Handler) providerURL() string {
	if h.Provider == nil {
		return ""
	}
	return h.Provider.URL
}

// siteURL is the absolute URL of path on the agent's site: the scheme and
// host of url.
func (h *Handler) siteURL(path string) string {
	u, err := url.Parse(h.URL)
	if err != nil {
		return "" // Validate has refused it
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
}

// checkAbsoluteURL accepts http and https URLs with a host. Its error does
// not repeat the value, which may carry credentials.
func checkAbsoluteURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	return nil
}

// clientIP is the client's IP as Caddy resolved it, behind the server's
// trusted_proxies when it has some.
func clientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	return ip // "": the server takes the remote address
}
