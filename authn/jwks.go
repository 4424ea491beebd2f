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

// remoteKeys keeps a JWKS current: fetched once at start, again in the
// background every interval (sooner, with backoff, after a failure), and on
// demand when a token names an unknown kid, at most once per minInterval.
// A failed fetch keeps the last good keys.
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

	mu          sync.Mutex // one fetch at a time; guards lastAttempt
	lastAttempt time.Time

	stop chan struct{}
	done chan struct{}
}

func (k *remoteKeys) current() *keyState { return k.state.Load() }

// initial is the first fetch, at provision time. A failure is logged, not
// returned: the background loop retries, and tokens are refused meanwhile.
func (k *remoteKeys) initial() {
	if _, err := k.refresh(true); err != nil {
		k.log.Warn("fetching keys failed; tokens are refused until a fetch succeeds",
			zap.String("scheme", k.scheme), zap.Error(err))
	}
}

// refreshUnknown fetches again for a token whose key is unknown, unless a
// fetch was attempted within minInterval. It waits for a fetch already
// under way and returns the keys as they then are.
func (k *remoteKeys) refreshUnknown() *keyState {
	st, err := k.refresh(false)
	if err != nil {
		k.log.Warn("fetching keys for an unknown kid failed; keeping the last good keys",
			zap.String("scheme", k.scheme), zap.Error(err))
	}
	return st
}

// refresh fetches the keys; unless forced, at most once per minInterval.
func (k *remoteKeys) refresh(force bool) (*keyState, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if !force && !k.lastAttempt.IsZero() && now.Sub(k.lastAttempt) < k.minInterval {
		return k.current(), nil
	}
	k.lastAttempt = now
	ctx, cancel := context.WithTimeout(k.ctx, k.timeout)
	defer cancel()
	st, err := k.fetch(ctx)
	if err != nil {
		return k.current(), err
	}
	old := k.state.Swap(st)
	if old != nil && removedKey(old, st) {
		k.onRemoved()
	}
	return st, nil
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

func (k *remoteKeys) start() {
	k.stop, k.done = make(chan struct{}), make(chan struct{})
	go k.loop()
}

func (k *remoteKeys) close() {
	k.cancel()
	if k.stop == nil {
		return
	}
	close(k.stop)
	<-k.done
}

// loop refreshes every interval; after a failure it retries after
// minInterval, doubling up to interval.
func (k *remoteKeys) loop() {
	defer close(k.done)
	delay := k.interval
	if k.current() == nil {
		delay = k.minInterval
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		if _, err := k.refresh(true); err != nil {
			k.log.Warn("refreshing keys failed; keeping the last good keys", zap.String("scheme", k.scheme), zap.Error(err))
			if delay >= k.interval {
				delay = k.minInterval
			} else {
				delay = min(2*delay, k.interval)
			}
		} else {
			delay = k.interval
		}
		t.Reset(delay)
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
