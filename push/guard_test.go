package push_test

import (
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/push/pushtest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// TestCheckURLNamesTheSchemeRule: a refused scheme is answered with the
// rule that applies, http included where the agent permits it.
func TestCheckURLNamesTheSchemeRule(t *testing.T) {
	strict := newSender(t, push.Options{})
	insecure := newSender(t, push.Options{AllowInsecure: true})
	for _, tt := range []struct {
		sender *push.Sender
		url    string
		want   string
	}{
		{strict, "file:///etc/passwd", "must be an https URL (or http, which the agent's push option allow_insecure permits)"},
		{strict, "http://hooks.example.com/", "must be an https URL (or http, which the agent's push option allow_insecure permits)"},
		{insecure, "file:///etc/passwd", "must be an http or https URL"},
		{insecure, "gopher://hooks.example.com/", "must be an http or https URL"},
	} {
		if err := tt.sender.CheckURL(tt.url); err == nil || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("CheckURL(%s) = %v, want …%s", tt.url, err, tt.want)
		}
	}
}

// TestAllowedOriginsAreOriginsAlone: an allowed origin with a path (or a
// query, or a user) is refused when the sender is made, rather than its
// path silently dropped.
func TestAllowedOriginsAreOriginsAlone(t *testing.T) {
	for _, tt := range []struct {
		origin, want string // want "" for accepted
	}{
		{"https://hooks.example.com", ""},
		{"https://hooks.example.com/", ""},
		{"HTTP://127.0.0.1:8080", ""},
		{"http://127.0.0.1:8080/hook", `"http://127.0.0.1:8080/hook" is not an origin alone`},
		{"https://hooks.example.com/?x=1", "is not an origin alone"},
		{"https://hooks.example.com#top", "is not an origin alone"},
		{"https://user@hooks.example.com", "is not an origin alone"},
		{"ftp://hooks.example.com", "is not an http or https origin"},
		{"hooks.example.com", "is not an absolute URL"},
	} {
		_, err := push.New(push.Options{Key: newKey(t), Issuer: issuer, AllowedOrigins: []string{tt.origin}})
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("allowed origin %q: %v, want %q", tt.origin, err, tt.want)
		}
	}
}

func TestCheckHeaders(t *testing.T) {
	s := newSender(t, push.Options{})
	for _, tt := range []struct {
		c  tasks.PushConfig
		ok bool
	}{
		{tasks.PushConfig{}, true},
		{tasks.PushConfig{Token: "tok-1", AuthScheme: "Bearer", AuthCredentials: "abc.def_ghi=="}, true},
		{tasks.PushConfig{AuthScheme: "Basic", AuthCredentials: "dXNlcjpwdw==\twith tab, and é"}, true},
		{tasks.PushConfig{AuthScheme: "Bearer", AuthCredentials: "x\r\nX-Injected: 1"}, false},
		{tasks.PushConfig{AuthScheme: "Bearer", AuthCredentials: "x\n"}, false},
		{tasks.PushConfig{AuthScheme: "Bearer", AuthCredentials: "x\x00"}, false},
		{tasks.PushConfig{AuthScheme: "Bearer\r\nX-Injected: 1", AuthCredentials: "x"}, false},
		{tasks.PushConfig{AuthScheme: "Bearer x"}, false},
		{tasks.PushConfig{Token: "t\r"}, false},
	} {
		if err := s.CheckHeaders(&tt.c); (err == nil) != tt.ok {
			t.Errorf("CheckHeaders(%+q) = %v, want ok %v", tt.c, err, tt.ok)
		}
	}
}

// TestConfigsWhoseHeadersCannotBeSentFailForGood: a config stored before its headers
// were checked fails at once, not retried as if the receiver were down.
func TestConfigsWhoseHeadersCannotBeSentFailForGood(t *testing.T) {
	outcomes := make(chan push.Outcome, 16)
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, MaxAttempts: 3,
		InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, OnOutcome: func(o push.Outcome) { outcomes <- o }})
	hook := pushtest.NewReceiver(t)
	s.Push(task("t1", a2a.TaskStateWorking),
		[]tasks.PushConfig{{ID: "a", URL: hook.URL, AuthScheme: "Bearer", AuthCredentials: "x\r\ny", Version: a2a.V10}},
		[]a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
	select {
	case o := <-outcomes:
		if o != push.Failed {
			t.Errorf("first outcome %s, want %s", o, push.Failed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome")
	}
}
