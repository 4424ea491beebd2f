package demoapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

const key = "test-key"

type call struct {
	method, path, body string
	noKey              bool
	header             map[string]string
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, srv *httptest.Server, c call) answer {
	t.Helper()
	resp, raw := send(t, srv, c)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	method := resp.Request.Method
	if method == http.MethodHead {
		return a
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, c.path, ct)
	}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, c.path, raw, err)
	}
	return a
}

// send makes the call (a GET unless it says otherwise, with the API key
// unless noKey) and answers the response and its body, whatever its type.
func send(t *testing.T, srv *httptest.Server, c call) (*http.Response, []byte) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, srv.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if !c.noKey {
		req.Header.Set("X-Api-Key", key)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, c.path, err)
	}
	return resp, raw
}

func newServer(t *testing.T) (*demoapi.API, *httptest.Server) {
	t.Helper()
	api := demoapi.New(demoapi.Options{APIKey: key})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv
}

func TestEndpoints(t *testing.T) {
	_, srv := newServer(t)
	type obj = map[string]any
	tests := []struct {
		name   string
		call   call
		status int
		want   obj
	}{
		{"weather", call{path: "/weather/london"}, 200,
			obj{"city": "London", "temperatureC": 12.5, "conditions": "drizzle"}},
		{"weather escaped path", call{path: "/weather/New%20York"}, 200,
			obj{"city": "New York", "temperatureC": 9.8, "conditions": "windy"}},
		{"weather non-ASCII", call{path: "/weather/S%C3%83O%20PAULO"}, 200,
			obj{"city": "São Paulo", "temperatureC": 26.1, "conditions": "thunderstorms"}},
		{"weather unknown", call{path: "/weather/atlantis"}, 404, obj{"error": "unknown city"}},

		{"user", call{path: "/users/2"}, 200, obj{"id": 2.0, "name": "Alan Turing", "email": "alan@example.com"}},
		{"user unknown", call{path: "/users/42"}, 404, obj{"error": "no such user"}},
		{"user not a number", call{path: "/users/abc"}, 404, obj{"error": "no such user"}},

		{"order quantity zero", call{method: "POST", path: "/orders", body: `{"item":"tea","quantity":0}`}, 422,
			obj{"error": "validation failed", "fields": obj{"quantity": "must be at least 1"}}},
		{"order quantity missing", call{method: "POST", path: "/orders", body: `{"item":"tea"}`}, 422,
			obj{"error": "validation failed", "fields": obj{"quantity": "must be at least 1"}}},
		{"order item missing", call{method: "POST", path: "/orders", body: `{"quantity":2}`}, 422,
			obj{"error": "validation failed", "fields": obj{"item": "is required"}}},
		{"order both wrong", call{method: "POST", path: "/orders", body: `{"item":" ","quantity":-1}`}, 422,
			obj{"error": "validation failed", "fields": obj{"item": "is required", "quantity": "must be at least 1"}}},
		{"order quantity fraction", call{method: "POST", path: "/orders", body: `{"item":"tea","quantity":1.5}`}, 422,
			obj{"error": "validation failed", "fields": obj{"quantity": "must be an integer"}}},
		{"order quantity string", call{method: "POST", path: "/orders", body: `{"item":"tea","quantity":"3"}`}, 422,
			obj{"error": "validation failed", "fields": obj{"quantity": "must be an integer"}}},
		{"order item not string", call{method: "POST", path: "/orders", body: `{"item":7,"quantity":3}`}, 422,
			obj{"error": "validation failed", "fields": obj{"item": "must be a string"}}},
		{"order not JSON", call{method: "POST", path: "/orders", body: `item=tea`}, 400,
			obj{"error": "body must be a JSON object"}},
		{"order not an object", call{method: "POST", path: "/orders", body: `[1]`}, 400,
			obj{"error": "body must be a JSON object"}},

		{"search default limit", call{path: "/search?q=API"}, 200, obj{"query": "API", "results": []any{
			obj{"title": "Weather API guide", "url": "https://docs.example.com/api/weather"},
			obj{"title": "Orders API guide", "url": "https://docs.example.com/api/orders"},
			obj{"title": "Users API guide", "url": "https://docs.example.com/api/users"},
			obj{"title": "Search API guide", "url": "https://docs.example.com/api/search"},
			obj{"title": "API keys and authentication", "url": "https://docs.example.com/api/auth"},
		}}},
		{"search limit", call{path: "/search?q=caddy&limit=1"}, 200, obj{"query": "caddy", "results": []any{
			obj{"title": "Caddy reverse proxy", "url": "https://docs.example.com/caddy/reverse-proxy"},
		}}},
		{"search no match", call{path: "/search?q=zebra"}, 200, obj{"query": "zebra", "results": []any{}}},
		{"search missing q", call{path: "/search"}, 400, obj{"error": "missing query parameter q"}},
		{"search bad limit", call{path: "/search?q=a&limit=0"}, 400, obj{"error": "limit must be an integer from 1 to 50"}},
		{"search limit not a number", call{path: "/search?q=a&limit=x"}, 400, obj{"error": "limit must be an integer from 1 to 50"}},

		{"slow zero", call{path: "/slow?seconds=0"}, 200, obj{"waited": 0.0}},
		{"slow fraction", call{path: "/slow?seconds=0.001"}, 200, obj{"waited": 0.001}},
		{"slow too long", call{path: "/slow?seconds=61"}, 400, obj{"error": "seconds must be a number between 0 and 60"}},
		{"slow negative", call{path: "/slow?seconds=-1"}, 400, obj{"error": "seconds must be a number between 0 and 60"}},
		{"slow NaN", call{path: "/slow?seconds=NaN"}, 400, obj{"error": "seconds must be a number between 0 and 60"}},
		{"slow missing", call{path: "/slow"}, 400, obj{"error": "seconds must be a number between 0 and 60"}},

		{"fail", call{path: "/fail"}, 500, obj{"error": "boom"}},
		{"unknown path", call{path: "/nope"}, 404, obj{"error": "not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, srv, tt.call)
			if got.status != tt.status {
				t.Errorf("status %d, want %d (body %s)", got.status, tt.status, got.raw)
			}
			if !reflect.DeepEqual(got.body, tt.want) {
				t.Errorf("body %s\nwant %v", got.raw, tt.want)
			}
		})
	}
}

func TestOrdersGetSequentialIDs(t *testing.T) {
	_, srv := newServer(t)
	for _, want := range []string{"ord-1", "ord-2"} {
		got := do(t, srv, call{method: "POST", path: "/orders", body: `{"item":"tea","quantity":3,"note":"extra fields are ignored"}`})
		if got.status != http.StatusCreated {
			t.Fatalf("status %d, want 201 (body %s)", got.status, got.raw)
		}
		wantBody := map[string]any{"id": want, "item": "tea", "quantity": 3.0, "status": "placed"}
		if !reflect.DeepEqual(got.body, wantBody) {
			t.Errorf("body %s, want %v", got.raw, wantBody)
		}
	}
}

func TestAPIKey(t *testing.T) {
	_, srv := newServer(t)
	protected := []call{
		{path: "/weather/london"},
		{path: "/users/1"},
		{method: "POST", path: "/orders", body: `{"item":"tea","quantity":1}`},
		{path: "/search?q=a"},
		{path: "/slow?seconds=0"},
		{path: "/fail"},
	}
	for _, c := range protected {
		for name, hdr := range map[string]map[string]string{"missing": nil, "wrong": {"X-Api-Key": "demo-secret"}} {
			t.Run(c.path+"/"+name, func(t *testing.T) {
				c := c
				c.noKey, c.header = true, hdr
				got := do(t, srv, c)
				want := map[string]any{"error": "missing or wrong API key"}
				if got.status != http.StatusUnauthorized || !reflect.DeepEqual(got.body, want) {
					t.Errorf("got %d %s, want 401 %v", got.status, got.raw, want)
				}
			})
		}
	}
	for _, c := range []call{{path: "/echo", noKey: true}, {path: "/stats", noKey: true}} {
		if got := do(t, srv, c); got.status != http.StatusOK {
			t.Errorf("%s without key: status %d, want 200", c.path, got.status)
		}
	}
}

func TestDefaultAPIKey(t *testing.T) {
	srv := httptest.NewServer(demoapi.New(demoapi.Options{}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/users/1", nil)
	req.Header.Set("X-Api-Key", demoapi.DefaultAPIKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d with the default key, want 200", resp.StatusCode)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	_, srv := newServer(t)
	tests := []struct {
		call  call
		allow string
	}{
		{call{method: "POST", path: "/weather/london"}, "GET, HEAD"},
		{call{method: "DELETE", path: "/users/1"}, "GET, HEAD"},
		{call{method: "GET", path: "/orders"}, "POST"},
		{call{method: "PUT", path: "/stats"}, "GET, HEAD"},
	}
	for _, tt := range tests {
		got := do(t, srv, tt.call)
		if got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tt.call.method, tt.call.path,
				got.status, got.header.Get("Allow"), tt.allow)
		}
		if got.body["error"] != "method not allowed" {
			t.Errorf("%s %s: body %s", tt.call.method, tt.call.path, got.raw)
		}
	}
}

func TestHead(t *testing.T) {
	_, srv := newServer(t)
	got := do(t, srv, call{method: http.MethodHead, path: "/weather/paris"})
	if got.status != http.StatusOK || got.raw != "" || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: %d %q %v", got.status, got.raw, got.header)
	}
}

func TestEcho(t *testing.T) {
	_, srv := newServer(t)
	got := do(t, srv, call{method: "POST", path: "/echo?a=1&a=2&b=x%2Fy", body: "k=v", noKey: true,
		header: map[string]string{"X-Trace": "abc", "Content-Type": "application/x-www-form-urlencoded"}})
	if got.status != http.StatusOK {
		t.Fatalf("status %d", got.status)
	}
	want := map[string]any{"method": "POST", "path": "/echo", "body": "k=v",
		"query": map[string]any{"a": []any{"1", "2"}, "b": []any{"x/y"}}}
	for k, v := range want {
		if !reflect.DeepEqual(got.body[k], v) {
			t.Errorf("%s = %v, want %v", k, got.body[k], v)
		}
	}
	headers, _ := got.body["headers"].(map[string]any)
	for k, v := range map[string]any{"X-Trace": []any{"abc"}, "Content-Type": []any{"application/x-www-form-urlencoded"}} {
		if !reflect.DeepEqual(headers[k], v) {
			t.Errorf("headers[%s] = %v, want %v", k, headers[k], v)
		}
	}

	got = do(t, srv, call{path: "/echo", noKey: true})
	if _, ok := got.body["body"]; ok || got.body["method"] != "GET" {
		t.Errorf("GET /echo: %s", got.raw)
	}
}

// TestSlowCountsCancellation is the property later tests rely on: a client
// that gives up on GET /slow is seen by the API.
func TestSlowCountsCancellation(t *testing.T) {
	api, srv := newServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	reqCtx, cancelReq := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodGet, srv.URL+"/slow?seconds=60", nil)
	req.Header.Set("X-Api-Key", key)
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()

	if _, err := api.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted == 1 }); err != nil {
		t.Fatalf("the slow request never started: %v", err)
	}
	cancelReq()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	got, err := api.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowCanceled == 1 })
	if err != nil {
		t.Fatalf("the cancellation was not counted: %v (stats %+v)", err, got)
	}
	if got != (demoapi.Stats{SlowStarted: 1, SlowCanceled: 1}) {
		t.Errorf("stats %+v", got)
	}

	// A completed wait counts as started, not canceled; /stats says the same.
	do(t, srv, call{path: "/slow?seconds=0"})
	stats := do(t, srv, call{path: "/stats", noKey: true})
	if want := map[string]any{"slowStarted": 2.0, "slowCanceled": 1.0}; !reflect.DeepEqual(stats.body, want) {
		t.Errorf("/stats %s, want %v", stats.raw, want)
	}
}

func TestWaitStatsGivesUp(t *testing.T) {
	api := demoapi.New(demoapi.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := api.WaitStats(ctx, func(s demoapi.Stats) bool { return s.SlowStarted > 0 }); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
