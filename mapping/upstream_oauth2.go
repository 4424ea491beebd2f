package mapping

// Loading upstream.oauth2: the token every request of the file carries,
// got by client credentials or by exchanging the caller's token.

import (
	"slices"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"gopkg.in/yaml.v3"
)

var oauth2Keys = []string{"grant", "token_url", "client_id", "client_secret", "client_auth", "scopes", "audience"}

// oauth2 reads upstream.oauth2 and makes its token client; nil after a
// mistake, which it reports.
func (l *loader) oauth2(n *yaml.Node) *upstreamauth.Client {
	const key = "upstream.oauth2"
	cfg := &upstreamauth.Config{Transport: l.opts.TokenTransport}
	fromEnv := map[string]*string{"token_url": &cfg.TokenURL, "client_id": &cfg.ClientID,
		"client_secret": &cfg.ClientSecret, "audience": &cfg.Audience}
	ok := true
	l.fields(n, key, oauth2Keys, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		read := true
		switch name {
		case "grant":
			cfg.Grant, read = l.scalar(v, fkey)
		case "client_auth":
			cfg.ClientAuth, read = l.scalar(v, fkey)
		case "scopes":
			cfg.Scopes = l.scopes(v, fkey)
		default:
			*fromEnv[name], read = l.envString(v, fkey)
		}
		ok = ok && read
	})
	if n.Kind != yaml.MappingNode || !ok {
		return nil
	}
	client, err := upstreamauth.New(*cfg)
	if err != nil {
		l.errorf(n, key, "%v", err)
	}
	return client
}

// envString reads a value that may hold {env.NAME} placeholders but no
// expressions.
func (l *loader) envString(n *yaml.Node, key string) (string, bool) {
	t := l.template(n, key, tplOpts{env: true})
	if t == nil {
		return "", false
	}
	s, ok := t.constant()
	switch {
	case ok:
	case t.null:
		l.errorf(n, key, "an optional {env.NAME?} placeholder is unset, which leaves no value")
	default:
		l.errorf(n, key, "may hold {env.NAME} placeholders but no expressions")
	}
	return s, ok
}

// checkOAuth2Headers refuses an Authorization header that a skill sets or
// forwards where upstream.oauth2 sets it: which one is sent would be a
// guess.
func (l *loader) checkOAuth2Headers(forwardNode, callsNode *yaml.Node, forward []string, steps []step) {
	if slices.Contains(forward, "Authorization") {
		l.errorf(forwardNode, "forward_headers", "Authorization is set by upstream.oauth2: keep one")
	}
	for i := range steps {
		if steps[i].request.sets("Authorization") {
			l.errorf(callsNode, "request.headers.Authorization", "is set by upstream.oauth2: keep one")
			return
		}
	}
}
