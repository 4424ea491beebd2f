#!/usr/bin/env bash
# Runs every test of caddy-a2a on a fresh machine: formatting and vet, the
# unit and integration tests with the race detector (a real Caddy in front
# of a real upstream on loopback), the interop suites against the official
# Go and JavaScript A2A SDKs, a short run of every fuzz target, a smoke run
# of every benchmark and of the benchmark harness (bench/), the Kubernetes
# example's manifests and its sidecar run through a drain
# (examples/kubernetes), and the xcaddy build that xcaddy.Dockerfile
# performs.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "== installing Node.js and npm (interop/js needs them)"
	apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi
if ! command -v redis-server >/dev/null && [ ! -x /usr/bin/redis-server ] && [ ! -x /usr/sbin/redis-server ]; then
	echo "== installing redis-server (the Redis store's tests start their own, on free ports)"
	apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
	# The package may start a system redis on port 6379; no test uses it.
	if command -v service >/dev/null; then service redis-server stop >/dev/null 2>&1 || true; fi
fi

echo "== modules"
go mod download
(cd interop && go mod download)
(cd bench && go mod download)
(cd examples/kubernetes && go mod download)
(cd interop/js && npm ci --no-audit --no-fund --loglevel=error)

echo "== gofmt and vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './interop/js/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
go vet ./...
(cd interop && go vet ./...)
(cd bench && go vet ./...)
(cd examples/kubernetes && go vet ./...)

echo "== tests"
go test -race -count=1 ./...
echo "== interop (official Go and JavaScript SDK clients)"
(cd interop && go test -race -count=1 ./...)
echo "== Kubernetes example (manifests; the sidecar on loopback through a SIGTERM drain)"
(cd examples/kubernetes && go test -count=1 ./...)

echo "== fuzzing (smoke: a few seconds per target; README.md says how to run them longer)"
for target in ./a2a:FuzzDecodeRequest ./a2a:FuzzDecodeRESTRequest ./server:FuzzHandler ./server:FuzzSSEEvent ./mapping:FuzzParse ./mapping:FuzzMessageVars ./mapping:FuzzStream; do
	go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "${FUZZTIME:-5s}" "${target%%:*}" >/dev/null
done

echo "== benchmarks (smoke: one iteration each)"
go test -run '^$' -bench . -benchtime 1x ./... >/dev/null
(cd bench && go test -race -count=1 ./...)
echo "== benchmark harness (smoke: every contender and scenario for about a second)"
bench/run --smoke >/dev/null

echo "== xcaddy build"
.ci/xcaddy-build
