package caddymodule

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

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
//	    read_body_timeout <duration>
//	    write_timeout     <duration>
//	    card_max_age <duration>
//	    card_format  union|strict
//	    card_bare_scopes
//	    drain_timeout <duration>
//	    rest         <path> [<url>]
//	    grpc         [<address>] {
//	        listen     <host:port>
//	        tls        [<cert file> <key file>]
//	        keepalive_time     <duration>
//	        keepalive_timeout  <duration>
//	        keepalive_min_time <duration>
//	        max_concurrent_streams <count>
//	        reflection
//	    }
//	    mcp          [<path> [<url>]] {
//	        session_timeout <duration>
//	        max_sessions    <count>
//	        max_sessions_per_caller <count>
//	        any_host_on_loopback
//	    }
//	    tasks {
//	        max_tasks          <count>
//	        max_live_per_owner <count>
//	        max_live_anonymous <count>
//	        max_live_per_client <count>
//	        max_history        <count>
//	        max_age            <duration>
//	        resend_window      <duration>
//	        max_resend_keys    <count>
//	        max_input_wait     <duration>
//	        max_bytes          <size>
//	        max_live_bytes_per_owner <size>
//	        max_live_bytes_anonymous <size>
//	        max_live_bytes_per_client <size>
//	        max_task_bytes     <size>
//	        stream_buffer      <count>
//	        store <module> [{ … }]
//	        redis {
//	            address     <host:port...>
//	            master_name <name>
//	            username    <name|{env.VAR}>
//	            password    <password|{env.VAR}>
//	            db          <number>
//	            tls         [<server name>]
//	            tls_ca      <pem file>
//	            key_prefix  <prefix>
//	            timeout     <duration>
//	        }
//	    }
//	    signing {
//	        key          <file|{env.VAR}> [<kid> [<alg>]]
//	        generate_key [<kid> [<alg>]]
//	        active       <kid>
//	        jwks_path    <path>
//	        jwks_url     <url>
//	        forms        <spec|pruned|served...>
//	    }
//	    push {
//	        key              <file|{env.VAR}> [<kid> [<alg>]]
//	        allow_insecure
//	        allow_private
//	        allowed_networks <cidr...>
//	        allowed_origins  <origin...>
//	        timeout          <duration>
//	        max_attempts     <count>
//	        initial_backoff  <duration>
//	        max_backoff      <duration>
//	        queue_length     <count>
//	        queue_bytes      <size>
//	        max_receivers    <count>
//	        max_bytes        <size>
//	        max_configs_per_task <count>
//	    }
//	    security {
//	        realm        <realm>
//	        cache_size   <count>
//	        cache_ttl    <duration>
//	        protect_card
//	        api_key <name> header|query|cookie <parameter> {
//	            key        <key|{env.VAR}> <subject> [<scopes...>]
//	            key_sha256 <hex digest> <subject> [<scopes...>]
//	            description <text>
//	        }
//	        basic <name> {
//	            user <username> <bcrypt hash> [<scopes...>]
//	            description <text>
//	        }
//	        bearer <name> {
//	            <token options>
//	            bearer_format <format>
//	            introspection <url> {
//	                client_id     <id>
//	                client_secret <secret|{env.VAR}>
//	                audience      <audiences...>
//	                subject_claim <field>
//	                cache_ttl     <duration>
//	                timeout       <duration>
//	            }
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
//	            introspection <url> { ... }
//	            allow_insecure_http
//	            description <text>
//	        }
//	        openid_connect <name> <discovery url> {
//	            <token options>
//	            introspection <url> { ... }
//	            allow_insecure_http
//	            description <text>
//	        }
//	        mutual_tls <name> {
//	            trusted_ca      <pem files|{env.VAR}...>
//	            trusted_proxies <ips|cidrs...>
//	            cert_header     <header>
//	            subject_from    <uri|dns|email|cn|dn...>
//	            description <text>
//	        }
//	        require <scheme> [<scopes...>]
//	        require {
//	            <scheme> [<scopes...>]
//	        }
//	        require anonymous
//	    }
//	    extended_card {
//	        description       <text>
//	        documentation_url <url>
//	    }
//	}
//
// where the <token options> are
//
//	issuer               <iss>
//	audience             <audiences...>
//	algorithms           <algs...>
//	leeway               <duration>
//	jwks_url             <url>
//	public_key           <pem files|{env.VAR}...>
//	hmac_secret          <secret|{env.VAR}>
//	subject_claim        <claim>
//	refresh_interval     <duration>
//	min_refresh_interval <duration>
//	fetch_timeout        <duration>
//
// Each subdirective sets the JSON field of the same name, or the one whose
// comment names it where the two differ, and that field documents it: see
// Handler, TasksConfig (tasks.Config), RedisConfig, SigningConfig, SecurityConfig, ExtendedCardConfig,
// PushConfig (push.Config), RESTConfig, GRPCConfig, GRPCTLSConfig and
// MCPConfig. A subdirective may appear once,
// except key in signing, and in security the schemes, require, key,
// key_sha256, user, public_key, trusted_ca and a flow's scope.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if err := noArgs(d, "a2a"); err != nil {
		return err
	}
	settings := []setting{
		{"skills", setString(&h.Skills)},
		{"upstream", setString(&h.Upstream)},
		{"url", setString(&h.URL)},
		{"name", setString(&h.Name)},
		{"description", setString(&h.Description)},
		{"version", setString(&h.Version)},
		{"provider", func(d *caddyfile.Dispenser, at string) error {
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("%s: want <organization> <url>, got %d arguments", at, len(args))
			}
			h.Provider = &Provider{Organization: args[0], URL: args[1]}
			return nil
		}},
		{"documentation_url", setString(&h.DocumentationURL)},
		{"icon_url", setString(&h.IconURL)},
		{"default_input_modes", addStrings(&h.DefaultInputModes)},
		{"default_output_modes", addStrings(&h.DefaultOutputModes)},
		{"max_request_body", setSize(&h.MaxRequestBody)},
		{"heartbeat", setDuration(&h.Heartbeat)},
		{"read_body_timeout", setDuration(&h.ReadBodyTimeout)},
		{"write_timeout", setDuration(&h.WriteTimeout)},
		{"card_max_age", setDuration(&h.CardMaxAge)},
		{"card_format", setString(&h.CardFormat)},
		{"card_bare_scopes", setFlag(&h.CardBareScopes)},
		{"drain_timeout", setDuration(&h.DrainTimeout)},
	}
	for _, f := range features {
		settings = append(settings, f.setting(h))
	}
	return parseSettings(d, "", nil, settings)
}

// The helpers below read the Caddyfile the same way for every block. where
// is the path of a block inside the a2a directive ("security", "security:
// bearer jwt"; "" is the directive's own block) and at that of one of its
// subdirectives, so that every error says where it is.

// unknownSubdirective, returned by a parseBlock callback for a name it does
// not take, makes the error name the block, the subdirective and the valid
// ones, as the skills file's errors name the known keys.
func unknownSubdirective(valid []string) error { return &unknownSubdirectiveError{valid} }

type unknownSubdirectiveError struct{ valid []string }

func (e *unknownSubdirectiveError) Error() string {
	return "unknown subdirective (valid: " + strings.Join(e.valid, ", ") + ")"
}

// parseBlock calls parse for each subdirective of the block that follows
// the current line. A subdirective may appear once unless repeatable
// names it.
func parseBlock(d *caddyfile.Dispenser, where string, repeatable []string, parse func(sub, at string) error) error {
	seen := make(map[string]bool)
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		block, at := where, where+": "+sub
		if where == "" {
			block, at = "a2a", sub
		}
		if seen[sub] && !slices.Contains(repeatable, sub) {
			return d.Errf("%s: %s is set more than once", block, sub)
		}
		seen[sub] = true
		if err := parse(sub, at); err != nil {
			if u := (*unknownSubdirectiveError)(nil); errors.As(err, &u) {
				return d.Errf("%s: unknown subdirective '%s' (valid: %s)", block, sub, strings.Join(u.valid, ", "))
			}
			return err
		}
	}
	return nil
}

// noArgs refuses arguments on the line that opens a block.
func noArgs(d *caddyfile.Dispenser, where string) error {
	if d.NextArg() {
		return d.Errf("%s: unexpected argument '%s'; the settings go in a block", where, d.Val())
	}
	return nil
}

// flagArg reads a subdirective that takes no argument.
func flagArg(d *caddyfile.Dispenser, at string) (bool, error) {
	if d.NextArg() {
		return false, d.Errf("%s takes no argument", at)
	}
	return true, nil
}

// oneArg reads the single argument of the current subdirective.
func oneArg(d *caddyfile.Dispenser, at string) (string, error) {
	args := d.RemainingArgs()
	if len(args) != 1 {
		return "", d.Errf("%s: want exactly one argument, got %d", at, len(args))
	}
	return args[0], nil
}

// someArgs reads the one or more arguments of the current subdirective.
func someArgs(d *caddyfile.Dispenser, at string) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.Errf("%s: want at least one argument", at)
	}
	return args, nil
}

// sizeArg reads a positive size such as 4MiB or 1000000.
func sizeArg(d *caddyfile.Dispenser, at string) (int64, error) {
	arg, err := oneArg(d, at)
	if err != nil {
		return 0, err
	}
	n, err := humanize.ParseBytes(arg)
	if err != nil {
		return 0, d.Errf("%s: '%s' is not a size: %v", at, arg, err)
	}
	if n == 0 {
		return 0, d.Errf("%s: %s is not positive", at, arg)
	}
	if n > math.MaxInt64 {
		return 0, d.Errf("%s: %s is too large", at, arg)
	}
	return int64(n), nil
}

// durationArg reads a positive duration such as 15s, 1h or 1d.
func durationArg(d *caddyfile.Dispenser, at string) (caddy.Duration, error) {
	dur, arg, err := someDurationArg(d, at)
	if err == nil && dur <= 0 {
		return 0, d.Errf("%s: %s is not positive", at, arg)
	}
	return dur, err
}

// windowArg reads a duration that may be 0, which turns off what it
// bounds.
func windowArg(d *caddyfile.Dispenser, at string) (*caddy.Duration, error) {
	dur, arg, err := someDurationArg(d, at)
	if err != nil {
		return nil, err
	}
	if dur < 0 {
		return nil, d.Errf("%s: %s is negative", at, arg)
	}
	return &dur, nil
}

// someDurationArg reads a duration, and the argument it was read from.
func someDurationArg(d *caddyfile.Dispenser, at string) (caddy.Duration, string, error) {
	arg, err := oneArg(d, at)
	if err != nil {
		return 0, arg, err
	}
	dur, err := caddy.ParseDuration(arg)
	if err != nil {
		return 0, arg, d.Errf("%s: '%s' is not a duration: %v", at, arg, err)
	}
	return caddy.Duration(dur), arg, nil
}

// intArg reads an integer.
func intArg(d *caddyfile.Dispenser, at string) (int, error) {
	arg, err := oneArg(d, at)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(arg)
	if err != nil {
		return 0, d.Errf("%s: '%s' is not an integer", at, arg)
	}
	return n, nil
}

// countArg reads a positive integer.
func countArg(d *caddyfile.Dispenser, at string) (int, error) {
	n, err := intArg(d, at)
	if err == nil && n <= 0 {
		return 0, d.Errf("%s: %d is not positive", at, n)
	}
	return n, err
}
