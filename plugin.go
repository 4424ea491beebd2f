// Package caddya2a makes an existing REST API into an A2A agent, as a Caddy
// v2 module. Importing it registers the http.handlers.a2a module and the a2a
// Caddyfile directive, so that
//
//	xcaddy build --with github.com/caddy-a2a/caddy-a2a
//
// builds a Caddy that has them. The module itself lives in caddymodule.
package caddya2a

import (
	// plug the a2a handler into Caddy
	_ "github.com/caddy-a2a/caddy-a2a/caddymodule"
)
