package authn

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// builder turns one Scheme of the configuration into a ready scheme.
type builder struct {
	a      *Authenticator
	env    envExpander
	client *http.Client
}

// build returns the scheme and what the card shows for it. URLs may hold
// {env.NAME} placeholders; the card shows them expanded.
func (b *builder) build(name string, index int, cfg *Scheme) (*scheme, a2a.SecurityScheme, error) {
	s := &scheme{name: name, index: index}
	sc := *cfg
	var err error
	for _, u := range []struct {
		field string
		v     *string
	}{{"openid_connect_url", &sc.OpenIDConnectURL}, {"metadata_url", &sc.MetadataURL}} {
		if *u.v == "" {
			continue
		}
		if *u.v, err = b.env.expand(u.field, *u.v); err != nil {
			return nil, a2a.SecurityScheme{}, err
		}
		if err = checkURL(*u.v, sc.AllowInsecureHTTP); err != nil {
			return nil, a2a.SecurityScheme{}, fmt.Errorf("%s: %w", u.field, err)
		}
	}
	switch sc.Type {
	case TypeAPIKey:
		s.typ, s.priority = a2a.SchemeAPIKey, priorityAPIKey
		s.challenge = fmt.Sprintf(`APIKey realm=%s, in=%s, name=%s`, quote(b.a.realm), quote(sc.In), quote(sc.Name))
		err = b.apiKey(s, &sc)
	case TypeHTTP:
		s.typ = a2a.SchemeHTTPAuth
		if strings.EqualFold(sc.HTTPScheme, "basic") {
			s.priority = priorityBasic
			s.challenge = fmt.Sprintf(`Basic realm=%s, charset="UTF-8"`, quote(b.a.realm))
			err = b.basic(s, &sc)
		} else {
			err = b.token(s, &sc)
		}
	case TypeOAuth2:
		s.typ = a2a.SchemeOAuth2
		err = b.token(s, &sc)
	case TypeOpenIDConnect:
		s.typ = a2a.SchemeOpenIDConnect
		err = b.token(s, &sc)
	case TypeMutualTLS:
		s.typ, s.priority = a2a.SchemeMutualTLS, priorityMTLS
		// Not a registered scheme: the handshake is the real challenge, but a
		// 401 must name at least one (RFC 9110 §11.6.1).
		s.challenge = "MutualTLS realm=" + quote(b.a.realm)
		err = b.mtls(s, &sc)
	}
	if err != nil {
		return nil, a2a.SecurityScheme{}, err
	}
	return s, cardScheme(&sc, s.typ), nil
}

// envExpander resolves {env.NAME} placeholders; an unset variable is an
// error, so a missing secret never becomes an empty one.
type envExpander func(string) (string, bool)

var envRef = regexp.MustCompile(`\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`)

func (e envExpander) expand(field, s string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := e(name)
		if !ok || v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: environment variable %s is not set", field, strings.Join(missing, ", "))
	}
	return out, nil
}

// pemSource reads PEM text given inline or as a file path.
func (e envExpander) pemSource(field, src string) ([]byte, error) {
	src, err := e.expand(field, src)
	if err != nil {
		return nil, err
	}
	if strings.Contains(src, "-----BEGIN") {
		return []byte(src), nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return b, nil
}

// cardScheme is what the card shows for a scheme: how to call, never the
// secrets or keys behind it.
func cardScheme(sc *Scheme, typ a2a.SecuritySchemeType) a2a.SecurityScheme {
	out := a2a.SecurityScheme{Type: typ, Description: sc.Description}
	switch sc.Type {
	case TypeAPIKey:
		out.Location, out.Name = sc.In, sc.Name
	case TypeHTTP:
		out.Scheme = strings.ToLower(sc.HTTPScheme)
		out.BearerFormat = sc.BearerFormat
		if out.Scheme == "bearer" && out.BearerFormat == "" && sc.JWT != nil && sc.Introspection == nil {
			out.BearerFormat = "JWT"
		}
	case TypeOAuth2:
		out.OAuth2MetadataURL = sc.MetadataURL
		if f := sc.Flows; f != nil {
			out.Flows = f.Clone()
		}
	case TypeOpenIDConnect:
		out.OpenIDConnectURL = sc.OpenIDConnectURL
	}
	return out
}
