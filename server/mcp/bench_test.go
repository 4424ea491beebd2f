package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// BenchmarkMCPToolsCall is one tools/call at 2026-07-28, the counterpart
// of BenchmarkSendMessage: the same skill, upstream answer and task, a
// plain call, which the binding answers itself (mcpdirect.go).
func BenchmarkMCPToolsCall(b *testing.B) {
	h := servertest.MemoryHandler(b, "bench.yaml", servertest.BenchSkills, servertest.Answering(servertest.WeatherBody), func(cfg *server.Config) { withMCP(cfg) })
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	for name, value := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "weather"} {
		req.Header.Set(name, value)
	}
	rec := httptest.NewRecorder()
	req.Body = io.NopCloser(bytes.NewReader(body))
	h.ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), "partly cloudy") || strings.Contains(rec.Body.String(), `"isError":true`) {
		b.Fatalf("the benchmarked call does not complete with the upstream's data: %d %s", rec.Code, rec.Body)
	}
	reader := bytes.NewReader(body)
	w := &servertest.DiscardWriter{HeaderMap: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.HeaderMap)
		h.ServeHTTP(w, req)
		if w.Status != 0 && w.Status != http.StatusOK { // the SDK writes an SSE answer without WriteHeader
			b.Fatalf("status %d", w.Status)
		}
	}
}
