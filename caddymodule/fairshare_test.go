package caddymodule

import (
	"fmt"
	"strings"
	"testing"
)

// Anonymous callers, from however many addresses, cannot lock
// authenticated callers out, and one address holds a small part of the
// anonymous share: through a real Caddy, with real client addresses on
// loopback (127.0.0.0/8), each filling its share with tasks that wait for
// input.
func TestIntegrationAnonymousShare(t *testing.T) {
	for _, addresses := range []int{4, 64} {
		t.Run(fmt.Sprint(addresses, " addresses"), func(t *testing.T) {
			a := startAgent(t)
			// max_tasks 400: the anonymous share is 200 live tasks, one
			// address's 4.
			a.loadWith(fmt.Sprintf("http://localhost:%d/share-%d", a.port, addresses), "Shares", `
		security {
			api_key key header X-Api-Key {
				key secret-key-of-alice alice
			}
			require key
			require anonymous
		}
		tasks {
			max_tasks 400
		}`)
			const perClient, anonymousShare = 4, 200
			// ask sends a weather question without a city (the task waits
			// for input) from addr, with headers; it answers the error's
			// description, or "".
			ask := func(addr string, header ...string) string {
				t.Helper()
				r := a.rpcFrom(addr, a.port, sendMessage("weather", `{}`), header...)
				if r.Error != nil {
					return r.Error.Message + string(r.Error.Data)
				}
				if tk := decodeTask10(t, r.Result); tk.Status.State != "TASK_STATE_INPUT_REQUIRED" {
					t.Fatalf("a weather question without a city: %s", tk.Status.State)
				}
				return ""
			}
			held := 0
		addresses:
			for i := range addresses {
				addr := fmt.Sprintf("127.0.0.%d", 2+i)
				accepted := 0
				var refusal string
				for refusal == "" && accepted <= perClient {
					if refusal = ask(addr); refusal == "" {
						accepted++
					}
				}
				held += accepted
				switch {
				case held <= anonymousShare && accepted != perClient:
					t.Fatalf("address %s got %d tasks, want its %d", addr, accepted, perClient)
				case held <= anonymousShare && !strings.Contains(refusal, "one anonymous client may"):
					t.Fatalf("address %s past its share: %s", addr, refusal)
				case held > anonymousShare:
					t.Fatalf("anonymous callers hold %d tasks, past their share of %d", held, anonymousShare)
				case held == anonymousShare && i+1 < addresses:
					// The share is full: every other address is refused.
					if refusal := ask(fmt.Sprintf("127.0.0.%d", 3+i)); !strings.Contains(refusal, "anonymous callers have") {
						t.Fatalf("a new address once the anonymous share is full: %q", refusal)
					}
					break addresses
				}
			}
			if addresses == 4 && held != addresses*perClient {
				t.Errorf("4 addresses hold %d tasks, want %d", held, addresses*perClient)
			}
			if addresses == 64 && held != anonymousShare {
				t.Errorf("64 addresses hold %d tasks, want the share of %d", held, anonymousShare)
			}
			// Authenticated callers still get in, from any address.
			for i := range 10 {
				if refusal := ask(fmt.Sprintf("127.0.0.%d", 2+i), "X-Api-Key", "secret-key-of-alice"); refusal != "" {
					t.Fatalf("an authenticated caller was locked out: %s", refusal)
				}
			}
		})
	}
}
