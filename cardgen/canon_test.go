package cardgen_test

import (
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name string
		card string
		// want is the payload per form; a form not listed is not checked.
		want map[cardgen.Form]string
	}{
		{
			// The example of spec 1.0 §8.4.1, verbatim.
			name: "spec example",
			card: `{
				"name": "Example Agent",
				"description": "",
				"capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
				"skills": []
			}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec:   `{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`,
				cardgen.FormPruned: `{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}`,
				cardgen.FormServed: `{"capabilities":{"extensions":[],"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}`,
			},
		},
		{
			name: "signatures excluded, 0.3 members only in the served form",
			card: `{"name":"A","url":"https://a.example/","protocolVersion":"0.3.0","preferredTransport":"JSONRPC",
				"security":[{"k":[]}],"signatures":[{"protected":"x","signature":"y"}],
				"securitySchemes":{"k":{"type":"apiKey","in":"header","name":"K","apiKeySecurityScheme":{"location":"header","name":"K"}}},
				"skills":[{"id":"s","name":"S","description":"D","tags":["t"],"security":[{"k":[]}]}]}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec:   `{"name":"A","securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"K"}}},"skills":[{"description":"D","id":"s","name":"S","tags":["t"]}]}`,
				cardgen.FormServed: `{"name":"A","preferredTransport":"JSONRPC","protocolVersion":"0.3.0","security":[{"k":[]}],"securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"K"},"in":"header","name":"K","type":"apiKey"}},"skills":[{"description":"D","id":"s","name":"S","security":[{"k":[]}],"tags":["t"]}],"url":"https://a.example/"}`,
			},
		},
		{
			name: "defaults of plain fields dropped, optional and REQUIRED kept",
			card: `{"name":"","documentationUrl":"","iconUrl":null,"defaultInputModes":[],
				"supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","tenant":"","protocolVersion":"1.0"}],
				"capabilities":{"extendedAgentCard":false,"extensions":[{"uri":"","required":false,"params":{"a":"","b":[],"c":{}}}]}}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec:   `{"capabilities":{"extendedAgentCard":false,"extensions":[{"params":{"a":"","b":[],"c":{}}}]},"defaultInputModes":[],"documentationUrl":"","name":"","supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"u"}]}`,
				cardgen.FormPruned: `{"capabilities":{"extendedAgentCard":false},"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"u"}]}`,
			},
		},
		{
			name: "requirements: an empty scope list is kept by the spec form, pruned with its requirement",
			card: `{"securityRequirements":[{"schemes":{"key":{}}},{"schemes":{"oauth":{"list":["read"]}}}]}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec:   `{"securityRequirements":[{"schemes":{"key":{}}},{"schemes":{"oauth":{"list":["read"]}}}]}`,
				cardgen.FormPruned: `{"securityRequirements":[{"schemes":{"oauth":{"list":["read"]}}}]}`,
			},
		},
		{
			name: "flows keep the members their type defines",
			card: `{"securitySchemes":{"o":{"type":"oauth2","oauth2SecurityScheme":{"flows":{
				"clientCredentials":{"authorizationUrl":"https://a/authorize","tokenUrl":"https://a/token","scopes":{},"pkceRequired":true}}}}}}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec:   `{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"scopes":{},"tokenUrl":"https://a/token"}}}}}}`,
				cardgen.FormPruned: `{"securitySchemes":{"o":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"https://a/token"}}}}}}`,
			},
		},
		{
			name: "numbers and strings per RFC 8785",
			card: `{"name":"\u00e9\u2028<&>","capabilities":{"extensions":[{"uri":"x","params":{"n":1.50,"big":1e21,"small":0.0000001,"z":-0}}]}}`,
			want: map[cardgen.Form]string{
				cardgen.FormSpec: "{\"capabilities\":{\"extensions\":[{\"params\":{\"big\":1e+21,\"n\":1.5,\"small\":1e-7,\"z\":0},\"uri\":\"x\"}]},\"name\":\"é\u2028<&>\"}",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for form, want := range tt.want {
				got, err := cardgen.Canonicalize([]byte(tt.card), form)
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				if string(got) != want {
					t.Errorf("%s:\n got %s\nwant %s", form, got, want)
				}
			}
		})
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	tests := []struct {
		name, card, want string
	}{
		{"not JSON", `{"name":`, "the card is not a JSON object"},
		{"not an object", `[1]`, "the card is not a JSON object"},
		{"trailing data", `{} {}`, "data after its JSON object"},
		{"proto name", `{"default_input_modes":["text/plain"]}`, `default_input_modes: "default_input_modes" is the proto name of AgentCard.defaultInputModes`},
		{"nested proto name", `{"skills":[{"id":"s","input_modes":[]}]}`, `skills[0].input_modes: "input_modes" is the proto name of AgentSkill.inputModes`},
		{"two members of a oneof", `{"securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"K"},"mtlsSecurityScheme":{}}}}`,
			`securitySchemes["k"]: SecurityScheme sets 2 members of its oneof`},
		{"wrong type", `{"name":1}`, "name: want a string, got a number"},
		{"wrong element type", `{"skills":[{"tags":["a",true]}]}`, "skills[0].tags[1]: want a string, got a boolean"},
		{"wrong optional type", `{"capabilities":{"streaming":"yes"}}`, "capabilities.streaming: want a boolean, got a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cardgen.Canonicalize([]byte(tt.card), cardgen.FormSpec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := cardgen.Canonicalize([]byte(`{}`), "raw"); err == nil {
		t.Error("an unknown form canonicalized")
	}
}

func TestParseForms(t *testing.T) {
	got, err := cardgen.ParseForms([]string{"served", "spec"})
	if err != nil || len(got) != 2 || got[0] != cardgen.FormServed || got[1] != cardgen.FormSpec {
		t.Errorf("ParseForms: %q, %v", got, err)
	}
	for _, bad := range [][]string{{"spec", "spec"}, {"full"}} {
		if _, err := cardgen.ParseForms(bad); err == nil {
			t.Errorf("ParseForms(%q) succeeded", bad)
		}
	}
}
