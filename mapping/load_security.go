package mapping

// Loading who may use a skill (security), and which of the caller's own
// headers reach the upstream (forward_headers).

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"
)

// schemeName is a security scheme's name, as the module declares it.
var schemeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// security reads a skill's requirements: a list of alternatives (OR), each
// a mapping of scheme names to the scopes it needs (AND), or one scheme
// name alone.
//
//	security:
//	  - oauth: [orders:write]
//	  - {key: [], mtls: []}
//	  - staff
func (l *loader) security(n *yaml.Node, key string) []a2a.SecurityRequirement {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		l.errorf(n, key, "must be a list of alternatives, each a scheme name or a mapping of scheme names to scopes")
		return nil
	}
	reqs := make([]a2a.SecurityRequirement, 0, len(n.Content))
	for i, item := range n.Content {
		item = resolve(item)
		ikey := fmt.Sprintf("%s[%d]", key, i)
		req := a2a.SecurityRequirement{}
		switch item.Kind {
		case yaml.ScalarNode:
			if name, ok := l.scalar(item, ikey); ok && l.schemeName(item, ikey, name) {
				req[name] = nil
			}
		case yaml.MappingNode:
			l.entries(item, ikey, func(k, v *yaml.Node) {
				skey := join(ikey, k.Value)
				if !l.schemeName(k, skey, k.Value) {
					return
				}
				req[k.Value] = l.scopes(v, skey)
			})
			if len(item.Content) == 0 {
				l.errorf(item, ikey, "an empty alternative would admit anyone: leave security out instead")
			}
		default:
			l.errorf(item, ikey, "must be a scheme name or a mapping of scheme names to scopes, not %s", describe(item))
		}
		if len(req) > 0 {
			reqs = append(reqs, req)
		}
	}
	if l.opts.CheckSecurity != nil && len(reqs) == len(n.Content) {
		if err := l.opts.CheckSecurity(reqs); err != nil {
			l.errorf(n, key, "%v", err)
		}
	}
	return reqs
}

func (l *loader) schemeName(n *yaml.Node, key, name string) bool {
	if !schemeName.MatchString(name) {
		l.errorf(n, key, "%q is not a scheme name: 1 to 64 letters, digits, '_', '-' or '.'", name)
		return false
	}
	return true
}

// scopes reads a scheme's scopes: a list, or nothing.
func (l *loader) scopes(n *yaml.Node, key string) []string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	scopes := l.stringList(n, key)
	for i, s := range scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			l.errorf(n.Content[i], fmt.Sprintf("%s[%d]", key, i), "%q is not a scope: no spaces, quotes or backslashes", s)
		}
	}
	return scopes
}

// unforwardable are headers a skill may not forward: the HTTP client sets
// them, the body decides them, or they concern one connection only.
var unforwardable = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Content-Type",
	"Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Trailer", "Upgrade"}

// forwardHeaders reads forward_headers: the names of the caller's request
// headers the skill passes on to the upstream, canonicalized.
func (l *loader) forwardHeaders(n *yaml.Node, key string) []string {
	names := l.stringList(n, key)
	out := make([]string, 0, len(names))
	for i, name := range names {
		at, ikey := n.Content[i], fmt.Sprintf("%s[%d]", key, i)
		canon := http.CanonicalHeaderKey(name)
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			l.errorf(at, ikey, "%q is not a valid header name", name)
		case slices.Contains(unforwardable, canon):
			l.errorf(at, ikey, "%s cannot be forwarded: it belongs to one connection or one body", canon)
		case canon == idempotencyHeader:
			// The upstream dedupes by the key for everyone who uses the
			// agent's credential: a caller's key could be another's.
			l.errorf(at, ikey, "%s cannot be forwarded: a caller could send the key of another caller's request; use idempotency_key", canon)
		case slices.Contains(out, canon):
			l.errorf(at, ikey, "repeated header (header names ignore case)")
		default:
			out = append(out, canon)
		}
	}
	return out
}

// checkForwarded refuses a forwarded header that a step's request also
// sets: which of the two is sent would be a guess.
func (l *loader) checkForwarded(n *yaml.Node, forward []string, steps []step) {
	for _, name := range forward {
		for i := range steps {
			if steps[i].request.sets(name) {
				l.errorf(n, "forward_headers", "%s is also set by upstream.headers or request.headers: keep one", name)
				break
			}
		}
	}
}
