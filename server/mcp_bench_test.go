package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// BenchmarkMCPToolsCall is one tools/call at 2026-07-28, the counterpart
// of BenchmarkSendMessage: the same skill, upstream answer and task,
// through the SDK's stateless handler.
func BenchmarkMCPToolsCall(b *testing.B) {
	h := benchHandler(b, func(cfg *server.Config) { cfg.MCP = &server.MCPConfig{} })
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
	w := &discardWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		reader.Reset(body)
		req.Body = io.NopCloser(reader)
		clear(w.header)
		h.ServeHTTP(w, req)
		if w.status != 0 && w.status != http.StatusOK { // the SDK writes an SSE answer without WriteHeader
			b.Fatalf("status %d", w.status)
		}
	}
}

// benchHandler is a handler of benchSkills, its upstream answered in
// memory, with the configuration tune makes.
func benchHandler(b *testing.B, tune func(*server.Config)) *server.Handler {
	skills, err := mapping.Parse("bench.yaml", []byte(benchSkills), mapping.Options{Transport: memoryUpstream{}})
	if err != nil {
		b.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{MaxTasks: 1000})
	b.Cleanup(manager.Close)
	card, err := cardgen.Build(cardgen.Config{Name: "Bench", Description: "Bench", Version: "1", URL: "http://localhost/"})
	if err != nil {
		b.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		b.Fatal(err)
	}
	cfg := server.Config{Skills: skills, Tasks: manager, Card: doc}
	tune(&cfg)
	h, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return h
}
