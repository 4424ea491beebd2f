// Package authn authenticates A2A callers against the security schemes the
// Agent Card declares (apiKey, http basic and bearer, oauth2, openIdConnect,
// mutualTLS) and evaluates the card's OR-of-ANDs requirements, for the whole
// agent and for each skill. One Config drives both the card's
// securitySchemes/security fields and the checks.
//
// Everything that can be prepared is prepared in New: keys are hashed,
// bcrypt hashes parsed, public keys loaded, JWKS fetched and refreshed in
// the background. A request costs a header lookup and, for a credential
// seen before, one SHA-256 and a map lookup.
//
// No credential, token, key or password ever appears in an error, a
// Failure or a log line.
package authn

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// Reasons carried by a Failure (and its error's ErrorInfo.reason in every
// binding): the ones the official Go SDK maps to ErrUnauthenticated and
// ErrUnauthorized, which is how its HTTP+JSON and gRPC clients tell them
// from other errors. What was missing (a scope) is in the message and the
// WWW-Authenticate challenge (error="insufficient_scope").
const (
	ReasonUnauthenticated = "UNAUTHENTICATED"
	ReasonUnauthorized    = "UNAUTHORIZED"
)

// Size limits for credentials; anything larger is refused unread.
const (
	MaxTokenBytes      = 8 << 10  // a bearer token
	MaxBasicBytes      = 1 << 10  // an Authorization: Basic header
	MaxAPIKeyBytes     = 1 << 10  // an API key
	MaxCertHeaderBytes = 16 << 10 // a client certificate from a proxy
	maxDocumentBytes   = 1 << 20  // a JWKS or discovery document
	maxIntrospectBytes = 64 << 10 // an introspection answer
	maxJWKSKeys        = 256
)

// Options are the runtime dependencies of an Authenticator.
type Options struct {
	// Logger receives key refresh and configuration warnings, under the
	// name "authn". Default: none.
	Logger *zap.Logger
	// LookupEnv resolves {env.NAME} placeholders. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// HTTPClient fetches JWKS and discovery documents and calls
	// introspection endpoints. Default: a client that follows no redirects.
	// Every call is bounded by the configured timeouts whatever the client.
	HTTPClient *http.Client
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// ResourceMetadata is the absolute URL of the agent's OAuth 2.0
	// Protected Resource Metadata (RFC 9728), when it serves one: every
	// Bearer challenge names it (resource_metadata), so that a client
	// (MCP's) finds there which authorization server issues the tokens.
	// Default: none.
	ResourceMetadata string
	// ClientAddress gives the IP of the client of a request, for the
	// places one client address may hold in the order of password checks
	// (see ClientAddress). Default, and when it gives "": the IP of the
	// request's remote address; behind proxies, the adapter gives the
	// client IP they forwarded.
	ClientAddress func(*http.Request) string
}

// ClientAddress names the client of r by its IP: the one resolve gives
// (resolve may be nil, or give ""; then the IP of r's remote address).
// IPv6 addresses count by their /48 prefix: one host usually has a whole
// /64, and one site a /48 (or a /56) of them.
func ClientAddress(r *http.Request, resolve func(*http.Request) string) string {
	var addr string
	if resolve != nil {
		addr = resolve(r)
	}
	if addr == "" {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		addr = host
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if ip = ip.Unmap(); ip.Is6() {
		prefix, _ := ip.Prefix(48)
		return prefix.String()
	}
	return ip.String()
}

// Credential is what one scheme established about the caller. Values are
// shared between requests (verified credentials are cached): read them,
// never modify them.
type Credential struct {
	// Scheme is the scheme's name in the configuration and on the card.
	Scheme string
	Type   a2a.SecuritySchemeType
	// Subject names the caller: the API key's or user's configured name,
	// the token's subject claim, or the certificate's SAN or CN.
	Subject string
	Scopes  []string
	// Claims: a token's claims or introspection answer; for basic,
	// {"username"}; for an API key, {"subject"}; for a certificate, its
	// names, issuer, serial and SHA-256 fingerprint.
	Claims map[string]any
	// Expires is when the credential stops being valid; zero when it
	// does not expire.
	Expires time.Time
	// Bearer says the credential is the request's bearer token, which
	// BearerToken reads back (the token itself is not kept).
	Bearer bool
}

// Identity is an authenticated caller: the primary credential (embedded)
// and every credential the request satisfied. The primary one is the
// most specific: a token before basic, basic before an API key, an API
// key before a client certificate; ties go to the scheme name. Identities
// are shared between requests: read them, never modify them.
type Identity struct {
	Credential
	// Credentials holds every satisfied scheme's credential, primary first.
	Credentials []*Credential

	owner string // Owner, computed once for identities made here
}

// Owner is the key that tasks are owned by: scheme and subject, so the
// same name from two schemes is two callers. The nil Identity (anonymous)
// owns "".
func (id *Identity) Owner() string {
	switch {
	case id == nil:
		return ""
	case id.owner != "":
		return id.owner
	}
	return id.Scheme + ":" + id.Subject
}

// For returns the credential that scheme established, or nil.
func (id *Identity) For(scheme string) *Credential {
	if id == nil {
		return nil
	}
	for _, c := range id.Credentials {
		if c.Scheme == scheme {
			return c
		}
	}
	return nil
}

// Failure is a refused request: 401 when the caller is not authenticated,
// 403 when they are but lack a scope. It never holds a credential.
type Failure struct {
	// Status is http.StatusUnauthorized or http.StatusForbidden.
	Status int
	// Challenges are the WWW-Authenticate values, one per acceptable
	// scheme. A 403 carries RFC 6750 insufficient_scope challenges for
	// token schemes only.
	Challenges []string
	// Reason is ReasonUnauthenticated or ReasonUnauthorized.
	Reason string
	// Message is safe to show the caller.
	Message string
	// Detail says, for the server's log, which scheme refused what and why
	// (for example `scheme "oidc": token expired`). Safe to log; not meant
	// for the caller.
	Detail string
	// Scheme names the scheme whose credential was refused, or lacked a
	// scope: the first such in the requirement; "" when no credential of
	// a required scheme was presented.
	Scheme string
	// Cause is why, as a fixed phrase from a short list, never quoting
	// what was presented: the refused credential's reason (e.g. "token
	// expired"), CauseNoCredentials, CauseNotAccepted or
	// CauseInsufficientScope. Metrics count by it.
	Cause string
}

// Causes of a Failure besides a refused credential's own reason.
const (
	CauseNoCredentials     = "no credentials"
	CauseNotAccepted       = "credentials not accepted"
	CauseInsufficientScope = "insufficient scope"
)

func (f *Failure) Error() string {
	if f.Detail == "" {
		return "authn: " + f.Message
	}
	return "authn: " + f.Message + ": " + f.Detail
}

// SetHeaders adds the WWW-Authenticate challenges to h.
func (f *Failure) SetHeaders(h http.Header) {
	for _, c := range f.Challenges {
		h.Add("WWW-Authenticate", c)
	}
}

// RPCError is the JSON-RPC error that accompanies the HTTP status.
func (f *Failure) RPCError() *a2a.Error {
	code := a2a.CodeUnauthenticated
	if f.Status == http.StatusForbidden {
		code = a2a.CodeUnauthorized
	}
	return &a2a.Error{Code: code, Message: f.Message, Reason: f.Reason}
}

// Authenticator checks requests against the configured schemes. It is safe
// for concurrent use. Close it to stop background key refreshes.
type Authenticator struct {
	realm   string
	schemes []*scheme // sorted by name
	byName  map[string]*scheme
	require []alternative
	// requireChallenges are the 401 challenges of require's schemes.
	requireChallenges []challenged
	anonymous         bool // an empty alternative admits callers without credentials
	cache             *cache
	now               func() time.Time
	log               *zap.Logger
	remotes           []*remoteKeys
	// turns schedules the password hash comparisons of every basic scheme
	// (see basic), between the client addresses clientAddress gives
	// (Options.ClientAddress).
	turns         *turns
	clientAddress func(*http.Request) string
	// resourceMetadata is Options.ResourceMetadata.
	resourceMetadata string

	cardSchemes map[string]a2a.SecurityScheme
	cardReqs    []a2a.SecurityRequirement

	closeOnce sync.Once
}

// scheme is one configured scheme, ready to check requests.
type scheme struct {
	name     string
	index    int
	typ      a2a.SecuritySchemeType
	priority int // lower is more specific; see Identity
	// challenge is the WWW-Authenticate value.
	challenge string
	bearer    bool // RFC 6750 challenges with error attributes
	check     func(r *http.Request) outcome
	// checkScopes says why a requirement's scopes can never be granted.
	checkScopes func(scopes []string) error
	// token is, for a scheme that takes bearer tokens, who issues them and
	// for whom (resource.go); nil for the other kinds.
	token *tokenTarget
}

// outcome is one scheme's verdict on one request.
type outcome struct {
	state  uint8
	id     *Identity // single-credential identity, shared via the cache
	reason string    // safe for the caller (error_description)
	detail string    // for the log
}

const (
	absent  uint8 = iota // no credential for this scheme
	invalid              // a credential that failed
	valid
)

func refused(reason, detail string) outcome {
	return outcome{state: invalid, reason: reason, detail: detail}
}

func accepted(id *Identity) outcome { return outcome{state: valid, id: id} }

// alternative is one entry of an OR-of-ANDs requirement.
type alternative []requirement

type requirement struct {
	scheme *scheme
	scopes []string
}

// New prepares the checks: it validates cfg, expands {env.NAME}
// placeholders, hashes API keys, parses bcrypt hashes and public keys,
// fetches every JWKS and discovery document once (a failure is logged and
// retried in the background; requests are refused until keys arrive) and
// starts the background refreshes. With no schemes, every request is
// anonymous.
func New(cfg Config, opts Options) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Authenticator{
		realm:            cmp.Or(cfg.Realm, DefaultRealm),
		resourceMetadata: opts.ResourceMetadata,
		byName:           make(map[string]*scheme, len(cfg.Schemes)),
		now:              opts.Now,
		clientAddress:    opts.ClientAddress,
	}
	if a.resourceMetadata != "" {
		if err := checkURL(a.resourceMetadata, true); err != nil {
			return nil, fmt.Errorf("authn: resource metadata URL: %w", err)
		}
	}
	if a.now == nil {
		a.now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	a.log = log.Named("authn")
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.CacheSize >= 0 {
		a.cache = newCache(cmp.Or(cfg.CacheSize, DefaultCacheSize), orDefault(cfg.CacheTTL, DefaultCacheTTL))
	}

	b := builder{a: a, env: envExpander(lookup), client: client}
	a.cardSchemes = make(map[string]a2a.SecurityScheme, len(cfg.Schemes))
	for i, name := range slices.Sorted(maps.Keys(cfg.Schemes)) {
		s, card, err := b.build(name, i, cfg.Schemes[name])
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("authn: scheme %q: %w", name, err)
		}
		a.schemes = append(a.schemes, s)
		a.byName[name] = s
		a.cardSchemes[name] = card
	}

	reqs := cfg.Require
	if len(reqs) == 0 {
		for _, s := range a.schemes {
			reqs = append(reqs, a2a.SecurityRequirement{s.name: nil})
		}
	}
	var err error
	if a.require, err = a.compile(reqs, true); err != nil {
		a.Close()
		return nil, fmt.Errorf("authn: require: %w", err)
	}
	for _, alt := range a.require {
		a.anonymous = a.anonymous || len(alt) == 0
	}
	a.requireChallenges = challengesOf(a.require)
	a.cardReqs = cloneRequirements(reqs)

	// Keys are fetched in the background: provisioning never waits on the
	// network, and tokens wait for the first keys at most unknownKeyWait.
	for _, k := range a.remotes {
		k.start()
	}
	return a, nil
}

// Enabled reports whether any scheme is configured; without one, every
// request is anonymous.
func (a *Authenticator) Enabled() bool { return a != nil && len(a.schemes) > 0 }

// Close stops the background key refreshes. Safe to call more than once.
func (a *Authenticator) Close() {
	if a == nil {
		return
	}
	a.closeOnce.Do(func() {
		for _, k := range a.remotes {
			k.close()
		}
	})
}

// KeysReady reports whether every scheme that takes its keys from a JWKS
// has fetched them at least once: until then its tokens are refused. (A
// later failed fetch keeps the last good keys, and does not count.)
func (a *Authenticator) KeysReady() error {
	if a == nil {
		return nil
	}
	for _, k := range a.remotes {
		if k.current() == nil {
			return fmt.Errorf("security: %s: its keys (JWKS) have never been fetched", k.scheme)
		}
	}
	return nil
}

// CardSchemes is the card's securitySchemes: exactly the schemes checked.
// The map is the caller's to keep.
func (a *Authenticator) CardSchemes() map[string]a2a.SecurityScheme {
	if a == nil || len(a.cardSchemes) == 0 {
		return nil
	}
	out := make(map[string]a2a.SecurityScheme, len(a.cardSchemes))
	for name, s := range a.cardSchemes {
		s.Flows = s.Flows.Clone()
		out[name] = s
	}
	return out
}

// CardRequirements is the card's agent-wide security: the requirement
// Authenticate enforces (with the default spelled out when Require was empty). The slice is the
// caller's to keep.
func (a *Authenticator) CardRequirements() []a2a.SecurityRequirement {
	if a == nil {
		return nil
	}
	return cloneRequirements(a.cardReqs)
}

// CheckRequirements validates a skill's requirements at provision time:
// every scheme must be declared and every scope grantable by it (a scope
// no API key or user is given, a scope an oauth2 flow does not declare, or
// any scope on mutualTLS can never be satisfied).
func (a *Authenticator) CheckRequirements(reqs []a2a.SecurityRequirement) error {
	_, err := a.compile(reqs, true)
	return err
}

// Requirements is an OR of ANDs of schemes and scopes, such as a skill's,
// resolved against the schemes of the Authenticator that compiled it, so
// that checking a request against it looks nothing up by name.
type Requirements struct {
	alternatives []alternative
	refused      *Failure // an anonymous caller's 401, copied for each
}

// CompileRequirements resolves reqs for Authorize, once, before requests
// arrive: every scheme must be declared. Empty reqs compile to nil, which
// admits every caller.
func (a *Authenticator) CompileRequirements(reqs []a2a.SecurityRequirement) (*Requirements, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	alts, err := a.compile(reqs, false)
	if err != nil {
		return nil, err
	}
	refused := a.anonymousRefused(alts)
	refused.Challenges = slices.Clip(refused.Challenges)
	return &Requirements{alternatives: alts, refused: refused}, nil
}

// compile resolves scheme names; strict also refuses scopes the scheme can
// never grant.
func (a *Authenticator) compile(reqs []a2a.SecurityRequirement, strict bool) ([]alternative, error) {
	out := make([]alternative, 0, len(reqs))
	for i, req := range reqs {
		alt := make(alternative, 0, len(req))
		for _, name := range slices.Sorted(maps.Keys(req)) {
			s := a.schemeNamed(name)
			if s == nil {
				return nil, fmt.Errorf("[%d]: scheme %q is not declared", i, name)
			}
			if err := s.checkScopes(req[name]); strict && err != nil {
				return nil, fmt.Errorf("[%d]: scheme %q: %w", i, name, err)
			}
			alt = append(alt, requirement{scheme: s, scopes: slices.Clone(req[name])})
		}
		out = append(out, alt)
	}
	return out, nil
}

func (a *Authenticator) schemeNamed(name string) *scheme {
	if a == nil {
		return nil
	}
	return a.byName[name]
}

// Authenticate checks r against the agent-wide requirement. It answers
// (identity, nil) when one alternative is satisfied, (nil, nil) for an
// anonymous caller (no schemes configured, or an empty alternative and no
// credentials presented), and (nil, failure) otherwise: 401 when no
// alternative's schemes are all satisfied, 403 when one alternative's
// schemes all are but a scope is missing.
//
// Every scheme whose credential the request carries is checked, so the
// identity also serves skill requirements (Authorize) that name schemes
// the agent-wide requirement does not. A credential that fails is ignored
// when another alternative is satisfied; otherwise it fails the request,
// even where anonymous callers are admitted.
func (a *Authenticator) Authenticate(r *http.Request) (*Identity, *Failure) {
	if !a.Enabled() {
		return nil, nil
	}
	var buf [8]outcome
	outs := buf[:0]
	if len(a.schemes) > len(buf) {
		outs = make([]outcome, 0, len(a.schemes))
	}
	presented, failed := false, false
	for _, s := range a.schemes {
		o := s.check(r)
		outs = append(outs, o)
		presented = presented || o.state != absent
		failed = failed || o.state == invalid
	}

	scopeShort := -1 // an alternative whose schemes all passed but lacks scopes
	for i, alt := range a.require {
		if len(alt) == 0 {
			continue
		}
		authenticated, scoped := true, true
		for _, req := range alt {
			o := &outs[req.scheme.index]
			if o.state != valid {
				authenticated = false
				break
			}
			scoped = scoped && hasScopes(o.id.Scopes, req.scopes)
		}
		switch {
		case authenticated && scoped:
			return a.identityOf(outs), nil
		case authenticated && scopeShort < 0:
			scopeShort = i
		}
	}
	if a.anonymous {
		switch {
		case !presented:
			return nil, nil
		case !failed:
			return a.identityOf(outs), nil
		}
	}
	if scopeShort >= 0 {
		return nil, a.insufficientScope(a.require[scopeShort:scopeShort+1], func(s *scheme) *Credential {
			return outs[s.index].id.Credentials[0]
		})
	}
	return nil, a.unauthenticated(outs, presented)
}

// Challenge is the 401 for an anonymous caller of something that needs an
// authenticated one (the extended card, where the agent-wide requirement
// admits anonymous callers): it challenges for the schemes of the
// agent-wide requirement or, when that names none, for every scheme.
func (a *Authenticator) Challenge() *Failure {
	if a == nil {
		return &Failure{Status: http.StatusUnauthorized, Reason: ReasonUnauthenticated,
			Message: "authentication required", Detail: "no security schemes are configured", Cause: CauseNoCredentials}
	}
	f := a.unauthenticated(make([]outcome, len(a.schemes)), false)
	if len(f.Challenges) == 0 {
		for _, s := range a.schemes {
			f.Challenges = append(f.Challenges, s.challenge)
		}
	}
	return f
}

// Authorize checks an identity from Authenticate against requirements
// this Authenticator compiled; nil requirements admit every caller, the
// anonymous (nil) identity too. A refusal names what is missing: for the
// anonymous identity it is a 401 with a challenge for each scheme the
// requirements name (credentials would help), otherwise a 403.
func (a *Authenticator) Authorize(id *Identity, reqs *Requirements) *Failure {
	if reqs == nil {
		return nil
	}
	for _, alt := range reqs.alternatives {
		if id.satisfies(alt) {
			return nil
		}
	}
	if id == nil {
		refused := *reqs.refused
		return &refused
	}
	return a.insufficientScope(reqs.alternatives, func(s *scheme) *Credential { return id.For(s.name) })
}

// satisfies reports whether the identity holds every scheme of alt with
// its scopes.
func (id *Identity) satisfies(alt alternative) bool {
	for _, req := range alt {
		if c := id.For(req.scheme.name); c == nil || !hasScopes(c.Scopes, req.scopes) {
			return false
		}
	}
	return true
}

func hasScopes(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// identityOf gathers the valid credentials, primary first: by scheme
// priority, then by name (the order of a.schemes).
func (a *Authenticator) identityOf(outs []outcome) *Identity {
	var idx [8]int
	valids := idx[:0]
	for i := range outs {
		if outs[i].state == valid {
			valids = append(valids, i)
		}
	}
	if len(valids) == 1 {
		return outs[valids[0]].id
	}
	slices.SortStableFunc(valids, func(x, y int) int {
		return cmp.Compare(a.schemes[x].priority, a.schemes[y].priority)
	})
	primary := outs[valids[0]].id
	id := &Identity{Credential: primary.Credential, Credentials: make([]*Credential, len(valids)), owner: primary.Owner()}
	for i, v := range valids {
		id.Credentials[i] = outs[v].id.Credentials[0]
	}
	return id
}

// Scheme priorities for the primary credential: tokens name the end user,
// a client certificate names the workload.
const (
	priorityToken = iota
	priorityBasic
	priorityAPIKey
	priorityMTLS
)

// single wraps one credential as an identity.
func single(c *Credential) *Identity {
	return &Identity{Credential: *c, Credentials: []*Credential{c}, owner: c.Scheme + ":" + c.Subject}
}

func (a *Authenticator) unauthenticated(outs []outcome, presented bool) *Failure {
	f := &Failure{Status: http.StatusUnauthorized, Reason: ReasonUnauthenticated,
		Message: "authentication required", Cause: CauseNoCredentials}
	if presented {
		f.Message, f.Cause = "the credentials presented were not accepted", CauseNotAccepted
	}
	var details []string
	for _, sc := range a.requireChallenges {
		s, c := sc.scheme, sc.challenge
		o := outs[s.index]
		if o.state == invalid {
			details = append(details, fmt.Sprintf("scheme %q: %s", s.name, o.detail))
			if f.Scheme == "" {
				f.Scheme, f.Cause = s.name, o.reason
			}
			if s.bearer {
				c += `, error="invalid_token", error_description=` + quote(o.reason)
			}
		}
		if !slices.Contains(f.Challenges, c) {
			f.Challenges = append(f.Challenges, c)
		}
	}
	f.Detail = strings.Join(details, "; ")
	return f
}

// challenged is a scheme that requirements name, with its 401 challenge.
type challenged struct {
	scheme    *scheme
	challenge string
}

// challengesOf is the challenges of the schemes alts name, each once, in
// order, naming the scopes any alternative asks of it: made once, as the
// requirements compile.
func challengesOf(alts []alternative) []challenged {
	schemes, scopes := named(alts)
	out := make([]challenged, len(schemes))
	for i, s := range schemes {
		out[i] = challenged{s, s.challengeFor(scopes[i])}
	}
	return out
}

// named lists the schemes alts name, in order, each once, with the scopes
// any of the alternatives asks of it.
func named(alts []alternative) (schemes []*scheme, scopes [][]string) {
	for _, alt := range alts {
		for _, req := range alt {
			i := slices.Index(schemes, req.scheme)
			if i < 0 {
				i = len(schemes)
				schemes, scopes = append(schemes, req.scheme), append(scopes, nil)
			}
			for _, scope := range req.scopes {
				if !slices.Contains(scopes[i], scope) {
					scopes[i] = append(scopes[i], scope)
				}
			}
		}
	}
	return schemes, scopes
}

// challengeFor is s's challenge on a 401, naming for a token scheme the
// scopes the token needs (RFC 6750 §3), so that a client asks for them
// (MCP's do).
func (s *scheme) challengeFor(scopes []string) string {
	if !s.bearer || len(scopes) == 0 {
		return s.challenge
	}
	return s.challenge + ", scope=" + quote(strings.Join(scopes, " "))
}

// insufficientScope names, for each alternative, the requirements the
// caller's credentials (have: nil when the scheme was not satisfied) miss.
func (a *Authenticator) insufficientScope(alts []alternative, have func(*scheme) *Credential) *Failure {
	needs, challenges := missing(alts, have)
	f := &Failure{Status: http.StatusForbidden, Reason: ReasonUnauthorized, Challenges: challenges,
		Message: "insufficient scope: requires " + needs, Cause: CauseInsufficientScope}
	f.Detail = f.Message
	for _, alt := range alts {
		for _, req := range alt {
			if c := have(req.scheme); f.Scheme == "" && (c == nil || !hasScopes(c.Scopes, req.scopes)) {
				f.Scheme = req.scheme.name
			}
		}
	}
	return f
}

// anonymousRefused answers an anonymous caller that a requirement refuses:
// a 401 that challenges for every scheme the requirement names. It is made
// once per requirement, as it compiles.
func (a *Authenticator) anonymousRefused(alts []alternative) *Failure {
	needs, _ := missing(alts, func(*scheme) *Credential { return nil })
	f := &Failure{Status: http.StatusUnauthorized, Reason: ReasonUnauthenticated,
		Message: "authentication required: requires " + needs, Cause: CauseNoCredentials}
	f.Detail = f.Message
	for _, sc := range challengesOf(alts) {
		if !slices.Contains(f.Challenges, sc.challenge) {
			f.Challenges = append(f.Challenges, sc.challenge)
		}
	}
	return f
}

// missing says, for each alternative, which requirements the caller's
// credentials (have: nil when the scheme was not satisfied) do not meet,
// and gives the RFC 6750 insufficient_scope challenges of the token
// schemes among them.
func missing(alts []alternative, have func(*scheme) *Credential) (needs string, challenges []string) {
	var alternatives []string
	for _, alt := range alts {
		var parts []string
		for _, req := range alt {
			s := req.scheme
			if c := have(s); c != nil && hasScopes(c.Scopes, req.scopes) {
				continue
			}
			part := fmt.Sprintf("scheme %q", s.name)
			if len(req.scopes) > 0 {
				part += " with scopes [" + strings.Join(req.scopes, " ") + "]"
				if s.bearer {
					c := s.challenge + `, error="insufficient_scope", scope=` + quote(strings.Join(req.scopes, " "))
					if !slices.Contains(challenges, c) {
						challenges = append(challenges, c)
					}
				}
			}
			parts = append(parts, part)
		}
		if len(parts) > 0 {
			alternatives = append(alternatives, strings.Join(parts, " and "))
		}
	}
	return strings.Join(alternatives, ", or "), challenges
}

// quote makes an RFC 7235 quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func cloneRequirements(reqs []a2a.SecurityRequirement) []a2a.SecurityRequirement {
	if reqs == nil {
		return nil
	}
	out := make([]a2a.SecurityRequirement, len(reqs))
	for i, r := range reqs {
		out[i] = make(a2a.SecurityRequirement, len(r))
		for name, scopes := range r {
			out[i][name] = slices.Clone(scopes)
		}
	}
	return out
}
