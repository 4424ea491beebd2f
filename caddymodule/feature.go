package caddymodule

import (
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2"

	compose "github.com/caddy-a2a/caddy-a2a/agent"
	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/server"
)

// A feature is one block of the a2a configuration. Its file holds the
// block's JSON struct, its checks, its part in provisioning and cleanup,
// and its Caddyfile settings; features registers it, and Validate,
// provision, Cleanup and UnmarshalCaddyfile loop over that list. A new
// block is a file and a line there (and the Handler's field).
type feature interface {
	// setting reads the block's subdirective of the a2a block into its
	// field of h.
	setting(h *Handler) setting
	// validate checks the block, when h has it, with what needs neither
	// files, environment nor network.
	validate(h *Handler) error

	// The steps of provisioning, each run for every feature before the
	// next (see Handler.provision): the authenticator the skills'
	// requirements are checked against; the keys that sign the cards; the
	// agent's and the server's configuration; once the skills and the
	// cards are built (compose.New's Acquire), what outlives the config: the
	// task store and what uses it; once the server exists.
	authenticate(a *assembly) error
	sign(a *assembly) error
	configure(a *assembly) error
	acquire(a *assembly) error
	start(a *assembly) error

	// cleanup releases what provisioning took, also after a provisioning
	// that failed part way. Features clean up in the reverse of their
	// order.
	cleanup(h *Handler) error
}

// features are the blocks of the a2a configuration. Within a step of
// provisioning, a feature may use what those before it set up: push the
// task store. The bindings come in the order the server tries them
// (configure adds them): gRPC's paths may lie below HTTP+JSON's, and so
// may MCP's.
var features = []feature{
	tasksFeature{},
	signingFeature{},
	securityFeature{},
	extendedCardFeature{},
	pushFeature{},
	grpcFeature{},
	mcpFeature{},
	restFeature{},
}

// noSteps is a feature's default: nothing to do at a step.
type noSteps struct{}

func (noSteps) authenticate(*assembly) error { return nil }
func (noSteps) sign(*assembly) error         { return nil }
func (noSteps) configure(*assembly) error    { return nil }
func (noSteps) acquire(*assembly) error      { return nil }
func (noSteps) start(*assembly) error        { return nil }
func (noSteps) cleanup(*Handler) error       { return nil }

// assembly is an agent being provisioned: the configuration the steps
// build for the composition root (compose.New).
type assembly struct {
	ctx   caddy.Context
	h     *Handler
	agent compose.Config
	// server is the server's part of it, which the steps fill in: agent's
	// Server, and at acquire the copy compose.New completes.
	server *server.Config
	// pushKey signs push notifications: push's own key, or the card's
	// active one; set by signing.
	pushKey cardgen.Key
}

// each runs step for every feature, in order.
func (a *assembly) each(step func(feature, *assembly) error) func() error {
	return func() error {
		for _, f := range features {
			if err := step(f, a); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkBlock checks block, when it is set, and names it in the error.
func checkBlock[T any](name string, block *T, check func(*T) error) error {
	if block == nil {
		return nil
	}
	if err := check(block); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// validateFeatures checks every block h has.
func (h *Handler) validateFeatures() error {
	for _, f := range features {
		if err := f.validate(h); err != nil {
			return err
		}
	}
	return nil
}

// cleanupFeatures releases what the features took, in the reverse of
// their order: the task store last.
func (h *Handler) cleanupFeatures() error {
	var errs []error
	for i := len(features) - 1; i >= 0; i-- {
		errs = append(errs, features[i].cleanup(h))
	}
	return errors.Join(errs...)
}
