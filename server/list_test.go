package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/server"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// writeSizes is a ResponseWriter that keeps the answer and the size of
// each write.
type writeSizes struct {
	*httptest.ResponseRecorder
	sizes []int
}

func (w *writeSizes) Write(b []byte) (int, error) {
	w.sizes = append(w.sizes, len(b))
	return w.ResponseRecorder.Write(b)
}

// A large ListTasks page is written as it is encoded, in pieces, and still
// reads as one valid answer.
func TestLargeListIsWrittenInPieces(t *testing.T) {
	skills, err := mapping.Parse("s.yaml", []byte(benchSkills), mapping.Options{Transport: answering(weatherBody)})
	if err != nil {
		t.Fatal(err)
	}
	manager := tasks.NewManager(tasks.Options{})
	t.Cleanup(manager.Close)
	const n, size = 20, 100 << 10
	for i := range n {
		msg := a2a.Message{MessageID: fmt.Sprint("m", i), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", size))}}
		if _, err := manager.Start("", msg, tasks.StartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	card, err := cardgen.Build(cardgen.Config{Name: "L", Description: "L", Version: "1", URL: "http://localhost/"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cardgen.NewDocument(card)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Skills: skills, Tasks: manager, Card: doc})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":100}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("A2A-Version", "1.0")
	w := &writeSizes{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(w, r)

	body := w.Body.Bytes()
	var page struct {
		Result struct {
			Tasks []json.RawMessage `json:"tasks"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &page); err != nil || len(page.Result.Tasks) != n {
		t.Fatalf("answer of %d bytes: %d tasks, err %v; want %d tasks", len(body), len(page.Result.Tasks), err, n)
	}
	if len(w.sizes) < n/2 {
		t.Errorf("%d writes for a %d-byte answer, want it written in pieces", len(w.sizes), len(body))
	}
	for _, s := range w.sizes {
		if s > size+(128<<10) {
			t.Errorf("a write of %d bytes: the answer was built whole", s)
		}
	}
	if !bytes.HasSuffix(body, []byte("}")) {
		t.Error("the answer does not end")
	}
}
