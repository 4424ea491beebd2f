package interop_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// protocol is one A2A version, over one binding, that the suite speaks
// through the Go SDK.
type protocol struct {
	name    string
	version a2a.ProtocolVersion
	binding a2a.TransportProtocol
}

var (
	v10       = protocol{"1.0", a2a.Version, a2a.TransportProtocolJSONRPC}
	v03       = protocol{"0.3", a2av0.Version, a2a.TransportProtocolJSONRPC}
	protocols = []protocol{v10, v03}
	// 1.0 and 0.3 over the HTTP+JSON binding (a2a-go's REST transport, and
	// a2av0's).
	v10REST = protocol{"1.0 HTTP+JSON", a2a.Version, a2a.TransportProtocolHTTPJSON}
	v03REST = protocol{"0.3 HTTP+JSON", a2av0.Version, a2a.TransportProtocolHTTPJSON}
)

// forEachProtocol runs f as a subtest per protocol version and binding,
// each with its own SDK client: JSON-RPC and, where the agent serves it,
// HTTP+JSON, in 1.0 and 0.3.
func forEachProtocol(t *testing.T, f func(t *testing.T, p protocol, c *a2aclient.Client)) {
	all := protocols
	if agent.RESTURL != "" {
		all = append(all[:len(all):len(all)], v10REST, v03REST)
	}
	for _, p := range all {
		t.Run(p.name, func(t *testing.T) {
			f(t, p, newClient(t, p))
		})
	}
}

// newClient connects the official Go SDK to the agent's endpoint directly
// (no card), so that what the client does depends only on the protocol
// version and binding: the JSON-RPC and REST transports for 1.0, or the
// a2av0 compat transports for 0.3. Card-driven client creation is covered
// by TestAgentCard.
func newClient(t *testing.T, p protocol) *a2aclient.Client {
	t.Helper()
	if p.binding == a2a.TransportProtocolHTTPJSON {
		return newClientAt(t, p, agent.RESTURL)
	}
	return newClientAt(t, p, agent.URL)
}

// newClientAt is newClient for the endpoint at url.
func newClientAt(t *testing.T, p protocol, url string) *a2aclient.Client {
	t.Helper()
	httpClient := recordedHTTPClient(t)
	iface := &a2a.AgentInterface{URL: url, ProtocolBinding: p.binding, ProtocolVersion: p.version}
	var opts []a2aclient.FactoryOption
	switch {
	case p == v10REST:
		opts = []a2aclient.FactoryOption{a2aclient.WithDefaultsDisabled(), a2aclient.WithRESTTransport(httpClient)}
	case p == v03REST:
		opts = []a2aclient.FactoryOption{a2aclient.WithDefaultsDisabled(), a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: httpClient})}
	case p.version == a2a.Version:
		opts = []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(httpClient)}
	case p.version == a2av0.Version:
		opts = []a2aclient.FactoryOption{
			a2aclient.WithDefaultsDisabled(),
			a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: httpClient}),
		}
	}
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface}, opts...)
	if err != nil {
		t.Fatalf("creating the %s client: %v", p.name, err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

// skillMessage is a user message for skill with its arguments in a data part.
func skillMessage(skill string, args map[string]any) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(args))
	m.Metadata = map[string]any{"skill": skill}
	return m
}

func send(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) a2a.SendMessageResult {
	t.Helper()
	res, err := c.SendMessage(ctxTimeout(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return res
}

// sendForTask sends a blocking message and requires a Task back.
func sendForTask(t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res := send(t, c, &a2a.SendMessageRequest{Message: m})
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage answered %T, want a Task: %s", res, jsonString(res))
	}
	return task
}

// startSlow starts the slow skill without waiting for it and returns the
// task in its non-terminal state.
func startSlow(t *testing.T, c *a2aclient.Client, seconds float64) *a2a.Task {
	t.Helper()
	res := send(t, c, &a2a.SendMessageRequest{
		Message: skillMessage("slow", map[string]any{"seconds": seconds}),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("non-blocking SendMessage answered %T, want a Task: %s", res, jsonString(res))
	}
	if task.Status.State.Terminal() {
		t.Fatalf("non-blocking SendMessage of a %gs task answered a terminal task (%s): %s", seconds, task.Status.State, jsonString(task))
	}
	return task
}

// collect reads a stream to its end. The stream's context bounds it: a
// stream that does not end yields the context's error.
func collect(seq iter.Seq2[a2a.Event, error]) ([]a2a.Event, error) {
	var events []a2a.Event
	for ev, err := range seq {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

// describe lists events compactly for failure messages.
func describe(events []a2a.Event) string {
	var b strings.Builder
	for i, ev := range events {
		fmt.Fprintf(&b, "\n  %d: %s", i, describeEvent(ev))
	}
	return b.String()
}

func describeEvent(ev a2a.Event) string {
	switch e := ev.(type) {
	case *a2a.Task:
		return fmt.Sprintf("Task %s %s (%d artifacts)", e.ID, e.Status.State, len(e.Artifacts))
	case *a2a.Message:
		return fmt.Sprintf("Message %s role=%s", e.ID, e.Role)
	case *a2a.TaskStatusUpdateEvent:
		return fmt.Sprintf("StatusUpdate %s %s", e.TaskID, e.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return fmt.Sprintf("ArtifactUpdate %s %s", e.TaskID, jsonString(e.Artifact))
	}
	return fmt.Sprintf("%T", ev)
}

// dataValues returns the values of the data parts among parts.
func dataValues(parts a2a.ContentParts) []any {
	var out []any
	for _, p := range parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			out = append(out, d.Value)
		}
	}
	return out
}

// artifactData returns the data parts of all artifacts, JSON-encoded.
func artifactData(arts []*a2a.Artifact) []string {
	var out []string
	for _, a := range arts {
		if a == nil {
			continue
		}
		for _, v := range dataValues(a.Parts) {
			out = append(out, jsonString(v))
		}
	}
	return out
}

// requireWeatherArtifact checks that the artifacts carry the demo API's
// report for Paris as structured data.
func requireWeatherArtifact(t *testing.T, arts []*a2a.Artifact) {
	t.Helper()
	for _, d := range artifactData(arts) {
		if strings.Contains(d, `"Paris"`) && strings.Contains(d, `"sunny"`) {
			return
		}
	}
	t.Fatalf("no data artifact with the Paris weather report (city Paris, conditions sunny); artifacts: %s", jsonString(arts))
}

// requireError checks that err is the A2A error the SDK maps code to.
func requireError(t *testing.T, err error, want error, code int) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d (%v)", code, want)
	}
	if !errors.Is(err, want) {
		var ae *a2a.Error
		kind := "not an a2a.Error: the SDK could not read a JSON-RPC error with that code"
		if errors.As(err, &ae) {
			kind = fmt.Sprintf("a2a.Error wrapping %v", ae.Err)
		}
		t.Fatalf("got error %q (%s), want code %d (%v)", err, kind, code, want)
	}
}
