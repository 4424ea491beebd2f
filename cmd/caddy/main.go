// Command caddy is Caddy with its standard modules and the a2a handler, so
// `go run ./cmd/caddy` needs no xcaddy.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/caddy-a2a/caddy-a2a/caddymodule"
)

func main() {
	caddycmd.Main()
}
