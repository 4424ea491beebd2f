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
	k, err := cfg.kind()
	if err != nil {
		return nil, a2a.SecurityScheme{}, err
	}
	s := &scheme{name: name, index: index, typ: k.card, priority: k.priority}
	sc := *cfg
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
	if err := k.build(b, s, &sc); err != nil {
		return nil, a2a.SecurityScheme{}, err
	}
	// What the card shows: how to call, never the secrets or keys behind it.
	card := a2a.SecurityScheme{Type: k.card, Description: sc.Description}
	if k.cardFields != nil {
		k.cardFields(&sc, &card)
	}
	return s, card, nil
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

// httpCard is what the card shows of an http scheme: basic or bearer, and
// for bearer what its tokens are, JWT when they can only be JWTs.
func httpCard(sc *Scheme, out *a2a.SecurityScheme) {
	out.Scheme = strings.ToLower(sc.HTTPScheme)
	out.BearerFormat = sc.BearerFormat
	if out.Scheme == "bearer" && out.BearerFormat == "" && sc.JWT != nil && sc.Introspection == nil {
		out.BearerFormat = "JWT"
	}
}
