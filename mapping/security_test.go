package mapping_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/mapping"
)

func TestSkillSecurity(t *testing.T) {
	s := load(t, minimal+`    extended: true
    security:
      - oauth: [orders:write, orders:read]
      - {key: [], mtls: null}
      - staff
`, "", mapping.Options{})
	sk := s.ByID("a")
	want := []a2a.SecurityRequirement{
		{"oauth": {"orders:write", "orders:read"}},
		{"key": {}, "mtls": nil},
		{"staff": nil},
	}
	if !reflect.DeepEqual(sk.SecurityRequirements, want) {
		t.Errorf("SecurityRequirements = %#v, want %#v", sk.SecurityRequirements, want)
	}
	if got := sk.AgentSkill().SecurityRequirements; !reflect.DeepEqual(got, want) {
		t.Errorf("AgentSkill().SecurityRequirements = %#v, want %#v", got, want)
	}
	if !sk.Extended {
		t.Error("Extended = false, want true")
	}
}

func TestSkillSecurityErrors(t *testing.T) {
	undeclared := func(reqs []a2a.SecurityRequirement) error {
		for _, req := range reqs {
			if _, ok := req["nope"]; ok {
				return errors.New(`scheme "nope" is not declared`)
			}
		}
		return nil
	}
	tests := []struct {
		name, yaml string
		opts       mapping.Options
		want       string
	}{
		{"not a list", "    security: key\n", mapping.Options{}, `t.yaml:8: skill "a": security: must be a list of alternatives`},
		{"empty list", "    security: []\n", mapping.Options{}, `t.yaml:8: skill "a": security: must be a list of alternatives`},
		{"empty alternative", "    security: [{}]\n", mapping.Options{}, `t.yaml:8: skill "a": security[0]: an empty alternative would admit anyone`},
		{"bad scheme name", "    security: [\"a b\"]\n", mapping.Options{}, `security[0]: "a b" is not a scheme name`},
		{"scopes not a list", "    security: [{key: admin}]\n", mapping.Options{}, `security[0].key: must be a list, not a string`},
		{"scope with a space", "    security:\n      - key: [\"a b\"]\n", mapping.Options{}, `t.yaml:9: skill "a": security[0].key[0]: "a b" is not a scope`},
		{"undeclared scheme", "    security:\n      - nope: []\n", mapping.Options{CheckSecurity: undeclared},
			`t.yaml:9: skill "a": security: scheme "nope" is not declared`},
		{"extended not a boolean", "    extended: yes please\n", mapping.Options{}, `extended: must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mapping.Parse("t.yaml", []byte(minimal+tt.yaml), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestForwardHeadersErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"not a list", "    forward_headers: Authorization\n", `forward_headers: must be a list`},
		{"bad name", "    forward_headers: [\"X Y\"]\n", `t.yaml:8: skill "a": forward_headers[0]: "X Y" is not a valid header name`},
		{"hop by hop", "    forward_headers: [connection]\n", `forward_headers[0]: Connection cannot be forwarded`},
		{"content type", "    forward_headers: [Content-Type]\n", `forward_headers[0]: Content-Type cannot be forwarded`},
		{"repeated", "    forward_headers: [authorization, Authorization]\n", `forward_headers[1]: repeated header`},
		{"also configured", strings.Replace(minimal, "path: /a", "path: /a\n      headers: {Authorization: Basic eA==}", 1) +
			"    forward_headers: [Authorization]\n", `t.yaml:9: skill "a": forward_headers: Authorization is also set by upstream.headers or request.headers`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.yaml
			if !strings.HasPrefix(src, "upstream") {
				src = minimal + src
			}
			_, err := mapping.Parse("t.yaml", []byte(src), mapping.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// TestCallerCredentialsStayHome: the caller's Authorization header, API key
// and cookies never reach the upstream, unless the skill forwards a header
// by name; the caller's identity reaches it through expressions.
func TestCallerCredentialsStayHome(t *testing.T) {
	srv, ch := recorder(t, nil)
	s := load(t, `upstream:
  url: http://127.0.0.1:1
  headers:
    X-Service-Key: service-secret
skills:
  - id: plain
    description: forwards nothing
    request:
      path: /plain
      headers:
        X-On-Behalf-Of: "{caller.subject}"
        X-Scopes: "{join(caller.scopes, ' ')}"
        X-Tenant: "{caller.claims.tenant}"
  - id: forwarding
    description: forwards the caller's token and a trace header
    forward_headers: [authorization, X-Trace-Id]
    steps:
      - name: first
        request: {path: /first}
      - name: second
        request: {path: /second}
`, srv.URL, mapping.Options{})
	inbound := http.Header{
		"Authorization": {"Bearer caller-token"},
		"X-Api-Key":     {"caller-api-key"},
		"Cookie":        {"session=caller-cookie"},
		"X-Trace-Id":    {"trace-1"},
	}
	caller := mapping.Caller{Subject: "alice", Scopes: []string{"orders:read", "orders:write"},
		Claims: map[string]any{"tenant": "acme"}}
	run := func(id string) mapping.Outcome {
		msg := message(id, map[string]any{}, "")
		return s.ByID(id).Run(context.Background(), mapping.Call{Message: msg, TaskID: "t", ContextID: "c",
			Caller: caller, Headers: inbound}, nil)
	}

	if out := run("plain"); out.State != a2a.TaskStateCompleted {
		t.Fatalf("plain: %s %q %v", out.State, messageText(out), out.Err)
	}
	got := received(t, ch)
	for _, h := range []string{"Authorization", "X-Api-Key", "Cookie", "X-Trace-Id"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("plain: the upstream got the caller's %s: %q", h, v)
		}
	}
	for h, want := range map[string]string{"X-On-Behalf-Of": "alice", "X-Scopes": "orders:read orders:write",
		"X-Tenant": "acme", "X-Service-Key": "service-secret"} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("plain: %s = %q, want %q", h, v, want)
		}
	}

	if out := run("forwarding"); out.State != a2a.TaskStateCompleted {
		t.Fatalf("forwarding: %s %q %v", out.State, messageText(out), out.Err)
	}
	for _, path := range []string{"/first", "/second"} {
		got := received(t, ch)
		if got.RequestURI != path {
			t.Fatalf("request %s, want %s", got.RequestURI, path)
		}
		if v := got.Header.Get("Authorization"); v != "Bearer caller-token" {
			t.Errorf("%s: Authorization = %q, want the caller's", path, v)
		}
		if v := got.Header.Get("X-Trace-Id"); v != "trace-1" {
			t.Errorf("%s: X-Trace-Id = %q", path, v)
		}
		if v := got.Header.Get("X-Api-Key") + got.Header.Get("Cookie"); v != "" {
			t.Errorf("%s: a header the skill does not forward reached the upstream: %q", path, v)
		}
		if v := got.Header.Get("X-Service-Key"); v != "service-secret" {
			t.Errorf("%s: X-Service-Key = %q", path, v)
		}
	}

	// A forwarded header the caller did not send is simply absent, and the
	// anonymous caller's subject is empty: the header built from it is too.
	msg := message("forwarding", map[string]any{}, "")
	if out := s.ByID("forwarding").Run(context.Background(), mapping.Call{Message: msg}, nil); out.State != a2a.TaskStateCompleted {
		t.Fatalf("forwarding without headers: %s %v", out.State, out.Err)
	}
	for range 2 {
		if v := received(t, ch).Header.Get("Authorization"); v != "" {
			t.Errorf("Authorization = %q with no inbound header", v)
		}
	}
}
