package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/internal/redistest"
)

// The probes on a port of their own: liveness answers while the process
// serves; readiness waits for the JWKS's first fetch and for Redis, and
// says no again when Redis goes away.
func TestIntegrationHealthProbes(t *testing.T) {
	a := startAgent(t) // the demo API, and Caddy's admin port
	idp := newJWKSServer(t)
	release := make(chan struct{})
	// The identity provider hangs until the test lets it answer.
	gatedJWKS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		resp, err := http.Get(idp.url)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(gatedJWKS.Close)
	redisSrv := redistest.Start(t)
	healthPort := freePort(t)

	initServer(t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	auto_https off
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url http://127.0.0.1:%d/
		name "Probed Agent"
		description "Ready when its keys and its store are"
		security {
			bearer jwt {
				issuer https://issuer.test
				audience a2a-test
				jwks_url %s
			}
		}
		tasks {
			redis {
				address %s
				key_prefix health
			}
		}
	}
}

:%d {
	bind 127.0.0.1
	a2a_health /healthz live
	a2a_health /readyz ready
}
`, adminPort, a.port, a.skills, a.upstream, a.port, gatedJWKS.URL, redisSrv.Addr(), healthPort))

	probe := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", healthPort, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := a.tester.Client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if cc := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusMethodNotAllowed && cc != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", method, path, cc)
		}
		return resp.StatusCode, string(body)
	}
	// waitFor polls readiness, which follows Caddy's background work (the
	// key fetch, the store's subscription), until it answers want.
	waitFor := func(want int, mention string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, body := probe(http.MethodGet, "/readyz")
			if status == want && strings.Contains(body, mention) {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("readiness: %d %q, want %d mentioning %q", status, body, want, mention)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if status, body := probe(http.MethodGet, "/healthz"); status != http.StatusOK || body != "ok\n" {
		t.Errorf("liveness: %d %q", status, body)
	}
	body := waitFor(http.StatusServiceUnavailable, "security: jwt: its keys (JWKS) have never been fetched")
	if !strings.Contains(body, "agent http://127.0.0.1:") {
		t.Errorf("readiness does not name the agent: %q", body)
	}

	close(release)
	waitFor(http.StatusOK, "ready\n")
	if status, body := probe(http.MethodHead, "/readyz"); status != http.StatusOK || body != "" {
		t.Errorf("HEAD readiness: %d %q", status, body)
	}
	if status, _ := probe(http.MethodPost, "/readyz"); status != http.StatusMethodNotAllowed {
		t.Errorf("POST readiness: %d, want 405", status)
	}

	redisSrv.Stop(t)
	waitFor(http.StatusServiceUnavailable, "tasks/redis")
	if status, _ := probe(http.MethodGet, "/healthz"); status != http.StatusOK {
		t.Errorf("liveness with Redis down: %d, want 200: the process still serves", status)
	}

	// Without an agent there is nothing ready.
	initServer(t, a.tester, fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n}\n:%d {\n\tbind 127.0.0.1\n\ta2a_health\n}\n",
		adminPort, healthPort))
	if status, body := probe(http.MethodGet, "/readyz"); status != http.StatusServiceUnavailable || body != "no A2A agent is loaded\n" {
		t.Errorf("readiness without an agent: %d %q", status, body)
	}
}

// The probes may share the A2A site, written before the a2a handler (in
// any order: the directive order puts a2a_health first): the probe paths
// answer as probes, and every other request reaches the agent.
func TestIntegrationHealthOnTheAgentSite(t *testing.T) {
	a := startAgent(t)
	initServer(t, a.tester, fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
}

:%d {
	bind 127.0.0.1
	a2a {
		skills "%s"
		upstream %s
		url %s
		name "Probed Agent"
		description "Probes on the agent's own site"
	}
	a2a_health /healthz live
	a2a_health /readyz ready
}
`, adminPort, a.port, a.skills, a.upstream, a.publicURL()))
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		if resp, body := a.get(a.publicURL()+path[1:], nil); resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, body, want)
		}
	}
	if r := a.call("1.0", sendMessage("weather", `{"city":"Paris"}`)); r.Error != nil {
		t.Fatalf("a message on the probes' site: %+v", r.Error)
	}
}
