package caddymodule

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/caddy-a2a/caddy-a2a/cardgen"
	"github.com/caddy-a2a/caddy-a2a/tools/verifycard"
)

// verifyCommand is the name of the card verification subcommand.
const verifyCommand = "a2a-verify-card"

func init() {
	fs := flag.NewFlagSet(verifyCommand, flag.ExitOnError)
	fs.String("jwks", "", "the trusted JWK Set, a URL or a file (default: each signature's jku)")
	fs.Bool("any", false, "accept the card when one signature verifies, even if another does not match")
	fs.String("forms", "", "the payload forms accepted, comma-separated: spec, pruned, served (default: all)")
	fs.String("timeout", "10s", "the timeout of each HTTP request")
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  verifyCommand,
		Usage: "<card URL|file> [--jwks <URL|file>] [--any] [--forms <spec,pruned,served>] [--timeout <duration>]",
		Short: "Verifies the signatures of an A2A Agent Card",
		Long: `
Verifies the JWS signatures of an A2A Agent Card (spec 1.0 §8.4) and prints,
for each signature, which key and which payload form it verified with, or
exactly why it did not. The exit status is 0 when the card verified.

The card is an http or https URL (a URL without a path gets
/.well-known/agent-card.json) or a file.

--jwks
    The trusted JWK Set, a URL or a file. Without it, each signature's keys
    come from the jku in its protected header: that checks the card against
    the keys its own host publishes (integrity), not who published it.

--any
    Accept the card when one signature verifies, as the official SDKs do.
    By default a signature made with a known key that does not match the
    card rejects it, since that means the card changed after signing.
    Signatures whose key is not in the key set are reported, not counted.

--forms
    The payload forms a signature may cover, comma-separated: spec (spec 1.0
    §8.4.1 over the 1.0 fields), pruned (empty values removed, as
    @a2a-js/sdk 1.x and the Python SDK verify), served (the card as served,
    0.3 fields included). Default: all.

--timeout
    The timeout of each HTTP request. Default: 10s.
`,
		Flags: fs,
		Func: func(fl caddycmd.Flags) (int, error) {
			return runVerifyCard(os.Stdout, fl.Args(), fl.String("jwks"), fl.Bool("any"), fl.String("forms"), fl.String("timeout"))
		},
	})
}

// runVerifyCard is the command: exit status 0 when the card verified, 1
// when it did not, 2 for a usage error.
func runVerifyCard(w io.Writer, args []string, jwks string, anyOne bool, forms, timeout string) (int, error) {
	if len(args) != 1 {
		return 2, fmt.Errorf("%s: want one argument, the card's URL or file; got %d", verifyCommand, len(args))
	}
	cfg := verifycard.Config{Card: args[0], JWKS: jwks, Any: anyOne}
	if forms != "" {
		f, err := cardgen.ParseForms(strings.Split(forms, ","))
		if err != nil {
			return 2, fmt.Errorf("%s: --forms: %w", verifyCommand, err)
		}
		cfg.Forms = f
	}
	d, err := time.ParseDuration(timeout)
	if err != nil || d <= 0 {
		return 2, fmt.Errorf("%s: --timeout: %q is not a positive duration", verifyCommand, timeout)
	}
	cfg.Client = &http.Client{Timeout: d}
	if err := verifycard.Run(context.Background(), w, cfg); err != nil {
		return 1, errors.New(verifyCommand + ": " + err.Error())
	}
	return 0, nil
}
