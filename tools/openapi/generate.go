package openapi

// From operations to skills.

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"

	"github.com/caddy-a2a/caddy-a2a/mapping"
	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
)

// generator gathers the skills file.
type generator struct {
	doc *document
	// upstreamURL is the API's base URL, and upstreamNote what the
	// operator should know about it.
	upstreamURL  string
	upstreamNote string
	// headers are the credential headers every request sends, and
	// queryCreds the credentials sent in the query, by scheme name.
	headers    []param
	queryCreds map[string]param
	oauth2     *oauth2
	// cred documents each environment variable.
	creds   []credential
	skills  []*skill
	usedIDs map[string]bool
	notes   []string // about the whole file
	// securityNotes are those about the credentials, made anew with them.
	securityNotes []string
	leftOut       []LeftOut
}

// param is a name and a template.
type param struct{ name, value string }

type credential struct {
	env, scheme, what string
}

// skill is one skill, ready to be written.
type skill struct {
	op                      *operation
	doc                     *document
	id, name, description   string
	tags, examples          []string
	inputModes, outputModes []string
	args                    []*argument
	method, path            string
	query, headers          []param
	body, bodyFormat        string
	bodyComment             string
	notes                   []string
	// kinds counts the notes of each kind (their format).
	kinds map[string]*noteKind
	// nested counts the arguments nested in the skill's, up to
	// maxNested; trim is how much of them the file leaves out so that
	// the skill's schema stays within the published bound.
	nested int
	trim   trimLevel
}

// argument is one declared argument, or one nested in another (in items
// or properties).
type argument struct {
	name, typ, description string
	types                  []string // a union's types, typ the first; nil for one type
	required               bool
	enum                   []any
	def                    any
	hasDef                 bool
	mediaTypes             []string
	example                any
	hasExample             bool
	in                     string // path, query, header or body
	wire                   string // its name in the request
	rules
	// style and explode say how a query or a form body sends an object
	// or a list, as the document does ("" where it says nothing).
	style, explode string
	// unnamed are the properties left out of its schema, their names
	// not being argument names.
	unnamed []string
	// pathPrefix is the literal text a path parameter's style writes
	// before its value (label: ".", matrix: ";name=").
	pathPrefix string
}

// rules are what a value must keep, as the document's schema says.
type rules struct {
	pattern, format                          string
	minLength, maxLength, minItems, maxItems *int
	minimum, maximum                         *float64
	exclusiveMin, exclusiveMax               bool
	items                                    *argument
	props                                    []*argument
}

// has reports whether a value of a may be of type t.
func (a *argument) has(t string) bool { return a.typ == t || slices.Contains(a.types, t) }

// fitsArg reports whether v is a value of one of a's types.
func (a *argument) fitsArg(v any) bool {
	return fits(v, a.typ) || slices.ContainsFunc(a.types, func(t string) bool { return fits(v, t) })
}

// placeholderURL stands for an API whose document gives no absolute URL.
const placeholderURL = "http://127.0.0.1:8080"

func (g *generator) upstream(override string) error {
	if override != "" {
		u, err := url.Parse(override)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("the upstream URL must be an absolute http:// or https:// URL without credentials, query or fragment")
		}
		g.upstreamURL = strings.TrimSuffix(override, "/")
		return nil
	}
	servers := get(g.doc.root, "servers")
	if servers == nil || servers.Kind != yaml.SequenceNode || len(servers.Content) == 0 {
		g.upstreamURL = placeholderURL
		g.upstreamNote = "the document names no server: set upstream.url (or the a2a handler's upstream)"
		return nil
	}
	raw := serverURL(servers.Content[0])
	u, err := url.Parse(raw)
	switch {
	case err != nil || strings.ContainsAny(raw, "{}"):
		g.upstreamURL = placeholderURL
		g.upstreamNote = fmt.Sprintf("the document's server %q is not a URL: set upstream.url", raw)
	case u.Scheme == "" && u.Host == "":
		g.upstreamURL = placeholderURL + strings.TrimSuffix(u.Path, "/")
		g.upstreamNote = fmt.Sprintf("the document's server %q is relative to where the document is served: set upstream.url to the API's address", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		g.upstreamURL = placeholderURL
		g.upstreamNote = fmt.Sprintf("the document's server %q is not http or https: set upstream.url", raw)
	default:
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		g.upstreamURL = strings.TrimSuffix(u.String(), "/")
	}
	return nil
}

// serverURL is a Server Object's URL, its variables at their defaults.
func serverURL(server *yaml.Node) string {
	raw := scalar(get(server, "url"))
	if vars := get(server, "variables"); vars != nil && vars.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			raw = strings.ReplaceAll(raw, "{"+vars.Content[i].Value+"}", scalar(get(vars.Content[i+1], "default")))
		}
	}
	return raw
}

// ownServer is the first server an operation names (its own, or its path
// item's) when it is not the document's first, which upstream.url is
// taken from; "" when it names none, or that one.
func (g *generator) ownServer(op *operation) string {
	own := get(op.node, "servers")
	if own == nil {
		own = get(op.pathItem, "servers")
	}
	if own == nil || own.Kind != yaml.SequenceNode || len(own.Content) == 0 {
		return ""
	}
	url := serverURL(own.Content[0])
	if doc := get(g.doc.root, "servers"); doc != nil && doc.Kind == yaml.SequenceNode && len(doc.Content) > 0 &&
		strings.TrimSuffix(serverURL(doc.Content[0]), "/") == strings.TrimSuffix(url, "/") {
		return ""
	}
	return url
}

// security turns the schemes the operations need into credentials read
// from the environment: headers every request sends (credentials, so a
// request whose credential is unset is never sent), or query parameters of
// the skills that need them. It starts afresh, so that it can be run again
// on the operations still kept.
func (g *generator) security(ops []*operation) {
	schemes := get(get(g.doc.root, "components"), "securitySchemes")
	var names []string
	for _, op := range ops {
		for _, name := range g.requirement(op) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	g.headers, g.queryCreds, g.oauth2, g.creds, g.securityNotes = nil, map[string]param{}, nil, nil, nil
	for _, name := range names {
		s, err := g.doc.deref(get(schemes, name))
		if s == nil || err != nil {
			g.securityNotes = append(g.securityNotes, fmt.Sprintf("security scheme %q is not declared in components.securitySchemes", name))
			continue
		}
		env := envName(name)
		typ, in, pname := scalar(get(s, "type")), scalar(get(s, "in")), scalar(get(s, "name"))
		// staticNote says why a static bearer token stands for the scheme.
		var staticNote string
		if typ == "oauth2" {
			var done bool
			if done, staticNote = g.clientCredentials(name, s, ops); done {
				continue
			}
		}
		var h param
		var what string
		switch {
		case typ == "apiKey" && in == "header" && httpguts.ValidHeaderFieldName(pname):
			h, what = param{pname, "{env." + env + "}"}, "the API key (header "+pname+")"
		case typ == "apiKey" && in == "query" && pname != "":
			g.queryCreds[name] = param{pname, "{env." + env + "}"}
			g.creds = append(g.creds, credential{env, name, "the API key (query parameter " + pname + ")"})
			continue
		case typ == "apiKey" && in == "cookie" && pname != "":
			h, what = param{"Cookie", pname + "={env." + env + "}"}, "the API key (cookie "+pname+")"
		case typ == "http" && strings.EqualFold(scalar(get(s, "scheme")), "basic"):
			h, what = param{"Authorization", "Basic {env." + env + "}"}, "base64 of user:password (HTTP basic)"
		case typ == "http" && strings.EqualFold(scalar(get(s, "scheme")), "bearer"),
			typ == "oauth2", typ == "openIdConnect":
			h, what = param{"Authorization", "Bearer {env." + env + "}"}, "a bearer token"
			if typ != "http" {
				what += " (a static token: the agent does not fetch or refresh it)"
				if staticNote == "" {
					staticNote = fmt.Sprintf("security scheme %q (%s) asks for a user's token, which the agent cannot get by itself: "+
						"the file sends a static bearer token from {env.%s}; for a token per caller, set upstream.oauth2 with grant: token_exchange "+
						"(when the API trusts the agent's identity provider), or pass the caller's own with forward_headers: [Authorization]", name, flowsOf(typ, s), env)
				}
			}
		default:
			g.securityNotes = append(g.securityNotes, fmt.Sprintf("security scheme %q (%s) is not carried over: add its credential to upstream.headers by hand", name, typ))
			continue
		}
		// Cookies share one header: schemes required together send theirs in it.
		if i := slices.IndexFunc(g.headers, func(p param) bool { return p.name == "Cookie" }); h.name == "Cookie" && i >= 0 {
			g.headers[i].value += "; " + h.value
			g.creds = append(g.creds, credential{env, name, what})
			continue
		}
		if hasParam(g.headers, "header", h.name) || g.oauth2 != nil && strings.EqualFold(h.name, "Authorization") {
			g.securityNotes = append(g.securityNotes, fmt.Sprintf("security scheme %q also uses the header %s: only the first scheme's is kept", name, h.name))
			continue
		}
		if staticNote != "" {
			g.securityNotes = append(g.securityNotes, staticNote)
		}
		g.headers = append(g.headers, h)
		g.creds = append(g.creds, credential{env, name, what})
	}
}

// oauth2 is the upstream's OAuth2 client credentials (upstream.oauth2).
type oauth2 struct {
	tokenURL, clientID, clientSecret string // clientID and secret as {env.…}
	scopes                           []string
	// relativeTo is the document's relative token URL, resolved against
	// the API's URL; "" for an absolute one.
	relativeTo string
}

// clientCredentials makes an oauth2 scheme with a clientCredentials flow
// the upstream's OAuth2 client credentials, and reports whether it did (or
// noted that another scheme has Authorization). There is one such setting
// per upstream, and it sends Authorization. A token URL that
// upstream.oauth2 refuses (http:// to a host not loopback) is not one:
// staticNote then says what to configure instead of the static bearer token
// the scheme falls back to.
func (g *generator) clientCredentials(name string, scheme *yaml.Node, ops []*operation) (done bool, staticNote string) {
	flow := get(get(scheme, "flows"), "clientCredentials")
	tokenURL := scalar(get(flow, "tokenUrl"))
	if flow == nil || tokenURL == "" {
		return false, ""
	}
	if g.oauth2 != nil || hasParam(g.headers, "header", "Authorization") {
		g.securityNotes = append(g.securityNotes, fmt.Sprintf("security scheme %q also uses the header Authorization: only the first scheme's is kept", name))
		return true, ""
	}
	// A relative token URL is relative to the API's.
	var relativeTo string
	if u, err := url.Parse(tokenURL); err == nil && !u.IsAbs() {
		if base, err := url.Parse(g.upstreamURL + "/"); err == nil {
			relativeTo, tokenURL = tokenURL, base.ResolveReference(u).String()
		}
	}
	env := envName(name)
	o := &oauth2{tokenURL: tokenURL, clientID: "{env." + env + "_CLIENT_ID}", clientSecret: "{env." + env + "_CLIENT_SECRET}",
		scopes: g.scopes(ops, name), relativeTo: relativeTo}
	// The rule upstream.oauth2 loads by.
	cfg := upstreamauth.Config{Grant: upstreamauth.GrantClientCredentials, TokenURL: o.tokenURL, ClientID: o.clientID, ClientSecret: o.clientSecret}
	if err := cfg.Check(); err != nil {
		return false, fmt.Sprintf("security scheme %q (%s) has the token URL %s, and upstream.oauth2's %v: the file sends a static bearer token from {env.%s}; "+
			"for the agent to fetch and refresh it, set upstream.oauth2 with grant: client_credentials and the token endpoint's https:// token_url", name, flowsOf("oauth2", scheme), tokenURL, err, env)
	}
	g.oauth2 = o
	g.creds = append(g.creds,
		credential{env + "_CLIENT_ID", name, "the OAuth2 client id (client credentials at " + tokenURL + ")"},
		credential{env + "_CLIENT_SECRET", name, "the OAuth2 client secret"})
	return true, ""
}

// upstreamNotes is what the operator should know about the API's URL: with
// a placeholder for it, a token URL resolved against it is one too.
func (g *generator) upstreamNotes() string {
	if g.upstreamNote == "" || g.oauth2 == nil || g.oauth2.relativeTo == "" {
		return g.upstreamNote
	}
	return fmt.Sprintf("%s, and upstream.oauth2.token_url (the document's %q, resolved against the placeholder) to its token endpoint", g.upstreamNote, g.oauth2.relativeTo)
}

// flowsOf names an oauth2 scheme's flows: "oauth2, flows
// authorizationCode, implicit"; or the type of another scheme.
func flowsOf(typ string, scheme *yaml.Node) string {
	flows := get(scheme, "flows")
	if typ != "oauth2" || flows == nil || flows.Kind != yaml.MappingNode {
		return typ
	}
	var names []string
	for i := 0; i+1 < len(flows.Content); i += 2 {
		names = append(names, flows.Content[i].Value)
	}
	return typ + ", flows " + strings.Join(names, ", ")
}

// queryCredentials are the credentials op sends in its query.
func (g *generator) queryCredentials(op *operation) []param {
	var out []param
	for _, name := range g.requirement(op) {
		if q, ok := g.queryCreds[name]; ok {
			out = append(out, q)
		}
	}
	return out
}

// hasParam reports whether params holds a parameter named name: header
// names match whatever their case, query names exactly.
func hasParam(params []param, in, name string) bool {
	return slices.ContainsFunc(params, func(p param) bool {
		return p.name == name || in == "header" && strings.EqualFold(p.name, name)
	})
}

// requirement is the scheme names an operation needs: the first
// alternative of its security, or of the document's.
func (g *generator) requirement(op *operation) []string {
	req := g.requirementNode(op)
	var names []string
	for i := 0; req != nil && i+1 < len(req.Content); i += 2 {
		names = append(names, req.Content[i].Value)
	}
	return names
}

// requirementNode is the first alternative of op's security, or of the
// document's: a mapping of scheme names to scopes; nil when none.
func (g *generator) requirementNode(op *operation) *yaml.Node {
	sec := get(op.node, "security")
	if sec == nil {
		sec = get(g.doc.root, "security")
	}
	if sec == nil || sec.Kind != yaml.SequenceNode || len(sec.Content) == 0 {
		return nil
	}
	if first := resolveAlias(sec.Content[0]); first.Kind == yaml.MappingNode {
		return first
	}
	return nil
}

// scopes are the scopes ops require of the scheme name, each once.
func (g *generator) scopes(ops []*operation, name string) []string {
	var out []string
	for _, op := range ops {
		if list := get(g.requirementNode(op), name); list != nil && list.Kind == yaml.SequenceNode {
			for _, s := range list.Content {
				if s.Value != "" && !slices.Contains(out, s.Value) {
					out = append(out, s.Value)
				}
			}
		}
	}
	return out
}

func (g *generator) envNames() []string {
	out := make([]string, len(g.creds))
	for i, c := range g.creds {
		out[i] = c.env
	}
	return out
}

// envName makes a scheme name an environment variable's: demoApiKey is
// DEMO_API_KEY.
func envName(scheme string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range scheme {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToUpper(r))
		case b.Len() > 0 && prev != '_':
			b.WriteByte('_')
			r = '_'
		}
		prev = r
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "API_" + s
	}
	return s
}

var (
	skillIDPattern = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
	argNamePattern = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// skillID makes the operation's id a skill id, unique in the file.
func (g *generator) skillID(op *operation) string {
	base := op.id
	if base == "" {
		base = op.method + "_" + op.path
	}
	id := strings.Trim(skillIDPattern.ReplaceAllString(base, "_"), "_.-")
	for strings.Contains(id, "__") {
		id = strings.ReplaceAll(id, "__", "_")
	}
	if id == "" {
		id = op.method
	}
	unique := id
	for n := 2; g.usedIDs[unique]; n++ {
		unique = id + "_" + strconv.Itoa(n)
	}
	g.usedIDs[unique] = true
	return unique
}

// argName makes a parameter's name an argument's.
func argName(name string) string {
	s := strings.Trim(argNamePattern.ReplaceAllString(name, "_"), "_")
	if s == "" {
		return "arg"
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	return s
}

func (g *generator) skill(op *operation) (*skill, error) {
	sk := &skill{op: op, doc: g.doc, id: g.skillID(op), method: strings.ToUpper(op.method)}
	summary := oneLine(scalar(get(op.node, "summary")))
	sk.name = summary
	if sk.name == "" {
		sk.name = sk.id
	}
	sk.description = strings.TrimSpace(scalar(get(op.node, "description")))
	if sk.description == "" {
		sk.description = summary
	}
	if sk.description == "" {
		sk.description = sk.method + " " + op.path
	}
	if tags := get(op.node, "tags"); tags != nil && tags.Kind == yaml.SequenceNode {
		for _, t := range tags.Content {
			sk.tags = append(sk.tags, t.Value)
		}
	}
	if own := g.ownServer(op); own != "" {
		sk.note("the operation names its own server, %s; the skill calls upstream.url", own)
	}
	for _, n := range g.doc.converted[op.node] {
		sk.note("%s", n)
	}
	if err := g.parameters(sk); err != nil {
		return nil, err
	}
	if err := g.requestBody(sk); err != nil {
		return nil, err
	}
	for _, a := range sk.args {
		sk.unnamedNote(a, a.name)
	}
	if err := g.pathTemplate(sk); err != nil {
		return nil, err
	}
	for _, q := range g.queryCredentials(op) {
		if !hasParam(sk.query, "query", q.name) {
			sk.query = append(sk.query, q)
		}
	}
	if err := g.outputModes(sk); err != nil {
		return nil, err
	}
	sk.inputs()
	sk.example()
	return sk, nil
}

// maxNotesOfAKind bounds a skill's notes of one kind (one format), which
// a recursive schema may make by the hundred: the last one says how many
// more there were.
const maxNotesOfAKind = 3

// noteKind counts the notes of one kind: those said in full, the last of
// them and where it is, and those only counted.
type noteKind struct {
	said, more, lastAt int
	last               string
}

// note says something of the skill, once; past maxNotesOfAKind of its
// format, only how many more there were.
func (sk *skill) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	k := sk.kinds[format]
	if slices.Contains(sk.notes, n) || k != nil && k.last == n {
		return
	}
	if k == nil {
		if sk.kinds == nil {
			sk.kinds = map[string]*noteKind{}
		}
		k = &noteKind{}
		sk.kinds[format] = k
	}
	if k.said < maxNotesOfAKind {
		k.said, k.last, k.lastAt = k.said+1, n, len(sk.notes)
		sk.notes = append(sk.notes, n)
		return
	}
	k.more++
	sk.notes[k.lastAt] = k.last + more(k.more, "such note")
}

// parameters reads the path item's and the operation's parameters, the
// operation's winning.
func (g *generator) parameters(sk *skill) error {
	type key struct{ name, in string }
	var order []key
	nodes := map[key]*yaml.Node{}
	for _, list := range []*yaml.Node{get(sk.op.pathItem, "parameters"), get(sk.op.node, "parameters")} {
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		for _, pn := range list.Content {
			p, err := g.doc.deref(pn)
			if err != nil {
				return fmt.Errorf("parameters: %w", err)
			}
			k := key{scalar(get(p, "name")), scalar(get(p, "in"))}
			if _, seen := nodes[k]; !seen {
				order = append(order, k)
			}
			nodes[k] = p
		}
	}
	for _, k := range order {
		p := nodes[k]
		switch {
		case k.in == "cookie":
			sk.note("the cookie parameter %s is not carried over", k.name)
			continue
		case k.in == "header" && slices.Contains([]string{"Accept", "Content-Type", "Authorization"}, http.CanonicalHeaderKey(k.name)):
			continue // OpenAPI ignores these: the media types and security say them
		case k.in == "header" && hasParam(g.headers, k.in, k.name):
			sk.note("the header parameter %s is a credential: upstream.headers sends it", k.name)
			continue
		case k.in == "query" && hasParam(g.queryCredentials(sk.op), k.in, k.name):
			sk.note("the query parameter %s is a credential: the skill's query sends it", k.name)
			continue
		case k.in == "header" && (!httpguts.ValidHeaderFieldName(k.name) || slices.Contains([]string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}, http.CanonicalHeaderKey(k.name))):
			sk.note("the header parameter %s cannot be set by a skill", k.name)
			continue
		case k.in != "path" && k.in != "query" && k.in != "header":
			sk.note("the parameter %s (in %q) is not carried over", k.name, k.in)
			continue
		}
		schemaNode := get(p, "schema")
		if schemaNode == nil {
			if content := get(p, "content"); content != nil && content.Kind == yaml.MappingNode && len(content.Content) > 1 {
				schemaNode = get(content.Content[1], "schema")
			}
		}
		s, err := g.doc.schema(schemaNode, 0)
		if err != nil {
			return fmt.Errorf("parameter %s: %w", k.name, err)
		}
		if ex, ok := exampleOf(p); ok {
			s.example, s.hasExample = ex, true
		}
		var prefix, form string
		if k.in == "path" || k.in == "header" {
			prefix, form = sk.simpleStyle(k.name, k.in, p, &s)
		}
		a := sk.argument(k.name, k.in, s, k.in == "path" || scalar(get(p, "required")) == "true", false)
		a.pathPrefix = prefix
		if desc := strings.TrimSpace(scalar(get(p, "description"))); desc != "" {
			a.description = desc
		}
		if form != "" {
			a.description = strings.TrimSpace(a.description + " Written as " + form + ".")
		}
		switch k.in {
		case "query":
			queryParam(sk, a, p)
		case "header":
			sk.headers = append(sk.headers, param{k.name, "{args." + a.name + "}"})
		}
	}
	return nil
}

// simpleStyle fits the path or header parameter p, named name, to what
// mapping writes there: a value, or a list as OpenAPI's simple style
// (a,b,c). A path parameter of style label or matrix gets the literal
// prefix returned (".", ";name="). An object, or a list exploded in
// label style, becomes text (s is changed) that the caller writes in the
// form returned; exploded in matrix style it would need semicolons,
// which mapping escapes in a path value: a note says it is sent
// unexploded.
func (sk *skill) simpleStyle(name, in string, p *yaml.Node, s *schema) (prefix, form string) {
	style, exploded := scalar(get(p, "style")), scalar(get(p, "explode")) == "true"
	switch {
	case style == "" || style == "simple":
		style = "simple"
	case in == "path" && style == "label":
		prefix = "."
	case in == "path" && style == "matrix":
		prefix = ";" + name + "="
	default:
		sk.note("the %s parameter %s has style %s, which OpenAPI does not define there: it is sent in simple style", in, name, style)
		style = "simple"
	}
	object := slices.Contains(s.typeList(), "object")
	switch {
	case !object && !(exploded && style != "simple" && slices.Contains(s.typeList(), "array")):
		return prefix, ""
	case style == "matrix" && exploded:
		sk.note("the path parameter %s is exploded in matrix style (;%s=a;%s=b), whose semicolons a skill escapes in a path value: it is sent unexploded (;%s=a,b)", name, name, name, name)
		if !object {
			return prefix, ""
		}
		exploded = false
	}
	// What OpenAPI's style writes, after the prefix, for an example value.
	what := "object"
	switch {
	case !object:
		what, form = "exploded list", `"3.4.5" for [3, 4, 5]`
	case !exploded:
		form = `"R,100,G,200" for {R: 100, G: 200}`
	case style == "label":
		form = `"R=100.G=200" for {R: 100, G: 200}`
	default:
		form = `"R=100,G=200" for {R: 100, G: 200}`
	}
	sk.note("the %s parameter %s is an %s (%s style), which a skill does not build: it is taken as text, written as %s", in, name, what, style, form)
	*s = schema{typ: "string", description: s.description, example: s.example, hasExample: s.hasExample}
	return prefix, form
}

// encodingStyles are the styles of OpenAPI's that a skill's query and
// form body send.
var encodingStyles = []string{"form", "spaceDelimited", "pipeDelimited", "deepObject"}

// queryParam sends the argument a as the query parameter p: an object or
// a list as p's style and explode say.
func queryParam(sk *skill, a *argument, p *yaml.Node) {
	style, explode := scalar(get(p, "style")), scalar(get(p, "explode"))
	if a.typ == "object" && a.types == nil && len(a.props) == 0 && (style == "" || style == "form") && explode != "false" {
		// Its keys would be the query's own parameters, none of them
		// declared: mapping sends no key a caller names (it could add any
		// parameter), so the argument could never be sent.
		sk.args = slices.DeleteFunc(sk.args, func(x *argument) bool { return x == a })
		sk.note("the query parameter %s is an object whose keys are query parameters of their own (form, exploded), and its schema names none of them: "+
			"declare its properties by hand to send it", a.wire)
		return
	}
	if (style != "" || explode != "") && (a.has("object") || a.has("array")) {
		switch {
		case style == "tabDelimited" && a.types == nil && a.typ == "array" && explode != "true":
			sk.query = append(sk.query, param{a.wire, fmt.Sprintf(`{args.%s == nil ? nil : join(map(args.%s, {string(#)}), "\t")}`, a.name, a.name)})
			return
		case style != "" && !slices.Contains(encodingStyles, style), style == "deepObject" && a.has("array"):
			if a.has("object") {
				sk.args = slices.DeleteFunc(sk.args, func(x *argument) bool { return x == a })
				sk.note("the query parameter %s is an object (style %s), which a skill's query cannot send: build it by hand", a.wire, style)
				return
			}
			sk.note("the query parameter %s is a list of style %s, which a skill's query cannot send: it is sent as form", a.wire, style)
		default:
			a.style, a.explode = style, explode
		}
	}
	sk.query = append(sk.query, param{a.wire, "{args." + a.name + "}"})
}

// formField sends the argument a as the form field its encoding (an
// Encoding Object, or nil) says: without one, as mapping's form body
// does (an object as deepObject, a list repeating its name).
func formField(sk *skill, a *argument, encoding *yaml.Node) {
	style, explode := scalar(get(encoding, "style")), scalar(get(encoding, "explode"))
	switch {
	case !a.has("object") && !a.has("array"):
	case style == "" && explode == "":
		if a.has("object") {
			sk.note("the form field %s is an object, which the document's encoding does not say how to send: it is sent as mapping's default, deepObject (%s[key]=value), "+
				"where OpenAPI's (form, exploded) sends each property as a field of its own", a.wire, a.wire)
		}
	case a.name != a.wire:
		sk.note("the form field %s has the style %s, which its argument %s does not carry (the names differ): it is sent as mapping's default", a.wire, orDefault(style, "form"), a.name)
	case style != "" && !slices.Contains(encodingStyles, style), style == "deepObject" && a.has("array"):
		sk.note("the form field %s has the style %s, which a skill's form body cannot send: it is sent as mapping's default", a.wire, style)
	case a.typ == "object" && a.types == nil && len(a.props) == 0 && (style == "" || style == "form") && explode != "false":
		// Exploded, its keys would be fields of their own, none declared,
		// which mapping does not send.
		sk.note("the form field %s is an object whose keys are fields of their own (form, exploded), and its schema names none of them: it is sent as mapping's default (deepObject)", a.wire)
	default:
		a.style, a.explode = style, explode
	}
}

// argument declares an argument for a parameter or body property, under a
// name not yet taken.
func (sk *skill) argument(wire, in string, s schema, required, multipart bool) *argument {
	name := argName(wire)
	for taken := sk.arg(name) != nil; taken; taken = sk.arg(name) != nil {
		name += "_" + in
	}
	a := &argument{name: name, in: in, wire: wire, required: required, description: s.description}
	switch {
	case multipart && (s.typ == "string" && s.types == nil && (s.format == "binary" || s.format == "base64") ||
		s.typ == "array" && s.types == nil && s.items != nil && scalar(get(s.items, "format")) == "binary"):
		if s.typ == "array" {
			sk.note("the multipart field %s takes several files; the skill sends one", wire)
		}
		a.typ = "file"
	default:
		sk.shape(a, s, name, 1)
	}
	if s.hasDef && !required && a.typ != "file" && s.def != nil && a.fitsArg(s.def) &&
		(a.enum == nil || slices.ContainsFunc(a.enum, func(v any) bool { return fmt.Sprint(v) == fmt.Sprint(s.def) })) {
		a.def, a.hasDef = s.def, true
	}
	if s.hasExample && s.example != nil && a.fitsArg(s.example) {
		a.example, a.hasExample = s.example, true
	}
	sk.args = append(sk.args, a)
	return a
}

// argTypes are the types an argument may have.
var argTypes = []string{"string", "integer", "number", "boolean", "object", "array"}

// scalarTypes are the types an enum may list values of.
var scalarTypes = []string{"string", "integer", "number"}

// maxNested bounds the arguments nested in one skill's, so that a
// document's recursive schemas do not make a file too large to read.
const maxNested = 1000

// shape gives a the type (or union), enum and rules s says; path names it
// in notes ("address.city"), and depth is how deep it nests (1 for a
// skill's own argument).
func (sk *skill) shape(a *argument, s schema, path string, depth int) {
	unknown := slices.DeleteFunc(slices.Clone(s.typeList()), func(t string) bool { return slices.Contains(argTypes, t) })
	switch {
	case s.typ == "":
		a.typ = "string"
		sk.note("the argument %s has no single type; it is taken as a string", path)
		return
	case len(unknown) > 0:
		a.typ = "string"
		sk.note("the argument %s has the type %q; it is taken as a string", path, unknown[0])
		return
	}
	a.typ, a.types = s.typ, s.types
	if !slices.ContainsFunc(s.typeList(), func(t string) bool { return !slices.Contains(scalarTypes, t) }) {
		for _, v := range s.enum {
			if a.fitsArg(v) {
				a.enum = append(a.enum, v)
			}
		}
	}
	if a.has("string") {
		a.format, a.minLength, a.maxLength = s.format, s.minLength, s.maxLength
		if !sk.doc.isGoPattern(s.pattern) {
			sk.note("the pattern of the argument %s, %s, is not Go (RE2) syntax: it is left out", path, s.pattern)
		} else {
			a.pattern = s.pattern
		}
	}
	if a.has("integer") || a.has("number") {
		a.minimum, a.maximum, a.exclusiveMin, a.exclusiveMax = s.minimum, s.maximum, s.exclusiveMin, s.exclusiveMax
	}
	if a.has("array") {
		a.minItems, a.maxItems = s.minItems, s.maxItems
	}
	nests := a.has("array") && s.items != nil || a.has("object") && len(s.props) > 0
	switch {
	case !nests:
		return
	case depth >= mapping.MaxArgumentDepth:
		sk.note("the argument %s nests deeper than the %d levels a skill's arguments may: below that, objects and lists are taken without their properties and items",
			path[:strings.IndexAny(path+".", ".[")], mapping.MaxArgumentDepth)
		return
	case sk.nested >= maxNested:
		sk.note("the skill's arguments nest more than %d properties and items: the others are taken without theirs", maxNested)
		return
	}
	if a.has("array") && s.items != nil {
		if is, err := sk.doc.schema(s.items, 0); err != nil {
			sk.note("the items of the argument %s are taken as any value: %v", path, err)
		} else {
			sk.nested++
			a.items = &argument{name: "items", description: is.description}
			sk.shape(a.items, is, path+"[]", depth+1)
		}
	}
	var badNames []string
	for _, p := range s.props {
		ps, err := sk.doc.schema(p.node, 0)
		switch {
		case err != nil:
			sk.note("the property %s.%s is taken as any value: %v", path, p.name, err)
			continue
		case ps.readOnly:
			continue
		case !validArgName.MatchString(p.name):
			badNames = append(badNames, p.name)
			continue
		}
		sk.nested++
		pa := &argument{name: p.name, description: ps.description, required: slices.Contains(s.required, p.name)}
		sk.shape(pa, ps, path+"."+p.name, depth+1)
		a.props = append(a.props, pa)
	}
	a.unnamed = badNames
	if depth > 1 {
		sk.unnamedNote(a, path) // a skill's own argument's, once it is known how it is sent
	}
}

// unnamedNote says the properties of a that shape left out for their
// names: sent form exploded, each key is a parameter or field of its own,
// which mapping sends only when declared, so they cannot be sent; sent
// any other way, they pass unchecked.
func (sk *skill) unnamedNote(a *argument, path string) {
	if len(a.unnamed) == 0 {
		return
	}
	names := bounded(strings.Join(a.unnamed, ", "))
	formExploded := (a.style == "form" || a.style == "" && a.in == "query") && a.explode != "false"
	if formExploded && (a.in == "query" || sk.bodyFormat == "form") {
		what := "form field"
		if a.in == "query" {
			what = "query parameter"
		}
		sk.note("the properties %s of the argument %s are not argument names, and it is sent form exploded, each key a %s of its own: they cannot be sent; add them by hand",
			names, path, what)
		return
	}
	sk.note("the properties %s of the argument %s are not argument names: its schema leaves them out (they pass unchecked)", names, path)
}

// validArgName matches what mapping takes as an argument's name.
var validArgName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (sk *skill) arg(name string) *argument {
	for _, a := range sk.args {
		if a.name == name {
			return a
		}
	}
	return nil
}

// requestBody declares the body's properties as arguments and builds the
// body from them.
func (g *generator) requestBody(sk *skill) error {
	rb, err := g.doc.deref(get(sk.op.node, "requestBody"))
	if err != nil {
		return fmt.Errorf("requestBody: %w", err)
	}
	content := get(rb, "content")
	if rb == nil || content == nil || content.Kind != yaml.MappingNode || len(content.Content) == 0 {
		return nil
	}
	required := scalar(get(rb, "required")) == "true"
	var mediaType string
	var media *yaml.Node
	for _, want := range []string{"json", "application/x-www-form-urlencoded", "multipart/form-data"} {
		for i := 0; i+1 < len(content.Content); i += 2 {
			mt := strings.ToLower(content.Content[i].Value)
			base, _, _ := strings.Cut(mt, ";")
			if want == "json" && (base == "application/json" || strings.HasSuffix(base, "+json")) || base == want {
				mediaType, media = strings.TrimSpace(base), resolveAlias(content.Content[i+1])
				break
			}
		}
		if media != nil {
			break
		}
	}
	if media == nil {
		var types []string
		for i := 0; i+1 < len(content.Content); i += 2 {
			types = append(types, content.Content[i].Value)
		}
		sk.note("the request body (%s) is not JSON, a form or multipart: the skill sends no body; add one by hand", strings.Join(types, ", "))
		return nil
	}
	multipart := mediaType == "multipart/form-data"
	switch {
	case multipart:
		sk.bodyFormat = "multipart"
	case mediaType == "application/x-www-form-urlencoded":
		sk.bodyFormat = "form"
	case mediaType != "application/json":
		sk.headers = append(sk.headers, param{"Content-Type", mediaType})
	}
	s, err := g.doc.schema(get(media, "schema"), 0)
	if err != nil {
		return fmt.Errorf("requestBody: %w", err)
	}
	if s.typ != "object" || len(s.props) == 0 || s.types != nil {
		switch {
		case s.typ != "":
		case get(media, "schema") == nil:
			s.typ = "object"
			sk.note("the request body has no schema: the argument body is taken as an object")
		default:
			s.typ = "object"
			sk.note("the request body's schema gives no type: the argument body is taken as an object")
		}
		if sk.bodyFormat != "" && !slices.Contains(s.typeList(), "object") {
			sk.note("the %s body is not an object; the skill sends the argument body as it is", mediaType)
		}
		a := sk.argument("body", "body", s, required, false)
		if a.description == "" {
			a.description = strings.TrimSpace(scalar(get(rb, "description")))
		}
		sk.body = "args." + a.name
		return nil
	}
	var fields []*argument
	for _, p := range s.props {
		ps, err := g.doc.schema(p.node, 0)
		if err != nil {
			return fmt.Errorf("requestBody: property %s: %w", p.name, err)
		}
		if ps.readOnly {
			continue
		}
		a := sk.argument(p.name, "body", ps, slices.Contains(s.required, p.name), multipart)
		if sk.bodyFormat == "form" {
			formField(sk, a, get(get(media, "encoding"), p.name))
		}
		if a.typ == "file" {
			if ct := scalar(get(get(get(media, "encoding"), p.name), "contentType")); ct != "" {
				for _, t := range strings.Split(ct, ",") {
					if t = strings.TrimSpace(t); t != "" {
						a.mediaTypes = append(a.mediaTypes, t)
					}
				}
			}
		}
		fields = append(fields, a)
	}
	sk.body, sk.bodyComment = bodyExpression(sk, fields)
	return nil
}

// bodyExpression builds the body from the arguments of its fields: the
// arguments themselves when they are exactly the fields, else a map of
// them, which leaves out the optional ones not given (a form or multipart
// encoding leaves out nulls itself). A map too large for an expression is
// built from a list of the fields' names instead (fieldList).
func bodyExpression(sk *skill, fields []*argument) (src, comment string) {
	same := len(fields) == len(sk.args)
	optional := false
	nodes := 5*len(fields) + 10
	for _, a := range fields {
		same = same && a.name == a.wire && !sk.asJSON(a)
		optional = optional || !a.required
		if sk.asJSON(a) {
			nodes += 12 // sentAsJSON's test and call, and args.name twice more
		}
	}
	if same {
		return "args", "the body is the arguments given (those not given are left out)"
	}
	filter := optional && sk.bodyFormat == ""
	if filter {
		src = lines("fromPairs(filter([", fields, func(a *argument) string {
			return fmt.Sprintf("[%s, args.%s]", strconv.Quote(a.wire), a.name)
		}, "], {#[1] != nil}))\n")
		comment = "the body's fields, leaving out those not given"
	} else {
		src = lines("{", fields, func(a *argument) string {
			value := "args." + a.name
			if sk.asJSON(a) {
				value = sentAsJSON(value)
			}
			return fmt.Sprintf("%s: %s", strconv.Quote(a.wire), value)
		}, "}\n")
	}
	// A map costs expr five syntax nodes a field (the pair or list, the
	// name, and args, its member and the member's name) and a few more
	// for the whole.
	if nodes <= mapping.DefaultMaxExpressionNodes {
		return src, comment
	}
	return fieldList(sk, fields, filter)
}

// asJSON reports whether the body field a is sent as JSON text when it
// holds a map: an object in a multipart body, which mapping's multipart
// encoding takes only as a file, and which OpenAPI sends as
// application/json by default.
func (sk *skill) asJSON(a *argument) bool {
	return sk.bodyFormat == "multipart" && a.typ != "file" && a.has("object")
}

// sentAsJSON is the expression of the value v as JSON text when it is a
// map, else v.
func sentAsJSON(v string) string {
	return fmt.Sprintf(`type(%s) == "map" ? toJSON(%s) : %s`, v, v, v)
}

// fieldList builds the body from a list of its fields' names, which costs
// an expression one node per field where a map costs five: the fields'
// names, and when an argument's name is not its field's, the arguments'
// names in a second list.
func fieldList(sk *skill, fields []*argument, filter bool) (src, comment string) {
	var b strings.Builder
	b.WriteString(lines("let fields = [", fields, func(a *argument) string { return strconv.Quote(a.wire) }, "];\n"))
	value := "args[#]"
	if slices.ContainsFunc(fields, func(a *argument) bool { return a.name != a.wire }) {
		b.WriteString(lines("let names = [", fields, func(a *argument) string { return strconv.Quote(a.name) }, "];\n"))
		value = "args[names[#index]]"
	}
	if json := slices.DeleteFunc(slices.Clone(fields), func(a *argument) bool { return !sk.asJSON(a) }); len(json) > 0 {
		b.WriteString(lines("let json = [", json, func(a *argument) string { return strconv.Quote(a.wire) }, "];\n"))
		value = "(# in json ? " + sentAsJSON(value) + " : " + value + ")"
	}
	pairs := "map(fields, [#, " + value + "])"
	comment = "the body's fields, by name (a map of them would pass the expression size limit)"
	if filter {
		pairs = "filter(" + pairs + ", #[1] != nil)"
		comment += ", leaving out those not given"
	}
	b.WriteString("fromPairs(" + pairs + ")\n")
	return b.String(), comment
}

// lines writes open, then an item per field on a line of its own,
// separated by commas, then close.
func lines(open string, fields []*argument, item func(*argument) string, close string) string {
	var b strings.Builder
	b.WriteString(open + "\n")
	for i, a := range fields {
		b.WriteString("  " + item(a))
		if i < len(fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(close)
	return b.String()
}

// pathTemplate writes the path with a hole per path parameter.
func (g *generator) pathTemplate(sk *skill) error {
	var b strings.Builder
	rest, rawQuery, hasQuery := strings.Cut(sk.op.path, "?")
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(escapePath(rest))
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("the path has a { without its }")
		}
		b.WriteString(escapePath(rest[:i]))
		name := rest[i+1 : i+j]
		a := sk.findWire(name, "path")
		if a == nil {
			sk.note("the path parameter %s is not declared; it is taken as a required string", name)
			a = sk.argument(name, "path", schema{typ: "string"}, true, false)
		}
		b.WriteString(escapePath(a.pathPrefix) + "{args." + a.name + "}")
		rest = rest[i+j+1:]
	}
	sk.path = b.String()
	if !strings.HasPrefix(sk.path, "/") {
		sk.path = "/" + sk.path
	}
	if hasQuery {
		sk.pathQuery(rawQuery)
	}
	// Declared path parameters the path does not use are of no use.
	sk.args = slices.DeleteFunc(sk.args, func(a *argument) bool {
		if a.in == "path" && !strings.Contains(sk.path, "{args."+a.name+"}") {
			sk.note("the path parameter %s is not in the path; it is left out", a.wire)
			return true
		}
		return false
	})
	return nil
}

// pathQuery makes the query string of a path key ("/alerts?active=true&
// lat={lat}") query parameters: a fixed value stays as it is, and a {name}
// value is the argument of that name (declared as a query or path
// parameter, or else a required string). A query string it cannot split
// is left out, with a note.
func (sk *skill) pathQuery(raw string) {
	type pair struct{ key, value, hole string }
	var pairs []pair
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		rawKey, value, hasValue := strings.Cut(part, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil || !hasValue || key == "" || strings.ContainsAny(key, "{}") {
			sk.note("the path's query string %q cannot be split into query parameters (at %q): add them to the skill's query by hand", raw, part)
			return
		}
		if hole, ok := strings.CutPrefix(value, "{"); ok && strings.HasSuffix(hole, "}") && !strings.ContainsAny(hole[:len(hole)-1], "{}") {
			pairs = append(pairs, pair{key: key, hole: hole[:len(hole)-1]})
			continue
		}
		if value, err = url.QueryUnescape(value); err != nil || strings.ContainsAny(value, "{}") {
			sk.note("the path's query string %q cannot be split into query parameters (at %q): add them to the skill's query by hand", raw, part)
			return
		}
		pairs = append(pairs, pair{key: key, value: value})
	}
	for _, p := range pairs {
		if p.hole != "" {
			a := sk.findWire(p.hole, "query")
			if a != nil && a.wire == p.key {
				continue // the query parameter declared sends it
			}
			if a == nil {
				a = sk.findWire(p.hole, "path")
			}
			if a == nil {
				sk.note("the query parameter %s is not declared; it is taken as a required string", p.hole)
				a = sk.argument(p.hole, "query", schema{typ: "string"}, true, false)
			}
			a.in = "query"
			p.value = "{args." + a.name + "}"
		}
		if hasParam(sk.query, "query", p.key) {
			sk.note("the path's query string gives %s, which a query parameter gives too: the parameter is kept", p.key)
			continue
		}
		sk.query = append(sk.query, param{p.key, p.value})
	}
}

func (sk *skill) findWire(wire, in string) *argument {
	for _, a := range sk.args {
		if a.wire == wire && a.in == in {
			return a
		}
	}
	return nil
}

// escapePath escapes what a path template's literal text may not hold.
func escapePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	// Empty segments are not allowed in a path template.
	out := b.String()
	for strings.Contains(out, "//") {
		out = strings.ReplaceAll(out, "//", "/")
	}
	return out
}

// outputModes are the media types of the success responses.
func (g *generator) outputModes(sk *skill) error {
	responses := get(sk.op.node, "responses")
	if responses == nil || responses.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(responses.Content); i += 2 {
		code := strings.ToUpper(responses.Content[i].Value)
		if !strings.HasPrefix(code, "2") {
			continue
		}
		resp, err := g.doc.deref(responses.Content[i+1])
		if err != nil {
			return fmt.Errorf("responses.%s: %w", code, err)
		}
		content := get(resp, "content")
		for j := 0; content != nil && content.Kind == yaml.MappingNode && j+1 < len(content.Content); j += 2 {
			mt, _, err := mime.ParseMediaType(content.Content[j].Value)
			if err == nil && strings.Contains(mt, "/") && !strings.Contains(mt, "*") && !slices.Contains(sk.outputModes, mt) {
				sk.outputModes = append(sk.outputModes, mt)
			}
		}
	}
	return nil
}

// inputs sets the input modes: data for the arguments, and the files'
// media types.
func (sk *skill) inputs() {
	if len(sk.args) == 0 {
		return
	}
	sk.inputModes = []string{"application/json"}
	for _, a := range sk.args {
		if a.typ != "file" {
			continue
		}
		types := a.mediaTypes
		if len(types) == 0 {
			types = []string{"application/octet-stream"}
		}
		for _, t := range types {
			if mt, _, err := mime.ParseMediaType(t); err == nil && strings.Contains(mt, "/") && !slices.Contains(sk.inputModes, mt) {
				sk.inputModes = append(sk.inputModes, mt)
			}
		}
	}
}

// example is one example request, as data, when every required argument
// has an example value.
func (sk *skill) example() {
	var b strings.Builder
	n := 0
	for _, a := range sk.args {
		if !a.hasExample {
			if a.required {
				return
			}
			continue
		}
		v, err := jsonText(a.example)
		if err != nil {
			return
		}
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", strconv.Quote(a.name), v)
		n++
	}
	if n > 0 {
		sk.examples = []string{"{" + b.String() + "}"}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
