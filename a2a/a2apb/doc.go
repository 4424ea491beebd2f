// Package a2apb is the code protoc generates from the normative A2A 1.0
// proto (a2a.proto, package lf.a2a.v1): the messages and the A2AService
// of the gRPC binding (spec 1.0 §10). Nothing here is written by hand
// except this file and generate.sh; conversions to and from the internal
// model live in a2a/pbconv.
package a2apb

//go:generate ./generate.sh
