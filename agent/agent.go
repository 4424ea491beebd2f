// Package agent is the composition root: one resolved configuration of an
// agent becomes its skills, cards, protected resource metadata, task
// manager and server.Handler, in one order that the Caddy adapter, the
// dry run and the tests share, so that what they serve cannot drift apart.
package agent

import (
	"cmp"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// Config is one agent's configuration, resolved: its files named by
// absolute paths, its keys loaded, its authenticator set up.
type Config struct {
	// SkillsFile is the skills YAML's path, and Skills how it loads; New
	// checks the skills' security requirements against Auth.
	SkillsFile string
	Skills     mapping.Options
	// Auth authenticates callers; nil: every caller is anonymous, and no
	// skill may declare security. Server.Auth, when nil, is Auth.
	Auth *authn.Authenticator
	// Unchecked loads the skills whatever schemes their security names,
	// and lists no skill's security on the cards: for a tool that serves a
	// skills file without the configuration that declares its schemes
	// (the dry run, whose Server.Auth admits every caller).
	Unchecked bool
	// Card is the public card's configuration but for its skills and its
	// security, which New takes from the skills file and Auth.
	Card cardgen.Config
	// CardOptions make the documents of the cards: shape, max age, signer.
	CardOptions []cardgen.Option
	// Extended, when set, serves the extended card to authenticated
	// callers. Without it, no skill may be extended: true.
	Extended *ExtendedCard
	// Resource, when set, is the protected resource whose OAuth 2.0
	// metadata (RFC 9728) is served when a scheme of Auth takes bearer
	// tokens: the MCP endpoint.
	Resource *Resource
	// Acquire, when set, is called once the skills and the cards are
	// built, so that nothing is taken for a configuration that cannot
	// load: it gives the server what outlives a configuration, its task
	// manager and push sender.
	Acquire func(*server.Config) error
	// Server is the rest of the server's configuration. New sets its
	// Skills and Card, and its ExtendedCard and ResourceMetadata when
	// Extended and Resource are set.
	Server server.Config
}

// ExtendedCard is what the extended card says differently from the public
// one, besides listing every skill.
type ExtendedCard struct {
	// Description and DocumentationURL replace the public card's when set.
	Description, DocumentationURL string
}

// Resource is a protected resource: its URL, the endpoint's path as the
// handler sees it when that differs (cardgen.ResourceMetadataURL), and how
// long clients may cache its metadata.
type Resource struct {
	URL, Endpoint string
	MaxAge        time.Duration
}

// Agent is an agent ready to serve.
type Agent struct {
	Skills  *mapping.Skills
	Handler *server.Handler
}

// New builds the agent of cfg. On an error after Acquire, what Acquire
// took is the caller's to release.
func New(cfg Config) (*Agent, error) {
	opts := cfg.Skills
	if !cfg.Unchecked {
		opts.CheckSecurity = cfg.Auth.CheckRequirements
	}
	// mapping's errors already name the file, the line and the skill.
	skills, err := mapping.Load(cfg.SkillsFile, opts)
	if err != nil {
		return nil, err
	}
	a := &Agent{Skills: skills}
	if err := a.build(&cfg); err != nil {
		skills.Close()
		return nil, err
	}
	return a, nil
}

// build makes the documents and the handler of a's skills.
func (a *Agent) build(cfg *Config) (err error) {
	srv := cfg.Server
	srv.Skills = a.Skills
	if srv.Auth == nil && cfg.Auth != nil {
		srv.Auth = cfg.Auth
	}
	public := a.cardConfig(cfg, false)
	if srv.Card, err = document(public, cfg.CardOptions, "agent card"); err != nil {
		return err
	}
	if e := cfg.Extended; e != nil {
		ext := a.cardConfig(cfg, true)
		ext.Description = cmp.Or(e.Description, ext.Description)
		ext.DocumentationURL = cmp.Or(e.DocumentationURL, ext.DocumentationURL)
		if srv.ExtendedCard, err = document(ext, cfg.CardOptions, "extended agent card"); err != nil {
			return err
		}
	} else if sk := a.extendedSkill(); sk != nil {
		return fmt.Errorf("skills file %s: skill %q is extended: true, but no extended card is configured (extended_card)",
			cfg.SkillsFile, sk.ID)
	}
	if cfg.Resource != nil {
		if srv.ResourceMetadata, err = a.resourceMetadata(cfg); err != nil {
			return err
		}
	}
	if cfg.Acquire != nil {
		if err := cfg.Acquire(&srv); err != nil {
			return err
		}
	}
	if a.Handler, err = server.New(srv); err != nil {
		return fmt.Errorf("setting up the A2A server: %w", err)
	}
	return nil
}

// cardConfig is a card's configuration: cfg.Card with the skills (those
// of the extended card too, when extended) and Auth's schemes and
// requirement exactly as they are checked.
func (a *Agent) cardConfig(cfg *Config, extended bool) cardgen.Config {
	card := cfg.Card
	card.Skills, card.SkillArguments = nil, nil
	for _, sk := range a.Skills.All() {
		if extended || !sk.Extended {
			skill := sk.AgentSkill()
			if cfg.Unchecked {
				skill.SecurityRequirements = nil
			}
			card.AddSkill(skill, sk.ArgumentSchema())
		}
	}
	card.SecuritySchemes = cfg.Auth.CardSchemes()
	card.Security = cfg.Auth.CardRequirements()
	card.ExtendedCard = cfg.Extended != nil
	return card
}

// extendedSkill is a skill for the extended card only, if there is one.
func (a *Agent) extendedSkill() *mapping.Skill {
	for _, sk := range a.Skills.All() {
		if sk.Extended {
			return sk
		}
	}
	return nil
}

// document builds and encodes (and signs, with a signer among opts) the
// card of cfg.
func document(cfg cardgen.Config, opts []cardgen.Option, what string) (*cardgen.Document, error) {
	card, err := cardgen.Build(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the %s: %w", what, err)
	}
	doc, err := cardgen.NewDocument(card, opts...)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s: %w", what, err)
	}
	return doc, nil
}

// resourceMetadata is the protected resource metadata to serve: nil
// without a resource, or when no scheme takes bearer tokens. It names the
// authorization servers of the token schemes and the scopes that the
// agent-wide and the skills' requirements ask of them.
func (a *Agent) resourceMetadata(cfg *Config) (*cardgen.ResourceMetadata, error) {
	r := cfg.Resource
	if !cfg.Auth.TakesTokens() {
		return nil, nil
	}
	reqs := cfg.Auth.CardRequirements()
	for _, sk := range a.Skills.All() {
		reqs = append(reqs, sk.SecurityRequirements...)
	}
	servers := cfg.Auth.AuthorizationServers()
	if len(servers) == 0 && cfg.Server.Logger != nil {
		cfg.Server.Logger.Warn("no token scheme names its authorization server (jwt issuer, openid_connect, oauth2 metadata_url): "+
			"the protected resource metadata lists none, and MCP clients cannot discover where to get a token",
			zap.String("resource", r.URL))
	}
	m, err := cardgen.NewResourceMetadata(cardgen.ProtectedResource{
		Resource:               r.URL,
		AuthorizationServers:   servers,
		ScopesSupported:        cfg.Auth.TokenScopes(reqs),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           cfg.Card.Name,
		ResourceDocumentation:  cfg.Card.DocumentationURL,
	}, r.Endpoint, r.MaxAge)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	return m, nil
}
