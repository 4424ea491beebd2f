#!/usr/bin/env bash
# Brings up a working A2A agent: the demo REST API on 127.0.0.1:9090 and
# Caddy with caddy-a2a in front of it on http://localhost:8080 (see
# Caddyfile.example; A2A's gRPC binding on localhost:50051, Caddy's admin
# API on localhost:2019). The binaries it
# builds stay in .bin/ (.bin/caddy runs the tools: .bin/caddy a2a-dry-run …).
# It says what it is doing at each step, and how long the slow ones took.
# Ctrl-C, or TERM to this script, stops everything it started.
set -euo pipefail
cd "$(dirname "$0")"
export DEMO_API_KEY="${DEMO_API_KEY:-demo-secret}"

say() { echo "demo.sh: $*"; }

# A port taken by another server would leave the demo half-running beside
# it, or talking to something else: stop first, and say which.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in 9090 8080 2019 50051; do
	if listening "$port"; then
		say "port $port is already in use (another demo or server?); stop what listens there and run again" >&2
		exit 1
	fi
done

# Everything started in the background, builds included (a background job
# of a script ignores Ctrl-C, so the trap must stop it).
pids=()
stop() {
	trap - INT TERM EXIT
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

# build runs one go build, saying what it builds before it starts, that it
# is still at it every 10 seconds (a cold build is minutes of silence
# otherwise), and how long it took.
build() {
	local what=$1 start=$SECONDS next=$((SECONDS + 10))
	shift
	say "building $what …"
	go build "$@" &
	local pid=$!
	pids+=("$pid")
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if ((SECONDS >= next)); then
			say "  … still building $what ($((SECONDS - start))s)"
			next=$((next + 10))
		fi
	done
	if ! wait "$pid"; then
		say "building $what failed (go build's errors above)" >&2
		exit 1
	fi
	say "built $what in $((SECONDS - start))s"
}

# await waits for a server just started to listen on its port, and stops
# the demo if the server exits first (its own errors are above).
await() {
	local what=$1 pid=$2 port=$3 start=$SECONDS
	until listening "$port"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "$what stopped before it listened on port $port (its errors above)" >&2
			exit 1
		fi
		if ((SECONDS - start > 60)); then
			say "$what did not listen on port $port within 60s" >&2
			exit 1
		fi
		sleep 0.1
	done
}

mkdir -p .bin
say "go build needs about 2–4 minutes the first time (Go's modules downloaded, Caddy compiled; longer on a busy machine), and seconds once Go's cache is warm"
build "the demo REST API (.bin/demoapi)" -o .bin/demoapi ./examples/demoapi/cmd/demoapi
build "Caddy with caddy-a2a (.bin/caddy)" -o .bin/caddy ./cmd/caddy

say "starting the demo REST API on 127.0.0.1:9090 …"
.bin/demoapi -addr 127.0.0.1:9090 &
pids+=($!)
await "the demo REST API" "$!" 9090
say "starting Caddy with Caddyfile.example on :8080 (gRPC on 127.0.0.1:50051, admin API on localhost:2019) …"
.bin/caddy run --config Caddyfile.example --adapter caddyfile &
pids+=($!)
await "Caddy" "$!" 8080
say "ready: the agent at http://localhost:8080/ (card: /.well-known/agent-card.json, MCP: /mcp; gRPC: localhost:50051), in front of the demo API on 127.0.0.1:9090; Ctrl-C stops both"
# Whichever stops first (Caddy on a config error, say) stops the demo.
wait -n
