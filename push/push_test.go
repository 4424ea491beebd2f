package push_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/keys"
	"github.com/caddy-a2a/caddy-a2a/push"
	"github.com/caddy-a2a/caddy-a2a/push/pushtest"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

const issuer = "https://agent.test/a2a"

func newKey(t testing.TB) keys.Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return keys.Key{ID: "push-1", Algorithm: "ES256", Public: priv.Public(), Private: priv}
}

// logs returns a logger whose warnings and errors arrive on a channel.
func logs(t testing.TB) (*zap.Logger, <-chan zapcore.Entry) {
	ch := make(chan zapcore.Entry, 64)
	return zap.New(warnCore{ch}), ch
}

// warnCore passes the entries of warn level and above to a channel.
type warnCore struct{ ch chan zapcore.Entry }

func (warnCore) Enabled(l zapcore.Level) bool        { return l >= zapcore.WarnLevel }
func (c warnCore) With([]zapcore.Field) zapcore.Core { return c }
func (c warnCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}
func (c warnCore) Write(e zapcore.Entry, _ []zapcore.Field) error { c.ch <- e; return nil }
func (warnCore) Sync() error                                      { return nil }

func newSender(t testing.TB, opts push.Options) *push.Sender {
	t.Helper()
	if opts.Key.Private == nil {
		opts.Key = newKey(t)
	}
	opts.Issuer = issuer
	s, err := push.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func status(taskID string, state a2a.TaskState) a2a.StreamResponse {
	return a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: taskID, ContextID: "c", Status: a2a.TaskStatus{State: state}}}
}

func task(id string, state a2a.TaskState) *a2a.Task {
	return &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: state}}
}

func TestDeliversInOrderWithHeadersAndJWT(t *testing.T) {
	key := newKey(t)
	s := newSender(t, push.Options{Key: key, AllowInsecure: true, AllowPrivate: true})
	hook10 := pushtest.NewReceiver(t)
	hook03 := pushtest.NewReceiver(t)
	configs := []tasks.PushConfig{
		{ID: "a", URL: hook10.URL + "/hook", Token: "tok-a", Version: a2a.V10},
		{ID: "b", URL: hook03.URL, AuthScheme: "Basic", AuthCredentials: "dXNlcjpwdw==", Version: a2a.V03},
	}
	states := []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateWorking, a2a.TaskStateCompleted}
	for _, st := range states {
		s.Push(task("t1", st), configs, []a2a.StreamResponse{status("t1", st)})
	}

	jwks, err := keys.MarshalJWKS([]keys.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range states {
		r := hook10.Next(t)
		want, _ := a2a.AppendPushNotification(nil, a2a.V10, nil, &[]a2a.StreamResponse{status("t1", st)}[0])
		if string(r.Body) != string(want) {
			t.Errorf("1.0 notification %d: %s, want %s", i, r.Body, want)
		}
		if r.Header.Get("Content-Type") != "application/a2a+json" || r.Header.Get(push.TokenHeader) != "tok-a" {
			t.Errorf("1.0 headers: %v", r.Header)
		}
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			t.Fatalf("1.0 Authorization: %q", r.Header.Get("Authorization"))
		}
		header, claims := pushtest.Verify(t, jwks, bearer, issuer, hook10.URL+"/hook", "t1", r.Body)
		exp, _ := claims.GetExpirationTime()
		if header["kid"] != key.ID || time.Until(exp.Time) > push.TokenLifetime {
			t.Errorf("kid %v, exp %v: want %s and at most %s", header["kid"], exp, key.ID, push.TokenLifetime)
		}

		r = hook03.Next(t)
		var body struct {
			Kind   string `json:"kind"`
			Status struct{ State string }
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Kind != "task" || body.Status.State != a2a.TaskState(st).String() {
			t.Errorf("0.3 notification %d: %s (%v)", i, r.Body, err)
		}
		if r.Header.Get("Authorization") != "Basic dXNlcjpwdw==" || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get(push.TokenHeader) != "" {
			t.Errorf("0.3 headers: %v", r.Header)
		}
		pushtest.Verify(t, jwks, r.Header.Get(push.JWTHeader), issuer, hook03.URL, "t1", r.Body)
	}
}

func TestRetriesWithBoundedBackoff(t *testing.T) {
	log, warnings := logs(t)
	outcomes := make(chan push.Outcome, 64)
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Logger: log,
		MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		OnOutcome: func(o push.Outcome) { outcomes <- o }})

	// Two failures, then success: one notification, three attempts.
	hook := pushtest.NewReceiver(t, 503, 500)
	cfg := []tasks.PushConfig{{ID: "a", URL: hook.URL, Version: a2a.V10}}
	s.Push(task("t1", a2a.TaskStateWorking), cfg, []a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
	s.Push(task("t1", a2a.TaskStateCompleted), cfg, []a2a.StreamResponse{status("t1", a2a.TaskStateCompleted)})
	for range 3 {
		if r := hook.Next(t); !strings.Contains(string(r.Body), "WORKING") {
			t.Fatalf("a retry of the first notification was overtaken: %s", r.Body)
		}
	}
	if r := hook.Next(t); !strings.Contains(string(r.Body), "COMPLETED") {
		t.Fatalf("second notification: %s", r.Body)
	}

	// Always failing: MaxAttempts attempts, then one warning; a later
	// notification gets one attempt.
	dead := pushtest.NewReceiver(t, 500, 500, 500, 500, 500, 500)
	cfg = []tasks.PushConfig{{ID: "d", URL: dead.URL, Version: a2a.V10}}
	s.Push(task("t2", a2a.TaskStateWorking), cfg, []a2a.StreamResponse{status("t2", a2a.TaskStateWorking)})
	for range 3 {
		dead.Next(t)
	}
	select {
	case e := <-warnings:
		if !strings.Contains(e.Message, "failed") {
			t.Errorf("warning: %q", e.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no warning for a notification that finally failed")
	}
	s.Push(task("t2", a2a.TaskStateCompleted), cfg, []a2a.StreamResponse{status("t2", a2a.TaskStateCompleted)})
	if r := dead.Next(t); !strings.Contains(string(r.Body), "COMPLETED") {
		t.Fatalf("after the failure: %s", r.Body)
	}
	// A client error is not retried: a 4xx answer is final.
	gone := pushtest.NewReceiver(t, 404, 200)
	cfg = []tasks.PushConfig{{ID: "g", URL: gone.URL, Version: a2a.V10}}
	s.Push(task("t3", a2a.TaskStateWorking), cfg, []a2a.StreamResponse{status("t3", a2a.TaskStateWorking)})
	s.Push(task("t3", a2a.TaskStateCompleted), cfg, []a2a.StreamResponse{status("t3", a2a.TaskStateCompleted)})
	gone.Next(t)
	if r := gone.Next(t); !strings.Contains(string(r.Body), "COMPLETED") {
		t.Fatalf("a 404 was retried: %s", r.Body)
	}

	// What OnOutcome heard: t1 two retries and two deliveries; t2 two
	// retries and a failure, then one failure more, after two more retries
	// unless its receiver was still marked failing when the notification
	// came (then it gets one attempt); t3 a final 404 and a delivery. The
	// last failure of t2 comes after its retries: once 3 deliveries and 3
	// failures are heard, every outcome is.
	got := map[push.Outcome]int{}
	for got[push.Delivered] < 3 || got[push.Failed] < 3 {
		select {
		case o := <-outcomes:
			got[o]++
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes heard %v, want 3 delivered and 3 failed", got)
		}
	}
	if got[push.Delivered] != 3 || got[push.Failed] != 3 || (got[push.Retried] != 4 && got[push.Retried] != 6) || got[push.Dropped] != 0 {
		t.Errorf("outcomes heard %v, want 3 delivered, 3 failed and 4 or 6 retried", got)
	}
}

func TestSlowReceiverBlocksNobody(t *testing.T) {
	log, warnings := logs(t)
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Logger: log, QueueLength: 2, Timeout: time.Minute})
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	fast := pushtest.NewReceiver(t)
	configs := []tasks.PushConfig{{ID: "slow", URL: slow.URL, Version: a2a.V10}, {ID: "fast", URL: fast.URL, Version: a2a.V10}}

	// Each notification reaches the fast receiver while the slow one
	// holds its first: Push never waits for a receiver.
	for range 10 {
		s.Push(task("t1", a2a.TaskStateWorking), configs, []a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
		fast.Next(t)
	}
	<-arrived
	select {
	case e := <-warnings:
		if !strings.Contains(e.Message, "queue is full") {
			t.Errorf("warning: %q", e.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no warning for notifications dropped for a slow receiver")
	}
	select {
	case e := <-warnings:
		t.Errorf("a second warning for the same receiver: %q", e.Message)
	default:
	}
}

func TestCheckURL(t *testing.T) {
	strict := newSender(t, push.Options{})
	insecure := newSender(t, push.Options{AllowInsecure: true})
	allowNet := newSender(t, push.Options{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("2001:db8:1::/48")}})
	allowLoopback := newSender(t, push.Options{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	private := newSender(t, push.Options{AllowPrivate: true})
	origins := newSender(t, push.Options{AllowedOrigins: []string{"https://Hooks.Example.com:443", "https://other.example:8443"}})
	tests := []struct {
		sender *push.Sender
		url    string
		ok     bool
	}{
		{strict, "https://hooks.example.com/a2a", true},
		{strict, "https://93.184.215.14:8443/x", true},
		{strict, "http://hooks.example.com/a2a", false},
		{insecure, "http://hooks.example.com/a2a", true},
		{strict, "ftp://hooks.example.com/", false},
		{strict, "https://user:pw@hooks.example.com/", false},
		{strict, "https:///nohost", false},
		{strict, "https://127.0.0.1/", false},
		{strict, "https://[::1]/", false},
		{strict, "https://localhost:8080/", false},
		{strict, "https://api.localhost/", false},
		{strict, "https://10.0.0.1/", false},
		{strict, "https://172.16.5.4/", false},
		{strict, "https://192.168.1.1/", false},
		{strict, "https://169.254.169.254/latest/meta-data", false},
		{strict, "https://[fd00:ec2::254]/", false},
		{strict, "https://[::ffff:127.0.0.1]/", false},
		{strict, "https://100.64.0.1/", false},
		{strict, "https://0.0.0.0/", false},
		{strict, "https://224.0.0.1/", false},
		{strict, "https://1.1.1.1/", true},
		{strict, "https://[2606:4700:4700::1111]/", true},
		{strict, "https://[::ffff:1.1.1.1]/", true},
		// Every range of the IANA special-purpose registries that is not
		// globally reachable, and what reaches IPv4 through IPv6.
		{strict, "https://192.0.2.1/", false},
		{strict, "https://198.51.100.7/", false},
		{strict, "https://203.0.113.9/", false},
		{strict, "https://192.0.0.170/", false},
		{strict, "https://192.88.99.1/", false},
		{strict, "https://198.19.0.1/", false},
		{strict, "https://255.255.255.255/", false},
		{strict, "https://[::]/", false},
		{strict, "https://[::127.0.0.1]/", false},
		{strict, "https://[::a00:1]/", false},
		{strict, "https://[::ffff:0:7f00:1]/", false},
		{strict, "https://[::ffff:0:a9fe:a9fe]/", false},
		{strict, "https://[::ffff:0:101:101]/", false},
		{strict, "https://[64:ff9b::a00:1]/", false},
		{strict, "https://[64:ff9b:1::1]/", false},
		{strict, "https://[100::1]/", false},
		{strict, "https://[2001::1]/", false},
		{strict, "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", false},
		{strict, "https://[2001:2::1]/", false},
		{strict, "https://[2001:db8::1]/", false},
		{strict, "https://[2002:a00:1::1]/", false},
		{strict, "https://[3fff::1]/", false},
		{strict, "https://[5f00::1]/", false},
		{strict, "https://[fe80::1%25eth0]/", false},
		{strict, "https://[fec0::1]/", false},
		{strict, "https://[ff02::1]/", false},
		// The allow options still open what they name, and only that.
		{allowNet, "https://10.1.2.3/", true},
		{allowNet, "https://10.2.0.1/", false},
		{allowNet, "https://[2001:db8:1::5]/", true},
		{allowNet, "https://[2001:db8:2::5]/", false},
		{private, "https://[2001::1]/", true},
		{private, "https://192.0.2.1/", true},
		// A localhost name is taken where a loopback address is.
		{allowLoopback, "https://localhost:8080/", true},
		{allowLoopback, "https://api.localhost/", true},
		{allowLoopback, "https://127.0.0.1:8080/", true},
		{allowLoopback, "https://[::1]/", false},
		{allowNet, "https://localhost/", false},
		{private, "https://localhost/", true},
		{origins, "https://hooks.example.com/a2a", true},
		{origins, "https://HOOKS.example.com:443/x", true},
		{origins, "https://other.example:8443/", true},
		{origins, "https://other.example/", false},
		{origins, "https://evil.example/", false},
	}
	for _, tt := range tests {
		err := tt.sender.CheckURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckURL(%s) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}

// TestDialRefusesNonPublicAddresses: the address is checked when
// connecting, after the name is resolved, so a name that resolves to
// loopback (and a redirect) reaches nothing.
func TestDialRefusesNonPublicAddresses(t *testing.T) {
	log, warnings := logs(t)
	s := newSender(t, push.Options{AllowInsecure: true, Logger: log, MaxAttempts: 1})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	for _, u := range []string{"http://localhost" + port, srv.URL} {
		s.Push(task("t1", a2a.TaskStateWorking), []tasks.PushConfig{{ID: u, URL: u, Version: a2a.V10}},
			[]a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
		select {
		case e := <-warnings:
			if !strings.Contains(e.Message, "failed") {
				t.Errorf("%s: warning %q", u, e.Message)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no failure reported", u)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}

	// A redirect is an answer, never followed.
	open := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Logger: log, MaxAttempts: 1})
	redirect := httptest.NewServer(http.RedirectHandler(srv.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	open.Push(task("t1", a2a.TaskStateWorking), []tasks.PushConfig{{ID: "r", URL: redirect.URL, Version: a2a.V10}},
		[]a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
	select {
	case e := <-warnings:
		if !strings.Contains(e.Message, "failed") {
			t.Errorf("redirect: warning %q", e.Message)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("redirect: no failure reported")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests", n)
	}
}

// Close drops what is queued and what is under way, and counts each once,
// as dropped: the attempt it cancels is not a failure of the receiver.
func TestCloseCountsEachUndeliveredNotificationOnce(t *testing.T) {
	var mu sync.Mutex
	got := map[push.Outcome]int{}
	s := newSender(t, push.Options{AllowInsecure: true, AllowPrivate: true, Timeout: time.Minute,
		OnOutcome: func(o push.Outcome) { mu.Lock(); got[o]++; mu.Unlock() }})
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select { // answers only once the test is over
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(held.Close)
	t.Cleanup(func() { close(release) })
	cfg := []tasks.PushConfig{{ID: "held", URL: held.URL, Version: a2a.V10}}
	for range 3 {
		s.Push(task("t1", a2a.TaskStateWorking), cfg, []a2a.StreamResponse{status("t1", a2a.TaskStateWorking)})
	}
	<-arrived // the first is under way, the two others queued
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	if want := (map[push.Outcome]int{push.Dropped: 3}); !maps.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}
