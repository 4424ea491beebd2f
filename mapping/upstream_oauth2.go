package mapping

// Loading upstream.oauth2: the token every request of the file carries,
// got by client credentials or by exchanging the caller's token.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/upstreamauth"
	"gopkg.in/yaml.v3"
)

var oauth2Keys = []string{"grant", "token_url", "client_id", "client_secret", "client_auth",
	"private_key", "private_key_file", "certificate", "certificate_file", "key_id", "signing_alg", "scopes", "audience"}

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
		case "private_key", "private_key_file", "certificate", "certificate_file":
			read = l.pemSetting(cfg, nodes, name, v, fkey)
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
	if errors.As(err, &setting) {
		// The key and the certificate may have been given as files.
		for _, name := range []string{setting.Setting, setting.Setting + "_file"} {
			if nodes[name] != nil {
				l.errorf(nodes[name], key+"."+name, "%v", setting.Err)
				return nil
			}
		}
	}
	if err != nil {
		l.errorf(n, key, "%v", err)
	}
	return client
}

// pemSetting reads the private key or the certificate of private_key_jwt
// (setting name): the PEM text itself ({env.NAME}, as a Kubernetes secret
// arrives), or, for name_file, the file it names, read once now; a
// relative path is the skills file's directory's. nodes holds the
// settings read so far. Errors never quote the PEM text.
func (l *loader) pemSetting(cfg *upstreamauth.Config, nodes map[string]*yaml.Node, name string, n *yaml.Node, key string) bool {
	base, fromFile := strings.CutSuffix(name, "_file")
	if nodes[base] != nil && nodes[base+"_file"] != nil {
		l.errorf(n, key, "give %s or %s_file, not both", base, base)
		return false
	}
	data, ok := l.envString(n, key)
	if !ok {
		return false
	}
	what := "is"
	if fromFile {
		path := data
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(l.file), path)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			l.errorf(n, key, "cannot read the file: %v", err)
			return false
		}
		data, what = string(raw), path+" is"
	}
	var err error
	if base == "private_key" {
		cfg.PrivateKey, err = upstreamauth.ParsePrivateKey([]byte(data))
	} else {
		cfg.Certificate, err = upstreamauth.ParseCertificate([]byte(data))
	}
	if err != nil {
		l.errorf(n, key, "%s not a usable %s: %v", what, strings.ReplaceAll(base, "_", " "), err)
		return false
	}
	return true
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
