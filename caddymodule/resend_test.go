package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// orderCounter counts the orders an upstream is asked to place. With gate
// set, each order is announced on arrived and waits for gate before it is
// placed.
type orderCounter struct {
	http.Handler
	placed  atomic.Int64
	gate    chan struct{}
	arrived chan struct{}
}

func (c *orderCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/orders" {
		c.placed.Add(1)
		if c.gate != nil {
			c.arrived <- struct{}{}
			<-c.gate
		}
	}
	c.Handler.ServeHTTP(w, r)
}

// loadAllBindings loads the agent with every binding on: JSON-RPC,
// HTTP+JSON below /rest and gRPC (h2c), all on its port.
func (a *agent) loadAllBindings(description string) {
	a.t.Helper()
	initServer(a.t, a.tester, allBindingsConfig(a.port, a.skills, a.upstream, a.publicURL(), "", "description "+strconv.Quote(description)))
}

// allBindingsConfig is the Caddyfile of one site on port with every
// binding on: JSON-RPC, HTTP+JSON below /rest and gRPC (h2c); global goes
// into the global options, more into the a2a block.
func allBindingsConfig(port int, skills, upstream, url, global, more string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	%s
	servers {
		protocols h1 h2c
	}
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Test Agent"
		rest /rest
		grpc
		%s
	}
}
`, adminPort, global, port, skills, upstream, url, more)
}

// newOrderCounter is the demo API behind an orderCounter.
func newOrderCounter(t *testing.T) *orderCounter {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	return &orderCounter{Handler: demoapi.New(demoapi.Options{APIKey: testAPIKey})}
}

// demoSkills is the path of the demo's skills file.
func demoSkills(t *testing.T) string {
	skills, err := filepath.Abs(filepath.Join("..", "examples", "skills.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return skills
}

// orderMessage is a 1.0 SendMessage of message id for quantity widgets.
func orderMessage(id string, quantity int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%q,"role":"ROLE_USER",`+
		`"metadata":{"skill":"place_order"},"parts":[{"data":{"item":"widget","quantity":%d}}]}}}`, id, quantity)
}

// postTo sends a 1.0 JSON-RPC request to the site on port.
func (a *agent) postTo(port int, body string) rpcResponse {
	a.t.Helper()
	return a.rpcFrom("", port, body)
}

// rpcFrom sends a 1.0 JSON-RPC request to the site on port from the
// loopback address addr (a client address of its own; "" for the test
// client's), with header's names and values.
func (a *agent) rpcFrom(addr string, port int, body string, header ...string) rpcResponse {
	a.t.Helper()
	client := a.tester.Client
	if addr != "" {
		// A connection a reload's stopping server accepted is reset, as
		// for the tester's own client.
		client = &http.Client{Transport: resendOnClose{next: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}).DialContext}}}
		defer client.CloseIdleConnections()
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", port), strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		a.t.Fatalf("answer to %.80s is not JSON-RPC: %v", body, err)
	}
	return r
}

// resendAgent is the demo agent with every binding on, in front of a demo
// API that counts its orders.
func resendAgent(t *testing.T) (*agent, *orderCounter) {
	t.Helper()
	orders := newOrderCounter(t)
	a := newAgent(t, demoSkills(t), orders)
	a.loadAllBindings("Messages sent again")
	return a, orders
}

// A message sent again, by any binding, blocking or streamed, answers the
// task it made and places no second order; the same id with other content
// is refused as invalid params.
func TestIntegrationResentMessage(t *testing.T) {
	a, orders := resendAgent(t)
	base := fmt.Sprintf("http://localhost:%d", a.port)
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", a.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	grpcClient := a2apb.NewA2AServiceClient(conn)

	jsonrpcMessage := func(version, id string, quantity int) string {
		if version == "0.3" {
			return fmt.Sprintf(`{"kind":"message","messageId":%q,"role":"user","metadata":{"skill":"place_order"},`+
				`"parts":[{"kind":"data","data":{"item":"widget","quantity":%d}}]}`, id, quantity)
		}
		return fmt.Sprintf(`{"messageId":%q,"role":"ROLE_USER","metadata":{"skill":"place_order"},`+
			`"parts":[{"data":{"item":"widget","quantity":%d}}]}`, id, quantity)
	}
	// Each send answers the task's id and its order's id (from the
	// artifact), or the error code.
	type answer struct {
		task, order string
		code        int
	}
	orderOf := func(raw []byte) string {
		var v struct {
			Artifacts []struct {
				Parts []struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				} `json:"parts"`
			} `json:"artifacts"`
		}
		if err := json.Unmarshal(raw, &v); err != nil || len(v.Artifacts) == 0 || len(v.Artifacts[0].Parts) == 0 {
			t.Fatalf("no order in %s", raw)
		}
		return v.Artifacts[0].Parts[0].Data.ID
	}
	taskAnswer := func(raw []byte) answer {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return answer{task: v.ID, order: orderOf(raw)}
	}
	sends := map[string]func(id string, quantity int) answer{
		"JSON-RPC 1.0": func(id string, quantity int) answer {
			r := a.call("1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+jsonrpcMessage("1.0", id, quantity)+`}}`)
			if r.Error != nil {
				return answer{code: r.Error.Code}
			}
			var res struct {
				Task json.RawMessage `json:"task"`
			}
			if err := json.Unmarshal(r.Result, &res); err != nil {
				t.Fatal(err)
			}
			return taskAnswer(res.Task)
		},
		"JSON-RPC 0.3": func(id string, quantity int) answer {
			r := a.call("0.3", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":`+jsonrpcMessage("0.3", id, quantity)+`}}`)
			if r.Error != nil {
				return answer{code: r.Error.Code}
			}
			return taskAnswer(r.Result)
		},
		"JSON-RPC 1.0 stream": func(id string, quantity int) answer {
			resp := a.post("1.0", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":`+jsonrpcMessage("1.0", id, quantity)+`}}`)
			defer resp.Body.Close()
			var got answer
			err := readSSE(resp.Body, func(data []byte) bool {
				var ev struct {
					Result struct {
						Task           json.RawMessage `json:"task"`
						ArtifactUpdate struct {
							Artifact json.RawMessage `json:"artifact"`
						} `json:"artifactUpdate"`
						StatusUpdate struct {
							TaskID string `json:"taskId"`
						} `json:"statusUpdate"`
					} `json:"result"`
					Error *struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(data, &ev); err != nil {
					t.Fatal(err)
				}
				switch {
				case ev.Error != nil:
					got.code = ev.Error.Code
				case ev.Result.Task != nil:
					var tk struct {
						ID        string          `json:"id"`
						Artifacts json.RawMessage `json:"artifacts"`
					}
					if err := json.Unmarshal(ev.Result.Task, &tk); err != nil {
						t.Fatal(err)
					}
					got.task = tk.ID
					if tk.Artifacts != nil {
						got.order = orderOf(ev.Result.Task)
					}
				case ev.Result.ArtifactUpdate.Artifact != nil:
					got.order = orderOf([]byte(`{"artifacts":[` + string(ev.Result.ArtifactUpdate.Artifact) + `]}`))
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
		"HTTP+JSON": func(id string, quantity int) answer {
			req, err := http.NewRequest(http.MethodPost, base+"/rest/message:send",
				strings.NewReader(`{"message":`+jsonrpcMessage("1.0", id, quantity)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("A2A-Version", "1.0")
			req.Header.Set("Content-Type", "application/a2a+json")
			resp, err := a.tester.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				var e struct {
					Error struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				_ = json.Unmarshal(raw, &e)
				return answer{code: resp.StatusCode}
			}
			var res struct {
				Task json.RawMessage `json:"task"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			return taskAnswer(res.Task)
		},
		"gRPC": func(id string, quantity int) answer {
			ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "1.0")
			data, _ := structpb.NewValue(map[string]any{"item": "widget", "quantity": quantity})
			skill, _ := structpb.NewStruct(map[string]any{"skill": "place_order"})
			sent, err := grpcClient.SendMessage(ctx, &a2apb.SendMessageRequest{Message: &a2apb.Message{
				MessageId: id, Role: a2apb.Role_ROLE_USER, Metadata: skill, Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: data}}}}})
			if err != nil {
				return answer{code: int(status.Code(err))}
			}
			tk := sent.GetTask()
			return answer{task: tk.GetId(), order: tk.GetArtifacts()[0].GetParts()[0].GetData().GetStructValue().GetFields()["id"].GetStringValue()}
		},
	}
	// What each binding says for the same id with other content.
	mismatch := map[string]int{"JSON-RPC 1.0": -32602, "JSON-RPC 0.3": -32602, "JSON-RPC 1.0 stream": -32602,
		"HTTP+JSON": http.StatusBadRequest, "gRPC": int(codes.InvalidArgument)}

	for name, send := range sends {
		t.Run(name, func(t *testing.T) {
			id := newMessageID()
			before := orders.placed.Load()
			first := send(id, 2)
			if first.code != 0 || first.task == "" || first.order == "" {
				t.Fatalf("first send: %+v", first)
			}
			again := send(id, 2)
			if again != first {
				t.Errorf("sent again: %+v, want the first answer %+v", again, first)
			}
			if other := send(id, 3); other.code != mismatch[name] {
				t.Errorf("the same id with another quantity: %+v, want error %d", other, mismatch[name])
			}
			if placed := orders.placed.Load() - before; placed != 1 {
				t.Errorf("%d orders placed for one message, want 1", placed)
			}
		})
	}

	// Sent at once by many callers, the message still places one order,
	// and every caller is answered the one task.
	t.Run("concurrently", func(t *testing.T) {
		id := newMessageID()
		before := orders.placed.Load()
		answers := make([]answer, 8)
		var wg sync.WaitGroup
		for i := range answers {
			send := sends["JSON-RPC 1.0"]
			if i%2 == 1 {
				send = sends["gRPC"]
			}
			wg.Go(func() { answers[i] = send(id, 1) })
		}
		wg.Wait()
		for i, got := range answers {
			if got != answers[0] || got.task == "" {
				t.Errorf("caller %d: %+v, want %+v", i, got, answers[0])
			}
		}
		if placed := orders.placed.Load() - before; placed != 1 {
			t.Errorf("%d orders placed for one message sent at once by %d callers, want 1", placed, len(answers))
		}
	})
}

// A blocking call of a message sent again while its first call still runs
// waits for the task to end, and answers it; the upstream is called once.
func TestIntegrationResentWhileRunning(t *testing.T) {
	a := startAgent(t)
	msg := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + newMessageID() +
		`","role":"ROLE_USER","metadata":{"skill":"slow"},"parts":[{"data":{"seconds":1}}]}}}`
	first := make(chan rpcResponse, 1)
	go func() { first <- a.call("1.0", msg) }()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := a.demo.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); err != nil {
		t.Fatal(err)
	}
	again := a.call("1.0", msg)
	got := <-first
	if got.Error != nil || again.Error != nil {
		t.Fatalf("answers: %+v and %+v", got, again)
	}
	tk, tkAgain := decodeTask10(t, got.Result), decodeTask10(t, again.Result)
	if tk.ID != tkAgain.ID || tkAgain.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("sent again: task %s in %s, want task %s completed", tkAgain.ID, tkAgain.Status.State, tk.ID)
	}
	stats, err := a.demo.WaitStats(ctx, func(demoapi.Stats) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if stats.SlowStarted != 1 {
		t.Errorf("the slow upstream was called %d times, want once", stats.SlowStarted)
	}
}

// Replicas on one Redis: the same message sent at once to both places one
// order, and both answer its task.
func TestIntegrationResentAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	orders := newOrderCounter(t)
	a := newAgent(t, demoSkills(t), orders)
	portB := freePort(t)
	site := func(port int, name string) string {
		return replicaSite(port, name, a.skills, a.upstream, srv.Addr(), "resent", "")
	}
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+site(a.port, "a")+site(portB, "b"))

	for round := range 4 {
		id := newMessageID()
		before := orders.placed.Load()
		answers := make([]rpcResponse, 6)
		var wg sync.WaitGroup
		for i := range answers {
			port := a.port
			if i%2 == 1 {
				port = portB
			}
			wg.Go(func() { answers[i] = a.postTo(port, orderMessage(id, 1)) })
		}
		wg.Wait()
		var first string
		for i, r := range answers {
			if r.Error != nil {
				t.Fatalf("round %d, caller %d: %+v", round, i, r.Error)
			}
			tk := decodeTask10(t, r.Result)
			if first == "" {
				first = tk.ID
			}
			if tk.ID != first || tk.Status.State != "TASK_STATE_COMPLETED" {
				t.Errorf("round %d, caller %d: task %s in %s, want task %s completed", round, i, tk.ID, tk.Status.State, first)
			}
		}
		if placed := orders.placed.Load() - before; placed != 1 {
			t.Errorf("round %d: %d orders placed for one message sent to two replicas at once, want 1", round, placed)
		}
	}
}

// Redis stops answering while a task's outcome is stored: the caller is
// told the outcome is unknown and that sending again is safe; sent again,
// the message answers the completed task, and one order was placed.
func TestIntegrationOutcomeUnknownThenResent(t *testing.T) {
	srv := redistest.Start(t)
	orders := newOrderCounter(t)
	orders.gate, orders.arrived = make(chan struct{}), make(chan struct{}, 1)
	a := newAgent(t, demoSkills(t), orders)
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+
		replicaSite(a.port, "a", a.skills, a.upstream, srv.Addr(), "unknown", ""))

	id := newMessageID()
	answered := make(chan rpcResponse, 1)
	go func() { answered <- a.postTo(a.port, orderMessage(id, 1)) }()
	<-orders.arrived
	// Every client of Redis waits 5 s, longer than the store's timeout
	// (3 s): the outcome cannot be stored now, but can be once the pause
	// ends.
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", 5000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	close(orders.gate)
	r := <-answered
	if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message+string(r.Error.Data), "sending the same message again") {
		t.Fatalf("answer while Redis is paused: %+v, want -32603 saying the outcome is unknown and sending again is safe", r)
	}
	// Sent again as a client that obeys "retry later" does, until Redis
	// answers again: no attempt may place a second order.
	var again rpcResponse
	for deadline := time.Now().Add(30 * time.Second); ; {
		if again = a.postTo(a.port, orderMessage(id, 1)); again.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent again: %+v", again.Error)
		}
	}
	if tk := decodeTask10(t, again.Result); tk.Status.State != "TASK_STATE_COMPLETED" {
		t.Errorf("sent again: task in %s, want completed", tk.Status.State)
	}
	if placed := orders.placed.Load(); placed != 1 {
		t.Errorf("%d orders placed, want 1", placed)
	}
}

// Another client's traffic cannot shorten a caller's resend window: its
// messages for no skill, each rejected at once, fill the store and drop the
// caller's finished order, yet the order's message sent again is refused,
// saying its task is no longer stored, and places no second order. On the
// memory store and on Redis.
func TestIntegrationResendWindowOutlivesEviction(t *testing.T) {
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			orders := newOrderCounter(t)
			a := newAgent(t, demoSkills(t), orders)
			redis := ""
			if store == "redis" {
				redis = fmt.Sprintf("redis {\n\t\taddress %s\n\t\tkey_prefix eviction\n\t}", redistest.Start(t).Addr())
			}
			a.loadWith(a.publicURL(), "Resend window", "tasks {\n\tmax_tasks 20\n\t"+redis+"\n}")
			const victim, attacker = "127.0.0.2", "127.0.0.3"
			id := newMessageID()
			if r := a.rpcFrom(victim, a.port, orderMessage(id, 1)); r.Error != nil {
				t.Fatalf("the order: %+v", r.Error)
			}
			for range 40 {
				r := a.rpcFrom(attacker, a.port, sendMessage("no_such_skill", `{}`))
				if r.Error != nil || decodeTask10(t, r.Result).Status.State != "TASK_STATE_REJECTED" {
					t.Fatalf("a message for no skill: %+v", r)
				}
			}
			r := a.rpcFrom(victim, a.port, orderMessage(id, 1))
			if r.Error == nil || r.Error.Code != -32602 || !strings.Contains(string(r.Error.Data), id) ||
				!strings.Contains(string(r.Error.Data), "no longer stored") {
				t.Errorf("the order sent again, its task dropped: error %+v, result %.100s; want -32602 naming %s and saying its task is no longer stored",
					r.Error, r.Result, id)
			}
			if placed := orders.placed.Load(); placed != 1 {
				t.Errorf("%d orders placed for one message, want 1", placed)
			}
		})
	}
}

// Redis paused while a new task is inserted: the caller is told that
// whether the task was stored is not known and that its skill has not
// run, with the task's id. Redis runs the insert once the pause ends, and
// the replica settles it: the message sent again, as that answer says,
// places the order once, and answers as soon as Redis does, not when a
// lease nobody renews runs out.
func TestIntegrationInsertWithUnknownOutcomeThenResent(t *testing.T) {
	srv := redistest.Start(t)
	orders := newOrderCounter(t)
	a := newAgent(t, demoSkills(t), orders)
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n", adminPort)+
		replicaSite(a.port, "a", a.skills, a.upstream, srv.Addr(), "insert", ""))
	// A new task sweeps the store at most once a second: this one does, so
	// that the next goes straight to its insert.
	if r := a.postTo(a.port, orderMessage(newMessageID(), 1)); r.Error != nil {
		t.Fatalf("the first order: %+v", r.Error)
	}
	// Every client of Redis waits 5 s, longer than the store's timeout
	// (3 s): the insert is held in Redis.
	if err := srv.Client(t).Do(t.Context(), "CLIENT", "PAUSE", 5000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	id := newMessageID()
	r := a.postTo(a.port, orderMessage(id, 1))
	if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "has not run") ||
		!strings.Contains(string(r.Error.Data), `"taskId"`) {
		t.Fatalf("an order held in a paused Redis: %+v, want -32603 saying its skill has not run, with the task id", r.Error)
	}
	// Sent again as the answer says, until the order is placed: a task
	// stored by an insert held in Redis says it never started.
	var again rpcResponse
	for deadline := time.Now().Add(30 * time.Second); ; {
		again = a.postTo(a.port, orderMessage(id, 1))
		if again.Error == nil && decodeTask10(t, again.Result).Status.State == "TASK_STATE_COMPLETED" {
			break
		}
		if again.Error == nil && !strings.Contains(string(again.Result), "never started") {
			t.Fatalf("sent again: %.300s, want the order placed, or the task saying it never started", again.Result)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent again: %+v", again.Error)
		}
	}
	if waited := time.Since(paused); waited > 15*time.Second {
		t.Errorf("the order was placed %s after Redis paused for 5s", waited)
	}
	if placed := orders.placed.Load(); placed != 2 {
		t.Errorf("%d orders placed, want 2 (the first, and this one once)", placed)
	}
}

// resend_window 0, for clients that use one messageId for several
// messages as the compatibility kit does: the id used again, with other
// content or the same, is a new message, and runs.
func TestIntegrationResendWindowOff(t *testing.T) {
	orders := newOrderCounter(t)
	a := newAgent(t, demoSkills(t), orders)
	a.loadWith(a.publicURL(), "Resends off", "tasks {\n\tresend_window 0\n}")
	id := newMessageID()
	made := map[string]bool{}
	for _, quantity := range []int{1, 2, 2} {
		r := a.postTo(a.port, orderMessage(id, quantity))
		if r.Error != nil {
			t.Fatalf("messageId %s used again for %d widgets: %+v", id, quantity, r.Error)
		}
		made[decodeTask10(t, r.Result).ID] = true
	}
	if placed := orders.placed.Load(); placed != 3 || len(made) != 3 {
		t.Errorf("%d orders placed in %d tasks for one messageId used three times, want 3 in 3", placed, len(made))
	}
}
