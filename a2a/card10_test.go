package a2a_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// The union card, seen as the 1.0 message: the 0.3 members and the
// signatures go, the 1.0 members stay.
func TestAgentCard10(t *testing.T) {
	union, err := a2a.MarshalAgentCard(fullCard())
	if err != nil {
		t.Fatal(err)
	}
	card := decodeJSONObject(t, union)
	got, err := a2a.AgentCard10(card)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"capabilities", "defaultInputModes", "defaultOutputModes", "description", "documentationUrl", "iconUrl",
		"name", "provider", "securityRequirements", "securitySchemes", "skills", "supportedInterfaces", "version"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("members %q, want %q", keys, want)
	}
	if _, ok := got["skills"].([]any)[0].(map[string]any)["security"]; ok {
		t.Error("a skill kept its 0.3 security")
	}
	for name, s := range got["securitySchemes"].(map[string]any) {
		if len(s.(map[string]any)) != 1 {
			t.Errorf("scheme %s keeps more than its 1.0 wrapper: %v", name, s)
		}
	}
	if _, ok := card["signatures"]; !ok {
		t.Error("the card given was changed")
	}
}

func TestAgentCard10Errors(t *testing.T) {
	for card, want := range map[string]string{
		`{"icon_url":"https://a"}`:         `a2a: agent card: icon_url: "icon_url" is the proto name of AgentCard.iconUrl`,
		`{"capabilities":{"streaming":1}}`: "a2a: agent card: capabilities.streaming: want a boolean, got a number",
		`{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"implicit":{},"password":{}}}}}}`: `securitySchemes["o"].oauth2SecurityScheme.flows: OAuthFlows sets 2 members of its oneof`,
	} {
		if _, err := a2a.AgentCard10(decodeJSONObject(t, []byte(card))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", card, err, want)
		}
	}
}

func decodeJSONObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}
