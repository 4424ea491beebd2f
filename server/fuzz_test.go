package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// FuzzHandler sends arbitrary requests through the whole handler, the
// upstream answered in memory: whatever comes in, the answer is a JSON-RPC
// answer in valid UTF-8 JSON (or SSE events of them), with a status the
// transport defines, and never a panic.
func FuzzHandler(f *testing.F) {
	skills, err := mapping.Parse("fuzz.yaml", []byte(benchSkills), mapping.Options{Transport: answering(weatherBody)})
	if err != nil {
		f.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{MaxTasks: 1000})
	f.Cleanup(manager.Close)
	card, err := cardgen.Build(cardgen.Config{Name: "Fuzz", Description: "Fuzz", Version: "1", URL: "http://localhost/"})
	if err != nil {
		f.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		f.Fatal(err)
	}
	h, err := server.New(server.Config{Skills: skills, Tasks: manager, Card: doc, MaxRequestBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct{ version, body string }{
		{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}`},
		{"", `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`},
		{"1.0", `{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","metadata":{"skill":"user"},"parts":[{"data":{"id":1}}]}}}`},
		{"", `{"jsonrpc":"2.0","id":3,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","metadata":{"skill":"user"},"parts":[{"kind":"data","data":{"id":1}}]}}}`},
		{"1.0", `{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"pageSize":2}}`},
		{"1.0", `{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"x","historyLength":1}}`},
		{"", `{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"id":"x"}}`},
		{"1.0", `{"jsonrpc":"2.0","id":[1],"method":"GetTask"}`},
		{"9.9", `{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{}}`},
		{"1.0", `[{"jsonrpc":"2.0"}]`},
	} {
		f.Add(seed.version, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, version string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if version != "" {
			r.Header.Set("A2A-Version", version)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d", w.Code)
		}
		answers := [][]byte{w.Body.Bytes()}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			answers = answers[:0]
			sc := bufio.NewScanner(w.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
					answers = append(answers, bytes.Clone(data))
				}
			}
			if len(answers) == 0 {
				t.Fatal("a stream with no event")
			}
		}
		for _, a := range answers {
			if !utf8.Valid(a) || !json.Valid(a) {
				t.Fatalf("answer is not valid UTF-8 JSON: %q", a)
			}
			var env struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
				Error   json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(a, &env); err != nil || env.JSONRPC != "2.0" || (env.Result == nil) == (env.Error == nil) {
				t.Fatalf("not a JSON-RPC answer: %s", a)
			}
			if id := bytes.TrimSpace(env.ID); len(id) > 0 && id[0] != '"' && id[0] != 'n' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
				t.Fatalf("answer id %s is neither a string, a number nor null", id)
			}
		}
	})
}
