package mapping

// Loading a request section: method, path, query, headers and body, from
// the upstream section's defaults.

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"
)

// upstreamConfig is the upstream section: the shared upstream and the
// defaults every skill starts from.
type upstreamConfig struct {
	up       *upstream
	headers  []headerDef
	needs    usage // what the header expressions read
	timeout  time.Duration
	maxBytes int64
	maxFile  int64
	maxIdle  int
	tokens   *upstreamauth.Client // upstream.oauth2's, or nil
}

// headerDef is a header as configured, before a skill's own headers
// override the upstream ones.
type headerDef struct {
	name       string
	tpl        *template
	credential bool
}

// forbiddenHeaders are set by the HTTP client itself.
var forbiddenHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}

func (l *loader) headers(n *yaml.Node, key string, credential bool) []headerDef {
	var out []headerDef
	seen := map[string]bool{}
	l.entries(n, key, func(k, v *yaml.Node) {
		hkey := join(key, k.Value)
		if !httpguts.ValidHeaderFieldName(k.Value) {
			l.errorf(k, hkey, "is not a valid header name")
			return
		}
		name := http.CanonicalHeaderKey(k.Value)
		if slices.Contains(forbiddenHeaders, name) {
			l.errorf(k, hkey, "is set by the HTTP client and cannot be configured")
			return
		}
		if seen[name] {
			l.errorf(k, hkey, "repeated header (header names ignore case)")
			return
		}
		seen[name] = true
		if t := l.template(v, hkey, tplOpts{env: true, header: true}); t != nil {
			out = append(out, headerDef{name: name, tpl: t, credential: credential})
		}
	})
	return out
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// safeToRepeat reports whether sending r twice does no harm: its method
// is idempotent, or the skill says so.
func (r *request) safeToRepeat() bool { return r.repeatable || slices.Contains(idempotent, r.method) }

// mayResend reports whether r may be sent twice: it is safe to repeat, or
// it sends an idempotency key. A retry needs it, and so does sending a
// request again after a 401, with another token (upstream.oauth2).
func (r *request) mayResend() bool { return r.safeToRepeat() || r.idempotencyKey != nil }

// idempotent methods may be retried: sending them twice does no harm
// (RFC 9110 §9.2.2). Others only with an idempotency key, or when the skill
// says so.
var idempotent = []string{"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}

var requestKeys = []string{"method", "path", "query", "headers", "body", "body_format", "retry", "poll",
	"idempotency_key", "idempotent"}

// request reads a request section; key is where it is ("request", or
// "steps[1].request").
func (l *loader) request(n *yaml.Node, key string, up upstreamConfig) request {
	r := request{method: http.MethodGet}
	var pathNode, bodyNode, retryNode, repeatableNode *yaml.Node
	keyed, repeatable := false, false
	var headers []headerDef
	l.fields(n, key, requestKeys, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		switch name {
		case "method":
			if m, ok := l.scalar(v, fkey); ok {
				r.method = strings.ToUpper(m)
				if !slices.Contains(methods, r.method) {
					l.errorf(v, fkey, "must be one of %s, not %q", strings.Join(methods, ", "), m)
				}
			}
		case "path":
			pathNode = v
		case "query":
			r.query = l.query(v, fkey)
		case "headers":
			headers = l.headers(v, fkey, false)
		case "body":
			bodyNode = v
			r.body = l.expression(v, fkey, phaseRequest, false)
		case "body_format":
			switch f, _ := l.scalar(v, fkey); f {
			case "json", "":
			case "form":
				r.format = formatForm
			case "multipart":
				r.format = formatMultipart
			default:
				l.errorf(v, fkey, "must be json, form or multipart, not %q", f)
			}
		case "retry":
			retryNode = v
		case "poll":
			r.poll = l.poll(v, fkey)
		case "idempotency_key":
			r.idempotencyKey, keyed = l.idempotencyKey(v, fkey)
		case "idempotent":
			repeatableNode, repeatable = v, l.boolean(v, fkey)
			r.repeatable = repeatable
		}
	})
	if n.Kind != yaml.MappingNode {
		return r
	}
	if pathNode == nil {
		l.errorf(n, key+".path", "is required")
	} else {
		r.path = l.path(pathNode, key+".path", up.up)
	}
	if repeatable && slices.Contains(idempotent, r.method) {
		l.errorf(repeatableNode, key+".idempotent", "is for POST and PATCH: a %s is idempotent already", r.method)
	}
	if retryNode != nil {
		r.retry = l.retry(retryNode, key+".retry")
		if r.retry != nil && !r.mayResend() && !keyed { // keyed: a key with a mistake, reported already
			l.errorf(retryNode, key+".retry", "a %s sent twice may be applied twice: it is sent again only with an idempotency_key "+
				"the service honours, or with idempotent: true when that does no harm (%s are idempotent)",
				r.method, strings.Join(idempotent, ", "))
		}
	}
	if r.poll != nil && r.poll.retry == nil {
		r.poll.retry = cmp.Or(r.retry, defaultPollRetry)
	}
	if r.format == formatForm {
		r.formFields = l.formFields()
	}
	r.allConstQuery = true
	var pre []string
	for _, q := range r.query {
		name, _ := url.QueryUnescape(q.name) // as written: QueryEscape's inverse
		r.queryNames = append(r.queryNames, name)
		r.querySize += len(q.pre) + len(q.name) + 16
		if q.tpl != nil {
			r.allConstQuery = false
		} else if q.pre != "" {
			pre = append(pre, q.pre)
		}
	}
	if r.allConstQuery {
		r.constQuery = strings.Join(pre, "&")
	}
	if r.format == formatMultipart && slices.ContainsFunc(headers, func(h headerDef) bool { return h.name == "Content-Type" }) {
		l.errorf(n, key+".headers.Content-Type", "is set by body_format multipart, with its boundary")
	}
	if keyed && slices.ContainsFunc(headers, func(h headerDef) bool { return h.name == idempotencyHeader }) {
		l.errorf(n, key+".headers."+idempotencyHeader, "is set by idempotency_key: keep one")
	}
	r.setHeaders(up.headers, headers, bodyNode != nil)
	return r
}

// idempotencyKey reads idempotency_key: true for the default key, false for
// none, or a template for a key of the skill's own. keyed says a key is
// asked for (even one with a mistake, reported here).
func (l *loader) idempotencyKey(n *yaml.Node, key string) (k *idempotencyKey, keyed bool) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if l.boolean(n, key) {
			return &idempotencyKey{}, true
		}
		return nil, false
	}
	t := l.template(n, key, tplOpts{header: true})
	if t == nil {
		return nil, true
	}
	if _, constant := t.constant(); constant {
		l.errorf(n, key, "would be the same for every request: write true for the agent's own key, or build it from the task, e.g. \"{task.id}-{message.id}\"")
		return nil, true
	}
	return &idempotencyKey{value: t}, true
}

// sets reports whether the request sends the header: constant or not.
func (r *request) sets(name string) bool {
	_, set := r.header[name]
	return set || slices.ContainsFunc(r.dynamic, func(h headerParam) bool { return h.name == name })
}

// setHeaders sorts the upstream's and the skill's headers (the skill's
// winning) into constant and per-request ones.
func (r *request) setHeaders(upstream, own []headerDef, body bool) {
	r.header = http.Header{}
	all := make([]headerDef, 0, len(upstream)+len(own))
	for _, h := range upstream {
		replaced := h.name == idempotencyHeader && r.idempotencyKey != nil
		if !replaced && !slices.ContainsFunc(own, func(o headerDef) bool { return o.name == h.name }) {
			all = append(all, h)
		}
	}
	for _, h := range own {
		// A skill's replacement for a credential is a credential too.
		h.credential = h.credential || slices.ContainsFunc(upstream, func(u headerDef) bool { return u.name == h.name })
		all = append(all, h)
	}
	hasType := false
	for _, h := range all {
		hasType = hasType || h.name == "Content-Type"
		if h.credential {
			r.credentials = append(r.credentials, h.name)
		}
		switch v, ok := h.tpl.constant(); {
		case ok:
			r.header[h.name] = []string{v}
		case h.tpl.null: // an unset optional placeholder: the header is left out
		default:
			r.dynamic = append(r.dynamic, headerParam{name: h.name, tpl: h.tpl, credential: h.credential})
		}
	}
	r.headerWithBody = r.header
	if body && !hasType {
		r.headerWithBody = r.header.Clone()
		switch r.format {
		case formatJSON:
			r.headerWithBody["Content-Type"] = []string{"application/json"}
		case formatForm:
			r.headerWithBody["Content-Type"] = []string{"application/x-www-form-urlencoded"}
		}
	}
}

func (l *loader) query(n *yaml.Node, key string) []queryParam {
	var out []queryParam
	l.entries(n, key, func(k, v *yaml.Node) {
		if k.Value == "" {
			l.errorf(k, key, "a query parameter needs a name")
			return
		}
		t := l.template(v, join(key, k.Value), tplOpts{env: true})
		if t == nil {
			return
		}
		q := queryParam{name: url.QueryEscape(k.Value)}
		if s, ok := t.constant(); ok {
			q.pre = q.name + "=" + url.QueryEscape(s)
		} else if !t.null {
			q.tpl, q.encoding = t, l.queryEncoding(t)
		}
		out = append(out, q)
	})
	return out
}

// path compiles the path template. Literal text must be a valid escaped
// path with no query, fragment, empty or dot segment.
func (l *loader) path(n *yaml.Node, key string, up *upstream) pathTemplate {
	src, ok := l.scalar(n, key)
	if !ok {
		return pathTemplate{}
	}
	pieces, off, err := splitTemplate(src)
	if err != nil {
		l.errorAt(exprLine(n, 1), key, fmt.Sprintf("%v (at byte %d)", err, off))
		return pathTemplate{}
	}
	if len(pieces) == 0 || pieces[0].hole || !strings.HasPrefix(pieces[0].text, "/") {
		l.errorf(n, key, "must start with /")
		return pathTemplate{}
	}
	var p pathTemplate
	var shape strings.Builder // the path with each hole as "x", to check segments
	if up != nil {
		p.parts = append(p.parts, pathPart{raw: up.baseRawPath, decoded: up.basePath})
	}
	for _, pc := range pieces {
		if !pc.hole {
			if msg := checkPathLiteral(pc.text); msg != "" {
				l.errorf(n, key, "%s", msg)
				return pathTemplate{}
			}
			dec, _ := url.PathUnescape(pc.text) // checkPathLiteral validated the escapes
			if k := len(p.parts); k > 0 && p.parts[k-1].prog == nil {
				p.parts[k-1].raw += pc.text
				p.parts[k-1].decoded += dec
			} else {
				p.parts = append(p.parts, pathPart{raw: pc.text, decoded: dec})
			}
			shape.WriteString(dec)
			p.size += len(pc.text)
			continue
		}
		if name, _, isEnv := envRef(pc.text); isEnv {
			l.errorf(n, key, "{env.%s}: environment placeholders are allowed only in upstream.url and in header and query values", name)
			return pathTemplate{}
		}
		prog, err := l.c.compile(pc.text, phaseRequest, false)
		if err != nil {
			l.exprError(n, key, 1+strings.Count(src[:pc.offset], "\n"), err)
			return pathTemplate{}
		}
		p.parts = append(p.parts, pathPart{prog: prog, src: strings.TrimSpace(pc.text)})
		p.holes++
		shape.WriteString("x")
	}
	segs := strings.Split(shape.String(), "/")[1:]
	for i, seg := range segs {
		switch {
		case seg == "." || seg == "..":
			l.errorf(n, key, "may not have a %q segment", seg)
			return pathTemplate{}
		case seg == "" && i < len(segs)-1:
			l.errorf(n, key, "may not have an empty segment (//)")
			return pathTemplate{}
		}
	}
	if up != nil {
		p.size += len(up.baseRawPath)
	}
	return p
}

// checkPathLiteral returns what is wrong with a path template's literal
// text, or "".
func checkPathLiteral(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '?' || c == '#':
			return fmt.Sprintf("may not hold %q: put query parameters under request.query", c)
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "has a % that does not start an escape such as %20"
			}
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		default:
			return fmt.Sprintf("holds %q, which must be escaped in a path (as %%%02X)", c, c)
		}
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
