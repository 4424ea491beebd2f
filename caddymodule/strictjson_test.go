package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Through a real Caddy: a member whose name only case folding makes a known
// one (METHOD beside method, "part\u017f" with a long s beside parts) is
// refused with the spec's error, over JSON-RPC in both versions and over
// HTTP+JSON, instead of running another request than the one a
// case-sensitive parser in front of the agent sees.
func TestIntegrationStrictMemberNames(t *testing.T) {
	a := startAgent(t)
	a.loadWith(a.publicURL(), "REST", "rest /rest")

	const msg10 = `"messageId":"m","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]`
	for _, tc := range []struct {
		version, body string
		code          int
		field         string // the BadRequest field of a 1.0 -32602
	}{
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"GetTask","METHOD":"ListTasks","params":{"id":"t"}}`, -32600, ""},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","METHOD":"tasks/cancel","params":{"id":"t"}}`, -32600, ""},
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{` + msg10 +
			`,"part\u017f":[{"data":{"city":"Oslo"}}]}}}`, -32602, "params.message.part\u017f"},
		{"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user",` +
			`"metadata":{"skill":"weather"},"parts":[{"kind":"data","data":{"city":"Paris"}}],"Metadata":{"skill":"other"}}}}`, -32602, ""},
	} {
		resp := a.post(tc.version, tc.body)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
				Data []struct {
					FieldViolations []struct{ Field string } `json:"fieldViolations"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, raw)
		}
		if answer.Error == nil || answer.Error.Code != tc.code || answer.Result != nil || string(answer.ID) != "1" {
			t.Errorf("%s:\n%s, want error %d with id 1", tc.body, raw, tc.code)
			continue
		}
		if tc.field != "" && !strings.Contains(string(raw), `"fieldViolations":[{"field":"`+tc.field+`"`) {
			t.Errorf("%s:\n%s, want a BadRequest naming %s", tc.body, raw, tc.field)
		}
	}

	base := fmt.Sprintf("http://localhost:%d/rest", a.port)
	for _, tc := range []struct {
		version, body, field string
	}{
		{"1.0", `{"message":{` + msg10 + `,"part\u017f":[{"data":{"city":"Oslo"}}]}}`, "message.part\u017f"},
		{"0.3", `{"message":{"messageId":"m","role":"user","metadata":{"skill":"weather"},` +
			`"parts":[{"kind":"data","data":{"city":"Paris"},"DATA":{"city":"Oslo"}}]}}`, "message.parts[0].DATA"},
	} {
		req, err := http.NewRequest(http.MethodPost, base+"/message:send", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("A2A-Version", tc.version)
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Error struct {
				Code    int    `json:"code"`
				Status  string `json:"status"`
				Details []struct {
					Type            string                   `json:"@type"`
					FieldViolations []struct{ Field string } `json:"fieldViolations"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil || resp.StatusCode != 400 ||
			answer.Error.Code != 400 || answer.Error.Status != "INVALID_ARGUMENT" {
			t.Errorf("%s %s: %d %s, want a 400 INVALID_ARGUMENT", tc.version, tc.body, resp.StatusCode, raw)
			continue
		}
		named := false
		for _, d := range answer.Error.Details {
			named = named || d.Type == "type.googleapis.com/google.rpc.BadRequest" &&
				len(d.FieldViolations) == 1 && d.FieldViolations[0].Field == tc.field
		}
		if !named {
			t.Errorf("%s %s: %s, want a BadRequest naming %s", tc.version, tc.body, raw, tc.field)
		}
	}
}
