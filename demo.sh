#!/usr/bin/env bash
# Brings up a working A2A agent: the demo REST API on 127.0.0.1:9090 and
# Caddy with caddy-a2a in front of it on http://localhost:8080 (see
# Caddyfile.example; Caddy's admin API on localhost:2019). The binaries it
# builds stay in .bin/ (.bin/caddy runs the tools: .bin/caddy a2a-dry-run …).
# Ctrl-C, or TERM to this script, stops everything it started.
set -euo pipefail
cd "$(dirname "$0")"
export DEMO_API_KEY="${DEMO_API_KEY:-demo-secret}"

# A port taken by another server would leave the demo half-running beside
# it, or talking to something else: stop first, and say which.
for port in 9090 8080 2019; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "demo.sh: port $port is already in use (another demo or server?); stop what listens there and run again" >&2
		exit 1
	fi
done

mkdir -p .bin
go build -o .bin/demoapi ./examples/demoapi/cmd/demoapi
go build -o .bin/caddy ./cmd/caddy

pids=()
stop() {
	trap - INT TERM EXIT
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

.bin/demoapi -addr 127.0.0.1:9090 &
pids+=($!)
.bin/caddy run --config Caddyfile.example --adapter caddyfile &
pids+=($!)
echo "demo.sh: the agent is starting on http://localhost:8080/ (the demo API on 127.0.0.1:9090); Ctrl-C stops both"
# Whichever stops first (Caddy on a config error, say) stops the demo.
wait -n
