package mcp

import "github.com/caddy-a2a/caddy-a2a/server"

// NewBySDK is New with every request left to the SDK, also the plain
// tools/call the binding answers itself: for the tests that compare the
// two.
func NewBySDK(c Config) server.NewBinding {
	return func(h *server.Handler) (server.Binding, error) {
		b, err := newBinding(h, &c)
		if err != nil {
			return nil, err
		}
		b.bySDK = true
		return b, nil
	}
}

// ArtifactURI is the resource URI of a task's artifact.
var ArtifactURI = artifactURI
