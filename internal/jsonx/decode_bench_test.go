package jsonx_test

import (
	"encoding/json"
	"testing"

	segmentjson "github.com/segmentio/encoding/json"

	"github.com/caddy-a2a/caddy-a2a/internal/jsonx"
)

// BenchmarkDecodeEnvelope reads a plain MCP tools/call (the body of
// server's BenchmarkMCPToolsCall) as the MCP endpoint read it before the
// Decoder: the strict check, then segmentio's parser with names matched
// exactly; the strict check then encoding/json; and with the Decoder,
// which does the check and the decoding in one pass. (The segmentio
// sub-benchmark goes when the module drops segmentio.)
func BenchmarkDecodeEnvelope(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	b.Run("Check+segmentio", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env envelope
			if _, _, err := jsonx.Check(body, envelopeMembers, rules); err != nil {
				b.Fatal(err)
			}
			if _, err := segmentjson.Parse(body, &env, segmentjson.DontMatchCaseInsensitiveStructFields); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Check+encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env envelope
			if _, _, err := jsonx.Check(body, envelopeMembers, rules); err != nil {
				b.Fatal(err)
			}
			if err := json.Unmarshal(body, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var env envelope
			if err := decoder.Decode(body, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}
