package mapping_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

// seen is what an upstream received.
type seen struct {
	Method, RequestURI string
	Header             http.Header
	Body               string
}

// recorder is an upstream that reports every request it gets and answers
// with answer (200 {"ok":true} when nil).
func recorder(t *testing.T, answer http.HandlerFunc) (*httptest.Server, chan seen) {
	t.Helper()
	ch := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- seen{Method: r.Method, RequestURI: r.RequestURI, Header: r.Header.Clone(), Body: string(body)}
		if answer != nil {
			answer(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// load parses src with the upstream URL set to upstreamURL.
func load(t *testing.T, src, upstreamURL string, opts mapping.Options) *mapping.Skills {
	t.Helper()
	opts.UpstreamURL = upstreamURL
	s, err := mapping.Parse("t.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// message builds a user message for skill id from a data object and text.
func message(id string, data map[string]any, text string) *a2a.Message {
	m := &a2a.Message{MessageID: "m1", Role: a2a.RoleUser}
	if id != "" {
		m.Metadata = map[string]any{"skill": id}
	}
	if data != nil {
		m.Parts = append(m.Parts, a2a.DataPart(data))
	}
	if text != "" {
		m.Parts = append(m.Parts, a2a.TextPart(text))
	}
	return m
}

// runSkill selects the skill msg names and runs it.
func runSkill(t *testing.T, s *mapping.Skills, msg *a2a.Message) mapping.Outcome {
	t.Helper()
	sk, serr := s.Select(msg)
	if serr != nil {
		t.Fatal(serr)
	}
	return sk.Run(context.Background(), mapping.Call{Message: msg, TaskID: "task-1", ContextID: "ctx-1"}, nil)
}

// messageText is the text of an outcome's message.
func messageText(out mapping.Outcome) string {
	if out.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range out.Message.Parts {
		if p.Kind == a2a.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// noRequest fails if the upstream got a request.
func noRequest(t *testing.T, ch chan seen) {
	t.Helper()
	select {
	case r := <-ch:
		t.Errorf("the upstream got %s %s; want no request", r.Method, r.RequestURI)
	default:
	}
}

// received returns the request the upstream got (Run has returned, so it
// has been recorded).
func received(t *testing.T, ch chan seen) seen {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("the upstream got no request")
		return seen{}
	}
}
