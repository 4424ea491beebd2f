#!/bin/sh
# Generates a2a.pb.go and a2a_grpc.pb.go from the normative A2A 1.0 proto
# (spec/a2a.proto of github.com/a2aproject/A2A, kept in the repository as
# a2a.proto beside this script). The google.api annotations (HTTP rules,
# method signatures, field behaviors) only steer gateways and client
# generators; they are stripped in a temporary copy so that no googleapis
# protos need vendoring. The wire format is unchanged.
#
# Needs protoc (apt-get install -y protobuf-compiler) and, on PATH:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# Run from this directory: go generate ./a2a/a2apb/
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '
	/^import "google\/api\// { next }
	/option \(google\.api\.http\) = \{/ { depth = 1; next }
	depth > 0 { depth += gsub(/\{/, "{") - gsub(/\}/, "}"); next }
	/option \(google\.api\.method_signature\)/ { next }
	{ gsub(/ \[\(google\.api\.field_behavior\) = [A-Z_]+\]/, ""); print }
' a2a.proto >"$tmp/a2a.proto"
if grep -n 'google\.api' "$tmp/a2a.proto"; then
	echo "generate.sh: google.api options left in the stripped copy" >&2
	exit 1
fi
protoc -I"$tmp" \
	--go_out=. --go_opt=paths=source_relative --go_opt=Ma2a.proto=github.com/caddy-a2a/caddy-a2a/a2a/a2apb\;a2apb \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Ma2a.proto=github.com/caddy-a2a/caddy-a2a/a2a/a2apb\;a2apb \
	"$tmp/a2a.proto"
