package authn

import (
	"errors"
	"fmt"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// openIDConnectKind checks ID tokens and access tokens (JWTs) of an OpenID
// Connect provider, whose discovery document gives the issuer and the
// keys.
func init() { registerKind(&openIDConnectKind) }

var openIDConnectKind = kind{typ: TypeOpenIDConnect, card: a2a.SchemeOpenIDConnect, priority: priorityToken, tokens: true,
	validate: func(s *Scheme) []error {
		var errs []error
		if err := checkURL(s.OpenIDConnectURL, s.AllowInsecureHTTP); err != nil {
			errs = append(errs, fmt.Errorf("openid_connect_url: %v", err))
		}
		if s.JWT == nil || len(s.JWT.Audiences) == 0 {
			errs = append(errs, errors.New("jwt.audiences: required for openIdConnect"))
		}
		return errs
	},
	build:      (*builder).token,
	cardFields: func(sc *Scheme, out *a2a.SecurityScheme) { out.OpenIDConnectURL = sc.OpenIDConnectURL }}
