#!/usr/bin/env bash
# Brings up a working A2A agent: the demo REST API on 127.0.0.1:9090 and
# Caddy with caddy-a2a in front of it on http://localhost:8080 (see
# Caddyfile.example). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")"
export DEMO_API_KEY="${DEMO_API_KEY:-demo-secret}"
mkdir -p .bin
go build -o .bin/demoapi ./examples/demoapi/cmd/demoapi
go build -o .bin/caddy ./cmd/caddy
.bin/demoapi -addr 127.0.0.1:9090 &
api=$!
trap 'kill "$api" 2>/dev/null || true' EXIT
.bin/caddy run --config Caddyfile.example --adapter caddyfile
