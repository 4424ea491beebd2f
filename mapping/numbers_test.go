package mapping_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// An upstream's integers reach the artifact exactly, also beyond 2^53,
// while expressions still compute with the ones a float64 holds.
func TestUpstreamIntegersStayExact(t *testing.T) {
	up, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":12345678901234567890,"small":9007199254740993,"neg":-9007199254740993,"n":41,"f":0.5,"s":"12345678901234567890"}`))
	})
	s := load(t, `
skills:
  - id: get
    description: A thing.
    request: {path: /thing}
    response:
      - when: response.status == 200
        state: completed
        message: "{response.body.n + 1}"
        artifacts:
          - name: thing
            data: response.body
`, up.URL, mapping.Options{})
	out := runSkill(t, s, message("get", nil, "x"))
	if out.State != a2a.TaskStateCompleted || messageText(out) != "42" {
		t.Fatalf("outcome %s %q, want completed 42", out.State, messageText(out))
	}
	got, err := jsonx.AppendValue(nil, out.Artifacts[0].Parts[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":12345678901234567890`, `"small":9007199254740993`, `"neg":-9007199254740993`, `"n":41`, `"f":0.5`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("artifact %s lacks %s", got, want)
		}
	}
}

// An integer argument beyond 2^53 reaches the request exactly while it fits
// an int: from data still in its raw JSON, as a tool's arguments arrive
// over MCP, and from data decoded as a request's is (json.Number).
func TestIntegerArgumentsStayExact(t *testing.T) {
	up, seen := recorder(t, nil)
	s := load(t, `
skills:
  - id: get
    description: A thing.
    arguments:
      id: {type: integer, required: true, description: The thing's id.}
    request: {path: "/things/{args.id}"}
`, up.URL, mapping.Options{})
	for _, data := range []any{json.RawMessage(`{"id":9007199254740993}`), map[string]any{"id": json.Number("9007199254740993")}} {
		msg := message("get", nil, "")
		msg.Parts = []a2a.Part{{Kind: a2a.PartData, Data: data}}
		if out := runSkill(t, s, msg); out.State != a2a.TaskStateCompleted {
			t.Fatalf("%T: outcome %s: %s", data, out.State, messageText(out))
		}
		if got := (<-seen).RequestURI; got != "/things/9007199254740993" {
			t.Errorf("%T: the upstream was asked for %s", data, got)
		}
	}
}
