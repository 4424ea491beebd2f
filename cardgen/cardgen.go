// Package cardgen builds the Agent Card from configuration, signs it and
// serves it: the card's bytes, signatures and ETag are computed once, at
// provision time, so a request for the card only copies precomputed values
// (spec 1.0 §8). Signing (§8.4) canonicalizes the card with RFC 8785 and
// adds one JWS with a detached payload per payload form (see Form); the
// public keys are served as a JWK Set (JWKS), and Verify checks a card's
// signatures.
package cardgen

import (
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Config is what the card says about the agent. Name, Description, Version
// and URL are required.
type Config struct {
	Name        string
	Description string
	Version     string
	// URL is the public URL of the JSON-RPC endpoint, from configuration:
	// never derived from a request, whose Host header the caller controls.
	URL string
	// RESTURL, when set, is the public URL of the HTTP+JSON binding
	// (protocols 1.0 and 0.3), listed after the JSON-RPC interfaces.
	RESTURL string
	// GRPCURL, when set, lists the gRPC binding (1.0 only) at this
	// address: a gRPC target such as "agent.example.com:443", which is what
	// gRPC clients (the official SDKs' among them) dial.
	GRPCURL          string
	Provider         *a2a.AgentProvider
	DocumentationURL string
	IconURL          string
	// DefaultInputModes and DefaultOutputModes are media types; empty means
	// ["text/plain", "application/json"].
	DefaultInputModes  []string
	DefaultOutputModes []string
	Skills             []a2a.AgentSkill
	SecuritySchemes    map[string]a2a.SecurityScheme
	// Security is the card's OR-list of requirements; every scheme a
	// requirement names must be in SecuritySchemes.
	Security []a2a.SecurityRequirement
	// ExtendedCard says the agent answers GetExtendedAgentCard.
	ExtendedCard bool
	// PushNotifications says the agent takes push notification configs
	// and delivers to them.
	PushNotifications bool
	// SkillArguments maps skill ids to the JSON Schema of their arguments,
	// published by the skill-arguments extension (extensions.go); nil
	// schemas are left out.
	SkillArguments map[string]map[string]any
}

// defaultModes are the input and output modes of a card whose
// configuration names none.
var defaultModes = []string{"text/plain", "application/json"}

// Build checks cfg and returns the card it describes. The error lists every
// problem found, each naming its field by its name in the card (for example
// `skills[1] ("get-weather").id`).
//
// The card gets copies of cfg's slices and maps, but shares what they hold
// (a skill's tags, a scheme's flows): treat those as read-only afterwards.
func Build(cfg Config) (*a2a.AgentCard, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	inModes, outModes := cfg.DefaultInputModes, cfg.DefaultOutputModes
	if len(inModes) == 0 {
		inModes = defaultModes
	}
	if len(outModes) == 0 {
		outModes = defaultModes
	}
	var provider *a2a.AgentProvider
	if cfg.Provider != nil {
		p := *cfg.Provider
		provider = &p
	}
	return withSkillArguments(&a2a.AgentCard{
		Name:                cfg.Name,
		Description:         cfg.Description,
		SupportedInterfaces: interfaces(cfg),
		Provider:            provider,
		Version:             cfg.Version,
		DocumentationURL:    cfg.DocumentationURL,
		Capabilities: a2a.AgentCapabilities{
			Streaming:         ptr(true),
			PushNotifications: ptr(cfg.PushNotifications),
			ExtendedAgentCard: ptr(cfg.ExtendedCard),
		},
		SecuritySchemes:      maps.Clone(cfg.SecuritySchemes),
		SecurityRequirements: slices.Clone(cfg.Security),
		DefaultInputModes:    slices.Clone(inModes),
		DefaultOutputModes:   slices.Clone(outModes),
		Skills:               slices.Clone(cfg.Skills),
		IconURL:              cfg.IconURL,
	}, cfg.SkillArguments), nil
}

func ptr[T any](v T) *T { return &v }

// problems collects configuration errors so that one run reports them all.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, fmt.Errorf("cardgen: %s: %w", field, fmt.Errorf(format, args...)))
}

func validate(cfg *Config) error {
	var p problems
	required(&p, "name", cfg.Name)
	required(&p, "description", cfg.Description)
	required(&p, "version", cfg.Version)
	if cfg.RESTURL != "" {
		checkURL(&p, "rest url", cfg.RESTURL)
	}
	if required(&p, "url", cfg.URL) {
		checkURL(&p, "url", cfg.URL)
	}
	if pr := cfg.Provider; pr != nil {
		required(&p, "provider.organization", pr.Organization)
		if required(&p, "provider.url", pr.URL) {
			checkURL(&p, "provider.url", pr.URL)
		}
	}
	if strings.IndexFunc(cfg.GRPCURL, unicode.IsSpace) >= 0 {
		p.add("supportedInterfaces (GRPC).url", "%q holds white space", cfg.GRPCURL)
	}
	optionalURL(&p, "documentationUrl", cfg.DocumentationURL)
	optionalURL(&p, "iconUrl", cfg.IconURL)
	checkModes(&p, "defaultInputModes", cfg.DefaultInputModes)
	checkModes(&p, "defaultOutputModes", cfg.DefaultOutputModes)

	// Sorted, so that the same configuration always gives the same error.
	for _, name := range slices.Sorted(maps.Keys(cfg.SecuritySchemes)) {
		checkScheme(&p, fmt.Sprintf("securitySchemes[%q]", name), name, cfg.SecuritySchemes[name])
	}
	checkRequirements(&p, "security", cfg.Security, cfg.SecuritySchemes)
	checkSkillArguments(&p, cfg)

	seen := make(map[string]int, len(cfg.Skills))
	for i, sk := range cfg.Skills {
		field := fmt.Sprintf("skills[%d]", i)
		if strings.TrimSpace(sk.ID) == "" {
			p.add(field+".id", "required")
		} else {
			field += fmt.Sprintf(" (%q)", sk.ID)
			if first, dup := seen[sk.ID]; dup {
				p.add(field+".id", "duplicate of skills[%d]", first)
			} else {
				seen[sk.ID] = i
			}
		}
		required(&p, field+".name", sk.Name)
		required(&p, field+".description", sk.Description)
		checkModes(&p, field+".inputModes", sk.InputModes)
		checkModes(&p, field+".outputModes", sk.OutputModes)
		checkRequirements(&p, field+".securityRequirements", sk.SecurityRequirements, cfg.SecuritySchemes)
	}
	return errors.Join(p...)
}

// required reports an empty (or blank) value and says whether it was set.
func required(p *problems, field, v string) bool {
	if strings.TrimSpace(v) == "" {
		p.add(field, "required")
		return false
	}
	return true
}

func optionalURL(p *problems, field, v string) {
	if v != "" {
		checkURL(p, field, v)
	}
}

// checkURL wants an absolute http or https URL. Its messages do not repeat
// a URL that carries credentials.
func checkURL(p *problems, field, v string) {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		p.add(field, "not a URL: %w", err)
	case u.User != nil:
		p.add(field, "must not carry credentials (user info)")
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		p.add(field, "%q is not an absolute http or https URL", v)
	case u.Fragment != "":
		p.add(field, "%q must not have a fragment", v)
	}
}

func checkModes(p *problems, field string, modes []string) {
	for i, m := range modes {
		mt, _, err := mime.ParseMediaType(m)
		// ParseMediaType also takes a bare token ("text"), as a
		// Content-Disposition would be; a mode needs type/subtype.
		if err == nil && !strings.Contains(mt, "/") {
			err = errors.New("want type/subtype")
		}
		if err != nil {
			p.add(fmt.Sprintf("%s[%d]", field, i), "%q is not a media type: %w", m, err)
		}
	}
}

var apiKeyLocations = []string{"header", "query", "cookie"}

func checkScheme(p *problems, field, name string, s a2a.SecurityScheme) {
	if strings.TrimSpace(name) == "" {
		p.add(field, "a scheme needs a name")
	}
	switch s.Type {
	case a2a.SchemeAPIKey:
		if !slices.Contains(apiKeyLocations, s.Location) {
			p.add(field+".location", "%q is not one of header, query, cookie", s.Location)
		}
		required(p, field+".name", s.Name)
	case a2a.SchemeHTTPAuth:
		required(p, field+".scheme", s.Scheme)
	case a2a.SchemeOAuth2:
		checkFlows(p, field+".flows", s.Flows)
		optionalURL(p, field+".oauth2MetadataUrl", s.OAuth2MetadataURL)
	case a2a.SchemeOpenIDConnect:
		if required(p, field+".openIdConnectUrl", s.OpenIDConnectURL) {
			checkURL(p, field+".openIdConnectUrl", s.OpenIDConnectURL)
		}
	case a2a.SchemeMutualTLS:
		// The TLS handshake carries everything; nothing to declare.
	default:
		p.add(field, "unknown scheme type %d", s.Type)
	}
}

// checkFlows wants exactly one flow (OAuthFlows is a oneof in 1.0) with the
// URLs that flow requires.
func checkFlows(p *problems, field string, f a2a.OAuthFlows) {
	if n := f.Len(); n != 1 {
		p.add(field, "exactly one flow is needed, got %d", n)
	}
	for t, flow := range f.All() {
		for _, u := range t.URLs(flow) {
			urlField(p, field+"."+t.String()+"."+u.JSONName, u.URL, u.Required)
		}
	}
}

func urlField(p *problems, field, v string, need bool) {
	if need {
		if required(p, field, v) {
			checkURL(p, field, v)
		}
		return
	}
	optionalURL(p, field, v)
}

func checkRequirements(p *problems, field string, reqs []a2a.SecurityRequirement, schemes map[string]a2a.SecurityScheme) {
	for i, req := range reqs {
		for _, name := range slices.Sorted(maps.Keys(req)) {
			if _, ok := schemes[name]; !ok {
				p.add(fmt.Sprintf("%s[%d]", field, i), "scheme %q is not declared in securitySchemes", name)
			}
		}
	}
}

// interfaces declares every version the JSON-RPC endpoint speaks as an
// interface on the same URL, newest first: clients pick theirs by
// protocolVersion (the official SDKs' 0.3 compatibility clients look for
// the 0.3 entry); then the same for the HTTP+JSON binding, when served.
// JSON-RPC stays first, the interface clients prefer.
//
// The gRPC binding, when served, follows: its service is 1.0's only.
func interfaces(cfg Config) []a2a.AgentInterface {
	out := make([]a2a.AgentInterface, 0, 2*len(a2a.Versions)+1)
	for _, b := range []struct{ binding, url string }{{a2a.BindingJSONRPC, cfg.URL}, {a2a.BindingHTTPJSON, cfg.RESTURL}} {
		for _, v := range slices.Backward(a2a.Versions) {
			if b.url != "" {
				out = append(out, a2a.AgentInterface{URL: b.url, ProtocolBinding: b.binding, ProtocolVersion: v.String()})
			}
		}
	}
	if cfg.GRPCURL != "" {
		out = append(out, a2a.AgentInterface{URL: cfg.GRPCURL, ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: a2a.V10.String()})
	}
	return out
}
