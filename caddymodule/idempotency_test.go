package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// idempotentOrders is an upstream that records the Idempotency-Key of each
// POST /orders, answers 503 to the first two attempts of each key, then 422
// for a quantity under 1 and 201 otherwise.
type idempotentOrders struct {
	mu   sync.Mutex
	keys []string // of each request, in order
	seen map[string]int
}

func (o *idempotentOrders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	o.mu.Lock()
	o.keys = append(o.keys, key)
	o.seen[key]++
	n := o.seen[key]
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case n <= 2:
		w.WriteHeader(http.StatusServiceUnavailable)
	case strings.Contains(string(body), `"quantity":0`):
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"fields": {"quantity": "must be at least 1"}}`)
	default:
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"status": "placed"}`)
	}
}

// sent returns the keys received so far, and forgets them.
func (o *idempotentOrders) sent() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := o.keys
	o.keys = nil
	return k
}

const idempotentSkills = `upstream:
  url: http://ignored
skills:
  - id: order
    description: Places an order.
    arguments:
      item: {type: string, required: true}
      quantity: {type: integer, required: true}
    client_errors: input-required
    request:
      method: POST
      path: /orders
      body: args
      idempotency_key: true
      retry: {attempts: 3, backoff: 1ms}
`

// A skill with idempotency_key sends the header to its upstream; a retried
// POST carries the same key each time, a later turn of the task another,
// and the caller's own Idempotency-Key never reaches the upstream.
func TestIntegrationIdempotencyKey(t *testing.T) {
	up := &idempotentOrders{seen: map[string]int{}}
	a := startAgentWith(t, idempotentSkills, up)
	send := func(message string) *task {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, a.publicURL(), strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+message+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Idempotency-Key", `"the caller's"`)
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r rpcResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil {
			t.Fatalf("answer %+v (%v), want a task", r.Error, err)
		}
		return decodeTask10(t, r.Result)
	}
	quoted := regexp.MustCompile(`^"[0-9a-f-]{36}"$`)

	first := send(`{"messageId":"o1","role":"ROLE_USER","metadata":{"skill":"order"},"parts":[{"data":{"item":"tea","quantity":0}}]}`)
	if first.Status.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("first turn: %s, want input-required after the 422", first.Status.State)
	}
	turn1 := up.sent()
	if len(turn1) != 3 || turn1[0] != turn1[1] || turn1[1] != turn1[2] || !quoted.MatchString(turn1[0]) {
		t.Fatalf("keys of the first turn %q, want one quoted UUID, three times (two 503s, then the 422)", turn1)
	}

	second := send(fmt.Sprintf(`{"messageId":"o2","taskId":%q,"role":"ROLE_USER","parts":[{"data":{"quantity":2}}]}`, first.ID))
	if second.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("second turn: %s, want completed", second.Status.State)
	}
	turn2 := up.sent()
	if len(turn2) != 3 || turn2[0] != turn2[2] || !quoted.MatchString(turn2[0]) || turn2[0] == turn1[0] {
		t.Errorf("keys of the second turn %q, want one quoted UUID three times, not the first turn's %s", turn2, turn1[0])
	}
}
