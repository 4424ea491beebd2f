package server_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/authn"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// An anonymous caller of an agent whose every skill is on the extended card
// has no skill to choose from: its message is rejected, saying so.
func TestAnonymousCallerWithNoSkillAvailable(t *testing.T) {
	auth, err := authn.New(authn.Config{
		Schemes: map[string]*authn.Scheme{"key": {Type: authn.TypeAPIKey, In: "header", Name: "X-API-Key",
			Keys: []authn.APIKey{{Key: aliceKey, Subject: "alice"}}}},
		Require: []a2a.SecurityRequirement{{}, {"key": nil}},
	}, authn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auth.Close)
	skills, err := mapping.Parse("s.yaml", []byte(`upstream:
  url: http://127.0.0.1:1
skills:
  - id: secret
    description: on the extended card only
    extended: true
    request: {path: /secret}
`), mapping.Options{CheckSecurity: auth.CheckRequirements})
	if err != nil {
		t.Fatal(err)
	}
	card, err := cardgen.Build(cardgen.Config{Name: "A", Description: "d", Version: "1", URL: "http://x/",
		SecuritySchemes: auth.CardSchemes(), Security: auth.CardRequirements(), ExtendedCard: true})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)
	h, err := server.New(server.Config{Skills: skills, Tasks: manager, Card: doc, ExtendedCard: doc, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	for _, named := range []string{"nope", "other"} {
		msg := message("1.0", named, map[string]any{})
		r := httptest.NewRequest("POST", "/", strings.NewReader(rpcBody("SendMessage", map[string]any{"message": msg})))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("A2A-Version", "1.0")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var ans rpcAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
			t.Fatalf("skill %q: answer %d is not JSON-RPC: %s", named, w.Code, w.Body)
		}
		task := taskOf("1.0", ans.Result)
		if stateOf(task) != "TASK_STATE_REJECTED" || !strings.Contains(w.Body.String(), "no skill is available") {
			t.Errorf("skill %q: answer %s, want a rejected task saying no skill is available", named, w.Body)
		}
	}
}
