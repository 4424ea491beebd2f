package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-a2a/caddy-a2a/examples/demoapi"
)

// provisioned returns a handler for url in front of upstream, provisioned
// with examples/skills.yaml; the test cleans it up unless it does so itself.
func provisioned(t *testing.T, ctx caddy.Context, url, upstream string) *Handler {
	t.Helper()
	h := &Handler{
		Skills:      filepath.Join("..", "examples", "skills.yaml"),
		Upstream:    upstream,
		URL:         url,
		Name:        "Test Agent",
		Description: "Provisioned by a test",
	}
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	return h
}

// rpc posts a 1.0 JSON-RPC request to h and returns the decoded answer.
func rpc(t *testing.T, h *Handler, body string) rpcResponse {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, req, nil); err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	var r rpcResponse
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("answer is not JSON-RPC: %v: %s", err, w.Body)
	}
	return r
}

func getTask(t *testing.T, h *Handler, id string) rpcResponse {
	t.Helper()
	return rpc(t, h, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":%q}}`, id))
}

// TestStoreSharedByURL: handlers with the same url share one task store (a
// reload provisions the new handler before cleaning up the old), handlers
// with another url do not, and the last Cleanup releases the store.
func TestStoreSharedByURL(t *testing.T) {
	t.Setenv("DEMO_API_KEY", testAPIKey)
	upstream := httptest.NewServer(demoapi.New(demoapi.Options{APIKey: testAPIKey}))
	defer upstream.Close()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()

	const url = "https://agent.example.com/shared"
	before := provisioned(t, ctx, url, upstream.URL)
	sent := rpc(t, before, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{
		"messageId":"m-1","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}`)
	if sent.Error != nil {
		t.Fatalf("SendMessage: error %d: %s", sent.Error.Code, sent.Error.Message)
	}
	id := decodeTask10(t, sent.Result).ID

	after := provisioned(t, ctx, url, upstream.URL)
	other := provisioned(t, ctx, "https://agent.example.com/other", upstream.URL)

	if err := before.Cleanup(); err != nil {
		t.Fatalf("Cleanup of the first handler: %v", err)
	}
	if r := getTask(t, after, id); r.Error != nil {
		t.Errorf("GetTask through the second handler after the first's Cleanup: error %d: %s", r.Error.Code, r.Error.Message)
	}
	if r := getTask(t, other, id); r.Error == nil || r.Error.Code != -32001 {
		t.Errorf("GetTask through a handler with another url: %s, want error -32001", r.Result)
	}

	if err := after.Cleanup(); err != nil {
		t.Fatalf("Cleanup of the second handler: %v", err)
	}
	if _, held := stores.References(url); held {
		t.Errorf("the store of %s is still held after its last handler's Cleanup", url)
	}
	// Caddy may clean up a handler twice (after a failed Validate, then
	// with its config); the second time is a no-op.
	if err := after.Cleanup(); err != nil {
		t.Errorf("second Cleanup: %v", err)
	}
}

func TestProvisionErrors(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()

	t.Run("missing skills file", func(t *testing.T) {
		h := validHandler()
		h.Skills = filepath.Join("testdata", "no-such-skills.yaml")
		err := h.Provision(ctx)
		defer h.Cleanup()
		abs, _ := filepath.Abs(h.Skills)
		if err == nil || !strings.Contains(err.Error(), abs) {
			t.Fatalf("Provision: %v; want an error naming %s", err, abs)
		}
		if _, held := stores.References(h.URL); held {
			t.Errorf("a failed Provision left the store of %s taken", h.URL)
		}
	})

	t.Run("invalid configuration", func(t *testing.T) {
		h := validHandler()
		h.Name = ""
		err := h.Provision(ctx)
		defer h.Cleanup()
		if err == nil || !strings.Contains(err.Error(), "name: the agent's name is required") {
			t.Fatalf("Provision: %v; want the Validate error", err)
		}
		if !strings.Contains(err.Error(), "a2a agent "+h.URL) {
			t.Errorf("Provision: %v; want it to name the agent by its url", err)
		}
	})

	t.Run("a url with a password", func(t *testing.T) {
		h := validHandler()
		h.URL = "https://user:s3cret@agent.example/"
		err := h.Provision(ctx)
		defer h.Cleanup()
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("Provision: %v; want an error without the password", err)
		}
	})
}
