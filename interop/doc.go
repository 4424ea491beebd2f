// Package interop holds black-box interoperability tests of caddy-a2a
// against the official A2A SDK clients: the Go SDK
// (github.com/a2aproject/a2a-go/v2) as a 1.0 client and through its
// a2acompat/a2av0 layer as a 0.3 client, and the JavaScript SDK
// (@a2a-js/sdk, under js/) as a 1.0 client.
//
// The tests build the product's Caddy (../cmd/caddy) and the demo REST API
// (../examples/demoapi/cmd/demoapi), start both on loopback ports, and talk to
// the agent over HTTP only; this module does not import the product.
// Beside the protocol flows (flow_test.go, errors_test.go, legacy03_test.go,
// card_test.go) it starts agents of its own for authentication with the
// SDK's auth interceptor (auth_test.go) and for the signed Agent Card,
// verified by @a2a-js/sdk and by an independent verifier written from the
// spec, across key rotations (signing_test.go); and two replicas sharing
// one Redis behind a round-robin reverse_proxy, one of them killed mid-task
// (replicas_test.go, which starts its own redis-server: it must be installed).
//
//	cd interop/js && npm ci   # once, for the JavaScript subtest
//	cd interop && go test -count=1 ./...
//
// To run the suite against an agent that is already running instead, set
// INTEROP_AGENT_URL to its A2A endpoint and INTEROP_DEMO_URL to the demo API
// it fronts (and INTEROP_REST_URL to its HTTP+JSON binding, to test that
// too).
//
// It is its own module so that the SDKs stay out of the product's go.mod.
package interop
