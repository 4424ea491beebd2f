package authn

import (
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// oauth2Kind checks the tokens of an OAuth 2.0 authorization server; the
// card shows its one flow, whose scopes are those requirements may ask for.
func init() { registerKind(&oauth2Kind) }

var oauth2Kind = kind{typ: TypeOAuth2, card: a2a.SchemeOAuth2, priority: priorityToken, tokens: true,
	validate: validateOAuth2, build: (*builder).token,
	cardFields: func(sc *Scheme, out *a2a.SecurityScheme) {
		out.OAuth2MetadataURL = sc.MetadataURL
		if sc.Flows != nil {
			out.Flows = sc.Flows.Clone()
		}
	}}

// validateOAuth2 checks the flow, the metadata URL, and that tokens have a
// way to be checked.
func validateOAuth2(s *Scheme) []error {
	errs := validateFlows(s.Flows)
	if s.MetadataURL != "" {
		if err := checkURL(s.MetadataURL, s.AllowInsecureHTTP); err != nil {
			errs = append(errs, fmt.Errorf("metadata_url: %v", err))
		}
	}
	if s.JWT == nil && s.Introspection == nil {
		errs = append(errs, errors.New("an oauth2 scheme needs jwt or introspection"))
	}
	if s.JWT != nil && !s.JWT.hasKeySource() && s.MetadataURL == "" {
		errs = append(errs, errors.New("jwt: no key source: set jwks_url, public_keys, hmac_secret or metadata_url"))
	}
	return errs
}

func validateFlows(f *Flows) []error {
	if f == nil {
		return []error{errors.New("flows: exactly one flow is required")}
	}
	if n := f.Len(); n != 1 {
		return []error{fmt.Errorf("flows: exactly one flow is required, got %d", n)}
	}
	var errs []error
	for t, flow := range f.All() {
		for _, u := range t.URLs(flow) {
			if u.URL == "" && !u.Required {
				continue
			}
			if err := checkURL(u.URL, true); err != nil {
				errs = append(errs, fmt.Errorf("flows.%s.%s: %w", t.ProtoName(), u.ProtoName, err))
			}
		}
	}
	return errs
}
