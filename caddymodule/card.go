package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-a2a/caddy-a2a/a2a"
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

// serverConfig is the server's configuration that the a2a block's own
// fields give; the features and the steps add the rest.
func (h *Handler) serverConfig() server.Config {
	return server.Config{
		MaxRequestBytes:   h.MaxRequestBody,
		HeartbeatInterval: time.Duration(h.Heartbeat),
		ReadBodyTimeout:   time.Duration(h.ReadBodyTimeout),
		WriteTimeout:      time.Duration(h.WriteTimeout),
		ClientAddress:     clientIP,
		Logger:            h.logger,
		Observer:          observer{},
	}
}

// loadSkills loads the skills file, checking the skills' requirements
// against the authenticator's schemes, and builds the public card.
func (a *assembly) loadSkills() error {
	h := a.h
	// An absolute path, so that errors name the file wherever Caddy runs.
	path, err := filepath.Abs(h.Skills)
	if err != nil {
		return fmt.Errorf("skills file %s: %w", h.Skills, err)
	}
	// mapping's errors already name the file, the line and the skill.
	h.skills, err = mapping.Load(path, mapping.Options{UpstreamURL: h.Upstream, LookupEnv: os.LookupEnv,
		CheckSecurity: h.auth.CheckRequirements, WrapTransport: wrapUpstream})
	if err != nil {
		return err
	}
	if err := h.checkExtended(h.skills); err != nil {
		return err
	}
	a.server.Skills = h.skills
	if a.card, err = cardgen.Build(h.cardConfig()); err != nil {
		return fmt.Errorf("building the agent card: %w", err)
	}
	a.cardOptions = []cardgen.Option{cardgen.WithShape(a2a.CardShape{
		Strict10: h.CardFormat == cardFormatStrict, BareScopes: h.CardBareScopes})}
	if h.CardMaxAge > 0 {
		a.cardOptions = append(a.cardOptions, cardgen.WithMaxAge(time.Duration(h.CardMaxAge)))
	}
	return nil
}

// makeCard makes the public card's document, signed when signing is on.
func (a *assembly) makeCard() (err error) {
	if a.server.Card, err = cardgen.NewDocument(a.card, a.cardOptions...); err != nil {
		return fmt.Errorf("encoding the agent card: %w", err)
	}
	return nil
}

// newServer sets up the A2A server.
func (a *assembly) newServer() (err error) {
	if a.h.srv, err = server.New(a.server); err != nil {
		return fmt.Errorf("setting up the A2A server: %w", err)
	}
	if srv, ok := a.ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok {
		// Streams that last until their client leaves (MCP's) would hold
		// the shutdown, for a reload too: they end as it begins. The calls
		// under way answer; Cleanup closes what their bindings hold.
		srv.RegisterOnShutdown(a.h.srv.Shutdown)
	}
	return nil
}

// cardConfig is the public card's part of the configuration: the skills
// the skills file declares (but those for the extended card only), and the
// security schemes and requirement exactly as they are checked.
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
	for _, sk := range h.skills.All() {
		if !sk.Extended {
			cfg.AddSkill(sk.AgentSkill(), sk.ArgumentSchema())
		}
	}
	cfg.SecuritySchemes = h.auth.CardSchemes()
	cfg.Security = h.auth.CardRequirements()
	cfg.ExtendedCard = h.ExtendedCard != nil
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
