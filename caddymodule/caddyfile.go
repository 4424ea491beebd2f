package caddymodule

import (
	"math"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("a2a", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("a2a", httpcaddyfile.Before, "reverse_proxy")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	if err := handler.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	return handler, nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	a2a [<matcher>] {
//	    skills      <file>
//	    upstream    <url>
//	    url         <public url>
//	    name        <name>
//	    description <description>
//	    version     <version>
//	    provider    <organization> <url>
//	    documentation_url <url>
//	    icon_url    <url>
//	    default_input_modes  <media types...>
//	    default_output_modes <media types...>
//	    max_request_body <size>
//	    heartbeat    <duration>
//	    card_max_age <duration>
//	    tasks {
//	        max_tasks          <count>
//	        max_live_per_owner <count>
//	        max_history        <count>
//	        max_age            <duration>
//	        stream_buffer      <count>
//	    }
//	    signing {
//	        key          <file|{env.VAR}> [<kid> [<alg>]]
//	        generate_key [<kid> [<alg>]]
//	        active       <kid>
//	        jwks_path    <path>
//	        jwks_url     <url>
//	        forms        <spec|pruned|served>...
//	    }
//	    security {
//	        realm        <realm>
//	        cache_size   <count>
//	        cache_ttl    <duration>
//	        protect_card
//	        api_key <name> header|query|cookie <parameter> {
//	            key        <key|{env.VAR}> <subject> [<scope>...]
//	            key_sha256 <hex digest> <subject> [<scope>...]
//	            description <text>
//	        }
//	        basic <name> {
//	            user <username> <bcrypt hash> [<scope>...]
//	            description <text>
//	        }
//	        bearer <name> {
//	            <token options>
//	            bearer_format <format>
//	            introspection <url> { <introspection options> }
//	            allow_insecure_http
//	            description <text>
//	        }
//	        oauth2 <name> {
//	            flow authorization_code|client_credentials|device_code|implicit|password {
//	                token_url                <url>
//	                authorization_url        <url>
//	                device_authorization_url <url>
//	                refresh_url              <url>
//	                scope <scope> [<description>]
//	                pkce_required
//	            }
//	            metadata_url <url>
//	            <token options>
//	            introspection <url> { <introspection options> }
//	            allow_insecure_http
//	            description <text>
//	        }
//	        openid_connect <name> <discovery url> {
//	            <token options>
//	            allow_insecure_http
//	            description <text>
//	        }
//	        mutual_tls <name> {
//	            trusted_ca      <pem file|{env.VAR}>...
//	            trusted_proxies <ip|cidr>...
//	            cert_header     <header>
//	            subject_from    <uri|dns|email|cn|dn>...
//	            description <text>
//	        }
//	        require <scheme> [<scope>...]
//	        require {
//	            <scheme> [<scope>...]
//	        }
//	        require anonymous
//	    }
//	    extended_card {
//	        description       <text>
//	        documentation_url <url>
//	    }
//	}
//
// where <token options> are
//
//	issuer               <iss>
//	audience             <aud>...
//	algorithms           <alg>...
//	leeway               <duration>
//	jwks_url             <url>
//	public_key           <pem file|{env.VAR}>...
//	hmac_secret          <secret|{env.VAR}>
//	subject_claim        <claim>
//	refresh_interval     <duration>
//	min_refresh_interval <duration>
//	fetch_timeout        <duration>
//
// and <introspection options> are client_id <id>, client_secret
// <secret|{env.VAR}>, audience <aud>..., subject_claim <field>, cache_ttl
// <duration> and timeout <duration>.
//
// skills is the skills YAML file, relative to Caddy's working directory.
// upstream replaces the upstream URL the skills file names. url is the
// public URL of this endpoint, which the Agent Card advertises and which
// names the task store kept across reloads. skills, url, name and
// description are required; version defaults to 1.0.0.
//
// default_input_modes and default_output_modes list the media types skills
// accept and produce unless a skill says otherwise (default: text/plain and
// application/json). max_request_body caps a JSON-RPC request body (a size
// such as 4MiB or 1MB; default 4MiB). heartbeat is how often an idle SSE
// stream gets a comment (default 15s). card_max_age is how long clients may
// reuse the Agent Card before revalidating it (default 5m).
//
// The tasks block bounds the task store: how many tasks it keeps (default
// 10000), how many running or interrupted tasks one caller may have
// (default a quarter of max_tasks), how many messages one task may hold
// (default 100), how long a task is kept after its last update (default
// 1h), and how many events a stream may fall behind before it is closed
// (default 64).
// A store kept across a reload keeps the limits it was created with.
//
// The signing block signs the Agent Card (spec 1.0 §8.4: RFC 8785 JCS, a
// JWS with a detached payload in the card's signatures) and serves the
// public keys as a JWK Set at jwks_path (default /.well-known/jwks.json),
// with the card's Cache-Control max-age. key, which may repeat, adds a PEM
// key (PKCS #8, SEC 1 or PKCS #1; a PKIX public key is published without
// signing): a file relative to Caddy's working directory, or an {env.VAR}
// placeholder holding the PEM text or a file path ({$VAR} would write the
// key into the adapted JSON). kid defaults to the key's RFC 7638
// thumbprint; alg (ES256, ES384, RS256, PS256 or EdDSA) to the key type's
// (ES256 for P-256, ES384 for P-384, RS256 for RSA, EdDSA for Ed25519).
// generate_key adds a key generated at first start (ES256 unless alg says
// otherwise) and kept in Caddy's storage; its use is logged. active names
// the key that signs; it is required when more than one key can sign.
// Every key is published, so rotation is: add the new key, switch active
// to it, later remove the old key, a reload each. jwks_url is the jku put
// in the signatures (default: the scheme and host of url with jwks_path).
// forms chooses the payloads signed (default: all three): spec is spec
// 1.0 §8.4.1 over the 1.0 fields; pruned drops empty values as
// @a2a-js/sdk 1.x and the Python SDK do; served is the card as served, 0.3
// fields included, as a2a-go's a2acrypto verifies. Each distinct payload
// gets one signature.
//
// The security block declares how callers authenticate (spec 1.0 §7); the
// card's securitySchemes and security requirement are made from it, so the
// card states exactly what is checked. Each scheme has a name, which
// requirements and the skills file's security: refer to. api_key takes a
// key in a header, a query parameter or a cookie; each key (at least 16
// characters; only its SHA-256 is kept) or key_sha256 (the hex SHA-256 of
// the key) names the caller (subject) and the scopes it grants. basic
// takes users with bcrypt hashes as `caddy hash-password` prints them.
// bearer takes JWTs (checked with the token options: signature against
// public_key, jwks_url or hmac_secret, the only way to allow HS256/384/512,
// with algorithms as the allowlist; iss, aud, exp, nbf and iat with
// leeway, default 30s; audience is required with a JWKS) and, with
// introspection, opaque tokens (RFC 7662). oauth2 declares exactly one
// flow for the card, whose scopes are what requirements may ask;
// metadata_url (RFC 8414) is shown on the card and, without a key source,
// gives the JWKS. openid_connect takes the discovery URL, which gives the
// issuer and the JWKS; audience is required. mutual_tls takes the client
// certificate of the TLS connection (the site needs tls { client_auth ...
// }): trusted_ca verifies it (without it, only a certificate Caddy
// verified counts); cert_header reads it from a proxy in front, believed
// only from trusted_proxies; subject_from orders where the caller's name
// comes from (default uri dns email cn). Secrets take {env.VAR}
// placeholders, read at provision; an unset one is an error. JWKS and
// discovery URLs must be https (or loopback) unless allow_insecure_http.
//
// require is the agent-wide requirement, one alternative per line (OR):
// a scheme with the scopes it must grant, or a block of such lines (AND);
// require anonymous admits callers that present no credentials. Without
// require, any one declared scheme is enough. A request that meets no
// alternative is refused with 401 and a WWW-Authenticate challenge per
// acceptable scheme, one that lacks a scope with 403; both carry a
// JSON-RPC error (-31401, -31403). realm is the challenges' realm (default
// a2a); cache_size and cache_ttl bound the cache of verified credentials
// (default 10000 and 5m; a token is never cached past its expiry).
// protect_card makes the Agent Card ask the same; by default it is public.
// The caller's subject, scheme and scopes are set as the placeholders
// {http.auth.user.id}, {http.auth.user.scheme} and {http.auth.user.scopes}.
//
// extended_card serves the extended Agent Card (GetExtendedAgentCard) to
// authenticated callers and announces it on the public card; it needs
// security. It lists every skill, those marked extended: true in the
// skills file included (the public card leaves them out), and may replace
// the description and documentation_url. It is signed like the public
// card.
//
// Each subdirective may appear once, except key in the signing block;
// in the security block, the schemes and require repeat, as do key,
// key_sha256, user, public_key, trusted_ca and a flow's scope.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.Errf("a2a: unexpected argument '%s'; the configuration goes in a block", d.Val())
	}

	seen := make(map[string]bool)
	for d.NextBlock(0) {
		sub := d.Val()
		if seen[sub] {
			return d.Errf("a2a: %s is set more than once", sub)
		}
		seen[sub] = true

		var err error
		switch sub {
		case "skills":
			h.Skills, err = oneArg(d)
		case "upstream":
			h.Upstream, err = oneArg(d)
		case "url":
			h.URL, err = oneArg(d)
		case "name":
			h.Name, err = oneArg(d)
		case "description":
			h.Description, err = oneArg(d)
		case "version":
			h.Version, err = oneArg(d)
		case "provider":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("provider: want <organization> <url>, got %d arguments", len(args))
			}
			h.Provider = &Provider{Organization: args[0], URL: args[1]}
		case "documentation_url":
			h.DocumentationURL, err = oneArg(d)
		case "icon_url":
			h.IconURL, err = oneArg(d)
		case "default_input_modes":
			h.DefaultInputModes, err = someArgs(d)
		case "default_output_modes":
			h.DefaultOutputModes, err = someArgs(d)
		case "max_request_body":
			h.MaxRequestBody, err = sizeArg(d)
		case "heartbeat":
			h.Heartbeat, err = durationArg(d)
		case "card_max_age":
			h.CardMaxAge, err = durationArg(d)
		case "tasks":
			h.Tasks, err = parseTasks(d)
		case "signing":
			h.Signing, err = parseSigning(d)
		case "security":
			h.Security, err = parseSecurity(d)
		case "extended_card":
			h.ExtendedCard, err = parseExtendedCard(d)
		default:
			return d.Errf("a2a: unknown subdirective '%s'", sub)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseTasks reads the tasks block.
func parseTasks(d *caddyfile.Dispenser) (*TasksConfig, error) {
	if d.NextArg() {
		return nil, d.Errf("tasks: unexpected argument '%s'; the limits go in a block", d.Val())
	}
	t := new(TasksConfig)
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("tasks: %s is set more than once", sub)
		}
		seen[sub] = true

		var err error
		switch sub {
		case "max_tasks":
			t.MaxTasks, err = countArg(d)
		case "max_live_per_owner":
			t.MaxLivePerOwner, err = countArg(d)
		case "max_history":
			t.MaxHistory, err = countArg(d)
		case "max_age":
			t.MaxAge, err = durationArg(d)
		case "stream_buffer":
			t.StreamBuffer, err = countArg(d)
		default:
			return nil, d.Errf("tasks: unknown subdirective '%s'", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// oneArg reads the single argument of the current subdirective.
func oneArg(d *caddyfile.Dispenser) (string, error) {
	sub := d.Val()
	args := d.RemainingArgs()
	if len(args) != 1 {
		return "", d.Errf("%s: want exactly one argument, got %d", sub, len(args))
	}
	return args[0], nil
}

// someArgs reads the one or more arguments of the current subdirective.
func someArgs(d *caddyfile.Dispenser) ([]string, error) {
	sub := d.Val()
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.Errf("%s: want at least one argument", sub)
	}
	return args, nil
}

// sizeArg reads a positive size such as 4MiB or 1000000.
func sizeArg(d *caddyfile.Dispenser) (int64, error) {
	sub := d.Val()
	arg, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := humanize.ParseBytes(arg)
	if err != nil {
		return 0, d.Errf("%s: '%s' is not a size: %v", sub, arg, err)
	}
	if n == 0 {
		return 0, d.Errf("%s: %s is not positive", sub, arg)
	}
	if n > math.MaxInt64 {
		return 0, d.Errf("%s: %s is too large", sub, arg)
	}
	return int64(n), nil
}

// durationArg reads a positive duration such as 15s or 1h.
func durationArg(d *caddyfile.Dispenser) (caddy.Duration, error) {
	sub := d.Val()
	arg, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	dur, err := caddy.ParseDuration(arg)
	if err != nil {
		return 0, d.Errf("%s: '%s' is not a duration: %v", sub, arg, err)
	}
	if dur <= 0 {
		return 0, d.Errf("%s: %s is not positive", sub, arg)
	}
	return caddy.Duration(dur), nil
}

// countArg reads a positive integer.
func countArg(d *caddyfile.Dispenser) (int, error) {
	sub := d.Val()
	arg, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(arg)
	if err != nil {
		return 0, d.Errf("%s: '%s' is not an integer", sub, arg)
	}
	if n <= 0 {
		return 0, d.Errf("%s: %s is not positive", sub, arg)
	}
	return n, nil
}
