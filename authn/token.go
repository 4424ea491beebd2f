package authn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/keys"
)

// bearerKind checks a bearer token (RFC 6750): a JWT, or one an
// introspection endpoint vouches for.
func init() { registerKind(&bearerKind) }

var bearerKind = kind{typ: TypeHTTP, httpScheme: "bearer", card: a2a.SchemeHTTPAuth, priority: priorityToken, tokens: true,
	validate: func(s *Scheme) []error {
		if s.JWT == nil && s.Introspection == nil {
			return []error{errors.New("a bearer scheme needs jwt or introspection")}
		}
		return nil
	},
	build: (*builder).token, cardFields: httpCard}

// hmacAlgorithms are the symmetric JWS algorithms, which HMACSecret
// enables.
var hmacAlgorithms = []string{"HS256", "HS384", "HS512"}

// validAlgorithms are the JWS algorithms a token may use.
var validAlgorithms = append(slices.Clone(keys.Algorithms), hmacAlgorithms...)

// validateTokens checks the token options of a kind that takes tokens.
func (s *Scheme) validateTokens() []error {
	var errs []error
	if s.JWT != nil {
		errs = append(errs, s.JWT.validate(s)...)
	}
	if in := s.Introspection; in != nil {
		if err := checkURL(in.URL, s.AllowInsecureHTTP); err != nil {
			errs = append(errs, fmt.Errorf("introspection.url: %v", err))
		}
		if in.CacheTTL < 0 || in.Timeout < 0 {
			errs = append(errs, errors.New("introspection: negative duration"))
		}
	}
	return errs
}

func (j *JWTConfig) hasKeySource() bool {
	return j.JWKSURL != "" || len(j.PublicKeys) > 0 || j.HMACSecret != ""
}

func (j *JWTConfig) validate(s *Scheme) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("jwt."+format, args...)) }
	discovered := s.Type == TypeOpenIDConnect || (s.Type == TypeOAuth2 && s.MetadataURL != "" && !j.hasKeySource())
	if !j.hasKeySource() && !discovered {
		add("keys: set jwks_url, public_keys or hmac_secret")
	}
	if (j.JWKSURL != "" || discovered) && len(j.Audiences) == 0 {
		add("audiences: required when keys come from a JWKS")
	}
	if j.JWKSURL != "" {
		if err := checkURL(j.JWKSURL, s.AllowInsecureHTTP); err != nil {
			add("jwks_url: %v", err)
		}
	}
	hmac := false
	for _, alg := range j.Algorithms {
		if !slices.Contains(validAlgorithms, alg) {
			add("algorithms: %q is not one of %s", alg, strings.Join(validAlgorithms, ", "))
		}
		if strings.HasPrefix(alg, "HS") {
			hmac = true
		}
	}
	if hmac && j.HMACSecret == "" {
		add("algorithms: HS* algorithms need hmac_secret")
	}
	if len(j.Algorithms) > 0 && !hmac && j.HMACSecret != "" {
		add("hmac_secret: set, but no HS* algorithm is allowed")
	}
	if j.Leeway < 0 || j.RefreshInterval < 0 || j.MinRefreshInterval < 0 || j.FetchTimeout < 0 {
		add("negative duration")
	}
	if time.Duration(j.Leeway) > 5*time.Minute {
		add("leeway: at most 5m")
	}
	return errs
}

// token sets up a bearer, oauth2 or openIdConnect scheme: JWTs verified
// locally, other tokens introspected, verified tokens cached until they
// expire.
func (b *builder) token(s *scheme, sc *Scheme) error {
	s.bearer, s.token = true, newTokenTarget(sc)
	s.challenge = "Bearer realm=" + quote(b.a.realm)
	if b.a.resourceMetadata != "" {
		s.challenge += ", resource_metadata=" + quote(b.a.resourceMetadata)
	}
	if sc.Type == TypeOAuth2 && sc.Flows != nil {
		declared := map[string]bool{}
		for _, f := range sc.Flows.All() {
			for scope := range f.Scopes {
				declared[scope] = true
			}
		}
		s.checkScopes = func(scopes []string) error {
			for _, scope := range scopes {
				if !declared[scope] {
					return fmt.Errorf("scope %q is not declared in the flow's scopes", scope)
				}
			}
			return nil
		}
	} else {
		s.checkScopes = func([]string) error { return nil }
	}

	var jv *jwtVerifier
	if sc.JWT != nil || sc.Type == TypeOpenIDConnect {
		var err error
		if jv, err = b.jwtVerifier(s, sc); err != nil {
			return err
		}
	}
	var iv *introspector
	if sc.Introspection != nil {
		var err error
		if iv, err = b.introspector(s, sc); err != nil {
			return err
		}
	}

	a := b.a
	s.check = func(r *http.Request) outcome {
		tok, o := authorization(r, "Bearer ", MaxTokenBytes+len("Bearer "))
		if o.state != valid {
			return o
		}
		if !isB64Token(tok) {
			return refused("malformed token", "token has characters outside RFC 6750 b64token")
		}
		now := a.now()
		key := stringKey(s.index, tok)
		if id := a.cache.get(key, now); id != nil {
			return accepted(id)
		}
		var (
			c      *Credential
			reason string
			detail string
		)
		until := time.Time{}
		switch {
		case jv != nil && strings.Count(tok, ".") == 2:
			c, reason, detail = jv.verify(tok)
		case iv != nil:
			c, reason, detail = iv.introspect(r.Context(), tok, now)
			until = now.Add(iv.ttl)
		default:
			return refused("malformed token", "not a JWT")
		}
		if c == nil {
			return refused(reason, detail)
		}
		c.Scheme, c.Type, c.Bearer = s.name, s.typ, true
		if until.IsZero() || !c.Expires.IsZero() && c.Expires.Before(until) {
			until = c.Expires
		}
		id := single(c)
		a.cache.put(key, s.index, id, until, now)
		return accepted(id)
	}
	return nil
}

// isB64Token checks RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." /
// "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// jwtVerifier verifies a JWT's signature against an allowlist of
// algorithms and its keys, then its claims.
type jwtVerifier struct {
	parser       *jwt.Parser
	static       []keys.Key
	secret       []byte
	remote       *remoteKeys // nil without JWKS
	issuer       string      // configured; else the discovered one
	subjectClaim string
}

var (
	errUnknownKey = errors.New("no key for this kid and algorithm")
	errCrit       = errors.New("critical header extensions are not supported")
)

func (b *builder) jwtVerifier(s *scheme, sc *Scheme) (*jwtVerifier, error) {
	cfg := sc.JWT
	if cfg == nil {
		cfg = &JWTConfig{}
	}
	v := &jwtVerifier{issuer: cfg.Issuer, subjectClaim: cmp.Or(cfg.SubjectClaim, "sub")}
	for i, src := range cfg.PublicKeys {
		field := fmt.Sprintf("jwt.public_keys[%d]", i)
		b, err := b.env.pemSource(field, src)
		if err != nil {
			return nil, err
		}
		static, err := keys.ParsePublicPEM(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		v.static = append(v.static, static...)
	}
	if cfg.HMACSecret != "" {
		secret, err := b.env.expand("jwt.hmac_secret", cfg.HMACSecret)
		if err != nil {
			return nil, err
		}
		if len(secret) < 32 {
			return nil, errors.New("jwt.hmac_secret: at least 32 bytes are required")
		}
		v.secret = []byte(secret)
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = slices.Clone(keys.Algorithms)
		if v.secret != nil {
			algs = append(algs, hmacAlgorithms...)
		}
	}

	jwksURL, discoveryURL := cfg.JWKSURL, ""
	switch {
	case sc.Type == TypeOpenIDConnect:
		discoveryURL = sc.OpenIDConnectURL
	case sc.Type == TypeOAuth2 && !cfg.hasKeySource():
		discoveryURL = sc.MetadataURL
	}
	if jwksURL != "" {
		var err error
		if jwksURL, err = b.env.expand("jwt.jwks_url", jwksURL); err != nil {
			return nil, err
		}
		if err := checkURL(jwksURL, sc.AllowInsecureHTTP); err != nil {
			return nil, fmt.Errorf("jwt.jwks_url: %w", err)
		}
	}
	if jwksURL != "" || discoveryURL != "" {
		a := b.a
		ctx, cancel := context.WithCancel(context.Background())
		v.remote = &remoteKeys{
			ctx:          ctx,
			cancel:       cancel,
			scheme:       s.name,
			jwksURL:      jwksURL,
			discoveryURL: discoveryURL,
			oidc:         sc.Type == TypeOpenIDConnect,
			issuer:       cfg.Issuer,
			allowHTTP:    sc.AllowInsecureHTTP,
			client:       b.client,
			timeout:      orDefault(cfg.FetchTimeout, DefaultFetchTimeout),
			interval:     orDefault(cfg.RefreshInterval, DefaultRefreshInterval),
			minInterval:  orDefault(cfg.MinRefreshInterval, DefaultMinRefreshInterval),
			now:          a.now,
			log:          a.log,
			onRemoved:    func() { a.cache.purge(s.index) },
		}
		a.remotes = append(a.remotes, v.remote)
	}

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(algs),
		jwt.WithLeeway(orDefault(cfg.Leeway, DefaultLeeway)),
		jwt.WithTimeFunc(b.a.now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithStrictDecoding(),
	}
	if len(cfg.Audiences) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.Audiences...))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// verify checks one token. It returns the credential, or a reason for the
// caller and a detail for the log; neither quotes the token.
func (v *jwtVerifier) verify(tok string) (*Credential, string, string) {
	var st *keyState
	if v.remote != nil {
		st = v.remote.current()
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, errCrit
		}
		alg := t.Method.Alg()
		if strings.HasPrefix(alg, "HS") {
			if v.secret == nil {
				return nil, errUnknownKey
			}
			return v.secret, nil
		}
		kid, ok := t.Header["kid"].(string)
		if _, present := t.Header["kid"]; present && !ok {
			return nil, errUnknownKey
		}
		set := v.keys(st, kid, alg)
		if len(set.Keys) == 0 && v.remote != nil {
			// A new kid (or no keys yet): fetch again, rate-limited.
			st = v.remote.refreshUnknown()
			set = v.keys(st, kid, alg)
		}
		if len(set.Keys) == 0 {
			return nil, errUnknownKey
		}
		return set, nil
	})
	if err != nil {
		reason := jwtReason(err)
		return nil, reason, reason
	}
	issuer := v.issuer
	if issuer == "" && st != nil {
		issuer = st.issuer
	}
	if issuer != "" {
		if iss, _ := claims["iss"].(string); iss != issuer {
			return nil, "invalid issuer", "invalid issuer"
		}
	}
	sub, _ := claims[v.subjectClaim].(string)
	if sub == "" {
		return nil, "the token names no subject", fmt.Sprintf("no %q claim", v.subjectClaim)
	}
	c := &Credential{Subject: sub, Scopes: tokenScopes(claims), Claims: claims}
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		c.Expires = exp.Time
	}
	return c, "", ""
}

// keys are the verification keys that fit kid (when the token names one;
// static keys carry no kid and always take part) and alg.
func (v *jwtVerifier) keys(st *keyState, kid, alg string) jwt.VerificationKeySet {
	var set jwt.VerificationKeySet
	for _, k := range v.static {
		if k.Fits(alg) {
			set.Keys = append(set.Keys, k.Public)
		}
	}
	if st != nil {
		cands := st.keys
		if kid != "" {
			cands = st.byKID[kid]
		}
		for _, k := range cands {
			if k.Fits(alg) {
				set.Keys = append(set.Keys, k.Public)
			}
		}
	}
	return set
}

// jwtReason turns a parse error into a fixed text (RFC 6750
// error_description); the library's messages are not passed on.
func jwtReason(err error) string {
	switch {
	case errors.Is(err, errUnknownKey):
		return "unknown signing key"
	case errors.Is(err, errCrit):
		return "unsupported critical header"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "invalid signature"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "token not yet valid"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token issued in the future"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "invalid audience"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "a required claim is missing"
	}
	return "invalid token"
}

// tokenScopes reads the OAuth scope claim ("scope", space-separated) and
// the "scp" claim (a string or an array of strings).
func tokenScopes(claims map[string]any) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			for _, s := range strings.Fields(v) {
				add(s)
			}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					add(s)
				}
			}
		}
	}
	return out
}

// expiryTime reads a NumericDate claim value.
func numericDate(v any) time.Time {
	f, ok := v.(float64)
	if !ok || f <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(f), 0)
}
