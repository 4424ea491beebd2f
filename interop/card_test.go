package interop_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// demoSkills are the skill ids of examples/skills.yaml the suite relies on.
var demoSkills = []string{"weather", "slow", "fail", "echo"}

// TestAgentCard resolves the card the way each SDK client does and creates
// a client from it, so that the interface the card advertises is the one
// the client then talks to.
func TestAgentCard(t *testing.T) {
	t.Run("1.0", func(t *testing.T) {
		hc := recordedHTTPClient(t)
		ctx := ctxTimeout(t, 30*time.Second)
		card, err := (&agentcard.Resolver{Client: hc}).Resolve(ctx, agent.URL)
		if err != nil {
			t.Fatalf("resolving the card: %v", err)
		}
		if card.Name == "" || (agent.Name != "" && card.Name != agent.Name) || card.Description == "" || card.Version == "" {
			t.Errorf("card name/description/version = %q/%q/%q, want %q, a description and a version", card.Name, card.Description, card.Version, agent.Name)
		}
		if !card.Capabilities.Streaming {
			t.Errorf("card capabilities.streaming is false; the agent streams")
		}
		if card.Capabilities.PushNotifications {
			t.Errorf("card capabilities.pushNotifications is true; push is not supported")
		}
		requireInterface(t, card, a2a.Version)
		requireSkills(t, card)

		// A default SDK client picks the 1.0 JSON-RPC interface and works.
		c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
		if err != nil {
			t.Fatalf("creating a client from the card: %v", err)
		}
		defer c.Destroy()
		task := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task state %s, want completed: %s", task.Status.State, jsonString(task))
		}
	})

	// A client that speaks only HTTP+JSON finds the binding on the card,
	// at its URL, and works there.
	t.Run("1.0 HTTP+JSON", func(t *testing.T) {
		if agent.RESTURL == "" {
			t.Skip("the agent's HTTP+JSON URL is not known (INTEROP_REST_URL)")
		}
		hc := recordedHTTPClient(t)
		ctx := ctxTimeout(t, 30*time.Second)
		card, err := (&agentcard.Resolver{Client: hc}).Resolve(ctx, agent.URL)
		if err != nil {
			t.Fatalf("resolving the card: %v", err)
		}
		c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(), a2aclient.WithRESTTransport(hc))
		if err != nil {
			t.Fatalf("creating a REST-only client from the card: %v; supportedInterfaces: %s", err, jsonString(card.SupportedInterfaces))
		}
		defer c.Destroy()
		task := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task state %s, want completed: %s", task.Status.State, jsonString(task))
		}
		got, err := (&http.Client{}).Get(agent.RESTURL + "/tasks/" + string(task.ID) + "?A2A-Version=1.0")
		if err != nil {
			t.Fatal(err)
		}
		got.Body.Close()
		if got.StatusCode != http.StatusOK {
			t.Errorf("the task is not at the card's HTTP+JSON URL %s: HTTP %d", agent.RESTURL, got.StatusCode)
		}
	})

	t.Run("0.3", func(t *testing.T) {
		hc := recordedHTTPClient(t)
		ctx := ctxTimeout(t, 30*time.Second)
		resolver := &agentcard.Resolver{Client: hc, CardParser: a2av0.NewAgentCardParser()}
		card, err := resolver.Resolve(ctx, agent.URL)
		if err != nil {
			t.Fatalf("resolving the card with the 0.3 parser: %v", err)
		}
		requireSkills(t, card)
		// The SDK's 0.3 client selects an interface by its protocolVersion:
		// a card that also serves 0.3 lists a 0.3 JSON-RPC interface (the
		// SDK's own dual-version card producer requires one).
		requireInterface(t, card, a2av0.Version)

		c, err := a2aclient.NewFromCard(ctx, card,
			a2aclient.WithDefaultsDisabled(),
			a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}))
		if err != nil {
			t.Fatalf("creating a 0.3-only client from the card: %v", err)
		}
		defer c.Destroy()
		task := sendForTask(t, c, skillMessage("weather", map[string]any{"city": "Paris"}))
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task state %s, want completed: %s", task.Status.State, jsonString(task))
		}
	})

	// A client that speaks only 0.3 reads the card's 0.3 fields: url,
	// preferredTransport, protocolVersion, and skills with tags.
	t.Run("0.3 fields", func(t *testing.T) {
		card := getCardJSON(t, "/.well-known/agent-card.json")
		if got := str(card["url"]); got != agent.URL {
			t.Errorf("card url = %q, want %q", got, agent.URL)
		}
		if got := str(card["protocolVersion"]); !strings.HasPrefix(got, "0.3") {
			t.Errorf("card protocolVersion = %q, want 0.3.x", got)
		}
		if pt, ok := card["preferredTransport"]; ok && str(pt) != "JSONRPC" {
			t.Errorf("card preferredTransport = %v, want JSONRPC", pt)
		}
		for _, field := range []string{"name", "description", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"} {
			if _, ok := card[field]; !ok {
				t.Errorf("card lacks the required 0.3 field %q", field)
			}
		}
		skills, _ := card["skills"].([]any)
		for _, s := range skills {
			skill, _ := s.(map[string]any)
			for _, field := range []string{"id", "name", "description", "tags"} {
				if _, ok := skill[field]; !ok {
					t.Errorf("skill %v lacks the required field %q", skill["id"], field)
				}
			}
		}
	})

	// Agents of the 0.3 era published their card at /.well-known/agent.json.
	t.Run("legacy path", func(t *testing.T) {
		if a, b := getCardJSON(t, "/.well-known/agent.json"), getCardJSON(t, "/.well-known/agent-card.json"); jsonString(a) != jsonString(b) {
			t.Errorf("/.well-known/agent.json differs from /.well-known/agent-card.json:\n%s\n%s", jsonString(a), jsonString(b))
		}
	})
}

func requireInterface(t *testing.T, card *a2a.AgentCard, version a2a.ProtocolVersion) {
	t.Helper()
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolJSONRPC && strings.HasPrefix(string(iface.ProtocolVersion), string(version)) {
			if iface.URL != agent.URL {
				t.Errorf("the %s JSON-RPC interface has url %q, want %q", version, iface.URL, agent.URL)
			}
			return
		}
	}
	t.Fatalf("card lists no JSON-RPC interface with protocolVersion %s; supportedInterfaces: %s", version, jsonString(card.SupportedInterfaces))
}

func requireSkills(t *testing.T, card *a2a.AgentCard) {
	t.Helper()
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
		if s.Name == "" || s.Description == "" {
			t.Errorf("skill %q has no name or description", s.ID)
		}
	}
	for _, want := range demoSkills {
		if !slices.Contains(ids, want) {
			t.Errorf("card skills %v lack %q", ids, want)
		}
	}
}

func getCardJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	resp, err := recordedHTTPClient(t).Get(agent.BaseURL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("GET %s: Content-Type %q, want application/json", path, ct)
	}
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("GET %s: not a JSON object: %v", path, err)
	}
	return card
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
