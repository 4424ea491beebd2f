package jsonx_test

import (
	"encoding/json"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// BenchmarkDecodeEnvelope reads a plain MCP tools/call (the body of
// server/mcp's BenchmarkMCPToolsCall): the strict check then
// encoding/json, and with the Decoder, which does the check and the
// decoding in one pass.
func BenchmarkDecodeEnvelope(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	checkThen := func(parse func([]byte, *envelope) error) func([]byte, *envelope) error {
		return func(body []byte, env *envelope) error {
			if _, _, err := jsonx.Check(body, envelopeMembers, rules); err != nil {
				return err
			}
			return parse(body, env)
		}
	}
	for _, tc := range []struct {
		name   string
		decode func([]byte, *envelope) error
	}{
		{"Check+encoding/json", checkThen(func(body []byte, env *envelope) error { return json.Unmarshal(body, env) })},
		{"Decoder", decoder.Decode},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var env envelope
				if err := tc.decode(body, &env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
