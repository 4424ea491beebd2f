// Command caddy is Caddy with its standard modules and the a2a handler, so
// `go run ./cmd/caddy` needs no xcaddy.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
