package agent_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

const skillsYAML = `
upstream: {url: "http://127.0.0.1:1"}
skills:
  - id: open
    description: For everyone
    request: {path: /open}
  - id: admin_report
    description: The admins' report
    security:
      - jwt: [admin]
    request: {path: /admin}
  - id: internal_stats
    description: Internal statistics, for known callers
    extended: true
    request: {path: /internal}
`

const resource = "https://agent.example/mcp"

// config is an agent with a bearer scheme, an extended card and an MCP
// resource, its skills file written for t.
func config(t *testing.T) agent.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skills.yaml")
	if err := os.WriteFile(path, []byte(skillsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := authn.New(authn.Config{Schemes: map[string]*authn.Scheme{"jwt": {Type: authn.TypeHTTP, HTTPScheme: "bearer",
		JWT: &authn.JWTConfig{HMACSecret: strings.Repeat("s", 32), Issuer: "https://issuer.example", Audiences: []string{resource}}}}},
		authn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	return agent.Config{
		SkillsFile: path,
		Auth:       auth,
		Card:       cardgen.Config{Name: "Staff", Description: "For the staff", Version: "1.0.0", URL: "https://agent.example/"},
		Extended:   &agent.ExtendedCard{Description: "For known callers"},
		Resource:   &agent.Resource{URL: resource, MaxAge: cardgen.DefaultMaxAge},
		Acquire: func(cfg *server.Config) error {
			cfg.Tasks = tasks.NewManager(tasks.Options{})
			t.Cleanup(cfg.Tasks.Close)
			return nil
		},
	}
}

// get answers path of h as a JSON object.
func get(t *testing.T, h http.Handler, path string) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var v map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return v
}

func skillIDs(card map[string]any) []string {
	var ids []string
	for _, s := range card["skills"].([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

// One configuration gives the card the skills and the schemes that are
// checked, the extended skills to the extended card alone, and the
// protected resource's metadata with the scopes the skills ask.
func TestNewServesWhatTheConfigurationSays(t *testing.T) {
	a, err := agent.New(config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Skills.Close)
	card := get(t, a.Handler, server.CardPath)
	if ids := skillIDs(card); !slices.Equal(ids, []string{"open", "admin_report"}) {
		t.Errorf("the public card lists %v", ids)
	}
	if _, ok := card["securitySchemes"].(map[string]any)["jwt"]; !ok {
		t.Errorf("the card does not declare the scheme that is checked: %v", card["securitySchemes"])
	}
	if caps, _ := card["capabilities"].(map[string]any); caps["extendedAgentCard"] != true {
		t.Errorf("the card does not announce its extended card: %v", caps)
	}
	meta := get(t, a.Handler, "/.well-known/oauth-protected-resource/mcp")
	if meta["resource"] != resource || !slices.Contains(meta["scopes_supported"].([]any), any("admin")) {
		t.Errorf("the protected resource metadata: %v", meta)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*agent.Config)
		want string
	}{
		{"an extended skill without an extended card", func(c *agent.Config) { c.Extended = nil },
			`skill "internal_stats" is extended: true, but no extended card is configured`},
		{"a skill's scheme nobody declared", func(c *agent.Config) { c.Auth = nil }, "admin_report"},
		{"a card without a name", func(c *agent.Config) { c.Card.Name = "" }, "building the agent card"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			acquired := false
			cfg.Acquire = func(*server.Config) error { acquired = true; return nil }
			tc.edit(&cfg)
			if _, err := agent.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if acquired {
				t.Error("a configuration that cannot load took what outlives it")
			}
		})
	}
}

// Unchecked serves a skills file without the configuration that declares
// its schemes, as the dry run does: the skills load, and no card names a
// scheme it does not declare.
func TestNewUnchecked(t *testing.T) {
	cfg := config(t)
	cfg.Auth, cfg.Resource, cfg.Unchecked = nil, nil, true
	cfg.Server.Auth = admitAll{}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Skills.Close)
	for _, s := range get(t, a.Handler, server.CardPath)["skills"].([]any) {
		if sec := s.(map[string]any)["securityRequirements"]; sec != nil {
			t.Errorf("an unchecked skill's security is on the card: %v", s)
		}
	}
}

// admitAll admits every caller to every skill.
type admitAll struct{}

func (admitAll) Authenticate(*http.Request) (*authn.Identity, *authn.Failure) {
	return &authn.Identity{}, nil
}

func (admitAll) CompileRequirements([]a2a.SecurityRequirement) (*authn.Requirements, error) {
	return nil, nil
}

func (admitAll) Authorize(*authn.Identity, *authn.Requirements) *authn.Failure { return nil }

func (admitAll) Challenge() *authn.Failure { return nil }
