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
// Handler, TasksConfig, SigningConfig, SecurityConfig, ExtendedCardConfig,
// PushConfig, RESTConfig, GRPCConfig and GRPCTLSConfig. A subdirective may appear once,
// except key in signing, and in security the schemes, require, key,
// key_sha256, user, public_key, trusted_ca and a flow's scope.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if err := noArgs(d, "a2a"); err != nil {
		return err
	}
	return parseBlock(d, "", nil, func(sub, at string) error {
		var err error
		switch sub {
		case "skills":
			h.Skills, err = oneArg(d, at)
		case "upstream":
			h.Upstream, err = oneArg(d, at)
		case "url":
			h.URL, err = oneArg(d, at)
		case "name":
			h.Name, err = oneArg(d, at)
		case "description":
			h.Description, err = oneArg(d, at)
		case "version":
			h.Version, err = oneArg(d, at)
		case "provider":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Errf("%s: want <organization> <url>, got %d arguments", at, len(args))
			}
			h.Provider = &Provider{Organization: args[0], URL: args[1]}
		case "documentation_url":
			h.DocumentationURL, err = oneArg(d, at)
		case "icon_url":
			h.IconURL, err = oneArg(d, at)
		case "default_input_modes":
			h.DefaultInputModes, err = someArgs(d, at)
		case "default_output_modes":
			h.DefaultOutputModes, err = someArgs(d, at)
		case "max_request_body":
			h.MaxRequestBody, err = sizeArg(d, at)
		case "heartbeat":
			h.Heartbeat, err = durationArg(d, at)
		case "read_body_timeout":
			h.ReadBodyTimeout, err = durationArg(d, at)
		case "write_timeout":
			h.WriteTimeout, err = durationArg(d, at)
		case "card_max_age":
			h.CardMaxAge, err = durationArg(d, at)
		case "card_format":
			h.CardFormat, err = oneArg(d, at)
		case "card_bare_scopes":
			h.CardBareScopes, err = flagArg(d, at)
		case "drain_timeout":
			h.DrainTimeout, err = durationArg(d, at)
		case "tasks":
			h.Tasks, err = parseTasks(d, at)
		case "signing":
			h.Signing, err = parseSigning(d, at)
		case "security":
			h.Security, err = parseSecurity(d, at)
		case "extended_card":
			h.ExtendedCard, err = parseExtendedCard(d, at)
		case "push":
			h.Push, err = parsePush(d, at)
		case "rest":
			h.REST, err = parseREST(d, at)
		case "grpc":
			h.GRPC, err = parseGRPC(d, at)
		case "mcp":
			h.MCP, err = parseMCP(d, at)
		default:
			return unknownSubdirective(handlerSubdirectives)
		}
		return err
	})
}

// parseTasks reads the tasks block.
func parseTasks(d *caddyfile.Dispenser, where string) (*TasksConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	t := new(TasksConfig)
	err := parseBlock(d, where, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "max_tasks":
			t.MaxTasks, err = countArg(d, at)
		case "max_live_per_owner":
			t.MaxLivePerOwner, err = countArg(d, at)
		case "max_live_anonymous":
			t.MaxLiveAnonymous, err = countArg(d, at)
		case "max_live_per_client":
			t.MaxLivePerClient, err = countArg(d, at)
		case "max_history":
			t.MaxHistory, err = countArg(d, at)
		case "max_age":
			t.MaxAge, err = durationArg(d, at)
		case "resend_window":
			t.ResendWindow, err = windowArg(d, at)
		case "max_resend_keys":
			t.MaxResendKeys, err = countArg(d, at)
		case "max_input_wait":
			t.MaxInputWait, err = durationArg(d, at)
		case "max_bytes":
			t.MaxBytes, err = sizeArg(d, at)
		case "max_live_bytes_per_owner":
			t.MaxLiveBytesPerOwner, err = sizeArg(d, at)
		case "max_live_bytes_anonymous":
			t.MaxLiveBytesAnonymous, err = sizeArg(d, at)
		case "max_live_bytes_per_client":
			t.MaxLiveBytesPerClient, err = sizeArg(d, at)
		case "max_task_bytes":
			t.MaxTaskBytes, err = sizeArg(d, at)
		case "redis":
			t.Redis, err = parseRedis(d, at)
		case "stream_buffer":
			t.StreamBuffer, err = countArg(d, at)
		default:
			return unknownSubdirective(tasksSubdirectives)
		}
		return err
	})
	return t, err
}

// parseRedis reads the tasks block's redis block.
func parseRedis(d *caddyfile.Dispenser, where string) (*RedisConfig, error) {
	if err := noArgs(d, where); err != nil {
		return nil, err
	}
	r := new(RedisConfig)
	err := parseBlock(d, where, nil, func(sub, at string) error {
		var err error
		switch sub {
		case "address":
			r.Addresses, err = someArgs(d, at)
		case "master_name":
			r.MasterName, err = oneArg(d, at)
		case "username":
			r.Username, err = oneArg(d, at)
		case "password":
			r.Password, err = oneArg(d, at)
		case "db":
			r.DB, err = intArg(d, at)
		case "tls":
			r.TLS = true
			if d.NextArg() {
				r.TLSServerName = d.Val()
			}
			if d.NextArg() {
				return d.Errf("%s: want at most a server name", at)
			}
		case "tls_ca":
			r.TLSCA, err = oneArg(d, at)
		case "key_prefix":
			r.KeyPrefix, err = oneArg(d, at)
		case "timeout":
			r.Timeout, err = durationArg(d, at)
		default:
			return unknownSubdirective(redisSubdirectives)
		}
		return err
	})
	return r, err
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

// handlerSubdirectives are the subdirectives of the a2a directive's block.
var handlerSubdirectives = []string{"skills", "upstream", "url", "name", "description", "version", "provider", "documentation_url", "icon_url", "default_input_modes", "default_output_modes", "max_request_body", "heartbeat", "read_body_timeout", "write_timeout", "card_max_age", "card_format", "card_bare_scopes", "drain_timeout", "tasks", "signing", "security", "extended_card", "push", "rest", "grpc", "mcp"}

// tasksSubdirectives are the subdirectives of the tasks block.
var tasksSubdirectives = []string{"max_tasks", "max_live_per_owner", "max_live_anonymous", "max_live_per_client", "max_history", "max_age", "resend_window", "max_resend_keys", "max_input_wait", "max_bytes", "max_live_bytes_per_owner", "max_live_bytes_anonymous", "max_live_bytes_per_client", "max_task_bytes", "redis", "stream_buffer"}

// redisSubdirectives are the subdirectives of the redis block.
var redisSubdirectives = []string{"address", "master_name", "username", "password", "db", "tls", "tls_ca", "key_prefix", "timeout"}
