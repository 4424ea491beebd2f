package mapping

// Loading upstream.oauth2: the token every request of the file carries,
// got by client credentials or by exchanging the caller's token.

import (
	"crypto"
	"errors"
	"os"
	"path/filepath"
	"slices"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"gopkg.in/yaml.v3"
)

var oauth2Keys = []string{"grant", "token_url", "client_id", "client_secret", "client_auth",
	"private_key", "private_key_file", "key_id", "signing_alg", "scopes", "audience"}

// oauth2 reads upstream.oauth2 and makes its token client; nil after a
// mistake, which it reports.
func (l *loader) oauth2(n *yaml.Node) *upstreamauth.Client {
	const key = "upstream.oauth2"
	cfg := &upstreamauth.Config{Transport: l.opts.TokenTransport}
	fromEnv := map[string]*string{"token_url": &cfg.TokenURL, "client_id": &cfg.ClientID,
		"client_secret": &cfg.ClientSecret, "audience": &cfg.Audience, "key_id": &cfg.KeyID}
	nodes := map[string]*yaml.Node{}
	ok := true
	l.fields(n, key, oauth2Keys, func(name string, v *yaml.Node) {
		fkey := key + "." + name
		nodes[name] = v
		read := true
		switch name {
		case "grant":
			cfg.Grant, read = l.scalar(v, fkey)
		case "client_auth":
			cfg.ClientAuth, read = l.scalar(v, fkey)
		case "signing_alg":
			cfg.SigningAlg, read = l.scalar(v, fkey)
		case "private_key", "private_key_file":
			if nodes["private_key"] != nil && nodes["private_key_file"] != nil {
				l.errorf(v, fkey, "give private_key or private_key_file, not both")
				read = false
				break
			}
			cfg.PrivateKey, read = l.privateKey(v, fkey, name == "private_key_file")
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
	var setting *upstreamauth.SettingError
	switch {
	case errors.As(err, &setting) && nodes[setting.Setting] != nil:
		l.errorf(nodes[setting.Setting], key+"."+setting.Setting, "%v", setting.Err)
	case err != nil:
		l.errorf(n, key, "%v", err)
	}
	return client
}

// privateKey reads the PEM private key of private_key_jwt: the value
// itself ({env.NAME}, as a Kubernetes secret arrives), or, fromFile, the
// file it names, read once now; a relative path is the skills file's
// directory's. Errors never quote the key.
func (l *loader) privateKey(n *yaml.Node, key string, fromFile bool) (crypto.Signer, bool) {
	data, ok := l.envString(n, key)
	if !ok {
		return nil, false
	}
	what := "is"
	if fromFile {
		path := data
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(l.file), path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			l.errorf(n, key, "cannot read the key: %v", err)
			return nil, false
		}
		data, what = string(raw), path+" is"
	}
	k, err := upstreamauth.ParsePrivateKey([]byte(data))
	if err != nil {
		l.errorf(n, key, "%s not a usable private key: %v", what, err)
		return nil, false
	}
	return k, true
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
