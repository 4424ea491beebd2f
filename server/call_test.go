package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/a2a/a2apb"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// callObserver passes on the calls EndRequest is told of.
type callObserver struct {
	nopObserver
	ended chan server.Call
}

func (o callObserver) EndRequest(_ context.Context, c server.Call) { o.ended <- c }

// TestObserverToldTheCall: every binding tells the observer the one call
// value: its binding, method, version, caller and how it ended, also for a
// call refused before its request was read.
func TestObserverToldTheCall(t *testing.T) {
	obs := callObserver{ended: make(chan server.Call, 1)}
	a := newAuthAgent(t, nil, func(c *server.Config) {
		c.Bindings, c.Observer = []server.NewBinding{server.GRPC(), server.HTTPJSON("/rest")}, obs
	})
	grpcAs := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(v10(t.Context()), "x-api-key", key)
	}
	c := grpcClient(t, a.URL)
	for _, tc := range []struct {
		name string
		send func()
		want server.Call
	}{
		{"JSON-RPC", func() { a.As(aliceKey, "GetTask", map[string]any{"id": "none"}) },
			server.Call{Binding: a2a.BindingJSONRPC, Method: a2a.MethodGetTask, Version: a2a.V10, Code: a2a.CodeTaskNotFound}},
		{"HTTP+JSON", func() { restRequest(a.Agent, http.MethodGet, "/rest/tasks/none", "", "X-API-Key", aliceKey) },
			server.Call{Binding: a2a.BindingHTTPJSON, Method: a2a.MethodGetTask, Version: a2a.V10, Code: a2a.CodeTaskNotFound}},
		{"gRPC", func() { c.GetTask(grpcAs(aliceKey), &a2apb.GetTaskRequest{Id: "none"}) },
			server.Call{Binding: a2a.BindingGRPC, Method: a2a.MethodGetTask, Version: a2a.V10, Code: a2a.CodeTaskNotFound}},
		{"JSON-RPC refused", func() { a.As("wrong-key-0123456789", "GetTask", map[string]any{"id": "none"}) },
			server.Call{Binding: a2a.BindingJSONRPC, Version: a2a.V10, Code: a2a.CodeUnauthenticated}},
		{"gRPC refused", func() { c.GetTask(grpcAs("wrong-key-0123456789"), &a2apb.GetTaskRequest{Id: "none"}) },
			server.Call{Binding: a2a.BindingGRPC, Version: a2a.V10, Code: a2a.CodeUnauthenticated}},
	} {
		tc.send()
		var got server.Call
		select {
		case got = <-obs.ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no call ended", tc.name)
		}
		caller := ""
		if got.Caller != nil {
			caller = got.Caller.Subject
		}
		got.Caller = nil
		wantCaller := "alice"
		if tc.want.Code == a2a.CodeUnauthenticated {
			wantCaller = ""
		}
		if got != tc.want || caller != wantCaller {
			t.Errorf("%s: ended %+v by %q; want %+v by %q", tc.name, got, caller, tc.want, wantCaller)
		}
	}
}
