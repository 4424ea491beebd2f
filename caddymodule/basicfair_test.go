package caddymodule

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"golang.org/x/crypto/bcrypt"
)

// loadStaffAgent loads an agent on port whose callers log in with the
// passwords of users, the lines of its basic scheme.
func loadStaffAgent(t *testing.T, port int, users string) *caddytest.Tester {
	t.Helper()
	return loadSecured(t, fmt.Sprintf(":%d", port), "", fmt.Sprintf(`
		skills "%s"
		url http://127.0.0.1:%d/
		name "Staff Agent"
		description "Staff log in with a password"
		security {
			basic staff {
				%s
			}
		}`, writeSkills(t, `upstream:
  url: http://127.0.0.1:1
skills:
  - id: whoami
    description: Tells the upstream who is calling
    request: {path: /whoami}
`), port, users))
}

// TestIntegrationBasicUnknownUser checks, through Caddy, that a login for
// an unknown user (which is answered without a hash comparison once one
// has been timed) gets the very answer a wrong password for a known user
// gets: status, headers and body.
func TestIntegrationBasicUnknownUser(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("carol's password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	a := &securedAgent{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	a.tester = loadStaffAgent(t, port, fmt.Sprintf("user carol %s", hash))
	a.client = a.tester.Client

	login := func(user, password string) (*http.Response, string) {
		t.Helper()
		resp, _, raw := a.rpc("GetTask", `{"id":"t-1"}`,
			"Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s: %s %s, want 401", user, resp.Status, raw)
		}
		resp.Header.Del("Date")
		return resp, raw
	}
	login("carol", "guess-1") // times a comparison, which unknown users then stand in for
	wrong, wrongBody := login("carol", "guess-2")
	unknown, unknownBody := login("mallory", "guess-3")
	if unknownBody != wrongBody {
		t.Errorf("body for an unknown user:\n%s\nfor a wrong password:\n%s", unknownBody, wrongBody)
	}
	if !maps.EqualFunc(unknown.Header, wrong.Header, slices.Equal[[]string]) {
		t.Errorf("headers for an unknown user:\n%v\nfor a wrong password:\n%v", unknown.Header, wrong.Header)
	}
}

// TestIntegrationBasicLoginWaitPerClient checks, through Caddy, that a
// client address sending wrong passwords for many users at once delays
// another address's login no more than one trying a single user would:
// the login waits behind the places that address holds in the order of
// password checks, not behind one attempt for each user it tries. The
// measure is a count, not a time: how many of the attacker's attempts are
// answered while the login waits.
func TestIntegrationBasicLoginWaitPerClient(t *testing.T) {
	tried := 12*max(1, runtime.GOMAXPROCS(0)/2) + 12
	hash, err := bcrypt.GenerateFromPassword([]byte("bob's password"), 5)
	if err != nil {
		t.Fatal(err)
	}
	users := fmt.Sprintf("user bob %s\n", hash)
	for i := range tried {
		users += fmt.Sprintf("user user-%d %s\n", i, hash)
	}
	port := freePort(t)
	loadStaffAgent(t, port, users)

	// from is a client whose connections come from the loopback address ip.
	from := func(ip string) *http.Client {
		transport := &http.Transport{MaxIdleConnsPerHost: 2 * tried,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
		t.Cleanup(transport.CloseIdleConnections)
		return &http.Client{Transport: transport}
	}
	login := func(ctx context.Context, c *http.Client, user, password string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/", port),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1"}}`))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}

	// Two attempts at a time for each user, each password new (a repeated
	// one is refused from the cache), all from one address.
	attacker := from("127.0.0.2")
	ctx, stop := context.WithCancel(t.Context())
	var (
		attacks  sync.WaitGroup
		answered atomic.Int64
		warm     = make(chan struct{}) // closed once every user's attempts went round
	)
	defer func() {
		stop()
		attacks.Wait()
	}()
	for i := range 2 * tried {
		user := fmt.Sprint("user-", i%tried)
		attacks.Go(func() {
			for n := 0; ; n++ {
				status, err := login(ctx, attacker, user, fmt.Sprintf("wrong-%d-%d", i, n))
				if ctx.Err() != nil {
					return
				}
				if err != nil || status != http.StatusUnauthorized {
					t.Errorf("a wrong password for %s: %d %v, want 401", user, status, err)
					return
				}
				if answered.Add(1) == int64(2*tried) {
					close(warm)
				}
			}
		})
	}
	select {
	case <-warm:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d wrong passwords answered after 30s, want %d", answered.Load(), 2*tried)
	}

	before := answered.Load()
	status, err := login(t.Context(), from("127.0.0.3"), "bob", "bob's password")
	waited := answered.Load() - before
	if err != nil || status == http.StatusUnauthorized {
		t.Fatalf("bob's login: %d %v", status, err)
	}
	if waited > int64(tried/2) {
		t.Errorf("bob's login waited while %d wrong passwords from one address for %d users were answered, want at most %d",
			waited, tried, tried/2)
	}
}
