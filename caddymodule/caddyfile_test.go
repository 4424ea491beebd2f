package caddymodule

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-a2a/caddy-a2a/confval"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  Handler
	}{
		{
			name:  "empty block",
			input: `a2a`,
			want:  Handler{},
		},
		{
			name: "every subdirective",
			input: `a2a {
				skills      examples/skills.yaml
				upstream    http://127.0.0.1:9090
				url         http://localhost:8080/
				name        "Demo Agent"
				description "Weather, users and orders"
				version     2.1.0
				provider    "Example Org" https://example.org
				documentation_url https://example.org/docs
				icon_url    https://example.org/icon.png
				default_input_modes  text/plain application/json
				default_output_modes application/json
				max_request_body 4MiB
				heartbeat   15s
				read_body_timeout 5s
				write_timeout 20s
				card_max_age 5m
				tasks {
					max_tasks     10000
					max_live_per_owner 100
					max_history   20
					max_age       1h
					max_input_wait 5m
					max_bytes     128MiB
					max_live_bytes_per_owner 16MiB
					max_task_bytes 4MiB
					stream_buffer 64
					redis {
						address     10.0.0.1:26379 10.0.0.2:26379
						master_name mymaster
						username    agent
						password    {env.REDIS_PASSWORD}
						db          2
						tls         redis.internal
						key_prefix  agents
						timeout     2s
					}
				}
			}`,
			want: Handler{
				Skills:             "examples/skills.yaml",
				Upstream:           "http://127.0.0.1:9090",
				URL:                "http://localhost:8080/",
				Name:               "Demo Agent",
				Description:        "Weather, users and orders",
				Version:            "2.1.0",
				Provider:           &Provider{Organization: "Example Org", URL: "https://example.org"},
				DocumentationURL:   "https://example.org/docs",
				IconURL:            "https://example.org/icon.png",
				DefaultInputModes:  []string{"text/plain", "application/json"},
				DefaultOutputModes: []string{"application/json"},
				MaxRequestBody:     4 << 20,
				Heartbeat:          caddy.Duration(15 * time.Second),
				ReadBodyTimeout:    caddy.Duration(5 * time.Second),
				WriteTimeout:       caddy.Duration(20 * time.Second),
				CardMaxAge:         caddy.Duration(5 * time.Minute),
				Tasks: &TasksConfig{
					Config: tasks.Config{
						MaxTasks:             10000,
						MaxLivePerOwner:      100,
						MaxHistory:           20,
						MaxAge:               confval.Duration(time.Hour),
						MaxInputWait:         confval.Duration(5 * time.Minute),
						MaxBytes:             128 << 20,
						MaxLiveBytesPerOwner: 16 << 20,
						MaxTaskBytes:         4 << 20,
						StreamBuffer:         64,
					},
					Redis: &RedisConfig{
						Addresses: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, MasterName: "mymaster",
						Username: "agent", Password: "{env.REDIS_PASSWORD}", DB: 2, TLS: true, TLSServerName: "redis.internal",
						KeyPrefix: "agents", Timeout: caddy.Duration(2 * time.Second),
					},
				},
			},
		},
		{
			name:  "decimal sizes and day durations",
			input: "a2a {\n max_request_body 1MB\n card_max_age 1d\n}",
			want:  Handler{MaxRequestBody: 1_000_000, CardMaxAge: caddy.Duration(24 * time.Hour)},
		},
		{
			name:  "plain byte count",
			input: "a2a {\n max_request_body 65536\n}",
			want:  Handler{MaxRequestBody: 65536},
		},
		{
			name:  "empty tasks block",
			input: "a2a {\n tasks\n}",
			want:  Handler{Tasks: &TasksConfig{}},
		},
		{
			name:  "empty push block",
			input: "a2a {\n push\n}",
			want:  Handler{Push: &PushConfig{}},
		},
		{
			name: "push block",
			input: `a2a {
				push {
					key {env.PUSH_KEY} push-1 ES256
					allow_insecure
					allow_private
					allowed_networks 10.20.0.0/16 fd00::/8
					allowed_origins https://hooks.example.com
					timeout 15s
					max_attempts 5
					initial_backoff 500ms
					max_backoff 1m
					queue_length 16
					queue_bytes 2MiB
					max_receivers 100
					max_configs_per_task 3
				}
			}`,
			want: Handler{Push: &PushConfig{
				Key: &SigningKey{Key: "{env.PUSH_KEY}", ID: "push-1", Algorithm: "ES256"},
				Config: push.Config{
					AllowInsecure: true, AllowPrivate: true, AllowedNetworks: []string{"10.20.0.0/16", "fd00::/8"},
					AllowedOrigins: []string{"https://hooks.example.com"},
					Timeout:        confval.Duration(15 * time.Second), MaxAttempts: 5,
					InitialBackoff: confval.Duration(500 * time.Millisecond), MaxBackoff: confval.Duration(time.Minute),
					QueueLength: 16, QueueBytes: 2 << 20, MaxReceivers: 100, MaxConfigsPerTask: 3,
				},
			}},
		},
		{
			name:  "partial tasks block",
			input: "a2a {\n tasks {\n max_age 30m\n }\n name n\n}",
			want:  Handler{Tasks: &TasksConfig{Config: tasks.Config{MaxAge: confval.Duration(30 * time.Minute)}}, Name: "n"},
		},
		{
			name:  "resend window",
			input: "a2a {\n tasks {\n resend_window 10m\n max_resend_keys 500\n }\n}",
			want:  Handler{Tasks: &TasksConfig{Config: tasks.Config{ResendWindow: new(confval.Duration(10 * time.Minute)), MaxResendKeys: 500}}},
		},
		{
			name:  "store module",
			input: "a2a {\n tasks {\n store memory\n }\n}",
			want:  Handler{Tasks: &TasksConfig{StoreRaw: json.RawMessage(`{"module":"memory"}`)}},
		},
		{
			name:  "resends off",
			input: "a2a {\n tasks {\n resend_window 0\n }\n}",
			want:  Handler{Tasks: &TasksConfig{Config: tasks.Config{ResendWindow: new(confval.Duration(0))}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Handler
			if err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input)); err != nil {
				t.Fatalf("UnmarshalCaddyfile: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // a substring of the error
	}{
		{"argument on the directive", "a2a examples/skills.yaml", "a2a: unexpected argument 'examples/skills.yaml'"},
		{"redis without an address", "a2a {\n tasks {\n redis {\n address\n }\n }\n}", "address"},
		{"redis with an unknown option", "a2a {\n tasks {\n redis {\n host x\n }\n }\n}", "unknown subdirective 'host'"},
		{"redis db not a number", "a2a {\n tasks {\n redis {\n db zero\n }\n }\n}", "'zero' is not an integer"},
		{"unknown subdirective", "a2a {\n skill x\n}", "a2a: unknown subdirective 'skill' (valid: skills, upstream, url,"},
		{"repeated subdirective", "a2a {\n name a\n name b\n}", "a2a: name is set more than once, at Testfile:3"},

		{"skills without a file", "a2a {\n skills\n}", "skills: want exactly one argument, got 0"},
		{"skills with two files", "a2a {\n skills a.yaml b.yaml\n}", "skills: want exactly one argument, got 2"},
		{"upstream without a URL", "a2a {\n upstream\n}", "upstream: want exactly one argument, got 0"},
		{"url without a URL", "a2a {\n url\n}", "url: want exactly one argument, got 0"},
		{"name without a name", "a2a {\n name\n}", "name: want exactly one argument, got 0"},
		{"name in two words", "a2a {\n name Demo Agent\n}", "name: want exactly one argument, got 2"},
		{"description without text", "a2a {\n description\n}", "description: want exactly one argument, got 0"},
		{"version without a version", "a2a {\n version\n}", "version: want exactly one argument, got 0"},
		{"documentation_url without a URL", "a2a {\n documentation_url\n}", "documentation_url: want exactly one argument, got 0"},
		{"icon_url without a URL", "a2a {\n icon_url\n}", "icon_url: want exactly one argument, got 0"},

		{"provider without a URL", "a2a {\n provider Org\n}", "provider: want <organization> <url>, got 1 arguments"},
		{"provider with three arguments", "a2a {\n provider Example Org https://example.org\n}", "provider: want <organization> <url>, got 3 arguments"},

		{"default_input_modes empty", "a2a {\n default_input_modes\n}", "default_input_modes: want at least one argument"},
		{"default_output_modes empty", "a2a {\n default_output_modes\n}", "default_output_modes: want at least one argument"},

		{"max_request_body missing", "a2a {\n max_request_body\n}", "max_request_body: want exactly one argument, got 0"},
		{"max_request_body not a size", "a2a {\n max_request_body lots\n}", "max_request_body: 'lots' is not a size"},
		{"max_request_body zero", "a2a {\n max_request_body 0\n}", "max_request_body: 0 is not positive"},
		{"max_request_body too large", "a2a {\n max_request_body 9EiB\n}", "max_request_body: 9EiB is too large"},

		{"heartbeat missing", "a2a {\n heartbeat\n}", "heartbeat: want exactly one argument, got 0"},
		{"heartbeat not a duration", "a2a {\n heartbeat often\n}", "heartbeat: 'often' is not a duration"},
		{"heartbeat negative", "a2a {\n heartbeat -1s\n}", "heartbeat: -1s is not positive"},
		{"card_max_age not a duration", "a2a {\n card_max_age 5\n}", "card_max_age: '5' is not a duration"},
		{"card_max_age zero", "a2a {\n card_max_age 0s\n}", "card_max_age: 0s is not positive"},

		{"tasks with an argument", "a2a {\n tasks 10\n}", "tasks: unexpected argument '10'"},
		{"tasks unknown subdirective", "a2a {\n tasks {\n max 1\n }\n}", "tasks: unknown subdirective 'max' (valid: max_tasks, max_live_per_owner,"},
		{"tasks repeated subdirective", "a2a {\n tasks {\n max_tasks 1\n max_tasks 2\n }\n}", "tasks: max_tasks is set more than once"},
		{"max_tasks missing", "a2a {\n tasks {\n max_tasks\n }\n}", "max_tasks: want exactly one argument, got 0"},
		{"max_tasks not an integer", "a2a {\n tasks {\n max_tasks 1e4\n }\n}", "max_tasks: '1e4' is not an integer"},
		{"max_tasks zero", "a2a {\n tasks {\n max_tasks 0\n }\n}", "max_tasks: 0 is not positive"},
		{"max_age not a duration", "a2a {\n tasks {\n max_age forever\n }\n}", "max_age: 'forever' is not a duration"},
		{"max_age negative", "a2a {\n tasks {\n max_age -1h\n }\n}", "max_age: -1h is not positive"},
		{"resend_window negative", "a2a {\n tasks {\n resend_window -1m\n }\n}", "resend_window: -1m is negative"},
		{"resend_window not a duration", "a2a {\n tasks {\n resend_window off\n }\n}", "resend_window: 'off' is not a duration"},
		{"stream_buffer negative", "a2a {\n tasks {\n stream_buffer -1\n }\n}", "stream_buffer: -1 is not positive"},
		{"stream_buffer two arguments", "a2a {\n tasks {\n stream_buffer 1 2\n }\n}", "stream_buffer: want exactly one argument, got 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if err == nil {
				t.Fatalf("no error; want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// Every subdirective an unknown-subdirective error lists as valid is one
// its block takes: given without its arguments, it may fail, but never as
// unknown. The lists of the blocks read by settings are taken from that
// error.
func TestListedSubdirectivesAreTaken(t *testing.T) {
	blocks := []struct {
		open, close string
		names       []string
	}{
		{"a2a {\n", "}", nil},
		{"a2a {\n tasks {\n", "}\n}", nil},
		{"a2a {\n tasks {\n redis {\n", "}\n}\n}", nil},
		{"a2a {\n push {\n", "}\n}", nil},
		{"a2a {\n signing {\n", "}\n}", nil},
		{"a2a {\n extended_card {\n", "}\n}", nil},
		{"a2a {\n security {\n", "}\n}", nil},
		{"a2a {\n security {\n bearer b {\n introspection https://x {\n", "}\n}\n}\n}", nil},
		{"a2a {\n security {\n oauth2 o {\n flow client_credentials {\n", "}\n}\n}\n}", nil},
	}
	for kind, args := range map[string]string{"api_key": "k header X-Key", "basic": "b", "bearer": "b", "oauth2": "o",
		"openid_connect": "o https://issuer.example", "mutual_tls": "m"} {
		blocks = append(blocks, struct {
			open, close string
			names       []string
		}{"a2a {\n security {\n " + kind + " " + args + " {\n", "}\n}\n}", nil})
	}
	if len(blocks) != 9+len(schemeKinds) {
		t.Fatalf("%d blocks, want one per scheme kind more than 9", len(blocks))
	}
	for _, b := range blocks {
		if b.names == nil {
			b.names = listedSubdirectives(t, b.open, b.close)
		}
		for _, name := range b.names {
			input := b.open + name + "\n" + b.close
			var h Handler
			if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil && strings.Contains(err.Error(), "unknown subdirective") {
				t.Errorf("%q is listed as valid but refused:\n%s\n%v", name, input, err)
			}
		}
	}
}
