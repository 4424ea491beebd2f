package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// apiKeyKind takes a key from a header, a query parameter or a cookie.
func init() { registerKind(&apiKeyKind) }

var apiKeyKind = kind{typ: TypeAPIKey, card: a2a.SchemeAPIKey, priority: priorityAPIKey,
	validate: validateAPIKey, build: (*builder).apiKey,
	cardFields: func(sc *Scheme, out *a2a.SecurityScheme) { out.Location, out.Name = sc.In, sc.Name }}

// validateAPIKey checks where the key is and the keys.
func validateAPIKey(s *Scheme) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains([]string{"header", "query", "cookie"}, s.In) {
		add("in: %q is not header, query or cookie", s.In)
	}
	if strings.TrimSpace(s.Name) == "" {
		add("name: required")
	}
	if len(s.Keys) == 0 {
		add("keys: at least one key is required")
	}
	for i, k := range s.Keys {
		switch {
		case k.Key == "" && k.SHA256 == "":
			add("keys[%d]: key or sha256 is required", i)
		case k.Key != "" && k.SHA256 != "":
			add("keys[%d]: key and sha256 are exclusive", i)
		case k.SHA256 != "" && !isHexDigest(k.SHA256):
			add("keys[%d].sha256: not 64 hex digits", i)
		}
		if strings.TrimSpace(k.Subject) == "" {
			add("keys[%d].subject: required", i)
		}
	}
	return errs
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// minAPIKeyLength keeps guessable keys out of the configuration.
const minAPIKeyLength = 16

// apiKey checks a key in a header, query parameter or cookie. Only the
// keys' SHA-256 digests are kept; a presented key is hashed and compared
// with every digest in constant time, so neither the time taken nor the
// memory held reveals a key.
func (b *builder) apiKey(s *scheme, sc *Scheme) error {
	s.challenge = fmt.Sprintf(`APIKey realm=%s, in=%s, name=%s`, quote(b.a.realm), quote(sc.In), quote(sc.Name))
	type entry struct {
		digest [sha256.Size]byte
		id     *Identity
	}
	entries := make([]entry, len(sc.Keys))
	granted := map[string]bool{}
	for i, k := range sc.Keys {
		var d [sha256.Size]byte
		if k.SHA256 != "" {
			if _, err := hex.Decode(d[:], []byte(k.SHA256)); err != nil {
				return fmt.Errorf("keys[%d].sha256: not hex", i)
			}
		} else {
			key, err := b.env.expand(fmt.Sprintf("keys[%d].key", i), k.Key)
			if err != nil {
				return err
			}
			if len(key) < minAPIKeyLength || len(key) > MaxAPIKeyBytes {
				return fmt.Errorf("keys[%d].key: a key is %d to %d characters long", i, minAPIKeyLength, MaxAPIKeyBytes)
			}
			d = sha256.Sum256([]byte(key))
		}
		for j := range i {
			if entries[j].digest == d {
				return fmt.Errorf("keys[%d]: the same key as keys[%d]", i, j)
			}
		}
		for _, sc := range k.Scopes {
			granted[sc] = true
		}
		entries[i] = entry{digest: d, id: single(&Credential{
			Scheme:  s.name,
			Type:    a2a.SchemeAPIKey,
			Subject: k.Subject,
			Scopes:  slices.Clone(k.Scopes),
			Claims:  map[string]any{"subject": k.Subject},
		})}
	}
	s.checkScopes = grantedBy(granted, "API key")

	in, name := sc.In, http.CanonicalHeaderKey(sc.Name)
	if in != "header" {
		name = sc.Name
	}
	s.check = func(r *http.Request) outcome {
		var vals []string
		switch in {
		case "header":
			vals = r.Header[name]
		case "query":
			vals = r.URL.Query()[name]
		case "cookie":
			for _, c := range r.CookiesNamed(name) {
				vals = append(vals, c.Value)
			}
		}
		switch {
		case len(vals) == 0:
			return outcome{}
		case len(vals) > 1:
			return refused("one API key is expected", "more than one API key presented")
		case len(vals[0]) > MaxAPIKeyBytes:
			return refused("the API key is not valid", "API key longer than the limit")
		}
		d := sha256.Sum256([]byte(vals[0]))
		match := -1
		for i := range entries {
			eq := subtle.ConstantTimeCompare(d[:], entries[i].digest[:])
			match = subtle.ConstantTimeSelect(eq, i, match)
		}
		if match < 0 {
			return refused("the API key is not valid", "unknown API key")
		}
		return accepted(entries[match].id)
	}
	return nil
}

// grantedBy refuses requirements naming scopes that no configured key or
// user is given: they could never be met.
func grantedBy(granted map[string]bool, what string) func([]string) error {
	return func(scopes []string) error {
		for _, sc := range scopes {
			if !granted[sc] {
				return fmt.Errorf("scope %q is granted to no %s", sc, what)
			}
		}
		return nil
	}
}
