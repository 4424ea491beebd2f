package authn

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspector asks an RFC 7662 endpoint about opaque tokens. Active
// answers are cached by the token scheme until the token's exp or ttl,
// whichever is first; inactive ones are not cached.
type introspector struct {
	url          string
	clientID     string
	clientSecret string
	audiences    []string
	subjectClaim string
	ttl          time.Duration
	timeout      time.Duration
	client       *http.Client
}

func (b *builder) introspector(s *scheme, sc *Scheme) (*introspector, error) {
	cfg := sc.Introspection
	in := &introspector{
		audiences:    slices.Clone(cfg.Audiences),
		subjectClaim: cfg.SubjectClaim,
		ttl:          orDefault(cfg.CacheTTL, DefaultIntrospectionTTL),
		timeout:      orDefault(cfg.Timeout, DefaultFetchTimeout),
		client:       b.client,
	}
	var err error
	if in.url, err = b.env.expand("introspection.url", cfg.URL); err != nil {
		return nil, err
	}
	if err := checkURL(in.url, sc.AllowInsecureHTTP); err != nil {
		return nil, err
	}
	if in.clientID, err = b.env.expand("introspection.client_id", cfg.ClientID); err != nil {
		return nil, err
	}
	if in.clientSecret, err = b.env.expand("introspection.client_secret", cfg.ClientSecret); err != nil {
		return nil, err
	}
	return in, nil
}

// introspect returns the credential of an active token, or a reason for
// the caller and a detail for the log. The token travels only in the
// request body, which no error quotes.
func (in *introspector) introspect(ctx context.Context, tok string, now time.Time) (*Credential, string, string) {
	ctx, cancel := context.WithTimeout(ctx, in.timeout)
	defer cancel()
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, "the token could not be checked", "introspection: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.clientID != "" {
		// RFC 6749 §2.3.1: client credentials are form-encoded first.
		req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.clientSecret))
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, "the token could not be checked", "introspection: " + err.Error()
	}
	defer resp.Body.Close()
	var answer map[string]any
	if err := decodeJSON(resp, in.url, maxIntrospectBytes, &answer); err != nil {
		return nil, "the token could not be checked", "introspection: " + err.Error()
	}
	if active, _ := answer["active"].(bool); !active {
		return nil, "token inactive", "introspection: token inactive"
	}
	exp := numericDate(answer["exp"])
	if !exp.IsZero() && !exp.After(now) {
		return nil, "token expired", "introspection: token expired"
	}
	if nbf := numericDate(answer["nbf"]); !nbf.IsZero() && nbf.After(now) {
		return nil, "token not yet valid", "introspection: token not yet valid"
	}
	if len(in.audiences) > 0 && !audienceMatches(answer["aud"], in.audiences) {
		return nil, "invalid audience", "introspection: invalid audience"
	}
	var sub string
	if in.subjectClaim != "" {
		sub, _ = answer[in.subjectClaim].(string)
	} else {
		// A subject taken from another member is marked with it, so that a
		// client whose client_id equals some user's sub or username never
		// becomes that user (and sees that user's tasks).
		s1, _ := answer["sub"].(string)
		s2, _ := answer["client_id"].(string)
		s3, _ := answer["username"].(string)
		switch {
		case s1 != "":
			sub = s1
		case s2 != "":
			sub = "client_id:" + s2
		case s3 != "":
			sub = "username:" + s3
		}
	}
	if sub == "" {
		return nil, "the token names no subject", "introspection: no subject"
	}
	return &Credential{Subject: sub, Scopes: tokenScopes(answer), Claims: answer, Expires: exp}, "", ""
}

// audienceMatches reports whether aud (a string or an array of strings)
// names one of want.
func audienceMatches(aud any, want []string) bool {
	switch v := aud.(type) {
	case string:
		return slices.Contains(want, v)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && slices.Contains(want, s) {
				return true
			}
		}
	}
	return false
}
