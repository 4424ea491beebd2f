package authn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/keys"
)

// keyState is one successfully fetched key set (and, with discovery, the
// issuer that published it). It is replaced whole, never modified.
type keyState struct {
	issuer string
	keys   []keys.Key
	byKID  map[string][]keys.Key
}

// remoteKeys keeps a JWKS current: fetched in the background at start and
// every interval (sooner, with backoff, after a failure), and on demand when
// a token names an unknown kid, at most once per minInterval counted from
// the end of the last fetch. One fetch runs at a time, outside any lock that
// requests take: requests use the last good keys meanwhile, and only the
// request that asked for the fetch waits for it, at most unknownKeyWait. A
// failed fetch keeps the last good keys. Nothing waits on the network at
// start, so a hanging endpoint delays no reload.
type remoteKeys struct {
	scheme       string
	jwksURL      string // fixed, or "" when discovery gives it
	discoveryURL string // OIDC discovery or RFC 8414 metadata
	oidc         bool   // check the issuer against the discovery URL
	issuer       string // configured issuer the discovered one must equal
	allowHTTP    bool
	client       *http.Client
	timeout      time.Duration
	interval     time.Duration
	minInterval  time.Duration
	now          func() time.Time
	log          *zap.Logger
	onRemoved    func() // a key disappeared: forget tokens it verified

	state atomic.Pointer[keyState]

	// ctx bounds every fetch; close cancels it so that Close does not wait
	// for a hanging endpoint.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex    // guards the four below
	running  chan struct{} // closed when the fetch under way ends; nil when none runs
	since    time.Time     // when it started (wall clock, for waits)
	lastDone time.Time     // when the last fetch ended
	lastErr  error         // how it ended

	stop chan struct{}
	done chan struct{}
}

// unknownKeyWait bounds how long tokens with an unknown kid wait for a
// fetch: the one that started it, or any while there are no keys yet, wait
// until unknownKeyWait after the fetch started; then they are judged on the
// keys at hand, and the fetch goes on for the next tokens. So a hanging
// endpoint holds up the tokens of other schemes for at most that long.
const unknownKeyWait = time.Second

func (k *remoteKeys) current() *keyState { return k.state.Load() }

// refreshUnknown asks for a fetch for a token whose key is unknown, and
// returns the keys to judge it on: those at hand, or, when this call
// started a fetch (or there are no keys yet), those it brought within
// unknownKeyWait.
func (k *remoteKeys) refreshUnknown() *keyState {
	done, since, started := k.startFetch(false)
	if wait := unknownKeyWait - time.Since(since); done != nil && (started || k.current() == nil) && wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
	return k.current()
}

// startFetch starts a fetch unless one is under way or, unless forced, the
// last one ended within minInterval. It returns the channel closed when the
// fetch under way ends (nil when none runs), when that fetch started, and
// whether this call started it.
func (k *remoteKeys) startFetch(force bool) (done chan struct{}, since time.Time, started bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running != nil {
		return k.running, k.since, false
	}
	if !force && !k.lastDone.IsZero() && k.now().Sub(k.lastDone) < k.minInterval {
		return nil, time.Time{}, false
	}
	done = make(chan struct{})
	k.running, k.since = done, time.Now()
	go func() {
		err := k.fetchAndSwap()
		switch {
		case err != nil && k.current() == nil:
			k.log.Warn("fetching keys failed; tokens are refused until a fetch succeeds", zap.String("scheme", k.scheme), zap.Error(err))
		case err != nil:
			k.log.Warn("fetching keys failed; keeping the last good keys", zap.String("scheme", k.scheme), zap.Error(err))
		}
		k.mu.Lock()
		k.running, k.lastDone, k.lastErr = nil, k.now(), err
		k.mu.Unlock()
		close(done)
	}()
	return done, k.since, true
}

// fetchAndSwap fetches the keys and makes them current.
func (k *remoteKeys) fetchAndSwap() error {
	ctx, cancel := context.WithTimeout(k.ctx, k.timeout)
	defer cancel()
	st, err := k.fetch(ctx)
	if err != nil {
		return err
	}
	old := k.state.Swap(st)
	if old != nil && removedKey(old, st) {
		k.onRemoved()
	}
	return nil
}

// removedKey reports whether a key of old is missing from next.
func removedKey(old, next *keyState) bool {
	for _, o := range old.keys {
		if !slices.ContainsFunc(next.keys, func(n keys.Key) bool {
			return n.ID == o.ID && n.Algorithm == o.Algorithm && keys.Equal(n.Public, o.Public)
		}) {
			return true
		}
	}
	return false
}

// start starts the first fetch, without waiting for it, and the loop that
// refreshes after it.
func (k *remoteKeys) start() {
	k.stop, k.done = make(chan struct{}), make(chan struct{})
	first, _, _ := k.startFetch(true)
	go k.loop(first)
}

func (k *remoteKeys) close() {
	k.cancel()
	if k.stop == nil {
		return
	}
	close(k.stop)
	<-k.done
}

// loop waits for the fetch under way (done), then fetches every interval;
// after a failure it retries after minInterval, doubling up to interval.
func (k *remoteKeys) loop(done chan struct{}) {
	defer close(k.done)
	delay := k.interval
	t := time.NewTimer(delay)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-done:
		}
		k.mu.Lock()
		err := k.lastErr
		k.mu.Unlock()
		if err != nil {
			if delay >= k.interval {
				delay = k.minInterval
			} else {
				delay = min(2*delay, k.interval)
			}
		} else {
			delay = k.interval
		}
		t.Reset(delay)
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		done, _, _ = k.startFetch(true)
	}
}

// fetch reads the discovery document (when configured) and the JWKS.
func (k *remoteKeys) fetch(ctx context.Context) (*keyState, error) {
	st := &keyState{issuer: k.issuer}
	jwksURL := k.jwksURL
	if k.discoveryURL != "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, k.client, k.discoveryURL, maxDocumentBytes, &doc); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		if doc.Issuer == "" || doc.JWKSURI == "" {
			return nil, fmt.Errorf("discovery %s: issuer and jwks_uri are required", k.discoveryURL)
		}
		if k.issuer != "" && doc.Issuer != k.issuer {
			return nil, fmt.Errorf("discovery %s: issuer %q is not the configured %q", k.discoveryURL, doc.Issuer, k.issuer)
		}
		if prefix, found := strings.CutSuffix(k.discoveryURL, "/.well-known/openid-configuration"); k.oidc && found &&
			strings.TrimSuffix(prefix, "/") != strings.TrimSuffix(doc.Issuer, "/") {
			return nil, fmt.Errorf("discovery %s: issuer %q does not match the discovery URL", k.discoveryURL, doc.Issuer)
		}
		if err := checkURL(doc.JWKSURI, k.allowHTTP); err != nil {
			return nil, fmt.Errorf("discovery %s: jwks_uri: %w", k.discoveryURL, err)
		}
		st.issuer, jwksURL = doc.Issuer, doc.JWKSURI
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, k.client, jwksURL, maxDocumentBytes, &set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if len(set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("jwks %s: %d keys, more than %d", jwksURL, len(set.Keys), maxJWKSKeys)
	}
	st.byKID = make(map[string][]keys.Key)
	skipped := 0
	for _, raw := range set.Keys {
		pk, err := keys.ParseJWK(raw)
		if err != nil {
			skipped++
			k.log.Debug("skipping a JWK", zap.String("scheme", k.scheme), zap.Error(err))
			continue
		}
		st.keys = append(st.keys, pk)
		if pk.ID != "" {
			st.byKID[pk.ID] = append(st.byKID[pk.ID], pk)
		}
	}
	if len(st.keys) == 0 {
		return nil, fmt.Errorf("jwks %s: no usable signature keys (%d skipped)", jwksURL, skipped)
	}
	return st, nil
}

// getJSON GETs url and decodes at most limit bytes of a 200 answer.
func getJSON(ctx context.Context, client *http.Client, url string, limit int64, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err // *url.Error names the URL
	}
	defer resp.Body.Close()
	return decodeJSON(resp, url, limit, v)
}

// decodeJSON reads a 200 answer of at most limit bytes into v.
func decodeJSON(resp *http.Response, url string, limit int64, v any) error {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return fmt.Errorf("%s: answer of %d bytes is over the limit of %d", url, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", url, err)
	}
	if int64(len(body)) > limit {
		return fmt.Errorf("%s: answer over the limit of %d bytes", url, limit)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: not the JSON expected: %w", url, err)
	}
	return nil
}
